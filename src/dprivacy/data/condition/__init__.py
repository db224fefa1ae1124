r"""The condition language of ``query --where``: a closed grammar, parsed and type-checked by dprivacy and only
then written as DuckDB SQL.

A condition is split into tokens and parsed here into a syntax tree of :class:`Node`; anything outside the grammar
below is refused before the table is opened, with one line naming the construct and where it stands. The tree is
then checked against the table's column types (which depend on public data only: a CSV's protected columns are
read as text) and compiled to SQL in which every column is quoted, every literal is re-written by this module and
every function is one of :data:`FUNCTIONS`. The grammar is the allowlist: there are no lists, lambdas, string
concatenation, repetition, subqueries, windows, parameters or other functions, so no condition can build a value
whose size depends on the row — the way an earlier allowlist of DuckDB function names was broken three times (a
value grown only on rows that match makes the query run out of memory on one table and not on its neighbour, a
yes/no answer that no ε pays for).

Grammar (keywords and function names in any case; a column is a name, or any text in double quotes)::

    condition := disjunct ("OR" disjunct)*
    disjunct  := negation ("AND" negation)*
    negation  := "NOT" negation | predicate
    predicate := sum [ ("=" | "<>" | "!=" | "<" | "<=" | ">" | ">=") sum
                     | ["NOT"] "IN" "(" literal ("," literal)* ")"
                     | ["NOT"] "BETWEEN" sum "AND" sum
                     | "IS" ["NOT"] ("NULL" | "TRUE" | "FALSE")
                     | ["NOT"] ("LIKE" | "ILIKE") 'pattern' ]
    sum       := product (("+" | "-") product)*
    product   := unary (("*" | "/") unary)*
    unary     := ("-" | "+") unary | primary
    primary   := literal | column | "(" condition ")" | function "(" condition ("," condition)* ")"
               | ("CAST" | "TRY_CAST") "(" condition "AS" type ")"
               | "CASE" ("WHEN" condition "THEN" condition)+ ["ELSE" condition] "END"
    literal   := number | 'text' | TRUE | FALSE | NULL | DATE 'YYYY-MM-DD' | TIMESTAMP 'YYYY-MM-DD HH:MM[:SS]'
               | CURRENT_DATE
    type      := DOUBLE | BIGINT | INTEGER | VARCHAR | TEXT | DATE | TIMESTAMP | BOOLEAN

Types and totality. Values are numbers, text, true/false, dates and timestamps. Arithmetic is done in float64
(no integer overflow error; x/0 is ±inf or NaN); a text column compared with a number, a date or a truth value is
read as one (``TRY_CAST``: a text that is not one is NULL, so the comparison is not true), and a text used as a
condition is read as true/false; a quoted literal
compared with a date or number column must be a valid date or number, which this module checks. Every ``CAST``
is a ``TRY_CAST``. Each comparison, ``BETWEEN``, ``IN`` and ``LIKE`` is evaluated under its own ``try()`` (an
error on a row makes that predicate NULL), an arithmetic or function result that is not a number (0/0) is NULL,
and the query evaluates the whole as ``coalesce(try(...), false)``: a row on which the condition cannot be
evaluated is not selected rather than failing the query. ``CURRENT_DATE`` is today's date (UTC) as a literal, and
times are compared in UTC (the connection's time zone).

**Memory bound per row.** Every value the condition computes on a row is a number, a truth value, a date or a
timestamp (at most 16 bytes), or a text that is one of the row's cells or of the condition's literals, a part of
one (``substring``, ``trim``), its case mapping (``lower``, ``upper``: the same number of characters, at most 4
bytes each), the text form of a number, truth value or date (``CAST(x AS VARCHAR)``, at most 32 bytes) or a date
written by ``strftime`` with a literal format (at most 16 bytes per character of the format); a
``CASE``, ``coalesce``, ``nullif``, ``greatest`` or ``least`` returns one of its arguments. A condition has at most
:data:`MAX_NODES` nodes, so evaluating it on a row holds at most ``MAX_NODES · (16·L + 32)`` bytes, L the number of
characters of the row's longest cell or the condition's longest literal — the same bound whether or not the row
matches, and linear in the row.
"""

from .duckdb_sql import Compiled, column_kind, compile_condition
from .grammar import (ALIASES, CAST_TYPES, FUNCTIONS, MAX_CHARS, MAX_DEPTH, MAX_NODES, UNITS, ConditionError, Node,
                      parse)

__all__ = ["ALIASES", "CAST_TYPES", "FUNCTIONS", "MAX_CHARS", "MAX_DEPTH", "MAX_NODES", "UNITS", "Compiled",
           "ConditionError", "Node", "column_kind", "compile_condition", "parse"]
