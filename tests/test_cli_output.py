"""The command line for people (issue 31): one error prefix, readable summaries, the "not optimal" line, help text
and examples on every option and subcommand, and --prior read the same way everywhere."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dprivacy.cli import main

PREFIX = re.compile(r"^dprivacy( [a-z-]+)?: error: \S")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_process(*argv, cwd=None):
    """In a process of its own: the optimal grid mechanisms solve in a forked child, which must not be forked from
    pytest's process (a thread of an earlier test may hold a lock there)."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", *map(str, argv)], capture_output=True, text=True, cwd=cwd,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


# -- one error prefix ---------------------------------------------------------------------------


@pytest.mark.parametrize("argv, command", [
    (["nosuch"], None),                                                                      # argparse, no command yet
    (["design", "line:4"], "design"),                                                        # argparse, in a command
    (["design", "line:4", "--epsilon", "1", "--mechanism", "optimal", "--dilation", "2"], "design"),  # a CliError
    (["design", "line:4", "--epsilon", "1", "--mechanism", "exponential", "--save", ""], "design"),
    (["check", "no-such-file.npy", "line:3", "--epsilon", "1"], "check"),                    # a ValueError of the library
    (["leakage", "no-such-file.npy"], "leakage"),
    (["prior", "line:3", "--epsilon", "1", "--prior", "no-such-file.npy"], "prior"),
    (["obfuscate", "in.csv", "-o", "out.csv"], "obfuscate"),
    (["query", "no-such-table.csv", "--query", "count", "--epsilon", "1"], "query"),
])
def test_every_error_line_has_the_command_s_prefix(capsys, tmp_path, monkeypatch, argv, command):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert PREFIX.match(lines[0]), lines[0]
    want = f"dprivacy {command}: error: " if command else "dprivacy: error: "
    assert lines[0].startswith(want), lines[0]
    assert lines[0].count(": error: ") == 1, lines[0]  # never prefixed twice


def test_a_message_that_already_has_a_prefix_is_printed_as_it_is():
    from dprivacy.cli.app import _error_line

    class A:
        command = "query"

    assert _error_line(A(), "dprivacy query: error: bad") == "dprivacy query: error: bad"
    assert _error_line(A(), "dprivacy: error: bad") == "dprivacy: error: bad"
    assert _error_line(A(), "bad\nmore") == "dprivacy query: error: bad"
    assert _error_line(None, "bad") == "dprivacy: error: bad"


# -- help: every option has help text; every subcommand's --help ends with examples that run ---------------------


def _subparsers():
    import argparse

    from dprivacy.cli.app import make_parser

    p = make_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def test_every_option_and_argument_has_help_text():
    missing = [f"{name} {a.option_strings or a.dest}" for name, sp in _subparsers().items() for a in sp._actions
               if not a.help]
    assert missing == []


def _examples(parser) -> list[str]:
    return [line.strip() for line in (parser.epilog or "").splitlines() if line.strip().startswith("dprivacy ")]


def test_every_subcommand_s_help_ends_with_two_to_four_examples():
    for name, sp in _subparsers().items():
        ex = _examples(sp)
        assert 2 <= len(ex) <= 4, (name, ex)
        assert all(e.split()[1] == name for e in ex), (name, ex)
        # the help as printed keeps the examples' lines whole (reproduce lists the experiment ids after them)
        text = sp.format_help()
        assert all(e in text.splitlines() or "  " + e in text.splitlines() for e in ex), text[-500:]
        if name != "reproduce":
            assert text.rstrip().endswith(ex[-1]), text[-300:]


def _example_inputs(folder):
    """The files the examples name, made here: points near Paris and public points (CSV), a prior of six weights
    that sum to 1.000002 (normalised), a 4×4 grid prior, meter readings and a table of sales."""
    rng = np.random.default_rng(31)
    for name, n in (("points.csv", 120), ("public.csv", 300)):
        lat, lon = 48.85 + rng.normal(0, 0.015, n), 2.35 + rng.normal(0, 0.02, n)
        (folder / name).write_text("id,lat,lon\n" + "".join(f"{i},{a:.6f},{b:.6f}\n" for i, (a, b) in enumerate(zip(lat, lon))))
    (folder / "prior.txt").write_text("0.166667\n" * 6)
    np.save(folder / "grid_prior.npy", 1.0 + rng.random((4, 4)))
    (folder / "meter.csv").write_text("time,kwh\n" + "".join(f"2010-01-{1 + h // 24:02d}T{h % 24:02d}:00,{rng.integers(0, 30) / 10:.1f}\n"
                                                             for h in range(72)))
    (folder / "sales.csv").write_text("region,quantity\n" + "".join(f"{rng.choice(['East', 'West'])},{rng.integers(1, 9)}\n"
                                                                    for _ in range(200)))


