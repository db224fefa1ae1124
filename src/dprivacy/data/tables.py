r"""Private answers to count, sum, average and percentile queries on real tables (seed 002 §5).

The table is read and aggregated by DuckDB (filtering with ``where``, grouping with ``group_by``,
clamping to the declared ``bounds`` and counting what was clamped) — no Python loop over rows. DuckDB
may read the table file only: external access is switched off and the configuration locked before any
user text reaches it, and ``where`` must parse as one true/false expression on the row (no subquery,
comment or ``;``). Each answer then goes through the **truncated geometric mechanism** on its public
answer grid: a two-sided geometric noise K with P(K = k) = (1−α)/(1+α)·α^{|k|}, α = e^{−ε_a/Δ}, added to
the integer answer and clamped to the answer range (clamping is post-processing and gives exactly the
truncated geometric channel of seed 002 Fig 2 (iv)).

Neighbouring tables. Two tables of the same size N differ in one row (N is public). Under ``standard``
(d_h) any of the row's columns may change, so a row can enter or leave the ``where`` selection and move
between two ``group_by`` groups. Under the metrics on values (``normalized-d1``, ``d1``, ``dinf``) the
distance is on the values of the query's column; every other column — in particular those used by
``where`` and ``group_by`` — is treated as public (not protected), and the query's column may not be
used by them. With ``group_by`` the group keys are public: declared (``keys``; required under ``standard``, where
the column is protected and the distinct values in the table are not public), or under a metric on values the
distinct values of the (public) column in the whole table. Every key gets an answer, whether or not a selected row
has it.

Δ is the sensitivity of the integer answer the noise is added to, R = HI − LO, M = max(|LO|, |HI|):

================  ======================  ======================  ==============  =====================
query             ``standard`` d_h        ``normalized-d1`` d̃1    ``d1``          ``dinf``
================  ======================  ======================  ==============  =====================
count             Δ = 1 (Thm 8 ★)         —                       —               —
kcount:C1,…,Ck    Δ = 1 per count, ε/k each (sequential composition; Thm 9: no universal optimum)
sum:COL           Δ = R; max(R, M) with   Δ = R (Thm 11 ★)        Δ = 1 (Thm 12 ★) —
                  where/group-by
avg:COL           Δ = R on the sum        Δ = R on the sum ★      Δ = 1 on sum ★  Δ = 1 on the mean
                                                                                  rounded to the grid
                                                                                  (Thm 13 ★)
percentile:COL:P  Δ = R                   Δ = R (Thm 11 ★)        Δ = 1 (Thm 12 ★) Δ = 1 (Thm 13 ★)
================  ======================  ======================  ==============  =====================

★: the truncated geometric mechanism is universally optimal there (seed 002 §5: the query is uniformly
Δ-sensitive, Thm 10). For avg = sum/N under d̃1 and d1 (N public, no null values) this is Thm 11/12 for
the sum; under d∞ only the mean *rounded to the value grid* is uniformly 1-sensitive (Thm 13; the exact
mean is not, see ``queries.average``), so that is what is released. Under d_h only counts have a
universally optimal mechanism (Thm 9); the others are private with the stated Δ but carry no optimality
claim.

Several answers. With ``group_by`` under ``standard`` a changed row can move between two groups and
change two answers, so each group's answer gets ε/2 (the release is ε-DP, the ledger charges ε). Under
``dinf`` all rows can change at once, so every one of the G groups' answers can change: each gets ε/G.
Under ``d1`` and ``normalized-d1`` the distance adds up over rows and the groups are disjoint, so each
group's answer gets ε (parallel composition).

Answer ranges are public: count 0..N; sum N·LO..N·HI for the whole table, and min(0, N·LO)..max(0,
N·HI) with ``where``/``group_by``/``skip_invalid`` (a selection has 0..N rows); percentile and the rounded
mean LO..HI (a percentile of an empty selection is LO by convention, released with noise like the
others). Values are clamped to [LO, HI]; they must be whole numbers, or multiples of a declared ``unit``
(the values' resolution, in which the answers' grid and the value metrics' distance are counted), to
which they are rounded. The number clamped is reported for the data owner (not private). The accuracy stated for each answer is exact and holds for every true
answer in the range: the largest expected |error| over the range, E|TG(a) − a| = α/((1−α)(1+α))·
(2 − α^{hi−a} − α^{a−lo}), and the smallest t with P(|error| > t) ≤ 1 − confidence for every a, the
(α, δ)-usefulness of seed 002 §5.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import numpy as np

QUERY_KINDS = ("count", "kcount", "sum", "avg", "percentile")
PRIVACY_MODELS = ("standard", "normalized-d1", "d1", "dinf")
MECHANISMS = ("auto", "truncated-geometric", "geometric", "tight-constraints", "optimal")
VALUE_METRICS = ("normalized-d1", "d1", "dinf")

#: Largest answer range on which ``--mechanism optimal`` computes its remap and exact accuracy.
OPTIMAL_MAX_ANSWERS = 3000

#: --mechanism tight-constraints on a sum's answer path is built matrix-free over all its answers: measured
#: (Δ = 15, ε = 3) about 220 bytes and 4.5 µs per answer (10⁶ answers: 5.1 s, 274 MB peak), so a sum of
#: 8 million rows over 0..50 (400 million answers) grew past the machine's 23 GB before this limit. It is
#: refused above this many answers (about 1 GiB and 25 s).
TIGHT_MAX_ANSWERS = 5_000_000


@dataclass(frozen=True)
class Query:
    kind: str
    column: str | None = None
    p: float | None = None
    columns: tuple = ()

    @property
    def name(self) -> str:
        if self.kind == "count":
            return "count"
        if self.kind == "kcount":
            return "kcount:" + ",".join(self.columns)
        if self.kind == "percentile":
            return f"percentile:{self.column}:{self.p:g}"
        return f"{self.kind}:{self.column}"


def parse_query(spec: str) -> Query:
    """``count``, ``sum:COL``, ``avg:COL``, ``percentile:COL:P`` (P in (0, 100); median = 50)."""
    s = (spec or "").strip()
    if s == "count":
        return Query("count")
    m = re.fullmatch(r"kcount:(.+)", s)
    if m:
        cols = tuple(c.strip() for c in m.group(1).split(","))
        if len(cols) < 2 or any(not c for c in cols) or len(set(cols)) != len(cols):
            raise ValueError(f"bad --query {spec!r}: kcount needs two or more distinct columns, e.g. kcount:A,B")
        return Query("kcount", columns=cols)
    m = re.fullmatch(r"(sum|avg):(.+)", s)
    if m:
        return Query(m.group(1), m.group(2))
    m = re.fullmatch(r"percentile:(.+):([^:]+)", s)
    if m:
        try:
            p = float(m.group(2))
        except ValueError:
            raise ValueError(f"bad percentile in {spec!r}: {m.group(2)!r} is not a number") from None
        if not 0 < p < 100:
            raise ValueError(f"percentile must lie strictly between 0 and 100, got {p:g}")
        return Query("percentile", m.group(1), p)
    raise ValueError(f"bad --query {spec!r}: expected count, kcount:COL1,COL2,..., sum:COL, avg:COL or percentile:COL:P")


def check_table_file(table) -> None:
    """Refuse a table that is not a regular file (a FIFO, ``/dev/zero``, a socket) before anything opens it: the
    budget ledger hashes it and DuckDB reads it several times (a FIFO was waited on for ever)."""
    from .._system import check_input_file

    check_input_file(table, "table", expected="a CSV or Parquet file")


def read_keys_file(path) -> list:
    """The group keys of a ``--keys @FILE``: one per line (UTF-8, a byte-order mark dropped), stripped, blank lines
    skipped; a FIFO or a device is refused before it is opened."""
    from .._system import check_input_file

    check_input_file(path, "--keys file", expected="a text file with one key per line")
    try:
        with open(path, encoding="utf-8-sig") as fh:  # (a byte-order mark is not part of the first key)
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--keys cannot read {path}: {exc}") from None
    keys = [ln.strip() for ln in lines if ln.strip()]
    if not keys:
        raise ValueError(f"--keys file {path} has no key (one per line)")
    return keys


def sensitivity(q: Query, privacy: str, bounds, total: int | None = None, *, selected: bool = False,
                skip_invalid: bool = False) -> float:
    """Δ of the integer answer the noise is added to (the sum for avg under d_h, d̃1, d1; the rounded mean
    under d∞), per the module table. ``selected``: a ``where`` or ``group_by`` is given (under d_h a row
    can then enter or leave an answer); ``skip_invalid``: null values are possible. ``total`` is kept for
    compatibility (no Δ depends on it any more)."""
    return _sensitivity(q, privacy, bounds, total, selected=selected, skip_invalid=skip_invalid)[0]


def _sensitivity(q: Query, privacy: str, bounds, total=None, *, selected: bool = False,
                 skip_invalid: bool = False) -> tuple[float, str, bool]:
    """(Δ, the theorem behind it, whether a universal-optimality theorem applies) per the module table."""
    if privacy not in PRIVACY_MODELS:
        raise ValueError(f"--privacy must be one of {', '.join(PRIVACY_MODELS)}, got {privacy!r}")
    if q.kind in ("count", "kcount"):
        if privacy != "standard":
            raise ValueError(f"a {q.kind} is not a query on values: use --privacy standard")
        if q.kind == "count":
            note = ("" if selected else " (without --where the count of all rows is the table size N, which this "
                    "neighbourhood treats as public)")
            return 1.0, ("seed 002 Thm 8 (Ghosh et al.): a changed row changes a count by at most 1 and the truncated "
                         "geometric is universally optimal for a count" + note), True
        return 1.0, (f"each of the {len(q.columns)} counts at ε/{len(q.columns)} (one row changes every count by at most 1: "
                     "sequential composition); the k-count's answer graph is not a path, so no universally optimal "
                     "mechanism exists (seed 002 Thm 9); the tight-constraints mechanism of seed 000 §3.2 on that graph is "
                     "optimal for regular priors (`dprivacy design kcount:U,K`)"), False
    lo, hi = bounds
    r = float(hi - lo) if hi > lo else 1.0
    reach = float(max(abs(lo), abs(hi)))  # what one value entering/leaving an answer (or turning null) moves a sum by
    name = {"sum": "sum", "avg": "average", "percentile": "percentile"}[q.kind]
    if privacy == "standard":
        if q.kind == "sum" and (selected or skip_invalid):
            why = " or its value turn null" if skip_invalid else ""
            d = max(r, reach, 1.0)
            return d, (f"Δ = max(HI − LO, |LO|, |HI|) = {d:g} under d_h: a changed row can enter or leave the selected rows{why}, "
                       "moving the sum by up to max(|LO|, |HI|), or stay and move it by up to HI − LO; private, but the sum's "
                       "answer graph is not a path, so no universally optimal mechanism exists under d_h (seed 002 Thm 9)"), False
        on = " on the sum (avg = sum/N)" if q.kind == "avg" else ""
        return r, (f"Δ = HI − LO{on} under d_h; private, but the {name}'s answer graph is not a path, so no universally "
                   "optimal mechanism exists under d_h (seed 002 Thm 9)"), False
    raised = ""
    if privacy == "normalized-d1":
        d = r
        if skip_invalid and q.kind == "sum" and reach > r:
            d, raised = reach, "max(|LO|, |HI|)"
        if q.kind == "avg":
            thm = ("seed 002 Thm 11 for the sum: the sum is uniformly (HI − LO)-sensitive wrt the normalized Manhattan metric "
                   "(no null values, N public), and avg = sum/N is a relabelling of it, so the truncated geometric on the sum at "
                   "ε/(HI − LO), divided by N, is universally optimal for ε·d̃1")
        else:
            thm = (f"seed 002 Thm 11: the {name} is uniformly (HI − LO)-sensitive wrt the normalized Manhattan metric, so "
                   "the truncated geometric at ε/(HI − LO) is universally optimal for ε·d̃1 (the same noise as d_h, with "
                   "more protection for small changes)")
    elif privacy == "d1":
        d = 1.0
        if skip_invalid and q.kind == "sum" and reach > r:
            d, raised = reach / max(hi - lo, 1), "max(|LO|, |HI|)/(HI − LO)"
        if q.kind == "avg":
            thm = ("seed 002 Thm 12 for the sum: the sum is uniformly 1-sensitive wrt d1 (no null values, N public), and "
                   "avg = sum/N is a relabelling of it, so the truncated geometric on the sum at ε, divided by N, is "
                   "universally optimal for ε·d1")
        else:
            thm = f"seed 002 Thm 12: the {name} is uniformly 1-sensitive wrt d1: the truncated geometric is universally optimal"
    else:  # dinf
        if q.kind == "sum":
            raise ValueError("--privacy dinf is not available for sum (seed 002 Thm 13 covers avg and percentile): use d1")
        d = 1.0
        if q.kind == "avg":
            thm = ("seed 002 Thm 13: the mean rounded to the value grid LO..HI (nearest, ties up) is uniformly 1-sensitive "
                   "wrt d∞, so the truncated geometric on LO..HI is universally optimal for it; the exact mean is not "
                   "uniformly 1-sensitive (the project's test_exact_average_is_not_uniformly_1_sensitive and experiment "
                   "002-thm10-13), so the released answer is the rounded mean (the rounding itself is up to 0.5 from the "
                   "exact mean, on top of the stated error)")
        else:
            thm = "seed 002 Thm 13: the percentile is uniformly 1-sensitive wrt d∞: the truncated geometric is universally optimal"
    if raised:
        thm = (f"Δ = {raised} = {d:g}: a value turning null (--skip-invalid) moves the sum by up to max(|LO|, |HI|), more than "
               f"the theorem's Δ; private, but outside the theorem, so no optimality claim (without nulls: {thm})")
        return d, thm, False
    return d, thm, True


def geometric_accuracy(alpha: float, *, confidence: float = 0.95) -> tuple[float, int]:
    """(E|K|, t) for the two-sided geometric K with ratio α: E|K| = 2α/(1−α²) and the smallest t with
    P(|K| > t) = 2α^{t+1}/(1+α) ≤ 1 − confidence."""
    if alpha <= 0:
        return 0.0, 0
    mean = 2 * alpha / (1 - alpha * alpha)
    delta = 1.0 - confidence
    t = max(0, math.ceil(math.log(delta * (1 + alpha) / 2) / math.log(alpha) - 1))
    return mean, int(t)


def truncated_geometric_error(alpha: float, lo: int, hi: int, a: int) -> float:
    """E|TG(a) − a| exactly, for the truncated geometric on lo..hi (seed 002 Fig 2 (iv)):
    α/((1−α)(1+α))·(2 − α^{hi−a} − α^{a−lo}) (the noise beyond an end is cut at that end)."""
    if alpha <= 0 or hi <= lo:
        return 0.0
    one_minus = -math.expm1(math.log(alpha))
    return alpha / (one_minus * (1 + alpha)) * (2 - alpha ** (hi - a) - alpha ** (a - lo))


def truncated_geometric_accuracy(alpha: float, lo: int, hi: int, *, confidence: float = 0.95) -> tuple[float, int]:
    """(max over a in lo..hi of E|TG(a) − a|, the smallest t with P(|TG(a) − a| > t) ≤ 1 − confidence for every a).

    The expected error is largest in the middle of the range; P(|TG(a) − a| > t) = α^{t+1}/(1+α) times the
    number of sides with more than t answers of room, largest when both have room."""
    w = int(hi - lo)
    if alpha <= 0 or w <= 0:
        return 0.0, 0
    mid = lo + w // 2
    mean = truncated_geometric_error(alpha, lo, hi, mid)
    delta = 1.0 - confidence

    def worst(t: int) -> float:
        sides = 2 if w >= 2 * (t + 1) else (1 if w >= t + 1 else 0)
        return sides * alpha ** (t + 1) / (1 + alpha)

    t_hi = geometric_accuracy(alpha, confidence=confidence)[1]  # enough on an unbounded line
    t_lo = 0
    while t_lo < t_hi:  # smallest t with worst(t) <= δ (worst is non-increasing)
        m = (t_lo + t_hi) // 2
        if worst(m) <= delta:
            t_hi = m
        else:
            t_lo = m + 1
    return mean, int(t_lo)


@dataclass
class GroupAnswer:
    """One group's released answer. ``clamped_not_private`` is the exact number of values outside the
    bounds: for the data owner, not for publication. ``expected_abs_error`` and ``within`` hold for every
    true answer in the public range (the worst case); ``expected_abs_error_under_prior`` (``--mechanism
    optimal`` only) is the expected |error| averaged over the prior's answers."""

    group: object
    noisy: float | list
    clamped_not_private: int
    expected_abs_error: float
    within: float
    confidence: float
    expected_abs_error_under_prior: float | None = None


