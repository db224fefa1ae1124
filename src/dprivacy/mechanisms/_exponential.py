"""The exponential mechanism of McSherry and Talwar with quality −d, as a channel on a metric space.

With the quality q(y, z) = −d(y, z) (sensitivity 1 in y with respect to d, by the triangle inequality),
the exponential mechanism reports z with probability proportional to exp(ε q(y, z) / 2). Chatzikokolakis et al. 2013 §4.1
(Definition 6, Fact 7) presents its Laplace-style variant, and Alvim et al. 2015 eq. (17) / Thm 28 and Prop 16
are the special case where every row has the same normalizer.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_epsilon
from .base import Mechanism, built_from_log
from ..spaces import MetricSpace


def exponential(space: MetricSpace, *, epsilon: float) -> Mechanism:
    r"""The exponential mechanism H[y, z] = exp(−ε d(y, z)/2) / N(y), N(y) = Σ_z exp(−ε d(y, z)/2).

    Parameters
    ----------
    space : MetricSpace
        Any finite, possibly extended, metric space (outputs at distance ∞ get probability 0).
    epsilon : float
        The privacy level: the channel is ε·d-private.

    Returns
    -------
    Mechanism
        n × n, dense (a :class:`~dprivacy.mechanisms.base.LogMechanism` where its float64 entries
        underflow); outputs are the space's points, inputs and outputs labelled with the space's labels.

    Notes
    -----
    *Proof of ε·d-privacy.* For all y, y', z,

    .. math::
        \frac{H[y,z]}{H[y',z]} = e^{\varepsilon (d(y',z) - d(y,z))/2}\,\frac{N(y')}{N(y)}
        \le e^{\varepsilon d(y,y')/2}\cdot e^{\varepsilon d(y,y')/2} = e^{\varepsilon d(y,y')},

    using d(y', z) − d(y, z) ≤ d(y, y') for the first factor and, for the second,
    N(y') = Σ_z e^{−ε d(y',z)/2} ≤ Σ_z e^{−ε (d(y,z) − d(y,y'))/2} = e^{ε d(y,y')/2} N(y). When
    d(y, y') = ∞ there is nothing to prove, and N(y) ≥ 1 (the term z = y) so rows are well defined.

    The factor ½ pays for unequal normalizers. When every row has the same normalizer (distance-regular
    or vertex-transitive spaces: rings, cliques, Hamming graphs), the second factor is 1 and the channel
    is in fact (ε/2)·d-private; ``exponential(space, epsilon=2*eps)`` is then Alvim et al. 2015's eq. (17)
    mechanism γ e^{−eps·d} (Thm 28; Table 2(b) on a ring of 6 with eps = ln 2) and, on a Hamming space,
    the mechanism of Alvim et al. 2015 Prop 16.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §7 (eq. (17)
       with quality −d is the exponential mechanism), Thm 27.
    """
    e = check_epsilon(epsilon)
    if not isinstance(space, MetricSpace):
        raise TypeError(
            f"exponential needs a MetricSpace, got {type(space).__name__} (use spaces.line(n), "
            "spaces.clique(n), ... to build one)"
        )
    # exp(−∞) = 0: points at infinite distance are never reported; the diagonal keeps each row non-zero.
    # In log space (log N(y) by log-sum-exp): where e^(−ε d/2) underflows (ε·d above about 1,400) the
    # mechanism is kept by its exact log-entries, its float64 matrix would not be private as stored.
    from scipy.special import logsumexp

    lw = -0.5 * e * space.distances
    return built_from_log(lw - logsumexp(lw, axis=1, keepdims=True), space, epsilon=e, name="exponential",
                          reason="exponential mechanism e^(−ε d/2)/N(y): ε·d-private by the triangle inequality (proof in the docstring; McSherry–Talwar)")
