"""The papers' bounds on utility and min-entropy leakage of d-private mechanisms.

Every function returns a :class:`BoundResult`: the value, whether the result's hypotheses hold, the
paper and result it implements, and the certificate the value rests on (the vector μ of a regular
prior, the numbers n_d of a symmetric space, the closed form's parameters). Leakages are in bits
(log2), ε is in natural-log units (DESIGN.md).

Sources (the five papers of the bibliography):

* ElSalamouny et al. 2014 = ElSalamouny et al. 2014 (ElSalamouny, Chatzikokolakis, Palamidessi 2014): Thm 2, Prop 5,
  Cor 2, Thm 3, and the tightness condition Φ diag(HR) = 1.
* Alvim et al. 2015 = Alvim et al. 2015 (Alvim et al., J. Computer Security 2015): Thm 12, Thm 15
  (Bnd(u, v, ε)), Prop 20, Prop 21, Thm 27.

The Alvim et al. 2015 results are stated for distance-regular or vertex-transitive graphs; what they use is
that the number n_d of points at distance d from a point does not depend on the point (Alvim et al. 2015
Prop 5), i.e. ball-size symmetry (ElSalamouny et al. 2014 Def 7). On such a space Φ has the constant row sum
S = Σ_d n_d e^{−εd}, so the uniform prior is regular with μ = 1/(nS) and ElSalamouny et al. 2014 Thm 2 and Cor 2 give
the same bounds for any metric, not only graph metrics. The functions here accept any ball-size
symmetric :class:`~dprivacy.spaces.MetricSpace` on that ground.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .results import Result
from ._validate import as_prior, check_epsilon, check_positive_int
from .channels import Channel
from .priors import RegularityResult, RegularityTester, constraints_matrix, corner_priors, regularity
from .spaces import MetricSpace

__all__ = [
    "BoundResult",
    "TightnessResult",
    "attains_utility_bound",
    "bnd",
    "conditional_entropy_bound",
    "database_leakage_bound",
    "individual_leakage_bound",
    "leakage_bound",
    "range_limited_leakage_bound",
    "symmetric_leakage_bound",
    "symmetric_utility_bound",
    "uniform_leakage_bound",
    "utility_bound",
]

_LN2 = math.log(2.0)
SEED000 = "ElSalamouny et al. 2014 (ElSalamouny et al. 2014)"
SEED001 = "Alvim et al. 2015 (Alvim et al. 2015)"


@dataclass(frozen=True)
class BoundResult(Result):
    """A bound from one of the papers.

    Attributes
    ----------
    value : float
        The bound; ``nan`` when the result's hypotheses do not hold (see ``reason``).
    ok : bool
        Whether the result's hypotheses hold (e.g. the prior is regular, the space is ball-size
        symmetric), so that ``value`` is a bound.
    quantity : str
        What is bounded and in which unit.
    kind : str
        "upper" or "lower".
    source : str
        Paper file and result number.
    certificate : Any
        What the value rests on: a :class:`~dprivacy.priors.RegularityResult` (μ ≥ 0 with μΦ = π),
        a :class:`~dprivacy.graphs.DistanceCounts` (n_d), or a dict of closed-form ingredients.
    note : str
        Why the result does not apply ("" when it does).
    reason : str
        A sentence: the bound and its source, or why it does not apply (``note``).
    formula_value : float
        The result's formula evaluated even when its hypotheses fail (e.g. log2(Σμ / max π) with a μ
        that has negative entries), for comparison with published numbers; equal to ``value`` when
        applicable, ``nan`` when it cannot be evaluated.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Thm 2, Prop 5,
       Cor 2, Thm 3.
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Thm 12, 15,
       27, Prop 20, 21.
    """

    value: float
    ok: bool
    quantity: str
    kind: str
    source: str
    certificate: Any = None
    note: str | None = None
    formula_value: float = math.nan

    def __float__(self) -> float:
        return float(self.value)

    def __bool__(self) -> bool:
        return bool(self.ok)

    @property
    def reason(self) -> str:
        if self.ok:
            return f"{self.kind} bound on the {self.quantity}: {self.value:.12g} ({self.source})"
        return self.note or f"the hypotheses of {self.source} do not hold"


def _regularity(space, prior, epsilon, tester) -> RegularityResult:
    """The regularity of ``prior``: through the front door :func:`dprivacy.regularity` (dense,
    structured or closed form, as it picks), or with a tester already built for (space, ε)."""
    if tester is None:
        return regularity(space, prior, epsilon=epsilon)
    if not isinstance(tester, RegularityTester):
        raise TypeError(f"tester must be a RegularityTester, got {type(tester).__name__}")
    if tester.space is not space or tester.epsilon != check_epsilon(epsilon):
        raise ValueError("tester was built for another space or epsilon")
    return tester.test(prior)


# ---------------------------------------------------------------------------------------------
# ElSalamouny et al. 2014: bounds for regular priors
# ---------------------------------------------------------------------------------------------


def utility_bound(space: MetricSpace, prior, *, epsilon: float, tester: RegularityTester | None = None) -> BoundResult:
    r"""Upper bound on the utility of every ε·d-private mechanism for a regular prior (ElSalamouny et al. 2014 Thm 2).

    For π = μΦ with μ ≥ 0, every ε·d-private H : Y → Z and every remap R : Z → Y satisfy
    U(H, π, R) = Σ_y π_y (HR)_{yy} ≤ Σ_y μ_y = Σ_y γ_y / Σ_{y'} φ_{yy'} (binary gain). When Φ is
    singular the smallest Σμ over non-negative solutions is returned (each one is a valid bound).
    Equality for every regular prior iff Φ diag(HR) = 1 (:func:`attains_utility_bound`).

    Parameters
    ----------
    prior : array_like (n,)
    space : MetricSpace
    epsilon : float
    tester : RegularityTester, optional
        A tester already built for (space, ε), to reuse its factorization; without it the front door
        :func:`dprivacy.regularity` decides (it picks the dense, structured or closed-form path).

    Returns
    -------
    BoundResult
        ``certificate`` is the :class:`~dprivacy.priors.RegularityResult` (μ, γ, error bounds).
        Not applicable when π is not regular (``reason`` names the negative entries of μ).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Lemma 1, Thm 2
       (utility upper bound).
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Thm 1.
    """
    reg = _regularity(space, prior, epsilon, tester)
    return _from_regularity(reg, reg.mu_sum, "utility (binary gain, expected probability of a correct guess)",
                            f"{SEED000} Thm 2")


def _from_regularity(reg: RegularityResult, formula: float, quantity: str, source: str) -> BoundResult:
    if reg.regular:
        return BoundResult(formula, True, quantity, "upper", source, reg, None, formula)
    fv = formula if reg.consistent and reg.unique else math.nan
    return BoundResult(math.nan, False, quantity, "upper", source, reg,
                       f"the prior is not regular: {reg.reason}", fv)


def leakage_bound(space: MetricSpace, prior, *, epsilon: float, tester: RegularityTester | None = None) -> BoundResult:
    r"""Upper bound on the min-entropy leakage of every ε·d-private mechanism for a regular prior:
    L(H, π) ≤ log2(Σ_y μ_y / max_y π_y) bits (ElSalamouny et al. 2014 Prop 5; ElSalamouny et al. 2013 Prop 6).

    It follows from Thm 2 and L(H, π) = log2(U(H, π, R̂) / max π) for an optimal remap R̂ (ElSalamouny et al. 2014
    Prop 4). ``formula_value`` holds the same formula when π is not regular but μ is unique (the
    published Example 3 of ElSalamouny et al. 2014 evaluates it so).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Prop 4, Prop 5
       (min-mutual information upper bound).
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 6.
    """
    p = as_prior(prior)
    reg = _regularity(space, p, epsilon, tester)
    formula = math.log2(reg.mu_sum / float(p.max())) if np.isfinite(reg.mu_sum) and reg.mu_sum > 0 else math.nan
    return _from_regularity(reg, formula, "min-entropy leakage (bits)", f"{SEED000} Prop 5")


def uniform_leakage_bound(space: MetricSpace, *, epsilon: float, tester: RegularityTester | None = None) -> BoundResult:
    r"""Upper bound on the min-entropy leakage of every ε·d-private mechanism for *every* prior,
    when the uniform prior u is regular: L(H, π) ≤ log2(|Y| Σ_y μ_y) with μΦ = u (ElSalamouny et al. 2014 Cor 2).

    Holds because leakage is maximized by the uniform prior (Braun et al., recalled in ElSalamouny et al. 2014 §5.2).
    Not applicable when u is not regular (then no tight-constraints mechanism exists either, ElSalamouny et al. 2014
    Prop 8).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Cor 2.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Cor 1.
    """
    n = space.n
    reg = _regularity(space, np.full(n, 1.0 / n), epsilon, tester)
    formula = math.log2(n * reg.mu_sum) if np.isfinite(reg.mu_sum) and reg.mu_sum > 0 else math.nan
    res = _from_regularity(reg, formula, "min-entropy leakage for every prior (bits)", f"{SEED000} Cor 2")
    if not reg.regular:
        res = BoundResult(res.value, False, res.quantity, "upper", res.source, reg,
                          f"the uniform prior is not regular: {reg.reason}", res.formula_value)
    return res


def database_leakage_bound(u: int, v: int, *, epsilon: float) -> BoundResult:
    r"""Upper bound on the min-entropy leakage about the database of every ε-differentially private
    mechanism on V^u, for every prior: L(K, π) ≤ u log2(v e^ε / (v − 1 + e^ε)) bits (ElSalamouny et al. 2014 Thm 3).

    It is ElSalamouny et al. 2014 Cor 2 on the Hamming space (V^u, ε d_h), where μ = (e^ε / (v (v − 1 + e^ε)))^u · 1
    satisfies μΦ = u; the same value as Alvim et al. 2015 Thm 15 (:func:`bnd`). Computed as
    u (log2 v − log2(1 + (v − 1) e^{−ε})) so that large u or ε do not overflow.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Thm 3
       (min-entropy leakage about the database).
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Thm 2.
    """
    u = check_positive_int(u, name="u")
    v = check_positive_int(v, name="v", minimum=2)
    e = check_epsilon(epsilon, allow_zero=True)
    value = _bnd(u, v, e)
    log_mu = u * (e - math.log(v) - _log_v1e(v, e))  # ln of the common entry of μ
    cert = {"u": u, "v": v, "epsilon": e, "mu_entry": math.exp(log_mu), "log_mu_entry": log_mu, "n": v**u}
    return BoundResult(value, True, "min-entropy leakage about the database, every prior (bits)", "upper",
                       f"{SEED000} Thm 3", cert, None, value)


def _log_v1e(v: int, e: float) -> float:
    # ln(v − 1 + e^ε) without overflow.
    return e + math.log1p((v - 1) * math.exp(-e))


def _bnd(u: int, v: int, e: float) -> float:
    return u * (math.log2(v) - math.log1p((v - 1) * math.exp(-e)) / _LN2)


# ---------------------------------------------------------------------------------------------
# Tightness (ElSalamouny et al. 2014 Thm 2, second part; Prop 5; Def 6 / Prop 7)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TightnessResult(Result):
    """Whether a mechanism attains the bound of ElSalamouny et al. 2014 Thm 2 for every regular prior.

    Attributes
    ----------
    ok : bool
        H attains the bound: it is ε·d-private and Φ diag(HR) = 1 (within ``tolerance``) for the remap R.
    slack : ndarray (n,)
        s = 1 − Φ diag(HR), the slack vector of ElSalamouny et al. 2014 eq. (5); U(H, π, R) = Σμ − μ·s (Lemma 1).
    diagonal : ndarray (n,)
        diag(HR).
    remap : ndarray of int
        The deterministic remap R used (output z ↦ guess remap[z]).
    private : PrivacyResult
        The ε·d-privacy check of H (Thm 2 presumes it).
    tolerance : float

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Lemma 1, Thm
       2, Thm 4.
    """

    ok: bool
    slack: np.ndarray
    diagonal: np.ndarray
    remap: np.ndarray
    private: Any
    tolerance: float

    def __bool__(self) -> bool:
        return bool(self.ok)

    @property
    def reason(self) -> str:
        if not self.private.ok:
            return f"the mechanism is not ε·d-private, so Thm 2 (ElSalamouny et al. 2014) does not concern it: {self.private.reason}"
        verdict = "attains" if self.ok else "does not attain"
        return (f"the mechanism {verdict} the utility bound of ElSalamouny et al. 2014 Thm 2 for every regular prior: the slack "
                f"1 − Φ diag(HR) is at most {float(np.abs(self.slack).max()):.3g} in absolute value (tolerance "
                f"{self.tolerance:g}; Lemma 1: U = Σμ − μ·s)")

    @property
    def max_slack(self) -> float:
        return float(np.abs(self.slack).max())


def attains_utility_bound(channel, space: MetricSpace, *, epsilon: float, remap=None, tol: float = 1e-9) -> TightnessResult:
    r"""Check the tightness condition of ElSalamouny et al. 2014 Thm 2: Φ diag(HR) = 1.

    A d-private H with remap R attains U(H, π, R) = Σμ for every regular prior iff Φ diag(HR) = 1
    (ElSalamouny et al. 2014 Thm 2; for leakage, Prop 5: iff some remap satisfies it; HR is then a tight-constraints
    mechanism, Prop 7). Without ``remap`` the optimal remap is taken for the barycentre
    π̄ = (1/n) Σ_y c^y of the corner priors: π̄ has μ̄ > 0 everywhere, so (as in the proof of Thm 2)
    some remap satisfies the condition iff every remap optimal for π̄ does.

    Parameters
    ----------
    channel : Channel or array_like (n, m)
    space : MetricSpace
    epsilon : float
    remap : array_like of int (m,), optional
        A deterministic remap output ↦ secret; default: optimal for π̄.
    tol : float
        Tolerance on max |s|.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Lemma 1, Thm 2
       (equality iff Φ diag(HR) = 1), Thm 4, Cor 3.
    """
    from .measures import check_privacy, utility

    h = channel.matrix if isinstance(channel, Channel) else Channel(channel).matrix
    n = space.n
    if h.shape[0] != n:
        raise ValueError(f"channel has {h.shape[0]} rows but the space has {n} points")
    phi = constraints_matrix(space, epsilon=epsilon)
    if remap is None:
        bary = corner_priors(space, epsilon=epsilon).mean(axis=0)
        bary /= bary.sum()
        r = np.asarray(utility(h, bary).remap, dtype=np.intp)
    else:
        r = np.asarray(remap)
        if not np.issubdtype(r.dtype, np.integer) or r.shape != (h.shape[1],):
            raise ValueError(f"remap must be an integer array of length {h.shape[1]} (one guess per output)")
        if r.size and (r.min() < 0 or r.max() >= n):
            raise ValueError(f"remap values must lie in 0..{n - 1}, got range {r.min()}..{r.max()}")
    # diag(HR)_y = Σ_{z : R(z) = y} H[y, z]
    diag = np.where(r[None, :] == np.arange(n)[:, None], h, 0.0).sum(axis=1)
    slack = 1.0 - phi @ diag
    priv = check_privacy(h, space, epsilon=epsilon)
    ok = bool(priv.ok and np.abs(slack).max() <= tol)
    return TightnessResult(ok, slack, diag, r, priv, tol)


# ---------------------------------------------------------------------------------------------
# Alvim et al. 2015: bounds through n_d on symmetric spaces
# ---------------------------------------------------------------------------------------------


def _counts(space: MetricSpace):
    from .graphs import distance_counts

    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a dprivacy MetricSpace, got {type(space).__name__}")
    return distance_counts(space)


def _symmetric(space, epsilon, quantity, source, kind, formula):
    e = check_epsilon(epsilon, allow_zero=True)
    dc = _counts(space)
    if not dc.symmetric:
        return BoundResult(
            math.nan, False, quantity, kind, source, dc,
            f"n_d depends on the point ({dc.reason}); the result needs a distance-regular or "
            "vertex-transitive graph, or a ball-size symmetric space. Use the regular-prior bounds "
            "(utility_bound, uniform_leakage_bound) instead.",
        )
    s = dc.weighted_sum(e)
    value = formula(space.n, s)
    return BoundResult(value, True, quantity, kind, source, dc, None, value)


def conditional_entropy_bound(space: MetricSpace, *, epsilon: float) -> BoundResult:
    r"""Lower bound on the posterior min-entropy for the uniform prior (Alvim et al. 2015 Thm 12):
    H∞(A | B) ≥ −log2(1 / Σ_d n_d e^{−εd}) = log2 Σ_d n_d e^{−εd} bits, for every ε-private channel
    on a distance-regular or vertex-transitive graph (here: any ball-size symmetric space).

    Equality is attained by H_{ij} = e^{−ε d(i,j)} / Σ_d n_d e^{−εd} (Alvim et al. 2015 Thm 28 / Prop 16;
    ElSalamouny et al. 2014 Prop 9). ``certificate``: the :class:`~dprivacy.graphs.DistanceCounts`.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Thm 12.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Prop 9.
    """
    return _symmetric(space, epsilon, "conditional min-entropy H∞(A|B), uniform prior (bits)",
                      f"{SEED001} Thm 12", "lower", lambda n, s: math.log2(s))


def symmetric_leakage_bound(space: MetricSpace, *, epsilon: float) -> BoundResult:
    r"""Upper bound on the min-entropy leakage for every prior on a ball-size symmetric space:
    L ≤ log2 |Y| − log2 Σ_d n_d e^{−εd} bits (Alvim et al. 2015 Thm 12 with the uniform prior maximizing leakage,
    as in the proof of Thm 15; equal to ElSalamouny et al. 2014 Cor 2 with μ = 1/(|Y| Σ_d n_d e^{−εd})).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Thm 12.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Cor 2.
    """
    return _symmetric(space, epsilon, "min-entropy leakage for every prior (bits)",
                      f"{SEED001} Thm 12 (with Remark 6, as in Thm 15)", "upper",
                      lambda n, s: math.log2(n) - math.log2(s))


def symmetric_utility_bound(space: MetricSpace, *, epsilon: float) -> BoundResult:
    r"""Upper bound on the utility (identity gain, uniform prior) of every ε-private channel on a
    distance-regular or vertex-transitive graph: U ≤ 1 / Σ_d n_d e^{−εd} (Alvim et al. 2015 Thm 27), tight by
    the mechanism of Thm 28. On any ball-size symmetric space it is ElSalamouny et al. 2014 Thm 2 for the uniform
    prior.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Thm 27.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Thm 2.
    """
    return _symmetric(space, epsilon, "utility (identity gain), uniform prior", f"{SEED001} Thm 27", "upper",
                      lambda n, s: 1.0 / s)


def bnd(u: int, v: int, *, epsilon: float) -> BoundResult:
    r"""Bnd(u, v, ε) = u log2(v e^ε / (v − 1 + e^ε)) bits: the leakage bound about a database of u
    individuals with v values each, for every ε-differentially private mechanism and every prior
    (Alvim et al. 2015 Thm 15, tight by Prop 16). ``certificate``: n_d = C(u, d)(v − 1)^d (Alvim et al. 2015 eq. (7)).

    The same value as ElSalamouny et al. 2014 Thm 3 (:func:`database_leakage_bound`).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Thm 15, Prop
       16.
    .. [2] Alvim, Andrés, Chatzikokolakis, Palamidessi, *On the relation
       between differential privacy and quantitative information flow* (ICALP 2011), Thm 5.1.
    """
    u = check_positive_int(u, name="u")
    v = check_positive_int(v, name="v", minimum=2)
    e = check_epsilon(epsilon, allow_zero=True)
    value = _bnd(u, v, e)
    nd = [math.comb(u, d) * (v - 1) ** d for d in range(u + 1)] if u <= 10_000 else None
    cert = {"u": u, "v": v, "epsilon": e, "n_d": nd}
    return BoundResult(value, True, "min-entropy leakage about the database, every prior (bits)", "upper",
                       f"{SEED001} Thm 15", cert, None, value)


def range_limited_leakage_bound(u: int, v: int, r: int, *, epsilon: float) -> BoundResult:
    r"""Leakage bound for ε-differentially private mechanisms on V^u whose range has r elements
    (Alvim et al. 2015 Prop 20):

    L ≤ log2( r e^{εu} / ((v − 1 + e^ε)^ℓ − e^{εℓ} + e^{εu}) ) bits, with ℓ = ⌊log_v r⌋.

    The statement in §5.2 has ℓ = ⌊log_v r⌋ and the appendix restatement ⌈log_v r⌉; the proof ("the
    maximum integer such that v^ℓ ≤ r") and the mathematics support the floor: with the ceiling the
    bound fails, e.g. u = 1, v = 3, r = 2, where a 2-output ε-DP mechanism leaks
    log2(2e^ε / (1 + e^ε)) bits, above the ceiling variant log2(2e^ε / (2 + e^ε)).

    For r ≥ v^u the range does not restrict the mechanism and Bnd(u, v, ε) (Thm 15) is returned. The
    value is not always below Bnd (e.g. u = 3, v = 2, r = 4, ε = 0.5); both are valid, and
    ``certificate["best"]`` is their minimum. Evaluated in log space (no overflow for large u ε).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Prop 20.
    """
    u = check_positive_int(u, name="u")
    v = check_positive_int(v, name="v", minimum=2)
    r = check_positive_int(r, name="r")
    e = check_epsilon(epsilon, allow_zero=True)
    b = _bnd(u, v, e)
    ell = 0
    while v ** (ell + 1) <= r:
        ell += 1
    src = f"{SEED001} Prop 20"
    q = "min-entropy leakage about the database, range of size r, every prior (bits)"
    if ell >= u:
        cert = {"u": u, "v": v, "r": r, "epsilon": e, "ell": ell, "bnd": b, "best": b,
                "note": "r >= v**u: the range does not restrict the mechanism; Thm 15 applies"}
        return BoundResult(b, True, q, "upper", src, cert, None, b)
    # ln of the denominator e^A − e^B + e^C with A = ℓ ln(v−1+e^ε) ≥ B = εℓ, C = εu.
    a_, b_, c_ = ell * _log_v1e(v, e), e * ell, e * u
    if a_ > b_:
        log_den = np.logaddexp(c_, a_ + math.log(-math.expm1(b_ - a_)))
    else:
        log_den = c_
    value = (math.log(r) + c_ - float(log_den)) / _LN2
    cert = {"u": u, "v": v, "r": r, "epsilon": e, "ell": ell, "bnd": b, "best": min(value, b)}
    return BoundResult(value, True, q, "upper", src, cert, None, value)


def individual_leakage_bound(v: int, *, epsilon: float) -> BoundResult:
    r"""Leakage about one individual with v possible values, given all the others, for every
    ε-differentially private mechanism: I∞(X_i; Z | X^- = x^-) ≤ log2(v e^ε / (v − 1 + e^ε)) bits
    (Alvim et al. 2015 Prop 21: Thm 12 on the clique of v databases that differ in that individual).

    ``certificate`` holds the straightforward bound ε log2 e of Alvim et al. 2015 eq. (10) and the additive
    correction log2(v / (v − 1 + e^ε)) ≤ 0 that Prop 21 applies to it.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Prop 21.
    .. [2] Alvim, Andrés, Chatzikokolakis, Palamidessi, *On the relation
       between differential privacy and quantitative information flow* (ICALP 2011), Prop 2.
    """
    v = check_positive_int(v, name="v", minimum=2)
    e = check_epsilon(epsilon, allow_zero=True)
    value = _bnd(1, v, e)
    straight = e / _LN2
    cert = {"v": v, "epsilon": e, "straightforward": straight,
            "correction": math.log2(v) - _log_v1e(v, e) / _LN2, "n_d": [1, v - 1]}
    return BoundResult(value, True, "min-entropy leakage about one individual (bits)", "upper",
                       f"{SEED001} Prop 21", cert, None, value)
