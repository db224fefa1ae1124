"""Queries on databases and the metric spaces they induce on their answers.

A database of u individuals with values in a finite universe V is a tuple x ∈ V^u (seed 001 §3; seed 000
§3.2). Two databases are adjacent, x ~ x', when they differ in the value of exactly one individual; the
graph distance of ~ is the Hamming distance d_h, and ε-differential privacy is ε·d_h-privacy. A query
f : V^u → Y composed with a noise channel H : Y → Z gives the *oblivious* mechanism H∘f (seed 000 §3.1).

The query carries the adjacency of databases to its answers, the *induced graph*

    y ~_f y'  iff  x ~ x' for some x ∈ f⁻¹(y), x' ∈ f⁻¹(y')        (seed 000 §3.2; seed 001 Def 25)

and every f is uniformly 1-sensitive wrt d_h and the graph metric d_{~f}, so H is ε·d_{~f}-private iff
H∘f is ε·d_h-private (seed 000 Cor 1, from Thm 1 = seed 002 Thm 6).

This module gives

* :func:`universe` — the enumerated databases V^u with their Hamming, Manhattan (d_1, normalized d̃_1)
  and maximum (d_∞) metrics (seed 002 §5–6), optionally with a null value ∅ for absent individuals;
* vectorized queries on the (N, u) array of databases: :func:`count`, :func:`total` (sum),
  :func:`average`, :func:`percentile`, :func:`kcount`, :func:`most_frequent`;
* :func:`induced_graph` / :func:`induced_space` — ~_f and d_{~f} by enumeration, without per-pair
  Python loops;
* closed forms that never enumerate: :func:`count_space`, :func:`sum_space`, :func:`kcount_space`
  (seed 000 §7.1);
* :func:`sensitivity` (seed 002 Def 4) and :func:`is_uniformly_sensitive` (seed 002 Def 5 = seed 000
  Def 2), and :func:`oblivious` for H∘f.

Conventions. Databases are numeric arrays of shape (N, u); an absent individual (the null value ∅ of
seed 002 §2) is ``NaN``. Queries return one answer per database, as an array of shape (N,) or (N, k).
The *labels* of an answer space are the distinct answers in ``np.unique`` order: ascending numbers, or
tuples in lexicographic order (see :func:`answer_index`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real
from typing import Callable, Sequence

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from . import spaces
from ._validate import check_epsilon, check_positive_int
from .channels import Channel
from .spaces import MetricSpace, _check_dense_fits

#: Largest number of databases :func:`universe` enumerates (v^u above this is refused).
MAX_DATABASES = 2**20

#: Relative tolerance when comparing distances (Δ-expansive pairs, tight chains).
RTOL = 1e-9

__all__ = [
    "MAX_DATABASES",
    "Universe",
    "universe",
    "count",
    "total",
    "average",
    "percentile",
    "kcount",
    "most_frequent",
    "independent_predicates",
    "QUERIES",
    "answer_index",
    "InducedGraph",
    "induced_graph",
    "induced_space",
    "answer_line",
    "count_space",
    "sum_space",
    "kcount_space",
    "sensitivity",
    "UniformSensitivity",
    "is_uniformly_sensitive",
    "oblivious",
]


# ---------------------------------------------------------------------------------------------
# The database universe V^u
# ---------------------------------------------------------------------------------------------


class Universe:
    """All databases V^u of u individuals, enumerated in lexicographic order.

    Built by :func:`universe`. Database ``i`` is the tuple of *symbols* ``symbols[i]`` (indices into
    ``values``, and ``len(values)`` for the null value ∅ when ``null`` is True), read as the base-S
    digits of i with the first individual most significant (S = number of symbols). This is the
    order of :func:`dprivacy.spaces.hamming`, so row i of the Hamming metric is database i. With a null
    value the all-null database (the last one) is excluded, as in seed 002 §5 ("we exclude the empty
    database so that the queries can be always defined").

    Attributes
    ----------
    u : int
        Number of individuals.
    values : ndarray, shape (v,)
        The values an individual may hold (the null value not included).
    null : bool
        Whether an individual may be absent (value ∅, stored as NaN in ``databases``).
    symbols : ndarray of int, shape (N, u)
        Value indices; ``v`` stands for ∅.
    databases : ndarray, shape (N, u)
        The values themselves: an int array when the values are integers and there is no null value,
        else float with NaN for ∅.
    """

    def __init__(self, u: int, values: np.ndarray, null: bool):
        self.u = u
        self.values = values
        self.null = null
        s = self.n_symbols
        full = s**u
        digits = np.stack(np.unravel_index(np.arange(full), (s,) * u), axis=1).astype(np.intp)
        if null:
            digits = digits[:-1]  # the all-null database is the last one in lexicographic order
        digits.setflags(write=False)
        self.symbols = digits
        if null:
            table = np.append(values.astype(np.float64), np.nan)
        else:
            table = values
        db = table[digits]
        db.setflags(write=False)
        self.databases = db
        self._hamming = None

    @property
    def n(self) -> int:
        """Number of databases N."""
        return self.symbols.shape[0]

    @property
    def n_symbols(self) -> int:
        """Number of symbols S: the values, plus one for ∅ when ``null``."""
        return self.values.shape[0] + int(self.null)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"<Universe {self._spec()}: {self.n} databases of {self.u} individuals>"

    def _spec(self) -> str:
        v = self.values
        if v.dtype.kind in "iu" and np.array_equal(v, np.arange(v.shape[0])):
            vs = str(v.shape[0])
        else:
            vs = "[" + ",".join(f"{x:g}" for x in v.tolist()) + "]"
        return f"{self.u},{vs}" + ("+null" if self.null else "")

    @property
    def labels(self) -> list[tuple]:
        """Each database as a tuple of values (``None`` for ∅)."""
        vals = self.values.tolist() + ([None] if self.null else [])
        return [tuple(vals[s] for s in row) for row in self.symbols.tolist()]

    # -- adjacency and metrics -----------------------------------------------------------------
    def _weights(self) -> np.ndarray:
        # Index of database = Σ_c symbol_c · S^(u-1-c) (C order), valid also with the null value since
        # only the last database (all-null) is dropped.
        return self.n_symbols ** np.arange(self.u - 1, -1, -1, dtype=np.int64)

    def _pairs_by_symbol(self, symbol_pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Database pairs (i < j) that differ in exactly one individual, whose symbols there form one of
        ``symbol_pairs`` (rows (a, b) with a < b). Index arithmetic; no pair loop."""
        w = self._weights()
        idx = np.arange(self.n, dtype=np.int64)
        I, J = [], []
        for c in range(self.u):
            col = self.symbols[:, c]
            for a, b in symbol_pairs:
                src = idx[col == a]
                I.append(src)
                J.append(src + (b - a) * w[c])
        if not I:
            return np.zeros(0, np.intp), np.zeros(0, np.intp)
        i = np.concatenate(I).astype(np.intp)
        j = np.concatenate(J).astype(np.intp)
        keep = j < self.n  # pairs with the (excluded) all-null database
        return i[keep], j[keep]

    def adjacent_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The Hamming adjacency x ~ x' (differ in exactly one individual) as index arrays (i < j).

        Computed by index arithmetic, without the N×N distance matrix: N·u·(S−1)/2 pairs.
        """
        s = self.n_symbols
        a, b = np.triu_indices(s, k=1)
        return self._pairs_by_symbol(np.stack([a, b], axis=1))

    def hamming(self) -> MetricSpace:
        """The Hamming metric d_h on the databases (seed 000 §3.2), via :func:`dprivacy.spaces.hamming`.

        Labels are the databases as tuples of values (``None`` for ∅); the essential pairs are the
        adjacent pairs. With a null value the all-null database is removed; the Hamming distance of the
        others is unchanged (of the ≥ 2 one-step moves toward x', at most one reaches the all-null
        database, so distances in the remaining graph are still the number of differing individuals).
        """
        if self._hamming is None:
            s = self.n_symbols
            h = spaces.hamming(self.u, s)
            d = h.distances[: self.n, : self.n] if self.null else h.distances
            self._hamming = MetricSpace(
                d, labels=self.labels, name=f"hamming:{self._spec()}", essential_pairs=self.adjacent_pairs(), validate=False
            )
        return self._hamming

    def _value_metric(self) -> np.ndarray:
        """d_V on the symbols: |a − b| between values, and d_V(∅, a) = d_V(V) (seed 002 §5)."""
        v = self.values.astype(np.float64)
        d = np.abs(v[:, None] - v[None, :])
        if not self.null:
            return d
        diam = float(v.max() - v.min())
        if diam <= 0:
            raise ValueError(
                f"a null value needs at least two distinct values (d_V(∅, v) = d_V(V) must be > 0); got values {v.tolist()}"
            )
        s = self.n_symbols
        out = np.full((s, s), diam)
        out[:-1, :-1] = d
        out[-1, -1] = 0.0
        return out

    def _diameter(self) -> float:
        v = self.values.astype(np.float64)
        return float(v.max() - v.min())

    def manhattan(self, *, normalized: bool = False) -> MetricSpace:
        """The Manhattan metric d_1(x, x') = Σ_i d_V(x[i], x'[i]) (seed 002 §5.1–5.2).

        With ``normalized`` it is d̃_1 = d_1 / d_V(V), with d_V(V) the diameter of the values (seed 002
        §5.1). Essential pairs are known structurally: databases differing in one individual whose two
        values are an essential pair of d_V (adjacent values on the line, or ∅ and any value); a pair
        differing in several individuals is implied by changing one individual at a time.
        """
        dv = self._value_metric()
        scale = 1.0
        if normalized:
            scale = self._diameter()
            if scale <= 0:
                raise ValueError(f"the normalized Manhattan metric needs values of positive diameter, got {self.values.tolist()}")
        d = np.zeros((self.n, self.n))
        for c in range(self.u):
            col = self.symbols[:, c]
            d += dv[col[:, None], col[None, :]]
        if scale != 1.0:
            d /= scale
        ea, eb = MetricSpace(dv, validate=False).essential_pairs()
        pairs = self._pairs_by_symbol(np.stack([ea, eb], axis=1))
        name = ("normalized-manhattan:" if normalized else "manhattan:") + self._spec()
        return MetricSpace(d, labels=self.labels, name=name, essential_pairs=pairs, validate=False)

    def chebyshev(self) -> MetricSpace:
        """The maximum metric d_∞(x, x') = max_i d_V(x[i], x'[i]) (seed 002 §6.1, smart meters).

        No essential pairs are given (with uneven values or a null value they have no simple form), so
        checks on this space examine every pair.
        """
        dv = self._value_metric()
        d = np.zeros((self.n, self.n))
        for c in range(self.u):
            col = self.symbols[:, c]
            np.maximum(d, dv[col[:, None], col[None, :]], out=d)
        return MetricSpace(d, labels=self.labels, name=f"chebyshev:{self._spec()}", validate=False)


def universe(u: int, v, *, null: bool = False) -> Universe:
    """Enumerate all databases V^u (seed 000 §3.2; seed 001 §3).

    Parameters
    ----------
    u : int
        Number of individuals (≥ 1).
    v : int or sequence of numbers
        An int v means V = {0, …, v−1}; a sequence gives the values themselves (distinct, finite,
        kept in the given order, which fixes the enumeration order).
    null : bool
        Add the null value ∅ (absent individual, seed 002 §2), stored as NaN; the all-null database is
        excluded (seed 002 §5).

    Raises
    ------
    ValueError
        If fewer than two symbols are available, or the universe has more than :data:`MAX_DATABASES`
        databases (the message gives the number).
    """
    u = check_positive_int(u, name="u")
    if isinstance(v, bool):
        raise TypeError(f"v must be an int (number of values) or a sequence of values, got {v!r}")
    if isinstance(v, Integral):
        v = check_positive_int(v, name="v")
        values = np.arange(v, dtype=np.int64)
    else:
        if isinstance(v, (str, bytes)):
            raise TypeError(f"v must be an int (number of values) or a sequence of values, got {v!r}")
        try:
            values = np.asarray(list(v))
        except TypeError:
            raise TypeError(f"v must be an int (number of values) or a sequence of values, got {v!r}") from None
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"values must be a non-empty 1-D sequence of numbers, got {v!r}")
        if values.dtype.kind not in "iuf" or values.dtype == bool:
            raise TypeError(f"values must be numbers, got {values.tolist()!r} (dtype {values.dtype})")
        if values.dtype.kind == "f":
            if not np.isfinite(values).all():
                raise ValueError(f"values must be finite (∅ is requested with null=True), got {values.tolist()}")
        else:
            values = values.astype(np.int64)
        if np.unique(values).size != values.size:
            raise ValueError(f"values must be distinct, got {values.tolist()}")
    s = values.size + int(bool(null))
    if s < 2:
        raise ValueError(f"a universe needs at least 2 symbols (values plus ∅), got {s}: values {values.tolist()}, null={null}")
    n = s**u - int(bool(null))
    if n > MAX_DATABASES:
        raise ValueError(
            f"universe of u={u} individuals with {s} symbols has {s}^{u} = {s**u:,} databases, over the "
            f"limit of {MAX_DATABASES:,} that can be enumerated; use the closed forms count_space, "
            f"sum_space or kcount_space for the answer spaces"
        )
    values.setflags(write=False)
    return Universe(u, values, bool(null))


# ---------------------------------------------------------------------------------------------
# Queries: vectorized on the (N, u) array of databases
# ---------------------------------------------------------------------------------------------

Predicate = Callable[[np.ndarray], np.ndarray] | Sequence | set | frozenset | None


def _as_databases(databases) -> np.ndarray:
    x = databases.databases if isinstance(databases, Universe) else databases
    try:
        x = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"databases must be an (N, u) array of numbers: {exc}") from None
    if x.ndim != 2:
        raise ValueError(f"databases must be a 2-D array (one row per database), got shape {x.shape}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"databases must be non-empty, got shape {x.shape}")
    if x.dtype.kind not in "iuf" or x.dtype == bool:
        raise TypeError(f"databases must hold numbers (NaN for ∅), got dtype {x.dtype}")
    if x.dtype.kind == "f" and np.isinf(x).any():
        i, j = np.argwhere(np.isinf(x))[0]
        raise ValueError(f"databases must be finite (NaN marks ∅); entry [{i}, {j}] is {x[i, j]}")
    return x


def _present(x: np.ndarray) -> np.ndarray:
    return ~np.isnan(x) if x.dtype.kind == "f" else np.ones(x.shape, dtype=bool)


def _nonempty(x: np.ndarray, present: np.ndarray, what: str) -> np.ndarray:
    m = present.sum(axis=1)
    if (m == 0).any():
        i = int(np.flatnonzero(m == 0)[0])
        raise ValueError(f"{what} is undefined on a database with no individual present (database {i} is all ∅)")
    return m


def _holds(x: np.ndarray, predicate, present: np.ndarray) -> np.ndarray:
    """Boolean (N, u) array: predicate of each present individual's value (∅ never satisfies it)."""
    if predicate is None:
        out = np.zeros(x.shape, dtype=bool)
        out[present] = x[present] >= 1
        return out
    if callable(predicate):
        out = np.zeros(x.shape, dtype=bool)
        res = np.asarray(predicate(x[present]))
        if res.shape != (int(present.sum()),) or res.dtype != bool:
            raise ValueError(
                "a callable predicate must map a 1-D array of values to a boolean array of the same length "
                f"(it is called once, vectorized); got dtype {res.dtype} and shape {res.shape}"
            )
        out[present] = res
        return out
    if isinstance(predicate, (str, bytes)) or not hasattr(predicate, "__iter__"):
        raise TypeError(f"predicate must be None, a collection of values or a vectorized callable, got {predicate!r}")
    vals = np.asarray(list(predicate))
    if vals.size and (vals.dtype.kind not in "iuf" or vals.dtype == bool):
        raise TypeError(f"a predicate given as a collection must hold numbers, got {list(predicate)!r}")
    return np.isin(x, vals) & present


def count(databases, predicate: Predicate = None) -> np.ndarray:
    """Counting query: the number of individuals whose value satisfies ``predicate``.

    Parameters
    ----------
    databases : (N, u) array or Universe
    predicate : None, collection of values, or callable
        None (default): value ≥ 1 (with values {0, 1}, "has the property"). A collection: value in it.
        A callable: called once on the 1-D array of all present values, returning booleans.
        Absent individuals (NaN) never count.

    Returns
    -------
    ndarray of int, shape (N,)
        Answers in {0, …, u}; the induced graph is the line (seed 000 Fig 1; :func:`count_space`).
    """
    x = _as_databases(databases)
    return _holds(x, predicate, _present(x)).sum(axis=1)


def total(databases) -> np.ndarray:
    """Sum query: Σ_i x[i] over the present individuals (∅ contributes nothing). Seed 000 §7.1,
    seed 002 §5. Returns an (N,) array (int for integer databases)."""
    x = _as_databases(databases)
    if x.dtype.kind == "f":
        return np.where(_present(x), x, 0.0).sum(axis=1)
    return x.sum(axis=1)


_ROUNDINGS = ("nearest", "floor", "ceil")


def average(databases, *, step: float | None = None, rounding: str = "nearest") -> np.ndarray:
    """Average query: a = (Σ_i x[i]) / m over the m present individuals (seed 002 §5, "avg").

    Parameters
    ----------
    databases : (N, u) array or Universe
    step : float, optional
        Report the average on the grid q·ℤ with q = ``step`` (e.g. the spacing of the values
        q[0..k], so that answers lie in the input set q[0..k] of the truncated geometric mechanism,
        seed 002 Thm 10). Default: the exact mean.
    rounding : {"nearest", "floor", "ceil"}
        How the mean is put on the grid: nearest with ties rounded up (q·⌊a/q + 1/2⌋), or q·⌊a/q⌋,
        or q·⌈a/q⌉. a/q is first rounded to 9 decimals so that float error in the mean cannot move
        an exact tie or grid point.

    Returns
    -------
    ndarray of float, shape (N,)
        Undefined (ValueError) on a database where nobody is present. Equal rationals give equal
        floats (IEEE division is correctly rounded), so answers can serve as labels.

    Notes
    -----
    Which reading of "avg" is meant matters for seed 002 Thm 12–13: the exact mean on q[0..k]_∅ is
    *not* uniformly 1-sensitive wrt d_1, d_ℝ or d_∞, d_ℝ (e.g. u = 2, V = {0,1,2}_∅: no 1-expansive
    step joins the answers 0 and 1/2), while the mean rounded onto q[0..k] is (checked by the tests).
    """
    x = _as_databases(databases)
    present = _present(x)
    m = _nonempty(x, present, "the average")
    s = np.where(present, x, 0).sum(axis=1)
    a = s / m
    if step is None:
        return a
    q = check_epsilon(step, name="step")
    if rounding not in _ROUNDINGS:
        raise ValueError(f"rounding must be one of {', '.join(_ROUNDINGS)}; got {rounding!r}")
    t = np.round(a / q, 9)
    if rounding == "nearest":
        k = np.floor(t + 0.5)
    elif rounding == "floor":
        k = np.floor(t)
    else:
        k = np.ceil(t)
    return k * q


def _rank_table(p, u: int) -> np.ndarray:
    """k(m) = max(1, ⌈p·m/100⌉) for m = 0..u, computed exactly with rationals.

    A float p is read as the nearest fraction with denominator ≤ 10^6 (so ``100/3`` is one third of
    100, not the binary float just above it)."""
    if isinstance(p, bool) or not isinstance(p, Real):
        raise TypeError(f"p must be a number in [0, 100], got {p!r}")
    if not (0 <= float(p) <= 100):
        raise ValueError(f"p must lie in [0, 100], got {p}")
    q = Fraction(p) if isinstance(p, Integral) else Fraction(float(p)).limit_denominator(10**6)
    return np.array([max(1, math.ceil(q * m / 100)) for m in range(u + 1)], dtype=np.intp)


def percentile(databases, p: float) -> np.ndarray:
    """p-percentile query (seed 002 §5, "p-perc"), by the nearest-rank rule.

    With the m present values sorted, x_(1) ≤ … ≤ x_(m), the answer is the order statistic x_(k) with

        k = max(1, ⌈p·m / 100⌉),   p ∈ [0, 100],

    (exact rational arithmetic; a float p is read as the nearest fraction with denominator ≤ 10^6,
    so p = 100/3 means one third). So p = 0 gives the minimum, p = 100 the maximum, p = 50 the lower
    median x_(⌈m/2⌉). The answer is always one of the database's values. Undefined (ValueError) on a
    database where nobody is present.
    """
    x = _as_databases(databases)
    present = _present(x)
    m = _nonempty(x, present, "the percentile")
    k = _rank_table(p, x.shape[1])[m]
    srt = np.sort(x, axis=1)  # NaN (∅) sorts last, after the m present values
    return np.take_along_axis(srt, (k - 1)[:, None], axis=1)[:, 0]


def kcount(databases, predicates: Sequence[Predicate]) -> np.ndarray:
    """k counting queries at once (seed 000 §7.1, "2-count"): column j counts the individuals whose
    value satisfies ``predicates[j]`` (each as in :func:`count`).

    Returns an int array of shape (N, k); answers are labelled by tuples. The induced graph is the
    "king's graph" of :func:`kcount_space` exactly when the predicates are *independent* on the
    values: every one of the 2^k truth patterns is realized by some value (see
    :func:`independent_predicates`).
    """
    x = _as_databases(databases)
    if callable(predicates) or isinstance(predicates, (str, bytes)) or not hasattr(predicates, "__len__"):
        raise TypeError(f"predicates must be a sequence of k predicates, got {predicates!r}")
    if len(predicates) == 0:
        raise ValueError("predicates must hold at least one predicate")
    present = _present(x)
    return np.stack([_holds(x, p, present).sum(axis=1) for p in predicates], axis=1)


def independent_predicates(k: int) -> list[frozenset]:
    """k predicates on the values {0, …, 2^k − 1}: predicate j holds for value x iff bit j of x is 1.

    Every truth pattern of the k predicates is realized by exactly one value, which is what makes the
    induced graph of :func:`kcount` the king's graph of :func:`kcount_space` (use with
    ``universe(u, 2**k)``).
    """
    k = check_positive_int(k, name="k")
    return [frozenset(x for x in range(2**k) if (x >> j) & 1) for j in range(k)]


def most_frequent(databases, candidates: Sequence | None = None) -> np.ndarray:
    """Most frequent value ("argmax city", seed 001 Example 30).

    The answer is the candidate held by the most individuals. Ties — including the case where no
    individual holds any candidate — go to the candidate listed first in ``candidates`` (default: the
    distinct present values in ascending order, so the smallest value wins). Values that are not
    candidates (e.g. votes for another candidate) and ∅ are ignored.

    Returns an (N,) array of candidates.
    """
    x = _as_databases(databases)
    present = _present(x)
    if candidates is None:
        cand = np.unique(x[present])
    else:
        if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
            raise TypeError(f"candidates must be a sequence of values, got {candidates!r}")
        cand = np.asarray(list(candidates))
        if cand.ndim != 1 or cand.size == 0:
            raise ValueError(f"candidates must be a non-empty 1-D sequence of values, got {candidates!r}")
        if cand.dtype.kind not in "iuf" or cand.dtype == bool:
            raise TypeError(f"candidates must be numbers, got {cand.tolist()!r}")
        if np.unique(cand).size != cand.size:
            raise ValueError(f"candidates must be distinct, got {cand.tolist()}")
    if cand.size == 0:
        raise ValueError("no candidate: every individual is absent in every database")
    counts = (x[:, :, None] == cand[None, None, :]).sum(axis=1)  # (N, C)
    return cand[np.argmax(counts, axis=1)]  # argmax returns the first maximum: the tie rule


#: Query names → functions (the CLI's vocabulary; percentile and kcount take extra arguments).
QUERIES: dict[str, Callable] = {
    "count": count,
    "sum": total,
    "avg": average,
    "percentile": percentile,
    "kcount": kcount,
    "most_frequent": most_frequent,
}


# ---------------------------------------------------------------------------------------------
# Answers as points of a space
# ---------------------------------------------------------------------------------------------


def _as_answers(answers) -> np.ndarray:
    a = np.asarray(answers)
    if a.ndim not in (1, 2) or a.shape[0] == 0:
        raise ValueError(f"answers must be a non-empty array of shape (N,) or (N, k), got shape {a.shape}")
    if a.dtype.kind == "f" and np.isnan(a).any():
        i = int(np.flatnonzero(np.isnan(a).reshape(a.shape[0], -1).any(axis=1))[0])
        raise ValueError(f"answers must not be NaN (the query is undefined on database {i})")
    if a.dtype == object:
        raise TypeError("answers must be a numeric array of shape (N,) or (N, k), not an object array")
    return a


def answer_index(answers, labels: Sequence | None = None) -> tuple[np.ndarray, list]:
    """Map each database's answer to the index of a point of the answer space.

    Parameters
    ----------
    answers : array, shape (N,) or (N, k)
        A query's answers (rows of a 2-D array are answers, labelled by tuples).
    labels : sequence, optional
        The answer space's labels. Default: the distinct answers in ``np.unique`` order (ascending
        numbers; tuples in lexicographic order) — the order used by :func:`induced_space`.

    Returns
    -------
    (index, labels) : int array of shape (N,), list
        ``labels[index[i]]`` is the answer of database i.
    """
    a = _as_answers(answers)
    uniq, inv = np.unique(a, axis=0 if a.ndim == 2 else None, return_inverse=True)
    inv = np.asarray(inv).ravel().astype(np.intp)
    found = [tuple(r) for r in uniq.tolist()] if a.ndim == 2 else uniq.tolist()
    if labels is None:
        return inv, found
    labels = list(labels)
    pos = {lab: i for i, lab in enumerate(labels)}
    try:
        where = np.array([pos[y] for y in found], dtype=np.intp)  # one lookup per distinct answer
    except KeyError as exc:
        raise ValueError(f"answer {exc.args[0]!r} is not a point (label) of the answer space") from None
    except TypeError:
        raise TypeError("answer-space labels must be hashable") from None
    return where[inv], labels


@dataclass(frozen=True)
class InducedGraph:
    """The induced graph ~_f of a query on its answers (seed 000 §3.2; seed 001 Def 25).

    Attributes
    ----------
    labels : list
        The answers (points), in ``np.unique`` order.
    edges : (ndarray, ndarray)
        Pairs (i < j) of answer indices with y_i ~_f y_j, sorted, without repetition.
    answer_index : ndarray of int, shape (N,)
        For each database, the index of its answer in ``labels``.
    """

    labels: list
    edges: tuple[np.ndarray, np.ndarray]
    answer_index: np.ndarray = field(repr=False)

    @property
    def n(self) -> int:
        return len(self.labels)

    def adjacency(self) -> sparse.csr_array:
        """Symmetric 0/1 adjacency matrix of ~_f."""
        i, j = self.edges
        n = self.n
        a = sparse.coo_array((np.ones(2 * i.size), (np.r_[i, j], np.r_[j, i])), shape=(n, n))
        return a.tocsr()

    def to_networkx(self):
        """The graph as a ``networkx.Graph`` with the answers as nodes."""
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(self.labels)
        lab = self.labels
        g.add_edges_from((lab[a], lab[b]) for a, b in zip(self.edges[0].tolist(), self.edges[1].tolist()))
        return g


def _database_pairs(adjacency, n: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(adjacency, Universe):
        pairs = adjacency.adjacent_pairs()
        size = adjacency.n
    elif isinstance(adjacency, MetricSpace):
        pairs = adjacency.essential_pairs()
        size = adjacency.n
    elif sparse.issparse(adjacency):
        if adjacency.shape[0] != adjacency.shape[1]:
            raise ValueError(f"an adjacency matrix must be square, got shape {adjacency.shape}")
        coo = sparse.triu(sparse.coo_array(adjacency) + sparse.coo_array(adjacency).T, k=1).tocoo()
        pairs = (coo.row.astype(np.intp), coo.col.astype(np.intp))
        size = adjacency.shape[0]
    elif isinstance(adjacency, tuple) and len(adjacency) == 2:
        i, j = (np.asarray(p) for p in adjacency)
        if i.shape != j.shape or i.ndim != 1 or (i.size and not np.issubdtype(i.dtype, np.integer)):
            raise ValueError("adjacent pairs must be two 1-D integer index arrays of equal length")
        if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
            raise ValueError(f"adjacent pair indices must lie in 0..{n - 1} (one per database)")
        return i.astype(np.intp), j.astype(np.intp)
    else:
        raise TypeError(
            "databases adjacency must be a Universe, a MetricSpace (its essential pairs = edges of a graph "
            f"metric), a sparse adjacency matrix or a pair of index arrays; got {type(adjacency).__name__}"
        )
    if size != n:
        raise ValueError(f"there are {n} answers but the adjacency is on {size} databases")
    return pairs


def induced_graph(answers, adjacency) -> InducedGraph:
    """The induced graph y ~_f y' iff x ~ x' for some x ∈ f⁻¹(y), x' ∈ f⁻¹(y') (seed 000 §3.2).

    Parameters
    ----------
    answers : array, shape (N,) or (N, k)
        The query's answer on each database (e.g. ``count(U)``).
    adjacency : Universe, MetricSpace, sparse matrix or (I, J)
        The adjacency of databases: a :class:`Universe` (Hamming adjacency, by index arithmetic), a
        metric space (its essential pairs, which for a graph metric such as d_h are the edges), a
        sparse adjacency matrix, or two index arrays of adjacent database pairs.

    Vectorized: the adjacent database pairs are mapped to answer indices through ``np.unique``'s
    inverse; self-pairs (x ~ x' with f(x) = f(x')) and repetitions are dropped.
    """
    inv, labels = answer_index(answers)
    I, J = _database_pairs(adjacency, inv.size)
    a, b = inv[I], inv[J]
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    m = len(labels)
    key = np.unique(lo.astype(np.int64) * m + hi)
    return InducedGraph(labels, ((key // m).astype(np.intp), (key % m).astype(np.intp)), inv)


def induced_space(answers, adjacency, *, name: str | None = None) -> MetricSpace:
    """The answers under the graph metric d_{~f} of the induced graph (seed 000 §3.2, Cor 1).

    Labels are the distinct answers in ``np.unique`` order (:func:`answer_index` gives each database's
    answer index in this order); the essential pairs are the edges of ~_f. Answers in different
    components are at distance ∞ (an extended metric), which cannot happen with the Hamming adjacency.
    """
    g = induced_graph(answers, adjacency)
    d = csgraph.shortest_path(g.adjacency(), unweighted=True, directed=False)
    return MetricSpace(d, labels=g.labels, name=name or f"induced graph on {g.n} answers", essential_pairs=g.edges, validate=False)


def answer_line(answers, *, name: str | None = None) -> MetricSpace:
    """Numeric answers under the usual distance d_ℝ(y, y') = |y − y'| (seed 002 §2).

    Labels are the distinct answers in ascending order; essential pairs are consecutive answers. This
    is the answer metric of seed 002 Thm 10–13 (not a graph metric unless answers are consecutive
    integers).
    """
    a = _as_answers(answers)
    if a.ndim != 1 or a.dtype.kind not in "iuf" or a.dtype == bool:
        raise ValueError(f"answer_line needs 1-D numeric answers, got shape {a.shape} and dtype {a.dtype}")
    y = np.unique(a)
    _check_dense_fits(y.size, "answer_line")
    yf = y.astype(np.float64)
    d = np.abs(yf[:, None] - yf[None, :])
    i = np.arange(y.size - 1)
    return MetricSpace(d, labels=y.tolist(), name=name or f"line of {y.size} answers", coordinates=yf, essential_pairs=(i, i + 1), validate=False)


# ---------------------------------------------------------------------------------------------
# Closed forms (seed 000 §7.1): no enumeration
# ---------------------------------------------------------------------------------------------


def count_space(u: int) -> MetricSpace:
    """Answers {0, …, u} of a counting query on u individuals: the line, adjacent iff |i − j| = 1
    (seed 000 §3.2 Fig 1; seed 002 Thm 8). Labels 0..u; essential pairs = the u edges."""
    u = check_positive_int(u, name="u")
    return spaces.line(u + 1, name=f"count:{u}")


def sum_space(u: int, v: int) -> MetricSpace:
    """Answers of a sum query on u individuals with values 0..v (seed 000 §7.1).

    The answers are {0, …, u·v}; changing one individual's value changes the sum by at most v, and by
    any amount up to v from any database that allows it, so i ~_f j iff 0 < |i − j| ≤ v and

        d_{~f}(i, j) = ⌈|i − j| / v⌉.

    Labels 0..u·v; essential pairs = the edges. ``sum:150,5`` has 751 answers.

    Notes
    -----
    This follows seed 000 §7.1 ("each having an integer value between 0 and v"): v + 1 values. If the
    values are read as 1..v instead, the answers are {u, …, u·v} and i ~_f j iff |i − j| ≤ v − 1:
    the same graph as ``sum_space(u, v - 1)`` with labels shifted by u. In :func:`universe` terms,
    ``sum_space(u, v)`` is the induced space of ``total(universe(u, v + 1))``.
    """
    u = check_positive_int(u, name="u")
    v = check_positive_int(v, name="v")
    n = u * v + 1
    _check_dense_fits(n, f"sum:{u},{v}")
    x = np.arange(n, dtype=np.int64)
    diff = np.abs(x[:, None] - x[None, :])
    d = np.ceil(diff / v)
    i, j = np.nonzero(np.triu((diff >= 1) & (diff <= v)))
    return MetricSpace(
        d, labels=x.tolist(), name=f"sum:{u},{v}", coordinates=x.astype(np.float64), essential_pairs=(i, j), validate=False
    )


def kcount_space(u: int, k: int) -> MetricSpace:
    """Answers of k counting queries on u individuals (seed 000 §7.1, "2-count" for k = 2).

    The answers are {0, …, u}^k, labelled by tuples in lexicographic order; changing one individual
    changes each count by at most 1, so answers are adjacent iff every coordinate differs by at most 1
    (the king's graph), and d_{~f}(y, y') = max_j |y_j − y'_j| (Chebyshev). ``kcount:30,2`` has 961
    answers. This is the induced graph only for independent predicates (see :func:`kcount`).
    """
    u = check_positive_int(u, name="u")
    k = check_positive_int(k, name="k")
    n = (u + 1) ** k
    _check_dense_fits(n, f"kcount:{u},{k}")
    coords = np.stack(np.unravel_index(np.arange(n), (u + 1,) * k), axis=1)  # lexicographic
    d = np.zeros((n, n))
    for c in range(k):
        np.maximum(d, np.abs(coords[:, c][:, None] - coords[:, c][None, :]), out=d)
    i, j = np.nonzero(np.triu(d == 1.0))
    labels = [tuple(r) for r in coords.tolist()]
    return MetricSpace(
        d, labels=labels, name=f"kcount:{u},{k}", coordinates=coords.astype(np.float64), essential_pairs=(i, j), validate=False
    )


# ---------------------------------------------------------------------------------------------
# Sensitivity and uniform sensitivity (seed 002 Def 4, Def 5, Thm 6; seed 000 Def 2, Thm 1)
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
    x' (seed 002 Def 4).

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
    """Outcome of :func:`is_uniformly_sensitive` (seed 002 Def 5; seed 000 Def 2).

    Attributes
    ----------
    holds : bool
        Whether f is uniformly Δ-sensitive.
    delta : float
        The Δ examined (the sensitivity unless one was given).
    sensitivity : float
        The sensitivity of f (seed 002 Def 4).
    witness : tuple of two ints or None
        When ``holds`` is False: a pair of answer indices (points of space_Y) with no tight
        Δ-expansive chain between them, or, when f is not even Δ-sensitive, a pair of database
        indices (points of space_X) with d_Y(f x, f x') > Δ·d_X(x, x'). ``witness_kind`` says which.
    witness_kind : str or None
        ``"answers"`` or ``"databases"``.
    reason : str
        Why it fails ("" when it holds).
    expansive_pairs : (ndarray, ndarray)
        Answer pairs (i < j) found Δ-expansive on the examined database pairs.
    """

    holds: bool
    delta: float
    sensitivity: float
    witness: tuple[int, int] | None
    witness_kind: str | None
    reason: str
    expansive_pairs: tuple[np.ndarray, np.ndarray] = field(repr=False)

    def __bool__(self) -> bool:
        return self.holds


def is_uniformly_sensitive(answers, space_X: MetricSpace, space_Y: MetricSpace, *, delta: float | None = None, rtol: float = RTOL) -> UniformSensitivity:
    """Whether f is uniformly Δ-sensitive wrt d_X, d_Y (seed 002 Def 5 = seed 000 Def 2).

    f is uniformly Δ-sensitive iff it is Δ-sensitive and between every two answers y, y' ∈ Y there is a
    tight chain y = y_1, …, y_n = y' (Σ d_Y(y_i, y_{i+1}) = d_Y(y, y')) whose steps are Δ-expansive:
    d_Y(y_i, y_{i+1}) = Δ·d_X(x, x') for some x ∈ f⁻¹(y_i), x' ∈ f⁻¹(y_{i+1}). Then H is d_Y-private
    iff H∘f is Δ·d_X-private (seed 002 Thm 6; seed 000 Thm 1).

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
    """The oblivious mechanism H∘f on databases: row x is row f(x) of H (seed 000 §3.1; seed 002 §2).

    Parameters
    ----------
    channel : Channel or array, shape (m, z)
        The noise channel H on the answers.
    answers_index : int array, shape (N,)
        For each database, the row of H of its answer (e.g. from :func:`answer_index` or
        :attr:`InducedGraph.answer_index`).
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
