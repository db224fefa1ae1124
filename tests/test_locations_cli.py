"""The location commands as a user runs them: refusals (one stderr line, exit 2, nothing written),
Ctrl-C during the optimal LP and on Dask (one line, exit 130, nothing at OUTPUT), what the sidecar
records (issue 11 audit). The privacy attacks found on obfuscate (--prior-from the input, the per-user budget) are
kept as tests in tests/attacks/ (issue #30)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyproj")

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _cli(*args, cwd, timeout=300):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "dprivacy.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def _interrupt_when(args, ready, *, cwd, sig=signal.SIGINT, wait: float = 120.0):
    """Run the command in its own process group and send ``sig`` to the whole group as soon as ``ready()`` holds
    (polled every 10 ms): a moment of the run itself, not a fraction of a run timed before, which a loaded machine
    made land after the end. (return code, stderr); fails if ``ready`` never held while the command ran."""
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.Popen([sys.executable, "-m", "dprivacy.cli", *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=cwd, env=env, start_new_session=True)
    t0 = time.perf_counter()
    while not ready():
        assert p.poll() is None, f"the command ended (status {p.returncode}) before the moment to interrupt it"
        assert time.perf_counter() - t0 < wait, "the moment to interrupt the command never came"
        time.sleep(0.01)
    os.killpg(p.pid, sig)
    _, err = p.communicate(timeout=120)
    return p.returncode, err


def _interrupt_after(args, seconds, *, cwd, sig=signal.SIGINT):
    """Run the command in its own process group and send ``sig`` (SIGINT: what Ctrl-C in a terminal does) to the
    whole group after ``seconds``; (return code, stderr, seconds until it ended after the signal)."""
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.Popen([sys.executable, "-m", "dprivacy.cli", *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=cwd, env=env, start_new_session=True)
    time.sleep(seconds)
    os.killpg(p.pid, sig)
    t0 = time.perf_counter()
    out, err = p.communicate(timeout=120)
    return p.returncode, err, time.perf_counter() - t0


@pytest.fixture(scope="module")
def pts(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    n = 3000
    (d / "pts.csv").write_text("user,lat,lon\n" + "".join(f"u{k % 50},{48.8 + 0.1 * a:.6f},{2.25 + 0.2 * b:.6f}\n"
                                                            for k, (a, b) in enumerate(rng.random((n, 2)))))
    return d


def _one_line(p, code=2):
    assert p.returncode == code, (p.returncode, p.stderr)
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr


def test_budget_below_one_report_is_refused(pts):
    p = _cli("obfuscate", "pts.csv", "-o", "b.csv", "--epsilon", "3", "--budget", "2", "--user", "user", cwd=pts)
    _one_line(p)
    assert "below the ε of one report" in p.stderr and not (pts / "b.csv").exists()


def test_output_equal_to_the_input_is_refused_even_with_force(pts):
    before = (pts / "pts.csv").read_bytes()
    for out in ("pts.csv", "./pts.csv", str(pts / "pts.csv")):
        p = _cli("obfuscate", "pts.csv", "-o", out, "--epsilon", "1", "--force", cwd=pts)
        _one_line(p)
        assert "is the input file" in p.stderr
    assert (pts / "pts.csv").read_bytes() == before


@pytest.mark.parametrize("eps, needle", [("1e300", "below the"), ("1e-300", "beyond half the Earth")])
def test_absurd_epsilon_is_refused_with_the_accuracy_it_implies(pts, eps, needle):
    p = _cli("obfuscate", "pts.csv", "-o", "a.csv", "--epsilon", eps, cwd=pts)
    _one_line(p)
    assert "95%" in p.stderr and needle in p.stderr and not (pts / "a.csv").exists()


def test_evaluate_does_not_overwrite_figures_without_force(pts):
    assert _cli("obfuscate", "pts.csv", "-o", "rel.csv", "--epsilon", "2", "--seed", "3", cwd=pts).returncode == 0
    (pts / "fig.png").write_bytes(b"mine")
    p = _cli("evaluate", "pts.csv", "rel.csv", "--png", "fig.png", cwd=pts)
    _one_line(p)
    assert "--force" in p.stderr and (pts / "fig.png").read_bytes() == b"mine"
    p = _cli("evaluate", "pts.csv", "rel.csv", "--png", "fig.png", "--force", "--json", cwd=pts)
    assert p.returncode == 0, p.stderr
    assert (pts / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_grid_sidecar_states_the_extent_and_the_delivered_epsilon(pts):
    p = _cli("obfuscate", "pts.csv", "-o", "g.csv", "--epsilon", "2", "--mechanism", "planar-laplace-grid", "--cell", "1km",
             "--region", "2.2,48.75,2.5,48.95", "--seed", "1", "--json", cwd=pts)
    assert p.returncode == 0, p.stderr
    side = json.loads((pts / "g.csv.dprivacy.json").read_text())
    ext = side["grid"]["grid"]["extent"]
    assert ext["cells_with_centre_outside_region"] >= 0 and "outside the lon/lat box" in side["guarantee"]
    smp = side["grid"]["sampler"]
    assert smp["delivered_epsilon"] <= 0.002 and smp["every_cell_reachable"]


def test_optimal_on_a_large_grid_is_refused_with_an_estimate(pts):
    t0 = time.perf_counter()
    p = _cli("obfuscate", "pts.csv", "-o", "o.csv", "--epsilon", "0.05", "--mechanism", "optimal", "--cell", "100km",
             "--region=-10,35,30,60", "--prior", "uniform", cwd=pts)
    _one_line(p)
    assert "1,110 cells" in p.stderr and "GB" in p.stderr and time.perf_counter() - t0 < 60


def test_ctrl_c_stops_the_optimal_linear_program(pts):
    """500 cells: the LP runs for minutes in HiGHS (C++); Ctrl-C after 3 s ends the command within a few
    seconds with one line and status 130, and nothing is written."""
    code, err, took = _interrupt_after(["obfuscate", "pts.csv", "-o", "int.csv", "--epsilon", "0.05", "--mechanism", "optimal",
                                        "--cell", "150km", "--region=-10,35,30,60", "--prior", "uniform"], 3.0, cwd=pts)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "dprivacy: interrupted" and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2  # at most one progress line before it
    assert took < 10
    assert not any(pts.glob("int.csv*")) and not any(pts.glob(".int.csv*"))


def test_ctrl_c_on_dask_gives_one_line_and_leaves_nothing(tmp_path):
    pytest.importorskip("distributed")
    n = 2_000_000
    rng = np.random.default_rng(1)
    pq.write_table(pa.table({"id": np.arange(n, dtype=np.int64), "lat": 48 + rng.random(n), "lon": 2 + rng.random(n)}),
                   tmp_path / "big.parquet", row_group_size=100_000)
    args = ["obfuscate", "big.parquet", "-o", "intd.parquet", "--epsilon", "1", "--engine", "dask", "--seed", "1", "--key", "id"]
    # Interrupted in start-up (after 0.3 s: importing Dask and starting its cluster take longer), then in the
    # computation: as soon as the first of the 20 parts is written into the temporary folder beside OUTPUT.
    def first_part_written():
        return any(d.name.startswith(".intd") and d.is_dir() and any(d.glob("part-*.parquet"))
                   for d in tmp_path.iterdir())

    for ready in (lambda: time.perf_counter() - start > 0.3, first_part_written):
        start = time.perf_counter()
        code, err = _interrupt_when(args, ready, cwd=tmp_path)
        assert code == 130, err
        # one line for the interrupt; before it, only the progress lines a run over 5 s prints off a terminal
        lines = err.splitlines()
        assert lines[-1] == "dprivacy: interrupted", err
        assert all(line.startswith("dprivacy: obfuscating: ") for line in lines[:-1]), err
        assert not any(p.name.startswith(("intd", ".intd")) for p in tmp_path.iterdir())


def test_evaluate_models_the_remap_the_release_applied(pts):
    """A tight-constraints release with --remap was evaluated as the bare mechanism (3,137 m predicted
    beside 475 km measured on world cities): the prediction now follows the release's remap."""
    grid = ["--cell", "2km", "--region", "2.2,48.7,2.5,48.95"]
    p = _cli("obfuscate", "pts.csv", "-o", "rm.csv", "--epsilon", "0.5", "--mechanism", "tight-constraints", *grid,
             "--prior", "uniform", "--remap", "--seed", "1", cwd=pts)
    assert p.returncode == 0, p.stderr
    p = _cli("evaluate", "pts.csv", "rm.csv", "--json", cwd=pts)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    m = rep["grid"]["at_release"]
    assert m["mechanism"] == "tight-constraints + distance remap" and "uniform" in m["note"]
    assert m["expected_displacement_m"] != m["expected_displacement_m_without_remap"]
    # 3,000 points: the measured mean is the model's plus the snapping inside 2 km cells
    assert 0.9 < rep["displacement_m"]["mean"] / m["expected_displacement_m"] < 1.15
    assert "grid_note" not in m
    # another grid than the release's: measured there, and said so
    p = _cli("evaluate", "pts.csv", "rm.csv", "--cell", "3km", "--json", cwd=pts)
    assert p.returncode == 0, p.stderr
    assert "not the release's (2000 m cells)" in json.loads(p.stdout)["grid"]["at_release"]["grid_note"]


