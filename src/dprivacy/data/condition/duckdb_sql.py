"""Compiling a parsed condition to DuckDB SQL against a table's column types: every column quoted, every literal
re-written and checked here, every function one of :data:`~.grammar.FUNCTIONS`, arithmetic in float64 and every
cast a TRY_CAST (see :mod:`dprivacy.data.condition`)."""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from .grammar import CAST_TYPES, FUNCTIONS, UNITS, ConditionError, Node, parse


@dataclass(frozen=True)
class Compiled:
    """A condition compiled against a table: the SQL (evaluate it as ``coalesce(try(sql), false)``) and the
    columns it reads, as the table names them."""

    sql: str
    columns: frozenset


def column_kind(sql_type: str) -> str:
    """The kind of a DuckDB column type: "num", "text", "bool", "date", "ts", or "other" (lists, structs, blobs,
    times, intervals: usable in IS [NOT] NULL only)."""
    t = sql_type.upper()
    if any(c in t for c in ("[", "STRUCT", "MAP", "UNION")):
        return "other"
    if t.startswith(("TIMESTAMP", "DATETIME")):
        return "ts"
    if t == "DATE":
        return "date"
    if t in ("VARCHAR", "TEXT", "STRING") or t.startswith("VARCHAR"):
        return "text"
    if t in ("BOOLEAN", "BOOL"):
        return "bool"
    if re.fullmatch(r"(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|U?INT\d+|DOUBLE|FLOAT\d?|REAL|DECIMAL(\(\d+,\s*\d+\))?"
                    r"|NUMERIC(\(\d+,\s*\d+\))?)", t):
        return "num"
    return "other"


_KIND_NAMES = {"num": "a number", "text": "text", "bool": "true/false", "date": "a date", "ts": "a timestamp",
               "null": "NULL", "other": "a value of another type"}
_SQL_TYPE = {"num": "DOUBLE", "text": "VARCHAR", "bool": "BOOLEAN", "date": "DATE", "ts": "TIMESTAMP"}


_NUMBER = re.compile(r"\s*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*")
_INTEGER_TYPE = re.compile(r"U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|U?INT\d+")
#: Predicates, each evaluated under its own try(): an error on a row (a conversion, an overflow) makes that
#: predicate NULL, not the whole condition
_PREDICATES = ("cmp", "between", "in", "like")


def _not_nan(sql: str) -> str:
    """``sql`` (a float64 result) with NaN made NULL: DuckDB orders NaN above every number and makes it equal to
    itself, so 0/0 > 100 would be true."""
    return f"nullif({sql}, CAST('NaN' AS DOUBLE))"


