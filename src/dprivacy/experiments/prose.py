"""Notes of the report written as sentences: lists of values joined with "and", values grouped by what they
show ("absent at ε = 0.8 and 0.85; exists at ε = 0.9 …") instead of ``0.8:absent, 0.85:absent`` pairs."""

from __future__ import annotations

from typing import Callable, Iterable, Sequence


def join_and(items: Iterable[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = [str(i) for i in items]
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def grouped(xs: Sequence[float], labels: Sequence[str], *, var: str = "ε", fmt: str = ".4g") -> str:
    """'absent at ε = 0.8 and 0.85; exists at ε = 0.9 and 1': the x values grouped by their label, the labels
    in the order they first appear."""
    groups: dict[str, list[str]] = {}
    for x, lab in zip(xs, labels):
        groups.setdefault(str(lab), []).append(format(x, fmt))
    return "; ".join(f"{lab} at {var} = {join_and(v)}" for lab, v in groups.items())


def valued(xs: Sequence[float], values: Sequence[float], *, var: str = "ε", fmt: str = ".6f", xfmt: str = ".4g",
           show: Callable[[float], str] | None = None) -> str:
    """'0.024 at ε = 0.4, 0.046 at ε = 0.58 and 0.058 at ε = 0.67'."""
    show = show or (lambda v: format(v, fmt))
    return join_and(f"{show(v)} at {var} = {format(x, xfmt)}" for x, v in zip(xs, values))
