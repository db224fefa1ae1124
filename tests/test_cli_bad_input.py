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
    np.save(d / "tg.npy", np.full((6, 6), 1 / 6))
    return d


CASES = [
    # sizes: refused before building
    ("design line:100000 --epsilon 1 --mechanism exponential", 2, "over the memory limit of 8.0 GiB"),
    ("design clique:60000 --epsilon 1 --mechanism randomized-response", 2, "over the memory limit"),
    ("design grid:200x200 --epsilon 1 --mechanism planar-laplace", 2, "12 dense 40,000x40,000 arrays"),
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
    # the whole pipeline's memory, estimated from the size before anything is built (the audit: SIGKILL
    # at 6.3 GB, 7.8 GB, std::bad_alloc at 7.4 GB, "Unable to allocate", 74.5 GiB, > 30 s at 5.4 GB)
    ("design line:20000 --epsilon 1 --mechanism optimal", 2, "needs about 24.0 GiB at its peak"),
    ("design clique:20000 --epsilon 1 --mechanism tight-constraints", 2, "over the memory limit of 8.0 GiB"),
    ("design line:3000 --epsilon 1 --mechanism optimal --method full", 2, "linear program of 17,994,000 privacy constraints"),
    ("threshold grid:10000x10000", 2, "limited to 4,000,000 cells"),
    ("design grid:3000x3000 --epsilon 1 --mechanism tight-constraints", 2, "limited to 4,000,000 cells"),
    ("check {d}/tg.npy grid:100000x100000 --epsilon 1", 2, "has 6 rows but grid:100000x100000 has 10,000,000,000 points"),
    ("check {d}/tg.npy line:6 --epsilon 1e308", 2, "--epsilon 1e+308 times the largest distance"),
    ("prior grid:3000x3000 --epsilon 1 --prior uniform", 2, "the regularity test on a grid is limited to 4,000,000 cells"),
    ("prior line:30000 --epsilon 1 --prior uniform", 2, "the regularity test on line:30000"),
    # numbers
    ("design line:5 --epsilon nan --mechanism exponential", 2, "finite"),
    ("design line:5 --epsilon inf --mechanism exponential", 2, "finite"),
    ("design line:5 --epsilon -1 --mechanism exponential", 2, "epsilon"),
    ("design line:5 --epsilon abc --mechanism exponential", 2, "epsilon"),
    ("design line:5 --epsilon 1e308 --mechanism exponential", 2, "--epsilon 1e+308 times the largest distance of line:5 (4)"),
    ("design grid:5x5:step=1e300 --epsilon 1e300 --mechanism exponential", 2, "expected --epsilon at most"),
    ("design line:5 --epsilon １ --mechanism exponential", 2, "ASCII digits"),
    ("design line:５ --epsilon 1 --mechanism exponential", 2, "ASCII digits 0-9"),
    ("design grid:５x５ --epsilon 1 --mechanism exponential", 2, "ASCII digits 0-9"),
    ("design grid:5x5:step=１ --epsilon 1 --mechanism exponential", 2, "ASCII digits"),
    ("design graph:{d} --epsilon 1 --mechanism exponential", 2, "is a folder, expected a text file"),
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
    ("design grid:3x3 --epsilon 1 --mechanism optimal --dilation nan", 2, "--dilation applies to --method spanner"),
    ("design grid:3x3 --epsilon 1 --mechanism optimal --method spanner --dilation 0.5", 2, "must be a number ≥ 1"),
    ("design grid:4x4:chebyshev --epsilon 1 --mechanism planar-laplace", 2, "not ε·d-private on a chebyshev grid"),
    # data commands
    ("obfuscate {d}/pts.csv -o {d}/o.csv --epsilon 1", 2, "out-of-range coordinate"),
    ("obfuscate {d}/pts.csv -o {d}/o.csv --epsilon 1 --owner", 2, "latitude 95"),
    ("obfuscate {d}/pts.csv -o {d}/o.csv", 2, "--epsilon"),
    ("query {d}/pts.csv --query sum:lat --epsilon 1", 2, "needs --bounds"),
    ("query {d}/pts.csv --query percentile:lat:0 --bounds 0,9 --epsilon 1", 2, "between 0 and 100"),
    ("query {d}/pts.csv --query count --epsilon 1 --where 1=1~GROUP~BY~name~--", 2, "bad --where"),
    ("query {d}/pts.csv --query count --epsilon 1 --where lat>1;SELECT~1", 2, "bad --where"),
    ("query {d}/pts.csv --query count --epsilon 1 --where EXISTS~(SELECT~1~FROM~read_csv_auto('/etc/passwd'))", 2, "subquery"),
    ("query {d}/pts.csv --query count --epsilon 1 --prior /nonexistent.npy", 2, "--prior is used only by"),
    ("query {d}/pts.csv --query percentile:lat:50 --bounds 0,90 --epsilon 1 --mechanism tight-constraints", 2, "not a path"),
    ("query {d}/pts.csv --query sum:lat --bounds 0,90 --epsilon 1 --mechanism tight-constraints", 2, "threshold ε* = 4.05"),
]


