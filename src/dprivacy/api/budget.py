"""``dp.Budget``: the privacy-budget ledger of ``dprivacy query --budget-file``, charged from Python, and how it
knows a table.

A file is known by its path, its identity and its bytes (:mod:`dprivacy.data.budget`). In-memory data has none of
these that would hold across copies — a reordered, retyped or widened copy of a frame holds the same people in
other bytes — so it is known by the name the caller gives it (``name=``), as the command line knows a file by its
path; a charge on in-memory data without a name is refused. Beside the name the ledger records a digest of each
column's values that depends neither on the order of the rows and columns nor on the types (an int32 copy, a
categorical copy), and a charge says in its result when the digests show a likely mistake: a name charged for a
table that shares no column with the one it was first charged for, or a table whose columns were charged under
another name. The digests never decide which budget is charged.
"""

from __future__ import annotations

import os
from pathlib import Path

from .frames import OptionError, kind_of, label

#: How the columns' digests are made (recorded with them: digests made otherwise are not compared).
DIGEST_METHOD = "sum of DuckDB hash() of each value as text, mod 2^64"


class Budget:
    """A privacy-budget ledger: the ε spent on each table, across calls, processes and the command line.

    The ledger is the JSON file of ``dprivacy query --budget-file`` (:mod:`dprivacy.data.budget`); every charge
    takes an exclusive lock on it, so that two concurrent callers can neither lose nor double-count a charge, and a
    query that would exceed ``total`` is refused with nothing released and the ledger unchanged.

    A file is known by its path, its identity and its bytes (as from the command line). In-memory data is known
    by the name given to :func:`dprivacy.query` with ``name=``, which a charge on it requires: every copy of a
    table — its rows or columns reordered, its columns retyped, a column added — is the same people and must be
    charged under the same name; another name is another budget.

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file (created on first use). It names the tables and records digests of their values: keep
        it private.
    total : float, optional
        The total ε allowed on each table (``--budget``). Needed to charge; without it the ledger can be read.
    change : bool
        Allow ``total`` to differ from the budget recorded in the ledger for a table (never below what was spent;
        ``--change-budget``).

    Examples
    --------
    >>> import pandas as pd, dprivacy as dp
    >>> sales = pd.DataFrame({"region": ["West", "East", "West"], "units": [3, 5, 2]})
    >>> budget = dp.Budget("ledger.json", total=1.0)
    >>> answer = dp.query(sales, "count", epsilon=0.5, budget=budget, name="sales")
    >>> answer.budget["budget_remaining"]
    0.5
    >>> budget.remaining(name="sales")
    0.5
    """

    def __init__(self, path, total: float | None = None, *, change: bool = False):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise OptionError(f"Budget(path, total): path is the ledger file (a str or path), got {path!r}; e.g. "
                              "dp.Budget('ledger.json', total=1.0)")
        if total is not None and (isinstance(total, bool) or not isinstance(total, (int, float)) or not total > 0
                                  or total != total or total == float("inf")):
            raise OptionError(f"Budget total must be a positive finite ε, got {total!r}")
        self.path = None if path is None else Path(path)  # (None: refused on use, as --budget without --budget-file)
        self.total = total
        self.change = change

    def __repr__(self) -> str:
        return f"Budget({str(self.path)!r}, total={self.total!r})"

    def ledger(self) -> dict:
        """The ledger's content, validated: ``{table key: {"budget", "spent", "queries": [...]}}`` (in-memory data
        under ``name:NAME``)."""
        from ..data.budget import _locked, _read

        if self.path is None:
            raise OptionError("Budget(None): give the ledger's path")
        ledger = Path(os.path.realpath(self.path))
        if not ledger.exists():
            return {}
        with _locked(ledger):
            return _read(ledger)

    def spent(self, data=None, *, name: str | None = None) -> float:
        """ε spent so far on the file ``data``, or on the in-memory table called ``name``."""
        entry = self._entry(data, name, "spent")
        return float(entry["spent"]) if entry else 0.0

    def remaining(self, data=None, *, name: str | None = None) -> float:
        """ε left on the file ``data`` (or the table called ``name``) under ``total`` (or the budget recorded for
        it)."""
        entry = self._entry(data, name, "remaining")
        total = self.total if self.total is not None else (entry or {}).get("budget")
        if total is None:
            raise OptionError("Budget(path) without total: give total= to know what remains on a new table")
        return max(float(total) - (float(entry["spent"]) if entry else 0.0), 0.0)

    def _entry(self, data, name, what: str):
        from ..data.budget import _content_id, _entry_key, _file_id, table_key

        kind = None if data is None else kind_of(data)
        check_name(name, kind, data)
        if data is None and name is None:
            raise OptionError(f"Budget.{what}() needs the table: a file's path, or name= (the name in-memory data was "
                              "charged under)")
        if kind is not None and kind != "path" and name is None:
            raise OptionError(missing_name(kind, f"Budget.{what}()"))
        ledger = self.ledger()
        if kind == "path":
            key = _entry_key(ledger, table_key(data), _file_id(data), _content_id(data))
        else:
            key = _entry_key(ledger, name_key(name), None, None)
        return ledger.get(key)

    def _checked(self):
        from .._validate import check_epsilon

        if self.total is None or self.path is None:
            raise OptionError("--budget and --budget-file go together")
        return check_epsilon(self.total, name="budget")


