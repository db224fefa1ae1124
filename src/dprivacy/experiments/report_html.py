"""The reproduction report's page, ``index.html``: a summary of the claims that differ from the papers (each linked
to its row), a table of contents, then one section per paper and experiment with its claims, notes and figures
at the full width of the page. The text of claims and notes is written with light markup — ``code`` in
backticks, ``e^{−ε}`` and ``d_1`` for super- and subscripts — rendered here as HTML, never shown raw."""

from __future__ import annotations

import html
import re

from .registry import PAPER_TITLES, PAPERS

_CSS = """
:root{--ink:#1f2328;--mute:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--accent:#0969da}
body{font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);max-width:1100px;
margin:0 auto;padding:1.5em 1.5em 4em}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
h1{font-size:1.8em;margin:.3em 0}
h2{font-size:1.35em;margin:2.2em 0 .6em;padding-bottom:.25em;border-bottom:1px solid var(--line)}
h3{font-size:1.1em;margin:2em 0 .5em}
code{font:.88em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--soft);padding:.1em .3em;
border-radius:3px}
table{border-collapse:collapse;width:100%;margin:.8em 0 1.2em;font-size:.9em}
th,td{border:1px solid var(--line);padding:.35em .6em;text-align:left;vertical-align:top}
th{background:var(--soft)}
td.num{font-variant-numeric:tabular-nums}
.agrees td.verdict{color:#1a7f37}.differs{background:#fff5f5}.differs td.verdict{color:#cf222e;font-weight:600}
.nc td.verdict{color:#9a6700}
tr:target{outline:2px solid var(--accent)}
figure{display:block;margin:1.5em 0}
figure img{display:block;width:100%;height:auto;border:1px solid var(--line);border-radius:4px}
figcaption{font-size:.9em;color:var(--mute);margin-top:.4em}
pre{background:var(--soft);padding:.8em;overflow:auto;font-size:.8em}
.meta{font-size:.85em;color:var(--mute)}
nav.toc ol{margin:.3em 0;padding-left:1.4em}nav.toc li{margin:.15em 0}
.count{font-size:.85em;color:var(--mute)}.count .d{color:#cf222e;font-weight:600}
.box{border:1px solid var(--line);border-radius:6px;padding:.2em 1.2em 1em;background:#fcfcfd}.box h2{margin-top:.6em}
ul.readings{margin:.3em 0;padding-left:1.2em}
"""

_TOKEN = r"[0-9A-Za-z\u0391-\u03c9∞∅ℝ−*⊗'′]"


def _markup(text: str) -> str:
    """HTML-escaped ``text`` with its light markup rendered: `code`, x^{…}/x^(…)/x^y, x_{…}/x_(…)/d_1 and
    *emphasis*. A backtick without its pair is dropped, never shown."""
    out = []
    pieces = str(text).split("`")
    if len(pieces) % 2 == 0:  # an odd number of backticks: the last one has no pair
        pieces[-2:] = [pieces[-2] + pieces[-1]]
    for i, piece in enumerate(pieces):
        if i % 2:
            out.append(f"<code>{html.escape(piece)}</code>")
        else:
            out.append(_math(html.escape(piece, quote=False)))
    return "".join(out)


def _math(s: str) -> str:
    s = re.sub(r"\^\{([^{}]*)\}", r"<sup>\1</sup>", s)
    s = re.sub(r"\^\(([^()]*)\)", r"<sup>\1</sup>", s)
    s = re.sub(rf"\^(-?{_TOKEN}+)", r"<sup>\1</sup>", s)
    s = re.sub(r"(?<=[^\s_])_\{([^{}]*)\}", r"<sub>\1</sub>", s)
    s = re.sub(r"(?<=[^\s_])_\(([^()]*)\)", r"<sub>(\1)</sub>", s)
    # d_1, d_h, Σ_y, H_ij; not the words of an identifier such as run_query (a subscript is one or two characters)
    s = re.sub(r"(?<=[^\s_])_([0-9A-Za-z\u0391-\u03c9∞∅ℝ]{1,2})(?![0-9A-Za-z_])", r"<sub>\1</sub>", s)
    s = re.sub(r"(?<![\w*])\*([A-Za-z][^*<>]*?[A-Za-z])\*(?![\w*])", r"<em>\1</em>", s)
    return s


