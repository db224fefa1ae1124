"""The command line's process from its first instruction: Ctrl-C (SIGINT) says ``dprivacy: interrupted`` and exits
130, SIGTERM ``dprivacy: terminated (signal 15)`` and 143, whenever they come — while the modules load, during the
work — with no traceback, no release and no hidden file left; signals that C code swallows still stop the command."""

from __future__ import annotations

import os
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

SRC = str(Path(__file__).resolve().parents[2] / "src")
ENV = dict(os.environ, PYTHONPATH=SRC)


def _commands() -> list:
    """``python -m dprivacy.cli`` and, when installed beside this interpreter, the console script ``dprivacy``."""
    out = [[sys.executable, "-m", "dprivacy.cli"]]
    script = Path(sys.executable).parent / "dprivacy"
    if script.exists():
        out.append([str(script)])
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Twenty million points: the obfuscation runs for several seconds, past the last signal of the test (six million
    took under 1.5 s once the geodesic step was 5× faster)."""
    d = tmp_path_factory.mktemp("process")
    rng = np.random.default_rng(7)
    n = 20_000_000
    pq.write_table(pa.table({"lat": 48 + rng.random(n), "lon": 2 + rng.random(n)}), d / "big.parquet",
                   row_group_size=250_000)
    return d


def _signal_after(cmd, seconds, sig, cwd):
    p = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    time.sleep(seconds)
    os.killpg(p.pid, sig)  # the whole group, as Ctrl-C in a terminal
    _, err = p.communicate(timeout=120)
    return p.returncode, err


@pytest.mark.parametrize("sig, at", [(signal.SIGINT, 0.1), (signal.SIGINT, 0.3), (signal.SIGINT, 0.7),
                                     (signal.SIGINT, 1.5), (signal.SIGTERM, 0.1), (signal.SIGTERM, 0.3),
                                     (signal.SIGTERM, 0.7), (signal.SIGTERM, 1.5)])
def test_a_signal_at_any_moment_of_a_release_stops_it_in_one_line(big, sig, at):
    # closes: a signal while the modules loaded ended with a traceback (KeyboardInterrupt) or killed the process (SIGTERM
    # before the handler), or was swallowed by C code (pyarrow's import of pandas: the release was written, exit 0)
    want = (130, "dprivacy: interrupted") if sig == signal.SIGINT else (143, "dprivacy: terminated (signal 15)")
    for cmd in _commands():
        code, err = _signal_after([*cmd, "obfuscate", "big.parquet", "-o", "out.csv", "--epsilon", "1"], at, sig, big)
        assert (code, err.strip().splitlines()[-1] if err.strip() else "") == want, (cmd, err)
        assert "Traceback" not in err, err
        assert sorted(p.name for p in big.iterdir()) == ["big.parquet"]  # no release, no sidecar, no hidden file


def test_the_command_line_loads_nothing_heavy_before_its_handlers(tmp_path):
    # closes: `dprivacy --version` and the console script's import of dprivacy.cli loaded numpy (and argparse) before
    # any handler was installed: 0.15 s in which a signal met Python's default handling
    code = ("import sys, dprivacy.cli\n"
            "print(sorted(m for m in ('argparse', 'numpy', 'pyarrow', 'duckdb', 'scipy') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr
    for cmd in _commands():
        p = subprocess.run([*cmd, "--version"], capture_output=True, text=True, env=dict(ENV, PYTHONPROFILEIMPORTTIME="1"),
                           timeout=60)
        assert p.returncode == 0 and "dprivacy" in p.stdout
        loaded = {line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
        assert not loaded & {"numpy", "pyarrow", "duckdb", "scipy"}, sorted(loaded & {"numpy", "pyarrow", "duckdb"})


_SIGNAL_IN_AN_IMPORT = r"""
import os, signal, sys
import importlib.abc
target, sig = sys.argv[1], getattr(signal, sys.argv[2])
class SignalWhenImported(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target_=None):
        if name == target and not getattr(self, "done", False):
            self.done = True
            os.kill(os.getpid(), sig)  # the signal arrives just as the module starts loading
        return None
sys.meta_path.insert(0, SignalWhenImported())
from dprivacy.cli import main
sys.argv = ["dprivacy", *sys.argv[3:]]
sys.exit(main())
"""


@pytest.mark.parametrize("module", ["datetime", "numpy"])
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_while_a_library_loads_is_an_interrupt(tmp_path, module, sig):
    # closes: numpy's C extension imports datetime with PyCapsule_Import, which turned the interrupt into "internal error
    # (ImportError)"; numpy loaded with dprivacy.cli, before any handler (a traceback)
    pytest.importorskip(module)
    (tmp_path / "p.csv").write_text("lat,lon\n" + "".join(f"{48 + k / 1e3:.4f},{2 + k / 1e3:.4f}\n" for k in range(300)))
    p = subprocess.run([sys.executable, "-c", _SIGNAL_IN_AN_IMPORT, module, sig, "obfuscate", "p.csv", "-o", "out.csv",
                        "--epsilon", "1"], capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=120)
    want = (130, "dprivacy: interrupted") if sig == "SIGINT" else (143, "dprivacy: terminated (signal 15)")
    assert (p.returncode, p.stderr.strip().splitlines()[-1]) == want, p.stderr
    assert "Traceback" not in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.csv"]


_SWALLOWED = r"""
import os, signal, sys
from dprivacy.cli import app
from dprivacy.data.locations import obfuscate_file
def command(argv):
    try:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, caught by some C code that goes on
    except KeyboardInterrupt:
        pass
    obfuscate_file("p.csv", "out.csv", epsilon=1.0)
    print("released")
    return 0
app._main = command
sys.argv = ["dprivacy"]
from dprivacy.cli import main
sys.exit(main())
"""


def test_a_swallowed_interrupt_still_keeps_the_release_from_being_committed(tmp_path):
    # closes: a Ctrl-C that C code caught let the command write its release and exit 0
    (tmp_path / "p.csv").write_text("lat,lon\n" + "".join(f"{48 + k / 1e3:.4f},{2 + k / 1e3:.4f}\n" for k in range(300)))
    p = subprocess.run([sys.executable, "-c", _SWALLOWED], capture_output=True, text=True, env=ENV, cwd=tmp_path,
                       timeout=120)
    assert (p.returncode, p.stderr.strip().splitlines()[-1]) == (130, "dprivacy: interrupted"), p.stderr
    assert "released" not in p.stdout and sorted(x.name for x in tmp_path.iterdir()) == ["p.csv"]


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_a_linear_program_stops_design(sig, code):
    """HiGHS holds the GIL for the whole solve: `design --mechanism optimal` solves in a child process, so that a stop
    signal ends the command with its one line instead of when HiGHS returns (a spanner LP on grid:30x30 ignored
    `timeout`'s SIGTERM for minutes)."""
    p = subprocess.Popen([sys.executable, "-m", "dprivacy.cli", "design", "grid:30x30", "--epsilon", "1", "--mechanism",
                          "optimal", "--method", "spanner", "--time-limit", "600"], env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(4)  # into the solve (or still loading: also a stop)
    p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=120)  # the solve alone runs for minutes
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"design went on solving after signal {sig!r}")
    assert p.returncode == code, err
    assert "Traceback" not in err and ("terminated" in err or "interrupted" in err)
