"""Writing figure data (CSV) and plots (PNG) for the report, with labelled axes and legends: one line plot
(:func:`line_plot`), one with a style per series and marked values (:func:`curves`), several side by side
(:func:`panel_plot`)."""

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


def save_figure(ctx: Context, fig, *, id: str, paper: str, where: str, caption: str, csv_header: Sequence[str],
                csv_columns: Sequence[Sequence]) -> Figure:
    """Write the matplotlib figure ``fig`` to ``<id>.png`` (and close it) and its data to ``<id>.csv``: the
    report's :class:`~dprivacy.experiments.claims.Figure`."""
    png = ctx.path(f"{id}.png")
    fig.savefig(png, dpi=max(fig.dpi, 150))  # drawn at the full width of the page: sharp at about 1,000 px
    pyplot().close(fig)
    csv_path = save_csv(ctx, f"{id}.csv", csv_header, csv_columns)
    return Figure(id, paper, where, png.name, csv_path.name, caption)


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
    plt = pyplot()
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
    return save_figure(ctx, fig, id=id, paper=paper, where=where, caption=caption, csv_header=[xlabel] + list(series),
                       csv_columns=[list(x)] + [list(v) for v in series.values()])


def curves(ctx: Context, *, id: str, where: str, x, series: dict, xlabel: str, ylabel: str, title: str,
            caption: str, paper: str, vlines: dict | None = None) -> Figure:
    """Line plot where each series has its own style: ``series[label] = (ys, style_dict)``; None is a
    gap (a mechanism that does not exist there). ``vlines``: label → x of a labelled vertical line."""
    plt = pyplot()
    x = np.asarray(x, dtype=float)
    fig, ax = plt.subplots(figsize=(7.0, 4.6), dpi=110)
    for label, (ys, style) in series.items():
        y = np.array([np.nan if v is None else v for v in ys], dtype=float)
        ax.plot(x, y, label=label, **{"marker": "o", "markersize": 3, **style})
    for i, (label, xv) in enumerate((vlines or {}).items()):
        ax.axvline(xv, color="0.4", lw=0.8, ls=":")
        ax.annotate(label, (xv, 0.02 + 0.4 * i), xycoords=("data", "axes fraction"), rotation=90, fontsize=7,
                    color="0.3", xytext=(3, 0), textcoords="offset points", va="bottom")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7.5)
    fig.tight_layout()
    return save_figure(ctx, fig, id=id, paper=paper, where=where, caption=caption, csv_header=[xlabel] + list(series),
                       csv_columns=[list(x)] + [list(v[0]) for v in series.values()])


def panel_plot(ctx: Context, *, id: str, paper: str, where: str, caption: str, title: str, panels: list[dict],
               csv_header: list[str], csv_columns: list) -> Figure:
    """Draw ``panels`` (dicts: x, series {label: ys or (xs, ys, style)}, xlabel, ylabel, title, logy,
    ylim) side by side; write ``<id>.png`` and ``<id>.csv`` (the given columns)."""
    plt = pyplot()
    width = 5.6 * len(panels) if len(panels) > 1 else 7.0
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 4.4), dpi=110, squeeze=False)
    for ax, pan in zip(axes[0], panels):
        for label, s in pan["series"].items():
            if isinstance(s, dict):
                xs = np.asarray(s.get("x", pan.get("x")), dtype=float)
                ys = np.array([np.nan if v is None else v for v in s["y"]], dtype=float)
                ax.plot(xs, ys, label=label, **s.get("style", {}))
            else:
                ax.plot(np.asarray(pan["x"], dtype=float), np.asarray(s, dtype=float), label=label)
        ax.set_xlabel(pan["xlabel"])
        ax.set_ylabel(pan["ylabel"])
        ax.set_title(pan["title"], fontsize=10)
        if pan.get("logy"):
            ax.set_yscale("log")
        if pan.get("logx"):
            ax.set_xscale("log")
        if pan.get("ylim"):
            ax.set_ylim(*pan["ylim"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7.5, loc=pan.get("legend_loc", "best"))
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return save_figure(ctx, fig, id=id, paper=paper, where=where, caption=caption, csv_header=csv_header,
                       csv_columns=csv_columns)


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
