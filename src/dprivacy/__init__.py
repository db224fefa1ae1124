"""dprivacy: metric differential privacy and quantitative information flow.

Data flows one way: spaces → (priors, mechanisms) → channels → measures/bounds → experiments/cli.
"""

from . import measures, spaces
from ._validate import uniform_prior
from .channels import Channel
from .spaces import GridSpace, MetricSpace

__version__ = "0.1.0"

__all__ = ["Channel", "GridSpace", "MetricSpace", "measures", "spaces", "uniform_prior", "__version__"]
