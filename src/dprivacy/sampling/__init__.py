"""Randomness for release: a cryptographic source by default, reproducible only with a seed
(:mod:`.source`)."""

from .source import NOT_FOR_RELEASE, RandomSource, as_generator, random_source, release_source, seeded_source

__all__ = ["NOT_FOR_RELEASE", "RandomSource", "as_generator", "random_source", "release_source", "seeded_source"]
