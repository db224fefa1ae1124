"""Sensitivity and uniform sensitivity of a query (Chatzikokolakis et al. 2013 Def 4, Def 5, Thm 6; ElSalamouny et al. 2014 Def 2, Thm 1)
and the oblivious mechanism H∘f."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from .._validate import check_epsilon
from ..channels import Channel
from ..spaces import MetricSpace
from .induced import RTOL, answer_index


# ---------------------------------------------------------------------------------------------
# Sensitivity and uniform sensitivity (Chatzikokolakis et al. 2013 Def 4, Def 5, Thm 6; ElSalamouny et al. 2014 Def 2, Thm 1)
# ---------------------------------------------------------------------------------------------

#: Pairs processed per chunk (bounds temporaries).
_CHUNK = 1 << 20


def _prepare(answers, space_X: MetricSpace, space_Y: MetricSpace):
    if not isinstance(space_X, MetricSpace) or not isinstance(space_Y, MetricSpace):
        raise TypeError(
            f"space_X and space_Y must be MetricSpace objects, got {type(space_X).__name__} and {type(space_Y).__name__}"
        )
    ay, _ = answer_index(answers, space_Y.labels)
    if ay.size != space_X.n:
        raise ValueError(f"there are {ay.size} answers but space_X has {space_X.n} databases (one answer each)")
    I, J = space_X.constraint_pairs()
    return ay, I, J


def _ratios(ay, I, J, dX, dY):
    """d_Y(f x, f x') and d_X(x, x') on the pairs, and the ratio (0 where d_X = ∞)."""
    dx = dX[I, J]
    dy = dY[ay[I], ay[J]]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(np.isinf(dx), 0.0, dy / dx)
    return dx, dy, r


def sensitivity(answers, space_X: MetricSpace, space_Y: MetricSpace) -> float:
    """The sensitivity of f wrt d_X, d_Y: the smallest Δ with d_Y(f(x), f(x')) ≤ Δ·d_X(x, x') for all x,
    x' (Chatzikokolakis et al. 2013 Def 4).

    Parameters
    ----------
    answers : array, shape (N,) or (N, k)
        f(x) for each point x of ``space_X``, given as labels of ``space_Y``.
    space_X, space_Y : MetricSpace

    Returns
    -------
    float
        max over pairs at finite d_X of d_Y(f x, f x') / d_X(x, x'); ``inf`` if some pair at finite d_X
        has answers at infinite d_Y (no Δ exists); 0 for a constant f.

    Only the essential pairs of X are examined (when the space knows them): along a tight chain in X the
    bound adds up, so the largest ratio is attained on an essential pair.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 4.
    """
    ay, I, J = _prepare(answers, space_X, space_Y)
    dX, dY = space_X.distances, space_Y.distances
    best = 0.0
    for a in range(0, I.size, _CHUNK):
        _, _, r = _ratios(ay, I[a : a + _CHUNK], J[a : a + _CHUNK], dX, dY)
        if r.size:
            best = max(best, float(r.max()))
    return best


@dataclass(frozen=True)
class UniformSensitivity:
    """Outcome of :func:`is_uniformly_sensitive` (Chatzikokolakis et al. 2013 Def 5; ElSalamouny et al. 2014 Def 2).

    Attributes
    ----------
    ok : bool
        Whether f is uniformly Δ-sensitive.
    delta : float
        The Δ examined (the sensitivity unless one was given).
    sensitivity : float
        The sensitivity of f (Chatzikokolakis et al. 2013 Def 4).
    witness : tuple of two ints or None
        When ``ok`` is False: a pair of answer indices (points of space_Y) with no tight
        Δ-expansive chain between them, or, when f is not even Δ-sensitive, a pair of database
        indices (points of space_X) with d_Y(f x, f x') > Δ·d_X(x, x'). ``witness_kind`` says which.
    witness_kind : str or None
        ``"answers"`` or ``"databases"``.
    reason : str
        Why it fails ("" when it holds).
    expansive_pairs : (ndarray, ndarray)
        Answer pairs (i < j) found Δ-expansive on the examined database pairs.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 5.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 2.
    """

    ok: bool
    delta: float
    sensitivity: float
    witness: tuple[int, int] | None
    witness_kind: str | None
    reason: str
    expansive_pairs: tuple[np.ndarray, np.ndarray] = field(repr=False)

    def __bool__(self) -> bool:
        return self.ok


def is_uniformly_sensitive(answers, space_X: MetricSpace, space_Y: MetricSpace, *, delta: float | None = None, rtol: float = RTOL) -> UniformSensitivity:
    """Whether f is uniformly Δ-sensitive wrt d_X, d_Y (Chatzikokolakis et al. 2013 Def 5 = ElSalamouny et al. 2014 Def 2).

    f is uniformly Δ-sensitive iff it is Δ-sensitive and between every two answers y, y' ∈ Y there is a
    tight chain y = y_1, …, y_n = y' (Σ d_Y(y_i, y_{i+1}) = d_Y(y, y')) whose steps are Δ-expansive:
    d_Y(y_i, y_{i+1}) = Δ·d_X(x, x') for some x ∈ f⁻¹(y_i), x' ∈ f⁻¹(y_{i+1}). Then H is d_Y-private
    iff H∘f is Δ·d_X-private (Chatzikokolakis et al. 2013 Thm 6; ElSalamouny et al. 2014 Thm 1).

    Decision procedure. Every chain has length ≥ d_Y(y, y') (triangle inequality), so a tight
    Δ-expansive chain exists iff the shortest path from y to y' in the graph of Δ-expansive pairs,
    weighted by d_Y, equals d_Y(y, y'). Expansive pairs are collected on the essential pairs of X
    only: if (x, x') is not essential, x–x''–x' is tight and d_Y(fx, fx') = Δ d_X(x, x') forces
    both halves to be Δ-expansive and fx, fx'', fx' to be tight, so the shortest paths are unchanged.
    Pairs at d_Y = ∞ are not examined (they constrain nothing in Thm 6).

    Parameters
    ----------
    answers : array
        f(x) for each point of ``space_X``, as labels of ``space_Y``. Every point of ``space_Y`` is an
        answer y of the definition, including points outside the image of f (which then fail).
    delta : float, optional
        The Δ to test; default the sensitivity of f (the only Δ that can work when f takes two values).
    rtol : float
        Relative tolerance for "d_Y = Δ d_X" and for tightness.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 5, Thm 6.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 2, Thm 1.
    """
    ay, I, J = _prepare(answers, space_X, space_Y)
    dX, dY = space_X.distances, space_Y.distances
    m = space_Y.n
    sens, worst = 0.0, None
    ea, eb = [], []
    # First pass: the sensitivity (needed for the default Δ) and the pair attaining it.
    for a in range(0, I.size, _CHUNK):
        i, j = I[a : a + _CHUNK], J[a : a + _CHUNK]
        _, _, r = _ratios(ay, i, j, dX, dY)
        if r.size:
            k = int(np.argmax(r))
            if worst is None or r[k] > sens:
                sens, worst = float(r[k]), (int(i[k]), int(j[k]))
    if delta is None:
        d_ = sens
    else:
        d_ = check_epsilon(delta, name="delta", allow_zero=True)
    empty = (np.zeros(0, np.intp), np.zeros(0, np.intp))
    if sens > d_ * (1 + rtol):
        return UniformSensitivity(
            False, d_, sens, worst, "databases",
            f"f is not {d_:g}-sensitive: d_Y(f x, f x') = {sens:.6g}·d_X(x, x') for databases {worst}", empty,
        )
    for a in range(0, I.size, _CHUNK):
        i, j = I[a : a + _CHUNK], J[a : a + _CHUNK]
        dx, dy, _ = _ratios(ay, i, j, dX, dY)
        yi, yj = ay[i], ay[j]
        ok = np.isfinite(dx) & np.isfinite(dy) & (yi != yj)
        ok &= np.abs(dy - d_ * dx) <= rtol * np.maximum(dy, d_ * dx)
        ea.append(np.minimum(yi[ok], yj[ok]))
        eb.append(np.maximum(yi[ok], yj[ok]))
    if ea:
        key = np.unique(np.concatenate(ea).astype(np.int64) * m + np.concatenate(eb))
    else:
        key = np.zeros(0, np.int64)
    pa, pb = (key // m).astype(np.intp), (key % m).astype(np.intp)
    pairs = (pa, pb)
    if m == 1:
        return UniformSensitivity(True, d_, sens, None, None, "", pairs)
    w = dY[pa, pb]
    g = sparse.coo_array((np.r_[w, w], (np.r_[pa, pb], np.r_[pb, pa])), shape=(m, m)).tocsr()
    sp = csgraph.shortest_path(g, method="D", directed=False)
    fin = np.isfinite(dY)
    with np.errstate(invalid="ignore"):
        bad = fin & (sp > dY * (1 + rtol) + 1e-300)
    np.fill_diagonal(bad, False)
    if not bad.any():
        return UniformSensitivity(True, d_, sens, None, None, "", pairs)
    bi, bj = np.nonzero(np.triu(bad))
    k = int(np.lexsort((bj, bi, dY[bi, bj]))[0])  # the closest failing pair, then the first
    y, y2 = int(bi[k]), int(bj[k])
    lab = space_Y.labels
    reason = (
        f"no tight {d_:g}-expansive chain between answers {lab[y]!r} and {lab[y2]!r}: d_Y = {dY[y, y2]:.6g} but the "
        f"shortest chain of {d_:g}-expansive steps has length {sp[y, y2]:.6g}"
    )
    return UniformSensitivity(False, d_, sens, (y, y2), "answers", reason, pairs)


# ---------------------------------------------------------------------------------------------
# Oblivious mechanisms
# ---------------------------------------------------------------------------------------------


def oblivious(channel, answers_index) -> Channel:
    """The oblivious mechanism H∘f on databases: row x is row f(x) of H (ElSalamouny et al. 2014 §3.1; Chatzikokolakis et al. 2013 §2).

    Parameters
    ----------
    channel : Channel or array, shape (m, z)
        The noise channel H on the answers.
    answers_index : int array, shape (N,)
        For each database, the row of H of its answer (e.g. from :func:`answer_index` or
        :attr:`InducedGraph.answer_index`).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.2, Thm 1,
       Cor 1.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Lemma 1, Prop 1.
    """
    h = channel if isinstance(channel, Channel) else Channel(channel)
    idx = np.asarray(answers_index)
    if idx.ndim != 1 or idx.size == 0:
        raise ValueError(f"answers_index must be a non-empty 1-D array of row indices, got shape {idx.shape}")
    if not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"answers_index must hold integer row indices, got dtype {idx.dtype}")
    if idx.min() < 0 or idx.max() >= h.n_inputs:
        raise ValueError(f"answers_index must lie in 0..{h.n_inputs - 1} (rows of H), got range {idx.min()}..{idx.max()}")
    return Channel._trusted(h.matrix[idx], None, h.outputs)
