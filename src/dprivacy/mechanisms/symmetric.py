"""The closed-form optimal mechanism on symmetric spaces (Alvim et al. 2015 Thm 27/28; ElSalamouny et al. 2014 Prop 9).

On a space where every point sees n_r points at distance r (ball-size symmetric, ElSalamouny et al. 2014 Def 7),

.. math:: H_{ij} = \\gamma\\, e^{-\\varepsilon d(i,j)}, \\qquad
          \\gamma = 1 \\big/ \\textstyle\\sum_r n_r e^{-\\varepsilon r}

is a channel (every row sums to γ Σ_r n_r e^{-εr} = 1), ε·d-private, and tight-constraints: every
ratio H_ij / H_kj with a tight chain equals e^{ε(d(k,j) − d(i,j))}. Alvim et al. 2015 proves it optimal for
the uniform prior under the identity gain, with utility γ (Thm 27 bound, Thm 28 attainment), for
distance-regular or vertex-transitive graphs (which are ball-size symmetric, Prop 5). ElSalamouny et al. 2014 Prop 9
generalizes the construction to every ball-size symmetric metric space and, with Thm 4, proves it
optimal (utility and min-mutual information) for every ε·d-regular prior, not only the uniform one.
It is the exponential mechanism with quality −d (Alvim et al. 2015 §7).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..results import Result
from .._validate import check_epsilon
from ..channels import Channel
from ..graphs import (
    Augmentation,
    DistanceCounts,
    augment_to_symmetric,
    distance_counts,
    is_distance_regular,
    is_vertex_transitive,
)
from ..spaces import MetricSpace

__all__ = ["SymmetricMechanism", "AugmentedMechanism", "symmetric_mechanism", "remark29_mechanism"]

_HYPOTHESES = ("ball-size", "graph")


@dataclass(frozen=True)
class SymmetricMechanism(Result):
    """Result of :func:`symmetric_mechanism`.

    Attributes
    ----------
    ok : bool
        Whether the hypothesis holds, so that eq. (17) of Alvim et al. 2015 defines an optimal channel
        (``exists`` says the same in the theory's words).
    channel : Channel or None
        H : Y → Y with H_ij = γ e^{−ε d(i,j)} (None when it does not exist).
    gamma : float
        γ = 1/Σ_r n_r e^{−εr}: the diagonal of H, and its utility (Bayes vulnerability of the secret
        after the channel, identity gain) for the uniform prior, Alvim et al. 2015 Thm 28 (NaN when it does
        not exist).
    epsilon : float
    counts : DistanceCounts
        The n_r of the space (or why they depend on the point).
    hypothesis : str
        ``"ball-size"`` (ElSalamouny et al. 2014 Prop 9) or ``"graph"`` (Alvim et al. 2015 Thm 28: a distance-regular or
        vertex-transitive graph).
    reason : str
        Why the mechanism does not exist, or which hypothesis held.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), eq.
       (17)–(18), Thm 28.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 7, Prop 9.
    """

    ok: bool
    channel: Channel | None
    gamma: float
    epsilon: float
    counts: DistanceCounts
    hypothesis: str
    reason: str = ""
    space: MetricSpace | None = field(default=None, repr=False, compare=False)

    @property
    def exists(self) -> bool:
        """The mechanism of Alvim et al. 2015 eq. (17) exists (a domain fact; the same as ``ok``)."""
        return bool(self.ok)

    @property
    def mechanism(self):
        """The mechanism as a :class:`~dprivacy.mechanisms.base.DenseMechanism` when it exists, else None.

        Private by construction: every column γe^{−εd(·, j)} satisfies H[i, j] ≤ e^{εd(i,i')} H[i', j] by the
        triangle inequality (the tight-constraints form, ElSalamouny et al. 2014 Def 6 / Prop 9)."""
        if not self.exists or self.space is None:
            return None
        from .base import DenseMechanism, LogMechanism, by_construction, log_underflows

        cert = by_construction(epsilon=self.epsilon, reason=f"columns γ·e^(−ε d(·, z)) ({self.reason}; ElSalamouny et al. 2014 Prop 9, Alvim et al. 2015 "
                                              "eq. (17)): each is ε·d-Lipschitz in log by the triangle inequality")
        log_h = np.log(self.gamma) - self.epsilon * self.space.distances
        if log_underflows(log_h):  # ring:1600 at ε = 1: e^(−800) is 0 in float64, the stored matrix not private
            return LogMechanism(log_h, self.space, epsilon=self.epsilon, name="symmetric", certificate=cert)
        return DenseMechanism(self.channel, self.space, epsilon=self.epsilon, name="symmetric", certificate=cert)

    def __bool__(self) -> bool:
        return bool(self.ok)

    @property
    def matrix(self) -> np.ndarray | None:
        """The channel matrix, or None."""
        return None if self.channel is None else self.channel.matrix

    @property
    def utility_uniform(self) -> float:
        """Utility for the uniform prior under the identity gain: γ (Alvim et al. 2015 Thm 28)."""
        return self.gamma


def symmetric_mechanism(space, *, epsilon: float, hypothesis: str = "ball-size") -> SymmetricMechanism:
    r"""The optimal ε·d-private mechanism H_ij = γ e^{−ε d(i,j)} of Alvim et al. 2015 eq. (17)-(18), Thm 28.

    Parameters
    ----------
    space : MetricSpace or networkx.Graph
        The secrets with their (unscaled) metric d; a graph is taken with its shortest-path metric,
        so that ε·d-privacy is ε-differential privacy for its adjacency (Alvim et al. 2015 Def 1, Prop 26).
    epsilon : float
        Privacy parameter, > 0.
    hypothesis : {"ball-size", "graph"}
        ``"ball-size"`` (default): require ball-size symmetry, the condition of ElSalamouny et al. 2014 Prop 9,
        under which H is a tight-constraints mechanism, optimal for every ε·d-regular prior (ElSalamouny et al. 2014
        Thm 4), the uniform prior included (its μ = γ/n · 1 ≥ 0). ``"graph"``: require the hypothesis
        of Alvim et al. 2015 Thm 28 as stated: the space is the metric of a distance-regular or vertex-
        transitive graph (checked with :func:`dprivacy.graphs.is_distance_regular` and
        :func:`dprivacy.graphs.is_vertex_transitive`; both imply ball-size symmetry, Alvim et al. 2015 Prop 5).

    Returns
    -------
    SymmetricMechanism
        ``exists`` with the channel and γ, or ``exists=False`` with the reason (the two points whose
        distance counts differ, or why the graph is neither distance-regular nor vertex-transitive).

    Notes
    -----
    Without symmetry eq. (17) is not a channel: the row sums γ Σ_j e^{−ε d(i,j)} differ between rows.
    (Alvim et al. 2011, after Thm 6.2, says the matrix can "always" be defined; Alvim et al. 2015 §6.1 corrects this:
    n_d must be defined.) ElSalamouny et al. 2014 Prop 9 prints h_{yy'} = e^{d(y,y')}/Σ_r n_r e^{−r}; the exponent
    must be −d for the rows to sum to 1, as in Alvim et al. 2015 eq. (17) — implemented with −d.
    For a graph that is not symmetric, see :func:`remark29_mechanism`.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Thm 27, Thm
       28.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 7, Prop 9,
       Thm 4.
    """
    eps = check_epsilon(epsilon)
    if hypothesis not in _HYPOTHESES:
        raise ValueError(f"hypothesis must be one of {', '.join(_HYPOTHESES)}; got {hypothesis!r}")
    if not isinstance(space, MetricSpace):
        import networkx as nx

        if not isinstance(space, nx.Graph):
            raise TypeError(f"space must be a MetricSpace or a networkx.Graph, got {type(space).__name__}")
        from ..spaces import from_graph

        space = from_graph(space)
    counts = distance_counts(space)

    def fail(reason: str) -> SymmetricMechanism:
        return SymmetricMechanism(False, None, float("nan"), eps, counts, hypothesis, reason, space)

    if not counts.symmetric:
        return fail(f"the space is not ball-size symmetric (ElSalamouny et al. 2014 Def 7): {counts.reason}")
    note = "ball-size symmetric (ElSalamouny et al. 2014 Prop 9)"
    if hypothesis == "graph":
        dr = is_distance_regular(space)
        if dr.ok:
            note = f"distance-regular with intersection array {dr.intersection_array} (Alvim et al. 2015 Thm 28)"
        else:
            vt = is_vertex_transitive(space)
            if not vt.ok:
                return fail(
                    "the hypothesis of Alvim et al. 2015 Thm 28 fails: not distance-regular "
                    f"({dr.reason}) and not vertex-transitive ({vt.reason})"
                )
            note = "vertex-transitive (Alvim et al. 2015 Thm 28)"
    total = counts.weighted_sum(eps)
    gamma = 1.0 / total
    with np.errstate(over="ignore"):
        h = gamma * np.exp(-eps * space.distances)  # e^{−∞} = 0 between components of an extended metric
    labels = space.labels
    return SymmetricMechanism(True, Channel._trusted(h, labels, labels), gamma, eps, counts, hypothesis, note, space)


@dataclass(frozen=True)
class AugmentedMechanism:
    """Result of :func:`remark29_mechanism`.

    Attributes
    ----------
    mechanism : SymmetricMechanism
        The closed-form mechanism on the augmented graph (Y, ~').
    augmentation : Augmentation
        ~', the added adjacencies, and the guarantee for the original graph.
    channel : Channel
        Same as ``mechanism.channel``; ε-differentially private for the original ~.
    utility_uniform : float
        γ' = 1/Σ_r n'_r e^{−εr}: its utility for the uniform prior (a lower bound on the optimum for ~).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Remark 29.
    """

    mechanism: SymmetricMechanism
    augmentation: Augmentation
    channel: Channel
    utility_uniform: float

    @property
    def guarantee(self) -> str:
        """What the mechanism guarantees for the original graph (Alvim et al. 2015 Remark 29)."""
        return self.augmentation.guarantee


def remark29_mechanism(graph_or_space, *, epsilon: float, method: str = "best", group_shape=None) -> AugmentedMechanism:
    r"""ε-DP for any graph via artificial adjacencies (Alvim et al. 2015 Remark 29, Example 31).

    Builds a supergraph ~' ⊇ ~ whose metric is ball-size symmetric
    (:func:`dprivacy.graphs.augment_to_symmetric`) and the mechanism H_ij = γ' e^{−ε d'(i,j)} on it.
    Since d' ≤ d, H is ε·d-private for the original graph; it is optimal for the uniform prior among
    mechanisms private for ~', not necessarily for ~ (Example 31: on a line of 6 answers closed into a
    ring, utility 8/21 against 4/9 for the truncated geometric mechanism).

    Parameters
    ----------
    graph_or_space : networkx.Graph, MetricSpace or edge list
        An unweighted graph or its metric.
    epsilon : float
    method : {"best", "cayley", "power", "complete"}
        How to augment; ``"best"`` builds every candidate and keeps the one with the largest utility γ'
        for the uniform prior at this ε (the paper's "the smaller ~', the higher the utility", made
        precise).
    group_shape : tuple of int, optional
        For ``"cayley"`` (and the cayley candidate of ``"best"``).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Remark 29,
       Example 31.
    """
    eps = check_epsilon(epsilon)
    methods = ("cayley", "power", "complete") if method == "best" else (method,)
    best = None
    for m in methods:
        aug = augment_to_symmetric(graph_or_space, method=m, group_shape=group_shape if m == "cayley" else None)
        mech = symmetric_mechanism(aug.space, epsilon=eps)
        if not mech.exists:  # pragma: no cover - augment_to_symmetric always returns a symmetric metric
            raise AssertionError(f"augmentation {aug.method} is not symmetric: {mech.reason}")
        if best is None or mech.gamma > best.mechanism.gamma:
            best = AugmentedMechanism(mech, aug, mech.channel, mech.gamma)
    return best
