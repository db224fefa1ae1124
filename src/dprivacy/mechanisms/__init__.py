"""Noise mechanisms as channels on finite metric spaces.

Classic mechanisms return a :class:`~dprivacy.channels.Channel`; mechanisms that may not exist
(tight-constraints, symmetric, the LP optimum) return a result object with ``exists``/``success`` and
the reason. :func:`registry.build` builds any of them by name.
"""

from .exponential import exponential
from .geometric import geometric, truncated_geometric
from .laplace import laplace_channel, laplace_sample
from .maximal_leakage import maximal_leakage_mechanism
from .optimal import optimal_mechanism
from .planar_laplace import planar_laplace_channel, planar_laplace_sample
from .randomized_response import randomized_response
from .registry import BUILDERS, Outcome, build
from .symmetric import remark29_mechanism, symmetric_mechanism
from .tight import tight_constraints

__all__ = [
    "exponential", "geometric", "truncated_geometric", "laplace_channel", "laplace_sample",
    "maximal_leakage_mechanism", "optimal_mechanism", "planar_laplace_channel", "planar_laplace_sample",
    "randomized_response", "BUILDERS", "Outcome", "build", "remark29_mechanism", "symmetric_mechanism",
    "tight_constraints",
]
