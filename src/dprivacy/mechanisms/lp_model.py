r"""The optimal-mechanism LP: its model and its result.

For a prior π, a gain g[y, w] (or a loss l[y, w]) and ε, the ε·d-private mechanism of best expected gain
(smallest expected loss) is the solution of a linear program in the entries of a channel H : Y → W (ElSalamouny et al. 2014
§3.4 and §5.1; Alvim et al. 2015 §6, Def 22 / Prop 23; Chatzikokolakis et al. 2013 §4.2, Def 7). This module writes its parts — the
privacy constraints on the space's essential pairs (ElSalamouny et al. 2013 Prop 1), the row sums, the objective — and
holds :class:`OptimalResult`, which every method returns: the solvers of :mod:`.lp_solve`, the spanner LP of
:mod:`.spanner`, and the front door :func:`dprivacy.mechanisms.optimal.optimal_mechanism`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

from .._validate import as_float_matrix
from ..channels import Channel
from ..results import Result
from ..spaces import MetricSpace

_PAIRS = ("essential", "all")


@dataclass(frozen=True)
class OptimalResult(Result):
    """Outcome of :func:`~dprivacy.mechanisms.optimal.optimal_mechanism`, in the style of
    ``scipy.optimize.OptimizeResult``.

    Attributes
    ----------
    status : int
        The solver's status code (``scipy.optimize.linprog``: 0 optimal, 1 iteration/time limit,
        2 infeasible, 3 unbounded, 4 numerical difficulties; 5 (``STALLED``) a Dantzig–Wolfe run that stopped
        without closing its gap, its bracket honest); -1 when the solver reported success but
        the returned point was rejected here (an entry below −1e−9 or a row sum off by more than
        1e−6; see ``solver_message``). The LP itself is always feasible (a constant channel is private)
        and bounded (H is stochastic), so statuses 2 and 3 would signal numerical trouble.
    solver_message : str
        The solver's message (with the reason for rejection appended when ``status`` is -1); ``reason``
        is the sentence to show a user.
    channel : Channel or None
        The optimal mechanism Y → W (rows: the space's points, columns: the guesses), or None when the
        solve failed. When ``implicit`` is set this is its float64 rendering, whose underflowed
        entries make it fail the check as stored; use ``mechanism``.
    value : float
        Expected gain (``kind == "gain"``) or expected loss (``kind == "loss"``) of ``channel`` for the
        prior under its optimal remap (computed by :mod:`dprivacy.measures`, not taken from the
        solver); NaN when the solve failed. Equals ``objective`` up to solver tolerance (see
        :func:`~dprivacy.mechanisms.optimal.optimal_mechanism`, Notes).
    objective : float
        The LP objective reported by the solver (gain or loss, same sign convention as ``value``).
        It is not an upper bound certificate: HiGHS satisfies the constraints within its feasibility
        tolerance, so it may exceed the true optimum by about that tolerance.
    kind : str
        "gain" or "loss".
    remap : ndarray or None
        The optimal deterministic remap of ``channel`` (output index ↦ guess index) used for ``value``.
    pairs : str
        "essential" or "all": which privacy constraints were written.
    n_pairs : int
        Number of unordered pairs {y, y'} constrained (each written in both orientations).
    n_variables, n_constraints : int
        Size of the LP: n·|W| variables; n equalities plus 2·n_pairs·|W| inequalities.
    seconds : float
        Wall-clock time of the solver call.
    build_seconds : float
        Wall-clock time spent building the sparse constraint matrices.
    smallest_epsilon : float
        The smallest ε' for which the returned (cleaned) channel is ε'·d-private
        (:func:`dprivacy.measures.check_privacy`); NaN when the solve failed.
    private : bool
        Whether the returned channel passes ``check_privacy`` at the requested ε (relative tolerance
        ``dprivacy.measures.privacy.PRIVACY_RTOL`` on ε·d plus the float64 rounding floor).
    row_sum_error : float
        max_y |Σ_w H[y, w] − 1| of the raw solver output, before cleaning.
    clipped : float
        Total probability mass of the negative raw entries that were set to 0.
    min_entry : float
        The smallest raw entry returned by the solver (negative values are rounding noise).
    raw_smallest_epsilon : float
        ``smallest_epsilon`` of the solver's channel after clipping and renormalizing, before the
        repair (equal to ``smallest_epsilon`` when ``repair`` was off; NaN when the time limit had run out).
    repair_mass : float
        Largest probability mass the repair added to a row before renormalizing (0 without repair).
    epsilon_checked : float
        The ε at which the channel was checked (the requested ε).
    method : str
        "full", "constraint-generation" or "truncated-geometric" (Chatzikokolakis et al. 2013 Thm 8): what produced the
        channel.
    bound : float
        A bound on the true optimum from the other side: OPT ≤ bound for a gain, OPT ≥ bound for a
        loss (a Lagrangian bound from the solver's duals, :func:`~dprivacy.mechanisms.lp_engine.lagrangian_bound`,
        valid whatever the solver's tolerances). ``value`` is on the near side (the returned channel is
        private), so OPT lies between ``value`` and ``bound``.
    gap : float
        Relative gap |bound − value| / max(|bound|, |value|) (inf when the channel is not certified).
    rounds : int
        Rounds of constraint generation (0 for the full LP).
    history : tuple of lp_engine.Round
        Per-round restricted LP size, objective, bound and certified value.
    implicit : Mechanism or None
        The optimal mechanism kept implicit, when a float64 matrix cannot hold it: the truncated
        geometric mechanism with its remap (:class:`~dprivacy.mechanisms.geometric.TruncatedGeometricMechanism`)
        where ε·d ≳ 708 makes entries underflow; ``private`` and ``smallest_epsilon`` are then those of
        its exact log-entries.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.4, Thm 4.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 1.
    """

    status: int
    solver_message: str
    channel: Channel | None
    value: float
    objective: float
    kind: str
    remap: np.ndarray | None
    pairs: str
    n_pairs: int
    n_variables: int
    n_constraints: int
    seconds: float
    build_seconds: float
    smallest_epsilon: float
    private: bool
    row_sum_error: float
    clipped: float
    min_entry: float
    raw_smallest_epsilon: float
    repair_mass: float
    epsilon_checked: float = float("nan")
    space: MetricSpace | None = field(default=None, repr=False, compare=False)
    method: str = "full"
    bound: float = float("nan")
    gap: float = float("nan")
    rounds: int = 0
    history: tuple = field(default=(), repr=False, compare=False)
    implicit: Any = field(default=None, repr=False, compare=False)

    _json_exclude = ("channel", "remap", "implicit")

    @property
    def solved(self) -> bool:
        """The solver returned a channel (which may still fail the privacy check: ``ok`` says both)."""
        return self.channel is not None

    @property
    def ok(self) -> bool:
        """An optimal mechanism was found *and* the returned channel passes the exact privacy check at ε
        (never ok with a channel that is not private)."""
        return bool(self.solved and self.private)

    @property
    def reason(self) -> str:
        if not self.solved:
            return f"the linear program failed: {self.solver_message}"
        if not self.private and self.implicit is not None:
            return (f"the mechanism's exact log-entries fail the privacy check: smallest ε "
                    f"{self.smallest_epsilon:.12g} > {self.epsilon_checked:.12g}")
        if not self.private:
            return (f"the LP's channel (after the certified repair) is not ε·d-private as stored in float64: its smallest "
                    f"ε is {self.smallest_epsilon:.12g} > {self.epsilon_checked:.12g}; at large ε·d the entries "
                    "e^(−ε d) underflow to 0 beside positive ones, so this stored channel is not private")
        how = "by Chatzikokolakis et al. 2013 Thm 8, no LP" if self.method == "truncated-geometric" else "by linear programming"
        return (f"{'optimal' if self.status == 0 else 'best found'} for the prior {how} "
                f"({self.method}: {self.solver_message}); value {self.value:.12g}, bound {self.bound:.12g}, relative gap "
                f"{self.gap:.3g}; privacy certified by the exact check of the returned channel (smallest ε "
                f"{self.smallest_epsilon:.12g}" + (", on its exact log-entries: kept implicit, since float64 "
                "entries below 1e-308 would underflow" if self.implicit is not None else "") + ")")

    @property
    def mechanism(self):
        """The optimal mechanism when ``ok`` (a :class:`~dprivacy.mechanisms.base.DenseMechanism`, or
        ``implicit`` when set), else None."""
        if not self.ok:
            return None
        if self.implicit is not None:
            return self.implicit
        from .base import DenseMechanism, PrivacyCertificate

        cert = PrivacyCertificate(True, self.epsilon_checked, "numerical-check", self.reason,
                                  smallest_epsilon=self.smallest_epsilon, rigorous=False)
        return DenseMechanism(self.channel, self.space, epsilon=self.epsilon_checked, name="optimal", certificate=cert)

    def __bool__(self) -> bool:
        return self.ok


@dataclass
class Problem:
    """The checked arguments of :func:`~dprivacy.mechanisms.optimal.optimal_mechanism` (:func:`check_problem`)."""

    space: MetricSpace
    eps: float
    p: np.ndarray
    g: np.ndarray
    kind: str
    binary: bool
    labels: list
    method: str
    pairs: str
    solver: str
    options: dict | None
    gap: float
    time_limit: float | None


@dataclass
class _Context(Problem):
    """A checked problem in the form the solvers take: with the gain form c_all = π·g (or −π·l), the kept output
    columns, and the deadline of the time limit."""

    kept: np.ndarray
    m: int
    repair: bool
    c_all: np.ndarray
    deadline: float | None = None  # time.perf_counter() reading at which the time limit runs out


def privacy_constraints(space: MetricSpace, *, epsilon: float, n_outputs: int, pairs: str = "essential"):
    r"""The privacy constraints of an LP over a channel H : Y → W as a sparse matrix ``A`` with A·x ≤ 0.

    The variable vector is x = vec(H) in row-major order (entry H[y, w] is x[y·|W| + w]). For every
    ordered pair (a, b) of the chosen unordered pairs and every column w, one row reads

    .. math:: e^{-\varepsilon d(a, b)} H[a, w] - H[b, w] \le 0,

    i.e. H[a, w] ≤ e^{ε d(a,b)} H[b, w] (ElSalamouny et al. 2014 Def 1). Writing the factor e^{−εd} ∈ (0, 1] on the
    left keeps every coefficient of A in [−1, 1], which is better conditioned than e^{+εd} when some
    distances are large. Pairs at infinite distance (extended metrics, Chatzikokolakis et al. 2013 §3) are not constrained.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    n_outputs : int
        |W|, the number of columns of H.
    pairs : {"essential", "all"}
        "essential": the pairs of :meth:`MetricSpace.essential_pairs` (the edges of a graph metric;
        enough by ElSalamouny et al. 2013 Prop 1). "all": every pair at finite distance (the baseline).

    Returns
    -------
    A : scipy.sparse.csr_array, shape (2·P·|W|, n·|W|)
    n_pairs : int
        P, the number of unordered pairs.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 1.
    """
    if pairs == "essential":
        i, j = space.essential_pairs()
    elif pairs == "all":
        i, j = np.triu_indices(space.n, k=1)
    else:
        raise ValueError(f"pairs must be one of {', '.join(map(repr, _PAIRS))}; got {pairs!r}")
    i = np.asarray(i, dtype=np.intp)
    j = np.asarray(j, dtype=np.intp)
    d = space.distances[i, j]
    finite = np.isfinite(d)
    i, j, d = i[finite], j[finite], d[finite]
    m = int(n_outputs)
    a = np.concatenate([i, j])  # both orientations of each pair
    b = np.concatenate([j, i])
    factor = np.exp(-epsilon * np.concatenate([d, d]))
    k = a.size
    w = np.tile(np.arange(m, dtype=np.intp), k)
    rows = np.arange(k * m, dtype=np.intp)
    col_a = np.repeat(a * m, m) + w
    col_b = np.repeat(b * m, m) + w
    data = np.concatenate([np.repeat(factor, m), np.full(k * m, -1.0)])
    A = sparse.coo_array(
        (data, (np.concatenate([rows, rows]), np.concatenate([col_a, col_b]))),
        shape=(k * m, space.n * m),
    ).tocsr()
    return A, int(i.size)


def _row_sum_constraints(n: int, m: int):
    # Row y of A_eq has ones on the m entries of row y of H.
    cols = np.arange(n * m, dtype=np.intp)
    return sparse.csr_array((np.ones(n * m), (cols // m, cols)), shape=(n, n * m))


def _objective_matrix(n: int, gain, loss) -> tuple[np.ndarray, str]:
    if gain is not None and loss is not None:
        raise ValueError("give either gain or loss, not both")
    if gain is None and loss is None:
        return np.eye(n), "gain"  # the binary gain g_b(y, w) = [y = w] on W = Y (ElSalamouny et al. 2014 §3.4)
    name = "gain" if gain is not None else "loss"
    g = as_float_matrix(gain if gain is not None else loss, name=name)
    if g.shape[0] != n:
        raise ValueError(f"{name} has {g.shape[0]} rows, expected {n} (one per secret); columns are guesses")
    if not np.isfinite(g).all():
        y, w = np.argwhere(~np.isfinite(g))[0]
        raise ValueError(f"{name} must be finite; entry [{y}, {w}] is {g[y, w]}")
    return g, name


def _output_labels(outputs, space: MetricSpace, m: int, binary: bool) -> list:
    if outputs is None:
        return space.labels if (binary or m == space.n) else list(range(m))
    if isinstance(outputs, (str, bytes)):
        raise TypeError(f"outputs must be a sequence of labels, one per guess, got the string {outputs!r}")
    labels = list(outputs)
    if len(labels) != m:
        raise ValueError(f"outputs has {len(labels)} labels, expected {m} (one per column of the gain/loss matrix)")
    return labels


def no_privacy_bound(c_all: np.ndarray) -> float:
    """Σ_y max_w c[y, w] for the gain form c = π·g (or −π·l): every channel, private or not, earns at most each
    secret's best guess, so this bounds the optimum whatever ε (the bound when no LP bound could be had)."""
    return float(np.asarray(c_all).max(axis=1).sum())