def sentence(text: str) -> str:
    """``text`` as a sentence: a capital first letter and a full stop at the end (plain text, not yet marked up)."""
    text = str(text).strip()
    if not text:
        return text
    if text[0].isascii() and text[0].islower() and not text.startswith(("e^", "d_")):  # (ε, π: symbols)
        text = text[0].upper() + text[1:]
    if text[-1] in ".!?…" or (text[-1] in ")`'\"”" and text[-2:-1] in (".", "!", "?")):
        return text
    return text + "."


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


def claim_anchor(claim) -> str:
    return f"claim-{claim.id}"


def paper_anchor(paper: str) -> str:
    return f"paper-{paper}"


def _lead(text: str, want: int = 160, limit: int = 320) -> str:
    """The first sentences of ``text``, at least ``want`` characters when there are more (a first sentence such as
    "Computed 0.24152." says too little), cut at ``limit``."""
    sentences = re.findall(r".+?[.!?](?=\s|$)|.+$", text.strip())
    out = ""
    for s_ in sentences:
        if out and len(out) >= want:
            break
        out = (out + " " + s_.strip()).strip()
    return out if len(out) <= limit else out[: limit - 1].rsplit(" ", 1)[0] + "…"


def render(summary: dict, results) -> str:
    """The page of a run: ``summary`` (as written to summary.json) and ``results``, a list of
    (experiment, outcome, error, seconds)."""
    esc = html.escape
    c = summary["counts"]
    by_paper: dict[str, list] = {}
    for row in results:
        by_paper.setdefault(row[0].paper, []).append(row)
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
        "<title>dprivacy reproduction report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>dprivacy: the papers recomputed</h1>",
        f"<p>{c['claims']} claims: <b>{c['agrees']}</b> agree, <a href='#differs'><b>{c['differs']}</b> differ</a>, "
        f"<b>{c['not_comparable']}</b> not comparable; {c['errors']} experiment error(s).</p>",
    ]
    if summary["quick"]:
        parts.append("<p><b>Quick run</b> (<code>--quick</code>): slow experiments were shrunk as noted in their sections; "
                     "claims that depend on problem size were not shrunk.</p>")
    v, m = summary["versions"], summary["machine"]
    parts.append("<p class='meta'>" + esc(", ".join(f"{k} {val}" for k, val in v.items())) + "<br>"
                 + esc(f"{m['platform']}, {m['processor']}, {m['cpus']} CPU(s)") + "</p>")
    parts.append(_summary(results))
    parts.append(_contents(by_paper))
    for paper in sorted(by_paper):
        parts.append(f"<h2 id='{paper_anchor(paper)}'>{_markup(PAPER_TITLES[paper])}</h2>"
                     f"<p class='meta'>{esc(PAPERS[paper])}</p>")
        for exp, outcome, err, secs in by_paper[paper]:
            parts.append(_experiment(summary, exp, outcome, err, secs))
    parts.append("</body></html>")
    return "\n".join(parts)


