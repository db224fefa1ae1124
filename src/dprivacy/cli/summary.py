"""The pieces of a summary for people (:mod:`.render`): values formatted for reading, the sentences of a report, and
a titled table followed by sentences and warnings."""

from __future__ import annotations

import math

#: Warnings are printed in this style (bold red on a terminal, plain text when piped).
WARN = "bold red"


# -- formatting ---------------------------------------------------------------------------------


def fmt(v, digits: int = 4) -> str:
    """A value for people: None → "—", booleans yes/no, floats to ``digits`` significant digits, integers with
    thousands separators, short lists joined and long ones counted, dicts as "key value" pairs."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "—"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        return f"{v:.{digits}g}"
    if isinstance(v, (list, tuple)):
        if not v:
            return "none"
        if len(v) <= 6 and all(not isinstance(x, (list, tuple, dict)) for x in v):
            return ", ".join(fmt(x, digits) for x in v)
        return f"{len(v):,} values (all under --json)"
    if isinstance(v, dict):
        return "; ".join(f"{k.replace('_', ' ')} {fmt(x, digits)}" for k, x in v.items() if x is not None)
    if hasattr(v, "tolist"):  # a numpy array or scalar
        return fmt(v.tolist(), digits)
    return str(v)


def metres(m) -> str:
    """A distance in metres, in m or km."""
    if m is None or (isinstance(m, float) and not math.isfinite(m)):
        return fmt(m)
    return f"{m / 1000:.3g} km" if abs(m) >= 1000 else f"{m:.3g} m"


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i + len(sep)].strip())
            start = i + len(sep)
    tail = text[start:].strip()
    return parts + ([tail] if tail else [])


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to ". " outside parentheses), with its full stop."""
    return _split(text, ". ")[0].rstrip(". ") + "."


def guarantee_sentence(text: str) -> str:
    """The clause of a release's guarantee that states its bound (the one with e^(…) or exp(…)), else its first
    sentence."""
    for sentence in _split(text, ". "):
        for clause in _split(sentence, "; "):
            if "e^(" in clause or "exp(" in clause:
                clause = clause.rstrip(".; ")
                # (a leading ε, δ or π is a symbol, not a word: only a Latin letter takes a capital)
                return (clause[0].upper() if clause[0].isascii() else clause[0]) + clause[1:] + "."
    return first_sentence(text)


class Summary:
    """A titled two-column table of (label, value) rows followed by sentences and warnings."""

    def __init__(self, title: str):
        self.title = title
        self.rows: list[tuple[str, str]] = []
        self.lines: list[tuple[str, str | None]] = []
        self.tables: list = []

    def row(self, label: str, value, digits: int = 4) -> None:
        if value is None or value == "" or value == [] or value == {}:
            return
        self.rows.append((label, value if isinstance(value, str) else fmt(value, digits)))

    def say(self, text: str, style: str | None = None) -> None:
        if text:
            self.lines.append((text, style))

    def warn(self, text: str) -> None:
        self.say(f"WARNING: {text}", WARN)

    def print(self, console=None) -> None:
        from rich.table import Table
        from rich.text import Text

        from .console import stdout_console

        console = console or stdout_console()
        console.print(Text(self.title, style="bold"))
        t = Table(show_header=False)
        t.add_column("what", style="bold", no_wrap=True)
        t.add_column("value")
        for label, value in self.rows:
            t.add_row(label, value)
        console.print(t)
        for extra in self.tables:
            console.print(extra)
        # sentences first, warnings last: the line a person reads at the prompt
        for text, style in sorted(self.lines, key=lambda line: line[1] == WARN):
            console.print(Text(text, style=style or ""))


def not_optimal_line(gap, time_limit=None, what: str = "utility") -> str:
    """The one line of an optimal-mechanism run that stopped above its gap."""
    at = f" at the time limit ({fmt(float(time_limit), 3)} s)" if time_limit is not None else ""
    return (f"not optimal: gap {fmt(float(gap), 2)}{at}; the mechanism is private, but its {what} may be up to "
            f"{fmt(100 * float(gap), 2)}% short of the best possible (the relative gap to the solver's bound; raise "
            "--time-limit for a smaller gap)")


def _random_source(s: Summary, rs: dict | None) -> None:
    if not rs:
        return
    s.row("random source", rs.get("generator") or rs.get("mode"))
    if rs.get("release") is False:
        s.warn(rs.get("warning") or "reproducible research mode (seeded): NOT for release")


def _owner(s: Summary, extra: dict | None) -> None:
    """The data owner's exact counts (``--owner``): NOT private, said so."""
    if not extra:
        return
    notes = extra.get("notes") or []
    counts = {k: v for k, v in extra.items() if k not in ("notes", "meaning")}
    s.say("For the data owner only (NOT private, not in the sidecar; never publish): "
          + "; ".join([fmt(counts)] * bool(counts) + list(notes)), WARN)
