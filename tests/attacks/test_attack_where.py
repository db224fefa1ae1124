"""Attacks on ``query --where``, each kept as a test so that no change reopens it.

| leak | test |
|---|---|
| a condition that builds a value only on matching rows runs out of memory on one table and not on its neighbour (range, repeat, lpad, list_resize, nested replace; string_split under casts; lambdas reusing their parameter, 8^11) | test_constructs_that_grow_a_value_are_refused_before_the_table_is_opened |
| any condition from a larger SQL grammar: inside the language and evaluated within a memory limit, or refused before the scan | test_a_larger_grammar_is_either_in_the_language_or_refused |
| the protected column read through the row under the relation's name (read_csv_auto['v'], to_json, t.v) | test_where_names_columns_of_the_table_only |
| a lambda parameter named like the relation reached the row | test_lambdas_and_clock_words |
| an error() or a failing CAST quoted the row's values in the refusal | test_a_condition_that_fails_on_a_row_never_quotes_it |
| a text column compared with a number was typed from the rows (one 'x' changed the comparison for every row) | test_a_text_column_compared_with_a_number_reads_each_value_alone |
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

duckdb = pytest.importorskip("duckdb")

from dprivacy.data.condition import FUNCTIONS, ConditionError, compile_condition  # noqa: E402
from dprivacy.data.tables import parse_query, run_query  # noqa: E402


def _data(name: str) -> str:
    bs = pytest.importorskip("bokeh_sampledata", reason="real tables ship with bokeh-sampledata (the test extra)")
    return os.path.join(os.path.dirname(bs.__file__), "_data", name)


def _grown(levels: int, factor: int) -> str:
    """A condition that multiplies a cell's length by ``factor`` at each of ``levels`` lambdas reusing their
    parameter, only where v > 100 (the shape a review used: 8^11 times on a matching row)."""
    e = "g"
    for k in range(levels):
        e = f"list_transform([{e}], x{k} -> {' || '.join([f'x{k}'] * factor)})[1]"
    return f"CASE WHEN TRY_CAST(v AS DOUBLE) > 100 THEN length({e}) > 0 ELSE false END"


def _split_cast(levels: int) -> str:
    e = "g"
    for _ in range(levels):
        e = f"CAST(string_split({e}, '') AS VARCHAR)"
    return f"length({e}) > 0"


GROWERS = [
    _grown(11, 8),
    _split_cast(13),
    "CASE WHEN TRY_CAST(v AS DOUBLE) > 100 THEN array_length(range(3000000000)) > 0 ELSE false END",
    "length(repeat(g, TRY_CAST(v AS INTEGER) * 100000000)) > 0",
    "length(lpad(g, 3000000000, 'x')) > 0",
    "len(list_resize([v], 3000000000)) > 0",
    "length(replace(replace(replace(g, 'a', 'aa'), 'a', 'aa'), 'a', 'aa')) > 0",
    "len(generate_series(1, 10)) > 0",
    "length(g || g || g) > 3",
    "length(concat(g, g)) > 0",
    "length(printf('%0100000000d', 1)) > 0",
    "length(string_agg(g, g)) > 0",
    "CASE WHEN v > '1' THEN length(to_json({'a': g})) > 0 END",
]


# leak: a value grown only on rows that match made the scan fail for one table and not its neighbour (free yes/no)
@pytest.mark.parametrize("where", GROWERS)
def test_constructs_that_grow_a_value_are_refused_before_the_table_is_opened(tmp_path, where):
    with pytest.raises(ConditionError, match=r"^bad --where .* is not in the condition language") as e:
        run_query(str(tmp_path / "no-such-table.csv"), parse_query("count"), epsilon=1.0, where=where)
    assert "\n" not in str(e.value)  # one line, naming the construct
    assert not (tmp_path / "no-such-table.csv").exists()


# -- a larger SQL grammar ------------------------------------------------------------------------------------

COLUMNS = {"g": "VARCHAR", "v": "VARCHAR", "n": "DOUBLE", "d": "DATE"}
_LEAVES = ["g", "v", "n", "d", "'a'", "'10'", "3", "-2.5", "NULL", "TRUE", "DATE '2020-01-02'", "\"g\""]
_IN_FUNCS = ["lower", "upper", "length", "abs", "year", "trim", "round", "floor"]
_OUT_FUNCS_1 = ["md5", "to_json", "reverse", "string_split", "regexp_matches", "list_value", "hash", "unnest",
                "error", "random", "typeof", "repeat", "str_split", "json_extract", "format", "printf", "now"]
_OUT_FUNCS_2 = ["range", "repeat", "lpad", "rpad", "list_resize", "string_split", "concat", "replace", "regexp_replace",
                "list_concat", "array_append", "list_cat", "generate_series", "struct_pack", "map"]


def _extend(children, *, foreign=True):
    two = st.tuples(children, children)
    inside = st.one_of(
        st.tuples(children, st.sampled_from(["=", "<>", "<", ">=", "+", "-", "*", "/", "%", " AND ", " OR "]), children)
          .map(lambda t: (f"({t[0][0]}{t[1]}{t[2][0]})", t[0][1] or t[2][1])),
        children.map(lambda c: (f"NOT ({c[0]})", c[1])),
        st.tuples(st.sampled_from(_IN_FUNCS), children).map(lambda t: (f"{t[0]}({t[1][0]})", t[1][1])),
        st.tuples(children, children, children).map(
            lambda t: (f"CASE WHEN {t[0][0]} THEN {t[1][0]} ELSE {t[2][0]} END", any(x[1] for x in t))),
        children.map(lambda c: (f"CAST({c[0]} AS VARCHAR)", c[1])),
        children.map(lambda c: (f"({c[0]} IS NULL)", c[1])),
        children.map(lambda c: (f"({c[0]} LIKE 'a%')", c[1])),
        children.map(lambda c: (f"({c[0]} IN ('a', 3))", c[1])),
        two.map(lambda t: (f"coalesce({t[0][0]}, {t[1][0]})", t[0][1] or t[1][1])),
    )
    outside = st.one_of(
        st.tuples(st.sampled_from(_OUT_FUNCS_1), children).map(lambda t: (f"{t[0]}({t[1][0]})", True)),
        st.tuples(st.sampled_from(_OUT_FUNCS_2), children, children).map(lambda t: (f"{t[0]}({t[1][0]}, {t[2][0]})", True)),
        two.map(lambda t: (f"({t[0][0]} || {t[1][0]})", True)),
        children.map(lambda c: (f"list_transform(string_split({c[0]}, ''), x -> x || x)", True)),
        children.map(lambda c: (f"[{c[0]}, {c[0]}]", True)),
        children.map(lambda c: (f"{c[0]}::VARCHAR", True)),
        children.map(lambda c: (f"(SELECT {c[0]})", True)),
        children.map(lambda c: (f"({c[0]} ^ 2)", True)),
        children.map(lambda c: (f"{c[0]}[1]", True)),
        children.map(lambda c: (f"{{'k': {c[0]}}}", True)),
        children.map(lambda c: (f"count({c[0]}) OVER ()", True)),
        children.map(lambda c: (f"{c[0]} -- comment", True)),
        children.map(lambda c: (f"{c[0]}; SELECT 1", True)),
        children.map(lambda c: (f"t.{c[0]}", True)),
    )
    return st.one_of(inside, outside) if foreign else inside


_LEAF = st.sampled_from(_LEAVES).map(lambda s: (s, False))
#: trees of the larger grammar, and (half of the examples) trees of the language's own constructs
EXPRESSIONS = st.one_of(st.recursive(_LEAF, _extend, max_leaves=10),
                        st.recursive(_LEAF, lambda c: _extend(c, foreign=False), max_leaves=10)
                          .map(lambda e: (f"({e[0]}) IS NOT NULL", e[1])))  # true/false whatever the tree's type

#: The DuckDB functions compiled SQL may contain: the language's functions (try_strptime for strptime), the
#: operators, and try/coalesce around the whole.
SQL_FUNCTIONS = set(FUNCTIONS) | {"try_strptime", "try", "+", "-", "*", "/", "%", "~~", "!~~", "~~*", "!~~*"}


def _functions_in(sql: str) -> set:
    con = duckdb.connect()
    tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [f"SELECT {sql}"]).fetchone()[0])
    assert not tree.get("error"), tree
    found, stack = set(), [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if x.get("class") == "FUNCTION":
                found.add(str(x.get("function_name")).lower())
            assert x.get("class") not in ("SUBQUERY", "LAMBDA", "WINDOW", "STAR", "POSITIONAL_REFERENCE"), x
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return found


@pytest.fixture(scope="module")
def big_row_table():
    con = duckdb.connect()
    con.execute("SET memory_limit='300MB'")
    con.execute("SET threads=1")
    con.execute("CREATE TABLE t (g VARCHAR, v VARCHAR, n DOUBLE, d DATE)")
    con.execute("INSERT INTO t VALUES (repeat('aé', 20000), '150', 1e300, DATE '2020-01-02'), "
                "('b', 'x', -0.0, NULL), (NULL, '12', NULL, DATE '1999-12-31')")
    return con


# The grammar is the allowlist: whatever a larger grammar builds is either refused (one line, before any table is
# read) or compiles to SQL with the language's functions only that evaluates on a row of 40,000 characters within
# 300 MB; anything with a construct outside the language is refused.
@settings(max_examples=300)
@given(EXPRESSIONS)
def test_a_larger_grammar_is_either_in_the_language_or_refused(big_row_table, generated):
    text, foreign = generated
    try:
        compiled = compile_condition(text, COLUMNS)
    except ConditionError as e:
        assert str(e).startswith("bad --where") and "\n" not in str(e)
        return
    assert not foreign, f"accepted a construct outside the language: {text}"
    assert _functions_in(compiled.sql) <= SQL_FUNCTIONS
    assert compiled.columns <= set(COLUMNS)
    got = big_row_table.execute(f"SELECT count(*) FILTER (WHERE coalesce(try({compiled.sql}), false)) FROM t").fetchone()
    assert 0 <= got[0] <= 3


# leak: under a value metric the protected column was filtered on through the row under the relation's name
@pytest.mark.parametrize("where", ["read_csv_auto['v'] >= 100", "struct_extract(read_csv_auto, 'v') >= 100",
                                   "to_json(read_csv_auto) LIKE '%100%'", "t.v >= 100", "y > 1", "read_csv_auto > 1"])
def test_where_names_columns_of_the_table_only(tmp_path, where):
    t = tmp_path / "t.csv"
    t.write_text("id,v\n1,100\n2,5\n3,7\n")
    with pytest.raises(ValueError, match="^bad --where"):
        run_query(str(t), parse_query("sum:v"), epsilon=1.0, bounds=(0, 1000), where=where, privacy="d1")
    # a condition on another column, named alone (in any case), is a public column as before
    r = run_query(str(t), parse_query("sum:v"), epsilon=1.0, bounds=(0, 1000), where="ID > 1", privacy="d1", rng=1)
    assert r.public_columns == ["id"]
    with pytest.raises(ValueError, match="protected column"):
        run_query(str(t), parse_query("sum:v"), epsilon=1.0, bounds=(0, 1000), where='"V" > 50', privacy="d1")


# leak: a lambda's parameter named like the relation reached the whole row; the clock words are no column
def test_lambdas_and_clock_words(tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("id,v\n1,100\n2,5\n3,7\n")
    q = parse_query("sum:v")
    run_query(str(t), q, epsilon=1.0, bounds=(0, 1000), where="current_date > DATE '2000-01-01'", privacy="d1", rng=1)
    for where in ("len(list_filter([id], lambda x: x > 1)) > 0",
                  "list_filter([1], lambda read_csv_auto: true) = [1] AND read_csv_auto['v'] >= 100"):
        with pytest.raises(ConditionError, match="is not in the condition language"):
            run_query(str(t), q, epsilon=1.0, bounds=(0, 1000), privacy="d1", where=where)


# leak: error(City || Sales) and a failing CAST quoted the row ("Invalid Input Error: Jacksonville 22638.48")
def test_a_condition_that_fails_on_a_row_never_quotes_it():
    sup = _data("SampleSuperstore.csv.gz")
    with pytest.raises(ValueError, match=r"the function 'error'") as exc:
        run_query(sup, parse_query("count"), epsilon=1.0,
                  where="CASE WHEN TRY_CAST(Sales AS DOUBLE) > 20000 THEN error(City) ELSE true END")
    assert "Jacksonville" not in str(exc.value) and "22638" not in str(exc.value)
    # every CAST is a TRY_CAST: a row where it fails is not selected, and nothing fails
    cast = "CAST(CASE WHEN \"Postal Code\" = 42420 THEN City ELSE '1' END AS INTEGER) + 0 = 1"
    r = run_query(sup, parse_query("count"), epsilon=1e6, where=cast, rng=0)
    n42420 = duckdb.connect().execute(f"SELECT count(*) FROM read_csv('{sup}') WHERE \"Postal Code\" = 42420").fetchone()[0]
    assert r.answers[0].noisy == 9994 - n42420


# leak: a CSV column's type was guessed from its rows, so one 'x' turned "g < 10" into a text comparison for all
def test_a_text_column_compared_with_a_number_reads_each_value_alone(tmp_path):
    rows = [(9 + i % 3, i % 2) for i in range(300)]
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("g,v\n" + "".join(f"{g},{v}\n" for g, v in rows))
    b.write_text("g,v\nx,1\n" + "".join(f"{g},{v}\n" for g, v in rows[1:]))
    got = [run_query(str(t), parse_query("count"), epsilon=1e6, where="g < 10", rng=0).answers[0].noisy for t in (a, b)]
    truth = sum(1 for g, _ in rows if g < 10)
    assert got[0] == truth and got[0] - got[1] == (1 if rows[0][0] < 10 else 0)
    text = [run_query(str(t), parse_query("count"), epsilon=1e6, where="g < '10'", rng=0).answers[0].noisy for t in (a, b)]
    assert text[0] == sum(1 for g, _ in rows if str(g) < "10") and abs(text[0] - text[1]) <= 1


# a refusal outside the language goes through the command line as one line, exit 2, no ledger entry
def test_a_refused_condition_through_the_cli_charges_nothing(tmp_path):
    import subprocess

    src = str(Path(__file__).resolve().parents[2] / "src")
    t = tmp_path / "t.csv"
    t.write_text("g,v\na,5\nb,500\n")
    led = tmp_path / "ledger.json"
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", "query", str(t), "--query", "count", "--epsilon", "1",
                        "--where", _grown(11, 8), "--budget-file", str(led), "--budget", "5"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=src), timeout=120)
    assert p.returncode == 2 and "is not in the condition language" in p.stderr.strip().splitlines()[-1]
    assert "Traceback" not in p.stderr and not p.stdout
    assert not led.exists() or all(e.get("spent", 0) == 0 for e in json.loads(led.read_text()).values())


# leak: DuckDB reads only the columns a query uses, so a cell that cannot be decoded (invalid UTF-8 past the CSV
# sniffer, in Parquet text or JSON, a millisecond timestamp beyond microseconds) failed a query exactly when its
# condition named that column (a yes/no about one row); and the failure quoted the cell ("... Jane Doe ...")
def test_a_cell_that_cannot_be_decoded_refuses_every_query_alike_and_is_never_quoted(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    csv = tmp_path / "n.csv"
    csv.write_bytes(b"id,name,v\n" + b"".join(b"%d,Jose,5\n" % i for i in range(30_000)) + b"30000,Jos\xe9,5\n")
    raw = pa.array([b"negative"] * 99 + [b"POSITIVE Jane Doe \xff"], pa.binary())
    text = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())
    pq.write_table(pa.table({"id": range(100), "diag": text, "v": [5] * 100}), tmp_path / "u.parquet")
    big = pa.array([0] * 99 + [2**62], pa.int64()).cast(pa.timestamp("ms"), safe=False)
    pq.write_table(pa.table({"id": range(100), "t": big, "v": [5] * 100}), tmp_path / "t.parquet")
    for table, col in ((csv, "name"), (tmp_path / "u.parquet", "diag"), (tmp_path / "t.parquet", "t")):
        said = set()
        for where in (None, "id = 1", f"{col} IS NULL"):
            with pytest.raises(ValueError) as e:
                run_query(str(table), parse_query("count"), epsilon=1.0, where=where)
            said.add(str(e.value))
            assert "Jane" not in str(e.value) and "30002" not in str(e.value) and "Line" not in str(e.value)
        assert len(said) == 1 and "cannot read" in said.pop()  # the table's refusal, whatever the query names