@pytest.mark.parametrize("cmd, status, needle", CASES, ids=[c[0][:48] for c in CASES])
def test_bad_input_is_one_line(files, cmd, status, needle):
    argv = [a.replace("{d}", str(files)).replace("~", " ") for a in cmd.split(" ")]  # ~: a space inside one argument
    # the memory guards compare with a fixed limit here, so the refusals do not depend on the machine
    env = dict(os.environ, PYTHONPATH=SRC, DPRIVACY_MEMORY_LIMIT="8G")
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


@pytest.mark.parametrize("argv, needle", [
    (["design", "line:5", "--epsilon", "1", "--mechanism", "exponential", "--save", ""], "--save needs a file path"),
    (["design", "line: 5", "--epsilon", "1", "--mechanism", "exponential"], "no spaces"),
    (["design", "line:5", "--epsilon", "1", "--mechanism", "geometric"], "invalid choice"),
])
def test_bad_input_with_odd_characters_is_one_line(argv, needle):
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", *argv], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1 and needle in p.stderr, p.stderr


def test_save_into_a_folder_is_refused_before_any_work(tmp_path):
    from dprivacy.cli import main

    assert main(["design", "line:5", "--epsilon", "1", "--mechanism", "exponential", "--save", str(tmp_path)]) == 2
    assert main(["design", "line:5", "--epsilon", "1", "--mechanism", "exponential", "--save",
                 str(tmp_path / "no" / "x.npy")]) == 2


