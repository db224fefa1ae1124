"""The grammar of the condition language: tokens, the syntax tree (:class:`Node`) and a recursive-descent parser
that refuses every construct outside the language (:func:`parse`). The language is described in
:mod:`dprivacy.data.condition`."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Longest condition accepted, in characters; deepest nesting of parentheses, CASE and function calls; most nodes.
MAX_CHARS = 4000
MAX_DEPTH = 32
MAX_NODES = 256

#: The functions a condition may call: name → (argument kinds, result kind). Kinds: "num", "text", "time" (a date
#: or timestamp; text is read as a timestamp), "unit" (a literal date unit), "fmt" (a literal strptime format),
#: "int" (a literal whole number), "same" (arguments of one kind, the result of that kind). Each result is a
#: number, a truth value, a date or time, or a text no longer than one argument's characters (module docstring).
FUNCTIONS = {
    "lower": (("text",), "text"), "upper": (("text",), "text"),
    "trim": (("text",), "text"), "ltrim": (("text",), "text"), "rtrim": (("text",), "text"),
    "length": (("text",), "num"), "substring": (("text", "num", "num?"), "text"),
    "contains": (("text", "text"), "bool"), "starts_with": (("text", "text"), "bool"),
    "ends_with": (("text", "text"), "bool"),
    "abs": (("num",), "num"), "sign": (("num",), "num"), "floor": (("num",), "num"), "ceil": (("num",), "num"),
    "round": (("num", "int?"), "num"),
    "year": (("time",), "num"), "quarter": (("time",), "num"), "month": (("time",), "num"),
    "week": (("time",), "num"), "day": (("time",), "num"), "dayofweek": (("time",), "num"),
    "dayofyear": (("time",), "num"), "hour": (("time",), "num"), "minute": (("time",), "num"),
    "second": (("time",), "num"),
    "date_trunc": (("unit", "time"), "ts"), "date_diff": (("unit", "time", "time"), "num"),
    "strptime": (("text", "fmt"), "ts"), "strftime": (("time", "fmt"), "text"),
    "date_part": (("unit", "time"), "num"),
    "left": (("text", "num"), "text"), "right": (("text", "num"), "text"), "strpos": (("text", "text"), "num"),
    "isnan": (("num",), "bool"), "isinf": (("num",), "bool"), "sqrt": (("num",), "num"), "ln": (("num",), "num"),
    "log10": (("num",), "num"), "exp": (("num",), "num"),
    "coalesce": (("same", "same*"), "same"), "nullif": (("same", "same"), "same"),
    "greatest": (("same", "same", "same*"), "same"), "least": (("same", "same", "same*"), "same"),
}
#: Other spellings of the same functions.
ALIASES = {"substr": "substring", "char_length": "length", "ceiling": "ceil", "datediff": "date_diff",
           "datetrunc": "date_trunc", "try_strptime": "strptime", "len": "length", "lcase": "lower", "ucase": "upper",
           "instr": "strpos", "ifnull": "coalesce", "datepart": "date_part"}
#: Date units of date_trunc and date_diff.
UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")
#: Target types of CAST (always compiled as TRY_CAST) and their kinds.
CAST_TYPES = {"double": ("DOUBLE", "num"), "float": ("DOUBLE", "num"), "real": ("DOUBLE", "num"),
              "bigint": ("BIGINT", "num"), "integer": ("BIGINT", "num"), "int": ("BIGINT", "num"),
              "smallint": ("BIGINT", "num"), "tinyint": ("BIGINT", "num"), "hugeint": ("DOUBLE", "num"),
              "decimal": ("DOUBLE", "num"), "numeric": ("DOUBLE", "num"),
              "varchar": ("VARCHAR", "text"), "text": ("VARCHAR", "text"), "date": ("DATE", "date"),
              "timestamp": ("TIMESTAMP", "ts"), "boolean": ("BOOLEAN", "bool"), "bool": ("BOOLEAN", "bool")}

_KEYWORDS = {"and", "or", "not", "in", "between", "is", "null", "like", "ilike", "case", "when", "then", "else",
             "end", "true", "false", "cast", "try_cast", "as", "current_date"}
#: Words that begin a construct outside the language, named in the refusal.
_FOREIGN_WORDS = {"select": "a subquery (SELECT)", "from": "FROM (a condition reads the row's own columns only)",
                  "exists": "a subquery (EXISTS)", "over": "a window (OVER)", "lambda": "a lambda",
                  "interval": "an INTERVAL", "any": "ANY/ALL over a subquery", "all": "ANY/ALL over a subquery",
                  "similar": "SIMILAR TO (a regular expression)", "glob": "GLOB", "collate": "COLLATE",
                  "escape": "ESCAPE (a LIKE pattern is used as written)", "struct_pack": "a struct",
                  "map": "a map", "columns": "COLUMNS(...)", "union": "a set operation", "with": "a WITH clause"}
#: Character sequences outside the language, named in the refusal (longest first).
_FOREIGN_SYMBOLS = (("||", "text concatenation '||'"), ("->>", "a JSON path '->>'"), ("->", "a lambda '->'"),
                    ("::", "a cast '::' (write CAST(x AS type))"), ("--", "a comment '--'"), ("/*", "a comment '/*'"),
                    ("**", "a power '**'"), ("//", "integer division '//'"), ("<<", "a bit shift '<<'"),
                    (">>", "a bit shift '>>'"), ("!~~", "the operator '!~~'"), ("~~", "the operator '~~'"),
                    ("^@", "the operator '^@'"), ("[", "a list or index '[...]'"), ("]", "a list or index '[...]'"),
                    ("{", "a struct '{...}'"), ("}", "a struct '{...}'"), (";", "';'"), ("#", "a column by position '#N'"),
                    ("?", "a parameter '?'"), ("$", "a parameter '$'"), ("^", "a power '^'"),
                    ("&", "a bit operator '&'"), ("|", "a bit operator '|'"), ("~", "the operator '~'"),
                    ("!", "the operator '!'"), ("@", "the operator '@'"), (".", "a qualified name or '.' (name the column alone)"),
                    (":", "':'"), ("`", "a backquote (quote a column name with \")"), ("\\", "a backslash"))

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?(?![\w.]))
  | (?P<str>'(?:[^']|'')*')
  | (?P<qid>"(?:[^"]|"")+")
  | (?P<id>[^\W0-9]\w*)
  | (?P<op><=|>=|<>|!=|=|<|>|\+|-|\*|/|%|\(|\)|,)
""", re.VERBOSE)


