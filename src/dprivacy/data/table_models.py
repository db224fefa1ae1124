"""The vocabulary of table queries (:mod:`dprivacy.data.tables`): the query kinds, privacy models and mechanisms,
the parsed query, Δ and the theorem behind it per privacy model, the result objects, and how ε is split over
several answers. No table is read here."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

QUERY_KINDS = ("count", "kcount", "sum", "avg", "percentile")
PRIVACY_MODELS = ("standard", "normalized-d1", "d1", "dinf")
MECHANISMS = ("auto", "truncated-geometric", "geometric", "tight-constraints", "optimal", "permute-and-flip", "exponential",
              "staircase")

#: The mechanisms on ranks for a percentile under standard (table_percentile); ``auto`` is the first.
RANK_MECHANISMS = ("permute-and-flip", "exponential")
VALUE_METRICS = ("normalized-d1", "d1", "dinf")

#: Largest answer range on which ``--mechanism optimal`` computes its remap and exact accuracy.
OPTIMAL_MAX_ANSWERS = 3000


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
            return 1.0, ("Chatzikokolakis et al. 2013 Thm 8 (Ghosh et al.): a changed row changes a count by at most 1 and the truncated "
                         "geometric is universally optimal for a count" + note), True
        return 1.0, (f"each of the {len(q.columns)} counts at ε/{len(q.columns)} (one row changes every count by at most 1: "
                     "sequential composition); the k-count's answer graph is not a path, so no universally optimal "
                     "mechanism exists (Chatzikokolakis et al. 2013 Thm 9); the tight-constraints mechanism of ElSalamouny et al. 2014 §3.2 on that graph is "
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
                       "answer graph is not a path, so no universally optimal mechanism exists under d_h (Chatzikokolakis et al. 2013 Thm 9)"), False
        on = " on the sum (avg = sum/N)" if q.kind == "avg" else ""
        return r, (f"Δ = HI − LO{on} under d_h; private, but the {name}'s answer graph is not a path, so no universally "
                   "optimal mechanism exists under d_h (Chatzikokolakis et al. 2013 Thm 9)"), False
    raised = ""
    if privacy == "normalized-d1":
        d = r
        if skip_invalid and q.kind == "sum" and reach > r:
            d, raised = reach, "max(|LO|, |HI|)"
        if q.kind == "avg":
            thm = ("Chatzikokolakis et al. 2013 Thm 11 for the sum: the sum is uniformly (HI − LO)-sensitive wrt the normalized Manhattan metric "
                   "(no null values, N public), and avg = sum/N is a relabelling of it, so the truncated geometric on the sum at "
                   "ε/(HI − LO), divided by N, is universally optimal for ε·d̃1")
        else:
            thm = (f"Chatzikokolakis et al. 2013 Thm 11: the {name} is uniformly (HI − LO)-sensitive wrt the normalized Manhattan metric, so "
                   "the truncated geometric at ε/(HI − LO) is universally optimal for ε·d̃1 (the same noise as d_h, with "
                   "more protection for small changes)")
    elif privacy == "d1":
        d = 1.0
        if skip_invalid and q.kind == "sum" and reach > r:
            d, raised = reach / max(hi - lo, 1), "max(|LO|, |HI|)/(HI − LO)"
        if q.kind == "avg":
            thm = ("Chatzikokolakis et al. 2013 Thm 12 for the sum: the sum is uniformly 1-sensitive wrt d1 (no null values, N public), and "
                   "avg = sum/N is a relabelling of it, so the truncated geometric on the sum at ε, divided by N, is "
                   "universally optimal for ε·d1")
        else:
            thm = f"Chatzikokolakis et al. 2013 Thm 12: the {name} is uniformly 1-sensitive wrt d1: the truncated geometric is universally optimal"
    else:  # dinf
        if q.kind == "sum":
            raise ValueError("--privacy dinf is not available for sum (Chatzikokolakis et al. 2013 Thm 13 covers avg and percentile): use d1")
        d = 1.0
        if q.kind == "avg":
            thm = ("Chatzikokolakis et al. 2013 Thm 13: the mean rounded to the value grid LO..HI (nearest, ties up) is uniformly 1-sensitive "
                   "wrt d∞, so the truncated geometric on LO..HI is universally optimal for it; the exact mean is not "
                   "uniformly 1-sensitive (the project's test_exact_average_is_not_uniformly_1_sensitive and experiment "
                   "002-thm10-13), so the released answer is the rounded mean (the rounding itself is up to 0.5 from the "
                   "exact mean, on top of the stated error)")
        else:
            thm = "Chatzikokolakis et al. 2013 Thm 13: the percentile is uniformly 1-sensitive wrt d∞: the truncated geometric is universally optimal"
    if raised:
        thm = (f"Δ = {raised} = {d:g}: a value turning null (--skip-invalid) moves the sum by up to max(|LO|, |HI|), more than "
               f"the theorem's Δ; private, but outside the theorem, so no optimality claim (without nulls: {thm})")
        return d, thm, False
    return d, thm, True


@dataclass
class GroupAnswer:
    """One group's released answer. ``clamped_not_private`` is the exact number of values outside the
    bounds: for the data owner, not for publication. ``expected_abs_error`` and ``within`` hold for every
    true answer in the public range (the worst case); ``expected_abs_error_under_prior`` (``--mechanism
    optimal`` only) is the expected |error| averaged over the prior's answers."""

    group: object
    noisy: float | list
    clamped_not_private: int | None  # (None in a release without the owner's diagnostics)
    expected_abs_error: float
    within: float
    confidence: float
    expected_abs_error_under_prior: float | None = None
    #: a selection on ranks' accuracy (its error in values is not stated: NaN above): with probability ≥ confidence
    #: the released value's plotting positions are within this of the target q·n
    within_ranks: float | None = None


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
    #: staircase noise (a sum or average under standard): Δ and r in grid steps, b = e^{−ε_a}, and its E|K| in the
    #: answer's units; empty for the other mechanisms
    staircase: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        from ..results import jsonable

        d = dict(vars(self))
        d["answers"] = [dict(vars(a), group=_json_key(a.group)) for a in self.answers]
        return jsonable(d)


