"""Two runs writing one OUTPUT: without --force exactly one release is committed and the other run says OUTPUT exists
(leaving the winner's release and sidecar alone); with --force the last one wins, its release with its own sidecar."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyproj")

from dprivacy.data import commit, io  # noqa: E402
from dprivacy.data.locations import obfuscate_file  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _points(path: Path, n: int = 400) -> Path:
    rng = np.random.default_rng(5)
    path.write_text("id,lat,lon\n" + "".join(f"{k},{48 + a:.6f},{2 + b:.6f}\n" for k, (a, b) in enumerate(rng.random((n, 2)))))
    return path


def _reference(tmp_path: Path, src: Path, seeds) -> dict:
    """The release each seed gives alone (a seeded run is reproducible): how a release is matched to its sidecar."""
    ref = {}
    for s in seeds:
        out = tmp_path / f"ref{s}.csv"
        obfuscate_file(src, out, epsilon=1.0, rng=s)
        ref[s] = out.read_bytes()
    return ref


def _hidden(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _race(tmp_path, src, out, seeds, force):
    """Run obfuscate_file for each seed in its own thread, all of them past the existence checks (the writers made)
    before any writes; {seed: report or exception}."""
    results = {}

    def run(seed):
        try:
            results[seed] = obfuscate_file(src, out, epsilon=1.0, rng=seed, force=force)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            results[seed] = exc

    threads = [threading.Thread(target=run, args=(s,), name=f"run-{s}") for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    return results


@pytest.mark.parametrize("native", [True, False], ids=["renameat2", "link-fallback"])
def test_two_runs_without_force_commit_one_release_and_the_other_fails(tmp_path, monkeypatch, native):
    # closes: check-then-rename was not atomic; two runs on one OUTPUT both said they succeeded, one release replaced
    src = _points(tmp_path / "p.csv")
    ref = _reference(tmp_path, src, (1, 2))
    out = tmp_path / "o.csv"
    barrier = threading.Barrier(2)
    enter = io.AtomicWriter.__enter__

    def both_checked(self):  # both runs have passed every existence check before either writes
        barrier.wait(60)
        return enter(self)

    monkeypatch.setattr(io.AtomicWriter, "__enter__", both_checked)
    if not native:  # a system without renameat2: the hard-link (files) and mkdir (folders) fallbacks
        monkeypatch.setattr(commit, "_rename_noreplace", lambda src, dst: False)
    results = _race(tmp_path, src, out, (1, 2), force=False)
    won = [s for s, r in results.items() if not isinstance(r, BaseException)]
    lost = [r for r in results.values() if isinstance(r, BaseException)]
    assert len(won) == 1 and len(lost) == 1, results
    assert isinstance(lost[0], FileExistsError) and "exists" in str(lost[0])
    assert out.read_bytes() == ref[won[0]]  # the winner's release, not replaced, not removed
    side = json.loads(io.sidecar_path(out).read_text())
    assert side["random_source"]["seed"] == won[0]  # with its own sidecar
    assert _hidden(tmp_path) == []


def test_two_forced_runs_each_keep_their_release_with_their_sidecar(tmp_path, monkeypatch):
    # closes: two --force runs interleaving (release 1, release 2, sidecar 2, sidecar 1) paired release 2 with sidecar 1
    src = _points(tmp_path / "p.csv")
    ref = _reference(tmp_path, src, (1, 2))
    out = tmp_path / "o.csv"
    obfuscate_file(src, out, epsilon=1.0, rng=3)  # an older release, replaced under --force
    side_path = str(io.sidecar_path(out))
    runs = ("run-1", "run-2")
    renamed: list = []
    sidecar_done = {r: threading.Event() for r in runs}
    at_lock = {r: threading.Event() for r in runs}
    real_replace, real_flock = os.replace, fcntl.flock

    def replace(a, b, *args, **kw):
        me = threading.current_thread().name
        if me in runs and os.path.abspath(b) == side_path and renamed and renamed[0] == me:
            # the run whose release went first writes its sidecar after the other's, or once the other waits for the
            # folder (then it cannot come in between)
            other = runs[1 - runs.index(me)]
            t0 = time.monotonic()
            while not (sidecar_done[other].is_set() or at_lock[other].is_set()) and time.monotonic() - t0 < 60:
                time.sleep(0.005)
        real_replace(a, b, *args, **kw)
        if me in runs and os.path.abspath(b) == str(out):
            renamed.append(me)
        if me in runs and os.path.abspath(b) == side_path:
            sidecar_done[me].set()

    def flock(fd, op):
        me = threading.current_thread().name
        if me in runs and op == fcntl.LOCK_EX:
            at_lock[me].set()
        return real_flock(fd, op)

    barrier = threading.Barrier(2)
    enter = io.AtomicWriter.__enter__

    def both_checked(self):
        barrier.wait(60)
        return enter(self)

    monkeypatch.setattr(io.AtomicWriter, "__enter__", both_checked)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(fcntl, "flock", flock)
    results = _race(tmp_path, src, out, (1, 2), force=True)
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    seed = json.loads(Path(side_path).read_text())["random_source"]["seed"]
    assert seed in (1, 2) and out.read_bytes() == ref[seed], "the release and the sidecar come from different runs"
    assert _hidden(tmp_path) == []


_CLI_RACE = r"""
import sys, time
from pathlib import Path
from dprivacy.cli import app
from dprivacy.data import io
me, other = Path(sys.argv[1]), Path(sys.argv[2])
enter = io.AtomicWriter.__enter__
def both_checked(self):  # both processes have passed every existence check before either writes
    me.touch()
    t0 = time.monotonic()
    while not other.exists() and time.monotonic() - t0 < 60:
        time.sleep(0.01)
    return enter(self)
