"""Output for people: a short summary of each command's report (rich tables and sentences).

The report dict is the command's ``--json`` object, unchanged; these renderers read it and show what a person
wants first — ε, what was released, what it costs, the guarantee, warnings — with ``None`` as "—", lists
summarised and floats to sensible precision. They show nothing the JSON does not hold (figures computed here, such
as the planar Laplace's displacement at ε, depend on public parameters only), and the data owner's exact counts
only when the command put them in the report (``--owner``). :func:`render` picks the renderer by command name.
"""

from __future__ import annotations

import math

#: Warnings are printed in this style (bold red on a terminal, plain text when piped).
WARN = "bold red"


# -- formatting ---------------------------------------------------------------------------------


def fmt(v, digits: int = 4) -> str:
    """A value for people: None → "—", booleans yes/no, floats to ``digits`` significant digits, integers with
    thousands separators, short lists joined and long ones counted, dicts as "key value" pairs."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "—"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        return f"{v:.{digits}g}"
    if isinstance(v, (list, tuple)):
        if not v:
            return "none"
        if len(v) <= 6 and all(not isinstance(x, (list, tuple, dict)) for x in v):
            return ", ".join(fmt(x, digits) for x in v)
        return f"{len(v):,} values (all under --json)"
    if isinstance(v, dict):
        return "; ".join(f"{k.replace('_', ' ')} {fmt(x, digits)}" for k, x in v.items() if x is not None)
    if hasattr(v, "tolist"):  # a numpy array or scalar
        return fmt(v.tolist(), digits)
    return str(v)


def metres(m) -> str:
    """A distance in metres, in m or km."""
    if m is None or (isinstance(m, float) and not math.isfinite(m)):
        return fmt(m)
    return f"{m / 1000:.3g} km" if abs(m) >= 1000 else f"{m:.3g} m"


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i + len(sep)].strip())
            start = i + len(sep)
    tail = text[start:].strip()
    return parts + ([tail] if tail else [])


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to ". " outside parentheses), with its full stop."""
    return _split(text, ". ")[0].rstrip(". ") + "."


def guarantee_sentence(text: str) -> str:
    """The clause of a release's guarantee that states its bound (the one with e^(…) or exp(…)), else its first
    sentence."""
    for sentence in _split(text, ". "):
        for clause in _split(sentence, "; "):
            if "e^(" in clause or "exp(" in clause:
                clause = clause.rstrip(".; ")
                return clause[0].upper() + clause[1:] + "."
    return first_sentence(text)


class Summary:
    """A titled two-column table of (label, value) rows followed by sentences and warnings."""

    def __init__(self, title: str):
        self.title = title
        self.rows: list[tuple[str, str]] = []
        self.lines: list[tuple[str, str | None]] = []
        self.tables: list = []

    def row(self, label: str, value, digits: int = 4) -> None:
        if value is None or value == "" or value == [] or value == {}:
            return
        self.rows.append((label, value if isinstance(value, str) else fmt(value, digits)))

    def say(self, text: str, style: str | None = None) -> None:
        if text:
            self.lines.append((text, style))

    def warn(self, text: str) -> None:
        self.say(f"WARNING: {text}", WARN)

    def print(self, console=None) -> None:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        console = console or Console()
        console.print(Text(self.title, style="bold"))
        t = Table(show_header=False)
        t.add_column("what", style="bold", no_wrap=True)
        t.add_column("value")
        for label, value in self.rows:
            t.add_row(label, value)
        console.print(t)
        for extra in self.tables:
            console.print(extra)
        # sentences first, warnings last: the line a person reads at the prompt
        for text, style in sorted(self.lines, key=lambda line: line[1] == WARN):
            console.print(Text(text, style=style or ""))


def not_optimal_line(gap, time_limit=None, what: str = "utility") -> str:
    """The one line of an optimal-mechanism run that stopped above its gap."""
    at = f" at the time limit ({fmt(float(time_limit), 3)} s)" if time_limit is not None else ""
    return (f"not optimal: gap {fmt(float(gap), 2)}{at}; the mechanism is private, but its {what} may be up to "
            f"{fmt(100 * float(gap), 2)}% short of the best possible (the relative gap to the solver's bound; raise "
            "--time-limit for a smaller gap)")


