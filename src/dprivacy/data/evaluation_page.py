"""The figure and the HTML page of ``dprivacy evaluate``: a map of the true and released points on a land/sea
base layer, the displacement histogram against what the mechanism predicts, and the privacy–utility curve of an
ε sweep with the release marked on it; the page embeds the figure and a small stylesheet (no network).

Both show the true locations: they are for the data owner. The page says so once, at its top; the PNG written
with ``--png``, which can travel without the page, carries the warning in its own title."""

from __future__ import annotations

import html as _html

import numpy as np

#: What the evaluation's figure and page say of themselves: their map draws the true points.
OWNER_ONLY = "CONTAINS THE TRUE LOCATIONS: for the data owner, not for publication"


def land_mask_image(extent: tuple[float, float, float, float], width: int = 900, height: int = 600) -> np.ndarray:
    """A land (1) / sea (0) raster over (lon_min, lon_max, lat_min, lat_max) from the 30″ global mask
    shipped by ``global-land-mask`` (offline), row 0 at the north."""
    from global_land_mask import globe

    lo0, lo1, la0, la1 = extent
    lat, lon = np.meshgrid(np.linspace(la1, la0, height), np.linspace(lo0, lo1, width), indexing="ij")
    return globe.is_land(np.clip(lat, -89.999, 89.999), np.clip(lon, -179.999, 179.999)).astype(float)


#: The colours of the released and the true points (the true ones on top, smaller, another marker).
RELEASED_STYLE = {"s": 16, "c": "#f28e2b", "marker": "o", "alpha": 0.75, "edgecolors": "none"}
TRUE_STYLE = {"s": 7, "c": "#1a1a5e", "marker": "x", "linewidths": 0.7}


def _map(ax, original, released) -> None:
    import matplotlib

    (la0, lo0), (la1, lo1) = original, released
    k = min(la0.size, 1500)
    idx = np.random.default_rng(0).choice(la0.size, size=k, replace=False) if la0.size > k else np.arange(la0.size)
    lats = np.r_[la0[idx], la1[idx]]
    lons = np.r_[lo0[idx], lo1[idx]]
    pad_la = max(0.02, 0.08 * (lats.max() - lats.min()))
    pad_lo = max(0.02, 0.08 * (lons.max() - lons.min()))
    ext = (max(-180, lons.min() - pad_lo), min(180, lons.max() + pad_lo), max(-90, lats.min() - pad_la),
           min(90, lats.max() + pad_la))
    ax.imshow(land_mask_image(ext), extent=ext, cmap=matplotlib.colors.ListedColormap(["#cfe3f3", "#ece6d6"]),
              aspect="auto", interpolation="nearest", vmin=0, vmax=1)
    for i in idx[:300]:
        ax.plot([lo0[i], lo1[i]], [la0[i], la1[i]], color="0.45", lw=0.4, alpha=0.6, zorder=1)
    # the released points first and larger, the true ones on top, smaller and with another marker: both show
    # where they coincide (a grid release puts many true points on one cell centre)
    ax.scatter(lo1[idx], la1[idx], label="released", zorder=2, **RELEASED_STYLE)
    ax.scatter(lo0[idx], la0[idx], label="true", zorder=3, **TRUE_STYLE)
    ax.set_xlim(ext[0], ext[1])
    ax.set_ylim(ext[2], ext[3])
    ax.set_xlabel("longitude (°)")
    ax.set_ylabel("latitude (°)")
    ax.legend(loc="best", fontsize=9, markerscale=1.6, framealpha=0.9)
    shown = f"{k:,} of {la0.size:,} points" if k < la0.size else f"all {la0.size:,} points"
    ax.set_title(f"True and released points ({shown}; grey lines join each to its release; land and sea from "
                 "global-land-mask)", fontsize=9.5)


def _hist(ax, displacement, epsilon_m) -> None:
    from scipy import stats

    d = displacement
    hi = float(np.quantile(d, 0.995)) or float(d.max()) or 1.0
    ax.hist(d[d <= hi], bins=60, density=True, color="#9ecae1", label="measured")
    if epsilon_m:
        r = np.linspace(0, hi, 300)
        ax.plot(r, stats.gamma.pdf(r, a=2, scale=1 / epsilon_m), "k-", lw=1.2, label="predicted: planar Laplace, Gamma(2, 1/ε)")
    ax.axvline(float(d.mean()), color="#d62728", lw=1, ls="--", label=f"measured mean {d.mean():,.0f} m")
    ax.set_xlabel("displacement (m)")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    ax.set_title("Geodesic displacement of the released points", fontsize=9.5)