def _json_key(key):
    """A group key for strict JSON: a non-finite float is named as a string ("NaN", "Infinity", "-Infinity"),
    since JSON has no such numbers and jsonable's null would give NaN, ±inf and NULL keys one label (three answers
    keyed null)."""
    if isinstance(key, float) and not math.isfinite(key):
        return "NaN" if key != key else ("Infinity" if key > 0 else "-Infinity")
    return key


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


def standard_statement(eps: float, total: int, group_by: str | None, n_groups: int,
                       composition: str | None = None) -> tuple[str, str, list]:
    """(neighbours, guarantee, public) of an answer under standard ε-DP (d_h, N public, declared group keys)."""
    neighbours = (f"standard ε-DP (d_h): neighbouring tables differ in one row, any of its columns changed; the table "
                  f"size N = {total} is public" + ("" if group_by is None else
                                                   f", and so are the {n_groups} declared keys of {group_by!r}"))
    guarantee = (f"ε = {eps:g} (standard): changing one row changes the probability of every release by at most a factor "
                 f"e^{eps:g}")
    if composition:
        guarantee += "; " + composition
    public = [f"N = {total} rows"]
    if group_by is not None:
        public.append(_keys_public(group_by, n_groups, True))  # standard: always declared
    return neighbours, guarantee, public


def _keys_public(group_by: str, n_groups: int, declared: bool) -> str:
    if declared:
        return (f"the {n_groups} group keys declared for {group_by!r} (--keys) are public; each gets an answer, with or "
                "without rows, and rows with another key are in no group")
    return (f"the group keys (the {n_groups} distinct values of {group_by!r} in the table) are treated as public; each "
            "gets an answer, with or without selected rows")


#: declared group keys, at most (each is one released answer)
MAX_KEYS = 100_000


def _on_grid(k, step: float):
    """k·step as the nearest float to the exact product: k / (1/step) when 1/step is a whole number (a unit
    of 0.01: 156109 → 1561.09, where 156109 · 0.01 is 1561.0900000000001). ``k`` an integer or an array."""
    inv = 1.0 / step
    return k / round(inv) if abs(inv - round(inv)) <= 1e-9 * inv else k * step


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
    #: a percentile under standard answered on ranks (table_percentile): "permute-and-flip" or "exponential", else None
    ranks: str | None = None
    #: a sum or average under standard answered with staircase noise (table_staircase.Staircase), else None
    staircase: object = None


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
    # a percentile under d_h: a selection on ranks (permute-and-flip unless the exponential mechanism is asked for),
    # which collects the selection's distinct values; refused here, on public figures only, when their bound is too large
    ranks = None
    if query.kind == "percentile" and privacy == "standard" and mechanism in ("auto",) + RANK_MECHANISMS:
        ranks = RANK_MECHANISMS[0] if mechanism == "auto" else mechanism
        check_collection_size(total, n_groups, bounds[0], bounds[1], query.name)
    # a sum or average under d_h: the staircase noise where its E|error| is below the geometric's (auto), or by name
    stair = None
    if mechanism == "staircase" and not (privacy == "standard" and query.kind in ("sum", "avg")):
        raise ValueError(f"--mechanism staircase is for sum and avg under --privacy standard (its noise protects a shift of the "
                         f"answer by up to Δ at ε, as ε-DP asks, but not small shifts at ε·d/Δ, as the metrics on values "
                         f"ask); for {query.name} under {privacy} use --mechanism auto")
    if mechanism in ("auto", "staircase") and privacy == "standard" and query.kind in ("sum", "avg"):
        from .table_staircase import staircase_parameters

        stair = staircase_parameters(eps_answer, delta, force=mechanism == "staircase")
    return AnswerPlan(eps, delta, theorem, optimal_thm, sum_graph, factor, composition, eps_answer, lo_a, hi_a, step,
                      total, u, ranks, stair)


#: Largest number of (group, value, count) rows the collection may return, by its public bound min(N, G·M):
#: about 24 bytes each in numpy, and DuckDB's aggregation beside them (about 2 GB at this limit).
MAX_COLLECTED = 50_000_000


def check_collection_size(total: int, groups: int, lo: int, hi: int, name: str) -> int:
    """The public bound min(N, G·M) on the rows collected; refused (ValueError) above :data:`MAX_COLLECTED`."""
    bound = min(int(total), max(int(groups), 1) * (int(hi) - int(lo) + 1))
    if bound > MAX_COLLECTED:
        raise ValueError(f"{name} on ranks (permute-and-flip, exponential) collects the distinct values of each group: up to "
                         f"min(N, groups × lattice points) = {bound:,} here, over the {MAX_COLLECTED:,} allowed; give a "
                         "coarser --unit or narrower --bounds, or --mechanism truncated-geometric")
    return bound
