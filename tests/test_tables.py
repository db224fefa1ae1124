"""Private answers on real tables (issue 12; seed 002 §5)."""

from __future__ import annotations

import json
import math
import os
import re
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
    """The truncated geometric that `query` uses for counts is optimal (seed 002 Thm 8): on the answers
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


def test_a_percentile_of_an_empty_selection_is_answered_as_lo():
    """Refusing it told anyone, exactly and for free, that no row matched; it is LO by convention,
    released with noise (here ε so large that the noise is 0)."""
    path = _superstore()
    r = run_query(path, parse_query("percentile:Quantity:50"), epsilon=1000.0, bounds=(3, 9), where="Region = 'Atlantis'",
                  rng=1)
    assert r.answers[0].noisy == 3 and "LO by convention" in r.theorem
    g = run_query(path, parse_query("percentile:Quantity:50"), epsilon=1000.0, bounds=(3, 9), group_by="Region",
                  where="Region = 'West'", rng=1, keys=("Central", "East", "South", "West"))
    assert {a.group: a.noisy for a in g.answers if a.group != "West"} == {"Central": 3, "East": 3, "South": 3}


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


def test_ledger_refuses_selecting_on_a_column_an_earlier_query_protected(tmp_path):
    """Under d1 the query's column is protected and the --where columns are public: sum:Quantity where
    Discount > 0, then sum:Discount where Quantity = 14, bound no ε·d on Quantity together (both were
    accepted, 2 of 2 spent). The second is refused, in either order, with the ledger unchanged."""
    path = _superstore()
    led = tmp_path / "ledger.json"

    def q(spec, where, **kw):
        return lambda: run_query(path, parse_query(spec), epsilon=1.0, privacy="d1", where=where, rng=1, **kw)

    charge(led, path, epsilon=1.0, budget=3.0, what="sum:Quantity", privacy="d1",
           run=q("sum:Quantity", "Discount > 0", bounds=(0, 15)))
    before = led.read_text()
    with pytest.raises(BudgetExceeded, match="selects on 'Quantity'.*refused"):
        charge(led, path, epsilon=1.0, budget=3.0, what="sum:Discount", privacy="d1",
               run=q("sum:Discount", "Quantity = 14", bounds=(0, 1), unit=0.01))
    assert led.read_text() == before
    with pytest.raises(BudgetExceeded, match="protects 'Discount', which an earlier query"):
        charge(led, path, epsilon=1.0, budget=3.0, what="sum:Discount", privacy="d1",
               run=q("sum:Discount", "Region = 'West'", bounds=(0, 1), unit=0.01))
    assert led.read_text() == before
    # another column, selected on public columns only: accepted
    charge(led, path, epsilon=1.0, budget=3.0, what="sum:Sales", privacy="d1",
           run=q("sum:Sales", "Region = 'West'", bounds=(0, 1000), unit=1))
    assert json.loads(led.read_text())[next(iter(json.loads(led.read_text())))]["spent"] == 2.0


def test_a_table_duckdb_would_read_as_another_is_refused(tmp_path):
    """A header a,b with 2-field rows and then a 3-field line was read as an empty table with columns
    8, 9, 10 (its count answered 0 with 'expected error 0'); duplicate column names were renamed a_1."""
    rag = tmp_path / "rag.csv"
    rag.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(20)) + "7\n8,9,10\n")
    with pytest.raises(ValueError, match="cannot read .* as one CSV table .* a line of another shape"):
        run_query(str(rag), parse_query("count"), epsilon=1.0)
    dup = tmp_path / "dup.csv"
    dup.write_text("a,a\n1,2\n3,4\n")
    with pytest.raises(ValueError, match="two columns called 'a'"):
        run_query(str(dup), parse_query("sum:a"), epsilon=1.0, bounds=(0, 9))


def test_ledger_knows_a_table_under_another_name(tmp_path):
    """A hard link to the table got a fresh budget (the ledger was keyed by path only); it is the same
    file (device, inode) and shares the table's budget."""
    import os

    t = tmp_path / "t.csv"
    t.write_text("a\n1\n2\n")
    os.link(t, tmp_path / "hard.csv")
    led = tmp_path / "ledger.json"
    charge(led, str(t), epsilon=0.6, budget=1.0, what="count")
    with pytest.raises(BudgetExceeded, match="only 0.4 of the budget 1 remains"):
        charge(led, str(tmp_path / "hard.csv"), epsilon=0.6, budget=1.0, what="count")
    _, spent, _ = charge(led, str(tmp_path / "hard.csv"), epsilon=0.4, budget=1.0, what="count")
    assert spent == pytest.approx(1.0) and len(json.loads(led.read_text())) == 1


