"""Privacy attacks found on `dprivacy query`, each kept as a test so that no change reopens it (issue #30).

The comment above each test names the leak it closes. Inventory (leak, fix commit → test):

- a row entering or leaving the --where selection moved a standard sum by more than its Δ (c7ab9a7)
  → test_standard_where_sum_is_private_when_rows_enter_and_leave
- a row moving between --group-by groups changed two answers, each noised at the whole ε (c7ab9a7)
  → test_standard_group_by_count_spends_eps_when_a_row_moves_between_groups
- under d∞ one change of the values moved every group's answer, each at the whole ε (c7ab9a7)
  → test_dinf_group_by_percentile_spends_eps_over_the_groups
- DuckDB could open files other than the table, whose rows no ledger charged (c7ab9a7)
  → test_duckdb_reads_the_table_file_and_nothing_else
- one ragged line made DuckDB read the CSV as another, empty table (deee3de)
  → test_a_table_duckdb_would_read_as_another_is_refused
- one row changed a CSV's column types or dialect: 108 against 0 at Δ 1, a free refusal told tables apart (b3a0119)
  → test_csv_column_types_do_not_depend_on_the_rows
- value checks ran on the selected rows only: a free refusal said whether a row matched and quoted it (2060d54)
  → test_value_checks_do_not_depend_on_where_nor_quote_values
- the fraction check counted the values inside the asker's --bounds and named the first, for free (e67a229)
  → test_a_refusal_depends_neither_on_the_bounds_nor_on_the_selection_and_counts_nothing
- the exact number of clamped (and skipped) values was released beside the noisy answer (2060d54)
  → test_the_clamped_count_is_shown_to_the_owner_only_and_an_empty_table_has_no_error
- a percentile of an empty selection was refused: a free, exact "no row matches" (3ecd8cb)
  → test_a_percentile_of_an_empty_selection_is_answered_as_lo
- standard --group-by released the keys found in the table: a row with a value of its own added a key (1c7ed4d)
  → test_standard_group_by_needs_declared_keys_and_the_release_does_not_depend_on_the_keys_in_the_table
- count --group-by Sales published every sale amount as an exact key (4089a76)
  → test_a_query_cannot_group_by_the_column_it_aggregates
- tight-constraints' delivered ε was measured at the true answer: its digits told sums apart (0fcf5e9)
  → test_the_reported_delivered_epsilon_does_not_read_the_data
- under --unit the rounding made rows 0.02 apart differ by e^1 beside a guarantee of e^(ε·d) (5a4c599)
  → test_the_guarantee_under_a_unit_says_the_rounding_adds_a_unit
- DuckDB spilled a large query's intermediate results (the table's values) to ./.tmp of the working folder
  → test_a_query_spills_to_a_private_folder_removed_with_it_not_the_working_one

Tested where they are, beside the --where validation they exercise (what a condition may name or call):
test_tables.py::test_where_names_columns_of_the_table_only (read_csv_auto['v'] reached the protected column,
2060d54), ::test_where_refuses_functions_that_build_values_of_computed_size (out of memory for some rows only: the
largest Sales in 27 free refusals, 5c234ad), ::test_where_allows_lambda_parameters_and_clock_words_inside_their_scope
(a lambda parameter named like the relation, 4f7ceab), ::test_bad_queries_name_the_problem (#N reached the protected
column, 3ecd8cb); test_tables_privacy.py::test_where_must_be_one_condition_on_the_row and
::test_where_injection_through_the_cli_is_one_line_exit_2 (GROUP BY / subquery injection, c7ab9a7),
::test_a_condition_that_fails_on_a_row_never_quotes_it (error() quoted a row, 5692780),
::test_value_metrics_refuse_the_protected_column_in_where_or_group_by (c7ab9a7, f5d709b),
::test_a_query_that_fails_while_reading_the_rows_is_charged (a failure only when a row matched was free, 93a2edf);
the --where cases of test_cli_bad_input.py. The budget ledger's attacks are in test_attack_budget.py.
"""

from __future__ import annotations

import json
import math
import os
import re

import numpy as np
import pytest

pytest.importorskip("duckdb")

from dprivacy import measures, queries  # noqa: E402
from dprivacy.channels import Channel  # noqa: E402
from dprivacy.data.table_staircase import staircase_rows  # noqa: E402
from dprivacy.data.tables import parse_query, run_query, truncated_geometric_rows  # noqa: E402
from test_tables import _superstore  # noqa: E402
from test_tables_privacy import _cli, _csv, _data  # noqa: E402