def test_evaluate_refuses_one_file_for_both_figure_and_page(pts):
    assert _cli("obfuscate", "pts.csv", "-o", "same.csv", "--epsilon", "2", "--seed", "3", cwd=pts).returncode == 0
    p = _cli("evaluate", "pts.csv", "same.csv", "--png", "f.png", "--html", "./f.png", cwd=pts)
    _one_line(p)
    assert "--png and --html are both" in p.stderr and not (pts / "f.png").exists()


def test_evaluate_checks_the_release_s_sidecar(pts):
    """A release without a sidecar was evaluated without a word; a damaged one gave a bare JSON error; a
    negative ε printed a negative predicted mean; --coords contradicting the sidecar was followed."""
    assert _cli("obfuscate", "pts.csv", "-o", "s1.csv", "--epsilon", "2", "--seed", "3", cwd=pts).returncode == 0
    (pts / "s2.csv").write_bytes((pts / "s1.csv").read_bytes())
    p = _cli("evaluate", "pts.csv", "s2.csv", "--json", cwd=pts)
    assert p.returncode == 0 and "no sidecar s2.csv.dprivacy.json" in json.loads(p.stdout)["note"]
    side = json.loads((pts / "s1.csv.dprivacy.json").read_text())
    for text, needle in (("{bad", "is not valid JSON"),
                         (json.dumps({**side, "epsilon_per_metre": -1}), "epsilon_per_metre -1, expected a positive")):
        (pts / "s2.csv.dprivacy.json").write_text(text)
        p = _cli("evaluate", "pts.csv", "s2.csv", cwd=pts)
        _one_line(p)
        assert needle in p.stderr
    p = _cli("evaluate", "pts.csv", "s1.csv", "--coords", "semicircles", cwd=pts)
    _one_line(p)
    assert "says its coordinates are degrees" in p.stderr


