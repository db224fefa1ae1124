"""The command line's process settings: batch-sized arrays kept in glibc's heap
(dprivacy._system.keep_batch_arrays_in_the_heap), and pyarrow without pandas for the file commands
(dprivacy._system.pyarrow_without_pandas)."""

import os
import subprocess
import sys

import numpy as np
import pytest

CODE = """
import resource, numpy as np
from dprivacy._system import keep_batch_arrays_in_the_heap
print(int({tune} and keep_batch_arrays_in_the_heap()))
x = np.ones(1 << 17); del x
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):  # a batch's arrays, made and freed
    a = np.ones(1 << 17); b = a * 2.0; del a, b
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


def _faults(tune: bool) -> tuple[int, int]:
    # started as Dask starts its workers (MALLOC_TRIM_THRESHOLD_ set: glibc then maps every array of 128 KiB or more
    # afresh; its own defaults move that threshold with the frees, so their count depends on the allocation pattern)
    env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
    out = subprocess.run([sys.executable, "-c", CODE.format(tune=tune)], capture_output=True, text=True, check=True,
                         env=env)
    set_, faults = out.stdout.split()
    return int(set_), int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_batch_sized_arrays_are_reused_without_page_faults():
    set_, tuned = _faults(True)
    if not set_:
        pytest.skip("not glibc")
    _, untuned = _faults(False)
    # 200 × two 1 MiB arrays: mapped afresh, ≥ 256 pages each; kept in the heap, reused
    assert tuned < 5_000 < untuned


def test_the_command_line_sets_it_and_a_library_call_does_not():
    code = """
import sys
import dprivacy._system as system
calls = []
system.keep_batch_arrays_in_the_heap = lambda: calls.append(1) or True
from dprivacy.cli._process import main
sys.argv = ["dprivacy", "--version"]
for argv in ([ "--version"], None):  # in-process (argv given: the caller's allocator is its own), then as the console
    try:
        main(argv)
    except SystemExit:
        pass
    print(len(calls))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert [w for w in out.stdout.split() if w.isdigit()] == ["0", "1"]


def _faults_in_this_process() -> int:
    import resource

    import numpy as np

    x = np.ones(1 << 17)
    del x
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(200):
        a = np.ones(1 << 17)
        b = a * 2.0
        del a, b
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_dask_engines_workers_keep_batch_arrays_in_the_heap():
    """Dask gives its workers MALLOC_TRIM_THRESHOLD_=64 KiB, which maps every array of 128 KiB or more afresh; the
    LocalCluster the engine starts overrides it (dask_engine._worker_environ)."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    from dprivacy.data.dask_engine import _worker_environ

    if not _faults(True)[0]:
        pytest.skip("not glibc")
    with dask.config.set(_worker_environ()), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        faults = client.submit(_faults_in_this_process, pure=False).result()
    assert faults < 5_000


_CONSOLE = """
import sys
from dprivacy.cli import main
sys.argv = ["dprivacy", *sys.argv[1:]]
code = main()
print("PANDAS", "pandas" in sys.modules and sys.modules["pandas"] is not None)
sys.exit(code)
"""


@pytest.mark.parametrize("command", [
    ["obfuscate", "p.csv", "-o", "o.csv", "--epsilon", "1", "--seed", "5", "--key", "id"],
    ["obfuscate", "p.csv", "-o", "o.parquet", "--epsilon", "1", "--seed", "5", "--key", "id"],
    ["obfuscate", "p.parquet", "-o", "o.geojson", "--epsilon", "1", "--seed", "5", "--key", "id", "--shuffle"],
    ["query", "p.parquet", "--query", "sum:v", "--bounds", "0,10", "--epsilon", "1", "--seed", "5", "--json"],
    ["query", "p.csv", "--query", "percentile:v:50", "--bounds", "0,10", "--epsilon", "1", "--seed", "5", "--json",
     "--group-by", "g", "--keys", "a,b"],
])
def test_the_console_data_commands_load_no_pandas_and_release_the_same(tmp_path, command):
    """pyarrow imports pandas on its first conversion (0.2 s of start-up); the console process of the file commands
    makes it unavailable (_system.pyarrow_without_pandas): the release is the same as with pandas loaded."""
    pd = pytest.importorskip("pandas")
    import pyarrow.parquet as pq

    from dprivacy.cli import main

    n = 2000
    g = np.random.default_rng(0)
    frame = pd.DataFrame({"id": np.arange(n), "lat": 48 + g.random(n), "lon": 2 + g.random(n),
                          "v": g.integers(0, 10, n), "g": g.choice(["a", "b"], n), "note": ["x"] * n})
    frame.to_csv(tmp_path / "p.csv", index=False)
    pq.write_table(__import__("pyarrow").Table.from_pandas(frame, preserve_index=False), tmp_path / "p.parquet")
    out = subprocess.run([sys.executable, "-c", _CONSOLE, *command], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "False"  # pandas never loaded
    console = [(f, f.read_bytes()) for f in sorted(tmp_path.glob("o.*")) if not f.name.endswith(".json")]
    for f, _ in console:
        f.unlink()
    for f in tmp_path.glob("o.*.dprivacy.json"):
        f.unlink()
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.chdir(tmp_path), contextlib.redirect_stdout(buf):  # in-process: pandas is loaded here
        assert main(command) == 0
    if command[0] == "query":
        import json

        first = json.loads(out.stdout[:out.stdout.rindex("PANDAS")])
        assert first["answers"] == json.loads(buf.getvalue())["answers"]
    else:
        assert console and all(f.read_bytes() == data for f, data in console)
