r"""Regularity of a prior on a grid without the n×n matrix (ElSalamouny et al. 2014 Def 4, Prop 2, Thm 4).

π is ε·d-regular iff μ = π Φ⁻¹ ≥ 0 (Φ = e^{−ε d} is invertible on the three grid metrics, and
symmetric, so μ solves Φ μ = π). The solve and the sign decision are :func:`.solve.solve_grid`, the
same as the tight-constraints solve with π in place of 1 (π is normalised by its largest entry, so the
uniform prior *is* that system: ElSalamouny et al. 2014 Prop 8 by construction): with r = π − Φ̃μ̃ and δ the rounding
of the FFT product,

    ‖μ − μ̃‖∞ ≤ ‖μ − μ̃‖₂ ≤ (‖r‖₂ + δ) / λ_min(Φ̃),

λ_min bounded below by :func:`.spectrum.eigenvalue_lower_bound`. The decision and its reason are
:func:`.prior_decision.decide_prior`, shared with the dense tester: a prior with a zero entry is never
regular (ElSalamouny et al. 2014 Prop 2: every entry of a regular prior is at least 1/Σ_{y'} e^{ε d(y,y')} > 0); a
prior the solve cannot decide is tested for being a corner prior (regular by construction, Def 5)
with the rows of Φ computed from the metric.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import as_prior, check_epsilon
from ..spaces import GridSpace
from .phi_solve import PhiSolution
from .prior_decision import decide_prior
from .solve import solve_grid


def constraints_operator(space, epsilon: float):
    """Φ = e^{−ε d} of a grid or a sum line as a matrix-free operator (``.matvec``)."""
    from ..spaces import SumLineSpace

    if isinstance(space, SumLineSpace):
        from .sum_line import SumLineOperator

        return SumLineOperator(space.n, space.delta, epsilon)
    from .operator import GridConstraintsOperator

    return GridConstraintsOperator(space, epsilon)


def regularity_line(space, prior, *, epsilon: float):
    """Whether ``prior`` is ε·d-regular on a :class:`~dprivacy.spaces.SumLineSpace` (ElSalamouny et al. 2014 Def 4), decided by
    the certified sum-line solve of Φμ = π (:func:`.sum_line.regularity_sum_line`: CG with the residual bound,
    or a Farkas certificate of non-regularity); a :class:`dprivacy.priors.RegularityResult` as
    :func:`regularity_grid` gives."""
    from ..spaces import SumLineSpace
    from .sum_line import regularity_sum_line

    if not isinstance(space, SumLineSpace):
        raise TypeError(f"space must be a SumLineSpace, got {type(space).__name__}")
    e = check_epsilon(epsilon)
    p = as_prior(prior, space.n)
    ls = regularity_sum_line(space.n, space.delta, p, epsilon=e)
    pd = ls.lambda_min > 0
    note = "" if pd else "Φ is not certified positive definite, so only a Farkas certificate can decide; "
    sol = PhiSolution(
        x=ls.x, status=ls.status, certainty=ls.certainty, method=ls.method, residual=float(ls.rnorm), condition=None,
        error_bound=ls.error_bound, margin=ls.margin, singular=False if pd else None, nullity=0 if pd else None,
        note=note + ls.note + "; ")
    row_sums = ls.op.matvec(np.ones(space.n))
    err = math.sqrt(space.n) * ls.error_bound if math.isfinite(ls.error_bound) else math.inf
    return decide_prior(p, sol, row=lambda y: np.exp(-e * space.distances_from(y)), row_sums=row_sums, lower=None,
                        rcond=math.nan, mu_sum_error=err)


def regularity_grid(grid: GridSpace, prior, *, epsilon: float, **solver):
    """Whether ``prior`` is ε·d-regular on ``grid`` (ElSalamouny et al. 2014 Def 4), decided by CG on the FFT operator;
    a :class:`dprivacy.priors.RegularityResult` with ``method="cg"`` (see the module notes for the
    certificate). ``solver``: keyword arguments of :func:`.solve.solve_grid`."""
    if not isinstance(grid, GridSpace):
        raise TypeError(f"grid must be a GridSpace, got {type(grid).__name__}")
    e = check_epsilon(epsilon)
    p = as_prior(prior, grid.n)
    gs = solve_grid(grid, e, p, **solver)
    pd = gs.bound.positive_definite
    note = "" if pd else "no positive lower bound on λ_min(Φ) was found, so the solve certifies nothing; "
    sol = PhiSolution(
        x=gs.x, status=gs.status, certainty=gs.certainty, method=gs.method,
        residual=float(np.abs(gs.residual).max()), condition=None, error_bound=gs.error_bound, margin=gs.margin,
        singular=False, nullity=0 if pd else None, note=note)
    row_sums = gs.op.matvec(np.ones(grid.n))
    return decide_prior(p, sol, row=lambda y: np.exp(-e * grid.distances_from(y)), row_sums=row_sums, lower=None,
                        rcond=math.nan, mu_sum_error=math.sqrt(grid.n) * gs.error_bound)
