"""How :mod:`dprivacy.data.tables` reads a table with DuckDB: a connection that may read the one file and nothing
else, the relation with a CSV dialect and column types that depend on public data only, the ``--where``
condition bound to it, the declared group keys, and refusals that quote no cell unless the data owner asks.

An in-memory table (:class:`~.memory.ArrowInput`) is registered on the connection as an Arrow table and scanned
where it is, with the column types DuckDB gives the Parquet file of the same table; that connection reads no file
and writes none (no spilling to a temporary folder: a query that does not fit in memory fails instead).
"""

from __future__ import annotations

import os

from .memory import ArrowInput, display_name
from .table_models import MAX_KEYS

#: The name under which an in-memory table is registered on its connection.
ARROW_TABLE = "dp_table"

def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _first_bad_row(con, rel: str, bad: str) -> str:
    """', the first at row K of the file (1 = first data row)' for the error message: K counts data rows
    from 1 in file order (DuckDB keeps insertion order); empty when it cannot be found. The row's value is
    not quoted: an error can reach whoever asked the query, and a value is what the noise protects."""
    try:
        got = con.execute(f"SELECT __row FROM (SELECT row_number() OVER () AS __row, * FROM {rel}) WHERE ({bad}) "
                          "ORDER BY __row LIMIT 1").fetchone()
    except Exception:  # the count above already says what is wrong
        return ""
    return f", the first at row {int(got[0])} of the file (1 = first data row)" if got else ""


def _as_type(col: str, sql_type: str, target: str) -> str:
    """SQL for the column's value as ``target``, NULL where it does not convert. Text goes through
    ``trim`` first: DuckDB 2.0 pushes a bare ``TRY_CAST(col AS T)`` into the CSV reader, which then
    raises on the first value that does not convert instead of returning NULL."""
    if any(t in sql_type for t in ("VARCHAR", "TEXT", "STRING")):
        return f"TRY_CAST(trim({col}) AS {target})"
    return f"TRY_CAST({col} AS {target})"