def _tg(result) -> np.ndarray:
    """The channel the release was drawn from: the truncated geometric, or (a sum or average under d_h) the staircase
    noise cut at the ends of the answer range."""
    lo, hi = result.answer_range
    if result.staircase:
        st = result.staircase
        return staircase_rows(st["delta"], st["r"], st["b"], lo, hi)
    return truncated_geometric_rows(result.noise_alpha, lo, hi)


# query: a row entering or leaving the --where selection moved a standard sum by more than the Δ it was noised for
def test_standard_where_sum_is_private_when_rows_enter_and_leave(tmp_path):
    """Rows (flag, value) with value in 1..3; the answer is the sum of the values of the rows with flag = 1.
    Under d_h a changed row can enter the selection: TG∘f must be ε·d_h-private on all 2-row tables."""
    t = _csv(tmp_path / "t.csv", "flag,v", [(1, 2), (0, 3)])
    eps = 0.8
    r = run_query(t, parse_query("sum:v"), epsilon=eps, bounds=(1, 3), where="flag = 1", rng=0)
    assert r.sensitivity == 3  # max(HI − LO, |LO|, |HI|)
    U = queries.universe(2, 6)  # symbol s: flag = s // 3, value = 1 + s % 3
    flag, val = U.databases // 3, 1 + U.databases % 3
    f = (flag * val).sum(axis=1)
    lo, _ = r.answer_range
    H = Channel(_tg(r)[f - lo])
    assert measures.check_privacy(H, U.hamming(), epsilon=eps).ok
    # the old Δ = HI − LO on the same range is not private: the check has teeth
    H_old = Channel(truncated_geometric_rows(math.exp(-eps / 2), *r.answer_range)[f - lo])
    assert not measures.check_privacy(H_old, U.hamming(), epsilon=eps).ok


def _joint(channels_per_group) -> np.ndarray:
    """Product channel over groups: rows are databases, columns the joint outputs."""
    out = channels_per_group[0]
    for h in channels_per_group[1:]:
        out = (out[:, :, None] * h[:, None, :]).reshape(out.shape[0], -1)
    return out


# query: a row moving between --group-by groups changed two answers, each noised at the whole ε (2ε in all)
def test_standard_group_by_count_spends_eps_when_a_row_moves_between_groups(tmp_path):
    t = _csv(tmp_path / "t.csv", "g", ["A", "B"])
    eps = 1.0
    r = run_query(t, parse_query("count"), epsilon=eps, group_by="g", rng=0, keys=["A", "B"])
    assert r.epsilon_per_answer == pytest.approx(eps / 2) and r.epsilon_spent == eps
    U = queries.universe(2, 2)  # each row in group A (0) or B (1)
    tg = _tg(r)
    counts = [(U.databases == g).sum(axis=1) for g in (0, 1)]
    H = _joint([tg[c] for c in counts])
    assert measures.check_privacy(H, U.hamming(), epsilon=eps).ok
    tg_full = truncated_geometric_rows(math.exp(-eps), *r.answer_range)  # ε per group: a moved row costs 2ε
    assert not measures.check_privacy(_joint([tg_full[c] for c in counts]), U.hamming(), epsilon=eps).ok


# query: under d∞ one change of the values moved every group's answer, each noised at the whole ε
def test_dinf_group_by_percentile_spends_eps_over_the_groups(tmp_path):
    t = _csv(tmp_path / "t.csv", "g,v", [("A", 1), ("B", 2)])
    eps = 1.0
    r = run_query(t, parse_query("percentile:v:50"), epsilon=eps, bounds=(0, 3), privacy="dinf", group_by="g", rng=0)
    assert r.epsilon_per_answer == pytest.approx(eps / 2) and "NOT protected" in r.public
    U = queries.universe(2, 4)  # row 0 in A, row 1 in B (public), values 0..3
    tg = _tg(r)
    H = _joint([tg[U.databases[:, 0]], tg[U.databases[:, 1]]])
    assert measures.check_privacy(H, U.chebyshev(), epsilon=eps).ok
    tg_full = truncated_geometric_rows(math.exp(-eps), 0, 3)
    assert not measures.check_privacy(_joint([tg_full[U.databases[:, 0]], tg_full[U.databases[:, 1]]]),
                                      U.chebyshev(), epsilon=eps).ok
    # under d1 the groups compose in parallel: ε per group is ε·d1-private for the release
    r1 = run_query(t, parse_query("sum:v"), epsilon=eps, bounds=(0, 3), privacy="d1", group_by="g", rng=0)
    assert r1.epsilon_per_answer == eps
    tg1 = _tg(r1)
    lo1 = r1.answer_range[0]
    H1 = _joint([tg1[U.databases[:, 0] - lo1], tg1[U.databases[:, 1] - lo1]])
    assert measures.check_privacy(H1, U.manhattan(), epsilon=eps).ok


