"""Output for people: a short summary of each command's report (rich tables and sentences).

The report dict is the command's ``--json`` object, unchanged; these renderers read it and show what a person
wants first — ε, what was released, what it costs, the guarantee, warnings — with ``None`` as "—", lists
summarised and floats to sensible precision. They show nothing the JSON does not hold (figures computed here, such
as the planar Laplace's displacement at ε, depend on public parameters only), and the data owner's exact counts
only when the command put them in the report (``--owner``). :func:`render` picks the renderer by command name.
"""

from __future__ import annotations

from .render_theory import check, design, leakage, prior, reproduce, threshold
from .summary import Summary, fmt, guarantee_sentence, metres, not_optimal_line
from .summary import _owner, _random_source

# -- locations ----------------------------------------------------------------------------------


def obfuscate(r: dict, title: str) -> Summary:
    s = Summary(f"Released {r.get('rows_written', 0):,} points to {r.get('output')}")
    eps, unit, em = r.get("epsilon"), r.get("unit", "km"), r.get("epsilon_per_metre")
    s.row("ε", f"{fmt(eps)} per {unit}" + (f" (from --accuracy {r['accuracy']})" if r.get("accuracy") else ""))
    s.row("mechanism", r.get("mechanism"))
    rows = [f"{r.get('rows_read', 0):,} read", f"{r.get('rows_written', 0):,} written"]
    if r.get("rows_rejected"):
        rows.append(f"{r['rows_rejected']:,} skipped as invalid" + (f" (first: {r['first_rejected']})"
                                                                     if r.get("first_rejected") else ""))
    if r.get("rows_suppressed"):
        rows.append(f"{r['rows_suppressed']:,} suppressed by the per-user budget")
    s.row("rows", ", ".join(rows))
    g = r.get("grid") or {}
    if g.get("grid"):
        gg = g["grid"]
        s.row("grid", f"{gg.get('width')}×{gg.get('height')} cells of {metres(gg.get('cell_m'))}; prior {g.get('prior', '—')}")
    if em and not g:
        from ..data.locations import displacement_quantiles

        q = displacement_quantiles(float(em))
        s.row("expected displacement", f"mean {metres(q['mean'])}, median {metres(q['p50'])}, 95% within "
              f"{metres(q['p95'])} (the planar Laplace law at this ε)")
    elif em and "planar-laplace" in str(r.get("mechanism")):
        from ..data.locations import displacement_quantiles

        q = displacement_quantiles(float(em))
        s.row("expected displacement", f"the continuous law at this ε: mean {metres(q['mean'])}, 95% within "
              f"{metres(q['p95'])}; the snap to cell centres (and a remap) change it: dprivacy evaluate measures it")
    elif g:
        s.row("expected displacement", "measure it with dprivacy evaluate (the grid mechanism's own law)")
    if r.get("budget"):
        s.row("budget", r["budget"])
    if r.get("shuffled"):
        s.row("row order", "shuffled")
    if r.get("coords") and r["coords"] != "degrees":
        s.row("coordinates", r["coords"])
    _random_source(s, r.get("random_source"))
    s.row("sidecar", r.get("sidecar"))
    s.row("seconds", r.get("seconds"), 3)
    if r.get("guarantee"):
        s.say("Guarantee: " + guarantee_sentence(r["guarantee"])[:-1] + " (the full statement is in the sidecar).")
    if g.get("prior_normalised"):
        s.say(g["prior_normalised"] + ".")
    opt = g.get("optimal") or {}
    if opt.get("optimal") is False:
        s.warn(not_optimal_line(opt.get("gap"), opt.get("time_limit_s") if opt.get("stopped_by_time_limit") else None))
    seeded = (r.get("random_source") or {}).get("release") is False
    for note in r.get("notes") or []:
        if not (seeded and "seeded" in note):
            s.say("Note: " + note)
    _owner(s, r.get("not_private"))
    return s