def _is_numeric(sql_type: str) -> bool:
    """A DuckDB numeric type (whose values other than 0 and 1 are not true/false flags)."""
    return any(t in sql_type for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC"))


def _as_double(col: str, sql_type: str) -> str:
    return _as_type(col, sql_type, "DOUBLE")


def _literal(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _relation(path, *, text=None, header: bool = True) -> str:
    """The table as a DuckDB relation. A CSV is read with a dialect that depends on its header line only
    (:func:`_csv_dialect`; the quote and escape ``"``, no comment character, no line skipped) and with column
    types that depend on public data only: ``text=None`` (standard ε-DP, every column protected) reads every
    column as text; ``text`` = the protected columns reads those as text and infers the others from every row
    of the file (``sample_size=-1``). The sniffer's guesses from the rows themselves made the release depend on
    one row beyond Δ: one 'x' among integers turned a numeric --where into a text comparison for every
    row (108 against 0), a row '12/13/2020' set the date format of the whole column, and a row starting with '#'
    was dropped as a comment. Casts in the queries (``_as_type``) decide what is a number. An in-memory table is
    its registered name (its columns have their types: nothing is inferred)."""
    if isinstance(path, ArrowInput):
        return _quote(ARROW_TABLE)
    low = path.lower()
    lit = _literal(path)
    if low.endswith(".parquet") or low.endswith(".pq"):
        return f"read_parquet({lit})"
    if low.endswith(".csv") or low.endswith(".csv.gz") or low.endswith(".tsv"):
        delim, skip = _csv_dialect(path)
        dialect = (f"delim={_literal(delim)}, quote='\"', escape='\"', comment='', header={str(header).lower()}, skip={skip}, "
                   "auto_detect=true")
        if text is None:
            return f"read_csv({lit}, {dialect}, all_varchar=true)"
        types = (", types={" + ", ".join(f"{_literal(c)}: 'VARCHAR'" for c in text) + "}") if text else ""
        return f"read_csv({lit}, {dialect}, sample_size=-1{types})"
    raise ValueError(f"cannot tell the format of {path!r}: expected .csv, .csv.gz or .parquet")


#: Delimiters a CSV's header line may use: the one that splits it into the most fields is taken.
CSV_DELIMITERS = (",", ";", "\t", "|")


def _csv_dialect(path: str) -> tuple[str, int]:
    """(delimiter, blank lines before the header) of a CSV from its first non-blank line (the header, public):
    the candidate of :data:`CSV_DELIMITERS` that occurs most often in it outside quotes, ``,`` if none does; a
    .tsv is tab-separated."""
    import gzip

    opener = gzip.open if path.lower().endswith(".gz") else open
    line, skip = "", 0
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for skip in range(1000):
                line = f.readline()
                if not line or line.strip():
                    break
    except (OSError, EOFError):
        return ",", 0
    if path.lower().endswith(".tsv"):
        return "\t", skip
    bare, quoted = [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif not quoted:
            bare.append(ch)
    bare = "".join(bare)
    best = max(CSV_DELIMITERS, key=lambda d: bare.count(d))
    return (best if bare.count(best) > 0 else ","), skip


def _duckdb_error(exc, message: str) -> Exception:
    """The error to raise for DuckDB's ``exc``: ``message`` as a ValueError, or a MemoryError when DuckDB ran out of
    memory (a file that could not be read for want of memory is not a bad file, nor a bad condition)."""
    from .._system import memory_failure

    mem = memory_failure(exc)
    return MemoryError(f"{mem}, while DuckDB read the table") if mem else ValueError(message)


def _check_table_shape(con, path) -> None:
    """Refuse a table DuckDB would silently read as another one: a CSV whose first lines its sniffer
    skips (a header ``a,b`` with 2-field rows, then a 3-field line, was read as the empty table with
    columns 8, 9, 10), or duplicate column names (DuckDB renames the second ``a`` to ``a_1``)."""
    import duckdb

    # (a CSV is read with skip=0 and its header's dialect, so no line is skipped silently: a line of another
    # shape is an error when the table is read)
    if isinstance(path, ArrowInput):
        names = path.schema.names
    elif _relation(path).startswith("read_parquet"):
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(path).names
        except Exception:  # noqa: BLE001 - DuckDB reads the file next and names what is wrong with it
            return
    else:
        # the header as DuckDB splits it (its own delimiter, quotes): pyarrow's comma split missed 'v;v'
        try:
            names = list(con.execute(f"SELECT * FROM {_relation(path, header=False)} "
                                     "LIMIT 1").fetchone() or ())
        except duckdb.Error as exc:
            if isinstance(_duckdb_error(exc, ""), MemoryError):
                raise _duckdb_error(exc, "") from None
            return
    seen: dict = {}
    for n in names:
        # DuckDB's names are case-insensitive: a, A became a, A_1 and --where "A > 50" filtered on a
        key = str(n).lower()
        if key in seen:
            same = f"{n!r}" if seen[key] == n else f"{seen[key]!r} and {n!r} (DuckDB does not tell case apart)"
            raise ValueError(f"{path} has two columns called {same}: rename one (queries name columns)")
        seen[key] = n


#: The spill folders' names: dprivacy-duckdb-HOST-PID-random (:func:`_spill_folder`).
SPILL_PREFIX = "dprivacy-duckdb-"


def _spill_folder() -> str:
    """A new private folder (0700) of the system's temporary directory for DuckDB's spilled results, named by this
    machine and process. The folders this machine's processes left behind when they were killed (the spilled values
    of their tables) are removed first: those of this user and host whose process is no longer running."""
    import os
    import shutil
    import socket
    import tempfile

    host = "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"
    base = tempfile.gettempdir()
    mine = f"{SPILL_PREFIX}{host}-"
    try:
        names = [e for e in os.listdir(base) if e.startswith(mine)]
    except OSError:
        names = []
    for name in names:
        path = os.path.join(base, name)
        try:
            pid = int(name[len(mine):].split("-")[0])
            if os.lstat(path).st_uid != os.getuid() or pid == os.getpid():
                continue
            os.kill(pid, 0)
        except ProcessLookupError:  # (its process is gone)
            shutil.rmtree(path, ignore_errors=True)
        except (ValueError, OSError):  # not one of ours, or a process of another user
            continue
    return tempfile.mkdtemp(prefix=f"{mine}{os.getpid()}-")


def _connect(path):
    """A DuckDB connection that may read ``path`` and nothing else: external access off (no other file,
    no network, no extension loading) and the configuration locked, before any user text is run. An in-memory
    table is registered on it (:data:`ARROW_TABLE`), and the connection may read no file at all and write no
    temporary one; a file's connection spills to a private temporary folder removed with it."""
    import duckdb

    from .._system import address_space_limit

    con = duckdb.connect()
    limit = address_space_limit()
    if limit is not None:
        # under `ulimit -v` DuckDB's address space grows by about 90 MB a thread over about 0.9 GB (jemalloc's arenas
        # and the stacks: 0.91 GB at 1 thread, 1.47 GB at 8, measured on a 75 MB CSV) and its allocations fail beyond
        # the limit: as many threads as fit, at least one, and a buffer pool within half the limit
        threads = max(1, min(os.cpu_count() or 1, (limit - 2**30) // (128 * 2**20)))
        con.execute(f"SET threads={int(threads)}")
        con.execute(f"SET memory_limit='{max(limit // 2, 64 * 2**20) // 2**20}MB'")
    if isinstance(path, ArrowInput):
        con.register(ARROW_TABLE, path.for_duckdb())
        # no spilling: DuckDB would write its intermediate results (the table's values) under ./.tmp
        con.execute("SET temp_directory=''")
    else:
        con.execute(f"SET allowed_paths=[{_literal(path)}]")
        # DuckDB spills intermediate results (the table's values) to ./.tmp of whatever folder the command runs in:
        # instead, to a private folder (0700) of the system's temporary directory, removed with the connection
        import shutil
        import weakref

        spill = _spill_folder()
        weakref.finalize(con, shutil.rmtree, spill, True)
        con.execute(f"SET temp_directory={_literal(spill)}")
    con.execute("SET TimeZone='UTC'")  # times compare the same whatever the machine's zone
    con.execute("SET enable_external_access=false")
    con.execute("SET lock_configuration=true")
    return con


def bind_where(con, where: str, rel: str, types: dict):
    """Compile ``where`` in the condition language (:mod:`.condition`: a closed grammar, refused before any row is
    read when outside it) against the table's column types, and bind the SQL to the table; return it.
    The binder's verdict depends on the column types and the condition only, which depend on public data only."""
    import duckdb

    from .condition import ConditionError, compile_condition

    compiled = compile_condition(where, types)
    try:
        con.execute(f"DESCRIBE SELECT coalesce(try({compiled.sql}), false) AS __w FROM {rel}").fetchall()
    except duckdb.Error as exc:
        raise ConditionError(f"bad --where {where!r}: {str(exc).splitlines()[0]}") from None
    return compiled


def _unreadable(table, exc, owner: bool, what: str = "") -> ValueError:
    """The refusal for a table DuckDB cannot read as one table: the same sentence whatever was asked, with DuckDB's
    own first line (which can quote a row, its line number or a cell) only for the data owner."""
    from .._system import memory_failure

    mem = memory_failure(exc)
    if mem:  # a table that could not be read for want of memory is not a bad file
        return MemoryError(f"{mem}, while DuckDB read the table")
    detail = f": {str(exc).splitlines()[0]}" if owner else " (--owner: DuckDB's message, which may quote a row)"
    return ValueError(f"cannot read {display_name(table)}{what}{detail}")


def _declare_keys(con, keys, group_by: str, type_: str) -> None:
    """The declared keys, read as ``group_by``'s type, into the temporary table ``dp_keys(i, g)`` (i their
    order). Refused, naming the key: none, too many, one that is not a value of the type, one given twice."""
    import duckdb

    keys = [k if isinstance(k, str) else str(k) for k in keys]
    if not keys:
        raise ValueError("--keys is empty: declare at least one group key")
    if len(keys) > MAX_KEYS:
        raise ValueError(f"--keys declares {len(keys):,} keys, over the {MAX_KEYS:,} allowed (each is one released answer)")
    try:
        con.execute(f"CREATE TEMP TABLE dp_keys AS SELECT i, k, TRY_CAST(k AS {type_}) AS g FROM "
                    "(SELECT generate_subscripts($k, 1) AS i, unnest($k) AS k)", {"k": keys})
    except duckdb.Error as exc:
        raise ValueError(f"--keys cannot be read as the type of {group_by!r} ({type_}): {str(exc).splitlines()[0]}") from None
    bad = con.execute("SELECT k FROM dp_keys WHERE g IS NULL ORDER BY i LIMIT 1").fetchone()
    if bad is not None:
        raise ValueError(f"--keys: {bad[0]!r} is not a value of {group_by!r}, whose type is {type_}")
    # a key the cast changes is refused, not answered under another value (1.5 became 2 in an integer
    # column, '2020-01-01 23:59:59' the date 2020-01-01, 1.105 the decimal 1.11)
    same = None
    if _is_numeric(type_):
        same = "TRY_CAST(k AS DOUBLE) IS NOT DISTINCT FROM CAST(g AS DOUBLE)"
    elif any(t in type_ for t in ("DATE", "TIMESTAMP", "TIME")):
        same = f"TRY_CAST(k AS {'TIME' if type_ == 'TIME' else 'TIMESTAMP_NS'}) IS NOT DISTINCT FROM CAST(g AS " \
               f"{'TIME' if type_ == 'TIME' else 'TIMESTAMP_NS'})"
    if same is not None:
        changed = con.execute(f"SELECT k, CAST(g AS VARCHAR) FROM dp_keys WHERE NOT ({same}) ORDER BY i LIMIT 1").fetchone()
        if changed is not None:
            raise ValueError(f"--keys: {changed[0]!r} is not exactly a value of {group_by!r} ({type_}): it would be read as "
                             f"{changed[1]!r}; give the key as the column holds it")
    dup = con.execute("SELECT list(k ORDER BY i), count(*) FROM dp_keys GROUP BY g HAVING count(*) > 1 ORDER BY min(i) "
                      "LIMIT 1").fetchone()
    if dup is not None:
        spelled = " and ".join(map(repr, dict.fromkeys(dup[0])))
        raise ValueError(f"--keys: {spelled} declare the same key of {group_by!r} ({type_}) {dup[1]} times: each key once")
