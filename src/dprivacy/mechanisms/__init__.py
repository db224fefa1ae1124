"""Noise mechanisms on finite metric spaces. Every constructor returns a
:class:`~dprivacy.mechanisms.base.Mechanism`, or a result whose ``.mechanism`` is one (tight-constraints,
the LP optimum, symmetric). Submodules load on first use."""

import importlib

_NAMES = {
    "Mechanism": "base", "DenseMechanism": "base", "LogMechanism": "base", "PrivacyCertificate": "base",
    "exponential": "_exponential", "truncated_geometric": "geometric",
    "laplace_channel": "laplace", "laplace_sample": "laplace", "maximal_leakage_mechanism": "maximal_leakage",
    "optimal_mechanism": "optimal", "planar_laplace_channel": "planar_laplace", "planar_laplace_sample": "planar_laplace",
    "randomized_response": "_randomized_response", "remark29_mechanism": "symmetric", "symmetric_mechanism": "symmetric",
    "tight_constraints": "tight",
}

__all__ = sorted(_NAMES)


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module 'dprivacy.mechanisms' has no attribute {name!r}")
