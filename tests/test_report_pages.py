"""The pages a person reads (issue #31): the reproduction report (a table of contents, the differing claims
summarised at the top with links to their rows, full-width figures, no raw markup in headings, notes as
sentences), the evaluate page (styled, one warning, true points drawn over the released ones, the release marked
on its sweep), and the progress of `reproduce` when stderr is not a terminal (plain lines, a heartbeat)."""

from __future__ import annotations

import csv
import io
import re
import threading
from html.parser import HTMLParser

import numpy as np
import pytest

from dprivacy.experiments import registry, report
from dprivacy.experiments.progress import PlainProgress
from dprivacy.experiments.report_html import _markup, sentence

# fast experiments: one with a claim that differs (001-table1), one whose title has `code` (002-tables-superstore),
# one with figures (000-fig2)
IDS = ["001-table1", "002-tables-superstore", "000-fig2"]


class _Page(HTMLParser):
    """ids, links, the text of headings and the class of rows, from an HTML page."""

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.headings, self.stack = {}, [], [], []
        self.section = None
        self.section_links: dict[str, list[str]] = {}
        self.styles = ""
        self._in_style = False
        self._heading = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = (tag, a.get("class", ""))
            if tag in ("section", "nav"):
                self.section = a["id"]
        if tag == "a" and a.get("href", "").startswith("#"):
            self.links.append(a["href"][1:])
            if self.section:
                self.section_links.setdefault(self.section, []).append(a["href"][1:])
        if tag in ("h1", "h2", "h3"):
            self._heading = [tag, "", []]
        elif self._heading is not None:
            self._heading[2].append(tag)
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        if tag in ("section", "nav"):
            self.section = None
        if tag in ("h1", "h2", "h3") and self._heading is not None:
            self.headings.append(tuple(self._heading))
            self._heading = None
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._heading is not None:
            self._heading[1] += data
        if self._in_style:
            self.styles += data


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("pages") / "rep"
    summary = report.run(out, quick=True, only=IDS, progress=False)
    page = _Page()
    page.feed((out / "index.html").read_text())
    return out, summary, page


def test_report_has_a_table_of_contents_whose_links_reach_every_experiment(built):
    _, summary, page = built
    toc = page.section_links["contents"]
    assert {e["id"] for e in summary["experiments"]} <= set(toc)
    for target in toc:
        assert target in page.ids, f"the contents link to #{target}, which the page does not have"


def test_report_summarises_the_differing_claims_with_links_to_their_rows(built):
    _, summary, page = built
    differing = [c["id"] for c in summary["claims"] if c["verdict"] == "differs"]
    assert differing, "the chosen experiments were expected to include a differing claim (001-table1)"
    links = page.section_links["differs"]
    for cid in differing:
        target = f"claim-{cid}"
        assert target in links
        tag, cls = page.ids[target]
        assert tag == "tr" and "differs" in cls
    # every link of the summary has its target on the page, and no agreeing claim is listed
    agreeing = {f"claim-{c['id']}" for c in summary["claims"] if c["verdict"] != "differs"}
    assert all(t in page.ids for t in links) and not agreeing & set(links)
    # the summary comes before the sections
    assert list(page.ids).index("differs") < list(page.ids).index(summary["experiments"][0]["id"])


def test_report_headings_show_no_raw_markup(built):
    _, summary, page = built
    assert page.headings
    for tag, text, inner in page.headings:
        assert "`" not in text and "^{" not in text, f"raw markup in <{tag}> {text!r}"
    with_code = [e for e in summary["experiments"] if "`" in e["title"]]
    assert with_code, "002-tables-superstore's title has `code`"
    for e in with_code:
        (h,) = [h for h in page.headings if h[0] == "h3" and h[1].startswith(e["title"].split("`")[0])]
        assert "code" in h[2]