def _quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_text(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class _Compiler:
    def __init__(self, text: str, types: dict):
        self.text = text
        self.by_lower = {str(c).lower(): str(c) for c in types}
        self.kinds = {str(c): column_kind(str(t)) for c, t in types.items()}
        self.integer = {str(c) for c, t in types.items() if _INTEGER_TYPE.fullmatch(str(t).upper())}
        self.used: set = set()

    def fail(self, node: Node, what: str) -> ConditionError:
        return ConditionError(f"bad --where {self.text!r}: {what} (at character {node.pos + 1})")

    # A typed SQL fragment: (sql, kind, literal node or None). A literal keeps its node so that it can be read as
    # the kind it is compared with (a quoted date beside a date column) and checked here.
    def expr(self, n: Node):
        sql, kind, lit = self.term(n)
        return (f"try({sql})", kind, lit) if n.kind in _PREDICATES else (sql, kind, lit)

    def term(self, n: Node):
        k = n.kind
        if k == "num":
            try:
                float(n.value)
            except ValueError:
                raise self.fail(n, f"{n.value!r} is not a number") from None
            return (f"({n.value})" if str(n.value).startswith("-") else n.value), "num", n
        if k == "str":
            return _quote_text(n.value), "text", n
        if k == "bool":
            return ("TRUE" if n.value else "FALSE"), "bool", n
        if k == "null":
            return "NULL", "null", n
        if k in ("date", "ts"):
            return self.time_literal(n, k), k, n
        if k == "current_date":
            return f"DATE '{_dt.datetime.now(_dt.timezone.utc).date().isoformat()}'", "date", None
        if k == "col":
            name = self.by_lower.get(str(n.value).lower())
            if name is None:
                raise self.fail(n, f"{n.value!r} is not a column of the table (the columns are "
                                   f"{', '.join(self.by_lower.values())})")
            self.used.add(name)
            return _quote_name(name), self.kinds[name], None
        if k in ("and", "or"):
            parts = [self.as_kind(a, "bool") for a in n.args]
            return f"({parts[0]} {k.upper()} {parts[1]})", "bool", None
        if k == "not":
            return f"(NOT {self.as_kind(n.args[0], 'bool')})", "bool", None
        if k == "is":
            neg, what = n.value
            sql, kind, _ = self.expr(n.args[0])
            if what != "null":
                sql = self.as_kind(n.args[0], "bool")
            return f"({sql} IS {'NOT ' if neg else ''}{what.upper()})", "bool", None
        if k == "cmp":
            a, b, _ = self.unify(n, list(n.args), ordered=n.value not in ("=", "<>"))
            return f"({a} {n.value} {b})", "bool", None
        if k == "between":
            a, lo, hi, _ = self.unify(n, list(n.args), ordered=True)
            return f"({a} {'NOT ' if n.value else ''}BETWEEN {lo} AND {hi})", "bool", None
        if k == "in":
            *parts, _ = self.unify(n, list(n.args), ordered=False)
            return f"({parts[0]} {'NOT ' if n.value else ''}IN ({', '.join(parts[1:])}))", "bool", None
        if k == "like":
            neg, word = n.value
            left = self.as_kind(n.args[0], "text")
            return f"({left} {'NOT ' if neg else ''}{word.upper()} {_quote_text(n.args[1].value)})", "bool", None
        if k == "neg":
            return f"(- {self.as_kind(n.args[0], 'num')})", "num", None
        if k == "arith":
            a, b = (self.as_kind(x, "num") for x in n.args)
            return _not_nan(f"({a} {n.value} {b})"), "num", None
        if k == "cast":
            return self.cast(n)
        if k == "case":
            return self.case(n)
        if k == "func":
            return self.func(n)
        raise self.fail(n, f"unknown node {k!r}")  # pragma: no cover - the parser makes only the kinds above

    def time_literal(self, n: Node, kind: str) -> str:
        s = str(n.value).strip()
        try:
            if kind == "date":
                return f"DATE '{_dt.date.fromisoformat(s).isoformat()}'"
            t = _dt.datetime.fromisoformat(s)
            if t.tzinfo is not None:
                raise ValueError(s)
            return f"TIMESTAMP '{t.isoformat(sep=' ')}'"
        except ValueError:
            want = "YYYY-MM-DD" if kind == "date" else "YYYY-MM-DD HH:MM[:SS], without a time-zone offset"
            raise self.fail(n, f"{n.value!r} is not {_KIND_NAMES[kind]} (expected {want})") from None

    def convert(self, n: Node, sql: str, kind: str, lit, target: str) -> str:
        """``sql`` of ``kind`` read as ``target``: a literal is checked and re-written here, a text expression is
        TRY_CAST (NULL where it is not one), a date widens to a timestamp; anything else is refused."""
        if kind == target:
            return sql
        if kind == "null":
            return f"CAST(NULL AS {_SQL_TYPE[target]})"
        if kind == "text" and lit is not None and lit.kind == "str":
            if target == "num":
                if not _NUMBER.fullmatch(lit.value):
                    raise self.fail(lit, f"{lit.value!r} is not a number")
                return f"CAST({_quote_text(lit.value.strip())} AS DOUBLE)"
            if target in ("date", "ts"):
                return self.time_literal(lit, target)
            if target == "bool" and lit.value.strip().lower() in ("true", "false"):
                return lit.value.strip().upper()
        elif kind == "text" and target in ("num", "date", "ts", "bool"):
            return f"TRY_CAST(trim({sql}) AS {_SQL_TYPE[target]})"
        elif kind == "date" and target == "ts":
            return f"CAST({sql} AS TIMESTAMP)"
        raise self.fail(n, f"{_KIND_NAMES[kind]} where {_KIND_NAMES[target]} is expected")

    def as_kind(self, n: Node, target: str) -> str:
        sql, kind, lit = self.expr(n)
        if target == "num" and kind == "num":
            return f"CAST({sql} AS DOUBLE)"  # arithmetic in float64: no overflow error on any row
        return self.convert(n, sql, kind, lit, target)

    def unify(self, n: Node, args: list, *, ordered: bool):
        """Compile ``args`` to one kind (for a comparison, BETWEEN, IN, coalesce, ...): the first kind that is not
        text or NULL wins (a text column compared with a number is read as numbers); all text stays text."""
        typed = [self.expr(a) for a in args]
        kinds = [k for _, k, _ in typed]
        if "other" in kinds:
            bad = args[kinds.index("other")]
            raise self.fail(bad, f"{self.text[bad.pos:bad.pos + 40]!r} is a value of another type (list, struct, blob, "
                                 "time or interval): only IS [NOT] NULL applies to it")
        target = next((k for k in kinds if k not in ("text", "null")), "text" if "text" in kinds else "null")
        if target == "ts" or (target == "date" and "ts" in kinds):
            target = "ts"
        if target == "bool" and ordered:
            raise self.fail(n, "true/false values are not ordered (compare them with = or <>)")
        if target == "null":
            return [*(s for s, _, _ in typed), "null"]
        out = []
        for a, (sql, kind, lit) in zip(args, typed):
            if kind == "date" and target == "ts":
                out.append(f"CAST({sql} AS TIMESTAMP)")
            elif kind != target and kind not in ("text", "null"):
                raise self.fail(a, f"{_KIND_NAMES[kind]} compared with {_KIND_NAMES[target]}")
            else:
                out.append(self.convert(a, sql, kind, lit, target))
        if target == "num" and not all(self.is_integer(a) or k == "null" for a, (_, k, _) in zip(args, typed)):
            # compared as float64 unless all are integers: a DECIMAL(38) column beside 0.5 overflowed the common
            # decimal type on its largest values, which made the comparison fail on those rows
            out = [f"CAST({x} AS DOUBLE)" for x in out]
        return [*out, target]

    def is_integer(self, n: Node) -> bool:
        """An integer column or literal, compared exactly (a 64-bit id has no exact float64)."""
        if n.kind == "num":
            return re.fullmatch(r"-?[0-9]+", str(n.value)) is not None
        if n.kind == "col":
            return self.by_lower.get(str(n.value).lower()) in self.integer
        return False

    def cast(self, n: Node):
        sql_type, kind = CAST_TYPES[n.value]
        sql, src, lit = self.expr(n.args[0])
        if src == "other":
            raise self.fail(n, "a CAST of a value of another type (list, struct, blob, time or interval)")
        if src == "text" and kind != "text":
            return f"TRY_CAST(trim({sql}) AS {sql_type})", kind, None
        return f"TRY_CAST({sql} AS {sql_type})", kind, None

    def case(self, n: Node):
        conds = [self.as_kind(c, "bool") for c in n.args[0:len(n.args) - n.value:2]]
        results = list(n.args[1::2]) + ([n.args[-1]] if n.value else [])
        *res, kind = self.unify(n, results, ordered=False)
        whens = " ".join(f"WHEN {c} THEN {r}" for c, r in zip(conds, res))
        tail = f" ELSE {res[-1]}" if n.value else ""
        return f"(CASE {whens}{tail} END)", kind, None

    def literal_arg(self, n: Node, a: Node, what: str) -> str:
        if a.kind != "str":
            raise self.fail(a, f"{n.value}(...) takes {what} as a quoted literal")
        return a.value

    def func(self, n: Node):
        name, args = n.value, list(n.args)
        kinds, result = FUNCTIONS[name]
        required = [k for k in kinds if not k.endswith(("?", "*"))]
        variadic = any(k.endswith("*") for k in kinds)
        if len(args) < len(required) or (not variadic and len(args) > len(kinds)):
            most = "or more" if variadic else f"to {len(kinds)}" if len(kinds) > len(required) else ""
            raise self.fail(n, f"{name}(...) takes {len(required)} {most} argument(s), not {len(args)}".replace("  ", " "))
        if kinds[0] == "same":
            *parts, kind = self.unify(n, args, ordered=name in ("greatest", "least"))
            if name in ("greatest", "least") and kind == "bool":
                raise self.fail(n, f"{name} of true/false values")
            return f"{name}({', '.join(parts)})", kind, None
        parts = []
        for a, k in zip(args, kinds):
            k = k.rstrip("?*")
            if k == "unit":
                unit = self.literal_arg(n, a, "a date unit").strip().lower()
                if unit not in UNITS:
                    raise self.fail(a, f"{unit!r} is not a date unit (one of {', '.join(UNITS)})")
                parts.append(_quote_text(unit))
            elif k == "fmt":
                fmt = self.literal_arg(n, a, "a format")
                if name == "strptime" and re.search(r"%[zZ]", fmt):
                    raise self.fail(a, "a time-zone directive (%z, %Z) in strptime: the times are compared without one")
                parts.append(_quote_text(fmt))
            elif k == "int":
                if a.kind != "num" or not re.fullmatch(r"-?\d{1,2}", str(a.value)):
                    raise self.fail(a, f"{name}(x, n) takes a whole number of digits between -99 and 99 as n")
                parts.append(str(int(a.value)))
            elif k == "time":
                sql, kind, lit = self.expr(a)
                parts.append(sql if kind in ("date", "ts") else self.convert(a, sql, kind, lit, "ts"))
            elif k == "num" and name in ("substring", "left", "right"):
                parts.append(f"CAST({self.as_kind(a, 'num')} AS BIGINT)")
            else:
                parts.append(self.as_kind(a, k))
        fn = "try_strptime" if name == "strptime" else name
        sql = f"{fn}({', '.join(parts)})"
        if name == "date_trunc":
            sql = f"CAST({sql} AS TIMESTAMP)"
        elif result == "num" and name in ("sqrt", "ln", "log10", "exp"):
            sql = _not_nan(sql)
        return sql, result, None


def compile_condition(text: str, types: dict) -> Compiled:
    """Parse ``text`` (:func:`parse`) and compile it against a table whose columns have the DuckDB ``types``
    (name → type, from public data only): the SQL of a true/false condition on a row, and the columns it reads.
    Refused with :class:`ConditionError` (one line) when outside the language, naming an unknown column, mixing
    kinds that do not compare, or not true/false."""
    tree = parse(text)
    c = _Compiler(text, types)
    sql, kind, lit = c.expr(tree)
    if kind == "text" and lit is None:  # a flag in a column read as text ('true', 'f', '1'): NULL if not one
        sql, kind = c.convert(tree, sql, kind, lit, "bool"), "bool"
    if kind != "bool":
        raise ConditionError(f"bad --where {text!r}: it is {_KIND_NAMES[kind]}, not a true/false condition "
                             "(compare it, e.g. \"Region = 'West'\")")
    return Compiled(sql, frozenset(c.used))
