"""What the tests of the data API share: the command line run in this process, and messages compared modulo the
name of the input (a file on the command line, "the DataFrame" from Python)."""

from __future__ import annotations

import contextlib
import io
import os
import re

import numpy as np
import pandas as pd

PLACEHOLDER = "<INPUT>"


def run_cli(*args, cwd) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``dprivacy ARGS`` run in this process in folder ``cwd``."""
    from dprivacy.cli.app import _main

    out, err = io.StringIO(), io.StringIO()
    saved, here = np.geterr(), os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _main([str(a) for a in args])
    finally:
        os.chdir(here)
        np.seterr(**saved)  # (the command line makes float errors raise, for its own process)
    return code, out.getvalue(), err.getvalue()


def cli_message(stderr: str, *names) -> str:
    """The error of a command line's stderr without its prefix, the input's names replaced by a placeholder."""
    line = [ln for ln in stderr.splitlines() if ": error: " in ln][-1]
    msg = re.sub(r"^dprivacy(?: [a-z]+)?: error: ", "", line)
    for n in sorted(map(str, names), key=len, reverse=True):
        msg = msg.replace(n, PLACEHOLDER)
    return msg


def api_message(exc: BaseException, label: str) -> str:
    return str(exc).splitlines()[0].replace(label, PLACEHOLDER)


def points_frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """Points around Paris with columns of several dtypes and an index of strings."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "lat": 48.85 + rng.normal(0, 0.05, n),
        "lon": 2.35 + rng.normal(0, 0.05, n),
        "visits": pd.array([None if i % 7 == 3 else int(i) for i in range(n)], dtype="Int64"),
        "kind": pd.Categorical([("home", "work", "shop")[i % 3] for i in range(n)]),
        "note": [f"row {i}" for i in range(n)],
        "when": pd.date_range("2024-01-01", periods=n, freq="h", tz="UTC"),
        "flag": [i % 2 == 0 for i in range(n)],
    }, index=pd.Index([f"p{i:03d}" for i in range(n)], name="pid"))


def released_points(path) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    return t.column("lat").to_numpy(), t.column("lon").to_numpy()
