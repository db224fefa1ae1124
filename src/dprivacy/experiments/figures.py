"""Writing figure data (CSV) and plots (PNG) for the report, with labelled axes and legends."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

import numpy as np

from .claims import Figure
from .registry import Context


def save_csv(ctx: Context, name: str, header: Sequence[str], columns: Sequence[Sequence]) -> Path:
    """Write columns (equal length; None for a missing value) to ``name`` under the report folder."""
    path = ctx.path(name)
    n = max(len(c) for c in columns)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for i in range(n):
            w.writerow(["" if i >= len(c) or c[i] is None or (isinstance(c[i], float) and np.isnan(c[i])) else c[i] for c in columns])
    return path


def line_plot(
    ctx: Context,
    *,
    id: str,
    paper: str,
    where: str,
    x: Sequence[float],
    series: dict[str, Sequence[float | None]],
    xlabel: str,
    ylabel: str,
    title: str,
    caption: str,
    markers: bool = True,
    logy: bool = False,
) -> Figure:
    """A line plot of several series over ``x``; None/NaN values are gaps (e.g. a mechanism that does
    not exist there), never plotted as zeros. Writes ``<id>.png`` and ``<id>.csv``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.asarray(x, dtype=float)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for label, ys in series.items():
        y = np.array([np.nan if v is None else v for v in ys], dtype=float)
        ax.plot(x, y, marker="o" if markers else None, markersize=3, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = ctx.path(f"{id}.png")
    fig.savefig(png)
    plt.close(fig)
    csv_path = save_csv(ctx, f"{id}.csv", [xlabel] + list(series), [list(x)] + [list(v) for v in series.values()])
    return Figure(id, paper, where, png.name, csv_path.name, caption)