def test_every_example_of_every_help_runs(capsys, tmp_path, monkeypatch):
    """In the parser's order in one folder (design saves the channel that check and leakage read; obfuscate writes
    the releases that evaluate measures), each with exit status 0."""
    import shlex

    _example_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    ran = 0
    for name, sp in _subparsers().items():
        for line in _examples(sp):
            code, out, err = run(capsys, *shlex.split(line)[1:])
            assert code == 0, (line, err)
            assert out.strip(), line
            if "--json" in line:
                json.loads(out)
            ran += 1
    assert ran >= 20


# -- output for people ---------------------------------------------------------------------------------------------


def _points(path, n=60, seed=0):
    rng = np.random.default_rng(seed)
    lat, lon = 48.85 + rng.normal(0, 0.01, n), 2.35 + rng.normal(0, 0.01, n)
    path.write_text("id,lat,lon\n" + "".join(f"{i},{a:.6f},{b:.6f}\n" for i, (a, b) in enumerate(zip(lat, lon))))
    return path


def _readable(out: str) -> None:
    """No Python reprs in a summary: None, dicts, empty lists, nan."""
    for bad in (r"\bNone\b", r"\{'", r"\[\]", r"\bnan\b", r"\bTrue\b", r"\bFalse\b"):
        assert not re.search(bad, out), (bad, out)


def test_obfuscate_summary_says_epsilon_rows_displacement_guarantee_source_and_sidecar(capsys, tmp_path, monkeypatch):
    from dprivacy.cli.render import metres
    from dprivacy.data.locations import displacement_quantiles

    pts = _points(tmp_path / "p.csv")
    monkeypatch.setenv("COLUMNS", "400")  # (a wide terminal: the sidecar's long temporary path on one line)
    code, out, err = run(capsys, "obfuscate", pts, "-o", tmp_path / "a.csv", "--epsilon", "2", "--seed", "1")
    assert code == 0
    _readable(out)
    r = json.loads((tmp_path / "a.csv.dprivacy.json").read_text())
    assert len(out.splitlines()) < 20
    q = displacement_quantiles(r["epsilon_per_metre"])
    for text in ("ε", "per km", f"{r['rows_written']:,} written", metres(q["mean"]), metres(q["p95"]), "Guarantee:",
                 str(tmp_path / "a.csv.dprivacy.json"), "WARNING", "NOT for release"):
        assert text in out.replace("\n", " ") or text in out, (text, out)
    # the JSON is the report, unchanged: one object with every field
    code, out, err = run(capsys, "obfuscate", pts, "-o", tmp_path / "b.csv", "--epsilon", "2", "--json")
    d = json.loads(out)
    assert {"guarantee", "random_source", "rows_written", "guarantee_details", "sidecar"} <= set(d)
    assert d["random_source"]["release"] is True


def test_evaluate_summary_compares_measured_and_predicted_and_warns_once_about_true_locations(capsys, tmp_path):
    from dprivacy.cli.render import metres

    pts = _points(tmp_path / "p.csv")
    assert run(capsys, "obfuscate", pts, "-o", tmp_path / "r.csv", "--epsilon", "1")[0] == 0
    code, out, _ = run(capsys, "evaluate", pts, tmp_path / "r.csv", "--json", "--html", tmp_path / "e.html")
    d = json.loads(out)
    code, out, _ = run(capsys, "evaluate", pts, tmp_path / "r.csv", "--html", tmp_path / "e.html", "--force")
    assert code == 0
    _readable(out)
    for k in ("mean", "p50", "p95"):
        assert metres(d["displacement_m"][k]) in out and metres(d["predicted_displacement_m"][k]) in out
    assert "measured" in out and "predicted" in out
    assert out.lower().count("true locations") == 1, out