@dataclass
class QueryResult:
    table: str
    query: str
    privacy: str
    mechanism: str
    epsilon: float
    #: Δ of the integer answer the noise is added to, in steps of ``answer_step`` (with --unit U, units
    #: of U; ``bounds`` stay in the values' own units)
    sensitivity: float
    bounds: tuple | None
    where: str | None
    group_by: str | None
    answers: list = field(default_factory=list)
    random_source: dict = field(default_factory=dict)
    guarantee: str = ""
    theorem: str = ""
    epsilon_spent: float = 0.0
    delivered_epsilon: float = 0.0
    sampler: str = ""
    rows_skipped_not_private: int = 0
    neighbours: str = ""
    public: str = ""
    epsilon_per_answer: float = 0.0
    composition: str = ""
    #: the public integer grid of the answers, LO_a..HI_a; a released answer is k · ``answer_step``
    answer_range: tuple = ()
    answer_step: float = 1.0
    noise_alpha: float = 0.0
    accuracy: str = ""
    universally_optimal: bool = False
    optimality: str = ""
    solver: dict = field(default_factory=dict)
    #: the values' resolution (--unit): they were rounded to its multiples, and a value metric's distance
    #: 1 is one unit; None: whole numbers, as given
    unit: float | None = None
    #: under a metric on values: the column whose values are protected, and the columns treated as public
    #: (--where, --group-by); the budget ledger refuses a later query that mixes the two up
    protected_column: str | None = None
    public_columns: list = field(default_factory=list)

    def to_dict(self) -> dict:
        from ..results import jsonable

        d = dict(vars(self))
        d["answers"] = [dict(vars(a), group=_json_key(a.group)) for a in self.answers]
        return jsonable(d)


