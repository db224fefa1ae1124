"""dp.Budget: the ledger of the command line, charged from Python; an overspend refused as from the command line,
including by two concurrent callers (threads and processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
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
    a = dp.query(df, "count", epsilon=0.6, budget=budget)
    assert a.budget == {"budget": 1.0, "budget_spent": 0.6, "budget_remaining": pytest.approx(0.4)}
    with pytest.raises(BudgetExceeded) as exc:
        dp.query(df, "sum:units", epsilon=0.6, bounds=(0, 9), budget=budget)
    assert budget.spent(df) == pytest.approx(0.6) and budget.remaining(df) == pytest.approx(0.4)
    # the same refusal from the command line, on a file of the same table
    df.to_parquet(tmp_path / "t.parquet", index=False)
    for expected in (0, 2):
        code, _, err = run_cli("query", "t.parquet", "--query", "count", "--epsilon", "0.6", "--budget-file",
                               "cli.json", "--budget", "1", cwd=tmp_path)
        assert code == expected, err
    assert api_message(exc.value, "the DataFrame") == cli_message(err, tmp_path / "t.parquet", "t.parquet")
    ledger = budget.ledger()
    assert len(ledger) == 1 and [q["epsilon"] for q in next(iter(ledger.values()))["queries"]] == [0.6]


def test_the_same_content_shares_a_budget_and_a_name_joins_copies(tmp_path):
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    dp.query(table(), "count", epsilon=0.5, budget=budget)
    with pytest.raises(BudgetExceeded):  # another object, the same rows and types: the same table
        dp.query(table().copy(), "count", epsilon=0.6, budget=budget)
    changed = table().assign(units=lambda d: d["units"].where(d.index != 0, 8))
    dp.query(changed, "count", epsilon=0.6, budget=budget)  # one cell changed: another table to the ledger...
    dp.query(table(), "count", epsilon=0.4, budget=budget, name="sales")  # ...unless named: then content or name
    with pytest.raises(BudgetExceeded):
        dp.query(changed, "count", epsilon=0.2, budget=budget, name="sales")
    assert budget.spent(name="sales") == pytest.approx(0.9)


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
    dp.query(df, "count", epsilon=0.5, budget=dp.Budget(tmp_path / "l.json", 1.0))
    with pytest.raises(BudgetExceeded, match="pass --change-budget"):
        dp.query(df, "count", epsilon=0.5, budget=dp.Budget(tmp_path / "l.json", 2.0))
    ans = dp.query(df, "count", epsilon=0.5, budget=dp.Budget(tmp_path / "l.json", 2.0, change=True))
    assert ans.budget["budget_remaining"] == pytest.approx(1.0)


def test_two_threads_cannot_both_spend_the_last_of_a_budget(tmp_path):
    df = table(2000)
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    outcomes: list = []
    start = threading.Barrier(2)

    def ask():
        start.wait()
        try:
            dp.query(df, "count", epsilon=0.6, budget=budget)
            outcomes.append("answered")
        except BudgetExceeded:
            outcomes.append("refused")

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["answered", "refused"]
    assert budget.spent(df) == pytest.approx(0.6)


CHILD = """
import sys, numpy as np, pandas as pd, dprivacy as dp
from dprivacy.data.budget import BudgetExceeded
df = pd.DataFrame({"units": np.arange(2000) % 9})
sys.stdin.readline()  # both processes start together
try:
    dp.query(df, "count", epsilon=0.6, budget=dp.Budget(sys.argv[1], 1.0))
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
