"""Queries on databases and the metric spaces they induce on their answers.

A database of u individuals with values in a finite universe V is a tuple x ∈ V^u (Alvim et al. 2015 §3; ElSalamouny et al. 2014
§3.2). Two databases are adjacent, x ~ x', when they differ in the value of exactly one individual; the
graph distance of ~ is the Hamming distance d_h, and ε-differential privacy is ε·d_h-privacy. A query
f : V^u → Y composed with a noise channel H : Y → Z gives the *oblivious* mechanism H∘f (ElSalamouny et al. 2014 §3.1).

The query carries the adjacency of databases to its answers, the *induced graph*

    y ~_f y'  iff  x ~ x' for some x ∈ f⁻¹(y), x' ∈ f⁻¹(y')        (ElSalamouny et al. 2014 §3.2; Alvim et al. 2015 Def 25)

and every f is uniformly 1-sensitive wrt d_h and the graph metric d_{~f}, so H is ε·d_{~f}-private iff
H∘f is ε·d_h-private (ElSalamouny et al. 2014 Cor 1, from Thm 1 = Chatzikokolakis et al. 2013 Thm 6).

This package gives (modules :mod:`.databases`, :mod:`.induced`, :mod:`.sensitivity`)

* :func:`universe` — the enumerated databases V^u with their Hamming, Manhattan (d_1, normalized d̃_1)
  and maximum (d_∞) metrics (Chatzikokolakis et al. 2013 §5–6), optionally with a null value ∅ for absent individuals;
* vectorized queries on the (N, u) array of databases: :func:`count`, :func:`total` (sum),
  :func:`average`, :func:`percentile`, :func:`kcount`, :func:`most_frequent`;
* :func:`induced_graph` / :func:`induced_space` — ~_f and d_{~f} by enumeration, without per-pair
  Python loops;
* closed forms that never enumerate: :func:`count_space`, :func:`sum_space`, :func:`kcount_space`
  (ElSalamouny et al. 2014 §7.1);
* :func:`sensitivity` (Chatzikokolakis et al. 2013 Def 4) and :func:`is_uniformly_sensitive` (Chatzikokolakis et al. 2013 Def 5 = ElSalamouny et al. 2014
  Def 2), and :func:`oblivious` for H∘f.

Conventions. Databases are numeric arrays of shape (N, u); an absent individual (the null value ∅ of
Chatzikokolakis et al. 2013 §2) is ``NaN``. Queries return one answer per database, as an array of shape (N,) or (N, k).
The *labels* of an answer space are the distinct answers in ``np.unique`` order: ascending numbers, or
tuples in lexicographic order (see :func:`answer_index`).
"""

from .databases import (MAX_DATABASES, QUERIES, Universe, average, count, independent_predicates, kcount,
                        most_frequent, percentile, total, universe)
from .induced import (RTOL, InducedGraph, answer_index, answer_line, count_space, induced_graph, induced_space,
                      kcount_space, sum_space)
from .sensitivity import UniformSensitivity, is_uniformly_sensitive, oblivious, sensitivity

__all__ = [
    "MAX_DATABASES",
    "Universe",
    "universe",
    "count",
    "total",
    "average",
    "percentile",
    "kcount",
    "most_frequent",
    "independent_predicates",
    "QUERIES",
    "answer_index",
    "InducedGraph",
    "induced_graph",
    "induced_space",
    "answer_line",
    "count_space",
    "sum_space",
    "kcount_space",
    "sensitivity",
    "UniformSensitivity",
    "is_uniformly_sensitive",
    "oblivious",
]
