"""Every example of the README and of the documentation's pages runs as written (issue #31).

Pages: ``README.md`` and every ``docs/**/*.rst`` except the generated ones (``_build``, ``auto_examples``, the API
reference's ``api/``), found by glob: a page added later is run without being listed here. A page without a
runnable block is not a test.

Blocks run:

* Markdown fences ```` ```bash ````, ```` ```sh ````, ```` ```console ```` and ```` ```python ````; reStructuredText
  ``.. code-block::`` (or ``.. code::``) with ``bash``, ``sh``, ``shell``, ``console`` or ``python``. Other blocks
  (``text``, literal ``::`` blocks, output) are not code.
* A page's blocks run in their order, in one empty temporary folder (files made by a block are there for the
  next ones), as a reader would in one terminal and one Python session: the Python blocks of a page share one
  namespace; each shell block is one ``bash -e -o pipefail`` script, and the shell variables it sets (``D=...``)
  are set in the page's next shell blocks. In a ``console`` block, only the lines after a ``$`` prompt are commands (with
  their ``\\`` continuation lines); the other lines are output. Likewise a Python block written as an interactive
  session (``>>>`` and ``...`` prompts, or ``pycon``) runs its prompts' lines.
* ``dprivacy`` and ``python`` are this interpreter's; matplotlib draws off screen.

Not run, by design:

* Installation: a line (or an ``&&`` segment of a line) that is ``pip install ...``, ``python3 -m venv ...``
  or ``. .venv/bin/activate`` is left out — the package under test is already installed, and the tests must
  not reach a package index. The rest of such a line runs.
* ``python -m pytest`` (the test suite itself) is left out the same way.
* A block preceded by the marker ``.. example: slow`` (reStructuredText: a comment, invisible on the page) or
  ``<!-- example: slow -->`` (Markdown: invisible on GitHub), optionally followed by ``— reason``, runs only
  under ``python -m pytest -m slow`` (then with the page's other blocks, in order). Kept for commands that take
  minutes, and only three blocks have it: the README's whole ``dprivacy reproduce --quick`` report (the user
  guide's ``reproduce --only`` block runs by default), the README's documentation build (tests/test_docs.py
  builds the same site by default), and the two optimal mechanisms of the theory page that run to their
  one-minute ``--time-limit``. The marker ``clone`` (``example: slow, clone``) runs the block in a copy of the
  repository's files rather than an empty folder (the documentation build needs ``docs/``).

A failure names the page and the line of the block, with the block's output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py", "python3", "pycon"}
SKIPPED_DIRS = {"_build", "auto_examples", "api", "_templates"}
# a whole line, or one `&&` segment of it, that installs (or runs the test suite) is left out
_LEFT_OUT = re.compile(r"^\s*(pip3? install\b|python3? -m pip install\b|python3? -m venv\b|\. \.venv/bin/activate\b"
                       r"|source \.venv/bin/activate\b|python3? -m pytest\b|pytest\b)")
_MARKER_RST = re.compile(r"^\.\. example:\s*(?P<opts>[\w ,]+?)\s*(?:[—-].*)?$")
_MARKER_MD = re.compile(r"^<!--\s*example:\s*(?P<opts>[\w ,]+?)\s*(?:[—-].*)?-->\s*$")


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the block's first code line
    lang: str  # "shell" or "python"
    code: str
    options: set = field(default_factory=set)


def pages() -> list[Path]:
    found = [ROOT / "README.md"]
    for p in sorted((ROOT / "docs").rglob("*.rst")):
        if not SKIPPED_DIRS & set(p.relative_to(ROOT / "docs").parts[:-1]):
            found.append(p)
    return found


def _options(text: str) -> set:
    return {o.strip() for o in text.split(",") if o.strip()}


def markdown_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out, k, pending = [], 0, set()
    while k < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)\s*([\w+-]*)", lines[k])
        marker = _MARKER_MD.match(lines[k].strip())
        if marker:
            pending = _options(marker.group("opts"))
            k += 1
            continue
        if not m:
            if lines[k].strip():
                pending = set()
            k += 1
            continue
        fence, lang = m.group(2), m.group(3).lower()
        body, j = [], k + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j])
            j += 1
        if lang in SHELL | PYTHON:
            out.append(Block(str(path.relative_to(ROOT)), k + 2, _kind(lang), _code(lang, body), pending))
        pending, k = set(), j + 1
    return out


def rst_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out, k, pending = [], 0, set()
    while k < len(lines):
        marker = _MARKER_RST.match(lines[k].strip())
        if marker:
            pending = _options(marker.group("opts"))
            k += 1
            continue
        m = re.match(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)", lines[k])
        if not m:
            if lines[k].strip():
                pending = set()
            k += 1
            continue
        indent, lang = len(m.group(1)), m.group(2).lower()
        j = k + 1
        while j < len(lines) and (not lines[j].strip() or lines[j].lstrip().startswith(":")
                                  and len(lines[j]) - len(lines[j].lstrip()) > indent):
            j += 1  # options (:caption: ...) and blank lines before the body
        body, first = [], j
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
            body.append(lines[j])
            j += 1
        while body and not body[-1].strip():
            body.pop()
        if body and lang in SHELL | PYTHON:
            cut = min(len(b) - len(b.lstrip()) for b in body if b.strip())
            body = [b[cut:] for b in body]
            out.append(Block(str(path.relative_to(ROOT)), first + 1, _kind(lang), _code(lang, body), pending))
        pending, k = set(), j
    return out


def _kind(lang: str) -> str:
    return "python" if lang in PYTHON else "shell"


def _code(lang: str, body: list[str]) -> str:
    if lang == "console":  # commands after "$ ", with their continuation lines; the rest is output
        cmds, cont = [], False
        for line in body:
            if line.startswith("$ ") or cont:
                cmds.append(line[2:] if line.startswith("$ ") and not cont else line)
                cont = line.rstrip().endswith("\\")
        body = cmds
    if lang in PYTHON:
        if any(line.startswith(">>>") for line in body):  # an interactive session: its prompts' lines; the rest is output
            body = [line[4:] for line in body if line.startswith((">>> ", "... ")) or line in (">>>", "...")]
        return "\n".join(body) + "\n"
    return "\n".join(_without_installs(body)) + "\n"


def _without_installs(body: list[str]) -> list[str]:
    """Shell lines with the installation and test-suite commands left out (whole lines or `&&` segments)."""
    out, in_heredoc = [], None
    for line in body:
        if in_heredoc is not None:  # a heredoc's body is data, never filtered
            out.append(line)
            if line.strip() == in_heredoc:
                in_heredoc = None
            continue
        h = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if h:
            in_heredoc = h.group(1)
        segments = [s for s in line.split("&&") if not _LEFT_OUT.match(s)]
        if segments:
            out.append("&&".join(segments).strip() if len(segments) != len(line.split("&&")) else line)
    return out


def blocks_of(path: Path) -> list[Block]:
    return markdown_blocks(path) if path.suffix == ".md" else rst_blocks(path)


def _has_code(block: Block) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in block.code.splitlines())


def _runnable(path: Path, slow: bool) -> list[Block]:
    return [b for b in blocks_of(path) if _has_code(b) and (slow or "slow" not in b.options)]


_DEFAULT = [p for p in pages() if _runnable(p, slow=False)]
_SLOW = [p for p in pages() if any("slow" in b.options for b in blocks_of(p))]

# The driver runs in a child process (the examples' memory and imports stay out of the test process): it executes
# the blocks in order and stops at the first failure, naming it.
_DRIVER = r'''
import json, os, subprocess, sys, traceback
blocks = json.load(open(sys.argv[1]))
# shell variables carry over from a page's block to its next ones (one terminal session per page): those a block
# sets, beyond bash's own, are saved on exit and read back by the next block
STATE = os.path.abspath(sys.argv[1] + ".shellvars")
BASE = set(subprocess.run(["bash", "-c", "compgen -v"], capture_output=True, text=True).stdout.split())
PRELUDE = (
    f'[ -f "{STATE}" ] && . "{STATE}"\n'
    f'trap \'__rc=$?; for __v in $(compgen -v); do case " {" ".join(sorted(BASE))} " in *" $__v "*) continue;; esac; '
    f'case "$__v" in __*) continue;; esac; declare -p "$__v"; done > "{STATE}" 2>/dev/null; exit $__rc\' EXIT\n')
ns = {"__name__": "__main__"}
for b in blocks:
    where = f"{b['page']}:{b['line']}"
    print(f"=== {where} ({b['lang']})", flush=True)
    cwd = b.get("cwd") or os.getcwd()
    if b["lang"] == "python":
        here = os.getcwd()
        os.chdir(cwd)
        try:
            exec(compile(b["code"], where, "exec"), ns)
        except BaseException:
            traceback.print_exc()
            print(f"EXAMPLE FAILED: {where}", flush=True)
            sys.exit(1)
        finally:
            os.chdir(here)
    else:
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", PRELUDE + b["code"]], cwd=cwd,
                           stderr=subprocess.STDOUT)
        if r.returncode != 0:
            print(f"EXAMPLE FAILED: {where} (exit status {r.returncode})", flush=True)
            sys.exit(1)
'''


def _tracked_copy(dest: Path) -> Path:
    """A copy of the repository's files (tracked by git, or all but the virtual environment and builds)."""
    try:
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                 and not {".git", ".venv", "_build", "auto_examples"} & set(p.relative_to(ROOT).parts)]
    for f in files:
        if (ROOT / f).is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dest / f)
    return dest


