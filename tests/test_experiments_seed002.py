"""Chatzikokolakis et al. 2013 reproduction experiments: the report they write, and the pieces they are built from.

The report tests run fast experiments through ``report.run`` and check the summary's shape and the
figure files; the others check the mathematics of the helpers (the constraint metric of H_f, the product
channel of per-reading noise, the synthetic traces) against definitions, not against recorded output.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dprivacy import measures, queries, spaces
from dprivacy.experiments import report
from dprivacy.experiments.data import HOUSEHOLD_MAX_W, TV_RANGE_W, household_day, tv_signature
from dprivacy.experiments.seed002 import _product_tg, _within, oblivious_answer_space
from dprivacy.mechanisms.geometric import truncated_geometric

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
VERDICTS = {"agrees", "differs", "not comparable"}


def _check_summary(out, summary, ids):
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["counts"] == summary["counts"]
    assert on_disk["quick"] is True
    assert [e["id"] for e in on_disk["experiments"]] == ids
    for e in on_disk["experiments"]:
        assert e["error"] is None, e["error"]
        assert e["paper"] == "Chatzikokolakis et al. 2013"
        for f in e["figures"]:
            png, csv = out / f["png"], out / f["csv"]
            assert png.read_bytes()[:8] == PNG_MAGIC
            lines = csv.read_text().splitlines()
            assert len(lines) >= 2 and "," in lines[0]
    claims = on_disk["claims"]
    assert claims and all(c["verdict"] in VERDICTS for c in claims)
    assert all(c["id"].startswith("002-") and c["paper"] == "Chatzikokolakis et al. 2013" for c in claims)
    c = on_disk["counts"]
    assert c["claims"] == len(claims) == c["agrees"] + c["differs"] + c["not_comparable"]
    assert (out / "index.html").read_text().startswith("<!doctype html>")
    return {cl["id"]: cl for cl in claims}


def test_report_metrics_and_geolocation(tmp_path):
    ids = ["002-metrics", "002-fig2-geo"]
    summary = report.run(tmp_path, quick=True, only=ids, progress=False)
    claims = _check_summary(tmp_path, summary, ids)
    figs = {f["id"] for e in summary["experiments"] for f in e["figures"]}
    assert figs == {"002-fig2-radial"}
    # Facts that follow from the definitions must agree (exact computations, no sampling).
    for cid in ("002-prop3", "002-dr-dh", "002-prop4-5", "002-s52-sum-d1", "002-s52-sum-dh", "002-fig2-iv",
                "002-fact7-planar", "002-fact7-manhattan"):
        assert claims[cid]["verdict"] == "agrees", claims[cid]


@pytest.mark.slow
def test_report_smart_meters(tmp_path):
    ids = ["002-smart-meters"]
    summary = report.run(tmp_path, quick=True, only=ids, progress=False)
    claims = _check_summary(tmp_path, summary, ids)
    figs = {f["id"] for e in summary["experiments"] for f in e["figures"]}
    assert figs == {"002-smart-meters-household", "002-smart-meters-tv"}
    for cid in ("002-sm-per-reading-d1", "002-sm-per-reading-dinf", "002-sm-dinf-scale"):
        assert claims[cid]["verdict"] == "agrees", claims[cid]
    # Synthetic-data numbers are never compared with the paper's.
    assert all(c["verdict"] == "not comparable" for k, c in claims.items() if k.startswith("002-sm-household"))
    assert (tmp_path / "002-smart-meters-errors.csv").exists()


@pytest.mark.slow
def test_report_fig3_and_optimality(tmp_path):
    ids = ["002-fig3", "002-thm10-13"]
    summary = report.run(tmp_path, quick=True, only=ids, progress=False)
    claims = _check_summary(tmp_path, summary, ids)
    assert (tmp_path / "002-fig3.png").exists() and (tmp_path / "002-thm10-13-cases.csv").exists()
    for cid in ("002-ex1-sens-dh", "002-ex1-sens-d1", "002-12-cor-sum", "002-13-cor-avg", "002-thm6-closure"):
        assert claims[cid]["verdict"] == "agrees", claims[cid]


# ---------------------------------------------------------------------------------------------
# The pieces
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha, rate", [(1.0, 0.2), (10.0, 0.2), (10.0, 1e-4), (0.3, 5.0)])
def test_within_is_the_laplace_probability(alpha, rate):
    # P[|N| ≤ α] = 1 − e^{−rate·α} for the density (rate/2) e^{−rate|t|}.
    assert _within(alpha, rate) == pytest.approx(-np.expm1(-rate * alpha), rel=1e-12)


def test_oblivious_answer_space_is_thm6_when_uniformly_sensitive():
    U = queries.universe(2, 4, null=True)
    ans = queries.total(U)
    Y = queries.answer_line(ans)
    for X, delta in ((U.manhattan(), 1.0), (U.manhattan(normalized=True), 3.0)):
        S = oblivious_answer_space(ans, X)
        assert S.labels == Y.labels
        assert np.allclose(S.distances, Y.distances / delta)


def test_oblivious_answer_space_characterizes_privacy_of_h_after_f():
    # Sum under d_∞ is not uniformly sensitive; still, H is d_f-private iff H∘f is d_∞-private.
    U = queries.universe(2, 3, null=True)
    ans = queries.total(U)
    X = U.chebyshev()
    S = oblivious_answer_space(ans, X)
    idx, _ = queries.answer_index(ans, S.labels)
    rng = np.random.default_rng(0)
    for _ in range(20):
        h = rng.dirichlet(np.ones(4), size=S.n)
        e_S = measures.smallest_epsilon(h, S)
        e_X = measures.smallest_epsilon(queries.oblivious(h, idx), X)
        assert e_S == pytest.approx(e_X, rel=1e-9)
    # d_f never exceeds the smallest distance between preimages.
    D = X.distances
    for a in range(S.n):
        for b in range(S.n):
            assert S.distances[a, b] <= D[np.ix_(idx == a, idx == b)].min() + 1e-12


def test_product_channel_follows_universe_order():
    n, k, e = 2, 3, 0.7
    H = _product_tg(n, k, e).matrix
    t = truncated_geometric(k + 1, epsilon=e).matrix
    U = queries.universe(n, k + 1)
    s = U.symbols
    expected = t[s[:, 0][:, None], s[:, 0][None, :]] * t[s[:, 1][:, None], s[:, 1][None, :]]
    assert np.allclose(H, expected, atol=1e-15)
    assert measures.smallest_epsilon(H, U.manhattan()) == pytest.approx(e)
    assert measures.smallest_epsilon(H, U.chebyshev()) == pytest.approx(n * e)


def test_household_day_is_seeded_and_in_range():
    a, b = household_day(48, rng=3), household_day(48, rng=3)
    assert np.array_equal(a.values, b.values)
    assert not np.array_equal(a.values, household_day(48, rng=4).values)
    lo, hi = a.value_range
    assert hi == pytest.approx(HOUSEHOLD_MAX_W * 0.5)
    assert a.n == 48 and np.all(a.values >= lo) and np.all(a.values <= hi)
    # readings are the energy of each half hour: Σ readings = ∫ power dt (Wh) of the per-minute signal
    assert a.values.sum() == pytest.approx(a.fine_values.sum() / 60.0)
    assert household_day(24, rng=3).values.sum() == pytest.approx(a.values.sum())
    with pytest.raises(ValueError, match="divide"):
        household_day(7)


def test_tv_signature_readings_are_interval_means():
    t = tv_signature(300, 10, rng=1)
    assert t.n == 30 and np.allclose(t.times, np.arange(0, 300, 10))
    assert np.allclose(t.values, t.fine_values.reshape(30, 10).mean(axis=1))
    assert np.all((t.fine_values >= TV_RANGE_W[0]) & (t.fine_values <= TV_RANGE_W[1]))
    with pytest.raises(ValueError, match="divide"):
        tv_signature(300, 7)


def test_report_superstore_tables_runs_through_the_query_command(tmp_path):
    """The README's main job (`reproduce --quick`) failed here when query began refusing values with a
    fraction (Sales has cents): the experiment declares --unit 1, as its truths round to whole dollars."""
    ids = ["002-tables-superstore"]
    summary = report.run(tmp_path, quick=True, only=ids, progress=False)
    assert summary["counts"]["errors"] == 0
    claims = _check_summary(tmp_path, summary, ids)
    observed = [c for k, c in claims.items() if k.endswith("observed-vs-stated")]
    assert len(observed) == 4 and all(c["verdict"] == "agrees" for c in observed)
