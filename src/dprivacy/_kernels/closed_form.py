r"""The tight-constraints diagonal of a Manhattan grid in closed form.

Under the Manhattan metric, e^{−ε d} factorizes: Φ[(r, c), (r', c')] = q^{|r−r'|} q^{|c−c'|} with
q = e^{−ε·step}, i.e. Φ = T_H ⊗ T_W (row-major cell order) with T_m = [q^{|i−j|}] the m×m
Kac–Murdock–Szegő matrix. Its inverse is tridiagonal,

.. math:: T_m^{-1} = \frac{1}{1-q^2}\begin{pmatrix}1 & -q \\ -q & 1+q^2 & -q \\ & \ddots & \ddots & \ddots \\ && -q & 1\end{pmatrix},

so T_m⁻¹1 = (1/(1+q), (1−q)/(1+q), …, (1−q)/(1+q), 1/(1+q)) — the diagonal of the truncated geometric
mechanism, the tight-constraints mechanism of a line (seed 000 §6.1) — and
z = Φ⁻¹1 = (T_H⁻¹1) ⊗ (T_W⁻¹1) > 0. Hence a tight-constraints mechanism exists on every Manhattan grid
for every ε > 0 (seed 000 Prop 7), and its threshold is 0.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_epsilon
from ..spaces import GridSpace


def line_diagonal(m: int, q: float) -> np.ndarray:
    """T_m⁻¹ 1 for the m×m matrix T = [q^{|i−j|}] (the truncated geometric mechanism's diagonal)."""
    if m == 1:
        return np.ones(1)
    v = np.full(m, (1.0 - q) / (1.0 + q))
    v[0] = v[-1] = 1.0 / (1.0 + q)
    return v


def manhattan_diagonal(grid: GridSpace, *, epsilon: float) -> np.ndarray:
    """z = Φ⁻¹1 on a Manhattan grid in closed form (see module notes); flat, cell order row·W + col."""
    if not isinstance(grid, GridSpace):
        raise TypeError(f"grid must be a GridSpace, got {type(grid).__name__}")
    if grid.metric != "manhattan":
        raise ValueError(f"the closed form needs the Manhattan metric, the grid has {grid.metric!r}")
    e = check_epsilon(epsilon)
    q = math.exp(-e * grid.step)
    return np.outer(line_diagonal(grid.height, q), line_diagonal(grid.width, q)).ravel()
