"""Private answers on real tables (issue 12; Chatzikokolakis et al. 2013 §5). The privacy attacks found on query and its budget ledger
are kept as tests in tests/attacks/ (issue #30)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("duckdb")

from dprivacy import measures, spaces  # noqa: E402
from dprivacy.data.budget import BudgetExceeded, charge  # noqa: E402
from dprivacy.data.tables import geometric_accuracy, parse_query, run_query  # noqa: E402
from dprivacy.sampling.discrete import two_sided_geometric  # noqa: E402
from dprivacy.mechanisms.geometric import truncated_geometric  # noqa: E402
from dprivacy.mechanisms.optimal import optimal_mechanism  # noqa: E402
from dprivacy.sampling import random_source  # noqa: E402


def _superstore() -> str:
    bs = pytest.importorskip("bokeh_sampledata", reason="real tables ship with bokeh-sampledata (the test extra)")
    return os.path.join(os.path.dirname(bs.__file__), "_data", "SampleSuperstore.csv.gz")


def test_two_sided_geometric_law_and_power():
    alpha = math.exp(-0.7)
    k, params = two_sided_geometric(200_000, 0.7, 1.0, random_source(3).generator)
    assert params.alpha == pytest.approx(alpha, rel=1e-12)
    support = np.arange(-12, 13)
    def probs(a):
        p = (1 - a) / (1 + a) * a ** np.abs(support)
        return np.append(p, 1 - p.sum())  # the two tails beyond ±12 pooled
    obs = np.append(np.array([(k == s).sum() for s in support]), (np.abs(k) > 12).sum())
    assert stats.chisquare(obs, probs(alpha) * k.size).pvalue > 1e-6
    assert stats.chisquare(obs, probs(math.exp(-0.77)) * k.size).pvalue < 1e-6  # power: ε 10% off is rejected


def test_stated_accuracy_is_exact():
    alpha = math.exp(-0.5)
    mean, t = geometric_accuracy(alpha, confidence=0.95)
    k, _ = two_sided_geometric(400_000, 0.5, 1.0, random_source(9).generator)
    assert np.abs(k).mean() == pytest.approx(mean, rel=0.02)
    # P(|K| > t) = 2α^{t+1}/(1+α) ≤ 5% and t is the smallest such
    assert 2 * alpha ** (t + 1) / (1 + alpha) <= 0.05 < 2 * alpha ** t / (1 + alpha)
    assert (np.abs(k) > t).mean() <= 0.05 + 0.003


def test_count_mechanism_is_the_lp_optimum_on_a_small_case():
    """The truncated geometric that `query` uses for counts is optimal (Chatzikokolakis et al. 2013 Thm 8): on the answers
    0..6 of a count, its utility for the uniform prior equals the LP optimum."""
    sp = spaces.line(7)
    prior = np.full(7, 1 / 7)
    for eps in (0.3, 1.0):
        tg = measures.utility(truncated_geometric(sp, epsilon=eps), prior).value
        lp = optimal_mechanism(sp, prior, epsilon=eps, method="full")
        assert lp.ok and tg == pytest.approx(lp.value, abs=1e-7)


def test_grouped_answers_match_truth_within_the_stated_error():
    import duckdb

    path = _superstore()
    truth = dict(duckdb.sql(f"SELECT Region, count(*) FROM read_csv_auto('{path}') GROUP BY 1").fetchall())
    errs = []
    for seed in range(30):
        res = run_query(path, parse_query("count"), epsilon=0.5, group_by="Region", rng=seed,
                        keys=("Central", "East", "South", "West"))
        assert {a.group for a in res.answers} == set(truth)
        errs += [abs(a.noisy - truth[a.group]) for a in res.answers]
    stated = res.answers[0].expected_abs_error
    assert np.mean(errs) == pytest.approx(stated, rel=0.35)  # 120 draws of |K|: sd of the mean ≈ 12%
    assert res.random_source["mode"] == "reproducible"


def test_sum_and_percentile_on_real_table_clamp_and_report():
    path = _superstore()
    s = run_query(path, parse_query("sum:Quantity"), epsilon=1.0, bounds=(0, 10), rng=1)
    assert s.sensitivity == 10 and s.answers[0].clamped_not_private > 0  # quantities up to 14
    p = run_query(path, parse_query("percentile:Sales:50"), epsilon=1.0, bounds=(0, 1000), privacy="dinf", rng=2,
                  unit=1)
    assert 0 <= p.answers[0].noisy <= 1000 and p.sensitivity == 1


@pytest.mark.parametrize("args, msg", [
    (dict(query="percentile:Sales:100", bounds=(0, 1)), "strictly between"),
    (dict(query="sum:Nope", bounds=(0, 1)), "unknown column 'Nope'"),
    (dict(query="sum:Region", bounds=(0, 1)), "non-numeric"),
    (dict(query="sum:Sales"), "needs --bounds"),
    (dict(query="avg:Sales", bounds=(0, 9), group_by="Region"), "ask for sum and count"),
    (dict(query="count", where="Nope > 1"), "bad --where"),
    (dict(query="sum:Sales", bounds=(0, 9), owner=True), r"9866 value.s. in the table \(checked whatever --where and --bounds select\) that are not whole numbers, the first at row 1 of the file \(1 = first data row\):"),
    (dict(query="sum:Sales", bounds=(0, 9)), r"has value.s. in the table \(checked whatever --where and --bounds select\) that are not whole numbers: "),
    (dict(query="sum:Quantity", bounds=(0, 9.5)), "two integers"),
    (dict(query="sum:Quantity", bounds=(0, 9.5), unit=0.2), "multiples of --unit 0.2"),
    (dict(query="sum:Quantity", bounds=(0, 9), unit=-1), "--unit must be a positive number"),
    # #11 is Quantity: a column by position would read the protected column past the check on names
    (dict(query="sum:Quantity", bounds=(0, 15), privacy="d1", where="#11 > 2"), "by position"),
    (dict(query="count", privacy="dinf"), "not a query on values"),
])
def test_bad_queries_name_the_problem(args, msg):
    q = args.pop("query")
    with pytest.raises(ValueError, match=msg):
        run_query(_superstore(), parse_query(q), epsilon=1.0, **args)


def test_values_with_a_fraction_are_counted_on_the_declared_unit():
    """With --unit U the values are rounded to multiples of U and the answers' grid is in units of U: at
    ε so large that the noise is 0, a d1 sum of the discounts is their exact total (1561.09), where
    rounding to whole numbers gave 922; the d1 distance 1 is one unit, so Δ = 1."""
    import duckdb

    path = _superstore()
    exact = duckdb.sql(f"SELECT sum(CAST(round(Discount * 100) AS BIGINT)) FROM read_csv_auto('{path}')").fetchall()[0][0]
    r = run_query(path, parse_query("sum:Discount"), epsilon=1000.0, bounds=(0, 1), privacy="d1", unit=0.01, rng=1)
    assert r.sensitivity == 1 and tuple(r.answer_range) == (0, 100 * 9994) and r.unit == 0.01
    assert r.answers[0].noisy == exact / 100 and r.answers[0].clamped_not_private == 0
    assert tuple(r.bounds) == (0, 1)  # reported in the values' units
    # under d_h the sensitivity is the range in units: 100 hundredths
    h = run_query(path, parse_query("sum:Discount"), epsilon=1.0, bounds=(0, 1), unit=0.01, rng=1)
    assert h.sensitivity == 100
    rounded = run_query(path, parse_query("sum:Discount"), epsilon=1000.0, bounds=(0, 1), privacy="d1", unit=1, rng=1)
    assert rounded.answers[0].noisy == duckdb.sql(
        f"SELECT sum(CAST(round(Discount) AS BIGINT)) FROM read_csv_auto('{path}')").fetchall()[0][0]


def test_ledger_refuses_over_budget_and_is_unchanged(tmp_path):
    led = tmp_path / "ledger.json"
    charge(led, "t.csv", epsilon=0.4, budget=1.0, what="count")
    charge(led, "t.csv", epsilon=0.6, budget=1.0, what="sum")
    before = led.read_text()
    with pytest.raises(BudgetExceeded, match="refused"):
        charge(led, "t.csv", epsilon=0.1, budget=1.0, what="count")
    assert led.read_text() == before
    led.write_text("{not json")
    with pytest.raises(ValueError, match="corrupt"):
        charge(led, "t.csv", epsilon=0.1, budget=5.0, what="count")
    assert led.read_text() == "{not json"


def test_ledger_under_two_concurrent_processes_adds_up(tmp_path):
    led = tmp_path / "ledger.json"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from dprivacy.data.budget import charge\n"
            "for _ in range(40): charge(sys.argv[2], 't.csv', epsilon=0.01, budget=100.0, what='count')\n")
    src = str(Path(__file__).resolve().parents[1] / "src")
    procs = [subprocess.Popen([sys.executable, "-c", code, src, str(led)]) for _ in range(2)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    entry = next(iter(json.loads(led.read_text()).values()))
    assert len(entry["queries"]) == 80 and entry["spent"] == pytest.approx(0.8, abs=1e-12)


def test_tight_constraints_on_too_many_answers_is_refused_with_the_numbers(monkeypatch):
    """A sum over 8 million rows and 0..50 has 400 million answers: building the mechanism on them grew
    past the machine's memory. Above TIGHT_MAX_ANSWERS it is refused before anything is built."""
    import dprivacy.data.tables as tables

    monkeypatch.setattr(tables, "TIGHT_MAX_ANSWERS", 100_000)
    with pytest.raises(ValueError, match=r"range over 149,911 values \(0\.\.149910\), over the 100,000"):
        run_query(_superstore(), parse_query("sum:Quantity"), epsilon=3.0, bounds=(0, 15), mechanism="tight-constraints")


