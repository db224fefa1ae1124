"""dprivacy: metric differential privacy and quantitative information flow.

Data flows one way, through the layers that tests/test_architecture.py writes down and checks.
Everything loads on first use (``dprivacy.priors``, ``dp.truncated_geometric``, ...), so that
``import dprivacy`` and the command line start fast.
"""

import importlib

__version__ = "0.1.0"

#: Submodules, loaded on first attribute access.
_MODULES = {"api", "bounds", "channels", "data", "experiments", "graphs", "measures", "mechanisms", "priors", "queries",
            "results", "sampling", "spaces", "spanners", "threshold"}

#: The user-facing names, one front door each: name → module that defines it.
_NAMES = {
    # spaces and channels
    "MetricSpace": "spaces", "GridSpace": "spaces", "Channel": "channels", "uniform_prior": "_validate",
    # the Mechanism object and the result vocabulary
    "Mechanism": "mechanisms.base", "DenseMechanism": "mechanisms.base", "LogMechanism": "mechanisms.base", "PrivacyCertificate": "mechanisms.base",
    "Result": "results",
    # constructors
    "truncated_geometric": "mechanisms.geometric", "exponential": "mechanisms._exponential",
    "randomized_response": "mechanisms._randomized_response", "laplace_channel": "mechanisms.laplace",
    "laplace_sample": "mechanisms.laplace", "planar_laplace_channel": "mechanisms.planar_laplace",
    "planar_laplace_sample": "mechanisms.planar_laplace", "tight_constraints": "mechanisms.tight",
    "optimal_mechanism": "mechanisms.optimal", "optimal_mechanism_spanner": "mechanisms.spanner",
    "symmetric_mechanism": "mechanisms.symmetric", "remark29_mechanism": "mechanisms.symmetric",
    "maximal_leakage_mechanism": "mechanisms.maximal_leakage",
    # theory objects: priors and the threshold
    "tight_threshold": "threshold", "regularity": "priors", "constraints_matrix": "priors", "corner_priors": "priors",
    "sample_regular_priors": "priors", "RegularityTester": "priors",
    # bounds
    "utility_bound": "bounds", "leakage_bound": "bounds", "attains_utility_bound": "bounds",
    # measures
    "utility": "measures", "expected_loss": "measures", "g_vulnerability": "measures",
    "posterior_vulnerability": "measures", "prior_vulnerability": "measures", "min_entropy_leakage": "measures",
    "min_capacity": "measures", "check_privacy": "measures", "smallest_epsilon": "measures",
    "check_prior_privacy": "measures", "check_hiding": "measures", "check_neighbourhood": "measures",
    # result classes
    "PrivacyResult": "measures", "UtilityResult": "measures", "HidingResult": "measures",
    "NeighbourhoodResult": "measures", "RegularityResult": "priors", "ThresholdResult": "threshold",
    "TightResult": "mechanisms.tight", "OptimalResult": "mechanisms.optimal",
    "SpannerOptimalResult": "mechanisms.spanner", "SymmetricMechanism": "mechanisms.symmetric",
    "BoundResult": "bounds", "TightnessResult": "bounds",
    # randomness
    "random_source": "sampling",
    # the data API: releases on DataFrames, Arrow tables and files
    "obfuscate": "api.locations", "evaluate": "api.locations", "query": "api.query", "Budget": "api.query",
    "release_series": "api.series", "DataResult": "api.results", "QueryAnswer": "api.results",
}

__all__ = ["__version__", *sorted(_MODULES), *sorted(_NAMES)]


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dprivacy' has no attribute {name!r}")


def __dir__():
    return __all__