def test_memory_limit_is_a_fraction_of_physical_memory_or_the_environment(monkeypatch):
    from dprivacy.cli import guards

    monkeypatch.delenv("DPRIVACY_MEMORY_LIMIT", raising=False)
    limit, how = guards.memory_limit()
    phys = guards.physical_memory()
    if phys is not None:
        assert limit == int(guards.MEMORY_FRACTION * phys) and "of RAM" in how
    monkeypatch.setenv("DPRIVACY_MEMORY_LIMIT", "1.5G")
    assert guards.memory_limit()[0] == int(1.5 * 2**30)
    monkeypatch.setenv("DPRIVACY_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="DPRIVACY_MEMORY_LIMIT"):
        guards.memory_limit()


def test_spec_sizes_are_read_without_building_the_space():
    from dprivacy.cli.guards import spec_points

    assert spec_points("grid:100000x100000") == (1e10, True)
    assert spec_points("line:7") == (7.0, False) and spec_points("count:7") == (8.0, False)
    assert spec_points("hamming:3,4") == (64.0, False) and spec_points("sum:10,5") == (51.0, True)
    assert spec_points("hamming:2000,2")[0] == float("inf") or spec_points("hamming:2000,2")[0] > 1e300
    assert spec_points("matrix:x.npy") is None and spec_points("graph:e.txt") is None


def test_reproduce_help_lists_the_experiment_ids():
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", "reproduce", "--help"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0 and "experiment ids" in p.stdout
    from dprivacy.experiments.registry import load_all

    for exp_id in load_all():
        assert exp_id in p.stdout


def test_a_reader_closing_the_pipe_is_not_reported_as_an_error(capsys, monkeypatch, tmp_path):
    # `dprivacy ... --json | head -c 100`: the write fails with BrokenPipeError once head has exited
    import sys

    from dprivacy.cli import main

    class Closed:
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    code = main(["design", "line:6", "--epsilon", "1", "--mechanism", "truncated-geometric", "--json"])
    assert code == 141  # SIGPIPE's status: not 1, which for `check` means "not private"
    assert capsys.readouterr().err == ""
    # and the tables printed for people (rich's own handler exited with 1)
    assert main(["design", "line:6", "--epsilon", "1", "--mechanism", "truncated-geometric"]) == 141
    table = tmp_path / "t.csv"
    table.write_text("v\n1\n2\n")
    assert main(["query", str(table), "--query", "count", "--epsilon", "1"]) == 141


@pytest.mark.parametrize("argv", [
    ["design", "graph:/dev/zero", "--epsilon", "1", "--mechanism", "tight-constraints"],
    ["prior", "line:5", "--epsilon", "1", "--prior", "{z}"],
    ["check", "{z}", "line:5", "--epsilon", "1"],
    ["leakage", "{z}"],
    ["design", "matrix:{z}", "--epsilon", "1", "--mechanism", "exponential"],
])
def test_a_device_given_as_a_file_is_refused_before_reading(tmp_path, capsys, argv):
    """graph:/dev/zero grew to 24 GB before the OOM killer stopped it; a prior, channel or matrix that is a
    symlink to /dev/zero ran out of memory ("MemoryError")."""
    from dprivacy.cli import main

    z = tmp_path / "z.csv"
    z.symlink_to("/dev/zero")
    code = main([a.replace("{z}", str(z)) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not a regular file" in err


@pytest.mark.parametrize("argv, says", [
    (["design", "sum:0,5", "--epsilon", "1", "--mechanism", "tight-constraints"], "bad SPACE spec 'sum:0,5': u must be"),
    (["design", "line:5", "--epsilon", "1e-400", "--mechanism", "tight-constraints"], "below the smallest positive float64"),
    (["prior", "line:5", "--epsilon", "1", "--prior", ""], "--prior needs a file"),
])
def test_messages_name_what_was_wrong(capsys, argv, says):
    """Found by a new-user check: 'u must be >= 1' without the spec, 'epsilon must be > 0, got 0.0' for 1e-400, and
    'prior path . is a directory' for an empty --prior."""
    from dprivacy.cli import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and says in err, err


def test_empty_paths_header_only_files_and_the_prior_keyword_are_named(tmp_path):
    """Found by a review: an empty path was read as '.' ('path . is a directory'); '1/3,1/3,1/3' was taken for a
    header and the file called empty; --prior UNIFORM said 'file not found'."""
    import pytest as _pytest

    from dprivacy.spaces import load_array, load_edge_list

    with _pytest.raises(ValueError, match="path is empty"):
        load_array("", "prior")
    with _pytest.raises(ValueError, match="edge list path is empty"):
        load_edge_list("")
    (tmp_path / "f.csv").write_text("1/3,1/3,1/3\n")
    with _pytest.raises(ValueError, match="does not hold numbers .*'1/3'"):
        load_array(tmp_path / "f.csv", "prior")
    (tmp_path / "h.csv").write_text("a,b,c\n")
    with _pytest.raises(ValueError, match="header line only"):
        load_array(tmp_path / "h.csv", "prior")
    (tmp_path / "h2.csv").write_text("a,b,c\n0.2,0.3,0.5\n")
    assert load_array(tmp_path / "h2.csv", "prior").tolist() == [0.2, 0.3, 0.5]
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", "prior", "line:3", "--epsilon", "1", "--prior", "UNIFORM"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "the keyword is 'uniform'" in p.stderr and p.stderr.count("\n") == 1


def test_library_refusals_name_sizes_and_missing_priors():
    """Found by a review: spaces.line(10**9) failed with numpy's "Unable to allocate 6.94 EiB", hamming:30,10 printed a
    52-digit GiB figure, and a missing prior said "prior must be 1-D, got an array of shape ()"."""
    import pytest

    from dprivacy import spaces
    from dprivacy.mechanisms.optimal import optimal_mechanism

    with pytest.raises(MemoryError, match=r"line:1000000000 needs a dense 1,000,000,000x1,000,000,000 float64 matrix \(7.45e\+09 GiB\)"):
        spaces.line(10**9)
    with pytest.raises(MemoryError, match=r"\(7.45e\+51 GiB\)"):
        spaces.hamming(30, 10)
    with pytest.raises(TypeError, match="prior is required"):
        optimal_mechanism(spaces.line(3), None, epsilon=1.0)


def test_an_unknown_option_is_refused_with_the_commands_name(tmp_path, capsys):
    from dprivacy.cli import main

    (tmp_path / "m.csv").write_text("time,kwh\n2010-01-01 00:00,1\n")
    assert main(["series", str(tmp_path / "m.csv"), "-o", str(tmp_path / "o.csv"), "--column", "kwh", "--epsilon", "1",
                 "--bounds", "0,5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dprivacy series: error: unrecognized arguments: --bounds 0,5"]
    assert not (tmp_path / "o.csv").exists()