def _json_key(key):
    """A group key for strict JSON: a non-finite float is named as a string ("NaN", "Infinity", "-Infinity"),
    since JSON has no such numbers and jsonable's null would give NaN, ±inf and NULL keys one label (a review
    found three answers keyed null)."""
    if isinstance(key, float) and not math.isfinite(key):
        return "NaN" if key != key else ("Infinity" if key > 0 else "-Infinity")
    return key


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


def _relation(path: str, *, text=None, header: bool = True) -> str:
    """The table as a DuckDB relation. A CSV is read with a dialect that depends on its header line only
    (:func:`_csv_dialect`; the quote and escape ``"``, no comment character, no line skipped) and with column
    types that depend on public data only: ``text=None`` (standard ε-DP, every column protected) reads every
    column as text; ``text`` = the protected columns reads those as text and infers the others from every row
    of the file (``sample_size=-1``). The sniffer's guesses from the rows themselves made the release depend on
    one row beyond Δ (review): one 'x' among integers turned a numeric --where into a text comparison for every
    row (108 against 0), a row '12/13/2020' set the date format of the whole column, and a row starting with '#'
    was dropped as a comment. Casts in the queries (``_as_type``) decide what is a number."""
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


def _check_table_shape(con, path: str) -> None:
    """Refuse a table DuckDB would silently read as another one: a CSV whose first lines its sniffer
    skips (a header ``a,b`` with 2-field rows, then a 3-field line, was read as the empty table with
    columns 8, 9, 10), or duplicate column names (DuckDB renames the second ``a`` to ``a_1``)."""
    import duckdb

    # (a CSV is read with skip=0 and its header's dialect, so no line is skipped silently: a line of another
    # shape is an error when the table is read)
    if _relation(path).startswith("read_parquet"):
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


def _connect(path: str):
    """A DuckDB connection that may read ``path`` and nothing else: external access off (no other file,
    no network, no extension loading) and the configuration locked, before any user text is run."""
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
    con.execute(f"SET allowed_paths=[{_literal(path)}]")
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


def truncated_geometric_rows(alpha: float, lo: int, hi: int, answers=None) -> np.ndarray:
    """P(o | a) of the truncated geometric on the answers lo..hi (rows a, columns o): the two-sided
    geometric with ratio α clamped to [lo, hi] (seed 002 Fig 2 (iv)). ``answers``: only these rows
    (default every answer lo..hi)."""
    o = np.arange(lo, hi + 1)
    a = o if answers is None else np.asarray(answers, dtype=np.int64).reshape(-1)
    k = np.abs(o[None, :] - a[:, None]).astype(float)
    p = (1 - alpha) / (1 + alpha) * alpha ** k
    p[:, 0] = alpha ** (a - lo) / (1 + alpha)
    p[:, -1] = alpha ** (hi - a) / (1 + alpha)
    if hi == lo:
        p[:, :] = 1.0
    return p


def bayes_remap_abs(rows: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, float]:
    """For each output o the answer minimising the expected |error| under the posterior ∝ π(a) P(o|a)
    (a weighted median), and the expected |error| of the remapped mechanism under π."""
    joint = prior[:, None] * rows  # [a, o]
    cum = np.cumsum(joint, axis=0)
    half = 0.5 * cum[-1]
    remap = np.argmax(cum >= half[None, :], axis=0)  # first a where the posterior mass reaches 1/2
    n = rows.shape[0]
    err = np.abs(remap[None, :] - np.arange(n)[:, None])
    return remap, float((joint * err).sum())


def remap_accuracy(rows: np.ndarray, remap: np.ndarray, *, confidence: float = 0.95) -> tuple[float, int, np.ndarray]:
    """Worst case over the true answers of the remapped mechanism a → o → remap[o] (indices 0..n−1):
    (max_a E|remap(o) − a|, the smallest t with P(|remap(o) − a| > t) ≤ 1 − confidence for every a, the
    expected |error| of each a). Exact from the channel (no prior involved)."""
    n = rows.shape[0]
    err = np.abs(remap[None, :].astype(np.int64) - np.arange(n, dtype=np.int64)[:, None])
    per_a = (rows * err).sum(axis=1)
    hist = np.bincount((np.arange(n, dtype=np.int64)[:, None] * n + err).ravel(), weights=rows.ravel(),
                       minlength=n * n).reshape(n, n)  # [a, |error|]
    tail = rows.sum(axis=1)[:, None] - np.cumsum(hist, axis=1)  # P(|error| > t)
    ok = np.flatnonzero(tail.max(axis=0) <= (1.0 - confidence) + 1e-12)
    return float(per_a.max()), int(ok[0]) if ok.size else n, per_a


def _plan_split(q: Query, privacy: str, group_by, groups: int) -> tuple[int, str]:
    """(the factor by which ε is divided for each released number, why)."""
    k = len(q.columns) if q.kind == "kcount" else 1
    parts, factor = [], k
    if k > 1:
        parts.append(f"each of the {k} counts at ε/{k} (one row changes all of them: sequential composition)")
    if group_by is not None and privacy == "standard":
        factor *= 2
        parts.append("with --group-by a changed row can move between two groups and change both groups' answers, so each "
                     "group's answer uses ε/2 and the release is ε-DP (the ledger charges ε)")
    elif group_by is not None and privacy == "dinf":
        factor *= max(groups, 1)
        parts.append(f"under d∞ every row can change at once, so all {groups} groups' answers can change together: each "
                     f"group's answer uses ε/{groups} (sequential composition; the ledger charges ε)")
    elif group_by is not None:
        parts.append("the groups are disjoint and the distance adds up over rows, so each group's answer uses ε and "
                     "the release is ε-private (parallel composition)")
    return factor, "; ".join(parts)