def _random_source(s: Summary, rs: dict | None) -> None:
    if not rs:
        return
    s.row("random source", rs.get("generator") or rs.get("mode"))
    if rs.get("release") is False:
        s.warn(rs.get("warning") or "reproducible research mode (seeded): NOT for release")


def _owner(s: Summary, extra: dict | None) -> None:
    """The data owner's exact counts (``--owner``): NOT private, said so."""
    if not extra:
        return
    notes = extra.get("notes") or []
    counts = {k: v for k, v in extra.items() if k not in ("notes", "meaning")}
    s.say("For the data owner only (NOT private, not in the sidecar; never publish): "
          + "; ".join([fmt(counts)] * bool(counts) + list(notes)), WARN)


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


# -- theory -------------------------------------------------------------------------------------


def design(r: dict, title: str) -> Summary:
    s = Summary(f"{r.get('mechanism')} on {r.get('space')} ({r.get('n', 0):,} points) at ε = {fmt(r.get('epsilon'))}")
    ex = r.get("exists")
    s.row("exists", "undecided" if ex is None else ex)
    if r.get("reason"):
        s.say(("Why: " if ex is False else "Note: ") + str(r["reason"]))
    if ex:
        priv = r.get("is_private")
        text = "not decided (spot check only)" if priv is None else fmt(priv)
        if r.get("smallest_epsilon") is not None:
            text += f" (smallest ε {fmt(r['smallest_epsilon'], 6)})"
        s.row("ε·d-private", text)
        s.row("utility (Bayes vulnerability)", r.get("utility"), 6)
        s.row("min-entropy leakage", f"{fmt(r.get('min_entropy_leakage_bits'), 4)} bits")
        s.row("min-capacity", f"{fmt(r.get('min_capacity_bits'), 4)} bits")
    if r.get("method"):
        kind = r.get("objective_kind", "gain")
        s.row("solve", f"{r['method']}: {kind} {fmt(r.get('value'), 6)}, bound {fmt(r.get('bound'), 6)}, relative gap "
              f"{fmt(r.get('gap'), 2)}" + (f", {r['rounds']} rounds" if r.get("rounds") else ""))
    s.row("saved", r.get("saved"))
    s.row("seconds", r.get("seconds"), 3)
    for k in ("privacy_spot_check", "privacy_certificate", "solver"):
        if r.get(k):
            s.say(f"{k.replace('_', ' ').capitalize()}: {r[k]}")
    if r.get("prior_normalised"):
        s.say(r["prior_normalised"] + ".")
    if r.get("underflow"):
        s.warn(r["underflow"])
    if r.get("optimal") is False:
        s.warn(not_optimal_line(r.get("gap"), r.get("time_limit"), "expected loss" if r.get("objective_kind") == "loss"
                                else "utility"))
    return s


def check(r: dict, title: str) -> Summary:
    ok = r.get("is_private")
    s = Summary(f"{'PRIVATE' if ok else 'NOT PRIVATE'}: the channel at ε = {fmt(r.get('epsilon'))} on {r.get('space')}")
    s.row("ε·d-private", ok)
    s.row("smallest ε", r.get("smallest_epsilon"), 6)
    w = r.get("worst")
    if w:
        s.row("tightest pair", f"inputs {w.get('y')} and {w.get('y_prime')}, output {w.get('z')}: log ratio "
              f"{fmt(w.get('log_ratio'), 6)} over distance {fmt(w.get('distance'), 6)}")
    s.row("pairs checked", r.get("pairs_checked"))
    s.row("seconds", r.get("seconds"), 3)
    return s


