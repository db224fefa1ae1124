"""Summaries for people of ``design``, ``check``, ``leakage``, ``threshold``, ``prior`` and ``reproduce`` (see
:mod:`.render`)."""

from __future__ import annotations

from .summary import Summary, fmt, not_optimal_line

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
