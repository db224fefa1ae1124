"""`dprivacy reproduce` for Alvim et al. 2015, through the same code path as the command: summary.json's shape,
the figure files, and the verdicts the mathematics decides."""

import json

import pytest

from dprivacy.experiments.report import run

KEYS = {"id", "paper", "where", "published", "computed", "agrees", "tolerance", "note", "verdict"}
IDS = ["001-table1", "001-table2", "001-example17", "001-bnd-fig8", "001-prop21", "001-example18", "001-prop20"]


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep001")
    s = run(out, quick=True, only=IDS, progress=False)
    return out, s


def test_summary_shape(summary):
    out, s = summary
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["counts"] == s["counts"] and s["counts"]["errors"] == 0
    assert {e["id"] for e in s["experiments"]} == set(IDS)
    for c in s["claims"]:
        assert KEYS <= set(c) and c["paper"] == "Alvim et al. 2015"
    assert (out / "index.html").read_text().count("<h3") == len(IDS)
    for e in s["experiments"]:
        for f in e["figures"]:
            assert (out / f["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert (out / f["csv"]).read_text().count("\n") > 2


def test_verdicts(summary):
    _, s = summary
    by_id = {c["id"]: c for c in s["claims"]}
    # exact identities from the paper
    for cid in ("001-table2-U-M1", "001-table2-U-M2", "001-table2-M1-entries", "001-table2-M2-entries",
                "001-example17-leakage", "001-bnd-100-2-5", "001-prop20-closed-form", "001-example18-epsilon"):
        assert by_id[cid]["verdict"] == "agrees", cid
    # the printed Fig 9(b) has two swapped entries in row 'ba' (a misprint): the claim must say so
    ex17 = by_id["001-example17-alpha"]
    assert ex17["verdict"] == "differs" and ex17["computed"] == 2 and "(ba,bc)" in ex17["note"]
