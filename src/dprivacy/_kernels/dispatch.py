"""Which path a front door takes on a grid (``method="auto"``): one place, one set of crossovers.

The crossovers were measured on this project's machine (2 shared cores; medians of 5 runs, the grid
built afresh each time, ε ∈ {0.5, 1, 3}, Euclidean, Chebyshev and Manhattan grids): the structured
FFT + CG solve of Φ z = 1 is as fast as the dense factorization at 10×10 and faster above (12×12:
0.4–0.6 ms against 1.1–1.6 ms; 16×16: 0.5–0.9 ms against 11–100 ms); for the regularity of a prior the
dense tester keeps up to 12×12 (11×11: 0.4–0.6 ms against 0.5–1.4 ms; 14×14: 1–10 ms against
0.4–1.1 ms). Manhattan grids take their closed form at every size (:mod:`.closed_form`); above the
crossover it is returned as an implicit mechanism. The command line calls the front doors and has no
copy of these numbers.
"""

from __future__ import annotations

#: Grids with more cells than this take the structured path under ``method="auto"``.
STRUCTURED_MIN_CELLS = {"tight": 100, "threshold": 100, "regularity": 144}


def takes_structured(space, kind: str) -> bool:
    """Whether ``method="auto"`` of the front door ``kind`` ("tight", "threshold", "regularity") takes
    the structured grid path on ``space``."""
    from ..spaces import GridSpace

    return isinstance(space, GridSpace) and space.n > STRUCTURED_MIN_CELLS[kind]
