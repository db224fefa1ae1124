"""Make the package's plain-text docstrings safe for reStructuredText, without changing the code.

The docstrings write mathematics in plain Unicode: ``|x − y|`` is an absolute value, which
reStructuredText reads as a substitution reference (an error under ``-W``), and a few wide tables
do not line up in the columns that a simple table needs. This extension, run on every docstring
(``autodoc-process-docstring``), escapes such bars outside literals, roles and directives, and shows
simple tables as preformatted text.
"""

from __future__ import annotations

import re

_BORDER = re.compile(r"^(\s*)=+( +=+)+\s*$")
# spans that are left alone: ``literal``, :role:`text`, `interpreted`
_SPAN = re.compile(r"``.+?``|:[\w:.-]+:`[^`]+`|`[^`]+`_{0,2}")


def _escape(text: str) -> str:
    out, pos = [], 0
    for m in _SPAN.finditer(text):
        out.append(re.sub(r"(?<!\\)\|", r"\\|", text[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(re.sub(r"(?<!\\)\|", r"\\|", text[pos:]))
    return "".join(out)


def _tables_as_literal(lines: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(lines):
        m = _BORDER.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group(1)
        borders, j = 1, i + 1
        while j < len(lines) and borders < 3:
            if _BORDER.match(lines[j]) and lines[j].startswith(indent) and not lines[j][len(indent)].isspace():
                borders += 1
            j += 1
        if borders < 3:  # not a table we understand: leave it
            out.append(lines[i])
            i += 1
            continue
        out += [indent + "::", ""] + ["    " + ln if ln.strip() else "" for ln in lines[i:j]] + [""]
        i = j
    return out


def clean(lines: list[str]) -> list[str]:
    lines = _tables_as_literal(lines)
    out: list[str] = []
    literal_indent = None  # inside a literal block or a directive's body: the indent of its opener
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                out.append(line)
                continue
            literal_indent = None
        if stripped.startswith("..") and not stripped.startswith(".. ["):
            out.append(line)  # a directive, comment or target: its body is not ours to escape
            if not stripped.startswith(".. _"):
                literal_indent = indent
            continue
        if stripped.startswith(("+-", "+=")) or (stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1
                                                 and stripped.count("|") > 2):
            out.append(line)  # a grid table's line
            continue
        out.append(_escape(line))
        if stripped.endswith("::"):
            literal_indent = indent
    return out


def _process_docstring(app, what, name, obj, options, lines):
    lines[:] = clean(lines)


def setup(app):
    # after numpydoc (priority 500), which turns sections into reStructuredText first
    app.connect("autodoc-process-docstring", _process_docstring, priority=600)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
