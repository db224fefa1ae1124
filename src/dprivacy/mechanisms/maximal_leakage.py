"""The ε-differentially private mechanism of maximal min-entropy leakage on databases (Alvim et al. 2015 Prop 16).

Databases are tuples in V^u (u individuals, v values each, one of which may be the null value "absent"),
adjacent when they differ in one individual: the Hamming graph, whose graph distance is the Hamming
distance d_h (Alvim et al. 2015 §4, Props 13–14). Every ε-differentially private mechanism K on V^u leaks at most

    Bnd(u, v, ε) = u · log2( v e^ε / (v − 1 + e^ε) )  bits   (Alvim et al. 2015 Thm 15)

for the uniform prior, and the mechanism built here attains the bound (Alvim et al. 2015 Prop 16).
"""

from __future__ import annotations

import numpy as np

from .._validate import check_epsilon, check_positive_int
from .base import DenseMechanism, built
from ..spaces import hamming


def maximal_leakage_mechanism(u: int, v: int, *, epsilon: float) -> DenseMechanism:
    """The mechanism K of Alvim et al. 2015 Prop 16 on the Hamming space V^u.

    K[x, z] = 2^{Bnd(u,v,ε)} / (v^u e^{ε d_h(x, z)}) = (e^ε / (v − 1 + e^ε))^u · e^{−ε d_h(x, z)},
    with outputs Z = X = V^u (Alvim et al. 2015 eq. (24)).

    Parameters
    ----------
    u : int
        Number of individuals, ≥ 1.
    v : int
        Number of values per individual (including the null value if one is used), ≥ 2.
    epsilon : float
        The differential-privacy level.

    Returns
    -------
    DenseMechanism
        v^u × v^u; inputs and outputs are the databases as u-tuples of value indices in lexicographic
        order (the labels of ``spaces.hamming(u, v)``).

    Notes
    -----
    Rows sum to 1 because the number of databases at Hamming distance d from any x is C(u, d)(v−1)^d, so
    Σ_z e^{−ε d_h(x,z)} = (1 + (v−1)e^{−ε})^u (Alvim et al. 2015 eq. (22)). K is ε·d_h-private by the triangle
    inequality (Alvim et al. 2015 Prop 16, proof) and tightly so: adjacent rows differ by exactly e^ε on the
    column z = x. For the uniform prior its min-entropy leakage is log2(v^u · max K) = Bnd(u, v, ε).

    Since e^{−ε d_h(x,z)} = Π_c e^{−ε [x_c ≠ z_c]}, K is the u-fold Kronecker power of v-ary randomized
    response at ε: each individual's value is randomized independently. Alvim et al. 2015 Example 17 (Fig. 9) is
    u = 2, v = 3 with the values a (absent), b (blue), c (coal black).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Thm 15, Prop
       16, eq. (24).
    """
    e = check_epsilon(epsilon)
    u = check_positive_int(u, name="u")
    v = check_positive_int(v, name="v", minimum=2)
    space = hamming(u, v)
    # max K = (e^ε/(v−1+e^ε))^u, written with e^{−ε} so that a large ε cannot overflow.
    top = (1.0 / (1.0 + (v - 1) * np.exp(-e))) ** u
    h = top * np.exp(-e * space.distances)
    return built(h, space, epsilon=e, name="maximal-leakage",
                 reason="K ∝ e^(−ε d_h(x, z)) with a row-independent normalizer: ε·d_h-private by the triangle inequality (Alvim et al. 2015 Prop 16)")
