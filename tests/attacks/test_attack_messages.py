"""Attacks through the text of a refusal: a message that quotes a person's values, or a refusal whose outcome the
asker can steer with a parameter (bisection).

| leak | test |
|---|---|
| obfuscate and series printed a malformed CSV line whole (pyarrow's message), true coordinates included | test_a_malformed_line_is_never_quoted |
| a GeoJSON point with an altitude was refused with its three coordinates | test_a_malformed_line_is_never_quoted |
| series quoted a reading that is not a number or not whole, with its row | test_series_refusals_name_the_column_not_the_reading |
| series refused readings beyond 2^52 units of the asker's --unit: the largest reading by bisection | test_series_refusals_name_the_column_not_the_reading |
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "dprivacy.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=SRC), timeout=120)


def test_a_malformed_line_is_never_quoted(tmp_path):
    rows = [f"{i},{48.8 + i * 1e-4:.6f},{2.3 + i * 1e-4:.6f},{i % 7}" for i in range(3000)]
    rows[1500] = "1500,48.855348,2.362545,76,extra"
    (tmp_path / "bad.csv").write_text("id,lat,lon,v\n" + "\n".join(rows) + "\n")
    (tmp_path / "q.csv").write_text("id,lat,lon,v\n" + "\n".join(rows[:20] + ['21,"48.85,2.36,1']) + "\n")
    for args in (("obfuscate", "bad.csv", "-o", "o.csv", "--epsilon", "1"),
                 ("series", "bad.csv", "-o", "s.csv", "--column", "v", "--epsilon", "1"),
                 ("obfuscate", "q.csv", "-o", "o.csv", "--epsilon", "1")):
        p = _run(*args, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert "48.855348" not in p.stderr and "2.362545" not in p.stderr and "48.85,2.36" not in p.stderr, p.stderr
    features = [{"type": "Feature", "geometry": {"type": "Point", "coordinates": [2.123456, 48.654321, 35.0]},
                 "properties": {}}]
    (tmp_path / "g.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    p = _run("obfuscate", "g.geojson", "-o", "g2.geojson", "--epsilon", "1", cwd=tmp_path)
    assert p.returncode == 2 and "2.123456" not in p.stderr and "48.654321" not in p.stderr, p.stderr


def test_series_refusals_name_the_column_not_the_reading(tmp_path):
    from dprivacy.data.series import release_series

    (tmp_path / "a.csv").write_text("t,kwh\n" + "".join(f"2024-01-01 00:{m:02d}:00,{m}\n" for m in range(50)) +
                                    "2024-01-01 00:50:00,1234.5\n")
    with pytest.raises(ValueError, match="column 'kwh' has values that are not whole numbers") as e:
        release_series(tmp_path / "a.csv", tmp_path / "o.csv", column="kwh", epsilon=1.0)
    assert "1234.5" not in str(e.value) and "row" not in str(e.value)
    (tmp_path / "b.csv").write_text("t,kwh\n2024-01-01 00:00:00,x7\n")
    with pytest.raises(ValueError, match="column 'kwh' has values that are not numbers") as e:
        release_series(tmp_path / "b.csv", tmp_path / "o.csv", column="kwh", epsilon=1.0)
    assert "x7" not in str(e.value)
    # neighbours whose largest reading is either side of 2^52 units of the asker's --unit: both released
    for top in (2999, 3001):
        (tmp_path / f"m{top}.csv").write_text("kwh\n1\n" + f"{top}\n")
        release_series(tmp_path / f"m{top}.csv", tmp_path / f"o{top}.csv", column="kwh", epsilon=1.0, unit=3000 / 2**52,
                       rng=1)
        assert (tmp_path / f"o{top}.csv").exists()
