"""The registry of reproducible experiments: one function per table, figure or numeric claim."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .claims import Claim, Figure

#: The five papers by authors and year (experiment ids start with the paper's number: 000-fig7).
PAPERS = {
    "000": "ElSalamouny et al. 2014",
    "001": "Alvim et al. 2015",
    "002": "Chatzikokolakis et al. 2013",
    "003": "Alvim et al. 2011",
    "004": "ElSalamouny et al. 2013",
}

PAPER_TITLES = {
    "000": "ElSalamouny, Chatzikokolakis, Palamidessi. Generalized differential privacy: regions of priors that admit robust optimal mechanisms (2014)",
    "001": "Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi. On the information leakage of differentially-private mechanisms (JCS 2015)",
    "002": "Chatzikokolakis, Andrés, Bordenabe, Palamidessi. Broadening the scope of differential privacy using metrics (PETS 2013)",
    "003": "Alvim, Andrés, Chatzikokolakis, Palamidessi. On the relation between differential privacy and quantitative information flow (ICALP 2011)",
    "004": "ElSalamouny, Chatzikokolakis, Palamidessi. A differentially private mechanism of optimal utility for a region of priors (POST 2013)",
}


@dataclass
class Context:
    """What an experiment gets: where to write its files, and whether to run the quick version."""

    out: Path
    quick: bool = False

    def path(self, name: str) -> Path:
        p = self.out / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p


@dataclass
class Outcome:
    """What an experiment returns."""

    claims: list[Claim] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Experiment:
    id: str
    paper: str
    title: str
    run: Callable[[Context], Outcome]
    slow: bool = False
    quick_note: str = ""


REGISTRY: dict[str, Experiment] = {}


def experiment(id: str, paper: str, title: str, *, slow: bool = False, quick_note: str = ""):
    """Register ``fn(ctx) -> Outcome`` as experiment ``id`` reproducing part of seed ``paper``.

    ``slow`` experiments shrink under ``--quick``; ``quick_note`` says how (shown in the report).
    """
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}: expected one of {', '.join(PAPERS)}")

    def deco(fn):
        if id in REGISTRY:
            raise ValueError(f"experiment id {id!r} registered twice")
        REGISTRY[id] = Experiment(id, paper, title, fn, slow, quick_note)
        return fn

    return deco


def load_all() -> dict[str, Experiment]:
    """Import every experiment module (they register themselves) and return the registry."""
    import importlib
    import pkgutil

    from . import __path__ as pkg_path

    for info in pkgutil.iter_modules(pkg_path):
        if info.name.startswith("seed"):
            importlib.import_module(f"{__package__}.{info.name}")
    return REGISTRY