def _summary(results) -> str:
    """The claims that differ, each linked to its row in its experiment's section, and the experiments that failed."""
    differing = [(exp, cl) for exp, outcome, _, _ in results for cl in outcome.claims if cl.verdict == "differs"]
    failed = [exp for exp, _, err, _ in results if err]
    parts = ["<section class='box' id='differs'><h2>Claims that differ from the papers</h2>"]
    if differing:
        parts.append(f"<p>{len(differing)} claim(s) differ from what the papers print. Each links to its row, whose note "
                     "says what was found; the readings tried are listed there.</p>")
        parts.append("<table><tr><th>claim</th><th>published</th><th>computed</th><th>what was found</th></tr>")
        for exp, cl in differing:
            parts.append(f"<tr><td><a href='#{html.escape(claim_anchor(cl))}'>{_markup(cl.where)}</a><br>"
                         f"<span class='meta'>in <a href='#{html.escape(exp.id)}'>{_markup(exp.title)}</a></span></td>"
                         f"<td class='num'>{html.escape(_fmt(cl.published))}</td><td class='num'>{html.escape(_fmt(cl.computed))}</td>"
                         f"<td>{_markup(_lead(sentence(cl.note)))}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No claim differs from the papers in this run.</p>")
    if failed:
        parts.append("<p><b>Experiments that failed</b> (a defect to fix): "
                     + ", ".join(f"<a href='#{html.escape(e.id)}'>{html.escape(e.id)}</a>" for e in failed) + ".</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _contents(by_paper) -> str:
    parts = ["<nav class='toc' id='contents'><h2>Contents</h2><ol>",
             "<li><a href='#differs'>Claims that differ from the papers</a></li>"]
    for paper in sorted(by_paper):
        parts.append(f"<li><a href='#{paper_anchor(paper)}'>{_markup(PAPER_TITLES[paper])}</a><ol>")
        for exp, outcome, err, _ in by_paper[paper]:
            n = len(outcome.claims)
            d = sum(cl.verdict == "differs" for cl in outcome.claims)
            count = f"{n} claim{'s' if n != 1 else ''}" + (f", <span class='d'>{d} differ{'s' if d == 1 else ''}</span>" if d else "")
            if err:
                count += ", <span class='d'>failed</span>"
            parts.append(f"<li><a href='#{html.escape(exp.id)}'>{_markup(exp.title)}</a> <span class='count'>({count})</span></li>")
        parts.append("</ol></li>")
    parts.append("</ol></nav>")
    return "\n".join(parts)


def _experiment(summary, exp, outcome, err, secs) -> str:
    esc = html.escape
    parts = [f"<h3 id='{esc(exp.id)}'>{_markup(exp.title)} <span class='meta'>[{esc(exp.id)}, {secs:.1f} s]</span></h3>"]
    if summary["quick"] and exp.quick_note:
        parts.append(f"<p class='meta'>Quick run: {_markup(sentence(exp.quick_note))}</p>")
    if err:
        parts.append(f"<p class='differs'>The experiment failed; this is a defect to fix:</p><pre>{esc(err)}</pre>")
    if outcome.claims:
        parts.append("<table><tr><th>where</th><th>published</th><th>computed</th><th>tolerance</th><th>verdict</th><th>note</th></tr>")
        for cl in outcome.claims:
            cls = {"agrees": "agrees", "differs": "differs"}.get(cl.verdict, "nc")
            tol = "—" if cl.tolerance is None else (f"{cl.tolerance:g}" + (" (relative)" if cl.relative else ""))
            note = _markup(sentence(cl.note)) if cl.note else ""
            if cl.readings:
                note += "<br><b>Readings tried:</b><ul class='readings'>" + "".join(
                    f"<li>{_markup(r.get('reading', ''))}: {esc(_fmt(r.get('value')))}</li>" for r in cl.readings) + "</ul>"
            parts.append(
                f"<tr class='{cls}' id='{esc(claim_anchor(cl))}'><td>{_markup(cl.where)}</td><td class='num'>{esc(_fmt(cl.published))}</td>"
                f"<td class='num'>{esc(_fmt(cl.computed))}</td><td>{esc(tol)}</td><td class='verdict'>{cl.verdict}</td><td>{note}</td></tr>")
        parts.append("</table>")
    for n in outcome.notes:
        parts.append(f"<p>{_markup(sentence(n))}</p>")
    for f in outcome.figures:
        parts.append(f"<figure><a href='{esc(f.png)}'><img src='{esc(f.png)}' alt='{esc(f.caption)}'></a>"
                     f"<figcaption>{_markup(f.where)}: {_markup(sentence(f.caption))} (<a href='{esc(f.csv)}'>data</a>)</figcaption></figure>")
    return "\n".join(parts)