def test_report_figures_take_the_full_width(built):
    out, summary, page = built
    css = re.sub(r"\s+", "", page.styles)
    rule = re.search(r"figureimg\{([^}]*)\}", css).group(1)
    assert "width:100%" in rule.split(";")
    fig_rule = re.search(r"(?<![\w-])figure\{([^}]*)\}", css).group(1)
    assert "display:block" in fig_rule and "max-width" not in fig_rule and "inline-block" not in fig_rule
    html = (out / "index.html").read_text()
    pngs = [f["png"] for e in summary["experiments"] for f in e["figures"]]
    assert pngs and all(f"<figure><a href='{p}'><img src='{p}'" in html for p in pngs)


def test_markup_is_rendered_and_notes_are_sentences():
    assert _markup("with `dprivacy series` at e^{−ε}") == "with <code>dprivacy series</code> at e<sup>−ε</sup>"
    assert _markup("ε·d_1 and d_h, not run_query") == "ε·d<sub>1</sub> and d<sub>h</sub>, not run_query"
    assert "`" not in _markup("an unpaired ` backtick") and "&lt;b&gt;" in _markup("<b>")
    assert sentence("regular at ε = 0.7") == "Regular at ε = 0.7."
    assert sentence("Done (see above).") == "Done (see above)."
    assert sentence("as said (twice)") == "As said (twice)."


# -- progress when stderr is not a terminal --------------------------------------------------------


class _Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


class _Exp:
    def __init__(self, id):
        self.id = id


def test_plain_progress_prints_a_line_per_experiment_and_a_heartbeat():
    clock, out = _Clock(), io.StringIO()
    p = PlainProgress(2, stream=out, clock=clock, every=30, heartbeat=None)
    p.started(_Exp("a"))
    assert out.getvalue().splitlines()[-1].endswith("[1/2] a started")
    clock.t += 29
    p.tick()
    assert len(out.getvalue().splitlines()) == 1  # not yet 30 s since the last line
    clock.t += 2
    p.tick()
    assert "a still running, 31 s" in out.getvalue().splitlines()[-1]
    clock.t += 10
    p.tick()
    assert len(out.getvalue().splitlines()) == 2  # 30 s counted from the last line
    p.finished(_Exp("a"), 41.0, claims=3, differ=1)
    assert "[1/2] a done, 3 claims, 1 differ in 41.0 s" in out.getvalue().splitlines()[-1]
    p.started(_Exp("b"))
    p.finished(_Exp("b"), 0.1, error=True)
    assert "[2/2] b FAILED" in out.getvalue().splitlines()[-1]
    p.stop()
    clock.t += 100
    p.tick()
    assert "FAILED" in out.getvalue().splitlines()[-1]  # nothing after stop


def test_reproduce_heartbeat_reaches_a_slow_experiment(tmp_path, monkeypatch):
    """A fake experiment that "runs" for 45 s of a fake clock: the heartbeat thread says it is still running, and
    report.run prints its start and its end."""
    clock, out = _Clock(), io.StringIO()
    said = threading.Event()

    def slow(ctx):
        clock.t += 45
        for _ in range(500):  # the heartbeat thread checks every 10 ms; give it up to 5 s on a loaded machine
            if "still running" in out.getvalue():
                said.set()
                break
            threading.Event().wait(0.01)
        return registry.Outcome()

    monkeypatch.setitem(registry.REGISTRY, "fake-slow", registry.Experiment("fake-slow", "000", "a slow fake", slow))
    progress = PlainProgress(1, stream=out, clock=clock, every=30, heartbeat=0.01)
    report.run(tmp_path / "rep", only=["fake-slow"], progress=progress)
    lines = out.getvalue().splitlines()
    assert said.is_set()
    assert lines[0].endswith("[1/1] fake-slow started") and "fake-slow still running, 45 s" in lines[1]
    assert "[1/1] fake-slow done, 0 claims" in lines[-1]


