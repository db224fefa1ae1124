"""Privacy attacks found on `dprivacy evaluate`, each kept as a test so that no change reopens it (issue #30).

The comment above each test names the leak it closes. Inventory (leak, fix commit → test):

- the --png figure and --html page draw the true locations and did not say so: published as a report, they
  released every true point (8fac5aa)
  → test_cli_evaluate_writes_a_self_contained_page_and_a_figure
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("pyproj")
pytest.importorskip("pyarrow")

from test_location_grid import PARIS, _cli  # noqa: E402


# evaluate: the --png figure and --html page draw the true locations and did not say they are not for publication
def test_cli_evaluate_writes_a_self_contained_page_and_a_figure(tmp_path):
    rng = np.random.default_rng(2)
    n = 400
    src = tmp_path / "pts.csv"
    src.write_text("id,lat,lon\n" + "".join(f"{i},{48.82 + 0.08 * a:.7f},{2.25 + 0.2 * b:.7f}\n"
                                          for i, (a, b) in enumerate(rng.random((n, 2)))))
    p = _cli("obfuscate", str(src), "-o", "rel.csv", "--epsilon", "1", "--mechanism", "planar-laplace-grid", "--cell", "1km",
             "--region", PARIS, "--seed", "1", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = _cli("evaluate", str(src), "rel.csv", "--sweep", "0.5:4:3", "--mechanisms", "planar-laplace-grid,tight-constraints",
             "--png", "fig.png", "--html", "page.html", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    g = rep["grid"]
    assert g["prior"].startswith("the points of") and g["points_used"] == n
    assert len(g["sweep"]) == 6 and g["at_release"]["mechanism"] == "planar-laplace-grid"
    page = (tmp_path / "page.html").read_text()
    assert "data:image/png;base64," in page and "http://" not in page and "https://" not in page and "<script" not in page
    # the map draws the true points: the page and the report say it is not for publication (review)
    assert "CONTAINS THE TRUE LOCATIONS: for the data owner, not for publication" in page
    assert any("not for publication" in n for n in rep["notes"])
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for extra, needle in ((["--sweep", "4:1:3"], "--sweep"), (["--cell", "1km"], "--region"), (["--html", "nodir/x.html"], "does not exist")):
        args = ["evaluate", str(src), "rel.csv", *extra]
        if extra[0] == "--cell":
            args = ["evaluate", str(src), str(src), *extra]
        p = _cli(*args, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and needle in p.stderr, (extra, p.stderr)
