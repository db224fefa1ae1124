"""The condition language of ``query --where`` (dprivacy.data.condition): what it means, checked against a reference
evaluator in Python with SQL's three-valued logic, and how it reads literals, names and types."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

duckdb = pytest.importorskip("duckdb")

from dprivacy.data.condition import MAX_DEPTH, MAX_NODES, ConditionError, compile_condition, parse  # noqa: E402

TYPES = {"n": "BIGINT", "s": "VARCHAR", "t": "VARCHAR"}
S_VALUES = ["a", "A", "ab", "b", "Ab", "it's", None]


def _and(x, y):
    return False if x is False or y is False else None if x is None or y is None else True


def _or(x, y):
    return True if x is True or y is True else None if x is None or y is None else False


def _cmp(a, op, b):
    if a is None or b is None:
        return None
    return {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


_OPS = ["=", "<>", "<", "<=", ">", ">="]
_k = st.integers(-3, 3)
ATOMS = st.one_of(
    st.tuples(st.sampled_from(_OPS), _k).map(lambda t: (f"n {t[0]} {t[1]}", lambda r, t=t: _cmp(r["n"], t[0], t[1]))),
    st.tuples(_k, st.sampled_from(_OPS), _k).map(
        lambda t: (f"n * 2 + {t[0]} {t[1]} {t[2]}",
                   lambda r, t=t: None if r["n"] is None else _cmp(r["n"] * 2 + t[0], t[1], t[2]))),
    st.sampled_from(S_VALUES[:-1]).map(
        lambda v: (f"s = '{v.replace(chr(39), chr(39) * 2)}'", lambda r, v=v: _cmp(r["s"], "=", v))),
    st.just(("s IN ('a', 'b')", lambda r: None if r["s"] is None else r["s"] in ("a", "b"))),
    st.just(("s LIKE 'a%'", lambda r: None if r["s"] is None else r["s"].startswith("a"))),
    st.just(("lower(s) = 'ab'", lambda r: None if r["s"] is None else r["s"].lower() == "ab")),
    _k.map(lambda k: (f"length(s) > {k}", lambda r, k=k: None if r["s"] is None else len(r["s"]) > k)),
    st.tuples(_k, _k).map(lambda t: (f"n BETWEEN {t[0]} AND {t[1]}",
                                     lambda r, t=t: None if r["n"] is None else t[0] <= r["n"] <= t[1])),
    st.just(("s IS NULL", lambda r: r["s"] is None)),
    st.just(("n IS NOT NULL", lambda r: r["n"] is not None)),
    _k.map(lambda k: (f"CASE WHEN n > {k} THEN s ELSE 'z' END = 'a'",
                      lambda r, k=k: _cmp(r["s"] if (r["n"] is not None and r["n"] > k) else "z", "=", "a"))),
    st.just(("t = 2", lambda r: None if r["t"] is None else (float(r["t"]) == 2 if _is_number(r["t"]) else None))),
)


def _is_number(x: str) -> bool:
    try:
        float(x)
        return True
    except ValueError:
        return False


def _combine(children):
    return st.one_of(
        st.tuples(children, children).map(lambda p: (f"({p[0][0]}) AND ({p[1][0]})",
                                                     lambda r, p=p: _and(p[0][1](r), p[1][1](r)))),
        st.tuples(children, children).map(lambda p: (f"({p[0][0]}) OR ({p[1][0]})",
                                                     lambda r, p=p: _or(p[0][1](r), p[1][1](r)))),
        children.map(lambda c: (f"NOT ({c[0]})", lambda r, c=c: None if c[1](r) is None else not c[1](r))),
    )


CONDITIONS = st.recursive(ATOMS, _combine, max_leaves=6)
ROWS = st.lists(st.fixed_dictionaries({"n": st.one_of(st.none(), _k), "s": st.sampled_from(S_VALUES),
                                       "t": st.sampled_from(["2", " 2 ", "2.0", "x", None])}), min_size=1, max_size=8)


# the compiled SQL selects exactly the rows on which the condition is true under SQL's three-valued logic
@settings(max_examples=150)
@given(CONDITIONS, ROWS)
def test_compiled_conditions_select_what_the_reference_selects(cond, rows):
    text, ref = cond
    sql = compile_condition(text, TYPES).sql
    con = duckdb.connect()
    con.execute("CREATE TABLE x (i INTEGER, n BIGINT, s VARCHAR, t VARCHAR)")
    con.executemany("INSERT INTO x VALUES (?, ?, ?, ?)", [(i, r["n"], r["s"], r["t"]) for i, r in enumerate(rows)])
    got = [i for (i,) in con.execute(f"SELECT i FROM x WHERE coalesce(try({sql}), false) ORDER BY i").fetchall()]
    assert got == [i for i, r in enumerate(rows) if ref(r) is True], text


def _sql(text, types=None):
    return compile_condition(text, types or {"Sales": "DOUBLE", "Region": "VARCHAR", "Day": "DATE",
                                             'we"ird': "BIGINT", "flag": "VARCHAR", "ok": "BOOLEAN"})


def test_literals_names_and_kinds():
    assert _sql("Region = 'it''s'").sql == "try((\"Region\" = 'it''s'))"
    assert _sql('"we""ird" > 1').columns == {'we"ird'}
    assert _sql("region = 'West' AND SALES > 1").columns == {"Region", "Sales"}  # names in any case
    assert "DATE '2016-01-02'" in _sql("Day >= '2016-01-02'").sql  # a quoted date beside a date column
    assert "TRY_CAST(trim(\"flag\") AS DOUBLE)" in _sql("flag = 1").sql  # text read as a number, NULL if not one
    assert "TRY_CAST(trim(\"flag\") AS BOOLEAN)" in _sql("flag = true").sql
    assert "AS DOUBLE" in _sql("Sales * 2 > 1").sql  # arithmetic in float64
    assert _sql("ok").sql == '"ok"' and _sql("NOT ok OR ok IS NULL").columns == {"ok"}
    assert "TRY_CAST(trim(\"flag\") AS BOOLEAN)" in _sql("flag").sql  # a flag in a text column
    assert "TRY_CAST(trim(\"flag\") AS BOOLEAN)" in _sql("NOT flag").sql


def _count(text, rows, types):
    """How many of ``rows`` (dicts) the compiled condition selects, in DuckDB, as the query evaluates it."""
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    cols = list(types)
    con.execute(f"CREATE TABLE x ({', '.join(f'{c} {t}' for c, t in types.items())})")
    con.executemany(f"INSERT INTO x VALUES ({', '.join('?' * len(cols))})", [[r[c] for c in cols] for r in rows])
    sql = compile_condition(text, types).sql
    return con.execute(f"SELECT count(*) FILTER (WHERE coalesce(try({sql}), false)) FROM x").fetchone()[0]


def test_numbers_compare_as_numbers_of_any_size():
    # a DECIMAL(38) beside 0.5: compared as float64 (the common decimal type overflowed on the largest values)
    big = {"dec": "DECIMAL(38,0)", "id": "BIGINT"}
    rows = [{"dec": 10**37 * 9, "id": 1}, {"dec": 0, "id": 2}, {"dec": 1, "id": 3}]
    assert _count("dec > 0.5", rows, big) == 2
    assert _count("id = 3 OR dec > 0.5", rows, big) == 2
    # integers compare exactly (2^53 + 1 has no float64)
    assert _count("id = 9007199254740993", [{"dec": 0, "id": 2**53 + 1}, {"dec": 0, "id": 2**53}], big) == 1


def test_an_error_in_one_predicate_leaves_the_others():
    t = {"id": "BIGINT", "s": "VARCHAR"}
    rows = [{"id": i, "s": "abc"} for i in range(5)]
    assert _count("id = 3 OR substring(s, 1e19, 1) = 'a'", rows, t) == 1


def test_not_a_number_is_null():
    t = {"x": "DOUBLE", "y": "DOUBLE"}
    rows = [{"x": 0.0, "y": 0.0}, {"x": 1.0, "y": 0.0}, {"x": -1.0, "y": 0.0}, {"x": 5.0, "y": 1.0}]
    assert _count("x / y > 100", rows, t) == 1  # 1/0 = inf; 0/0 is no number (DuckDB would call NaN the largest)
    assert _count("(x - x) / (y - y) > 10", rows, t) == 0
    assert _count("sqrt(x) >= 0", rows, t) == 3


def test_current_date_is_a_date_not_a_column():
    t = {"current_date": "BIGINT", "v": "BIGINT"}
    sql = compile_condition("current_date > DATE '2000-01-01'", t)
    assert sql.columns == frozenset() and '"current_date"' not in sql.sql
    with pytest.raises(ConditionError, match="a number compared with a date|a date compared with"):
        compile_condition("CAST(current_date AS BIGINT) > 1000 AND current_date = 5", t)


def test_non_ascii_digits_are_names_not_numbers():
    t = {"२०२३": "BIGINT", "region": "VARCHAR"}
    assert compile_condition("abs(२०२३) > 1000", t).columns == {"२०२३"}
    with pytest.raises(ConditionError, match="is not a column"):
        compile_condition("١ > 0", t)


@pytest.mark.parametrize("text, says", [
    ("Day > '2016-02-30'", "is not a date"),
    ("Sales > 'ten'", "is not a number"),
    ("Sales", "it is a number, not a true/false condition"),
    ("ok < true", "not ordered"),
    ("Day = 3", "a number compared with a date"),
    ("lower(Sales) = 'a'", "a number where text is expected"),
    ("date_trunc('fortnight', Day) = Day", "is not a date unit"),
    ("round(Sales, Sales) > 1", "a whole number of digits"),
    ("substring(Region) = 'a'", "takes 2 to 3 argument(s), not 1"),
    ("Nope = 1", "'Nope' is not a column of the table"),
    ("Region = 'a' Region", "expected the end of the condition"),
    ("(Region = 'a'", "closing the parenthesis"),
    ("Region LIKE Region", "pattern that is not a quoted literal"),
    ("Region IN (Region)", "an IN list of anything but literals"),
    ("TIMESTAMP '2020-01-01T00:00+02:00' < Day", "without a time-zone offset"),
    ("strptime(Region, '%Y %z') < Day", "a time-zone directive"),
])
def test_refusals_name_the_problem_in_one_line(text, says):
    with pytest.raises(ConditionError, match="^bad --where") as e:
        _sql(text)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_size_limits():
    parse(" AND ".join(["Sales > 1"] * (MAX_NODES // 4)))
    with pytest.raises(ConditionError, match="more than"):
        parse(" AND ".join(["Sales > 1"] * MAX_NODES))
    with pytest.raises(ConditionError, match="nested more than"):
        parse("(" * (MAX_DEPTH + 1) + "ok" + ")" * (MAX_DEPTH + 1))
    with pytest.raises(ConditionError, match="characters, over"):
        parse("Region = '" + "x" * 5000 + "'")
