"""A privacy-budget ledger shared by every call on a table (sequential composition across queries).

The ledger is a JSON file {table key: {"budget": B, "spent": x, "queries": [...]}}. Each charge takes an
exclusive ``fcntl.flock`` on ``LEDGER.lock``, reads the ledger, refuses a charge that would exceed the
budget (the ledger unchanged), and otherwise writes the new ledger to a temporary file renamed over the
old one — so two concurrent calls can neither lose nor double-count a charge, and an interrupted call
leaves the old ledger intact. A query is charged the ε of its whole release (a grouped query splits it
among its groups where a row can change several answers, see :mod:`.tables`). The ledger is validated on
every read (finite budget > 0, finite spent >= 0 equal to the sum of its queries' ε, one privacy model
per table); the recorded budget changes only with ``change_budget`` (``--change-budget``). A table is
known by its resolved path, by its file identity (device, inode) and by the SHA-256 of its bytes
(decompressed, for gzip), so a hard link, a moved file, a byte-for-byte copy and its gzip share its
budget; a copy that differs in any byte (a row added, another format) is another table, and the ledger
cannot know it holds the same people. The ledger is therefore the data owner's own file, not to be published with the
answers: it names the table's full path, and the SHA-256 of its bytes confirms a guess of the whole table.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import time
import zlib
from pathlib import Path

from .tables import PRIVACY_MODELS, check_table_file

#: Spending within this of the budget counts as within it (ε values are decimal inputs).
SLACK = 1e-12


class BudgetExceeded(ValueError):
    """A charge that would exceed the budget (the ledger is unchanged)."""


def table_key(path) -> str:
    return str(Path(path).resolve())


def _file_id(path) -> str | None:
    """The table file's identity (device, inode, modification time): the same for every name of one file
    — a hard link, or the file moved — which the path key alone missed (a hard link to the table got a
    fresh budget). A copy is another file and is not recognised; nor is a link to a table modified since
    its first charge (the table's own path still is)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    # with the modification time: an inode freed by a deleted table and given to a new file is not the
    # old table (else `rm a.csv; cp t.csv other.csv` could inherit a.csv's budget and privacy model)
    return f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}"


def _content_id(path) -> str | None:
    """SHA-256 of the table's bytes (1.5 GB/s measured here, against DuckDB reading the same file for the
    query): a byte-for-byte copy of a table is the same people, and got a fresh budget under the path and
    inode keys alone. A gzip file is hashed decompressed, so that ``zcat t.csv.gz > t.csv`` is the same
    table too. None for a folder or an unreadable file."""
    import gzip

    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            return "sha256:" + hashlib.file_digest(f, "sha256").hexdigest()
    except (OSError, ValueError, EOFError, zlib.error):  # a damaged file: the query itself says what is wrong
        return None


def _entry_key(data: dict, key: str, file_id: str | None, content: str | None = None) -> str:
    """The ledger key under which ``key``'s charges are kept: its own, or that of an entry recorded for
    the same file under another name, or for a file with the same bytes (a copy)."""
    if key in data:
        return key
    for k, entry in data.items():  # another name of the same table (``names``: a DataFrame's names, dprivacy.api)
        if isinstance(entry, dict) and key in (entry.get("names") or ()):
            return k
    for k, entry in data.items():
        if not isinstance(entry, dict):
            continue
        if (file_id is not None and entry.get("file_id") == file_id) or (content is not None and entry.get("content") == content):
            return k
    return key


