"""QIF measures: vulnerability, min-entropy leakage, utility, and d-privacy checks."""

from .characterizations import HidingResult, NeighbourhoodResult, check_hiding, check_neighbourhood
from .leakage import (
    conditional_min_entropy,
    min_capacity,
    min_entropy,
    min_entropy_leakage,
    multiplicative_leakage,
    posterior_vulnerability,
    prior_vulnerability,
)
from .privacy import (
    PrivacyResult,
    check_prior_privacy,
    check_privacy,
    check_privacy_log,
    is_private,
    multiplicative_distance,
    smallest_epsilon,
)
from .utility import (
    UtilityResult,
    binary_gain,
    expected_loss,
    g_vulnerability,
    prior_g_vulnerability,
    utility,
)

__all__ = [
    "HidingResult", "NeighbourhoodResult", "check_hiding", "check_neighbourhood",
    "conditional_min_entropy", "min_capacity", "min_entropy", "min_entropy_leakage",
    "multiplicative_leakage", "posterior_vulnerability", "prior_vulnerability",
    "PrivacyResult", "check_prior_privacy", "check_privacy", "check_privacy_log", "is_private",
    "multiplicative_distance", "smallest_epsilon",
    "UtilityResult", "binary_gain", "expected_loss", "g_vulnerability", "prior_g_vulnerability", "utility",
]
