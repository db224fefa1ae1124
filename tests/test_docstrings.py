"""Every public function or class that implements a result of the papers cites it in a numpydoc
References section: the paper, by its authors and year (one of the five papers of the bibliography), and the
result number."""

from __future__ import annotations

import importlib
import re

import pytest

#: Words of each paper's title (the References entries give authors, title and year).
TITLES = ("generalized differential privacy", "optimal utility for a region of priors",
          "information leakage of differentially-private mechanisms",
          "relation between differential privacy and quantitative information flow",
          "broadening the scope of differential privacy")

CITED = {
    "dprivacy.measures.privacy": ["check_privacy", "check_privacy_log", "smallest_epsilon", "is_private",
                                  "check_prior_privacy", "multiplicative_distance", "PrivacyResult"],
    "dprivacy.measures.leakage": ["prior_vulnerability", "posterior_vulnerability", "min_entropy", "conditional_min_entropy",
                                  "multiplicative_leakage", "min_entropy_leakage", "min_capacity"],
    "dprivacy.measures.utility": ["utility", "g_vulnerability", "prior_g_vulnerability", "expected_loss", "binary_gain"],
    "dprivacy.measures.characterizations": ["check_hiding", "check_neighbourhood", "swap", "hiding_distance",
                                            "neighbourhood_diameter"],
    "dprivacy.bounds": ["utility_bound", "leakage_bound", "uniform_leakage_bound", "database_leakage_bound",
                        "attains_utility_bound", "conditional_entropy_bound", "symmetric_leakage_bound",
                        "symmetric_utility_bound", "bnd", "range_limited_leakage_bound", "individual_leakage_bound"],
    "dprivacy.priors": ["constraints_matrix", "corner_priors", "probability_bounds", "regularity", "RegularityTester",
                        "RegularityResult", "sample_regular_priors"],
    "dprivacy.graphs": ["distance_counts", "is_ball_size_symmetric", "is_distance_regular", "is_vertex_transitive",
                        "augment_to_symmetric"],
    "dprivacy.queries": ["sensitivity", "is_uniformly_sensitive", "oblivious", "induced_graph", "induced_space",
                         "count_space", "sum_space", "kcount_space"],
    "dprivacy.spaces": ["MetricSpace", "from_graph", "hamming", "grid"],
    "dprivacy.mechanisms": ["truncated_geometric", "exponential", "randomized_response", "laplace_channel",
                            "laplace_sample", "planar_laplace_channel", "planar_laplace_sample", "tight_constraints",
                            "optimal_mechanism", "symmetric_mechanism", "remark29_mechanism", "maximal_leakage_mechanism"],
    "dprivacy.threshold": ["tight_threshold"],
}


@pytest.mark.parametrize("module, name", [(m, n) for m, names in CITED.items() for n in names])
def test_docstring_cites_the_paper_and_a_result(module, name):
    obj = getattr(importlib.import_module(module), name)
    doc = obj.__doc__ or ""
    assert re.search(r"\n\s*References\n\s*-{10}\n", doc), f"{module}.{name} has no References section"
    refs = doc.split("References", 1)[1]
    text = " ".join(refs.lower().split())
    assert any(title in text for title in TITLES), f"{module}.{name} cites none of the five papers by its title"
    assert re.search(r"\((?:[A-Z]+ )?20[01][0-9]\)|\b20[01][0-9]\b", refs), f"{module}.{name}: the paper's year"
    assert re.search(r"(Def|Prop|Thm|Lemma|Cor|Remark|Example|Table|§)\s*[0-9]", refs), name
