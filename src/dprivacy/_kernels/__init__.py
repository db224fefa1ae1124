"""Fast solvers for grid metrics (seed 000 §6 and §7.2 at a million cells): the privacy-constraints
matrix as an FFT operator, conjugate gradients with a certified sign test, the threshold ε, and the
implicit (matrix-free) tight-constraints mechanism with its utility, leakage, privacy certificate and
exact sampler."""

from .closed_form import manhattan_diagonal
from .implicit import ImplicitTightMechanism, PrivacyCertificate
from .maxplus import max_convolution
from .operator import GridConstraintsOperator
from .sampling import KernelRejectionSampler
from .solve import GridTightResult, tight_constraints_grid
from .spectrum import EigenvalueBound, eigenvalue_lower_bound, symbol_lower_bound
from .threshold import tight_threshold_grid

__all__ = [
    "EigenvalueBound", "GridConstraintsOperator", "GridTightResult", "ImplicitTightMechanism",
    "KernelRejectionSampler", "PrivacyCertificate", "eigenvalue_lower_bound", "manhattan_diagonal",
    "max_convolution", "symbol_lower_bound", "tight_constraints_grid", "tight_threshold_grid",
]
