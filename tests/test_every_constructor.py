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
    assert check.ok, (name, check.smallest_epsilon, m.epsilon)
    h = m.dense().matrix if hasattr(m, "dense") else m.channel.matrix
    np.testing.assert_allclose(h.sum(axis=1), 1.0, rtol=0, atol=1e-12)


_TINY = {
    "truncated-geometric": lambda e: __import__("dprivacy").truncated_geometric(spaces.line(40), epsilon=e),
    "exponential": lambda e: __import__("dprivacy").exponential(spaces.grid(5, 5), epsilon=e),
    "randomized-response": lambda e: __import__("dprivacy").randomized_response(50, epsilon=e),
    "laplace": lambda e: __import__("dprivacy").laplace_channel(spaces.line(30), epsilon=e),
    "planar-laplace": lambda e: __import__("dprivacy").planar_laplace_channel(spaces.grid(5, 5), epsilon=e),
    "tight-constraints": lambda e: __import__("dprivacy").tight_constraints(spaces.line(30), epsilon=e).mechanism,
    "symmetric": lambda e: __import__("dprivacy").symmetric_mechanism(spaces.ring(12), epsilon=e).mechanism,
}


@pytest.mark.parametrize("name", list(_TINY))
@pytest.mark.parametrize("eps", [1e-14, 1e-12, 1e-9, 1e-3, 1.0, 5.0])
def test_every_constructor_passes_its_own_epsilon_at_every_scale(name, eps):
    """The check's tolerance is relative to ε·d (plus the float64 rounding floor of the logs): each
    constructor's stored channel passes at its own ε however small, the dense float64 check included."""
    m = _TINY[name](eps)
    r = check_privacy(m.dense().matrix if hasattr(m, "dense") else m.matrix, m.space, epsilon=eps)
    assert r.ok, (name, eps, r.smallest_epsilon, r.atol)


@pytest.mark.parametrize("name", ["truncated-geometric", "laplace", "randomized-response", "tight-constraints"])
def test_a_channel_built_at_a_tiny_epsilon_fails_at_one_a_hundred_times_smaller(name):
    """Issue 9: with an absolute 1e-9 on the log, a Laplace channel at ε = 1e-12 passed at ε = 1e-14."""
    m = _TINY[name](1e-12)
    h = m.dense().matrix if hasattr(m, "dense") else m.matrix
    assert check_privacy(h, m.space, epsilon=1e-12).ok
    r = check_privacy(h, m.space, epsilon=1e-14)
    assert not r.ok and r.smallest_epsilon == pytest.approx(1e-12, rel=1e-2)
    # below the float64 resolution of the logs (the floor, ~2e-13 here) nothing can be told apart
    assert r.atol < 1e-12 - 1e-14
    big = _TINY[name](1.0)
    hb = big.dense().matrix if hasattr(big, "dense") else big.matrix
    assert not check_privacy(hb, big.space, epsilon=0.99).ok  # 1% below its ε at ordinary scale


def test_every_top_level_name_resolves_and_import_stays_lazy():
    """The user-facing names are importable from ``dprivacy``; ``import dprivacy`` loads no numpy."""
    import subprocess
    import sys

    import dprivacy

    for name in dprivacy._NAMES:
        obj = getattr(dprivacy, name)
        assert obj is getattr(dprivacy, name) and not isinstance(obj, type(dprivacy)), name
    code = "import sys, dprivacy; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