def test_dask_with_no_workers_is_refused_at_once(tmp_path):
    pytest.importorskip("distributed")
    pq.write_table(pa.table({"lat": [48.8, 48.9], "lon": [2.3, 2.4]}), tmp_path / "p.parquet")
    for bad in ("0", "-1"):
        p = _cli("obfuscate", "p.parquet", "-o", "o.parquet", "--epsilon", "1", "--engine", "dask", "--workers", bad,
                 cwd=tmp_path)
        assert p.returncode == 2 and "--workers must be a whole number ≥ 1" in p.stderr and p.stderr.count("\n") == 1
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.parquet"]


def test_options_that_would_be_ignored_are_refused(tmp_path):
    """Found by a review: --workers without --engine dask and --mechanisms without --sweep (or with an unknown name)
    were accepted and did nothing."""
    pq.write_table(pa.table({"lat": [48.8, 48.9], "lon": [2.3, 2.4]}), tmp_path / "p.parquet")
    p = _cli("obfuscate", "p.parquet", "-o", "o.parquet", "--epsilon", "1", "--workers", "3", cwd=tmp_path)
    _one_line(p)
    assert "--workers needs --engine dask" in p.stderr and not (tmp_path / "o.parquet").exists()
    for extra, needle in ((["--mechanisms", "planar-laplace"], "give --sweep"),
                          (["--sweep", "0.5:4:3", "--mechanisms", "foo"], "expected names among")):
        p = _cli("evaluate", "p.parquet", "p.parquet", *extra, cwd=tmp_path)
        _one_line(p)
        assert needle in p.stderr


