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