@contextlib.contextmanager
def _locked(ledger: Path):
    lock = ledger.with_name(ledger.name + ".lock")
    with open(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _validate(ledger: Path, data) -> dict:
    """The ledger's content checked entry by entry; a ValueError naming the first problem otherwise."""
    def bad(why: str):
        return ValueError(f"corrupt budget ledger {ledger}: {why}; fix or remove it (it is left unchanged)")

    if not isinstance(data, dict):
        raise bad(f"expected {{table: {{budget, spent, queries}}}}, found a {type(data).__name__}")
    for key, entry in data.items():
        if not isinstance(entry, dict):
            raise bad(f"the entry of {key!r} is a {type(entry).__name__}, not {{budget, spent, queries}}")
        budget, spent, queries = entry.get("budget"), entry.get("spent"), entry.get("queries")
        if not _finite(budget) or budget <= 0:
            raise bad(f"{key!r} has budget {budget!r} (expected a finite number > 0)")
        if not _finite(spent) or spent < 0:
            raise bad(f"{key!r} has spent {spent!r} (expected a finite number >= 0)")
        if spent > budget + SLACK:
            raise bad(f"{key!r} has spent {spent:g} over its budget {budget:g}")
        if not isinstance(queries, list) or not all(isinstance(q, dict) and _finite(q.get("epsilon")) and q["epsilon"] > 0
                                                    for q in queries):
            raise bad(f"{key!r} has queries {str(queries)[:60]!r} (expected a list of {{query, epsilon > 0, time}})")
        total = math.fsum(q["epsilon"] for q in queries)
        if abs(total - spent) > 1e-9 * max(1.0, spent):
            raise bad(f"{key!r} has spent {spent:g} but its queries add up to {total:g}")
        privacy = entry.get("privacy", "standard")
        if privacy not in PRIVACY_MODELS:
            raise bad(f"{key!r} has privacy {privacy!r} (expected one of {', '.join(PRIVACY_MODELS)})")
    return data


def _read(ledger: Path) -> dict:
    if not ledger.exists():
        return {}
    def no_constant(c):
        raise ValueError(c)

    try:
        data = json.loads(ledger.read_text(encoding="utf-8"), parse_constant=no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"corrupt budget ledger {ledger}: {exc}; fix or remove it (it is left unchanged)") from None
    except ValueError as exc:
        raise ValueError(f"corrupt budget ledger {ledger}: {exc} is not a number; fix or remove it (it is left unchanged)") from None
    return _validate(ledger, data)


def _check_columns(queries: list, protected: str | None, public: list, table) -> None:
    """Under a metric on values each query protects one column's values and treats the columns of its
    --where/--group-by as public. A later query must not select on a column an earlier one protected,
    nor protect a column an earlier one selected on: together they bound no ε·d for that column (found:
    sum:Quantity where Discount > 0, then sum:Discount where Quantity = 14, accepted as 2 of 2)."""
    if protected is None:
        return
    low = lambda c: str(c).lower()  # noqa: E731 - DuckDB's column names are case-insensitive
    pub = {low(c) for c in public}
    for q in queries:
        if q.get("protected") is not None and low(q["protected"]) in pub:
            raise BudgetExceeded(f"this query selects on {q['protected']!r} (--where/--group-by, treated as public), whose "
                                 f"values an earlier query on {table} protected ({q.get('query')}): the two releases "
                                 "bound no ε·d together; refused, ledger unchanged, nothing released")
        if low(protected) in {low(c) for c in q.get("public") or []}:
            raise BudgetExceeded(f"this query protects {protected!r}, which an earlier query on {table} ({q.get('query')}) "
                                 "treated as public (--where/--group-by): the two releases bound no ε·d together; "
                                 "refused, ledger unchanged, nothing released")


def _check_unit(queries: list, protected: str | None, unit: float | None, table) -> None:
    """Under d1 and d∞ the distance, and so ε, is counted in units of --unit: ε = 1 per 0.001 is ε = 1000
    per 1. Charges on one column in different units do not add up (two d1 queries at --unit 1 and 0.001
    would be recorded as 2 of 2 where they spend 1001 per unit), so a column keeps the unit of its first query."""
    if protected is None:
        return
    mine = 1.0 if unit is None else float(unit)
    for q in queries:
        if q.get("protected") is not None and str(q["protected"]).lower() == str(protected).lower() \
                and q.get("privacy") in ("d1", "dinf"):
            theirs = float(q.get("unit") or 1.0)
            if theirs != mine:
                raise BudgetExceeded(f"the ledger's ε for {protected!r} on {table} is per --unit {theirs:g} (its first query, "
                                     f"{q.get('query')}); this query's is per {mine:g}, a different unit that does not add "
                                     f"up with it: use --unit {theirs:g}; refused, ledger unchanged, nothing released")


def _check_range(queries: list, protected: str | None, span: float | None, table) -> None:
    """Under normalized-d1 the distance is Σ|x − x'|/(HI − LO), so ε is counted per HI − LO of --bounds: ε = 1
    at --bounds 0,10 is ε = 1000 at 0,10000. Charges on one column with different ranges do not add up (two
    such queries would be recorded as 2 of 2 where they spend 1001 in the second one's metric), so a
    column keeps the range of its first query."""
    if protected is None or span is None:
        return
    for q in queries:
        if q.get("protected") is not None and str(q["protected"]).lower() == str(protected).lower() \
                and q.get("privacy") == "normalized-d1" and q.get("range") is not None:
            theirs = float(q["range"])
            if theirs != span:
                raise BudgetExceeded(f"the ledger's ε for {protected!r} on {table} is under normalized-d1 with HI − LO = "
                                     f"{theirs:g} (its first query, {q.get('query')}); this query's --bounds span {span:g}, "
                                     f"a different metric that does not add up with it: give --bounds spanning {theirs:g}; "
                                     "refused, ledger unchanged, nothing released")


def charge(ledger, table, *, epsilon: float, budget: float, what: str, run=None, privacy: str = "standard",
           change_budget: bool = False, identity: tuple[str, str | None] | None = None,
           entry_fields: dict | None = None):
    """Charge ε to ``table`` in ``ledger`` under ``budget`` and, inside the lock, call ``run()`` (the
    query) so that the answer is released only when the charge is recorded. Returns (run's result,
    spent after, remaining).

    Refused (the ledger unchanged): a ledger that does not validate; a ``budget`` other than the one
    recorded for the table unless ``change_budget`` (and never below what was spent); a ``privacy`` model
    other than the table's (ε under d1 and ε under d_h are not in the same unit: they do not add up to one
    guarantee); a charge that would exceed the budget; under a metric on values, a query whose result
    selects on a column an earlier query protected, or protects one an earlier query selected on
    (:func:`_check_columns`; checked on ``run()``'s result, which is then not returned).

    ``identity``: (key, content) of a table that is not a file of its own (a DataFrame, :mod:`dprivacy.api`): its
    ledger key and the digest of its content (or None), in place of the path, the file identity and the file's
    digest; ``table`` then only names it in messages. ``entry_fields``: more fields recorded on the table's entry
    when they are not there yet (the API's digests of a named table's columns)."""
    given = ledger
    # one ledger whatever its spelling: a write through a symlink would replace the link by the new ledger and
    # leave the file it points to with the old spending (3 of a budget of 2 spent through two names); the lock
    # is the resolved file's too
    ledger = Path(os.path.realpath(ledger))
    if ledger.exists() and not ledger.is_file():  # /dev/full would be read without end (and replaced)
        raise ValueError(f"budget ledger {given} is not a regular file: give the path of a JSON file (created on first use)")
    if ledger.exists() and ledger.stat().st_nlink > 1:
        raise ValueError(f"budget ledger {given} has {ledger.stat().st_nlink} names (hard links): an update writes a new file "
                         "under one name and the others keep the old spending; keep one name (remove the other links)")
    if not ledger.parent.is_dir():
        raise ValueError(f"budget ledger {given}: the folder {ledger.parent} does not exist")
    lock = ledger.with_name(ledger.name + ".lock")
    if lock.exists() and not lock.is_file():  # (opened to be locked: a FIFO there would be waited on)
        raise ValueError(f"budget ledger {given}: its lock {lock} is not a regular file: remove it (it is made on use)")
    if identity is None and os.path.exists(table):  # (hashed below, before the query: a FIFO would block for ever; a missing table is a name)
        check_table_file(table)
    key = table_key(table) if identity is None else identity[0]
    if not _finite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if not _finite(budget) or budget <= 0:
        raise ValueError(f"budget must be a finite number > 0, got {budget!r}")
    if privacy not in PRIVACY_MODELS:
        raise ValueError(f"privacy must be one of {', '.join(PRIVACY_MODELS)}, got {privacy!r}")
    file_id, content = (_file_id(table), _content_id(table)) if identity is None else (None, identity[1])
    with _locked(ledger):
        data = _read(ledger)
        key = _entry_key(data, key, file_id, content)
        entry = data.get(key, {"budget": budget, "spent": 0.0, "queries": [], "privacy": privacy})
        old = entry.get("privacy", "standard")
        if old != privacy:
            raise BudgetExceeded(f"the ledger's budget for {table} is in ε under --privacy {old}; this query is under "
                                 f"--privacy {privacy}, a different unit (the two do not add up to one guarantee): use "
                                 "another --budget-file; refused, ledger unchanged")
        if entry["budget"] != budget:
            if not change_budget:
                raise BudgetExceeded(f"the ledger's budget for {table} is {entry['budget']:g} (spent {entry['spent']:g}); "
                                     f"--budget {budget:g} differs: pass --change-budget to change it; refused, ledger unchanged")
            if entry["spent"] > budget + SLACK:
                raise BudgetExceeded(f"budget {budget:g} is below what was already spent on {table} ({entry['spent']:g}); "
                                     "refused, ledger unchanged")
        after = float(entry["spent"]) + float(epsilon)
        if after > budget + SLACK:
            raise BudgetExceeded(f"this query would spend ε = {epsilon:g} on {table}, but only {max(budget - entry['spent'], 0):g} "
                                 f"of the budget {budget:g} remains (spent {entry['spent']:g}); refused, ledger unchanged")

        def record(**details) -> None:
            entry["budget"] = budget
            entry["privacy"] = privacy
            if file_id is not None:
                entry.setdefault("file_id", file_id)
            if content is not None:
                entry.setdefault("content", content)
            for field, value in (entry_fields or {}).items():
                entry.setdefault(field, value)
            if identity is not None and key != identity[0] and identity[0] not in entry.setdefault("names", []):
                entry["names"].append(identity[0])  # a name given to a table the ledger knew by its content
            entry["spent"] = after
            entry["queries"].append({"query": what, "epsilon": float(epsilon), "privacy": privacy,
                                     "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **details})
            data[key] = entry
            _write(ledger, data)

        def settle(**details) -> None:
            """The provisional entry, completed: its status dropped, what the query found added."""
            q = entry["queries"][-1]
            q.pop("status", None)
            q.update(details)
            _write(ledger, data)

        from .tables import ScanFailed

        existed, before = ledger.exists(), json.loads(json.dumps(data))

        def restore() -> None:
            if existed:
                _write(ledger, before)
            else:
                ledger.unlink(missing_ok=True)

        # ε is charged before the rows are read: an interrupt, a time-out or a kill while they are read leaves it
        # charged (else a query stopped for being slow would be free, and its slowness can depend on one row). A refusal
        # that is the query's or the table's (a ValueError from run()) restores the ledger as it was.
        record(status="pending")
        try:
            result = run() if run is not None else None
        except ScanFailed as exc:
            # a failure while the answers were computed can depend on the rows: it costs ε like an answer, under the
            # query's columns (the rules on protected and public columns hold for it too)
            settle(failed=True, **({"protected": exc.protected_column, "public": exc.public_columns}
                                   if exc.protected_column is not None else {}))
            raise ScanFailed(f"{exc} (ε = {float(epsilon):g} charged: a failure while reading the rows may depend on "
                             f"them; spent {after:g} of {budget:g})", protected_column=exc.protected_column,
                             public_columns=exc.public_columns) from None
        except Exception as exc:
            from .._system import memory_failure

            memory = memory_failure(exc)
            if memory is not None:  # running out of memory on the way (a value's size, a row's text) costs ε too
                settle(failed=True)
                raise ScanFailed(f"{memory} (ε = {float(epsilon):g} charged: a failure while reading the rows may "
                                 f"depend on them; spent {after:g} of {budget:g})") from None
            if isinstance(exc, ValueError):  # a refusal: nothing computed from the rows is released
                restore()
            else:
                settle(failed=True)
            raise
        except BaseException:
            settle(interrupted=True)
            raise
        protected = getattr(result, "protected_column", None)
        public = list(getattr(result, "public_columns", None) or [])
        unit = getattr(result, "unit", None) if privacy in ("d1", "dinf") else None
        bounds = getattr(result, "bounds", None) if privacy == "normalized-d1" else None
        span = float(bounds[1]) - float(bounds[0]) if bounds is not None else None
        earlier = entry["queries"][:-1]
        try:
            _check_columns(earlier, protected, public, table)
            _check_unit(earlier, protected, unit, table)
            _check_range(earlier, protected, span, table)
        except BudgetExceeded:
            restore()
            raise
        settle(**({"protected": protected, "public": public} if protected is not None else {}),
               **({"unit": unit} if unit is not None else {}), **({"range": span} if span is not None else {}))
    return result, after, budget - after


def _write(ledger: Path, data: dict) -> None:
    """The new ledger through a temporary file renamed over it (under the lock)."""
    tmp = ledger.with_name(f".{ledger.name}.{os.getpid()}.partial")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, ledger)