def test_sigterm_leaves_nothing_and_says_so(tmp_path):
    """Found by a review: `timeout -s TERM 3 dprivacy obfuscate big.csv ...` left a hidden .partial file."""
    n = 3_000_000
    rng = np.random.default_rng(2)
    pq.write_table(pa.table({"lat": 48 + rng.random(n), "lon": 2 + rng.random(n)}), tmp_path / "big.parquet",
                   row_group_size=100_000)
    args = ["obfuscate", "big.parquet", "-o", "out.csv", "--epsilon", "1"]
    # terminated while it writes: as soon as its hidden partial file beside out.csv has data (3,000,000 rows to go)
    def writing():
        return any(f.name.startswith(".out.csv") and f.is_file() and f.stat().st_size > 0 for f in tmp_path.iterdir())

    code, err = _interrupt_when(args, writing, cwd=tmp_path, sig=signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, err
    assert err.splitlines()[-1] == "dprivacy: terminated (signal 15)", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.parquet"]


def test_accuracy_is_refused_for_grid_mechanisms(pts):
    """Found by a review: --accuracy 20km@95% with planar-laplace-grid on 50 km cells took the continuous planar
    Laplace's ε and released with a measured 95% radius of 30.6 km, the sidecar still saying 20km@95%."""
    for mech in ("planar-laplace-grid", "tight-constraints", "optimal"):
        p = _cli("obfuscate", "pts.csv", "-o", "acc_grid.csv", "--accuracy", "20km@95%", "--mechanism", mech, "--cell", "5km",
                 "--region", "2.2,48.7,2.5,48.95", "--prior", "uniform", cwd=pts)
        _one_line(p)
        assert f"--mechanism {mech} releases cell centres" in p.stderr and not (pts / "acc_grid.csv").exists()


def test_a_signal_after_the_release_is_complete_does_not_undo_or_misreport_it(tmp_path):
    """Found by a review: a Ctrl-C while the report of a finished obfuscate was printed said "interrupted" (exit 130)
    beside a complete release and sidecar, and a SIGTERM just before exit printed a traceback and exited 0. Once the
    sidecar is written the command line lets the command finish: a first signal is noted, a second ends the process."""
    code = """
import os, signal, sys
from dprivacy.cli import app
from dprivacy.data import io
def command(argv):
    io.write_bytes_atomic(sys.argv[1], b"release")
    io.commit_sidecar(sys.argv[1], {"ok": True})          # the release is complete here
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))     # a late Ctrl-C / SIGTERM
    print("report printed")
    if sys.argv[3] == "twice":
        os.kill(os.getpid(), signal.SIGINT)
        print("not reached")
    return 0
app._main = command
from dprivacy.cli import main
sys.exit(main())
"""
    for sig in ("SIGINT", "SIGTERM"):
        out = tmp_path / f"r-{sig}.bin"
        p = subprocess.run([sys.executable, "-c", code, str(out), sig, "once"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=SRC), timeout=60)
        assert p.returncode == 0 and p.stdout == "report printed\n" and p.stderr == "", (p.returncode, p.stderr)
        assert out.read_bytes() == b"release" and Path(str(out) + ".dprivacy.json").exists()
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r2.bin"), "SIGINT", "twice"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=SRC), timeout=60)
    assert p.returncode == 128 + 2 and "not reached" not in p.stdout


def test_signals_wait_while_a_release_and_its_sidecar_are_committed(tmp_path):
    """A review paired a new ε = 50 release with the old ε = 1 sidecar by a Ctrl-C between the rename and the sidecar
    (and left a sidecar without its release by one just after it). io.signals_held blocks them over that step: the
    signal arrives when it ends. A release removed for a failed sidecar takes any sidecar at its place with it."""
    code = """
import os, signal, sys, threading, time
from dprivacy.data import io
got = []
signal.signal(signal.SIGINT, lambda *a: got.append("late"))
stop = threading.Event()
other = threading.Thread(target=stop.wait)  # a writer thread: the kernel may hand the signal to it (second review)
other.start()
with io.signals_held():
    signal.pthread_kill(other.ident, signal.SIGINT)
    time.sleep(0.2)
    got.append("inside")
got.append("after")
stop.set()
print(got)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=SRC),
                       timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "['inside', 'late', 'after']", (p.stdout, p.stderr)
    from dprivacy.data.io import remove_release, sidecar_path

    rel = tmp_path / "r.csv"
    rel.write_text("x\n")
    sidecar_path(rel).write_text("{}")  # an older release's
    remove_release(rel)
    assert not rel.exists() and not sidecar_path(rel).exists()


def test_main_called_in_process_hands_a_late_signal_back(tmp_path):
    """A review: in-process callers of main(argv) had a late Ctrl-C swallowed, and the next one ended their process by
    os._exit; the hook also acted from another thread. The late signal now reaches the caller's handler after main
    returns, and the state is reset for the next call."""
    code = """
import os, signal, sys
from dprivacy.cli import app
from dprivacy.data import io
got = []
signal.signal(signal.SIGINT, lambda *a: got.append("caller saw it"))
def command(argv):
    io.write_bytes_atomic(sys.argv[1], b"x")
    io.commit_sidecar(sys.argv[1], {})
    os.kill(os.getpid(), signal.SIGINT)
    return 0
app._main = command
from dprivacy.cli import main
for k in range(2):
    got.append(main(["obfuscate"]))
print(got, app._LATE, io.ON_COMPLETE)
"""
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.bin")], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=SRC), timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "['caller saw it', 0, 'caller saw it', 0] [] []", (p.stdout, p.stderr)
