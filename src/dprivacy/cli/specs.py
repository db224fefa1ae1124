"""SPACE specs: the short strings the command line uses to name a metric space (DESIGN.md).

| spec | space |
|---|---|
| ``line:N`` | {0..N-1}, d = |i−j| |
| ``ring:N`` | cycle of N nodes, graph distance |
| ``clique:N`` | discrete metric on N points |
| ``grid:WxH[:euclidean|manhattan|chebyshev][:step=S]`` | W·H cells, step S (default 1, euclidean) |
| ``hamming:U,V`` | databases of U individuals with V values, Hamming distance |
| ``count:U`` | answers of a counting query on U individuals (a line of U+1 answers) |
| ``sum:U,V`` | answers of a sum query, values 0..V; answers adjacent iff they differ by ≤ V |
| ``kcount:U,K`` | K counting queries at once; adjacent iff every coordinate differs by ≤ 1 |
| ``matrix:PATH`` | a distance matrix in .npy or .csv |
| ``graph:PATH`` | an edge list; graph distance |
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..spaces import MetricSpace

SPEC_HELP = (
    "line:N, ring:N, clique:N, grid:WxH[:euclidean|manhattan|chebyshev][:step=S], hamming:U,V, "
    "count:U, sum:U,V, kcount:U,K, matrix:PATH, graph:PATH"
)


#: Integers in a spec have at most this many digits (a larger space could not be built anyway).
MAX_DIGITS = 9


#: Numbers in a spec are written with the ASCII digits 0-9 only (no spaces, no other scripts' digits).
_DIGITS = re.compile(r"[0-9]+", flags=re.ASCII)
_NUMBER = re.compile(r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+\.(?:[eE][+-]?[0-9]+)?", flags=re.ASCII)


def _ints(spec: str, body: str, count: int) -> list[int]:
    parts = body.split(",")
    if len(parts) != count or not all(_DIGITS.fullmatch(p) for p in parts):
        want = ",".join("N" * 1 for _ in range(count))
        raise ValueError(f"bad SPACE spec {spec[:60]!r}: expected {count} positive integer(s) after the colon ({want}), "
                         "written with the ASCII digits 0-9 and no spaces")
    if any(len(p.lstrip("0")) > MAX_DIGITS for p in parts):
        raise ValueError(f"bad SPACE spec {spec[:40]!r}...: a number has more than {MAX_DIGITS} digits")
    return [int(p) for p in parts]


def _check_points(spec: str, log10_n: float) -> None:
    """Refuse, before building, a space whose dense n×n distance matrix would not fit."""
    import math

    from ..spaces import DENSE_LIMIT_BYTES

    limit = math.log10(DENSE_LIMIT_BYTES / 8) / 2
    if log10_n > limit:
        shown = f"{10 ** log10_n:.3g}" if log10_n < 300 else f"10^{log10_n:.0f}"
        raise ValueError(f"{spec} has {shown} points: its dense {shown}x{shown} distance matrix is over the "
                         f"{DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit (at most {int(10 ** limit):,} points)")


def parse_space(spec: str) -> "MetricSpace":
    """Build the metric space a SPACE spec names (see the module docstring), unscaled.

    Raises
    ------
    ValueError
        For an unknown kind or malformed parameters; the message lists the accepted specs, or names the spec
        when a parameter is out of range (``sum:0,5``: "u must be >= 1" did not say where).
    """
    try:
        return _parse_space(spec)
    except ValueError as exc:
        msg = str(exc)
        if isinstance(spec, str) and spec not in msg and not msg.startswith("bad SPACE spec"):
            raise ValueError(f"bad SPACE spec {spec!r}: {msg}") from None
        raise


def _parse_space(spec: str) -> "MetricSpace":
    from .. import spaces

    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"bad SPACE spec {spec!r}: expected KIND:PARAMS, one of {SPEC_HELP}")
    kind, body = spec.split(":", 1)
    kind = kind.strip().lower()
    import math

    if kind in ("line", "ring", "clique", "count"):
        (n,) = _ints(spec, body, 1)
        _check_points(spec, math.log10(max(n + (kind == "count"), 1)))
        if kind == "line":
            return spaces.line(n, name=spec)
        if kind == "ring":
            return spaces.ring(n, name=spec)
        if kind == "clique":
            return spaces.clique(n, name=spec)
        from ..queries import count_space

        return count_space(n)
    if kind in ("hamming", "sum", "kcount"):
        a, b = _ints(spec, body, 2)
        log_n = {"hamming": a * math.log10(max(b, 1)), "sum": math.log10(max(a * b + 1, 1)),
                 "kcount": b * math.log10(a + 1)}[kind]
        if kind == "sum":  # a SumLineSpace: matrix-free; each command's guard sizes its own work
            from .guards import SUM_LINE_MAX_ANSWERS

            if a * b + 1 > SUM_LINE_MAX_ANSWERS:
                raise ValueError(f"{spec} has {a * b + 1:,} answers, over the {SUM_LINE_MAX_ANSWERS:,} on which the sum's "
                                 "answer space is built; use a coarser unit (fewer, larger values per individual)")
        else:
            _check_points(spec, log_n)
        if kind == "hamming":
            return spaces.hamming(a, b, name=spec)
        if kind == "sum":
            from ..queries import sum_space

            return sum_space(a, b)
        from ..queries import kcount_space

        return kcount_space(a, b)
    if kind == "grid":
        parts = body.split(":")
        m = re.fullmatch(r"([0-9]+)x([0-9]+)", parts[0], flags=re.ASCII)
        if not m:
            raise ValueError(f"bad SPACE spec {spec!r}: grid needs WxH written with the ASCII digits 0-9 and no "
                             "spaces, e.g. grid:100x100")
        if any(len(g.lstrip("0")) > MAX_DIGITS for g in m.groups()):
            raise ValueError(f"bad SPACE spec {spec[:40]!r}...: a number has more than {MAX_DIGITS} digits")
        metric, step = None, None
        for p in parts[1:]:
            p = p.lower()
            if p in ("euclidean", "manhattan", "chebyshev"):
                if metric is not None:
                    raise ValueError(f"bad SPACE spec {spec!r}: two metrics ({metric} and {p}); give one")
                metric = p
            elif p.startswith("step="):
                if step is not None:
                    raise ValueError(f"bad SPACE spec {spec!r}: step given twice")
                if not _NUMBER.fullmatch(p[5:]):
                    raise ValueError(f"bad SPACE spec {spec!r}: step must be a positive number written with ASCII "
                                     f"digits (e.g. step=0.5 or step=1e3), got {p[5:]!r}")
                step = float(p[5:])
            else:
                raise ValueError(
                    f"bad SPACE spec {spec!r}: unknown grid option {p!r} (expected euclidean, manhattan, chebyshev or step=S)"
                )
        return spaces.grid(int(m.group(1)), int(m.group(2)), metric=metric or "euclidean", step=1.0 if step is None else step)
    if kind == "matrix":
        return spaces.load_matrix(body)
    if kind == "graph":
        return spaces.load_edge_list(body)
    raise ValueError(f"unknown SPACE kind {kind!r} in {spec!r}: expected one of {SPEC_HELP}")