def _sweep(ax, sweep, at_release=None, measured_mean=None) -> None:
    for name in sorted({r["mechanism"] for r in sweep}):
        rows = [r for r in sweep if r["mechanism"] == name and r.get("exists")]
        if rows:
            ax.plot([r["expected_displacement_m"] for r in rows], [r["adversary_error_m"] for r in rows], "o-", ms=3,
                    label=f"{name}: predicted over the sweep")
    if at_release and at_release.get("exists") and at_release.get("expected_displacement_m"):
        # the release's own mechanism and ε, predicted on the grid: where the release sits on its curve
        ax.plot([at_release["expected_displacement_m"]], [at_release["adversary_error_m"]], "*", ms=13, color="#d62728",
                markeredgecolor="k", markeredgewidth=0.5, zorder=5,
                label=f"this release, predicted ({at_release.get('mechanism')}, ε = {at_release.get('epsilon_per_km', 0):.3g}/km)")
    if measured_mean:
        ax.axvline(measured_mean, color="#d62728", lw=1, ls="--", label=f"this release, measured mean displacement")
    ax.set_xlabel("expected displacement (m): the cost")
    ax.set_ylabel("adversary's expected error (m): the protection")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)
    ax.set_title("Privacy and utility over the ε sweep, on the grid", fontsize=9.5)