class ConditionError(ValueError):
    """A condition outside the language, or that does not fit the table: one line naming the construct."""


@dataclass(frozen=True)
class Node:
    """One node of a condition's syntax tree. ``kind``: "num", "str", "bool", "null", "date", "ts",
    "current_date" (literals), "col", "cmp", "and", "or", "not", "in", "between", "is", "like", "neg", "arith",
    "func", "cast", "case"; ``value`` the operator, name, literal text or flag; ``args`` the children;
    ``pos`` the character where it starts."""

    kind: str
    value: object
    args: tuple
    pos: int


def _refuse(text: str, what: str, pos: int | None = None) -> ConditionError:
    at = f" at character {pos + 1}" if pos is not None else ""
    offer = (f"the functions are {', '.join(sorted(FUNCTIONS))}" if what.startswith("the function") else
             "it has columns, literals, comparisons, AND/OR/NOT, IN (...), BETWEEN, IS NULL, LIKE 'pattern', "
             "+ - * /, CASE, CAST and a few functions: see dprivacy query --help")
    return ConditionError(f"bad --where {text!r}: {what}{at} is not in the condition language ({offer})")


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, i = [], 0
    while i < len(text):
        for sym, what in _FOREIGN_SYMBOLS:
            if text.startswith(sym, i) and not ((sym == "." and re.match(r"\.\d", text[i:i + 2]))
                                                or (sym == "!" and text.startswith("!=", i))):
                raise _refuse(text, what, i)
        m = _TOKEN.match(text, i)
        if m is None:
            raise _refuse(text, f"the character {text[i]!r}", i)
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group(), i))
        i = m.end()
    out.append(("end", "", len(text)))
    return out


