"""The bad-input catalogue of issue 9 through the command line as a user runs it: one stderr line, exit
status 2 (1 for 'not private'), no traceback, before any large allocation (bounded by a timeout)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    np.save(d / "complex.npy", np.eye(3, dtype=complex))
    np.save(d / "dt.npy", np.array([[np.datetime64("2020-01-01")]]))
    np.save(d / "rec.npy", np.zeros((2, 2), dtype=[("a", float)]))
    (d / "near.csv").write_text("0.5,0.5000001\n0.5,0.5\n")
    (d / "tri.csv").write_text("0,1,5\n1,0,1\n5,1,0\n")
    (d / "text.csv").write_text("a,b\nx,y\n")
    (d / "empty.csv").write_text("")
    (d / "pts.csv").write_text("name,lat,lon\na,10,20\nb,95,20\n")
    return d


CASES = [
    # sizes: refused before building
    ("design line:100000 --epsilon 1 --mechanism exponential", 2, "over the 4 GiB limit"),
    ("design clique:60000 --epsilon 1 --mechanism randomized-response", 2, "over the 4 GiB limit"),
    ("design grid:200x200 --epsilon 1 --mechanism planar-laplace", 2, "dense 40000x40000"),
    ("design grid:10000x10000 --epsilon 1 --mechanism exponential", 2, "GiB"),
    ("design grid:30x30 --epsilon 1 --mechanism optimal --method full", 2, "privacy constraints"),
    ("design grid:3x3 --epsilon 1 --mechanism optimal --gap 2", 2, "gap must be a number in [0, 1)"),
    ("design grid:3x3 --epsilon 1 --mechanism optimal --time-limit -5", 2, "time_limit must be a positive number"),
    ("design grid:3x3 --epsilon 1 --mechanism optimal --loss distance --gain binary", 2, "not both"),
    ("design grid:3x3 --epsilon 1 --mechanism optimal --loss missing.npy", 2, "loss matrix file not found"),
    ("design grid:3x3 --epsilon 1 --mechanism truncated-geometric --time-limit 5", 2, "apply to --mechanism optimal"),
    ("design hamming:2000,2 --epsilon 1 --mechanism exponential", 2, "points"),
    ("design kcount:1000,200 --epsilon 1 --mechanism exponential", 2, "points"),
    ("design hamming:100000000,3 --epsilon 1 --mechanism exponential", 2, "points"),
    ("design line:" + "9" * 3000 + " --epsilon 1 --mechanism exponential", 2, "digits"),
    # numbers
    ("design line:5 --epsilon nan --mechanism exponential", 2, "finite"),
    ("design line:5 --epsilon inf --mechanism exponential", 2, "finite"),
    ("design line:5 --epsilon -1 --mechanism exponential", 2, "epsilon"),
    ("design line:5 --epsilon abc --mechanism exponential", 2, "epsilon"),
    # types and files
    ("check {d}/complex.npy line:3 --epsilon 1", 2, "complex128"),
    ("check {d}/dt.npy line:1 --epsilon 1", 2, "datetime64"),
    ("check {d}/rec.npy line:2 --epsilon 1", 2, "expected real numbers"),
    ("leakage {d}/near.csv", 2, "--normalize"),
    ("leakage {d}/text.csv", 2, "numbers"),
    ("leakage {d}/empty.csv", 2, "empty"),
    ("leakage {d}/missing.npy", 2, "not found"),
    ("design grid:5x5:manhattan:euclidean --epsilon 1 --mechanism exponential", 2, "two metrics"),
    ("design grid:5x5:step=1:step=2 --epsilon 1 --mechanism exponential", 2, "step given twice"),
    ("design matrix:{d}/tri.csv --epsilon 1 --mechanism tight-constraints", 2, "triangle inequality"),
    ("design nonsense:5 --epsilon 1 --mechanism exponential", 2, "unknown SPACE kind"),
    ("design line:5 --epsilon 1 --mechanism nope", 2, "invalid choice"),
    ("frobnicate", 2, "invalid choice"),
    # data commands
    ("obfuscate {d}/pts.csv -o {d}/o.csv --epsilon 1", 2, "latitude 95"),
    ("obfuscate {d}/pts.csv -o {d}/o.csv", 2, "--epsilon"),
    ("query {d}/pts.csv --query sum:lat --epsilon 1", 2, "needs --bounds"),
    ("query {d}/pts.csv --query percentile:lat:0 --bounds 0,9 --epsilon 1", 2, "between 0 and 100"),
]


@pytest.mark.parametrize("cmd, status, needle", CASES, ids=[c[0][:48] for c in CASES])
def test_bad_input_is_one_line(files, cmd, status, needle):
    argv = [a.replace("{d}", str(files)) for a in cmd.split(" ")]
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", *argv], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == status, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.endswith("\n"), p.stderr
    assert needle in p.stderr, p.stderr


def test_check_exit_status_is_one_when_not_private(files):
    np.save(files / "ident.npy", np.eye(3))
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", "check", str(files / "ident.npy"), "line:3", "--epsilon", "1"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1 and "Traceback" not in p.stderr


def test_csv_channels_of_any_shape_header_bom_and_case_are_read(tmp_path):
    from dprivacy.cli import main

    cases = {"one.csv": "1\n", "row.csv": "0.5,0.5\n", "col.csv": "1\n1\n", "hdr.csv": "a,b\n0.5,0.5\n0.25,0.75\n",
             "UP.CSV": "0.5,0.5\n0.5,0.5\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert main(["leakage", str(tmp_path / name), "--json"]) == 0, name
    (tmp_path / "bom.csv").write_text("0.5,0.5\n0.5,0.5\n", encoding="utf-8-sig")
    assert main(["leakage", str(tmp_path / "bom.csv"), "--json"]) == 0


def test_graph_node_names_01_and_1_stay_distinct(tmp_path):
    from dprivacy.spaces import load_edge_list

    (tmp_path / "e.txt").write_text("01 1\n1 2\n")
    sp = load_edge_list(tmp_path / "e.txt")
    assert sp.n == 3 and set(map(str, sp.labels)) == {"01", "1", "2"}
