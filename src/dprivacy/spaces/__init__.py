"""Finite (extended) metric spaces: the secrets a mechanism protects.

A metric space (Y, d) is the domain of d-privacy (ElSalamouny et al. 2014 Def 1; Chatzikokolakis et al. 2013 §3, where d may take the
value ∞: an *extended* metric). It is held as a dense distance matrix, or, for grids, in a structured
form whose dense matrix is built only on request (a million-cell grid never is).

Besides the distances, a space may know its *essential pairs*: the pairs (y, y') whose distance is not
the sum of distances through a third point. Privacy constraints on the essential pairs imply all the
others (ElSalamouny et al. 2013 Prop 1 for graph metrics: adjacent pairs suffice; the same argument works for any
metric, since e^{d(y,y'')} = e^{d(y,y')} e^{d(y',y'')} along a tight chain). Graph metrics know theirs
(the edges); other spaces compute them once, on request.

The package holds the general space (:mod:`.metric`), the structured ones (:mod:`.structured`: grids and the
answer lines of sum queries) and the readers of spaces from files (:mod:`.files`); every name is here.
"""

from .files import load_array, load_edge_list, load_matrix, read_prior
from .metric import (DENSE_LIMIT_BYTES, METRIC_RTOL, MetricSpace, TriangleCheck, clique, distance_floor, from_graph,
                     from_matrix, hamming, line, ring)
from .metric import _check_dense_fits, _compute_essential_pairs  # noqa: F401 (private, imported from here)
from .structured import GridSpace, SumLineSpace, grid

__all__ = ["DENSE_LIMIT_BYTES", "GridSpace", "METRIC_RTOL", "MetricSpace", "SumLineSpace", "TriangleCheck", "clique",
           "distance_floor", "from_graph", "from_matrix", "grid", "hamming", "line", "load_array", "load_edge_list",
           "load_matrix", "read_prior", "ring"]