def test_ledger_knows_a_byte_for_byte_copy_of_a_table(tmp_path):
    """A copy of the table (cp: another inode, the same bytes, the same people) got a fresh budget; it is now
    known by the SHA-256 of its bytes. A table that differs in a byte is another table."""
    import shutil

    t = tmp_path / "t.csv"
    t.write_text("a\n1\n2\n")
    shutil.copy(t, tmp_path / "copy.csv")
    (tmp_path / "other.csv").write_text("a\n1\n3\n")
    led = tmp_path / "ledger.json"
    charge(led, str(t), epsilon=0.6, budget=1.0, what="count")
    with pytest.raises(BudgetExceeded, match="only 0.4 of the budget 1 remains"):
        charge(led, str(tmp_path / "copy.csv"), epsilon=0.6, budget=1.0, what="count")
    _, spent, _ = charge(led, str(tmp_path / "other.csv"), epsilon=0.6, budget=1.0, what="count")
    assert spent == pytest.approx(0.6) and len(json.loads(led.read_text())) == 2
    import gzip  # the same table compressed (zcat t.csv.gz > t.csv gave a fresh budget)

    (tmp_path / "t2.csv.gz").write_bytes(gzip.compress(t.read_bytes()))
    with pytest.raises(BudgetExceeded, match="only 0.4 of the budget 1 remains"):
        charge(led, str(tmp_path / "t2.csv.gz"), epsilon=0.6, budget=1.0, what="count")


def test_review_findings_on_units_types_and_headers(tmp_path):
    """Found in review: a count was multiplied by --unit; a fraction after the sniffer's sample was read
    as an integer (1.5 as 2) past the whole-number check; 'a,A' and 'v;v' headers passed the duplicate
    check; a leading blank line was refused; the ledger added d1 ε in different units."""
    t = tmp_path / "t.csv"
    t.write_text("v\n1\n2\n")
    with pytest.raises(ValueError, match="--unit .* applies to sum, avg and percentile, not count"):
        run_query(str(t), parse_query("count"), epsilon=1.0, unit=0.01)
    late = tmp_path / "late.csv"
    late.write_text("v\n" + "".join(f"{i % 7}\n" for i in range(50_000)) + "1.5\n")
    with pytest.raises(ValueError, match="1 value.s. in the table .* not whole numbers, the first at row 50001"):
        run_query(str(late), parse_query("sum:v"), epsilon=1.0, bounds=(0, 10), owner=True)
    r = run_query(str(late), parse_query("sum:v"), epsilon=1e4, bounds=(0, 10), unit=0.5, rng=1)
    assert r.answers[0].noisy == sum(i % 7 for i in range(50_000)) + 1.5
    for text, name in (("a,A\n1,60\n", "'a' and 'A'"), ("v;v\n1;2\n", "'v'")):
        (tmp_path / "h.csv").write_text(text)
        with pytest.raises(ValueError, match=f"two columns called {name}"):
            run_query(str(tmp_path / "h.csv"), parse_query("count"), epsilon=1.0)
    (tmp_path / "blank.csv").write_text("\na,b\n1,2\n3,4\n")
    assert run_query(str(tmp_path / "blank.csv"), parse_query("sum:a"), epsilon=1e4, bounds=(0, 9), rng=1).answers[0].noisy == 4
    led = tmp_path / "led.json"
    q = lambda u: lambda: run_query(str(late), parse_query("sum:v"), epsilon=1.0, bounds=(0, 10), privacy="d1",  # noqa: E731
                                    unit=u, rng=1)
    charge(led, str(late), epsilon=1.0, budget=2.0, what="sum:v", privacy="d1", run=q(0.5))
    with pytest.raises(BudgetExceeded, match="per --unit 0.5 .*this query's is per 0.25"):
        charge(led, str(late), epsilon=1.0, budget=2.0, what="sum:v", privacy="d1", run=q(0.25))


def test_the_ledger_keeps_one_normalized_d1_range_per_column(tmp_path):
    """Found by a review: normalized-d1 divides by HI − LO, so ε = 1 at --bounds 0,10 is ε = 1000 at 0,10000;
    the ledger recorded two such queries as 2 of 2."""
    t = tmp_path / "t.csv"
    t.write_text("v\n1\n2\n7\n")
    led = tmp_path / "led.json"
    q = lambda b: lambda: run_query(str(t), parse_query("sum:v"), epsilon=1.0, bounds=b, privacy="normalized-d1",  # noqa: E731
                                    rng=1)
    charge(led, str(t), epsilon=1.0, budget=3.0, what="sum:v", privacy="normalized-d1", run=q((0, 10)))
    before = led.read_text()
    with pytest.raises(BudgetExceeded, match="HI − LO = 10 .*span 10000"):
        charge(led, str(t), epsilon=1.0, budget=3.0, what="sum:v", privacy="normalized-d1", run=q((0, 10000)))
    assert led.read_text() == before
    # the same span elsewhere on the line is the same metric
    charge(led, str(t), epsilon=1.0, budget=3.0, what="sum:v", privacy="normalized-d1", run=q((5, 15)))