# query: DuckDB could open files other than the table (another table's rows, charged to no ledger)
def test_duckdb_reads_the_table_file_and_nothing_else(tmp_path):
    import duckdb

    from dprivacy.data.tables import _connect, _relation

    t = _csv(tmp_path / "t.csv", "x", [1, 2])
    other = _csv(tmp_path / "other.csv", "y", [3])
    con = _connect(os.path.abspath(t))
    assert con.execute(f"SELECT count(*) FROM {_relation(os.path.abspath(t))}").fetchone()[0] == 2
    with pytest.raises(duckdb.Error):
        con.execute(f"SELECT * FROM read_csv_auto('{other}')").fetchall()
    with pytest.raises(duckdb.Error):
        con.execute("SET enable_external_access=true")


# query: one ragged line made DuckDB read the CSV as another, empty table (a count of 0, stated as exact)
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


# query: one row changed a CSV's column types or dialect (108 against 0 at Δ 1; a free refusal told tables apart)
def test_csv_column_types_do_not_depend_on_the_rows(tmp_path):
    """Found by a review: DuckDB guessed a CSV's column types and date format from its rows, and re-read the
    table as text when a row did not fit: two tables one row apart ('10' against 'x') answered a count under
    --where "g < '10'" 108 and 0 (Δ = 1), a refusal told them apart for free, a '#' row was dropped as a comment
    and the JSON keys were numbers or strings. Under standard every column of a CSV is read as text; under a
    metric on values the protected column is text and only the public ones are inferred (from every row)."""
    rows = [(9 + i % 3, i % 2) for i in range(300)]
    a = _csv(tmp_path / "a.csv", "g,v", rows)
    b = _csv(tmp_path / "b.csv", "g,v", [("x", 1)] + rows[1:])
    answers = []
    for t in (a, b):
        r = run_query(t, parse_query("count"), epsilon=1e6, where="g < '10'", rng=0)  # a text comparison in both
        answers.append(r.answers[0].noisy)
        k = run_query(t, parse_query("count"), epsilon=1e6, group_by="g", keys=["10", "9"], rng=0)
        assert [type(x.group) for x in k.answers] == [str, str]
    truth = sum(1 for g, _ in rows if str(g) < "10")
    assert answers[0] == truth and abs(answers[1] - answers[0]) <= 1
    n = run_query(a, parse_query("count"), epsilon=1e6, where="TRY_CAST(g AS INTEGER) < 10", rng=0)
    assert n.answers[0].noisy == sum(1 for g, _ in rows if g < 10)
    # a row starting with '#' is a row, not a comment
    (tmp_path / "c.csv").write_text("g,v\n1,2\n#3,4\n5,6\n")
    assert run_query(str(tmp_path / "c.csv"), parse_query("count"), epsilon=1e6, rng=0).answers[0].noisy == 3
    # a metric on values: the protected column is text (a non-number there is invalid, not a new type for the others)
    s_ok = _csv(tmp_path / "s_ok.csv", "w,v", [(i % 12, 5) for i in range(200)])
    s_bad = _csv(tmp_path / "s_bad.csv", "w,v", [(i % 12, 5 if i else "abc") for i in range(200)])
    res = [run_query(t, parse_query("sum:v"), epsilon=1e6, bounds=(0, 9), where="w < 10", privacy="d1", skip_invalid=True,
                     rng=0).answers[0].noisy for t in (s_ok, s_bad)]
    assert res[0] == 5 * sum(1 for i in range(200) if i % 12 < 10) and res[0] - res[1] == 5
    # the delimiter comes from the header line
    (tmp_path / "semi.csv").write_text("g;v\n1;2\n3;4\n")
    assert run_query(str(tmp_path / "semi.csv"), parse_query("sum:v"), epsilon=1e6, bounds=(0, 9), rng=0).answers[0].noisy == 6


# query: the value checks ran on the --where selection only: a free refusal told whether a row matched, quoting it
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


# query: a refusal for fractional values counted the values inside the asker's --bounds, and named the first, for free
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


