"""A privacy-budget ledger shared by every call on a table (sequential composition across queries).

The ledger is a JSON file {table key: {"budget": B, "spent": x, "queries": [...]}}. Each charge takes an
exclusive ``fcntl.flock`` on ``LEDGER.lock``, reads the ledger, refuses a charge that would exceed the
budget (the ledger unchanged), and otherwise writes the new ledger to a temporary file renamed over the
old one — so two concurrent calls can neither lose nor double-count a charge, and an interrupted call
leaves the old ledger intact. A grouped query costs ε once (its groups are disjoint: parallel
composition).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path

#: Spending within this of the budget counts as within it (ε values are decimal inputs).
SLACK = 1e-12


class BudgetExceeded(ValueError):
    """A charge that would exceed the budget (the ledger is unchanged)."""


def table_key(path) -> str:
    return str(Path(path).resolve())


@contextlib.contextmanager
def _locked(ledger: Path):
    lock = ledger.with_name(ledger.name + ".lock")
    with open(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read(ledger: Path) -> dict:
    if not ledger.exists():
        return {}
    try:
        data = json.loads(ledger.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"corrupt budget ledger {ledger}: {exc}; fix or remove it (it is left unchanged)") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) and isinstance(v.get("spent"), (int, float)) for v in data.values()):
        raise ValueError(f"corrupt budget ledger {ledger}: expected {{table: {{budget, spent, queries}}}}; it is left unchanged")
    return data


def charge(ledger, table, *, epsilon: float, budget: float, what: str, run=None):
    """Charge ε to ``table`` in ``ledger`` under ``budget`` and, inside the lock, call ``run()`` (the
    query) so that the answer is released only when the charge is recorded. Returns (run's result,
    spent after, remaining)."""
    ledger = Path(ledger)
    key = table_key(table)
    with _locked(ledger):
        data = _read(ledger)
        entry = data.get(key, {"budget": budget, "spent": 0.0, "queries": []})
        if entry.get("budget") != budget:
            if entry.get("spent", 0) > budget + SLACK:
                raise BudgetExceeded(f"budget {budget:g} is below what was already spent on {table} ({entry['spent']:g})")
            entry["budget"] = budget
        after = float(entry["spent"]) + float(epsilon)
        if after > budget + SLACK:
            raise BudgetExceeded(f"this query would spend ε = {epsilon:g} on {table}, but only {max(budget - entry['spent'], 0):g} "
                                 f"of the budget {budget:g} remains (spent {entry['spent']:g}); refused, ledger unchanged")
        result = run() if run is not None else None
        entry["spent"] = after
        entry["queries"].append({"query": what, "epsilon": float(epsilon), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        data[key] = entry
        tmp = ledger.with_name(f".{ledger.name}.{os.getpid()}.partial")
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, ledger)
    return result, after, budget - after