def draw(*, original=None, released=None, displacement=None, epsilon_m=None, sweep=None, at_release=None):
    """The matplotlib figure: the map on a row of its own (wide, so that the points can be told apart), the
    displacement histogram and the sweep's curve below it. ``at_release``: the grid measures of the release's
    own mechanism and ε, marked on the sweep's curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lower = [p for p in ("hist", "sweep") if (p == "hist" and displacement is not None) or (p == "sweep" and sweep)]
    has_map = original is not None
    ncols = max(1, len(lower))
    rows = int(has_map) + int(bool(lower))
    heights = ([1.45] if has_map else []) + ([1.0] if lower else [])
    fig = plt.figure(figsize=(12, 5.6 * sum(heights)), layout="constrained")
    gs = fig.add_gridspec(rows, ncols, height_ratios=heights)
    r = 0
    if has_map:
        _map(fig.add_subplot(gs[0, :]), original, released)
        r = 1
    for j, kind in enumerate(lower):
        ax = fig.add_subplot(gs[r, j])
        if kind == "hist":
            _hist(ax, displacement, epsilon_m)
        else:
            mean = float(np.mean(displacement)) if displacement is not None and len(displacement) else None
            _sweep(ax, sweep, at_release, mean)
    return fig


def figure(path, *, title="", owner_mark: bool = True, **kw) -> None:
    """Write :func:`draw`'s figure to ``path`` (a file name or a binary file object) as PNG; with ``owner_mark`` its
    title says that it shows the true locations (:data:`OWNER_ONLY`): a PNG can be passed on without the page that
    says so."""
    import matplotlib.pyplot as plt

    fig = draw(**kw)
    if owner_mark:
        fig.suptitle(f"{title}\n{OWNER_ONLY}" if title else OWNER_ONLY, fontsize=11, color="#b00000", fontweight="bold")
    elif title:
        fig.suptitle(title, fontsize=11)
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)


# -- the page -------------------------------------------------------------------------------------

_CSS = """
:root{--ink:#1f2328;--mute:#59636e;--line:#d1d9e0;--soft:#f6f8fa}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);max-width:1180px;
margin:0 auto;padding:1.5em 1.5em 3em}
h1{font-size:1.6em;margin:.2em 0 .1em}h2{font-size:1.2em;margin:1.6em 0 .5em;padding-bottom:.2em;
border-bottom:1px solid var(--line)}
.sub{color:var(--mute);margin:0 0 1em}
.warn{border:1px solid #e5a0a0;border-left:6px solid #b00000;background:#fdf0f0;padding:.7em 1em;margin:1em 0;
border-radius:4px}
.warn b{color:#b00000}
figure{margin:1em 0}figure img{display:block;width:100%;height:auto;border:1px solid var(--line);border-radius:4px}
figcaption{color:var(--mute);font-size:.9em;margin-top:.4em}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:.92em}
th,td{border:1px solid var(--line);padding:.3em .7em;text-align:left;vertical-align:top}
thead th{background:var(--soft)}tbody th{background:var(--soft);font-weight:600;white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:nth-child(even) td{background:#fbfcfd}
.note{color:var(--mute);font-size:.92em;max-width:60em}
"""

#: Row labels of the page's tables (a key without a label is shown with its underscores as spaces).
LABELS = {
    "rows_skipped": "rows skipped (no coordinates)", "rows_not_released": "rows not released",
    "epsilon_per_metre": "ε per metre", "epsilon_per_km": "ε per km", "epsilon": "ε", "random_source": "random source",
    "prior_vulnerability": "prior vulnerability", "posterior_vulnerability": "posterior vulnerability",
    "min_entropy_leakage_bits": "min-entropy leakage (bits)", "expected_displacement_m": "expected displacement (m)",
    "expected_displacement_m_without_remap": "expected displacement without the remap (m)",
    "adversary_error_m": "adversary's expected error (m)", "grid_note": "grid", "points_used": "points used",
    "points_outside_region": "points outside the region", "exists": "exists",
}


def _label(key: str) -> str:
    return LABELS.get(key, key.replace("_", " "))


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, dict):
        return ", ".join(f"{k} {_fmt(x)}" for k, x in v.items())
    return str(v)


def _cell(v) -> str:
    cls = " class='num'" if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
    return f"<td{cls}>{_html.escape(_fmt(v))}</td>"


def _table(d: dict, skip=()) -> str:
    rows = "".join(f"<tr><th>{_html.escape(_label(k))}</th>{_cell(v)}</tr>" for k, v in d.items()
                   if k not in skip and not isinstance(v, (list, dict)))
    return f"<table><tbody>{rows}</tbody></table>"


def _displacement_table(result: dict) -> str:
    """Measured quantiles of the displacement beside those the mechanism's radial law predicts (when it has one)."""
    meas = result.get("displacement_m") or {}
    pred = result.get("predicted_displacement_m") or {}
    keys = list(meas) + [k for k in pred if k not in meas]
    head = "".join(f"<th>{_html.escape(k)}</th>" for k in keys)
    rows = [("measured", meas)] + ([("predicted (planar Laplace)", pred)] if pred else [])
    body = "".join(f"<tr><th>{name}</th>" + "".join(_cell(d[k]) if k in d else "<td></td>" for k in keys) + "</tr>"
                   for name, d in rows)
    return f"<table><thead><tr><th>metres</th>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_page(result: dict, png_bytes: bytes | None, title: str, subtitle: str = "") -> str:
    """A self-contained HTML page: one warning that it shows the true locations, the figure embedded as base64
    (drawn without a warning of its own), and the figures of ``result`` as tables, with an embedded stylesheet."""
    import base64

    esc = _html.escape
    parts = [f"<h1>{esc(title)}</h1>"]
    if subtitle:
        parts.append(f"<p class='sub'>{esc(subtitle)}</p>")
    parts.append(f"<p class='warn'><b>{esc(OWNER_ONLY)}.</b> The map draws the original points and joins each to its "
                 "release; keep this page with the original data.</p>")
    if png_bytes:
        parts.append("<figure><img alt='map of the true and released points, displacement histogram and sweep' "
                     f"src='data:image/png;base64,{base64.b64encode(png_bytes).decode()}'>"
                     "<figcaption>Released points are orange discs; true points are dark crosses drawn on top.</figcaption>"
                     "</figure>")
    parts.append("<h2>Displacement</h2>" + _displacement_table(result))
    parts.append(_table({k: v for k, v in result.items() if k != "grid"}, skip=("note",)))
    if result.get("note"):
        parts.append(f"<p class='note'>{esc(_sentence(result['note']))}</p>")
    g = result.get("grid")
    if g:
        at = g.get("at_release") or {}
        parts.append("<h2>On the grid</h2>" + _table(at, skip=("note", "distances")))
        for k in ("distances", "note"):
            if at.get(k):
                parts.append(f"<p class='note'>{esc(_sentence(at[k] if k == 'note' else 'Distances are ' + at[k]))}</p>")
        if g.get("prior"):
            parts.append(f"<p class='note'>{esc(_sentence('The prior: ' + str(g['prior'])))}</p>")
        if g.get("sweep"):
            keys = ["mechanism", "epsilon", "expected_displacement_m", "adversary_error_m", "posterior_vulnerability",
                    "min_entropy_leakage_bits"]
            unit = g.get("sweep_unit", "km")
            names = {"epsilon": f"ε per {unit}"}
            head = "".join(f"<th>{esc(names.get(k, _label(k)))}</th>" for k in keys)
            body = "".join("<tr>" + "".join(_cell(r.get(k, "")) for k in keys) + "</tr>" for r in g["sweep"])
            parts.append(f"<h2>Sweep</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            if any(not r.get("exists", True) for r in g["sweep"]):
                parts.append("<p class='note'>An empty row: the mechanism does not exist at that ε on this grid.</p>")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
            f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n")


def _sentence(text: str) -> str:
    text = str(text).strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."