# query: the exact number of values clamped to --bounds (and of rows skipped) was released beside the noisy answer
def test_the_clamped_count_is_shown_to_the_owner_only_and_an_empty_table_has_no_error(tmp_path):
    args = ("query", _data("SampleSuperstore.csv.gz"), "--query", "sum:Quantity", "--bounds", "0,10", "--epsilon", "1",
            "--group-by", "Region", "--keys", "Central,East,South,West")
    p = _cli(*args, "--owner")
    assert p.returncode == 0 and "clamped" in p.stdout and "not private" in p.stdout, p.stdout
    # without --owner the release carries no exact count (a review read the number of a city's rows above a
    # threshold from the JSON an analyst would get)
    p = _cli(*args)
    assert p.returncode == 0 and "clamped" not in p.stdout, p.stdout
    j = json.loads(_cli(*args, "--json").stdout)
    assert all("clamped_not_private" not in a for a in j["answers"]) and "rows_skipped_not_private" not in j
    j = json.loads(_cli(*args, "--json", "--owner").stdout)
    assert all(a["clamped_not_private"] > 0 for a in j["answers"])  # quantities up to 14 in every region
    e = str(tmp_path / "empty.csv")
    (tmp_path / "empty.csv").write_text("x\n")
    r = run_query(e, parse_query("count"), epsilon=1.0, rng=0)
    assert r.answers[0].noisy == 0 and r.answers[0].expected_abs_error == 0 and r.answers[0].within == 0


# query: a percentile of an empty selection was refused: a free, exact "no row matches this --where"
def test_a_percentile_of_an_empty_selection_is_answered_as_lo():
    """Refusing it told anyone, exactly and for free, that no row matched; it is LO by convention,
    released with noise (here ε so large that the noise is 0)."""
    path = _superstore()
    tg = dict(mechanism="truncated-geometric")  # (the exponential mechanism's empty selection: test_rank_quantile)
    r = run_query(path, parse_query("percentile:Quantity:50"), epsilon=1000.0, bounds=(3, 9), where="Region = 'Atlantis'",
                  rng=1, **tg)
    assert r.answers[0].noisy == 3 and "LO by convention" in r.theorem
    g = run_query(path, parse_query("percentile:Quantity:50"), epsilon=1000.0, bounds=(3, 9), group_by="Region",
                  where="Region = 'West'", rng=1, keys=("Central", "East", "South", "West"), **tg)
    assert {a.group: a.noisy for a in g.answers if a.group != "West"} == {"Central": 3, "East": 3, "South": 3}


# query: standard --group-by released the keys found in the table: a row with a value of its own added a key
def test_standard_group_by_needs_declared_keys_and_the_release_does_not_depend_on_the_keys_in_the_table(tmp_path):
    """Found by a review: under standard ε-DP `count --group-by Sales` published every distinct value of Sales —
    a row with a value of its own added a key to the release (one row changed, the output's key set changed:
    no ε bounds that). Now the keys are declared: two neighbouring tables give answers on the same keys, a
    declared key absent from the table gets one, and a row with another key is in no group."""
    a = _csv(tmp_path / "a.csv", "g,v", [("x", 1), ("y", 2), ("y", 3)])
    b = _csv(tmp_path / "b.csv", "g,v", [("x", 1), ("y", 2), ("secret", 3)])  # one row changed
    with pytest.raises(ValueError, match="needs its group keys declared with --keys"):
        run_query(a, parse_query("count"), epsilon=1.0, group_by="g")
    ra = run_query(a, parse_query("count"), epsilon=1e6, group_by="g", keys=["y", "x", "z"], rng=0)
    rb = run_query(b, parse_query("count"), epsilon=1e6, group_by="g", keys=["y", "x", "z"], rng=0)
    assert [x.group for x in ra.answers] == [x.group for x in rb.answers] == ["y", "x", "z"]  # declared order
    assert [x.noisy for x in ra.answers] == [2, 1, 0] and [x.noisy for x in rb.answers] == [1, 1, 0]  # ε = 1e6: no noise
    s = run_query(b, parse_query("sum:v"), epsilon=1e6, bounds=(0, 5), group_by="g", keys=["x", "secret"], rng=0)
    assert [x.noisy for x in s.answers] == [1, 3] and s.epsilon_per_answer == pytest.approx(5e5)
    # under a metric on values the key column is public: its distinct values may be the keys
    d = run_query(a, parse_query("sum:v"), epsilon=1.0, bounds=(0, 5), group_by="g", privacy="d1", rng=0)
    assert [x.group for x in d.answers] == ["x", "y"] and "distinct values of 'g' in the table" in d.public


# query: count --group-by Sales published every sale amount as an exact group key
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


