"""Chatzikokolakis et al. 2013 (Chatzikokolakis, Andrés, Bordenabe, Palamidessi, PETS 2013) on its metrics: the Laplace mechanism
instantiated on the metrics of Fig 2 (ℝ, ℝ² with the Euclidean and the Manhattan metric, the truncated geometric
on a line) and on the plane for geolocation (§6.2), and the facts about the database metrics of §3 and §5
(d_r against d_h, Prop 3–5, the sensitivities of sum). The other experiments of the paper are :mod:`.seed002`
and :mod:`.seed002_tables`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import measures, queries, spaces
from ..channels import Channel
from ..mechanisms.geometric import truncated_geometric
from ..mechanisms.laplace import laplace_channel, laplace_sample
from ..mechanisms.planar_laplace import planar_laplace_channel, planar_laplace_sample
from .claims import Claim
from .figures import panel_plot
from .registry import PAPERS, Context, Outcome, experiment
from .seed002 import _CASES, LN2, SEED, _case_name, _query_answers

P = PAPERS["002"]


# ---------------------------------------------------------------------------------------------
# Fig 2 and §6.2: the Laplace instantiations, geolocation
# ---------------------------------------------------------------------------------------------


def _ks(samples: np.ndarray, cdf) -> float:
    s = np.sort(samples)
    n = s.size
    f = cdf(s)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


@experiment("002-fig2-geo", "002", "Fig 2 and §6.2: Laplace on ℝ, ℝ² (Euclidean, Manhattan), truncated geometric; planar Laplace")
def fig2_geo(ctx: Context) -> Outcome:
    claims = []
    # (iv) TG_ε on q[0..k]: D(y)(z) = λ(z) e^{−ε|y−z|}, λ = e^{qε}/(e^{qε}+1) at the ends and (e^{qε}−1)/(e^{qε}+1)
    # inside (the text's "\epsilon^{q\epsilon}" is e^{qε}).
    worst = 0.0
    for q, k, e in ((1.0, 5, LN2), (0.5, 6, 1.0), (2.0, 4, 0.3)):
        sp = spaces.line(k + 1, step=q)
        h = truncated_geometric(sp, epsilon=e).matrix
        z = np.arange(k + 1) * q
        lam = np.where((z == 0) | (z == q * k), math.exp(q * e) / (math.exp(q * e) + 1), (math.exp(q * e) - 1) / (math.exp(q * e) + 1))
        worst = max(worst, float(np.abs(h - lam[None, :] * np.exp(-e * np.abs(z[:, None] - z[None, :]))).max()))
    claims.append(Claim("002-fig2-iv", P, "Fig 2 (iv): TG_ε entries = λ_ε(z)e^{−ε|y−z|} (max |difference|)", 0.0, worst, 1e-12,
                        note="truncated_geometric on q[0..k] for (q, k, ε) ∈ {(1, 5, ln 2), (0.5, 6, 1), (2, 4, 0.3)}."))

    n = 20_000 if ctx.quick else 200_000
    eps = 0.5
    ks_tol = 1.95 / math.sqrt(n)  # Kolmogorov–Smirnov 0.1% critical value
    # (i) λ = ε/2 on ℝ: the sampler's law vs the CDF of (ε/2)e^{−ε|t|}.
    t = laplace_sample(np.zeros(n), epsilon=eps, rng=SEED, method="textbook")
    ks1 = _ks(t, lambda s: np.where(s < 0, 0.5 * np.exp(eps * s), 1 - 0.5 * np.exp(-eps * s)))
    # (ii) λ = ε²/2π with d_2: the radius has density 2πr·λe^{−εr} = ε²re^{−εr}, CDF 1 − (1 + εr)e^{−εr}.
    def radial(r):
        return 1 - (1 + eps * r) * np.exp(-eps * r)

    pts = planar_laplace_sample(np.zeros((n, 2)), epsilon=eps, rng=SEED + 1)
    r2 = np.hypot(pts[:, 0], pts[:, 1])
    ks2 = _ks(r2, radial)
    # (iii) λ = ε²/4 with d_1: the product of two independent 1-D Laplace(1/ε); its d_1 radius |t1| + |t2| has
    # density 4ρ·(ε²/4)e^{−ερ} = ε²ρe^{−ερ} (the d_1 "circle" of radius ρ has length 4ρ√2, density along it
    # per unit ρ is 4ρ), the same law as (ii).
    pair = laplace_sample(np.zeros((n, 2)), epsilon=eps, rng=SEED + 2, method="textbook")
    r1 = np.abs(pair).sum(axis=1)
    ks3 = _ks(r1, radial)
    claims += [
        Claim("002-fig2-i", P, "Fig 2 (i): λ = ε/2 on ℝ — KS distance of laplace_sample to the law it defines", 0.0, ks1, ks_tol,
              note=f"{n} seeded draws at ε = {eps}; tolerance: KS critical value at level 0.1% (1.95/√N)."),
        Claim("002-fig2-ii", P, "Fig 2 (ii) / §6.2: λ = ε²/2π with d_2 — KS distance of planar_laplace_sample's radius to "
              "1 − (1 + εr)e^{−εr}", 0.0, ks2, ks_tol),
        Claim("002-fig2-iii", P, "Fig 2 (iii): λ = ε²/4 with d_1 — KS distance of the d_1 norm of two laplace_sample "
              "coordinates to 1 − (1 + εr)e^{−εr}", 0.0, ks3, ks_tol),
        Claim("002-fig2-ii-mean", P, "§6.2: mean distance of the planar Laplace report, 2/ε (from λ = ε²/2π; not printed)",
              2 / eps, float(r2.mean()), 5 * math.sqrt(2) / eps / math.sqrt(n),
              note="E r = 2/ε and sd √2/ε for the Gamma(2, 1/ε) radius; tolerance 5 standard errors."),
    ]
    # Fact 7 after discretization: the planar Laplace grid channel is ε·d_2-private between cell centres.
    g = spaces.grid(6, 6, metric="euclidean")
    ch = planar_laplace_channel(g, epsilon=eps)
    pr = measures.check_privacy(ch, g, epsilon=eps)
    # (iii) on a Manhattan grid: the product of two 1-D discretized Laplace channels.
    h1 = laplace_channel(spaces.line(6), epsilon=eps).matrix
    gm = spaces.grid(6, 6, metric="manhattan")
    prm = measures.check_privacy(Channel(np.kron(h1, h1)), gm, epsilon=eps)
    claims += [
        Claim("002-fact7-planar", P, "Fact 7, §6.2: the planar Laplace on a 6×6 grid is ε·d_2-private", True, pr.ok,
              note=f"ε = {eps}; smallest ε of the channel {pr.smallest_epsilon:.6g} (discretization cannot increase it)."),
        Claim("002-fact7-manhattan", P, "Fact 7, Fig 2 (iii): two independent 1-D Laplace on a 6×6 grid are ε·d_1-private",
              True, prm.ok, note=f"ε = {eps}; smallest ε {prm.smallest_epsilon:.6g}."),
    ]
    rr = np.linspace(0, 12 / eps, 49)
    srt2, srt1 = np.sort(r2), np.sort(r1)
    fig = panel_plot(
        ctx, id="002-fig2-radial", paper=P, where="Fig 2 (ii)–(iii), §6.2",
        title="Chatzikokolakis et al. 2013 Fig 2 (ii)/(iii): distance of the 2-D Laplace report",
        caption=(f"CDF of the d_2 distance of planar_laplace_sample and of the d_1 distance of two independent 1-D laplace_sample "
                 f"draws (ε = {eps}, {n} draws each) against 1 − (1 + εr)e^{{−εr}}, the law implied by λ = ε²/2π (d_2) and λ = ε²/4 (d_1)."),
        panels=[dict(x=rr, series={
            "1 − (1 + εr)·exp(−εr) (from Fig 2's λ)": {"y": radial(rr), "style": dict(color="black", lw=2)},
            "planar Laplace, d_2 distance (sampled)": {"y": np.searchsorted(srt2, rr, side="right") / n,
                                                       "style": dict(color="tab:orange", linestyle="--", marker="o", markersize=3)},
            "two 1-D Laplace, d_1 distance (sampled)": {"y": np.searchsorted(srt1, rr, side="right") / n,
                                                        "style": dict(color="tab:green", linestyle=":", marker="s", markersize=3)}},
            xlabel="r (distance units)", ylabel="P[distance ≤ r]", title=f"ε = {eps}", legend_loc="lower right")],
        csv_header=["r", "formula", "planar d_2 empirical", "manhattan d_1 empirical"],
        csv_columns=[list(rr), list(radial(rr)), list(np.searchsorted(srt2, rr, side="right") / n),
                     list(np.searchsorted(srt1, rr, side="right") / n)],
    )
    return Outcome(claims, [fig])


# ---------------------------------------------------------------------------------------------
# §3 and §5: the metrics (Prop 3, d_r, Prop 4–5, §5.2)
# ---------------------------------------------------------------------------------------------


@experiment("002-metrics", "002", "§3, §5: d_r vs d_h, Prop 3 (d̃_1 ≤ d_h), Prop 4–5 (class C), sensitivities of sum")
def metrics(ctx: Context) -> Outcome:
    claims = []
    u, q, k = 2, 1.0, 3
    U = queries.universe(u, [q * i for i in range(k + 1)], null=True)
    dh = U.hamming().distances
    nd1 = U.manhattan(normalized=True).distances
    claims.append(Claim("002-prop3", P, "Prop 3: d̃_1 ≤ d_h (max of d̃_1 − d_h over all database pairs ≤ 0)", True,
                        bool((nd1 - dh).max() <= 1e-12), note=f"universe {_case_name(u, q, k)}; max d̃_1 − d_h = {(nd1 - dh).max():.3g}."))
    # §3: x ~_r x' iff x' is x with one individual removed (set to ∅); ½ d_r ≤ d_h ≤ d_r. The universe V_∅^u
    # with the empty database: the value k + 1 stands for ∅ (only Hamming-type metrics are used here).
    Ue = queries.universe(u, k + 2)
    lo_e, hi_e, ex_e = _dr_vs_dh(Ue, k + 1)
    lo_x, hi_x, ex_x = _dr_vs_dh(U, U.n_symbols - 1)
    claims.append(Claim(
        "002-dr-dh", P, "§3: ½·d_r ≤ d_h ≤ d_r (removal adjacency vs Hamming), on V_∅^u", [True, True], [lo_e, hi_e],
        note=f"u = {u}, {k + 1} values and ∅, all {Ue.n} databases including the empty one; d_r is the graph metric of "
             "'differ by removing one individual'.",
        readings=[{"reading": "V_∅^u with the empty database (§3)", "value": [lo_e, hi_e]},
                  {"reading": "without the empty database (as §5 takes X = V_∅^u minus the empty database)",
                   "value": [lo_x, hi_x]}]))
    if ex_x:
        claims[-1].note += (" Without the empty database ½·d_r ≤ d_h fails, e.g. " + ex_x + ": the only short removal "
                            "path went through the empty database.")
    # Prop 4–5: sum, avg, p-perc ∈ C: sensitivity wrt d_h and wrt d̃_1 both d_V(V) = qk.
    sens = []
    for (uu, qq, kk) in _CASES:
        Uc = queries.universe(uu, [qq * t for t in range(kk + 1)], null=True)
        for name, ans in _query_answers(Uc, qq).items():
            Y = queries.answer_line(ans)
            sens.append((_case_name(uu, qq, kk), name, qq * kk, queries.sensitivity(ans, Uc.hamming(), Y),
                         queries.sensitivity(ans, Uc.manhattan(normalized=True), Y)))
    worst = max(max(abs(a - c), abs(b - c)) for _, _, c, a, b in sens)
    claims.append(Claim("002-prop4-5", P, "Prop 4–5: sensitivity of sum/avg/p-perc wrt d_h and wrt d̃_1 equals d_V(V) = qk "
                        "(max |difference|)", 0.0, worst, 1e-9,
                        note=f"{len(sens)} (universe, query) cases: universes {', '.join(_case_name(*c) for c in _CASES)}; "
                             "queries sum, avg (rounded), min, median, max."))
    ans = queries.total(U)
    Y = queries.answer_line(ans)
    claims += [
        Claim("002-s52-sum-d1", P, "§5.2: the sum is 1-sensitive wrt d_1", 1.0, queries.sensitivity(ans, U.manhattan(), Y), 1e-12),
        Claim("002-s52-sum-dh", P, "§5.2: the sum is 'qr'-sensitive wrt d_h (qk: the largest value)", q * k,
              queries.sensitivity(ans, U.hamming(), Y), 1e-12,
              note=f"universe {_case_name(u, q, k)}; the text's 'qr' reads as qk, the largest value of q[0..k]."),
    ]
    notes = ["Fig 1 (the counterexample to the converse of Fact 5) is a table missing from the text version; only its "
             "conclusion H(y1)(z1) = 3/4 > 2·H(y3)(z1) = 2·1/4 is printed, so it is not recomputed."]
    return Outcome(claims, [], notes)


def _dr_vs_dh(U: queries.Universe, null_symbol: int) -> tuple[bool, bool, str]:
    """Check ½·d_r ≤ d_h ≤ d_r on a universe whose symbol ``null_symbol`` is ∅; return the two verdicts and a
    violating pair of ½·d_r ≤ d_h (as text) if any. x ~_r x' iff they differ in one individual, ∅ in one of them."""
    i, j = U.adjacent_pairs()
    s = U.symbols
    differ = s[i] != s[j]  # exactly one True per row (adjacent databases)
    one_null = ((s[i] == null_symbol) | (s[j] == null_symbol)) & differ
    keep = one_null.any(axis=1)
    dr = spaces.from_graph(list(zip(i[keep].tolist(), j[keep].tolist())), nodes=list(range(U.n))).distances
    dh = U.hamming().distances
    bad = 0.5 * dr > dh + 1e-12
    example = ""
    if bad.any():
        a, b = np.argwhere(bad)[0]
        lab = U.labels
        example = f"{lab[a]} and {lab[b]} (d_h = {dh[a, b]:g}, d_r = {dr[a, b]:g})"
    return bool(not bad.any()), bool(np.all(dh <= dr + 1e-12)), example
