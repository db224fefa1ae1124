"""Measures accept a Mechanism (dense or implicit), a Channel, or a plain matrix; this module turns
them into what a measure needs and routes implicit mechanisms to their structured algorithms."""

from __future__ import annotations

import numpy as np

from ..channels import Channel
from ..channels.mechanism import Mechanism


METHODS = ("auto", "dense", "structured")


def check_method(method) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}")


def mechanism_of(channel):
    """The :class:`~dprivacy.mechanisms.base.Mechanism` behind ``channel``, or None."""
    return channel if isinstance(channel, Mechanism) else None


def dense_matrix(channel) -> np.ndarray:
    """The dense matrix of a Channel, a Mechanism (built on demand; MemoryError with the size when it
    would not fit), or an array (validated as a stochastic matrix)."""
    if isinstance(channel, Channel):
        return channel.matrix
    m = mechanism_of(channel)
    if m is not None:
        return m.matrix
    return Channel(channel).matrix


def n_inputs(channel) -> int:
    m = mechanism_of(channel)
    if m is not None:
        return m.n_inputs
    return dense_matrix(channel).shape[0]