class ScanFailed(ValueError):
    """The query failed while computing its answers, after every column was read once (DuckDB ran out of memory,
    ...). Such a failure may depend on the rows, so a budget ledger charges the query's ε for it
    (:func:`dprivacy.data.budget.charge`), as for an answer, under the query's protected and public columns
    (``protected_column``, ``public_columns``). Its message never quotes DuckDB's, which can quote a cell."""

    def __init__(self, message: str, *, protected_column=None, public_columns=()):
        super().__init__(message)
        self.protected_column = protected_column
        self.public_columns = list(public_columns)


def _unreadable(table: str, exc, owner: bool, what: str = "") -> ValueError:
    """The refusal for a table DuckDB cannot read as one table: the same sentence whatever was asked, with DuckDB's
    own first line (which can quote a row, its line number or a cell) only for the data owner."""
    from .._system import memory_failure

    mem = memory_failure(exc)
    if mem:  # a table that could not be read for want of memory is not a bad file
        return MemoryError(f"{mem}, while DuckDB read the table")
    detail = f": {str(exc).splitlines()[0]}" if owner else " (--owner: DuckDB's message, which may quote a row)"
    return ValueError(f"cannot read {os.path.basename(table)}{what}{detail}")


def run_query(table: str, query: Query, *, epsilon: float, bounds=None, where: str | None = None,
              group_by: str | None = None, privacy: str = "standard", rng=None, confidence: float = 0.95,
              mechanism: str = "auto", skip_invalid: bool = False, prior=None, unit: float | None = None,
              keys=None, owner: bool = False) -> QueryResult:
    """Answer ``query`` on ``table`` with ε-private noise per group (see the module docstring).

    ``mechanism``: ``auto``/``truncated-geometric`` (the answer clamped to its public range: the truncated
    geometric, universally optimal where the module table says so), ``geometric`` (the same noise, not
    clamped), ``tight-constraints`` (only where the answers' constraint graph is a path — a count, or a
    sum/avg/percentile under a metric on values, seed 002 Thm 6 — on which it *is* the truncated geometric,
    seed 000 §6.1; refused elsewhere) or ``optimal`` (the truncated geometric followed by the Bayes remap for
    ``prior``; the only mechanism that uses ``prior``). ``skip_invalid``: empty or non-numeric values are
    left out of the aggregate as null values (seed 002 §5 extends the value metric with a null at the
    maximal distance), with Δ raised where a null changes the sum by more than the theorem's Δ; their
    number in the whole table is reported for the data owner only. ``unit``: the resolution U of the values — they are
    rounded to multiples of U, the bounds must be multiples of U, and the value metrics' distance 1 is U
    (as in :func:`~dprivacy.data.series.release_series`). Without it the values must be whole numbers:
    values with a fraction are refused (rounding them silently made a sum of discounts 922 where it is
    1561.09), not rounded. ``keys``: the group keys of ``group_by``, declared public (a sequence of values,
    read as the column's type): each gets an answer, in the order given, whether or not a row has it, and rows
    with another key are in no group. Under ``standard`` they are required with ``group_by``: the column is
    protected there, and the distinct values found in the table are not public (one row with a value of its own
    adds a key). Under the metrics on values the column is public and the keys default to its distinct values.
    ``owner``: a refusal for invalid or fractional values also gives their number and the first such row (exact, not
    private: for the data owner); otherwise it names the column and the kind of value only.
    """
    import duckdb

    from .._validate import check_epsilon

    eps = check_epsilon(epsilon)
    if where is not None:
        from .condition import parse

        parse(where)  # a condition outside the language is refused before the table is opened
    if mechanism not in MECHANISMS:
        raise ValueError(f"--mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if privacy not in PRIVACY_MODELS:
        raise ValueError(f"--privacy must be one of {', '.join(PRIVACY_MODELS)}, got {privacy!r}")
    if prior is not None and mechanism not in ("optimal", "tight-constraints"):
        raise ValueError(f"--prior is used only by --mechanism optimal and tight-constraints; --mechanism {mechanism} ignores it "
                         "(drop --prior)")
    if os.path.isdir(table):  # (DuckDB's message named a disabled file system operation: review)
        raise ValueError(f"{table} is a folder: query reads one CSV or Parquet file (combine a folder of parts, e.g. the "
                         "Dask engine's output, into one file first)")
    check_table_file(table)
    if os.path.getsize(table) == 0:
        raise ValueError(f"{table} is empty (0 bytes): not a table (a CSV needs at least a header line)")
    table = os.path.abspath(table)
    if any(ch in table for ch in "*?[]{}"):
        # DuckDB reads such a name as a file pattern (it said "sniff_csv does not operate on more than one file yet",
        # or named another file: review)
        raise ValueError(f"{table}: a file name with *, ?, [ ], {{ }} is read by DuckDB as a pattern of file names: rename "
                         "or link the file without them")
    if query.kind not in ("count", "kcount") and bounds is None:
        raise ValueError(f"{query.name} needs --bounds LO,HI: the declared range of {query.column!r} (values are clamped to it)")
    if unit is not None and (isinstance(unit, bool) or not isinstance(unit, (int, float)) or not math.isfinite(unit)
                             or not unit > 0):
        raise ValueError(f"--unit must be a positive number (the resolution of the values), got {unit!r}")
    if unit is not None and query.kind in ("count", "kcount"):
        raise ValueError(f"--unit is the resolution of a column's values: it applies to sum, avg and percentile, not "
                         f"{query.kind}")
    if bounds is not None and query.kind in ("count", "kcount"):
        raise ValueError(f"--bounds is the declared range of a column's values: it applies to sum, avg and percentile, not "
                         f"{query.kind}")
    if skip_invalid and query.kind == "count":
        raise ValueError("--skip-invalid leaves out invalid values of the column a query aggregates: count has none (drop "
                         "--skip-invalid, or select rows with --where)")
    u = 1.0 if unit is None else float(unit)
    value_bounds = bounds
    if bounds is not None:
        lo, hi = bounds
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise ValueError(f"--bounds must be two numbers LO <= HI, got {lo:g},{hi:g}")
        glo, ghi = round(lo / u), round(hi / u)
        if abs(glo * u - lo) > 1e-9 * max(abs(lo), u) or abs(ghi * u - hi) > 1e-9 * max(abs(hi), u):
            raise ValueError(f"--bounds must be two integers LO <= HI, got {lo:g},{hi:g}" if unit is None else
                             f"--bounds must be multiples of --unit {u:g}, got {lo:g},{hi:g}")
        if max(abs(glo), abs(ghi)) >= 2**52:
            raise ValueError(f"--bounds {lo:g},{hi:g} span too many multiples of the unit {u:g} (at most 2^52)")
        bounds = (int(glo), int(ghi))  # from here on in units of u: the answers' integer grid
    if query.kind == "avg" and (group_by is not None or where or skip_invalid):
        raise ValueError("avg divides by the number of rows, which is public only for the whole table: with --group-by, "
                         "--where or --skip-invalid ask for sum and count instead (their ratio is a private average)")
    if query.kind == "kcount" and mechanism == "tight-constraints":
        raise ValueError("tight-constraints for a k-count lives on its answer graph: build it with `dprivacy design "
                         "kcount:U,K --mechanism tight-constraints`; here the counts get truncated geometric noise")
    if query.kind == "percentile" and privacy == "standard" and mechanism == "tight-constraints":
        raise ValueError("--mechanism tight-constraints is not available for a percentile under --privacy standard: a changed "
                         "row can move it across many answers, so its answer graph is not a path, nor the sum's graph "
                         "(seed 000 §7.1), and depends on the table; use --mechanism truncated-geometric, or a metric on "
                         "values (--privacy d1|normalized-d1|dinf), where the answers form a path")
    if prior is not None and mechanism == "tight-constraints" and not (query.kind in ("sum", "avg") and privacy == "standard"):
        raise ValueError("--prior with --mechanism tight-constraints is for sum and avg under --privacy standard (the region of "
                         "priors where it is optimal, seed 000 Thm 4); elsewhere the mechanism is the truncated geometric, "
                         "optimal for every prior (drop --prior)")
    selected = bool(where) or group_by is not None
    con = _connect(table)
    _check_table_shape(con, table)
    try:
        cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {_relation(table)}").fetchall()]
    except duckdb.Error as exc:
        what = (f" as one CSV table (delimiter {_csv_dialect(table)[0]!r} from its header line, quotes \", every line with "
                "the header's number of fields, UTF-8: a line of another shape?)" if _relation(table).startswith("read_csv") else "")
        raise _unreadable(table, exc, owner, what) from None
    for c in [query.column, group_by, *query.columns]:
        if c is not None and c not in cols:
            raise ValueError(f"unknown column {c!r}: the table's columns are {', '.join(cols)}")
    # A CSV's column types from public data only (_relation): under standard every column is protected and read
    # as text; under a metric on values the protected column is text and the others (public) are inferred.
    rel = _relation(table, text=None if privacy == "standard" else tuple(c for c in (query.column, *query.columns) if c))
    try:
        types = {r[0]: str(r[1]).upper() for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()}
    except duckdb.Error as exc:
        raise _unreadable(table, exc, owner) from None
    if group_by is not None and group_by in (query.column, *query.columns):
        # the keys are released exactly (treated as public): grouping by the column the query aggregates would
        # publish its distinct values (a review got every sale amount, the maximum included)
        raise ValueError(f"--group-by {group_by!r}: the group keys are released exactly (treated as public), so a query "
                         f"cannot group by the column it aggregates ({query.name}); group by a public column")
    if keys is not None and group_by is None:
        raise ValueError("--keys declares the group keys of --group-by: give --group-by COLUMN too")
    if group_by is not None and keys is None and privacy == "standard":
        raise ValueError(f"--group-by {group_by!r} under --privacy standard needs its group keys declared with --keys (e.g. "
                         f"--keys A,B,C or --keys @FILE, one key per line): every column of a row is protected there, so "
                         f"the distinct values of {group_by!r} in the table are not public (one row with a value of its own "
                         f"adds a key to the release)")
    if query.column is not None and any(t in types[query.column] for t in ("BLOB", "MAP", "STRUCT", "[]", "UNION")):
        raise ValueError(f"column {query.column!r} is a {types[query.column]}, not numeric: {query.name} needs numbers")
    where_sql = None
    if where is not None:
        compiled = bind_where(con, where, rel, types)
        where_sql, where = compiled.sql, where.strip()
    public_cols = sorted(set(compiled.columns if where is not None else ()) | ({group_by} if group_by is not None else set()))
    if privacy in VALUE_METRICS and query.column is not None and query.column.lower() in {c.lower() for c in public_cols}:
        raise ValueError(f"under --privacy {privacy} the columns of --where/--group-by are treated as public, but "
                         f"{query.column!r} is the protected column: filter or group by other columns, or use --privacy standard")
    # The condition is made total: a row on which it cannot be evaluated is not selected, instead of failing the
    # query with a message that could quote the row.
    sel = f"coalesce(try({where_sql}), false)" if where_sql else "TRUE"
    gexpr = _quote(group_by) if group_by is not None else None
    if keys is not None:
        _declare_keys(con, keys, group_by, types[group_by])
        # compared in the declared type: the same key whatever the reader made of the column's text
        gexpr = f"TRY_CAST({gexpr} AS {types[group_by]})"
    # One scan for the table size, the invalid values and the number of group keys. The values are checked
    # on the whole table, whatever --where selects: checked on the selection, the refusal (free, nothing
    # charged) told whoever chose the condition whether a row matched it, how many did and (quoted) a value.
    checks = ["count(*)"]
    if query.kind in ("sum", "avg", "percentile"):
        col = _quote(query.column)
        val = _as_double(col, types[query.column])
        bad = f"{col} IS NULL OR {val} IS NULL OR isnan({val})"
        checks.append(f"count(*) FILTER (WHERE {col} IS NOT NULL AND ({val} IS NULL OR isnan({val})))")
        checks.append(f"count(*) FILTER (WHERE {col} IS NULL)")
        # on the values as they are, not clamped to --bounds: clamped, the refusal counted the fractional values
        # strictly inside bounds the asker chose, for free (--bounds 41,42 told how many values lie in (41, 42): review)
        fraction = f"NOT ({bad}) AND {val} <> round({val})"
        checks.append(f"count(*) FILTER (WHERE {fraction})" if unit is None else "0")
    elif query.kind == "kcount":
        # a flag: true/false, or 0/1 in a numeric column (a 2 was counted as true: review); the rest is invalid
        flag_ok = {c: f"({_as_type(_quote(c), types[c], 'BOOLEAN')} IS NOT NULL"
                      + (f" AND {_quote(c)} IN (0, 1))" if _is_numeric(types[c]) else ")") for c in query.columns}
        bad = " OR ".join(f"NOT coalesce({flag_ok[c]}, false)" for c in query.columns)
        checks.append(f"count(*) FILTER (WHERE {bad})")
        checks += ["0", "0"]
    else:
        checks += ["0", "0", "0"]
    checks.append("1" if not gexpr else str(len(keys)) if keys is not None else
                  f"count(DISTINCT {gexpr}) + max(CASE WHEN {gexpr} IS NULL THEN 1 ELSE 0 END)")
    # Every column of every row is decoded in this first scan (hashed), whatever the query names: DuckDB reads only
    # the columns a query uses, so a cell that cannot be decoded (invalid UTF-8 or JSON, a timestamp out of range, a
    # CSV line in another encoding) made a query fail exactly when its condition named that column — a yes/no about
    # one row. Here it fails for every query on the table alike, refused as unreadable (a fact about the table).
    checks += [f"bit_xor(hash({_quote(c)}))" for c in types]

    def scan(sql: str, first: bool = False):
        try:
            return con.execute(sql).fetchall()
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as exc:
            if first:  # no --where in it: a failure here is the table's, the same for every query
                raise _unreadable(table, exc, owner, ": a value in it cannot be decoded, or memory ran out") from None
            raise ScanFailed("the query failed while computing its answers (memory ran out, or a value could not be "
                             "read)" + (f": {str(exc).splitlines()[0]}" if owner else ""),
                             protected_column=query.column if privacy in VALUE_METRICS else None,
                             public_columns=public_cols) from None

    got = scan(f"SELECT {', '.join(checks)} FROM {rel}", first=True)[0]
    total = int(got[0])
    wrong, empty, fractions = int(got[1]), int(got[2]), int(got[3])
    n_groups = int(got[4] or 0)
    invalid = wrong + empty
    # A refusal says which column and which kind of value, checked on the whole column whatever --where and --bounds
    # select, so that it is the same for every query on the column; the number and the first row are exact counts
    # of the data, for the owner only (an analyst read the number of discounted orders from one: review).
    if invalid and not skip_invalid:
        what = f"column {query.column!r}" if query.column else "columns " + ", ".join(map(repr, query.columns))
        expect = "numbers" if query.column else "true/false or 0/1 values"
        first = _first_bad_row(con, rel, bad) if owner else ""
        if query.column:
            parts = ([f"{wrong if owner else ''} non-numeric".strip()] if wrong else []) + \
                ([f"{empty if owner else ''} empty".strip()] if empty else [])
            found = f"{what} has {' and '.join(parts)} value(s) in the table (checked whatever --where selects)"
        else:
            found = (f"{what}: {wrong if owner else 'some'} row(s) of the table have a missing or non-boolean value "
                     "(checked whatever --where selects)")
        raise ValueError(f"{found} (expected {expect}){first}; --skip-invalid leaves them out as null values and counts them"
                         + ("" if owner else " (--owner: how many, and the first row)"))
    if fractions:
        first = _first_bad_row(con, rel, fraction) if owner else ""
        raise ValueError(f"column {query.column!r} has {str(fractions) + ' ' if owner else ''}value(s) in the table (checked "
                         f"whatever --where and --bounds select) that are not whole numbers{first}: "
                         "the answers are computed on a grid of whole units; give --unit, the values' resolution "
                         "(e.g. --unit 0.01, or --unit 1 to round them to whole numbers)")
    plan = answer_plan(query, privacy, bounds, u, mechanism=mechanism, epsilon=eps, total=total, selected=selected,
                       skip_invalid=skip_invalid, group_by=group_by, n_groups=n_groups)
    # The answers: one aggregate pass, the selection as a FILTER, one row per group key of the whole table.
    k = len(query.columns)
    if query.kind == "count":
        aggs = [f"count(*) FILTER (WHERE {sel})"]
        clamped = "0"
    elif query.kind == "kcount":
        # a value that is not a flag counts as null, not as true
        aggs = [f"count(*) FILTER (WHERE {sel} AND coalesce({flag_ok[c]} AND {_as_type(_quote(c), types[c], 'BOOLEAN')}, "
                "false))" for c in query.columns]
        clamped = "0"
    else:
        lo, hi = bounds
        ok = f"{val} IS NOT NULL AND NOT isnan({val})"
        x = f"CAST(round(least(greatest({val} / {u!r}, {lo}), {hi})) AS BIGINT)"
        aggs = [f"quantile_disc({x}, {query.p / 100.0}) FILTER (WHERE {sel} AND {ok})" if query.kind == "percentile" else
                f"coalesce(sum({x}) FILTER (WHERE {sel} AND {ok}), 0)"]
        clamped = f"count(*) FILTER (WHERE {sel} AND {ok} AND ({val} < {float(value_bounds[0])!r} OR {val} > {float(value_bounds[1])!r}))"
    if keys is not None:
        # one answer per declared key, in the order given (0, or the percentile's convention, where no row has it)
        names = [f"v{i}" for i in range(len(aggs))]
        empty = "a.{}" if query.kind == "percentile" else "coalesce(a.{}, 0)"
        sql = (f"WITH a AS (SELECT {gexpr} AS g, {', '.join(f'{e} AS {n}' for e, n in zip(aggs, names))}, {clamped} AS "
               f"clamped FROM {rel} WHERE {gexpr} IN (SELECT g FROM dp_keys) GROUP BY 1) "
               f"SELECT d.g, {', '.join(empty.format(n) for n in names)}, coalesce(a.clamped, 0) FROM dp_keys d "
               f"LEFT JOIN a ON a.g = d.g ORDER BY d.i")
    elif gexpr:
        sql = f"SELECT {gexpr} AS g, {', '.join(aggs)}, {clamped} AS clamped FROM {rel} GROUP BY 1 ORDER BY 1 NULLS LAST"
    else:
        sql = f"SELECT NULL AS g, {', '.join(aggs)}, {clamped} AS clamped FROM {rel}"
    rows = scan(sql)
    # One released answer per group key (1 without --group-by): anything else is refused, never released.
    got_keys = [r[0] for r in rows]
    expected = n_groups if gexpr else 1
    if len(rows) != expected or len(set(map(repr, got_keys))) != len(got_keys):
        raise ValueError(f"refused: the query produced {len(rows)} answers where {expected} (one per group) were expected")
    if gexpr and not rows:
        raise ValueError("the table has no rows: there is no group to answer")
    # A percentile of an empty selection is LO by convention, and is released with noise like any other:
    # refusing it (as before) told anyone, for free and exactly, whether some row matched a --where. The
    # convention keeps Δ: under d_h the percentile already moves over LO..HI, and under a value metric
    # the selection is public, so the convention is a constant.
    rows = [(r[0], *(bounds[0] if v is None else v for v in r[1:-1]), r[-1]) if query.kind == "percentile" else r
            for r in rows]
    return release_answers(rows, plan, table=table, query=query, privacy=privacy, mechanism=mechanism,
                           value_bounds=value_bounds, unit=unit, where=where, group_by=group_by, keys=keys,
                           n_groups=n_groups, invalid=invalid, skip_invalid=skip_invalid, public_cols=public_cols,
                           prior=prior, rng=rng, confidence=confidence)


@dataclass(frozen=True)
class AnswerPlan:
    """What the noise of a query's answers depends on, from public figures only (the table size N, the group
    count, the declared bounds): Δ and its theorem, ε per answer and its composition, the answers' integer grid."""

    epsilon: float
    delta: float
    theorem: str
    optimal_thm: bool
    sum_graph: bool
    factor: int
    composition: str
    eps_answer: float
    lo_a: int
    hi_a: int
    step: float
    total: int
    u: float


def answer_plan(query: Query, privacy: str, bounds, u: float, *, mechanism: str, epsilon: float, total: int,
                selected: bool, skip_invalid: bool, group_by, n_groups: int) -> AnswerPlan:
    """The :class:`AnswerPlan` of a query on a table of ``total`` rows (``bounds`` in units of ``u``)."""
    eps = epsilon
    if query.kind == "avg" and total == 0:
        raise ValueError("the table has no rows: its average is undefined")
    delta, theorem, optimal_thm = _sensitivity(query, privacy, bounds, total, selected=selected,
                                               skip_invalid=skip_invalid)
    sum_graph = mechanism == "tight-constraints" and privacy == "standard" and query.kind in ("sum", "avg")
    if mechanism == "tight-constraints" and not optimal_thm and query.kind != "count" and not sum_graph:
        raise ValueError("--mechanism tight-constraints: with null values the answers' constraint graph is no longer the "
                         "path of the theorem; use --mechanism truncated-geometric")
    factor, composition = _plan_split(query, privacy, group_by, n_groups)
    eps_answer = eps / factor
    # The public integer grid of each answer (values in units of u), and the step that turns it into the
    # released value.
    step = u
    if query.kind in ("count", "kcount"):
        lo_a, hi_a = 0, total
    elif query.kind == "sum":
        lo, hi = bounds
        lo_a, hi_a = (min(0, total * lo), max(0, total * hi)) if (selected or skip_invalid) else (total * lo, total * hi)
    elif query.kind == "avg" and privacy != "dinf":
        lo_a, hi_a = bounds[0] * total, bounds[1] * total
        step = u / total
    else:  # percentile, or the rounded mean under d∞
        lo_a, hi_a = bounds
    return AnswerPlan(eps, delta, theorem, optimal_thm, sum_graph, factor, composition, eps_answer, lo_a, hi_a, step,
                      total, u)


def release_answers(rows, plan: AnswerPlan, *, table: str, query: Query, privacy: str, mechanism: str, value_bounds,
                    unit, where, group_by, keys, n_groups: int, invalid: int, skip_invalid: bool, public_cols,
                    prior, rng, confidence: float = 0.95) -> QueryResult:
    """The released answers: ``rows`` are the exact answers, one per group key (key, value(s)..., number clamped), as
    the table's scan computed them (DuckDB, or Dask in :mod:`dprivacy.api`); noise from ``rng`` is added once."""
    from ..sampling import random_source
    from ..sampling.discrete import discrete_laplace, geometric_parameters

    eps, delta, theorem, optimal_thm, sum_graph = plan.epsilon, plan.delta, plan.theorem, plan.optimal_thm, plan.sum_graph
    factor, composition, eps_answer, lo_a, hi_a = plan.factor, plan.composition, plan.eps_answer, plan.lo_a, plan.hi_a
    step, total, u = plan.step, plan.total, plan.u
    k = len(query.columns)
    src = random_source(rng)
    if sum_graph:
        res = _tight_sum(table, query, rows, src, eps=eps, eps_answer=eps_answer, factor=factor, delta=delta,
                         lo_a=lo_a, hi_a=hi_a, step=step, total=total, bounds=value_bounds, where=where, group_by=group_by,
                         theorem=theorem, composition=composition, confidence=confidence, prior=prior,
                         public_cols=public_cols, n_groups=n_groups, invalid=invalid if skip_invalid else 0)
        res.unit = unit
        return res
    # Exact integer sampling (CKS 2020) at s/t ≤ ε_a/Δ: no floating-point step decides a released value.
    params = geometric_parameters(eps_answer, delta)
    alpha = params.alpha
    width = k if query.kind == "kcount" else 1
    noise = discrete_laplace(len(rows) * width, params.s, params.t, src.generator).reshape(len(rows), width)
    clamp = mechanism != "geometric"
    if clamp:
        mean, t = truncated_geometric_accuracy(alpha, lo_a, hi_a, confidence=confidence)
        accuracy = ("exact for the truncated geometric on the public range, and valid for every true answer in it: "
                    "'expected |error|' is the largest E|error| over the range (reached in its middle; smaller near the "
                    "ends), 'within ±' the smallest t with P(|error| > t) ≤ " f"{1 - confidence:g} for every true answer")
    else:
        mean, t = geometric_accuracy(alpha, confidence=confidence)
        accuracy = "exact for the (unclamped) two-sided geometric noise: E|K| = 2α/(1−α²), P(|K| > t) = 2α^{t+1}/(1+α)"
    remap = prior_err = None
    if mechanism == "optimal":
        if query.kind in ("kcount", "avg"):
            raise ValueError(f"--mechanism optimal is for count, sum and percentile answers, not {query.kind}")
        size = hi_a - lo_a + 1
        if size > OPTIMAL_MAX_ANSWERS:
            raise ValueError(f"--mechanism optimal: the answers range over {size:,} values, over the {OPTIMAL_MAX_ANSWERS:,} "
                             "on which the remap is computed; use the truncated geometric (auto)")
        pi = _answer_prior(prior, size, lo_a, hi_a)
        chan = truncated_geometric_rows(alpha, lo_a, hi_a)
        remap, prior_err = bayes_remap_abs(chan, pi)
        mean, t, _ = remap_accuracy(chan, remap, confidence=confidence)
        remap = remap + lo_a
        accuracy = ("'E|error| under the prior' averages the remapped answer's |error| over the prior's answers: it is only "
                    "as true as the prior (a true answer the prior deems unlikely can be far off every time); 'expected "
                    "|error|' and 'within ±' are the worst case over every true answer in the range, computed exactly "
                    "from the channel: the figures to quote")
    answers = []
    for row, kk in zip(rows, noise):
        grp, vals, n_clamped = row[0], row[1:-1], row[-1]
        ints = [int(v) for v in vals]
        if query.kind == "avg" and privacy == "dinf":
            ints = [(2 * s + total) // (2 * total) for s in ints]  # the mean rounded to the grid (nearest, ties up)
        out = [v + int(e) for v, e in zip(ints, kk)]
        if clamp:
            out = [min(max(o, lo_a), hi_a) for o in out]
        if remap is not None:
            out = [int(remap[o - lo_a]) for o in out]
        noisy = [_on_grid(o, step) for o in out] if query.kind == "kcount" else _on_grid(out[0], step)
        answers.append(GroupAnswer(grp, noisy, int(n_clamped), mean * step, t * step, confidence,
                                   None if prior_err is None else prior_err * step))
    used = {"auto": "truncated-geometric", "truncated-geometric": "truncated-geometric", "geometric": "geometric",
            "tight-constraints": "tight-constraints", "optimal": "truncated-geometric + Bayes remap"}[mechanism]
    if query.kind == "percentile" and (where or group_by is not None or skip_invalid):
        theorem += "; a selection with no valid value has the percentile LO by convention (released with noise too)"
    if mechanism == "optimal":
        if optimal_thm:
            claim = ("the truncated geometric is universally optimal here (the theorem above), so followed by this remap it "
                     "minimises the prior's expected |error| over all mechanisms with the same privacy for this answer")
        else:
            claim = ("no universally optimal mechanism exists here (the theorem above), so this is the best remap of the "
                     "truncated geometric for the prior, not the optimal mechanism: the linear program on the answer space "
                     "(`dprivacy design ... --mechanism optimal`) can do better")
        theorem += ("; --mechanism optimal: the truncated geometric followed by the remap that minimises the expected |error| "
                    f"under the given prior (a weighted median of the posterior); {claim}")
    if mechanism == "tight-constraints":
        theorem += ("; the answers' constraint graph is a path here (a count, or a query uniformly Δ-sensitive on values, "
                    "seed 002 Thm 6), and on a path the tight-constraints mechanism is the truncated geometric (seed 000 "
                    "§6.1: z = (1−α)/(1+α) inside and 1/(1+α) at the ends), drawn here as such")
    elif mechanism == "geometric":
        theorem += "; --mechanism geometric: the same noise without clamping, so answers may fall outside the range"
    if privacy == "standard":
        neighbours = (f"standard ε-DP (d_h): neighbouring tables differ in one row, any of its columns changed; the table "
                      f"size N = {total} is public" + ("" if group_by is None else
                                                       f", and so are the {n_groups} declared keys of {group_by!r}"))
        guarantee = (f"ε = {eps:g} (standard): changing one row changes the probability of every release by at most a "
                     f"factor e^{eps:g}")
    else:
        metric = {"normalized-d1": "d̃1 = Σ_rows |x − x'|/(HI − LO)", "d1": "d1 = Σ_rows |x − x'|",
                  "dinf": "d∞ = max_rows |x − x'|"}[privacy]
        col_name = query.column
        neighbours = (f"ε·{privacy}-privacy on the values of {col_name!r} ({metric}, nulls at distance HI − LO); the table "
                      f"size N = {total} and every other column are public")
        per = "" if unit is None or privacy == "normalized-d1" else f" (in units of {u:g})"
        guarantee = (f"ε = {eps:g} ({privacy}): two tables whose {col_name!r} values are at distance d{per} get every "
                     f"release with probabilities within a factor e^(ε·d)")
        if unit is not None:
            # the mechanism sees the values rounded to the unit: rounding moves two values at distance 0.02 units to
            # 1 unit apart, and a review measured e^1 between such tables (3,000 draws): say so
            extra = {"d1": "d + k", "normalized-d1": f"d + k·{u:g}/(HI − LO)", "dinf": "d + 1"}[privacy]
            guarantee += (f", d measured on the values rounded to multiples of --unit {u:g} (what the mechanism sees); "
                          f"between the values as given, rounding adds up to one unit per changed row: the factor is "
                          f"at most e^(ε·({extra}))" + (" for k changed rows" if "k" in extra else ""))
    public = [f"N = {total} rows"]
    if privacy in VALUE_METRICS and public_cols:
        public.append(f"the columns used by --where/--group-by ({', '.join(public_cols)}) are treated as public: they are "
                      "NOT protected")
    if group_by is not None:
        public.append(_keys_public(group_by, n_groups, keys is not None))
    if composition:
        guarantee += "; " + composition
    delivered = params.delivered_epsilon * factor
    res = QueryResult(os.path.basename(table), query.name, privacy, used, eps, delta, value_bounds, where, group_by,
                      answers, src.to_dict(),
                      guarantee=guarantee, theorem=theorem, epsilon_spent=eps, delivered_epsilon=delivered,
                      sampler=(f"exact discrete Laplace in integer arithmetic (Canonne, Kamath, Steinke 2020, Alg. 2) with "
                               f"P(K = k) ∝ exp(−|k|·{params.s}/{params.t}), ε_a/Δ rounded down to a multiple of 2^-40"),
                      neighbours=neighbours, public="; ".join(public), epsilon_per_answer=eps_answer,
                      composition=composition, answer_range=(lo_a, hi_a), answer_step=step, noise_alpha=alpha,
                      accuracy=accuracy, universally_optimal=bool(optimal_thm and mechanism != "geometric"))
    res.rows_skipped_not_private = invalid if skip_invalid else 0
    res.unit = unit
    if privacy in VALUE_METRICS:
        res.protected_column, res.public_columns = query.column, list(public_cols)
    return res




def _keys_public(group_by: str, n_groups: int, declared: bool) -> str:
    if declared:
        return (f"the {n_groups} group keys declared for {group_by!r} (--keys) are public; each gets an answer, with or "
                "without rows, and rows with another key are in no group")
    return (f"the group keys (the {n_groups} distinct values of {group_by!r} in the table) are treated as public; each "
            "gets an answer, with or without selected rows")


#: declared group keys, at most (each is one released answer)
MAX_KEYS = 100_000


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
    # a key the cast changes is refused, not answered under another value (review: 1.5 became 2 in an integer
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


def _on_grid(k, step: float):
    """k·step as the nearest float to the exact product: k / (1/step) when 1/step is a whole number (a unit
    of 0.01: 156109 → 1561.09, where 156109 · 0.01 is 1561.0900000000001). ``k`` an integer or an array."""
    inv = 1.0 / step
    return k / round(inv) if abs(inv - round(inv)) <= 1e-9 * inv else k * step


def _answer_prior(prior, size: int, lo: int, hi: int) -> np.ndarray:
    """The prior on the answers lo..hi: ``"uniform"``, an array, or a .npy/.csv/.txt file of ``size`` weights."""
    if prior is None:
        raise ValueError("--mechanism optimal needs --prior: 'uniform' or a file of weights on the answers "
                         f"{lo}..{hi} ({size} values)")
    from ..spaces import read_prior

    # (the one reader of --prior: n weights in one row or one column, normalised)
    return read_prior(prior, size, name="--prior" if isinstance(prior, str) else "prior", per=f"one per answer {lo}..{hi}")[0]


def _tight_sum(table, query, rows, src, *, eps, eps_answer, factor, delta, lo_a, hi_a, step, total, bounds, where,
               group_by, theorem, composition, confidence, prior, public_cols, n_groups, invalid) -> QueryResult:
    """The tight-constraints mechanism on the sum's answer graph (seed 000 §7.1: answers lo..hi, adjacent iff
    |i − j| ≤ Δ, d = ⌈|i − j|/Δ⌉) at ε_a per answer, matrix-free (:mod:`dprivacy._kernels.sum_line`); one
    exact draw per group from the row of its true answer. Refused with ε* (ValueError) when it does not exist."""
    from .._kernels.sum_line import regularity_sum_line, tight_constraints_sum_line, tight_threshold_sum_line

    n = int(hi_a - lo_a + 1)
    if n > TIGHT_MAX_ANSWERS:
        raise ValueError(f"--mechanism tight-constraints: the answers of {query.name} range over {n:,} values "
                         f"({lo_a}..{hi_a}), over the {TIGHT_MAX_ANSWERS:,} on which the mechanism is built (about "
                         f"{220 * n / 2**30:.1f} GiB and {4.5e-6 * n:.0f} s at this size); narrow --bounds, give a coarser "
                         "--unit, or use --mechanism truncated-geometric")
    dlt = int(round(delta))
    res = tight_constraints_sum_line(n, dlt, epsilon=eps_answer)
    per = f" (ε/{factor} = {eps_answer:g} per answer)" if factor != 1 else ""
    if not res.exists:
        th = tight_threshold_sum_line(n, dlt)
        if th.epsilon_star is None:
            star = "no ε* was found"
        else:
            lo_b = th.bracket[0] if th.bracket and th.bracket[0] is not None else None
            star = (f"it exists from the threshold ε* = {th.epsilon_star * factor:.6g} (this query's ε" +
                    (f"; ε* in ({lo_b * factor:.6g}, {th.epsilon_star * factor:.6g}], certified)" if lo_b is not None and th.certified
                     else "; verified existence there, the bracket is not certified)"))
        verdict = "is undecided at" if res.certainty == "undecided" else "does not exist at"
        raise ValueError(f"--mechanism tight-constraints {verdict} ε = {eps:g}{per} on the {n:,} answers of {query.name} "
                         f"(adjacent iff |i − j| ≤ {dlt}, seed 000 §7.1; {res.certificate if res.certificate != 'none' else 'no'} "
                         f"certificate, min z = {res.min_z:.3g}): {star}; use a larger --epsilon or "
                         "--mechanism truncated-geometric")
    mech = res.mechanism
    mean, t = mech.accuracy(confidence=confidence)
    answers = []
    # The delivered ε is reported at fixed answers, never at the true one (measured at the true answer's
    # row it printed 2.99999999492 for a sum of 0 and 2.99999999416 for 100: a reading of the data).
    reference = sorted({0, min(dlt, n - 1), n // 2, max(n - 1 - dlt, 0), n - 1})
    delivered = max(mech.delivered_epsilon(y) for y in reference)
    for row in rows:
        grp, val, n_clamped = row[0], int(row[1]), row[-1]
        o, _ = mech.sample_answer(val - lo_a, src.generator)
        answers.append(GroupAnswer(grp, _on_grid(lo_a + o, step), int(n_clamped), mean * step, t * step, confidence))
    optimality = ""
    if prior is not None:
        pi = _answer_prior(prior, n, lo_a, hi_a)
        reg = regularity_sum_line(n, dlt, pi, epsilon=eps_answer)
        verdict = {"exists": "is in", "absent": "is NOT in", "undecided": "could not be placed in or outside"}[reg.status]
        optimality = (f"the prior {verdict} the region of ε·d-regular priors ({reg.certainty}, {reg.certificate}; "
                      "μΦ = π solved matrix-free)")
        optimality += ("; so this mechanism is optimal for it: no ε·d-private mechanism has a larger probability of "
                       "reporting the true answer (binary gain) under it (seed 000 Thm 4)" if reg.status == "exists" else
                       "; seed 000 Thm 4 then makes no optimality claim for it (`--mechanism optimal` may do better)")
    theorem = (f"the tight-constraints mechanism of seed 000 (Def 6, Eq. 12: H(y, o) = z_o·e^(−ε⌈|y−o|/{dlt}⌉), Φz = 1) on the "
               f"sum's answer graph lo..hi = {lo_a}..{hi_a} ({n:,} answers, adjacent iff |i − j| ≤ Δ = {dlt}; seed 000 §7.1); "
               f"ε·d-private by Prop 6 (z ≥ 0 {res.certainty}, {res.certificate}: {res.reason.split('; ', 1)[-1]}), hence ε-DP "
               f"for tables: a changed row moves the answer by at most Δ; optimal for the binary gain for every ε·d-regular "
               f"prior on the answers (seed 000 Thm 4); Δ: {theorem}")
    guarantee = (f"ε = {eps:g} (standard): changing one row changes the probability of every release by at most a factor "
                 f"e^{eps:g}")
    if composition:
        guarantee += "; " + composition
    public = [f"N = {total} rows"]
    if group_by is not None:
        public.append(_keys_public(group_by, n_groups, True))  # standard: always declared
    accuracy = ("worst case over every true answer in the public range, computed exactly from the mechanism's rows (one FFT "
                "product for all rows): 'expected |error|' = max_y Σ_o H(y, o)·|o − y|, 'within ±' the smallest t with "
                f"P(|error| > t) ≤ {1 - confidence:g} for every true answer")
    neighbours = (f"standard ε-DP (d_h): neighbouring tables differ in one row, any of its columns changed; the table size "
                  f"N = {total} is public" + ("" if group_by is None else f", and so are the {n_groups} declared keys of {group_by!r}"))
    r = QueryResult(os.path.basename(table), query.name, "standard", "tight-constraints", eps, float(delta), bounds, where, group_by, answers,
                    src.to_dict(), guarantee=guarantee, theorem=theorem, epsilon_spent=eps,
                    delivered_epsilon=delivered * factor,
                    sampler=("exact: the true answer's row quantised to integers summing to 2^62 (mixed with the uniform "
                             f"distribution at weight {mech.mixing_weight():.3g}), one uniform 62-bit "
                             "integer from the random source; delivered ε measured on the integers against the rows of the "
                             f"adjacent answers, at the answers {', '.join(str(lo_a + y) for y in reference)} (the same "
                             "whatever the data)"),
                    neighbours=neighbours, public="; ".join(public), epsilon_per_answer=eps_answer,
                    composition=composition, answer_range=(lo_a, hi_a), answer_step=step, noise_alpha=math.exp(-eps_answer),
                    accuracy=accuracy, universally_optimal=False, optimality=optimality,
                    solver={"answers": n, "delta": dlt, "method": res.method, "iterations": res.iterations,
                            "certainty": res.certainty, "certificate": res.certificate, "min_z": res.min_z,
                            "error_bound": res.error_bound, "seconds": round(res.elapsed, 3)})
    r.rows_skipped_not_private = invalid
    return r
