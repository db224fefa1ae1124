"""Measuring and drawing regions of regular priors: the convex hull of the corner priors (ElSalamouny et al. 2014 Prop 3,
Def 5) as a fraction of the prior simplex, in the 2-simplex (3 secrets) and in the 3-simplex projected on
its first three coordinates (4 secrets), as ElSalamouny et al. 2014 Fig 2–3 and ElSalamouny et al. 2013 Fig 2–3 draw them.
"""

from __future__ import annotations

import math

import numpy as np

from .claims import Figure
from .figures import pyplot, save_figure
from .registry import Context

#: Vertices of the equilateral projection of the 2-simplex: e_1, e_2, e_3.
_TRI = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])


def _hull_measure(points: np.ndarray) -> float:
    from scipy.spatial import ConvexHull

    return float(ConvexHull(points).volume)


def region_fraction_3(corners: np.ndarray) -> float:
    """Area of the region of regular priors (convex hull of the 3 corner priors, ElSalamouny et al. 2014 Prop 3) as a
    fraction of the area of the simplex; affine maps keep area ratios, so the projection is exact."""
    return _hull_measure(corners @ _TRI) / (math.sqrt(3) / 4)


def region_fraction_4(corners: np.ndarray) -> float:
    """Volume of the region (hull of the 4 corner priors) over the volume of the 3-simplex, both
    projected on the first three coordinates as in ElSalamouny et al. 2014 Fig 3 (the projected simplex has volume 1/6)."""
    return _hull_measure(corners[:, :3]) * 6.0


def simplex_panels(ctx: Context, id: str, where: str, panels, title: str, caption: str, *, paper: str) -> Figure:
    """Four 2-D barycentric panels: the simplex, the region (hull of the corners), the corners, u."""
    from matplotlib.patches import Polygon

    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(8.6, 8.0), dpi=110)
    rows = []
    centre = np.full(3, 1 / 3) @ _TRI
    for ax, (ptitle, corners, frac) in zip(axes.flat, panels):
        ax.add_patch(Polygon(_TRI, closed=True, fill=False, edgecolor="0.35", lw=1.0, label="all priors (simplex)"))
        xy = corners @ _TRI
        ax.add_patch(Polygon(xy, closed=True, facecolor="tab:blue", alpha=0.35, edgecolor="tab:blue", lw=1.2,
                             label="regular priors (hull of the corners)"))
        ax.plot(xy[:, 0], xy[:, 1], "o", color="tab:blue", ms=4, label="corner priors c$^y$")
        ax.plot(*centre, "x", color="k", ms=6, label="uniform prior")
        for k, p in enumerate(xy):
            d = p - centre
            d = d / (np.linalg.norm(d) or 1.0)
            ax.annotate(f"c$^{k + 1}$", p, xytext=(12 * d[0] - 4, 12 * d[1] - 4), textcoords="offset points", fontsize=9,
                        color="tab:blue")
        for k, (vx, vy) in enumerate(_TRI):
            lab = ["π=(1,0,0)", "π=(0,1,0)", "π=(0,0,1)"][k]
            ax.annotate(lab, (vx, vy), xytext=[(-20, -14), (-20, -14), (-22, 6)][k], textcoords="offset points", fontsize=8)
        ax.set_xlim(-0.12, 1.12)
        ax.set_ylim(-0.12, 0.98)
        ax.set_aspect("equal")
        ax.set_xlabel("π₂ + π₃/2", fontsize=8)
        ax.set_ylabel("(√3/2)·π₃", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_title(f"{ptitle}: region = {100 * frac:.1f}% of the simplex", fontsize=9)
        for k, c in enumerate(corners):
            rows.append((ptitle, f"c{k + 1}", *c, *(c @ _TRI), frac))
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return save_figure(ctx, fig, id=id, paper=paper, where=where, caption=caption,
                       csv_header=["panel", "corner", "pi1", "pi2", "pi3", "x", "y", "area fraction"],
                       csv_columns=list(zip(*rows)))


def tetra_panels(ctx: Context, id: str, where: str, panels, title: str, caption: str, *, paper: str) -> Figure:
    """2×2 3-D panels: the projected 3-simplex (wireframe) and the projected region of regular priors."""
    from itertools import combinations

    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    plt = pyplot()
    fig = plt.figure(figsize=(8.8, 8.4), dpi=110)
    simplex = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0, 0, 0]])
    rows = []
    for k, (ptitle, corners, frac) in enumerate(panels):
        ax = fig.add_subplot(2, 2, k + 1, projection="3d")
        for a, b in combinations(range(4), 2):
            ax.plot(*simplex[[a, b]].T, color="0.5", lw=0.8, ls="--")
        pts = corners[:, :3]
        faces = [pts[list(f)] for f in combinations(range(4), 3)]
        ax.add_collection3d(Poly3DCollection(faces, facecolor="tab:orange", alpha=0.35, edgecolor="tab:red", lw=0.8))
        ax.scatter(*pts.T, color="tab:red", s=10)
        ax.scatter([0.25], [0.25], [0.25], color="k", marker="x", s=20)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_zlim(0, 1)
        ax.set_xlabel("π₁", fontsize=8)
        ax.set_ylabel("π₂", fontsize=8)
        ax.set_zlabel("π₃", fontsize=8)
        ax.tick_params(labelsize=6)
        ax.view_init(elev=22, azim=40)
        ax.set_title(f"{ptitle}\nregion = {100 * frac:.2f}% of the simplex volume", fontsize=9)
        for j, c in enumerate(corners):
            rows.append((ptitle, f"c{j + 1}", *c, frac))
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig.legend(handles=[Line2D([], [], color="0.5", ls="--", label="all priors (projected 3-simplex)"),
                        Patch(facecolor="tab:orange", alpha=0.35, edgecolor="tab:red", label="regular priors"),
                        Line2D([], [], color="k", marker="x", ls="", label="uniform prior")],
               loc="lower center", ncol=3, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    return save_figure(ctx, fig, id=id, paper=paper, where=where, caption=caption,
                       csv_header=["panel", "corner", "pi1", "pi2", "pi3", "pi4", "volume fraction"],
                       csv_columns=list(zip(*rows)))
