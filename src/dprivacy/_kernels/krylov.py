"""Preconditioned conjugate gradients with warm start, true-residual checks and a progress hook.

Written out (rather than ``scipy.sparse.linalg.cg``) because the caller needs the *true* residual
1 − Φz at the end — the certificate of :mod:`.solve` rests on it, not on the recursively updated one
— and restarts when the two drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class KrylovOutcome:
    """x, its true residual b − A x, the iterations spent and whether ‖r‖₂ ≤ target."""

    x: np.ndarray
    residual: np.ndarray
    iterations: int
    converged: bool
    history: list


def pcg(
    apply_a: Callable[[np.ndarray], np.ndarray],
    b: np.ndarray,
    *,
    x0: np.ndarray | None = None,
    apply_m: Callable[[np.ndarray], np.ndarray] | None = None,
    target: float,
    max_iter: int,
    restarts: int = 3,
    progress: Callable[[int, float], None] | None = None,
    start_iteration: int = 0,
) -> KrylovOutcome:
    """Solve A x = b (A symmetric positive definite) until the true residual ‖b − A x‖₂ ≤ ``target``.

    Standard PCG (Hestenes–Stiefel with preconditioner M⁻¹ = ``apply_m``). When the recursive residual
    reaches the target, the true residual is recomputed; if it is still above the target (rounding
    drift), CG restarts from the current x, at most ``restarts`` times. ``progress(k, ‖r‖₂/‖b‖₂)`` is
    called after every iteration k (counted from ``start_iteration``).
    """
    nb = float(np.linalg.norm(b)) or 1.0
    x = np.zeros_like(b) if x0 is None else np.array(x0, dtype=np.float64, copy=True)
    r = b - apply_a(x) if x0 is not None else b.copy()
    history = [float(np.linalg.norm(r)) / nb]
    k = 0
    for _ in range(restarts + 1):
        rn = float(np.linalg.norm(r))
        if rn <= target or k >= max_iter:
            break
        zv = apply_m(r) if apply_m is not None else r
        p = zv.copy()
        rz = float(r @ zv)
        while k < max_iter:
            ap = apply_a(p)
            pap = float(p @ ap)
            if not pap > 0:  # breakdown: A not positive definite along p (or p = 0)
                break
            alpha = rz / pap
            x += alpha * p
            r -= alpha * ap
            k += 1
            rn = float(np.linalg.norm(r))
            history.append(rn / nb)
            if progress is not None:
                progress(start_iteration + k, rn / nb)
            if rn <= target:
                break
            zv = apply_m(r) if apply_m is not None else r
            rz_new = float(r @ zv)
            p *= rz_new / rz
            p += zv
            rz = rz_new
        r = b - apply_a(x)  # the true residual: the recursion drifts by rounding
    rn = float(np.linalg.norm(r))
    return KrylovOutcome(x=x, residual=r, iterations=k, converged=rn <= target, history=history)
