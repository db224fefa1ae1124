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
    from .spaces import MetricSpace

SPEC_HELP = (
    "line:N, ring:N, clique:N, grid:WxH[:euclidean|manhattan|chebyshev][:step=S], hamming:U,V, "
    "count:U, sum:U,V, kcount:U,K, matrix:PATH, graph:PATH"
)


def _ints(spec: str, body: str, count: int) -> list[int]:
    parts = body.split(",")
    if len(parts) != count or not all(re.fullmatch(r"\d+", p.strip()) for p in parts):
        want = ",".join("N" * 1 for _ in range(count))
        raise ValueError(f"bad SPACE spec {spec!r}: expected {count} positive integer(s) after the colon ({want})")
    return [int(p) for p in parts]


def parse_space(spec: str) -> "MetricSpace":
    """Build the metric space a SPACE spec names (see the module docstring), unscaled.

    Raises
    ------
    ValueError
        For an unknown kind or malformed parameters; the message lists the accepted specs.
    """
    from . import spaces

    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"bad SPACE spec {spec!r}: expected KIND:PARAMS, one of {SPEC_HELP}")
    kind, body = spec.split(":", 1)
    kind = kind.strip().lower()
    if kind in ("line", "ring", "clique", "count"):
        (n,) = _ints(spec, body, 1)
        if kind == "line":
            return spaces.line(n, name=spec)
        if kind == "ring":
            return spaces.ring(n, name=spec)
        if kind == "clique":
            return spaces.clique(n, name=spec)
        from .queries import count_space

        return count_space(n)
    if kind in ("hamming", "sum", "kcount"):
        a, b = _ints(spec, body, 2)
        if kind == "hamming":
            return spaces.hamming(a, b, name=spec)
        if kind == "sum":
            from .queries import sum_space

            return sum_space(a, b)
        from .queries import kcount_space

        return kcount_space(a, b)
    if kind == "grid":
        parts = body.split(":")
        m = re.fullmatch(r"(\d+)x(\d+)", parts[0].strip())
        if not m:
            raise ValueError(f"bad SPACE spec {spec!r}: grid needs WxH, e.g. grid:100x100")
        metric, step = "euclidean", 1.0
        for p in parts[1:]:
            p = p.strip().lower()
            if p in ("euclidean", "manhattan", "chebyshev"):
                metric = p
            elif p.startswith("step="):
                try:
                    step = float(p[5:])
                except ValueError:
                    raise ValueError(f"bad SPACE spec {spec!r}: step must be a number, got {p[5:]!r}") from None
            else:
                raise ValueError(
                    f"bad SPACE spec {spec!r}: unknown grid option {p!r} (expected euclidean, manhattan, chebyshev or step=S)"
                )
        return spaces.grid(int(m.group(1)), int(m.group(2)), metric=metric, step=step)
    if kind == "matrix":
        return spaces.load_matrix(body)
    if kind == "graph":
        return spaces.load_edge_list(body)
    raise ValueError(f"unknown SPACE kind {kind!r} in {spec!r}: expected one of {SPEC_HELP}")