io.AtomicWriter.__enter__ = both_checked
sys.argv = ["dprivacy", *sys.argv[3:]]
from dprivacy.cli import main
sys.exit(main())
"""


def test_two_commands_on_one_output_exit_0_and_2(tmp_path):
    # closes: `dprivacy obfuscate ... -o OUT` run twice at once exited 0 twice, one release silently replaced
    src = _points(tmp_path / "p.csv")
    env = dict(os.environ, PYTHONPATH=SRC)
    procs = {}
    for s, (a, b) in ((1, ("r1", "r2")), (2, ("r2", "r1"))):
        procs[s] = subprocess.Popen([sys.executable, "-c", _CLI_RACE, str(tmp_path / a), str(tmp_path / b), "obfuscate",
                                     "p.csv", "-o", "o.csv", "--epsilon", "1", "--seed", str(s), "--json"], cwd=tmp_path,
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = {s: (p.communicate(timeout=300), p.returncode) for s, p in procs.items()}
    codes = sorted(code for _, code in done.values())
    assert codes == [0, 2], done
    winner = next(s for s, (_, code) in done.items() if code == 0)
    (_, err), _ = next(v for v in done.values() if v[1] == 2)
    assert "Traceback" not in err and "o.csv exists" in err.strip().splitlines()[-1], err
    side = json.loads((tmp_path / "o.csv.dprivacy.json").read_text())
    assert side["random_source"]["seed"] == winner
    ref = _reference(tmp_path, src, (winner,))
    assert (tmp_path / "o.csv").read_bytes() == ref[winner]
    assert _hidden(tmp_path) == []


def test_a_dask_release_is_not_moved_onto_a_folder_made_meanwhile(tmp_path, monkeypatch):
    # closes: a folder renamed onto an empty folder replaces it: the Dask engine's release took OUTPUT made meanwhile
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprivacy.data import locations
    from dprivacy.data.dask_engine import obfuscate_dask

    rng = np.random.default_rng(1)
    pq.write_table(pa.table({"id": np.arange(200), "lat": 48 + rng.random(200), "lon": 2 + rng.random(200)}),
                   tmp_path / "p.parquet")
    out = tmp_path / "d.parquet"
    prepare = locations.prepare_obfuscation

    def other_run_made_output(*a, **kw):  # after the existence checks: another run's OUTPUT appears
        out.mkdir()
        return prepare(*a, **kw)

    monkeypatch.setattr(locations, "prepare_obfuscation", other_run_made_output)
    with pytest.raises(FileExistsError, match="d.parquet exists"):
        obfuscate_dask(tmp_path / "p.parquet", out, workers=1, epsilon=1.0)
    assert out.is_dir() and list(out.iterdir()) == []  # left as it was
    assert not io.sidecar_path(out).exists() and _hidden(tmp_path) == []
