"""The documentation site (docs/): every page and gallery figure is built, no page links to a missing
file or anchor, and the pages name the papers by their authors, never by the project's internal file
names.

The site is built once per session into a temporary folder with the documented command (warnings are
errors), or taken from DPRIVACY_DOCS_HTML when that names an already built site. Skipped when the
``docs`` extra is not installed.
"""

from __future__ import annotations

import html.parser
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

for _module in ("sphinx", "sphinx_gallery", "numpydoc", "sphinxcontrib.bibtex", "sphinxarg", "pydata_sphinx_theme"):
    pytest.importorskip(_module, reason="the docs extra is not installed (pip install -e '.[docs]')")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("plot_*.py"))
# every page source under docs/ (found by glob: a page added later is checked without being listed here), the
# gallery's index and one page per example
SOURCES = sorted(str(p.relative_to(ROOT / "docs").with_suffix("")) for p in (ROOT / "docs").rglob("*.rst")
                 if not {"_build", "_templates", "auto_examples", "generated"} & set(p.relative_to(ROOT / "docs").parts)
                 and p.name != "sg_execution_times.rst")  # (those two are written by the build itself)
PAGES = [*SOURCES, "auto_examples/index", *(f"auto_examples/{e}" for e in EXAMPLES)]


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    given = os.environ.get("DPRIVACY_DOCS_HTML")
    if given:
        out = Path(given)
        assert (out / "index.html").is_file(), f"DPRIVACY_DOCS_HTML={given} holds no built site"
        return out
    out = tmp_path_factory.mktemp("docs") / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-d", str(out.parent / "doctrees"), str(ROOT / "docs"), str(out)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"the docs build failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    return out


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("href", "src"):
            if a.get(key) and not (tag == "link" and a.get("rel") in ("preconnect", "dns-prefetch")):
                self.links.append(a[key])
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])

    def handle_data(self, data):
        self.text.append(data)


def _parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="session")
def pages(site) -> dict[Path, _Page]:
    # the theme's own templates under _static are not pages
    return {f: _parse(f) for f in site.rglob("*.html") if not f.relative_to(site).parts[0].startswith("_")}


def test_every_page_is_built(site):
    missing = [p for p in PAGES if not (site / f"{p}.html").is_file()]
    assert not missing, missing
    assert len(EXAMPLES) >= 4
    assert {"index", "getting_started", "cli", "bibliography", "api/index", "user_guide/index",
            "user_guide/python", "user_guide/security"} <= set(SOURCES)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_gallery_example_has_its_figures(site, pages, example):
    page = pages[site / "auto_examples" / f"{example}.html"]
    images = [link for link in page.links if re.search(rf"sphx_glr_{re.escape(example)}_\d+\.png$", link)]
    assert images, f"{example}: no figure on its page"
    for link in images:
        assert (site / "auto_examples" / unquote(link)).resolve().is_file(), link


def test_no_page_links_to_a_missing_file_or_anchor(site, pages):
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith(("//", "mailto:", "javascript:")):
                continue  # external: not checked offline
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(site)} → {link}")
            elif parts.fragment and target.suffix == ".html" and target in pages \
                    and unquote(parts.fragment) not in pages[target].ids:
                broken.append(f"{path.relative_to(site)} → {link} (no such anchor)")
    assert not broken, "\n".join(broken[:50])


def test_pages_name_the_papers_by_authors_not_internal_names(site, pages):
    internal = re.compile(r"\b[Ss]eeds? 00[0-4]\b|00[0-4]_[0-9a-f]{16}|shared/papers")
    found = [f"{p.relative_to(site)}: {m.group(0)}" for p, page in pages.items() if p.name != "searchindex.js"
             for m in [internal.search(" ".join(page.text))] if m]
    assert not found, found


def test_cli_reference_documents_every_command(site, pages):
    from dprivacy.cli.app import make_parser

    parser = make_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    ids = pages[site / "cli.html"].ids
    missing = [c for c in commands if f"dprivacy-{c}" not in ids]
    assert not missing, missing


def test_bibliography_cites_the_five_papers_with_their_dois(site, pages):
    text = " ".join(pages[site / "bibliography.html"].text)
    for title in ("regions of priors that admit robust optimal mechanisms",
                  "mechanism of optimal utility for a region of priors",
                  "information leakage of differentially-private mechanisms",
                  "relation between differential privacy and quantitative information flow",
                  "Broadening the scope of differential privacy using metrics"):
        assert title.lower() in text.lower(), title
    for doi in ("10.1007/978-3-319-06880-0_16", "10.1007/978-3-642-36830-1_3", "10.3233/JCS-150528",
                "10.1007/978-3-642-22012-8_4", "10.1145/2508859.2516735"):
        assert doi in text, doi


def test_security_model_page_is_there(site, pages):
    assert "Security model" in " ".join(pages[site / "user_guide" / "security.html"].text)


def test_the_source_names_the_papers_by_authors_not_internal_names():
    """Docstrings, --help, reports, JSON and sidecars come from the source: none may cite a paper by our internal
    file names ("seed 002", 002_….txt, ../shared/papers), which a clone of the project does not have."""
    root = Path(__file__).resolve().parents[1]
    internal = re.compile(r"\b[Ss]eeds? 00[0-4]\b|00[0-4]_[0-9a-f]{16}\.txt|shared/papers")
    files = [*root.glob("src/**/*.py"), root / "README.md", *root.glob("docs/*.rst"), *root.glob("docs/user_guide/*.rst"),
             *root.glob("examples/*.py")]
    found = [f"{p.relative_to(root)}:{i + 1}" for p in files for i, line in enumerate(p.read_text().splitlines())
             if internal.search(line)]
    assert not found, found
