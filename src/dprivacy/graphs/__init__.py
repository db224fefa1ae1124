"""Symmetries of graphs and metric spaces that give closed-form optimal mechanisms.

Three notions, from the weakest requirement on the space's automorphisms to the strongest:

* **ball-size symmetry** (ElSalamouny et al. 2014 §6.2, Def 7): every point sees the same number n_r of points at
  each distance r. It is all that the closed-form mechanism needs (ElSalamouny et al. 2014 Prop 9).
* **distance-regular graphs** (Alvim et al. 2015 §2.3, Def 2; Alvim et al. 2011 §3): intersection numbers b_d, c_d
  that do not depend on the pair of vertices at distance d.
* **vertex-transitive graphs** (Alvim et al. 2015 Def 4): the automorphism group has a single orbit. Alvim et al. 2011
  (§3, Def "VT+") used a variant asking for n automorphisms σ_0..σ_{n-1} with {σ_i(v)} = V for
  every v.

Distance-regular and vertex-transitive graphs are both ball-size symmetric (Alvim et al. 2015 Prop 5) and
neither implies the other (Alvim et al. 2015 §2.3, Fig 2: a Chang graph, the truncated tetrahedron).

The package holds ball-size symmetry (:mod:`.ball_size`), distance-regularity and vertex-transitivity
(:mod:`.symmetry`, on the graph views of :mod:`.views`), and the Chang graphs and the augmentation of a
graph to a ball-size symmetric one (:mod:`.augment`); every public name is here.
"""

from .augment import Augmentation, augment_to_symmetric, chang_graph
from .ball_size import DistanceCounts, distance_counts, is_ball_size_symmetric
from .symmetry import DistanceRegularity, VertexTransitivity, is_distance_regular, is_vertex_transitive

__all__ = [
    "Augmentation",
    "DistanceCounts",
    "DistanceRegularity",
    "VertexTransitivity",
    "augment_to_symmetric",
    "chang_graph",
    "distance_counts",
    "is_ball_size_symmetric",
    "is_distance_regular",
    "is_vertex_transitive",
]
