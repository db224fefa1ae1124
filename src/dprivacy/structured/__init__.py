"""Fast solvers for grid metrics: the privacy-constraints matrix as an FFT operator, conjugate
gradients with a certified sign test, the threshold ε, and implicit (matrix-free) tight-constraints
mechanisms with exact samplers (seed 000 §6, §7.2 at a million cells)."""

from .operator import GridConstraintsOperator
from .solve import GridTightResult, tight_constraints_grid
from .spectrum import EigenvalueBound, eigenvalue_lower_bound, symbol_lower_bound

__all__ = [
    "EigenvalueBound", "GridConstraintsOperator", "GridTightResult", "eigenvalue_lower_bound",
    "symbol_lower_bound", "tight_constraints_grid",
]
