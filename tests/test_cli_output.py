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