def test_reproduce_command_prints_plain_progress_when_stderr_is_not_a_terminal(tmp_path, capsys):
    from dprivacy.cli import main

    assert main(["reproduce", "--only", "003-prop3", "--out", str(tmp_path / "rep"), "--json"]) == 0
    err = capsys.readouterr().err
    assert "[1/1] 003-prop3 started" in err and "[1/1] 003-prop3 done" in err


# -- the evaluate page -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from dprivacy.cli import main

    d = tmp_path_factory.mktemp("ev")
    rng = np.random.default_rng(3)
    with (d / "pts.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["lat", "lon"])
        for la, lo in zip(51.57 + rng.uniform(-0.02, 0.02, 120), 16.10 + rng.uniform(-0.03, 0.03, 120)):
            w.writerow([f"{la:.6f}", f"{lo:.6f}"])
    assert main(["obfuscate", str(d / "pts.csv"), "-o", str(d / "grid.csv"), "--epsilon", "2", "--mechanism",
                 "planar-laplace-grid", "--cell", "1km", "--region", "16.06,51.54,16.14,51.60", "--seed", "1", "--json"]) == 0
    return d


def _visible_text(page: str) -> str:
    return re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)


def test_evaluate_page_is_styled_and_warns_once(release, capsys):
    from dprivacy.data.evaluation import evaluate_release

    d = release
    res = evaluate_release(d / "pts.csv", d / "grid.csv", html=d / "page.html", png=d / "fig.png", sweep=np.array([1.0, 4.0]),
                           force=True)
    page = (d / "page.html").read_text()
    text = _visible_text(page)
    assert len(re.findall(r"true locations", text, flags=re.I)) == 1
    assert "<style>" in text and "http://" not in text and "https://" not in text  # styled, no network
    assert "data:image/png;base64," in page
    assert res["grid"]["sweep"] and "<h2>Sweep</h2>" in page


def test_evaluate_figure_draws_true_points_over_released_ones_and_marks_the_release_on_its_sweep():
    import matplotlib.pyplot as plt

    from dprivacy.data.evaluation_page import draw

    rng = np.random.default_rng(0)
    la0, lo0 = 51.5 + rng.uniform(0, 0.1, 50), 16.0 + rng.uniform(0, 0.1, 50)
    la1, lo1 = la0 + 0.01, lo0 - 0.01
    sweep = [{"mechanism": "planar-laplace-grid", "exists": True, "expected_displacement_m": x, "adversary_error_m": y}
             for x, y in ((100, 80), (300, 250), (900, 700))]
    at = {"mechanism": "planar-laplace-grid", "exists": True, "epsilon_per_km": 2.0, "expected_displacement_m": 300,
          "adversary_error_m": 250}
    fig = draw(original=(la0, lo0), released=(la1, lo1), displacement=np.full(50, 1500.0), sweep=sweep, at_release=at)
    try:
        by_title = {ax.get_title(): ax for ax in fig.axes}
        (map_ax,) = [ax for t, ax in by_title.items() if t.startswith("True and released")]
        pts = {c.get_label(): c for c in map_ax.collections if c.get_label() in ("true", "released")}
        assert set(pts) == {"true", "released"}
        assert pts["true"].get_zorder() > pts["released"].get_zorder()
        assert pts["true"].get_sizes().max() < pts["released"].get_sizes().min()
        assert {t.get_text() for t in map_ax.get_legend().get_texts()} == {"true", "released"}
        (sweep_ax,) = [ax for t, ax in by_title.items() if "sweep" in t]
        labels = [ln.get_label() for ln in sweep_ax.get_lines()]
        assert any(lab.startswith("planar-laplace-grid: predicted") for lab in labels)
        (star,) = [ln for ln in sweep_ax.get_lines() if ln.get_label().startswith("this release, predicted")]
        assert list(star.get_xdata()) == [300] and list(star.get_ydata()) == [250]
    finally:
        plt.close(fig)
