"""Inputs that are not regular files — a FIFO, a device, a folder — are refused before they are opened, by the library
(every function that reads a file) and so by every command: one line, exit 2, nothing written. A FIFO input used to
wait for a writer for ever."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def files(tmp_path):
    (tmp_path / "pts.csv").write_text("lat,lon\n" + "".join(f"{48 + k / 100:.4f},{2 + k / 90:.4f}\n" for k in range(50)))
    (tmp_path / "t.csv").write_text("g,v\n" + "".join(f"{'ab'[k % 2]},{k}\n" for k in range(50)))
    os.mkfifo(tmp_path / "fifo.csv")
    os.mkfifo(tmp_path / "fifo.npy")
    return tmp_path


@contextlib.contextmanager
def _never_hangs(fifo: Path, after: float = 3.0):
    """A FIFO that a reader stuck on it gets out of (a writer opens and closes it after ``after`` s): a test of a
    refusal then fails instead of hanging when the code reads the FIFO after all. A block that ends first wakes the
    writer at once (it slept its whole ``after`` seconds each time: 45 s of waiting in one test)."""
    done = threading.Event()

    def writer():
        done.wait(after)
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY))  # blocks until a reader opens it: the code under test, or the clean-up

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        yield
    finally:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # releases the writer if nothing read the FIFO
        done.set()
        t.join(after + 10)
        os.close(fd)


def _cli(args, cwd):
    return subprocess.run([sys.executable, "-m", "dprivacy.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=SRC), timeout=120)


@pytest.mark.parametrize("args, what", [
    (["obfuscate", "fifo.csv", "-o", "out.csv", "--epsilon", "1"], "input file fifo.csv"),
    (["obfuscate", "pts.csv", "-o", "out.csv", "--epsilon", "1", "--mechanism", "planar-laplace-grid", "--cell", "5km",
      "--region", "1.9,47.9,3,48.6", "--remap", "--prior-from", "fifo.csv"], "--prior-from file fifo.csv"),
    (["obfuscate", "pts.csv", "-o", "out.csv", "--epsilon", "1", "--mechanism", "planar-laplace-grid", "--cell", "5km",
      "--region", "1.9,47.9,3,48.6", "--remap", "--prior", "fifo.npy"], "prior file fifo.npy"),
    (["series", "fifo.csv", "-o", "out.csv", "--column", "v", "--epsilon", "1"], "input file fifo.csv"),
    (["query", "fifo.csv", "--query", "count", "--epsilon", "1"], "table fifo.csv"),
    (["query", "fifo.csv", "--query", "count", "--epsilon", "1", "--budget", "2", "--budget-file", "led.json"],
     "table fifo.csv"),
    (["query", "t.csv", "--query", "count", "--epsilon", "1", "--group-by", "g", "--keys", "@fifo.csv"],
     "--keys file fifo.csv"),
    (["evaluate", "fifo.csv", "pts.csv"], "input file fifo.csv"),
    (["evaluate", "pts.csv", "fifo.csv"], "input file fifo.csv"),
])
def test_a_fifo_given_to_a_command_is_refused_at_once(files, args, what):
    # closes: a FIFO (or `<(...)`) as input waited for a writer for ever; the commands read their input twice
    with _never_hangs(files / "fifo.csv"), _never_hangs(files / "fifo.npy"):
        p = _cli(args, files)
    assert p.returncode == 2, (p.returncode, p.stderr)
    last = p.stderr.strip().splitlines()[-1]
    assert "Traceback" not in p.stderr and what in last and "FIFO" in last, p.stderr
    assert not (files / "out.csv").exists() and not (files / "led.json").exists()
    assert sorted(x.name for x in files.iterdir() if x.name.startswith(".")) == []


def test_a_release_whose_sidecar_is_a_fifo_is_refused_by_evaluate(files):
    # closes: evaluate read OUTPUT.dprivacy.json without looking at what it is: a FIFO there hung it
    (files / "rel.csv").write_bytes((files / "pts.csv").read_bytes())
    os.mkfifo(files / "rel.csv.dprivacy.json")
    with _never_hangs(files / "rel.csv.dprivacy.json"):
        p = _cli(["evaluate", "pts.csv", "rel.csv"], files)
    assert p.returncode == 2 and "sidecar" in p.stderr.strip().splitlines()[-1] and "FIFO" in p.stderr, p.stderr


def test_the_library_refuses_what_is_not_a_regular_file(files):
    # closes: the Python API read FIFOs and devices too (the command line's checks were not the library's)
    from dprivacy.data.budget import charge
    from dprivacy.data.io import read_batches
    from dprivacy.data.locations import obfuscate_file
    from dprivacy.data.series import release_series
    from dprivacy.data.tables import parse_query, run_query

    fifo = files / "fifo.csv"
    (files / "dir.csv").mkdir()
    calls = {
        "read_batches": lambda p: read_batches(p),
        "obfuscate_file": lambda p: obfuscate_file(p, files / "out.csv", epsilon=1.0),
        "release_series": lambda p: release_series(p, files / "out.csv", column="v", epsilon=1.0),
        "run_query": lambda p: run_query(str(p), parse_query("count"), epsilon=1.0),
        "charge": lambda p: charge(files / "led.json", str(p), epsilon=1.0, budget=2.0, what="count",
                                   run=lambda: run_query(str(p), parse_query("count"), epsilon=1.0)),
    }
    for name, call in calls.items():
        for bad, says in ((fifo, "FIFO"), (Path("/dev/zero"), "character device"), (files / "dir.csv", "folder")):
            with _never_hangs(fifo):
                with pytest.raises(ValueError, match=says):
                    call(bad)
        assert not (files / "out.csv").exists() and not (files / "led.json").exists(), name


def test_a_ledger_lock_that_is_a_fifo_is_refused(files):
    # closes: a ledger lock that is a FIFO failed with "File or stream is not seekable", naming no file
    from dprivacy.data.budget import charge

    os.mkfifo(files / "led.json.lock")
    with _never_hangs(files / "led.json.lock"):
        with pytest.raises(ValueError, match="lock .* is not a regular file"):
            charge(files / "led.json", str(files / "t.csv"), epsilon=1.0, budget=2.0, what="count")
    assert not (files / "led.json").exists()