def evaluate(r: dict, title: str) -> Summary:
    from rich.table import Table

    s = Summary(f"What the release {r.get('released')} of {r.get('original')} costs and protects")
    if r.get("epsilon_per_metre"):
        s.row("ε", f"{fmt(r['epsilon_per_metre'] * 1000)} per km")
    s.row("mechanism", r.get("mechanism"))
    rows = [f"{r.get('rows', 0):,} compared"]
    for k, label in (("rows_skipped", "skipped"), ("rows_not_released", "not in the release")):
        if r.get(k):
            rows.append(f"{r[k]:,} {label}")
    s.row("rows", ", ".join(rows))
    d, p = r.get("displacement_m") or {}, r.get("predicted_displacement_m") or {}
    if d:
        t = Table(title="Displacement", title_justify="left", title_style="bold")
        t.add_column("")
        for k in d:
            t.add_column({"p50": "median"}.get(k, k), justify="right")
        t.add_row("measured", *(metres(d[k]) for k in d))
        if p:
            t.add_row("predicted", *(metres(p[k]) if k in p else "—" for k in d))
        s.tables.append(t)
    g = r.get("grid")
    if isinstance(g, dict):
        gg = g.get("grid") or {}
        s.row("grid", f"{gg.get('width')}×{gg.get('height')} cells of {metres(gg.get('cell_m'))}")
        s.row("adversary's prior", g.get("prior"))
        m = g.get("at_release") or {}
        if m.get("exists"):
            s.row("adversary's chance of the cell", f"{fmt(m.get('prior_vulnerability'))} before, "
                  f"{fmt(m.get('posterior_vulnerability'))} after ({fmt(m.get('min_entropy_leakage_bits'), 3)} bits leaked)")
            s.row("expected displacement (grid)", metres(m.get("expected_displacement_m")))
            s.row("adversary's expected error", metres(m.get("adversary_error_m")))
        elif m.get("reason") or m.get("skipped"):
            s.say("Grid measures: " + str(m.get("reason") or m.get("skipped")))
        if m.get("optimal") is False:
            s.warn(not_optimal_line(m.get("gap"), None))
        sweep = g.get("sweep") or []
        if sweep:
            t = Table(title=f"Sweep (ε per {g.get('sweep_unit', 'km')})", title_justify="left", title_style="bold")
            for c in ("ε", "mechanism", "leakage (bits)", "displacement", "adversary's error"):
                t.add_column(c, justify="left" if c == "mechanism" else "right", overflow="fold")
            for row in sweep:
                if not row.get("exists"):
                    t.add_row(fmt(row.get("epsilon")), row.get("mechanism", ""), "—", "—",
                              "does not exist" if row.get("exists") is False else "—")
                    continue
                t.add_row(fmt(row.get("epsilon")), row.get("mechanism", "") + (" (not optimal)" if row.get("optimal") is False
                                                                               else ""),
                          fmt(row.get("min_entropy_leakage_bits"), 3), metres(row.get("expected_displacement_m")),
                          metres(row.get("adversary_error_m")))
            s.tables.append(t)
            for row in sweep:
                if row.get("optimal") is False:
                    s.warn(f"ε {fmt(row.get('epsilon'))}: " + not_optimal_line(row.get("gap")))
    elif g:
        s.row("grid", g)
    outputs = [r[k] for k in ("png", "html") if r.get(k)]
    s.row("wrote", ", ".join(outputs))
    _random_source(s, r.get("random_source"))
    for note in r.get("notes") or []:
        if "TRUE LOCATIONS" not in note and "true locations" not in note:
            s.say("Note: " + note)
    if outputs:
        s.warn(f"{' and '.join(outputs)} show{'s' * (len(outputs) == 1)} the true locations: for the data owner, not "
               "for publication.")
    return s


def series(r: dict, title: str) -> Summary:
    s = Summary(f"Released {r.get('readings', 0):,} readings of {r.get('column')} to {r.get('output')}")
    unit = r.get("unit")
    per = f" per {fmt(unit)} of reading" if unit not in (None, 1, 1.0) else " per unit of reading"
    s.row("ε", f"{fmt(r.get('epsilon'))}{per}, metric {r.get('metric')}"
          + (f" ({fmt(r.get('epsilon_per_reading'))} per reading)" if r.get("metric") == "dinf" else ""))
    rows = [f"{r.get('readings', 0):,} released"]
    if r.get("skipped_invalid"):
        rows.append(f"{r['skipped_invalid']:,} skipped as invalid")
    s.row("readings", ", ".join(rows))
    if r.get("time_column") is not None and r.get("time_read_as"):
        s.row("times", f"{r['time_column']}: {r['time_read_as']}")
    if r.get("expected_abs_error") is not None:
        s.row("noise per reading", f"expected |error| {fmt(r['expected_abs_error'])}, within ±{fmt(r.get('within'))} "
              f"with probability {fmt(r.get('confidence', 0.95) * 100, 3)}%")
    agg = r.get("aggregates") or []
    if agg:
        sds = [a.get("mean_noise_sd") for a in agg if a.get("mean_noise_sd") is not None]
        s.row(f"per {r.get('per')}", f"{len(agg):,} period{'s' * (len(agg) != 1)}" + (f"; noise sd of the period means {fmt(min(sds))} .. "
                                                               f"{fmt(max(sds))}" if sds else "") + " (all in the sidecar)")
    _random_source(s, r.get("random_source"))
    s.row("sidecar", r.get("sidecar"))
    s.row("seconds", r.get("seconds"), 3)
    if r.get("guarantee"):
        s.say("Guarantee: " + guarantee_sentence(r["guarantee"]))
    return s


RENDERERS = {"obfuscate": obfuscate, "evaluate": evaluate, "series": series, "design": design, "check": check,
             "leakage": leakage, "threshold": threshold, "prior": prior, "reproduce": reproduce}


def render(kind: str, report: dict, title: str = "", console=None) -> None:
    """Print the summary of ``report`` (the ``--json`` object of command ``kind``) on stdout."""
    RENDERERS[kind](report, title).print(console)
