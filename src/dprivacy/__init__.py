"""dprivacy: metric differential privacy and quantitative information flow.

Data flows one way: spaces → (priors, mechanisms) → channels → measures/bounds → experiments/cli.
Submodules load on first use (``dprivacy.priors``, ``dprivacy.bounds``, ...), so that the command line
starts fast.
"""

import importlib

from . import measures, spaces
from ._validate import uniform_prior
from .channels import Channel
from .spaces import GridSpace, MetricSpace

__version__ = "0.1.0"

_LAZY = {"bounds", "graphs", "mechanisms", "priors", "queries", "specs", "structured", "threshold", "experiments"}

__all__ = ["Channel", "GridSpace", "MetricSpace", "measures", "spaces", "uniform_prior", "__version__", *sorted(_LAZY)]


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'dprivacy' has no attribute {name!r}")
