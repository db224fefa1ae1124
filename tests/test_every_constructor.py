"""Every mechanism constructor returns a Mechanism (or a result whose ``.mechanism`` is one) that carries
its space and ε, and the exact privacy check confirms the ε it claims (issue 9: one Mechanism object)."""

from __future__ import annotations

import numpy as np
import pytest

from dprivacy import spaces
from dprivacy.measures import check_privacy
from dprivacy.mechanisms.base import Mechanism


def _constructors():
    from dprivacy.mechanisms import exponential
    from dprivacy.mechanisms.geometric import truncated_geometric
    from dprivacy.mechanisms.laplace import laplace_channel
    from dprivacy.mechanisms.maximal_leakage import maximal_leakage_mechanism
    from dprivacy.mechanisms.optimal import optimal_mechanism
    from dprivacy.mechanisms.planar_laplace import planar_laplace_channel
    from dprivacy.mechanisms import randomized_response
    from dprivacy.mechanisms.spanner import optimal_mechanism_spanner
    from dprivacy.mechanisms.symmetric import symmetric_mechanism
    from dprivacy.mechanisms.tight import tight_constraints

    prior = np.random.default_rng(0).dirichlet(np.ones(9))
    return {
        "truncated-geometric": lambda: truncated_geometric(spaces.line(6), epsilon=0.7),
        "exponential": lambda: exponential(spaces.grid(3, 3), epsilon=0.7),
        "randomized-response": lambda: randomized_response(5, epsilon=0.7),
        "laplace": lambda: laplace_channel(spaces.line(5), epsilon=0.7),
        "planar-laplace": lambda: planar_laplace_channel(spaces.grid(4, 4), epsilon=0.7),
        "tight-constraints": lambda: tight_constraints(spaces.line(5), epsilon=1.0).mechanism,
        "symmetric": lambda: symmetric_mechanism(spaces.clique(5), epsilon=0.7).mechanism,
        "maximal-leakage": lambda: maximal_leakage_mechanism(2, 2, epsilon=0.7),
        "optimal (full)": lambda: optimal_mechanism(spaces.grid(3, 3), prior, epsilon=0.7, method="full").mechanism,
        "optimal (constraint generation)": lambda: optimal_mechanism(spaces.grid(3, 3), prior, epsilon=0.7,
                                                                     method="constraint-generation").mechanism,
        "optimal (spanner)": lambda: optimal_mechanism_spanner(spaces.grid(3, 3), prior, epsilon=0.7).mechanism,
    }


@pytest.mark.parametrize("name", list(_constructors()))
def test_constructor_returns_a_mechanism_whose_privacy_checks(name):
    m = _constructors()[name]()
    assert isinstance(m, Mechanism), type(m)
    assert m.epsilon > 0 and m.space is not None and m.certificate.ok
    check = check_privacy(m, m.space, epsilon=m.epsilon)
    assert check.holds, (name, check.smallest_epsilon, m.epsilon)
    h = m.dense().matrix if hasattr(m, "dense") else m.channel.matrix
    np.testing.assert_allclose(h.sum(axis=1), 1.0, rtol=0, atol=1e-12)
