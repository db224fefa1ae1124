"""Attacks on the budget ledger of `dprivacy query --budget-file` (ways to spend more than the budget on the same
people), each kept as a test so that no change reopens it (issue #30).

The comment above each test names the leak it closes. Inventory (leak, fix commit → test):

- a hard link to the table, or the table moved, got a fresh budget (f397c50)
  → test_ledger_knows_a_table_under_another_name
- a byte-for-byte copy of the table, or the same table gzip-compressed, got a fresh budget (40fe416, 129ab9c)
  → test_ledger_knows_a_byte_for_byte_copy_of_a_table
- under d1, sum:Quantity where Discount > 0 then sum:Discount where Quantity = 14 were both accepted (3e5a4c4)
  → test_ledger_refuses_selecting_on_a_column_an_earlier_query_protected
- normalized-d1 charges at --bounds 0,10 and 0,10000 were added as one unit (a54c29f)
  → test_the_ledger_keeps_one_normalized_d1_range_per_column
- d1 charges in different --unit were added as one unit (eb9617a)
  → test_review_findings_on_units_types_and_headers
- a symlinked or hard-linked ledger split the spending; --seed charged noise two queries shared (5a4c599)
  → test_the_ledger_is_one_file_whatever_its_spelling_and_refuses_seeded_queries
- a larger --budget or another --privacy model on the same table was taken silently (c7ab9a7)
  → test_a_changed_budget_needs_the_flag_and_models_do_not_mix
- a ledger with a NaN or negative spent, or charges that do not add up, was trusted (c7ab9a7)
  → test_a_corrupt_ledger_is_refused_and_left_unchanged
- a failed first query (ScanFailed) was charged under the path only: a link or copy had a fresh budget (5190e0b)
  → test_a_failed_first_query_is_charged_to_every_name_of_the_table (written for issue #30)

Tested where it is, beside the --where validation it exercises: test_tables_privacy.py::
test_a_query_that_fails_while_reading_the_rows_is_charged (a failure while reading the rows was free, 93a2edf).
obfuscate's per-user --budget is in test_attack_obfuscate.py (test_accuracy_is_recorded_in_the_sidecar).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("duckdb")

from dprivacy.data.budget import BudgetExceeded, charge  # noqa: E402
from dprivacy.data.tables import ScanFailed, parse_query, run_query  # noqa: E402
from test_tables import _superstore  # noqa: E402
from test_tables_privacy import _cli, _csv  # noqa: E402


# budget: a hard link to the table (or the table moved) got a fresh budget: the ledger knew it by its path only
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


# budget: a byte-for-byte copy of the table, or its gzip, got a fresh budget for the same people
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


# budget: under d1 a query could select on a column an earlier query protected (no ε·d bounds the two together)
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


# budget: normalized-d1 ε at --bounds 0,10 and at 0,10000 were added up as one unit (2 of 2 where 1001 was spent)
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


# budget: d1 ε in different --unit were added up as one unit (and a fraction past the sniffer's sample passed as whole)
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


# budget: a symlinked or hard-linked ledger split the spending; --seed charged noise that two queries shared
def test_the_ledger_is_one_file_whatever_its_spelling_and_refuses_seeded_queries(tmp_path):
    """Found by a review: a symlink to the ledger was replaced by a new ledger on the first write through it (3 ε
    spent of a budget of 2); a hard link split the same way; --seed with --budget-file charged reproducible noise
    that two queries shared (their difference was exact)."""
    t = _csv(tmp_path / "t.csv", "v", [1, 2, 3])
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    run = lambda: run_query(t, parse_query("count"), epsilon=1.0)  # noqa: E731
    charge(real, t, epsilon=1.0, budget=2.0, what="count", run=run)
    link.symlink_to(real)
    charge(link, t, epsilon=1.0, budget=2.0, what="count", run=run)
    assert link.is_symlink() and json.loads(real.read_text())[next(iter(json.loads(real.read_text())))]["spent"] == 2.0
    with pytest.raises(BudgetExceeded):
        charge(real, t, epsilon=1.0, budget=2.0, what="count", run=run)
    hard = tmp_path / "hard.json"
    os.link(real, hard)
    with pytest.raises(ValueError, match="2 names .hard links."):
        charge(hard, t, epsilon=0.5, budget=2.0, what="count", run=run)
    with pytest.raises(ValueError, match="the folder .* does not exist"):
        charge(tmp_path / "nodir" / "l.json", t, epsilon=0.5, budget=2.0, what="count", run=run)
    p = _cli("query", t, "--query", "count", "--epsilon", "1", "--seed", "7", "--budget-file", str(tmp_path / "s.json"),
             "--budget", "2")
    assert p.returncode == 2 and "--seed is a research mode" in p.stderr and not (tmp_path / "s.json").exists()


# budget: a larger --budget, or ε under another --privacy model, was taken silently on a table already charged
def test_a_changed_budget_needs_the_flag_and_models_do_not_mix(tmp_path):
    led = tmp_path / "ledger.json"
    charge(led, "t.csv", epsilon=0.8, budget=1.0, what="count")
    before = led.read_text()
    with pytest.raises(BudgetExceeded, match="--change-budget"):
        charge(led, "t.csv", epsilon=0.1, budget=5.0, what="count")
    with pytest.raises(BudgetExceeded, match="different unit"):
        charge(led, "t.csv", epsilon=0.1, budget=1.0, what="sum", privacy="d1")
    with pytest.raises(BudgetExceeded, match="below what was already spent"):
        charge(led, "t.csv", epsilon=0.1, budget=0.5, what="count", change_budget=True)
    assert led.read_text() == before
    _, spent, left = charge(led, "t.csv", epsilon=0.5, budget=5.0, what="count", change_budget=True)
    assert spent == pytest.approx(1.3) and left == pytest.approx(3.7)


# budget: a ledger whose spent was NaN or negative, or did not add up, was trusted (a NaN let every query through)
@pytest.mark.parametrize("entry, needle", [
    ({"budget": 1.0, "spent": float("nan"), "queries": []}, "NaN"),
    ({"budget": 1.0, "spent": -0.5, "queries": [{"epsilon": 0.1}]}, "spent -0.5"),
    ({"budget": 1.0, "spent": 0.5, "queries": 5}, "queries"),
    ({"budget": "1", "spent": 0.0, "queries": []}, "budget"),
    ({"budget": 1.0, "spent": 0.5, "queries": [{"epsilon": 0.1}]}, "add up"),
    ({"budget": 1.0, "spent": 2.0, "queries": [{"epsilon": 2.0}]}, "over its budget"),
    ([1, 2], "expected"),
])
def test_a_corrupt_ledger_is_refused_and_left_unchanged(tmp_path, entry, needle):
    from dprivacy.data.budget import table_key

    led = tmp_path / "ledger.json"
    text = json.dumps(entry if isinstance(entry, list) else {table_key("t.csv"): entry})
    led.write_text(text)
    with pytest.raises(ValueError, match="corrupt budget ledger") as exc:
        charge(led, "t.csv", epsilon=0.1, budget=1.0, what="count")
    assert needle in str(exc.value) and led.read_text() == text


# budget: a failed first query was charged under the table's path only, so a link or a copy had a fresh budget
def test_a_failed_first_query_is_charged_to_every_name_of_the_table(tmp_path):
    """Found reading the diff of 93a2edf (fixed in 5190e0b): the ε of a query that failed while reading the rows was
    recorded without the table's file identity and content hash when it was the table's first charge, so a hard link
    or a byte-for-byte copy of the table matched no entry and got a fresh budget — the failure, a yes/no question about
    the rows, was free there. Fails on 93a2edf."""
    t = tmp_path / "t.csv"
    t.write_text("a\n1\n2\n")
    os.link(t, tmp_path / "hard.csv")
    shutil.copy(t, tmp_path / "copy.csv")
    led = tmp_path / "ledger.json"

    def fail():
        raise ScanFailed("the query failed while reading the rows: Out of Memory Error")

    with pytest.raises(ScanFailed, match="ε = 0.6 charged"):
        charge(led, str(t), epsilon=0.6, budget=1.0, what="count", run=fail)
    for other in ("hard.csv", "copy.csv"):
        with pytest.raises(BudgetExceeded, match="only 0.4 of the budget 1 remains"):
            charge(led, str(tmp_path / other), epsilon=0.6, budget=1.0, what="count")
    assert len(json.loads(led.read_text())) == 1


# budget: a query that failed while reading the rows was free (a yes/no question per query), one stopped while it was
# slow was free, and a failed one was recorded without its columns (the rules on public/protected columns skipped it)
def test_epsilon_is_charged_before_the_rows_are_read(tmp_path):
    import subprocess

    t = tmp_path / "t.csv"
    t.write_text("a,b\n1,x\n2,y\n")
    led = tmp_path / "ledger.json"

    def fail():
        raise ScanFailed("the query failed", protected_column="a", public_columns=["b"])

    with pytest.raises(ScanFailed, match=r"ε = 0.5 charged"):
        charge(led, str(t), epsilon=0.5, budget=3.0, what="sum:a", run=fail, privacy="d1")
    (q,) = next(iter(json.loads(led.read_text()).values()))["queries"]
    assert q["failed"] is True and q["protected"] == "a" and q["public"] == ["b"] and "status" not in q

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        charge(led, str(t), epsilon=0.5, budget=3.0, what="sum:a", run=interrupted, privacy="d1")
    entry = next(iter(json.loads(led.read_text()).values()))
    assert entry["spent"] == 1.0 and entry["queries"][-1]["interrupted"] is True

    def refused():
        raise ValueError("a refusal before any row is read")

    with pytest.raises(ValueError, match="refusal"):
        charge(led, str(t), epsilon=0.5, budget=3.0, what="sum:a", run=refused, privacy="d1")
    assert next(iter(json.loads(led.read_text()).values()))["spent"] == 1.0
    # a process killed while it reads the rows leaves its ε charged (the entry says pending)
    code = ("import os, sys; from dprivacy.data.budget import charge; "
            f"charge({str(led)!r}, {str(t)!r}, epsilon=0.5, budget=3.0, what='sum:a', privacy='d1', run=lambda: os._exit(9))")
    src = str(Path(__file__).resolve().parents[2] / "src")
    p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=src), timeout=120)
    assert p.returncode == 9
    entry = next(iter(json.loads(led.read_text()).values()))
    assert entry["spent"] == 1.5 and entry["queries"][-1]["status"] == "pending"
    # a refusal on a fresh ledger leaves no ledger
    fresh = tmp_path / "fresh.json"
    with pytest.raises(ValueError):
        charge(fresh, str(t), epsilon=0.5, budget=3.0, what="count", run=refused)
    assert not fresh.exists()
