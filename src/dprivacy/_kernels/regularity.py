r"""Regularity of a prior on a grid without the n×n matrix (seed 000 Def 4, Prop 2, Thm 4).

π is ε·d-regular iff μ = π Φ⁻¹ ≥ 0 (Φ = e^{−ε d} is invertible on the three grid metrics, and
symmetric, so μ solves Φ μ = π). The solve is conjugate gradients on the FFT operator of
:mod:`.operator`, the same as the tight-constraints solve with π in place of 1, and the decision is
certified the same way: with r = π − Φ̃μ̃ and δ the rounding of the FFT product,

    ‖μ − μ̃‖∞ ≤ ‖μ − μ̃‖₂ ≤ (‖r‖₂ + δ) / λ_min(Φ̃),

λ_min bounded below by :func:`.spectrum.eigenvalue_lower_bound`. μ̃_min above that bound: regular;
below its negative: not regular; in between: undecided (on the boundary of the region within
rounding). A prior with a zero entry is never regular (seed 000 Prop 2: every entry of a regular prior
is at least 1/Σ_{y'} e^{ε d(y,y')} > 0), which is decided without a solve.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import as_prior, check_epsilon
from ..spaces import GridSpace
from .krylov import pcg
from .operator import GridConstraintsOperator
from .solve import _rounding_floor
from .spectrum import eigenvalue_lower_bound


def regularity_grid(grid: GridSpace, prior, *, epsilon: float, tol: float = 1e-12, max_iter: int = 5000):
    """Whether ``prior`` is ε·d-regular on ``grid`` (seed 000 Def 4), decided by CG on the FFT operator;
    a :class:`dprivacy.priors.RegularityResult` with ``method="cg"`` (see the module notes for the
    certificate). ``tol``: relative residual ‖π − Φμ̃‖₂/‖π‖₂ at which CG stops."""
    from ..priors import RegularityResult, _negative_reason

    if not isinstance(grid, GridSpace):
        raise TypeError(f"grid must be a GridSpace, got {type(grid).__name__}")
    e = check_epsilon(epsilon)
    p = as_prior(prior, grid.n)
    op = GridConstraintsOperator(grid, e)
    row_sums = op.matvec(np.ones(grid.n))
    zeros = np.flatnonzero(p == 0.0)
    bound = eigenvalue_lower_bound(op)
    out = pcg(op.matvec, p, x0=p / row_sums, apply_m=op.preconditioner("circulant"),
              target=tol * float(np.linalg.norm(p)), max_iter=max_iter)
    mu = out.x
    rnorm = float(np.linalg.norm(out.residual))
    err = (rnorm + _rounding_floor(op, mu)) / bound.value if bound.positive_definite else math.inf
    mins = float(mu.min())
    margin = mins / err if err > 0 else math.copysign(math.inf, mins)
    below = zeros.size > 0
    regular = margin > 1.0 and not below
    boundary = abs(margin) <= 1.0 and not below
    neg = np.flatnonzero(mu < -err)
    reason = None
    if below:
        reason = (f"π[{int(zeros[0])}] = 0 ({zeros.size} zero entr{'y' if zeros.size == 1 else 'ies'}): every entry of a "
                  "regular prior is positive (seed 000 Prop 2)")
        if neg.size:
            reason = _negative_reason(mu, neg, err) + "; " + reason
    elif not bound.positive_definite:
        reason = "undecided: no positive lower bound on λ_min(Φ) was found, so the solve certifies nothing"
    elif boundary:
        reason = (f"undecided: π lies on the boundary of the region within rounding (min μ = {mins:.3g}, error bound "
                  f"{err:.3g})")
    elif not regular:
        reason = _negative_reason(mu, neg, err)
    return RegularityResult(
        regular=bool(regular), mu=mu, gamma=mu * row_sums, mu_sum=float(mu.sum()), mu_sum_max=float(mu.sum()),
        mu_sum_error=math.sqrt(grid.n) * err, residual=float(np.abs(out.residual).max()), error_bound=err,
        margin=float(margin), method="cg", rcond=math.nan, nullity=0, consistent=True, negative=neg,
        negative_values=mu[neg], reason=reason, boundary=bool(boundary))
