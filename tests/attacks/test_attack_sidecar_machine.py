"""The sidecar travels with the release: it names the input by its file name only and says nothing of the owner's
machine — no folder, user name, host name, working directory, scheduler address or run time."""

from __future__ import annotations

import getpass
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyproj")

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _cli(args, cwd):
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                       env=dict(os.environ, PYTHONPATH=SRC), timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def _strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


def _machine_words() -> list:
    return [w for w in {getpass.getuser(), socket.gethostname()} if w]


def _owners_folder(tmp_path: Path) -> Path:
    """A folder whose name holds the user and host names, as a home folder's does."""
    d = tmp_path / ("home-" + "-".join(_machine_words()))
    d.mkdir()
    return d


def _says_nothing_of_the_machine(side: dict, folder: Path) -> None:
    text = json.dumps(side, ensure_ascii=False)
    assert str(folder) not in text and folder.name not in text and os.getcwd() not in text
    assert not any(s.startswith(("/", "~")) or os.sep + folder.parent.name in s for s in _strings(side))
    assert "seconds" not in side  # the run time: the owner's machine and its load


def _points(path: Path) -> None:
    rng = np.random.default_rng(3)
    path.write_text("id,lat,lon\n" + "".join(f"{k},{48 + a:.5f},{2 + b:.5f}\n" for k, (a, b) in enumerate(rng.random((300, 2)))))


def test_an_obfuscate_sidecar_is_the_same_wherever_and_by_whomever_it_was_made(tmp_path):
    # closes: the sidecar named the input and the prior by the paths given (/home/USER/..., the working directory)
    home = _owners_folder(tmp_path)
    here = tmp_path / "here"
    here.mkdir()
    for d in (home, here):
        _points(d / "pts.csv")
        np.save(d / "prior.npy", np.ones(3 * 5))  # one weight per cell of the 3×5 grid
    grid = ["--mechanism", "planar-laplace-grid", "--cell", "25km", "--region", "2,48,3,49", "--remap", "--seed", "1"]
    _cli(["obfuscate", "pts.csv", "-o", "out.csv", "--epsilon", "1", "--prior", "prior.npy", *grid], here)
    _cli(["obfuscate", home / "pts.csv", "-o", home / "out.csv", "--epsilon", "1", "--prior", home / "prior.npy", *grid],
         tmp_path)
    mine = json.loads((home / "out.csv.dprivacy.json").read_text())
    _says_nothing_of_the_machine(mine, home)
    assert mine == json.loads((here / "out.csv.dprivacy.json").read_text())
    assert mine["input"] == "pts.csv" and mine["grid"]["prior"] == "from prior.npy"


def test_a_series_sidecar_names_its_files_only(tmp_path):
    # closes: the series sidecar carried the full paths of the meter file and of the release
    home = _owners_folder(tmp_path)
    (home / "m.csv").write_text("t,kwh\n" + "".join(f"2024-01-01 {h:02d}:00:00,{h % 7}\n" for h in range(24)))
    _cli(["series", home / "m.csv", "-o", home / "r.csv", "--column", "kwh", "--time", "t", "--epsilon", "1"], tmp_path)
    side = json.loads((home / "r.csv.dprivacy.json").read_text())
    _says_nothing_of_the_machine(side, home)
    assert (side["input"], side["output"]) == ("m.csv", "r.csv")


def test_a_dask_sidecar_names_neither_the_input_path_nor_the_scheduler(tmp_path):
    # closes: the Dask sidecar gave the input's full path and the scheduler's address (the owner's cluster)
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    import pyarrow as pa
    import pyarrow.parquet as pq
    from distributed import LocalCluster

    from dprivacy.data.dask_engine import obfuscate_dask

    home = _owners_folder(tmp_path)
    rng = np.random.default_rng(2)
    pq.write_table(pa.table({"id": np.arange(200), "lat": 48 + rng.random(200), "lon": 2 + rng.random(200)}),
                   home / "p.parquet")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        obfuscate_dask(home / "p.parquet", home / "d.parquet", scheduler=address, epsilon=1.0)
    side = json.loads((home / "d.parquet.dprivacy.json").read_text())
    _says_nothing_of_the_machine(side, home)
    text = json.dumps(side)
    host = address.split("://")[-1].rsplit(":", 1)[0]
    assert address not in text and host not in text and side["input"] == "p.parquet"