def test_a_ledger_that_is_not_a_regular_file_is_refused(tmp_path):
    """--budget-file /dev/full was read without end (SIGKILL); a folder or a device is now refused, untouched."""
    t = tmp_path / "t.csv"
    t.write_text("a\n1\n2\n")
    (tmp_path / "folder").mkdir()
    for bad in (tmp_path / "folder", Path("/dev/null")):
        with pytest.raises(ValueError, match="is not a regular file"):
            charge(bad, str(t), epsilon=0.5, budget=1.0, what="count")
    assert Path("/dev/null").is_char_device() and not Path("/dev/null.lock").exists()




def test_options_that_do_not_apply_are_refused_not_ignored(tmp_path):
    """Found by a review: count with --bounds or --skip-invalid ran with both ignored; a 0-byte file released a
    count; a BLOB column gave DuckDB's binder error."""
    t = tmp_path / "t.csv"
    t.write_text("v\n1\n2\n")
    with pytest.raises(ValueError, match="--bounds .* not count"):
        run_query(str(t), parse_query("count"), epsilon=1.0, bounds=(0, 10))
    with pytest.raises(ValueError, match="--skip-invalid .* count has none"):
        run_query(str(t), parse_query("count"), epsilon=1.0, skip_invalid=True)
    (tmp_path / "e.csv").write_bytes(b"")
    with pytest.raises(ValueError, match="is empty .0 bytes.: not a table"):
        run_query(str(tmp_path / "e.csv"), parse_query("count"), epsilon=1.0)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"b": [b"x", b"y"]}), tmp_path / "b.parquet")
    with pytest.raises(ValueError, match="'b' is a BLOB, not numeric"):
        run_query(str(tmp_path / "b.parquet"), parse_query("sum:b"), epsilon=1.0, bounds=(0, 1))


def test_json_group_keys_tell_nan_infinity_and_null_apart(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = tmp_path / "g.parquet"
    pq.write_table(pa.table({"g": [0.0, 1.0, float("inf"), float("nan"), None, 1.0]}), t)
    r = run_query(str(t), parse_query("count"), epsilon=1.0, group_by="g", rng=1, keys=["0", "1", "inf", "nan", "-inf"])
    keys = [a["group"] for a in r.to_dict()["answers"]]
    assert keys == [0.0, 1.0, "Infinity", "NaN", "-Infinity"]
    # the declared NaN key is the table's NaN (one row), not an empty group: ε = 1e6 leaves no noise
    big = run_query(str(t), parse_query("count"), epsilon=1e6, group_by="g", rng=1, keys=["nan", "1", "7"])
    assert [a.noisy for a in big.answers] == [1, 2, 0]
    json.dumps(r.to_dict(), allow_nan=False)  # strict JSON


