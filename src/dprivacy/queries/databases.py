"""Databases V^u and the queries on them, vectorized on the (N, u) array of databases (Alvim et al. 2015 §3;
Chatzikokolakis et al. 2013 §5): count, sum, average, percentile, k-count, most frequent."""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral, Real
from typing import Callable, Sequence

import numpy as np

from .. import spaces
from .._validate import check_epsilon, check_positive_int
from ..spaces import MetricSpace

#: Largest number of databases :func:`universe` enumerates (v^u above this is refused).
MAX_DATABASES = 2**20


# ---------------------------------------------------------------------------------------------
# The database universe V^u
# ---------------------------------------------------------------------------------------------


class Universe:
    """All databases V^u of u individuals, enumerated in lexicographic order.

    Built by :func:`universe`. Database ``i`` is the tuple of *symbols* ``symbols[i]`` (indices into
    ``values``, and ``len(values)`` for the null value ∅ when ``null`` is True), read as the base-S
    digits of i with the first individual most significant (S = number of symbols). This is the
    order of :func:`dprivacy.spaces.hamming`, so row i of the Hamming metric is database i. With a null
    value the all-null database (the last one) is excluded, as in Chatzikokolakis et al. 2013 §5 ("we exclude the empty
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
        """The Hamming metric d_h on the databases (ElSalamouny et al. 2014 §3.2), via :func:`dprivacy.spaces.hamming`.

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
        """d_V on the symbols: |a − b| between values, and d_V(∅, a) = d_V(V) (Chatzikokolakis et al. 2013 §5)."""
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
        """The Manhattan metric d_1(x, x') = Σ_i d_V(x[i], x'[i]) (Chatzikokolakis et al. 2013 §5.1–5.2).

        With ``normalized`` it is d̃_1 = d_1 / d_V(V), with d_V(V) the diameter of the values (Chatzikokolakis et al. 2013
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
        """The maximum metric d_∞(x, x') = max_i d_V(x[i], x'[i]) (Chatzikokolakis et al. 2013 §6.1, smart meters).

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
    """Enumerate all databases V^u (ElSalamouny et al. 2014 §3.2; Alvim et al. 2015 §3).

    Parameters
    ----------
    u : int
        Number of individuals (≥ 1).
    v : int or sequence of numbers
        An int v means V = {0, …, v−1}; a sequence gives the values themselves (distinct, finite,
        kept in the given order, which fixes the enumeration order).
    null : bool
        Add the null value ∅ (absent individual, Chatzikokolakis et al. 2013 §2), stored as NaN; the all-null database is
        excluded (Chatzikokolakis et al. 2013 §5).

    Raises
    ------
    ValueError
        If fewer than two symbols are available, or the universe has more than :data:`MAX_DATABASES`
        databases (the message gives the number).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §3.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.2.
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
        Answers in {0, …, u}; the induced graph is the line (ElSalamouny et al. 2014 Fig 1; :func:`count_space`).
    """
    x = _as_databases(databases)
    return _holds(x, predicate, _present(x)).sum(axis=1)


def total(databases) -> np.ndarray:
    """Sum query: Σ_i x[i] over the present individuals (∅ contributes nothing). ElSalamouny et al. 2014 §7.1,
    Chatzikokolakis et al. 2013 §5. Returns an (N,) array (int for integer databases).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.1.
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §5, Prop 5.
    """
    x = _as_databases(databases)
    if x.dtype.kind == "f":
        return np.where(_present(x), x, 0.0).sum(axis=1)
    return x.sum(axis=1)


_ROUNDINGS = ("nearest", "floor", "ceil")


def average(databases, *, step: float | None = None, rounding: str = "nearest") -> np.ndarray:
    """Average query: a = (Σ_i x[i]) / m over the m present individuals (Chatzikokolakis et al. 2013 §5, "avg").

    Parameters
    ----------
    databases : (N, u) array or Universe
    step : float, optional
        Report the average on the grid q·ℤ with q = ``step`` (e.g. the spacing of the values
        q[0..k], so that answers lie in the input set q[0..k] of the truncated geometric mechanism,
        Chatzikokolakis et al. 2013 Thm 10). Default: the exact mean.
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
    Which reading of "avg" is meant matters for Chatzikokolakis et al. 2013 Thm 12–13: the exact mean on q[0..k]_∅ is
    *not* uniformly 1-sensitive wrt d_1, d_ℝ or d_∞, d_ℝ (e.g. u = 2, V = {0,1,2}_∅: no 1-expansive
    step joins the answers 0 and 1/2), while the mean rounded onto q[0..k] is (checked by the tests).

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §5, Prop 5, Thm 11–13.
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
    """p-percentile query (Chatzikokolakis et al. 2013 §5, "p-perc"), by the nearest-rank rule.

    With the m present values sorted, x_(1) ≤ … ≤ x_(m), the answer is the order statistic x_(k) with

        k = max(1, ⌈p·m / 100⌉),   p ∈ [0, 100],

    (exact rational arithmetic; a float p is read as the nearest fraction with denominator ≤ 10^6,
    so p = 100/3 means one third). So p = 0 gives the minimum, p = 100 the maximum, p = 50 the lower
    median x_(⌈m/2⌉). The answer is always one of the database's values. Undefined (ValueError) on a
    database where nobody is present.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §5, Prop 5, Thm 11–13.
    """
    x = _as_databases(databases)
    present = _present(x)
    m = _nonempty(x, present, "the percentile")
    k = _rank_table(p, x.shape[1])[m]
    srt = np.sort(x, axis=1)  # NaN (∅) sorts last, after the m present values
    return np.take_along_axis(srt, (k - 1)[:, None], axis=1)[:, 0]


def kcount(databases, predicates: Sequence[Predicate]) -> np.ndarray:
    """k counting queries at once (ElSalamouny et al. 2014 §7.1, "2-count"): column j counts the individuals whose
    value satisfies ``predicates[j]`` (each as in :func:`count`).

    Returns an int array of shape (N, k); answers are labelled by tuples. The induced graph is the
    "king's graph" of :func:`kcount_space` exactly when the predicates are *independent* on the
    values: every one of the 2^k truth patterns is realized by some value (see
    :func:`independent_predicates`).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.1.
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
    """Most frequent value ("argmax city", Alvim et al. 2015 Example 30).

    The answer is the candidate held by the most individuals. Ties — including the case where no
    individual holds any candidate — go to the candidate listed first in ``candidates`` (default: the
    distinct present values in ascending order, so the smallest value wins). Values that are not
    candidates (e.g. votes for another candidate) and ∅ are ignored.

    Returns an (N,) array of candidates.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Example 30.
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