class _Parser:
    """Recursive descent over the grammar of the module docstring, one method per rule."""

    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0
        self.nodes = 0

    # -- tokens -------------------------------------------------------------------------------------------
    def peek(self, k: int = 0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def word(self, k: int = 0) -> str:
        kind, val, _ = self.peek(k)
        return val.lower() if kind == "id" else ""

    def take(self):
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept_word(self, *words: str) -> bool:
        if self.word() in words:
            self.i += 1
            return True
        return False

    def accept_op(self, op: str) -> bool:
        kind, val, _ = self.peek()
        if kind == "op" and val == op:
            self.i += 1
            return True
        return False

    def expect_op(self, op: str, why: str) -> None:
        if not self.accept_op(op):
            raise self.unexpected(f"'{op}' {why}")

    def expect_word(self, word: str, why: str) -> None:
        if not self.accept_word(word):
            raise self.unexpected(f"{word.upper()} {why}")

    def unexpected(self, wanted: str) -> ConditionError:
        kind, val, pos = self.peek()
        got = "the end of the condition" if kind == "end" else repr(val)
        word = val.lower() if kind == "id" else ""
        if word in _FOREIGN_WORDS:
            return _refuse(self.text, _FOREIGN_WORDS[word], pos)
        return ConditionError(f"bad --where {self.text!r}: expected {wanted} at character {pos + 1}, found {got}")

    def node(self, kind, value, args, pos) -> Node:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ConditionError(f"bad --where {self.text!r}: more than {MAX_NODES} terms (a condition is limited so "
                                 "that its memory per row is bounded)")
        return Node(kind, value, tuple(args), pos)

    def nested(self, pos: int):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ConditionError(f"bad --where {self.text!r}: nested more than {MAX_DEPTH} deep at character {pos + 1}")

    # -- rules --------------------------------------------------------------------------------------------
    def condition(self) -> Node:
        left = self.disjunct()
        while self.word() == "or":
            pos = self.take()[2]
            left = self.node("or", None, (left, self.disjunct()), pos)
        return left

    def disjunct(self) -> Node:
        left = self.negation()
        while self.word() == "and":
            pos = self.take()[2]
            left = self.node("and", None, (left, self.negation()), pos)
        return left

    def negation(self) -> Node:
        if self.word() == "not":
            pos = self.take()[2]
            self.nested(pos)
            inner = self.negation()
            self.depth -= 1
            return self.node("not", None, (inner,), pos)
        return self.predicate()

    def predicate(self) -> Node:
        left = self.sum()
        kind, val, pos = self.peek()
        if kind == "op" and val in ("=", "<>", "!=", "<", "<=", ">", ">="):
            self.take()
            return self.node("cmp", "<>" if val == "!=" else val, (left, self.sum()), pos)
        if self.word() == "is":
            self.take()
            neg = self.accept_word("not")
            what = self.word()
            if what not in ("null", "true", "false"):
                raise self.unexpected("NULL, TRUE or FALSE after IS")
            self.take()
            return self.node("is", (neg, what), (left,), pos)
        neg = self.word() == "not" and self.word(1) in ("in", "between", "like", "ilike")
        if neg:
            self.take()
        word = self.word()
        if word == "in":
            self.take()
            self.expect_op("(", "after IN (a list of literals)")
            items = [self.literal_in_list()]
            while self.accept_op(","):
                items.append(self.literal_in_list())
            self.expect_op(")", "closing the IN list")
            return self.node("in", neg, (left, *items), pos)
        if word == "between":
            self.take()
            lo = self.sum()
            self.expect_word("and", "in BETWEEN ... AND ...")
            return self.node("between", neg, (left, lo, self.sum()), pos)
        if word in ("like", "ilike"):
            self.take()
            pk, pv, ppos = self.peek()
            if pk != "str":
                raise _refuse(self.text, f"a {word.upper()} pattern that is not a quoted literal", ppos)
            self.take()
            return self.node("like", (neg, word), (left, self.node("str", _unquote(pv), (), ppos)), pos)
        return left

    def literal_in_list(self) -> Node:
        kind, val, pos = self.peek()
        node = self.primary() if kind in ("num", "str") or self.word() in ("true", "false", "null", "date",
                                                                             "timestamp") else None
        if node is None and kind == "op" and val in ("-", "+") and self.peek(1)[0] == "num":
            self.take()
            return self.node("num", ("-" if val == "-" else "") + self.take()[1], (), pos)
        if node is None or node.kind not in ("num", "str", "bool", "null", "date", "ts"):
            raise _refuse(self.text, "an IN list of anything but literals", pos)
        return node

    def sum(self) -> Node:
        left = self.product()
        while True:
            kind, val, pos = self.peek()
            if kind == "op" and val in ("+", "-"):
                self.take()
                left = self.node("arith", val, (left, self.product()), pos)
            else:
                return left

    def product(self) -> Node:
        left = self.unary()
        while True:
            kind, val, pos = self.peek()
            if kind == "op" and val in ("*", "/", "%"):
                self.take()
                left = self.node("arith", val, (left, self.unary()), pos)
            else:
                return left

    def unary(self) -> Node:
        kind, val, pos = self.peek()
        if kind == "op" and val in ("-", "+"):
            self.take()
            self.nested(pos)
            inner = self.unary()
            self.depth -= 1
            if val == "+":
                return inner
            if inner.kind == "num" and not str(inner.value).startswith("-"):
                return self.node("num", "-" + str(inner.value), (), pos)
            return self.node("neg", None, (inner,), pos)
        return self.primary()

    def primary(self) -> Node:
        kind, val, pos = self.peek()
        if kind == "num":
            self.take()
            return self.node("num", val, (), pos)
        if kind == "str":
            self.take()
            return self.node("str", _unquote(val), (), pos)
        if kind == "qid":
            self.take()
            return self.node("col", val[1:-1].replace('""', '"'), (), pos)
        if kind == "op" and val == "(":
            self.take()
            self.nested(pos)
            inner = self.condition()
            self.depth -= 1
            self.expect_op(")", "closing the parenthesis")
            return inner
        if kind != "id":
            if kind == "op" and val == "*":
                raise _refuse(self.text, "'*'", pos)
            raise self.unexpected("a column, a literal or '('")
        word = val.lower()
        if word in ("true", "false"):
            self.take()
            return self.node("bool", word == "true", (), pos)
        if word == "null":
            self.take()
            return self.node("null", None, (), pos)
        if word == "current_date":
            self.take()
            return self.node("current_date", None, (), pos)
        if word in ("date", "timestamp") and self.peek(1)[0] == "str":
            self.take()
            return self.node("date" if word == "date" else "ts", _unquote(self.take()[1]), (), pos)
        if word == "case":
            return self.case()
        if word in ("cast", "try_cast"):
            return self.cast()
        nk, nv, _ = self.peek(1)
        operator_word = nk == "id" and nv.lower() in ("in", "is", "like", "ilike", "between", "and", "or", "not")
        if word in _FOREIGN_WORDS and not operator_word and (nk in ("id", "num", "str", "qid")
                                                             or (nk == "op" and nv in ("(", "*"))):
            raise _refuse(self.text, _FOREIGN_WORDS[word], pos)  # a word that cannot be a column here
        if self.peek(1)[0] == "op" and self.peek(1)[1] == "(":
            return self.call()
        if word in _KEYWORDS:
            raise self.unexpected("a column, a literal or '('")
        self.take()
        return self.node("col", val, (), pos)

    def call(self) -> Node:
        _, val, pos = self.take()
        name = ALIASES.get(val.lower(), val.lower())
        if name not in FUNCTIONS:
            raise _refuse(self.text, f"the function {val!r}", pos)
        self.take()  # (
        self.nested(pos)
        args = []
        if not self.accept_op(")"):
            args.append(self.condition())
            while self.accept_op(","):
                args.append(self.condition())
            self.expect_op(")", f"closing {val}(...)")
        self.depth -= 1
        return self.node("func", name, args, pos)

    def cast(self) -> Node:
        _, _, pos = self.take()
        self.expect_op("(", "after CAST")
        self.nested(pos)
        inner = self.condition()
        self.expect_word("as", "in CAST(x AS type)")
        tk, tv, tpos = self.peek()
        if tk != "id" or tv.lower() not in CAST_TYPES:
            raise _refuse(self.text, f"the type {tv!r} (CAST to {', '.join(t.upper() for t in CAST_TYPES)})", tpos)
        self.take()
        self.expect_op(")", "closing CAST(...)")
        self.depth -= 1
        return self.node("cast", tv.lower(), (inner,), pos)

    def case(self) -> Node:
        _, _, pos = self.take()
        self.nested(pos)
        if self.word() != "when":
            raise _refuse(self.text, "CASE x WHEN ... (write CASE WHEN x = ... THEN ...)", pos)
        args = []
        while self.accept_word("when"):
            cond = self.condition()
            self.expect_word("then", "after CASE WHEN condition")
            args += [cond, self.condition()]
        if self.accept_word("else"):
            args.append(self.condition())
        self.expect_word("end", "closing CASE")
        self.depth -= 1
        return self.node("case", len(args) % 2 == 1, args, pos)


def _unquote(tok: str) -> str:
    return tok[1:-1].replace("''", "'")


def parse(text: str) -> Node:
    """The syntax tree of a condition, or :class:`ConditionError` naming the first construct outside the language.
    Reads no table: this is the check made before any row is read."""
    if not isinstance(text, str) or not text.strip():
        raise ConditionError("bad --where: give one true/false condition on a row, e.g. \"Region = 'West'\"")
    if len(text) > MAX_CHARS:
        raise ConditionError(f"bad --where: {len(text):,} characters, over the {MAX_CHARS:,} a condition may have")
    if "\x00" in text:
        raise ConditionError("bad --where: a NUL character")
    p = _Parser(text)
    tree = p.condition()
    if p.peek()[0] != "end":
        raise p.unexpected("the end of the condition (AND, OR or a comparison)")
    return tree