def _run_page(path: Path, tmp_path: Path, slow: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    todo = []
    for b in _runnable(path, slow):
        cwd = ""
        if "clone" in b.options:
            cwd = str(_tracked_copy(tmp_path / f"clone{b.line}"))
        todo.append({"page": b.page, "line": b.line, "lang": b.lang, "code": b.code, "cwd": cwd})
    (tmp_path / "blocks.json").write_text(json.dumps(todo))
    (tmp_path / "driver.py").write_text(_DRIVER)
    # `dprivacy` and `python` are this interpreter's, installed or not
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, target in (("dprivacy", f'exec "{sys.executable}" -m dprivacy "$@"'),
                         ("python", f'exec "{sys.executable}" "$@"'), ("python3", f'exec "{sys.executable}" "$@"')):
        (bindir / name).write_text(f"#!/bin/sh\n{target}\n")
        (bindir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))}
    r = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "blocks.json")], cwd=work, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800 if slow else 600)
    failed = re.search(r"^EXAMPLE FAILED: (.*)$", r.stdout, re.M)
    assert r.returncode == 0 and not failed, (
        f"an example of {path.relative_to(ROOT)} failed: {failed.group(1) if failed else f'exit status {r.returncode}'}; "
        f"its output:\n{r.stdout[-6000:]}")