# query: tight-constraints' delivered ε was measured at the true answer's row, and its digits told sums apart
def test_the_reported_delivered_epsilon_does_not_read_the_data(tmp_path):
    """Measured at the true answer's row it printed 2.99999999492 for a sum of 0 and 2.99999999416 for 100 (review)."""
    from dprivacy.data.tables import parse_query, run_query

    out = []
    for k, v in enumerate((0, 100)):
        t = tmp_path / f"t{k}.csv"
        t.write_text("v\n" + f"{v}\n" * 1 + "0\n" * 99)
        r = run_query(str(t), parse_query("sum:v"), epsilon=5.0, bounds=(0, 100), mechanism="tight-constraints", rng=k)
        out.append(r.delivered_epsilon)
    assert out[0] == out[1] and out[0] <= 5.0 + 1e-6


# query: under --unit the rounding made rows 0.02 apart differ by e^1 where the guarantee said e^(ε·d)
def test_the_guarantee_under_a_unit_says_the_rounding_adds_a_unit():
    """Found by a review: values 10.49 and 10.51 (0.02 apart) are rounded to 10 and 11, and the release's
    probabilities differed by e^1, where the printed guarantee said e^(ε·d) for d the given values' distance."""
    sup = _data("SampleSuperstore.csv.gz")
    r = run_query(sup, parse_query("percentile:Sales:50"), epsilon=1.0, bounds=(0, 2000), unit=1, privacy="dinf", rng=0)
    assert "rounded to multiples of --unit 1" in r.guarantee and "e^(ε·(d + 1))" in r.guarantee


def test_a_query_spills_to_a_private_folder_removed_with_it_not_the_working_one(tmp_path, monkeypatch):
    # a buffer pool of 64 MB (as under `ulimit -v 128M`) makes DuckDB spill a sort of 3·10⁶ rows
    import gc
    import pathlib
    import tempfile
    import threading
    import time

    import pyarrow as pa
    import pyarrow.parquet as pq

    import dprivacy._system as system
    from dprivacy.data import table_sql

    monkeypatch.setattr(system, "address_space_limit", lambda: 128 * 2**20)
    n = 3_000_000
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": np.random.default_rng(0).random(n), "b": np.arange(n, dtype=np.float64)}), path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    con = table_sql._connect(str(path))
    spill = pathlib.Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0])
    assert spill.parent == pathlib.Path(tempfile.gettempdir()) and spill.stat().st_mode & 0o077 == 0
    seen: set = set()
    done = threading.Event()

    def watch():
        while not done.is_set():
            seen.update(str(f) for d in (spill, work) for f in d.rglob("*"))
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        got = con.execute(f"SELECT a FROM read_parquet('{path}') ORDER BY a").fetchnumpy()["a"]
    finally:
        done.set()
        watcher.join()
    assert got.size == n and (np.diff(got) >= 0).all()
    assert seen and all(f.startswith(str(spill)) for f in seen)  # it spilled, and only there
    con.close()
    del con
    gc.collect()
    assert not spill.exists() and not any(work.iterdir())
    # a folder left by a killed process of this machine (its pid no longer runs) is removed by the next connection;
    # a running process's is kept
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = pathlib.Path(table_sql._spill_folder())  # this process's, renamed as the dead one's
    stale = left.with_name(left.name.replace(f"-{os.getpid()}-", f"-{int(dead.stdout)}-"))
    left.rename(stale)
    (stale / "duckdb_temp_storage_DEFAULT-0.tmp").write_bytes(b"values")
    alive = pathlib.Path(table_sql._spill_folder())
    assert not stale.exists() and alive.exists()
    again = pathlib.Path(table_sql._spill_folder())
    assert alive.exists()  # (this process is running)
    alive.rmdir()
    again.rmdir()


def test_a_refused_query_closes_its_connection(tmp_path, monkeypatch):
    """A query refused after its connection opened (an unknown column, invalid values) closes it at once: DuckDB's
    memory and buffers of the table's values are not held until the exception's frames are collected."""
    import duckdb

    from dprivacy.data import tables

    opened = []
    connect = tables._connect
    monkeypatch.setattr(tables, "_connect", lambda path: opened.append(connect(path)) or opened[-1])
    path = tmp_path / "t.csv"
    path.write_text("v\n1\nx\n")
    with pytest.raises(ValueError, match="unknown column 'w'"):
        tables.run_query(str(path), tables.parse_query("sum:w"), epsilon=1.0, bounds=(0, 4))
    with pytest.raises(ValueError, match="not numeric|empty or non-numeric|non-numeric"):
        tables.run_query(str(path), tables.parse_query("sum:v"), epsilon=1.0, bounds=(0, 4))
    assert len(opened) == 2
    for con in opened:
        with pytest.raises(duckdb.ConnectionException):
            con.execute("SELECT 1")
