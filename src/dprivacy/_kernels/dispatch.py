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

#: Sum lines (:class:`~dprivacy.spaces.SumLineSpace`) with more answers than this take the matrix-free
#: sum-line path (:mod:`.sum_line`): measured 0.5 ms against 1.2 ms dense at 91 answers, 1.4 ms against
#: 74 ms at 751, 1.5 ms against 530 ms at 2,001 (tight-constraints, ε ∈ {1, 3}; the same decisions as the
#: dense solver on 125 cases of Δ = 3..10 and ε = 0.05..6, including those where Φ is not positive definite).
SUM_LINE_MIN_ANSWERS = 90

#: ... and when the sum-line certificates cannot decide (Φ not certified positive definite and no Farkas
#: certificate: e.g. sum:4,100 near its threshold), the dense certified solve decides instead up to this
#: many answers (about 0.5 s for the tight-constraints solve at 2,001, 3 s for a threshold search).
SUM_LINE_DENSE_FALLBACK = 2000


def takes_structured(space, kind: str) -> bool:
    """Whether ``method="auto"`` of the front door ``kind`` ("tight", "threshold", "regularity") takes
    the structured path on ``space``: the grid solver on a :class:`~dprivacy.spaces.GridSpace`, the
    sum-line solver on a :class:`~dprivacy.spaces.SumLineSpace`."""
    from ..spaces import GridSpace, SumLineSpace

    if isinstance(space, SumLineSpace):
        return space.n > SUM_LINE_MIN_ANSWERS
    return isinstance(space, GridSpace) and space.n > STRUCTURED_MIN_CELLS[kind]