def test_a_ledger_that_is_not_a_regular_file_is_refused(tmp_path):
    """--budget-file /dev/full was read without end (SIGKILL); a folder or a device is now refused, untouched."""
    t = tmp_path / "t.csv"
    t.write_text("a\n1\n2\n")
    (tmp_path / "folder").mkdir()
    for bad in (tmp_path / "folder", Path("/dev/null")):
        with pytest.raises(ValueError, match="is not a regular file"):
            charge(bad, str(t), epsilon=0.5, budget=1.0, what="count")
    assert Path("/dev/null").is_char_device() and not Path("/dev/null.lock").exists()


def test_value_checks_do_not_depend_on_where_nor_quote_values(tmp_path):
    """Found by a review: the whole-number and non-numeric refusals ran on the selected rows only, so a refusal
    (free: nothing charged) told whoever chose --where whether a row matched, how many did, and quoted the
    protected value ("... (2249.91)"); a --where matching no row was answered normally."""
    t = tmp_path / "t.csv"
    t.write_text("city,v\nA,3\nB,2249.91\nC,5\n")
    msgs = set()
    for where in ("city = 'B'", "city = 'Z'", "city = 'A'", None):
        with pytest.raises(ValueError) as e:
            run_query(str(t), parse_query("sum:v"), epsilon=1.0, bounds=(0, 5000), where=where, privacy="d1")
        msgs.add(str(e.value))
    assert len(msgs) == 1  # the same refusal whatever --where selects
    (msg,) = msgs
    assert "2249" not in msg and "has value(s) in the table" in msg and "row 2" not in msg
    with pytest.raises(ValueError, match=r"1 value\(s\) in the table.*row 2") as e:  # the owner's diagnostics
        run_query(str(t), parse_query("sum:v"), epsilon=1.0, bounds=(0, 5000), privacy="d1", owner=True)
    assert "2249" not in str(e.value)
    n = tmp_path / "n.csv"
    n.write_text("city,v\nA,3\nB,oops\nC,5\n")
    for where in ("city = 'B'", "city = 'Z'"):
        for owner in (False, True):
            with pytest.raises(ValueError, match=f"has {'1 ' if owner else ''}non-numeric value.s. in the table") as e:
                run_query(str(n), parse_query("sum:v"), epsilon=1.0, bounds=(0, 10), where=where, owner=owner)
            assert "oops" not in str(e.value)


def test_a_query_cannot_group_by_the_column_it_aggregates(tmp_path):
    """Found by a review: `count --group-by Sales` published every distinct sale amount (the keys are released
    exactly) under a sentence claiming ε-DP for any column of a row."""
    t = tmp_path / "t.csv"
    t.write_text("g,v,f,h\na,1,0,1\nb,22638,1,0\n")
    for q, g in (("sum:v", "v"), ("kcount:f,h", "f"), ("percentile:v:50", "v")):
        with pytest.raises(ValueError, match="cannot group by the column it aggregates"):
            run_query(str(t), parse_query(q), epsilon=1.0, bounds=None if q.startswith("kcount") else (0, 30000), group_by=g)
    r = run_query(str(t), parse_query("count"), epsilon=1.0, group_by="g", rng=1, keys=["a", "b"])
    assert "2 declared keys of 'g'" in r.neighbours


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


def test_a_refusal_depends_neither_on_the_bounds_nor_on_the_selection_and_counts_nothing(tmp_path):
    """Found by a review: the fraction check ran on the values clamped to --bounds, so --bounds 41,42 refused with the
    number of values strictly inside (41, 42) and the first such row, for free — an analyst could read each row's
    whole part by narrowing the bounds; and every refusal gave the exact number of invalid values. The check now runs
    on the values as they are, and the refusal is the same text for every --bounds and --where; counts and rows only
    for the owner."""
    t = tmp_path / "p.csv"
    t.write_text("profit,region\n41.9136,W\n219.582,E\n-383.031,W\n3,E\n7,W\n")
    q = parse_query("sum:profit")
    texts = set()
    for bounds in ((41, 42), (219, 220), (0, 1), (-400, 400)):
        for where in (None, "region = 'W'", "region = 'nowhere'"):
            with pytest.raises(ValueError) as e:
                run_query(str(t), q, epsilon=0.1, bounds=bounds, where=where)
            texts.add(str(e.value))
    assert len(texts) == 1 and not re.search(r"\d+ value|row \d", texts.pop())
    with pytest.raises(ValueError, match=r"has 3 value.s. .* the first at row 1 "):
        run_query(str(t), q, epsilon=0.1, bounds=(0, 1), owner=True)
    e = tmp_path / "e.csv"
    e.write_text("x\n1\n\noops\n4\n")
    with pytest.raises(ValueError) as got:
        run_query(str(e), parse_query("sum:x"), epsilon=1, bounds=(0, 5))
    assert "non-numeric and empty value(s)" in str(got.value) and not re.search(r"\d+ (non|empty)|row \d", str(got.value))


