"""Claims and figures: the units of a reproduction report.

A *claim* is one published number (or fact) beside the number the library computes for it. Published
values are typed in, with the place they come from; computed values come from running the library.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

#: Verdicts a claim can have.
AGREES, DIFFERS, NOT_COMPARABLE = "agrees", "differs", "not comparable"


@dataclass
class Claim:
    """One published value against its recomputation.

    ``tolerance`` is absolute unless ``relative`` is set; values read off a plot carry the tolerance of
    the reading and say so in ``note``. ``published`` may be None for a fact the paper states without a
    number (then ``agrees`` is decided by the experiment and the claim says how).
    """

    id: str
    paper: str
    where: str
    published: Any
    computed: Any
    tolerance: float | None = None
    relative: bool = False
    note: str = ""
    agrees: bool | None = None
    readings: list[dict] = field(default_factory=list)

    def __post_init__(self):
        if self.agrees is None:
            self.agrees = compare(self.published, self.computed, self.tolerance, self.relative)

    @property
    def verdict(self) -> str:
        if self.agrees is None:
            return NOT_COMPARABLE
        return AGREES if self.agrees else DIFFERS

    def to_json(self) -> dict:
        d = asdict(self)
        d["verdict"] = self.verdict
        return d


def compare(published, computed, tolerance, relative=False) -> bool | None:
    """Whether ``computed`` matches ``published`` within ``tolerance`` (None when not comparable)."""
    if published is None or computed is None:
        return None
    if isinstance(published, bool) or isinstance(computed, bool):
        return bool(published) == bool(computed)
    if isinstance(published, (list, tuple)):
        if not isinstance(computed, (list, tuple)) or len(published) != len(computed):
            return False
        results = [compare(p, c, tolerance, relative) for p, c in zip(published, computed)]
        return None if any(r is None for r in results) else all(results)
    try:
        p, c = float(published), float(computed)
    except (TypeError, ValueError):
        return published == computed
    if math.isnan(c):
        return False
    tol = 0.0 if tolerance is None else float(tolerance)
    if relative:
        return abs(p - c) <= tol * abs(p)
    return abs(p - c) <= tol


@dataclass
class Figure:
    """A recomputed figure: the PNG, the CSV of its data, and what it shows."""

    id: str
    paper: str
    where: str
    png: str
    csv: str
    caption: str
