"""Under a memory limit (``ulimit -v``) a command that cannot load or allocate says that memory ran out, in one line,
exit 2, nothing written; a query's failure for memory is charged to its ledger like its answer (it may depend on the
rows)."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyproj")

SRC = str(Path(__file__).resolve().parents[2] / "src")
MB = 2**20


def _under_limit(args, limit_bytes, cwd, env=None):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "dprivacy.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(env or os.environ, PYTHONPATH=SRC), preexec_fn=limit, timeout=300)


def _says_memory(p) -> str:
    assert p.returncode == 2, (p.returncode, p.stderr)
    last = p.stderr.strip().splitlines()[-1]
    assert "Traceback" not in p.stderr and "internal error" not in last, p.stderr
    assert re.match(r"dprivacy( [a-z-]+)?: error: ", last) and "memory" in last.lower(), p.stderr
    return last


def test_design_is_planned_within_the_address_space_limit(tmp_path):
    # closes: the memory guards planned on the machine's RAM; under ulimit -v the command died with numpy's "Unable to
    # allocate 275 MiB for an array ..." (no word of memory) or in OpenBLAS
    p = _under_limit(["design", "line:6000", "--epsilon", "1", "--mechanism", "exponential"], 1024 * MB, tmp_path)
    last = _says_memory(p)
    assert "ulimit -v" in last


def test_an_obfuscation_that_runs_out_of_memory_says_so_and_leaves_nothing(tmp_path):
    # closes: under ulimit -v pyarrow's failed allocation was reported as "a damaged, truncated or mislabelled file?",
    # numpy's as "Unable to allocate ..." (here: a grid of 3.3 million cells at 600 MB)
    rng = np.random.default_rng(4)
    (tmp_path / "p.csv").write_text("lat,lon\n" + "".join(f"{40 + 15 * a:.5f},{-5 + 30 * b:.5f}\n"
                                                          for a, b in rng.random((2000, 2))))
    p = _under_limit(["obfuscate", "p.csv", "-o", "out.csv", "--epsilon", "1", "--mechanism", "planar-laplace-grid",
                      "--cell", "1800m", "--region=-10,35,30,60"], 600 * MB, tmp_path)
    _says_memory(p)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.csv"]


def test_blas_gets_one_thread_under_a_limit_unless_the_user_chose(tmp_path):
    # closes: OpenBLAS reserved ~41 MB of address space per core when numpy loaded and, over the limit, ended the
    # process from C ("pthread_create failed", "Memory allocation still failed after 10 retries") before any message
    code = ("import json, sys\nfrom dprivacy._system import one_blas_thread_under_a_limit as f\n"
            "env = json.loads(sys.argv[1]); print(json.dumps([f(env), env]))")
    for given, want in (({}, [True, {"OPENBLAS_NUM_THREADS": "1"}]),
                        ({"OMP_NUM_THREADS": "4"}, [False, {"OMP_NUM_THREADS": "4"}]),
                        ({"OPENBLAS_NUM_THREADS": "3"}, [False, {"OPENBLAS_NUM_THREADS": "3"}])):
        p = subprocess.run([sys.executable, "-c", code, json.dumps(given)], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=SRC),
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (4096 * MB, 4096 * MB)))
        assert p.returncode == 0 and json.loads(p.stdout) == want, p.stderr
    p = subprocess.run([sys.executable, "-c", code, "{}"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=SRC))
    assert json.loads(p.stdout) == [False, {}]  # no limit: OpenBLAS as the system has it


def test_a_query_that_runs_out_of_memory_is_charged(tmp_path):
    # closes: a query that ran out of memory while reading the rows cost nothing: a free failure that may depend on them
    from dprivacy.data.budget import charge
    from dprivacy.data.tables import ScanFailed

    t = tmp_path / "t.csv"
    t.write_text("v\n1\n2\n")
    led = tmp_path / "led.json"

    def run():
        raise MemoryError("Unable to allocate 1.2 GiB for an array")

    with pytest.raises(ScanFailed, match=r"memory ran out .*ε = 0.5 charged"):
        charge(led, str(t), epsilon=0.5, budget=1.0, what="sum:v", run=run)
    entry = next(iter(json.loads(led.read_text()).values()))
    assert entry["spent"] == 0.5 and entry["queries"][0]["failed"] is True
