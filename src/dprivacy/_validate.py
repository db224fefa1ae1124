"""Input validation at the library's boundary.

Every public function validates its arguments here, once, and then works on plain float64 arrays.
Messages name the bad value and say what was expected (DESIGN.md, Conventions).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

#: Absolute tolerance used when checking that probabilities sum to one.
SUM_ATOL = 1e-9


def _short(a: np.ndarray, limit: int = 6) -> str:
    flat = np.asarray(a).ravel()
    body = ", ".join(f"{x:.6g}" for x in flat[:limit])
    return f"[{body}{', ...' if flat.size > limit else ''}]"


def check_epsilon(epsilon, *, name: str = "epsilon", allow_zero: bool = False) -> float:
    """Return ``epsilon`` as a float after checking it is a finite positive number."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real):
        raise TypeError(f"{name} must be a real number, got {epsilon!r} of type {type(epsilon).__name__}")
    e = float(epsilon)
    if math.isnan(e) or math.isinf(e):
        raise ValueError(f"{name} must be finite, got {e}")
    if e < 0 or (e == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {e}")
    return e


#: The smallest ε times distance the continuous mechanisms are computed at: their smallest masses (a Laplace cell's,
#: about ε·d/2) stay normal float64 numbers above it.
MIN_SCALED_DISTANCE = 1e-290


def check_scaled_epsilon(scaled: float, *, what: str) -> None:
    """Refuse ε·d (``scaled``, the smallest one a construction uses) below :data:`MIN_SCALED_DISTANCE`: the masses of
    order ε·d are subnormal there and the channel is not private as computed (a Laplace channel at ε = 5e-324 had
    NaN columns, at 1e-315 it failed its check)."""
    if 0 < scaled < MIN_SCALED_DISTANCE or scaled == 0:
        raise ValueError(f"{what}: ε times the smallest distance is {scaled:.3g}, below {MIN_SCALED_DISTANCE:g}: float64 "
                         "cannot carry ε·d that small")


def check_positive_int(value, *, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def as_float_matrix(matrix, *, name: str = "matrix") -> np.ndarray:
    """Return a 2-D float64 array with no NaN, or raise naming the problem."""
    try:
        a = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 2-D array of numbers: {exc}") from None
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got an array of shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {a.shape}")
    if np.isnan(a).any():
        i, j = np.argwhere(np.isnan(a))[0]
        raise ValueError(f"{name} contains NaN (first at [{i}, {j}])")
    return a


def as_stochastic(matrix, *, name: str = "channel matrix", atol: float = SUM_ATOL) -> np.ndarray:
    """Return ``matrix`` as a float64 row-stochastic matrix, or raise naming the offending row."""
    a = as_float_matrix(matrix, name=name)
    if np.isinf(a).any():
        i, j = np.argwhere(np.isinf(a))[0]
        raise ValueError(f"{name} contains an infinite entry at [{i}, {j}]")
    if (a < 0).any():
        i, j = np.argwhere(a < 0)[0]
        raise ValueError(f"{name} must be non-negative; entry [{i}, {j}] is {a[i, j]:.6g}")
    sums = a.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > atol)
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"{name} must be row-stochastic (each row summing to 1 within {atol:g}); "
            f"row {i} sums to {sums[i]:.12g} ({bad.size} bad row(s))"
        )
    return a


def as_prior(prior, n: int | None = None, *, name: str = "prior", atol: float = SUM_ATOL) -> np.ndarray:
    """Return ``prior`` as a 1-D float64 probability vector of length ``n``.

    A prior must be 1-D, finite, non-negative and sum to 1 within ``atol``; it is never renormalized
    silently.
    """
    if prior is None:
        raise TypeError(f"{name} is required: a 1-D array of probabilities" + (f", one per point ({n})" if n else "")
                        + " (np.full(n, 1/n) for the uniform prior)")
    try:
        p = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array of probabilities: {exc}") from None
    if p.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {p.shape}")
    if n is not None and p.shape[0] != n:
        raise ValueError(f"{name} has {p.shape[0]} entries, expected {n} (one per secret)")
    if not np.isfinite(p).all():
        i = int(np.flatnonzero(~np.isfinite(p))[0])
        raise ValueError(f"{name} must be finite; entry {i} is {p[i]}")
    if (p < 0).any():
        i = int(np.flatnonzero(p < 0)[0])
        raise ValueError(f"{name} must be non-negative; entry {i} is {p[i]:.6g}")
    s = p.sum()
    if abs(s - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1 (within {atol:g}), it sums to {s:.12g}: {_short(p)}")
    return p


def check_row_indices(secrets, n: int) -> np.ndarray:
    """``secrets`` as an integer array of row (secret) indices in 0..n−1, any shape; TypeError for a
    non-integer dtype, ValueError naming the range for an index outside it."""
    ys = np.asarray(secrets)
    if ys.size and not np.issubdtype(ys.dtype, np.integer):
        raise TypeError(f"secrets must be integer row indices, got dtype {ys.dtype}")
    if ys.size and (ys.min() < 0 or ys.max() >= n):
        raise ValueError(f"secret indices must lie in 0..{n - 1}, got range {ys.min()}..{ys.max()}")
    return ys


def uniform_prior(n: int) -> np.ndarray:
    """The uniform prior on ``n`` secrets."""
    n = check_positive_int(n, name="n")
    return np.full(n, 1.0 / n)