def test_every_summary_is_readable_and_json_stays_one_object(capsys, tmp_path, monkeypatch):
    _example_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "h.npy", np.full((6, 6), 1 / 6))
    for argv in (["design", "line:6", "--epsilon", "1", "--mechanism", "exponential"],
                 ["check", "h.npy", "line:6", "--epsilon", "1"],
                 ["leakage", "h.npy", "--prior", "prior.txt"],
                 ["threshold", "grid:3x3"],
                 ["prior", "line:6", "--epsilon", "1", "--prior", "prior.txt", "--certificate"],
                 ["series", "meter.csv", "-o", "m.csv", "--column", "kwh", "--time", "time", "--epsilon", "1", "--unit",
                  "0.1", "--per", "day"]):
        code, out, err = run(capsys, *argv)
        assert code == 0, (argv, err)
        _readable(out)
        assert argv[0] != "series" or "sidecar" in out
        if argv[0] == "series":
            argv = [a if a != "m.csv" else "m2.csv" for a in argv]
        code, out, err = run(capsys, *argv, "--json")
        assert code == 0 and isinstance(json.loads(out), dict) and out.strip().count("\n") == 0, (argv, out)


def test_fmt_summarises_values():
    from dprivacy.cli.render import fmt

    assert fmt(None) == "—" and fmt(float("nan")) == "—" and fmt(True) == "yes"
    assert fmt(0.123456789) == "0.1235" and fmt(1234567) == "1,234,567"
    assert fmt([]) == "none" and "100 values" in fmt(list(range(100)))


# -- "not optimal" ---------------------------------------------------------------------------------------------------


def test_an_optimal_design_stopped_above_its_gap_says_so_in_one_line_and_in_json(capsys, tmp_path):
    argv = ["design", "grid:10x10", "--epsilon", "0.5", "--mechanism", "optimal", "--loss", "distance",
            "--time-limit", "0.5", "--gap", "1e-12"]
    code, out, err = run_process(*argv, "--json")
    d = json.loads(out)
    assert code == 0 and d["optimal"] is False and d["gap"] > d["gap_requested"] == 1e-12
    code, out, err = run_process(*argv)
    lines = [line for line in out.splitlines() if "not optimal: gap" in line]
    assert len(lines) == 1 and "time limit (0.5 s)" in out, out


def test_an_optimal_design_that_reaches_its_gap_has_no_such_line(capsys):
    code, out, _ = run(capsys, "design", "line:6", "--epsilon", "1", "--mechanism", "optimal", "--json")
    assert json.loads(out)["optimal"] is True
    code, out, _ = run(capsys, "design", "line:6", "--epsilon", "1", "--mechanism", "optimal")
    assert "not optimal" not in out


def test_an_optimal_grid_release_stopped_by_its_time_limit_says_so(capsys, tmp_path):
    pts = _points(tmp_path / "p.csv")
    np.save(tmp_path / "gp.npy", np.random.default_rng(0).random((14, 15)) ** 4)
    argv = ["obfuscate", pts, "--epsilon", "2", "--mechanism", "optimal", "--cell", "500m", "--region",
            "2.30,48.82,2.40,48.88", "--prior", tmp_path / "gp.npy", "--time-limit", "0.5"]
    code, out, _ = run_process(*argv, "-o", tmp_path / "a.csv", "--json")
    opt = json.loads(out)["grid"]["optimal"]
    assert code == 0 and opt["optimal"] is (opt["gap"] <= 1e-7 * (1 + 1e-9))
    assert opt["optimal"] is False  # 210 cells and a skewed prior: far from optimal after 0.5 s
    code, out, _ = run_process(*argv, "-o", tmp_path / "b.csv")
    assert code == 0 and out.count("not optimal: gap") == 1


# -- --prior read the same way everywhere ----------------------------------------------------------------------------


def test_six_weights_of_0_166667_are_a_prior_and_the_normalisation_is_said(capsys, tmp_path):
    (tmp_path / "p.txt").write_text("0.166667\n" * 6)
    for argv in (["design", "line:6", "--epsilon", "1", "--mechanism", "exponential"],
                 ["prior", "line:6", "--epsilon", "1"]):
        code, out, err = run(capsys, *argv, "--prior", tmp_path / "p.txt", "--json")
        assert code == 0, err
        assert json.loads(out)["prior_normalised"] == "prior normalised: weights summed to 1.000002"
        code, out, err = run(capsys, *argv, "--prior", tmp_path / "p.txt")
        assert "weights summed to 1.000002" in out
    t = tmp_path / "t.csv"
    t.write_text("v\n" + "1\n" * 5)  # a count of 5 public rows: the answers 0..5, six weights
    code, out, err = run(capsys, "query", t, "--query", "count", "--epsilon", "1", "--mechanism", "optimal", "--prior",
                         tmp_path / "p.txt", "--json")
    assert code == 0, err