def leakage(r: dict, title: str) -> Summary:
    s = Summary(f"Leakage of the {r.get('n', 0):,}×{r.get('outputs', 0):,} channel")
    s.row("vulnerability", f"{fmt(r.get('prior_vulnerability'), 6)} before, {fmt(r.get('posterior_vulnerability'), 6)} after")
    s.row("min-entropy", f"{fmt(r.get('min_entropy_bits'))} bits before, {fmt(r.get('conditional_min_entropy_bits'))} after")
    s.row("min-entropy leakage", f"{fmt(r.get('min_entropy_leakage_bits'))} bits")
    s.row("min-capacity", f"{fmt(r.get('min_capacity_bits'))} bits (the leakage's maximum over priors)")
    s.row("seconds", r.get("seconds"), 3)
    if r.get("prior_normalised"):
        s.say(r["prior_normalised"] + ".")
    return s


def threshold(r: dict, title: str) -> Summary:
    s = Summary(f"Tight-constraints threshold on {r.get('space')} ({r.get('n', 0):,} points)")
    if r.get("always_exists"):
        s.row("ε*", "0: the mechanism exists for every ε > 0")
    elif r.get("epsilon_star") is not None:
        b = r.get("bracket")
        s.row("ε*", fmt(r["epsilon_star"], 6) + (f" (certified in ({fmt(b[0], 6)}, {fmt(b[1], 6)}])" if b else ""))
    else:
        s.row("ε*", f"not certified; at most {fmt(r.get('upper_bound'), 6)}")
    s.row("monotone above ε*", "not checked" if r.get("monotone_above") is None else r["monotone_above"])
    if r.get("monotone_failures"):
        s.row("monotonicity failures", r["monotone_failures"])
    s.row("existence tests", r.get("solves"))
    s.row("seconds", r.get("seconds"), 3)
    if r.get("reason"):
        s.say("Why: " + r["reason"])
    return s


def prior(r: dict, title: str) -> Summary:
    s = Summary(f"The prior on {r.get('space')} ({r.get('n', 0):,} points) at ε = {fmt(r.get('epsilon'))}")
    reg = r.get("regular")
    s.row("ε·d-regular", ("undecided" if reg is None else fmt(reg)) + (f" ({r['certainty']})" if r.get("certainty") else ""))
    s.row("margin", r.get("margin"))
    src = r.get("sources") or {}
    s.row("utility bound", None if r.get("utility_bound") is None else
          fmt(r["utility_bound"], 6) + (f" ({src['utility_bound']})" if src.get("utility_bound") else ""))
    s.row("leakage bound", None if r.get("leakage_bound_bits") is None else
          f"{fmt(r['leakage_bound_bits'], 6)} bits" + (f" ({src['leakage_bound_bits']})" if src.get("leakage_bound_bits") else ""))
    for k in ("mu", "gamma", "residual", "error_bound", "negative", "negative_values"):
        if k in r:
            s.row(k.replace("_", " "), r[k])
    s.row("seconds", r.get("seconds"), 3)
    if r.get("prior_normalised"):
        s.say(r["prior_normalised"] + ".")
    if r.get("reason"):
        s.say("Why: " + r["reason"])
    return s


def reproduce(r: dict, title: str) -> Summary:
    s = Summary(f"Reproduction report in {r.get('out')}" + (" (--quick)" if r.get("quick") else ""))
    s.row("claims", f"{r.get('claims', 0)}: {r.get('agrees', 0)} agree, {r.get('differs', 0)} differ, "
          f"{r.get('not_comparable', 0)} not comparable")
    s.row("experiments that failed", r.get("errors"))
    s.row("seconds", r.get("seconds"), 3)
    s.say(f"Open {r.get('out')}/index.html for the tables, figures and each claim's verdict.")
    return s


RENDERERS = {"obfuscate": obfuscate, "evaluate": evaluate, "series": series, "design": design, "check": check,
             "leakage": leakage, "threshold": threshold, "prior": prior, "reproduce": reproduce}


def render(kind: str, report: dict, title: str = "", console=None) -> None:
    """Print the summary of ``report`` (the ``--json`` object of command ``kind``) on stdout."""
    RENDERERS[kind](report, title).print(console)
