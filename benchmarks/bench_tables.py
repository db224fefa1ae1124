"""Private grouped queries on a 10-million-row Parquet table (issue 12): `run_query` (DuckDB scans,
exact integer noise) against the bare DuckDB aggregation of the same answers, in the same run.

    python benchmarks/bench_tables.py [--rows 10000000]

The ratio says how much of the time is the query engine's scan: the noise is a few draws per group.
Results go to benchmarks/results_tables.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np


REGIONS = ("Central", "East", "South", "West")


def make_table(path: Path, n: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    regions = np.array(REGIONS)
    w = None
    for a in range(0, n, 2_000_000):
        m = min(2_000_000, n - a)
        t = pa.table({"Region": regions[rng.integers(0, 4, m)], "Quantity": rng.integers(1, 15, m),
                      "Sales": np.round(rng.lognormal(4, 1.2, m), 2)})
        w = w or pq.ParquetWriter(path, t.schema)
        w.write_table(t)
    w.close()


def best(f, k=3) -> float:
    out = []
    for _ in range(k):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return min(out)


def main() -> None:
    import duckdb

    from dprivacy.data.tables import parse_query, run_query

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    args = ap.parse_args()
    res = []
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "orders.parquet"
        make_table(path, args.rows)
        rel = f"read_parquet('{path}')"
        cases = [
            ("count", None, "standard", "Region", "SELECT Region, count(*) FROM {r} GROUP BY 1"),
            ("sum:Quantity", (0, 15), "d1", "Region", "SELECT Region, sum(Quantity) FROM {r} GROUP BY 1"),
            ("percentile:Sales:50", (0, 2000), "dinf", "Region", "SELECT Region, quantile_disc(Sales, 0.5) FROM {r} GROUP BY 1"),
            ("avg:Sales", (0, 2000), "d1", None, "SELECT avg(Sales) FROM {r}"),
        ]
        con = duckdb.connect()
        for spec, bounds, privacy, group, sql in cases:
            q = parse_query(spec)
            base = best(lambda: con.execute(sql.format(r=rel)).fetchall())
            # Sales has cents: --unit 0.01 (values with a fraction are refused without a unit)
            unit = 0.01 if "Sales" in spec else None
            # under standard ε-DP the group keys are declared (the keys found in the table are not public)
            keys = REGIONS if group is not None and privacy == "standard" else None
            ours = best(lambda: run_query(str(path), q, epsilon=1.0, bounds=bounds, group_by=group, privacy=privacy,
                                          unit=unit, keys=keys))
            r = {"query": spec, "privacy": privacy, "group_by": group, "rows": args.rows, "seconds": ours,
                 "duckdb_aggregation_seconds": base, "ratio": ours / base}
            res.append(r)
            print(f"{spec:22s} {privacy:8s} group by {group or '-':7s}: {ours:6.2f} s; bare DuckDB aggregation {base:6.2f} s; "
                  f"ratio {ours / base:.2f}", flush=True)
    Path(__file__).with_name("results_tables.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