def test_a_grid_prior_may_be_height_by_width_and_is_read_alike_by_design_and_obfuscate(capsys, tmp_path):
    from dprivacy.spaces import read_prior

    w = np.arange(1.0, 13.0).reshape(3, 4)  # height 3, width 4
    np.save(tmp_path / "g.npy", w)
    np.save(tmp_path / "flat.npy", w.ravel())
    p2, note = read_prior(str(tmp_path / "g.npy"), 12, shape=(3, 4))
    assert np.allclose(p2, w.ravel() / w.sum()) and "summed to 78" in note
    a = json.loads(run(capsys, "design", "grid:4x3", "--epsilon", "1", "--mechanism", "exponential", "--prior",
                       tmp_path / "g.npy", "--json")[1])
    b = json.loads(run(capsys, "design", "grid:4x3", "--epsilon", "1", "--mechanism", "exponential", "--prior",
                       tmp_path / "flat.npy", "--json")[1])
    assert a["utility"] == b["utility"]
    code, out, err = run(capsys, "design", "grid:3x4", "--epsilon", "1", "--mechanism", "exponential", "--prior",
                         tmp_path / "g.npy")  # 4 high, 3 wide: a 3×4 array is the wrong shape
    assert code == 2 and "3×4" in err and "4×3" in err
    from dprivacy.data.grid_release import load_grid_prior
    from dprivacy.data.location_grid import LocationGrid

    grid = LocationGrid.build("2.30,48.82,2.40,48.88", "1km")
    g = np.random.default_rng(1).random((grid.height, grid.width))
    np.save(tmp_path / "cells.npy", g)
    p, info = load_grid_prior(grid, str(tmp_path / "cells.npy"))
    assert np.allclose(p, g.ravel() / g.sum()) and "prior normalised" in info["prior_normalised"]


@pytest.mark.parametrize("weights, says", [([0.5, -0.1, 0.6], "-0.1"), ([0.5, float("nan"), 0.5], "nan"),
                                           ([0.0, 0.0, 0.0], "every weight is 0"), ([0.5, 0.5], "expected 3 weights")])
def test_bad_prior_weights_are_refused_in_one_line_everywhere(capsys, tmp_path, weights, says):
    np.save(tmp_path / "p.npy", np.array(weights))
    t = tmp_path / "t.csv"
    t.write_text("v\n0\n1\n")
    for argv in (["design", "line:3", "--epsilon", "1", "--mechanism", "exponential"],
                 ["prior", "line:3", "--epsilon", "1"],
                 ["query", t, "--query", "count", "--epsilon", "1", "--mechanism", "optimal"]):
        code, out, err = run(capsys, *argv, "--prior", tmp_path / "p.npy")
        assert code == 2 and out == "" and err.count("\n") == 1 and says in err, (argv, err)
        assert PREFIX.match(err)


def test_evaluate_s_optimal_sweep_carries_each_gap_and_whether_it_was_reached(capsys, tmp_path):
    pts = _points(tmp_path / "p.csv")
    np.save(tmp_path / "gp.npy", np.random.default_rng(0).random((14, 15)) ** 4)
    region = ["--cell", "500m", "--region", "2.30,48.82,2.40,48.88"]
    assert run(capsys, "obfuscate", pts, "-o", tmp_path / "g.csv", "--epsilon", "2", "--mechanism",
               "planar-laplace-grid", *region)[0] == 0
    argv = ["evaluate", pts, tmp_path / "g.csv", "--prior", tmp_path / "gp.npy", "--sweep", "1:2:2", "--mechanisms",
            "optimal", "--time-limit", "0.5"]
    code, out, err = run_process(*argv, "--json")
    assert code == 0, err
    rows = json.loads(out)["grid"]["sweep"]
    assert rows and all(r["optimal"] is (r["gap"] <= 1e-7 * (1 + 1e-9)) for r in rows if r.get("exists"))
    assert "optimal" not in json.loads(out)["grid"]["at_release"]  # planar-laplace-grid: no gap
    code, out, _ = run_process(*argv)
    assert code == 0 and out.count("not optimal: gap") == sum(r.get("optimal") is False for r in rows)


def test_a_guarantee_that_starts_with_a_symbol_keeps_it():
    """series' guarantee starts with ε: capitalised, it read 'Ε·d₁-private' (a capital Greek epsilon)."""
    from dprivacy.cli.summary import guarantee_sentence

    assert guarantee_sentence("ε·d₁-private with ε = 1: at most a factor e^(ε·t)").startswith("ε·d₁")
    assert guarantee_sentence("for x, x': P(y|x) ≤ exp(ε·d)").startswith("For x")