@pytest.mark.parametrize("page", _DEFAULT, ids=[str(p.relative_to(ROOT)) for p in _DEFAULT])
def test_every_example_of_the_page_runs(page, tmp_path):
    _run_page(page, tmp_path, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", _SLOW, ids=[str(p.relative_to(ROOT)) for p in _SLOW])
def test_every_example_of_the_page_runs_with_the_slow_ones(page, tmp_path):
    _run_page(page, tmp_path, slow=True)


# --- the extractor itself -------------------------------------------------------------------------------------


def test_the_extractor_finds_the_blocks_of_both_formats(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    md = tmp_path / "README.md"
    md.write_text("text\n\n```bash\npython3 -m venv .venv && . .venv/bin/activate && pip install -q . && dprivacy x\n"
                  "```\n\n<!-- example: slow — minutes -->\n```console\n$ dprivacy y \\\n    --flag\noutput line\n```\n\n"
                  "```python\nx = 1\n```\n\n```text\nnot code\n```\n\n```bash\npython -m pytest\n```\n")
    rst = tmp_path / "page.rst"
    rst.write_text("Title\n=====\n\n.. code-block:: python\n   :caption: c\n\n   a = 1\n\n   b = a + 1\n\nText\n\n"
                   ".. example: slow, clone — reason\n\n.. code-block:: bash\n\n   python - <<'PY'\n   pip install = 1\n"
                   "   PY\n   pip install foo\n\n::\n\n   literal\n")
    b = markdown_blocks(md)
    assert [(x.lang, x.code, x.options) for x in b] == [
        ("shell", "dprivacy x\n", set()), ("shell", "dprivacy y \\\n    --flag\n", {"slow"}), ("python", "x = 1\n", set()),
        ("shell", "\n", set())]
    assert [x.line for x in b[:3]] == [4, 9, 15]
    r = rst_blocks(rst)
    assert [(x.lang, x.code, x.options, x.line) for x in r] == [
        ("python", "a = 1\n\nb = a + 1\n", set(), 7), ("shell", "python - <<'PY'\npip install = 1\nPY\n", {"slow", "clone"}, 17)]
    assert not _has_code(b[3])
    assert _code("pycon", [">>> x = [1,", "...      2]", "[1, 2]", ">>> print(x)", "[1, 2]"]) == "x = [1,\n     2]\nprint(x)\n"


def test_every_docs_page_is_found_by_glob():
    found = {str(p.relative_to(ROOT)) for p in pages()}
    assert {"README.md", "docs/getting_started.rst", "docs/user_guide/locations.rst"} <= found
    assert not any("/api/" in p or "auto_examples" in p for p in found)
    # every user-guide page with a code block is run
    for p in (ROOT / "docs" / "user_guide").glob("*.rst"):
        if re.search(r"^\s*\.\. code-block:: (bash|console|python)", p.read_text(encoding="utf-8"), re.M):
            assert p in _DEFAULT or p in _SLOW, p


def test_a_page_runs_as_one_session_and_a_failing_block_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    page = tmp_path / "page.rst"
    page.write_text(".. code-block:: bash\n\n   X=5; Y=$((X + 1))\n   echo hi > f.txt\n\n"
                    ".. code-block:: python\n\n   y = open('f.txt').read()\n\n"
                    ".. code-block:: python\n\n   assert y == 'hi\\n'\n\n"
                    ".. code-block:: bash\n\n   [ \"$X\" = 5 ] && [ \"$Y\" = 6 ] && [ -f f.txt ]\n")
    (tmp_path / "a").mkdir()
    _run_page(page, tmp_path / "a", slow=False)
    page.write_text(page.read_text() + "\n.. code-block:: bash\n\n   dprivacy no-such-command\n")
    (tmp_path / "b").mkdir()
    with pytest.raises(AssertionError, match=r"page.rst:20 \(exit status 2\)"):
        _run_page(page, tmp_path / "b", slow=False)
    page.write_text(".. code-block:: python\n\n   x = 1\n   assert x == 2\n")
    (tmp_path / "c").mkdir()
    with pytest.raises(AssertionError, match=r"page.rst:3"):
        _run_page(page, tmp_path / "c", slow=False)