def name_key(name: str) -> str:
    """The ledger key of the in-memory table called ``name``."""
    return f"name:{name}"


def missing_name(kind: str, where: str = "budget=") -> str:
    """The refusal of a charge (or a look-up) on in-memory data without ``name=``."""
    return (f"{where} with {label(kind)} needs name=: the table's name in the ledger (the command line knows a file "
            "by its path), the same for every copy of the table, e.g. name='sales-2024'")


def check_name(name, kind: str | None, data=None) -> None:
    """Refuse a ``name=`` that is not a name, or that is given with a path (a file is known by its path)."""
    if name is None:
        return
    if not isinstance(name, str) or not name.strip():
        raise OptionError(f"name= must be a non-empty string (the table's name in the ledger), got {name!r}")
    if kind == "path":
        raise OptionError(f"name= names in-memory data in the ledger; the file {data} is known there by its path, "
                          "identity and bytes: drop name=")


def column_digests(source) -> dict:
    """``{"method", "columns": {column: digest}}`` of an :class:`~dprivacy.data.memory.ArrowInput`: each column's
    digest is the sum, modulo 2^64, of DuckDB's hash of each value written as text (nulls included), so it depends
    neither on the order of the rows nor on the column's type where the values read the same (int32 or int64,
    categorical or text). It identifies a column's values for the notes of :func:`budget_note`, nothing more."""
    from ..data.table_sql import _connect, _quote, _relation

    names = list(source.schema.names)
    if not names:
        return {"method": DIGEST_METHOD, "columns": {}}
    con = _connect(source)
    try:
        sums = [f"sum(hash(TRY_CAST({_quote(c)} AS VARCHAR)))::HUGEINT % 18446744073709551616" for c in names]
        row = con.execute(f"SELECT {', '.join(sums)} FROM {_relation(source)}").fetchone()
    finally:
        con.close()
    return {"method": DIGEST_METHOD, "columns": {c: f"{int(v or 0):016x}" for c, v in zip(names, row)}}


def budget_note(ledger: dict, name: str, digests: dict) -> str | None:
    """What the columns' digests say about a charge under ``name`` (None when nothing looks wrong): that the name was
    first charged for a table with none of these columns, or that these columns were charged under another name."""
    from ..data.budget import _entry_key

    def values(entry):
        got = entry.get("columns") if isinstance(entry, dict) else None
        if not isinstance(got, dict) or got.get("method") != DIGEST_METHOD or not isinstance(got.get("columns"), dict):
            return None
        return set(got["columns"].values())

    mine = set(digests["columns"].values())
    if not mine:
        return None
    key = _entry_key(ledger, name_key(name), None, None)
    theirs = values(ledger.get(key))
    if theirs and not mine & theirs:
        return (f"the ledger's table {name!r} was first charged for data that shares no column's values with this "
                f"one; its budget was charged all the same (the name is the table's identity): if this is another "
                "table, give it a name of its own")
    for other, entry in ledger.items():
        theirs = values(entry)
        if other == key or not theirs or not other.startswith("name:"):
            continue
        if theirs <= mine or mine <= theirs:
            return (f"the ledger holds {other[5:]!r}, whose columns' values are all in this table or the reverse: if "
                    f"they hold the same people, charge them under one name ({other[5:]!r} and {name!r} are two "
                    "budgets)")
    return None
