"""dp.Budget: the ledger of the command line, charged from Python; an overspend refused as from the command line,
including by two concurrent callers (threads and processes). In-memory data is charged under its name= (required),
whatever copy of the table holds it; a file under its path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from api_helpers import api_message, cli_message, run_cli

import dprivacy as dp
from dprivacy.data.budget import BudgetExceeded

SRC = str(Path(__file__).resolve().parents[1] / "src")


def table(n: int = 30) -> pd.DataFrame:
    return pd.DataFrame({"units": np.arange(n) % 9, "region": ["West", "East"] * (n // 2)})


def test_charges_add_up_and_an_overspend_is_refused_as_from_the_command_line(tmp_path):
    df = table()
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    a = dp.query(df, "count", epsilon=0.6, budget=budget, name="sales")
    assert a.budget == {"budget": 1.0, "budget_spent": 0.6, "budget_remaining": pytest.approx(0.4)}
    with pytest.raises(BudgetExceeded) as exc:
        dp.query(df, "sum:units", epsilon=0.6, bounds=(0, 9), budget=budget, name="sales")
    assert budget.spent(name="sales") == pytest.approx(0.6) and budget.remaining(df, name="sales") == pytest.approx(0.4)
    # the same refusal from the command line, on a file of the same table
    df.to_parquet(tmp_path / "t.parquet", index=False)
    for expected in (0, 2):
        code, _, err = run_cli("query", "t.parquet", "--query", "count", "--epsilon", "0.6", "--budget-file",
                               "cli.json", "--budget", "1", cwd=tmp_path)
        assert code == expected, err
    assert api_message(exc.value, "the DataFrame 'sales'") == cli_message(err, tmp_path / "t.parquet", "t.parquet")
    ledger = budget.ledger()
    assert len(ledger) == 1 and [q["epsilon"] for q in next(iter(ledger.values()))["queries"]] == [0.6]


COPIES = {
    "rows reordered": lambda d: d.sample(frac=1.0, random_state=3),
    "rows reordered, index reset": lambda d: d.iloc[::-1].reset_index(drop=True),
    "columns reordered": lambda d: d[["region", "units"]],
    "retyped to int32": lambda d: d.astype({"units": "int32"}),
    "retyped to category": lambda d: d.astype({"region": "category"}),
    "widened": lambda d: d.assign(z=0),
    "as a pyarrow Table": lambda d: pa.Table.from_pandas(d.astype({"units": "int16"}), preserve_index=False),
    "as a polars DataFrame": lambda d: pl.from_pandas(d),
}


@pytest.mark.parametrize("copy", list(COPIES), ids=list(COPIES))
def test_a_changed_copy_under_the_same_name_shares_the_budget(tmp_path, copy):
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    dp.query(table(), "count", epsilon=0.6, budget=budget, name="sales")
    other = COPIES[copy](table())
    with pytest.raises(BudgetExceeded, match="only 0.4 of the budget 1 remains"):
        dp.query(other, "count", epsilon=0.6, budget=budget, name="sales")
    answer = dp.query(other, "count", epsilon=0.4, budget=budget, name="sales")
    assert answer.budget["budget_remaining"] == pytest.approx(0.0, abs=1e-12)
    assert "note" not in answer.budget  # the columns' digests found the same values: nothing to say
    assert budget.spent(name="sales") == pytest.approx(1.0)
    assert list(budget.ledger()) == ["name:sales"]


def test_a_charge_on_in_memory_data_without_a_name_is_refused_in_one_line(tmp_path):
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    for data in (table(), pa.Table.from_pandas(table()), pl.from_pandas(table())):
        with pytest.raises(ValueError) as exc:
            dp.query(data, "count", epsilon=0.5, budget=budget)
        msg = str(exc.value)
        assert "\n" not in msg and msg.startswith("budget= with the ") and "needs name=" in msg, msg
        assert "the same for every copy of the table" in msg
    with pytest.raises(ValueError, match=r"^Budget.spent\(\) with the DataFrame needs name="):
        budget.spent(table())
    assert not (tmp_path / "ledger.json").exists()  # nothing charged
    for bad in ("", "  ", 3):
        with pytest.raises(ValueError, match="name= must be a non-empty string"):
            dp.query(table(), "count", epsilon=0.5, budget=budget, name=bad)
    table().to_parquet(tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="is known there by its path, identity and bytes: drop name="):
        dp.query(tmp_path / "t.parquet", "count", epsilon=0.5, budget=budget, name="sales")


def test_two_names_are_two_budgets(tmp_path):
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    dp.query(table(), "count", epsilon=0.8, budget=budget, name="sales")
    with pytest.raises(BudgetExceeded):
        dp.query(table(), "count", epsilon=0.8, budget=budget, name="sales")
    answer = dp.query(table(), "count", epsilon=0.8, budget=budget, name="stock")  # another name: its own budget
    assert answer.budget["budget_remaining"] == pytest.approx(0.2)
    assert budget.spent(name="sales") == pytest.approx(0.8) and budget.spent(name="stock") == pytest.approx(0.8)
    # the digests of the columns say that the two names hold the same values, without deciding anything
    assert "'sales'" in answer.budget["note"] and "two budgets" in answer.budget["note"]
    assert "note" not in answer.to_dict() and "sales" not in json.dumps(answer.to_dict())


def test_a_name_reused_for_other_columns_is_charged_and_said(tmp_path):
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    dp.query(table(), "count", epsilon=0.5, budget=budget, name="sales")
    other = pd.DataFrame({"temperature": [20.5, 21.0, 19.5], "room": ["a", "b", "c"]})
    answer = dp.query(other, "count", epsilon=0.5, budget=budget, name="sales")
    assert answer.budget["budget_remaining"] == pytest.approx(0.0, abs=1e-12)  # the name decides, not the digests
    assert "shares no column's values" in answer.budget["note"]
    with pytest.raises(BudgetExceeded):
        dp.query(other, "count", epsilon=0.1, budget=budget, name="sales")


def test_a_path_is_the_command_lines_table(tmp_path):
    df = table()
    df.to_parquet(tmp_path / "t.parquet", index=False)
    code, _, err = run_cli("query", "t.parquet", "--query", "count", "--epsilon", "0.7", "--budget-file", "l.json",
                           "--budget", "1", cwd=tmp_path)
    assert code == 0, err
    budget = dp.Budget(tmp_path / "l.json", 1.0)
    assert budget.remaining(tmp_path / "t.parquet") == pytest.approx(0.3)
    with pytest.raises(BudgetExceeded, match="only 0.3 of the budget 1 remains"):
        dp.query(tmp_path / "t.parquet", "count", epsilon=0.5, budget=budget)
    dp.query(tmp_path / "t.parquet", "count", epsilon=0.3, budget=budget)
    assert budget.remaining(tmp_path / "t.parquet") == pytest.approx(0.0, abs=1e-12)


def test_budget_other_than_the_recorded_one_needs_change(tmp_path):
    df = table()
    dp.query(df, "count", epsilon=0.5, budget=dp.Budget(tmp_path / "l.json", 1.0), name="t")
    with pytest.raises(BudgetExceeded, match="pass --change-budget"):
        dp.query(df, "count", epsilon=0.5, budget=dp.Budget(tmp_path / "l.json", 2.0), name="t")
    ans = dp.query(df, "count", epsilon=0.5, budget=dp.Budget(tmp_path / "l.json", 2.0, change=True), name="t")
    assert ans.budget["budget_remaining"] == pytest.approx(1.0)


def test_two_threads_cannot_both_spend_the_last_of_a_budget(tmp_path):
    df = table(2000)
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    outcomes: list = []
    start = threading.Barrier(2)

    def ask():
        start.wait()
        try:
            dp.query(df, "count", epsilon=0.6, budget=budget, name="t")
            outcomes.append("answered")
        except BudgetExceeded:
            outcomes.append("refused")

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["answered", "refused"]
    assert budget.spent(name="t") == pytest.approx(0.6)


CHILD = """
import sys, numpy as np, pandas as pd, dprivacy as dp
from dprivacy.data.budget import BudgetExceeded
df = pd.DataFrame({"units": np.arange(2000) % 9})
sys.stdin.readline()  # both processes start together
try:
    dp.query(df, "count", epsilon=0.6, budget=dp.Budget(sys.argv[1], 1.0), name="t")
    print("answered")
except BudgetExceeded:
    print("refused")
"""


def test_two_processes_cannot_both_spend_the_last_of_a_budget(tmp_path):
    ledger = tmp_path / "ledger.json"
    env = dict(os.environ, PYTHONPATH=SRC)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(ledger)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=300) for p in procs]
    assert sorted(o.strip() for o, _ in outs) == ["answered", "refused"], outs
    data = json.loads(ledger.read_text())
    (entry,) = data.values()
    assert entry["spent"] == pytest.approx(0.6) and len(entry["queries"]) == 1


@pytest.mark.parametrize("args, says", [((2.0,), "path is the ledger file"), (("l.json", -1.0), "positive finite"),
                                        (("l.json", float("nan")), "positive finite"), (("l.json", "1"), "positive finite")])
def test_a_budget_with_a_wrong_argument_is_refused_in_one_line(args, says):
    with pytest.raises(ValueError, match=says):
        dp.Budget(*args)
