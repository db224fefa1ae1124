"""ElSalamouny et al. 2014 and ElSalamouny et al. 2013 reproduction experiments: the report they write, and the helpers they rest on.

The report tests run experiments through ``report.run`` and check the summary's shape and the figure
files; the others check the mathematics of the helpers (area and volume fractions of the region of
regular priors, the grid search, the cube of App. B, the product geometric) against definitions.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dprivacy import measures, priors, spaces
from dprivacy.channels import Channel
from dprivacy.experiments import report
from dprivacy.experiments.seed000 import (
    GRID,
    first_true_on_grid,
    formula_where_absent,
    _product_prior,
    region_fraction_3,
    region_fraction_4,
)
from dprivacy.experiments.seed004 import cube_with_antipodes
from dprivacy.mechanisms.geometric import truncated_geometric
from dprivacy.mechanisms.tight import tight_constraints
from dprivacy.queries import kcount_space, sum_space

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
VERDICTS = {"agrees", "differs", "not comparable"}
CLAIM_KEYS = {"id", "paper", "where", "published", "computed", "agrees", "tolerance", "note", "readings", "verdict"}
PAPERS = {"000": "ElSalamouny et al. 2014", "004": "ElSalamouny et al. 2013"}


def _check_summary(out, summary, ids):
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["counts"] == summary["counts"]
    assert on_disk["quick"] is True
    assert [e["id"] for e in on_disk["experiments"]] == ids
    for e in on_disk["experiments"]:
        assert e["error"] is None, e["error"]
        assert e["paper"] == PAPERS[e["id"][:3]]
        for f in e["figures"]:
            png, csv = out / f["png"], out / f["csv"]
            assert png.read_bytes()[:8] == PNG_MAGIC
            lines = csv.read_text().splitlines()
            assert len(lines) >= 2 and "," in lines[0]
    claims = on_disk["claims"]
    assert claims
    for c in claims:
        assert CLAIM_KEYS <= set(c), c
        assert c["verdict"] in VERDICTS
        assert c["paper"] == PAPERS[c["id"][:3]]
        assert isinstance(c["where"], str) and c["where"]
        for r in c["readings"]:
            assert set(r) == {"reading", "value"}
    c = on_disk["counts"]
    assert c["claims"] == len(claims) == c["agrees"] + c["differs"] + c["not_comparable"]
    return {cl["id"]: cl for cl in claims}


def test_report_regions_and_appendix_b(tmp_path):
    ids = ["000-fig2", "000-sec6", "004-appB"]
    summary = report.run(tmp_path, quick=True, only=ids, progress=False)
    claims = _check_summary(tmp_path, summary, ids)
    figs = {f["id"] for e in summary["experiments"] for f in e["figures"]}
    assert figs == {"000-fig2", "004-appB"}
    # Facts that follow from the definitions must agree.
    for cid in ("000-fig2-grows-line", "000-fig2-grows-ring", "000-fig2-corners-regular", "000-fig2-corner-bias",
                "000-fig2-ring-closed-form", "000-fig2-limit", "000-sec6-count-is-tg", "000-prop9", "000-thm4",
                "000-thm2-geometric", "004-appB-singular", "004-appB-identity", "004-appB-positions",
                "004-appB-invertible", "004-appB-several-tight", "004-appB-bound-unique"):
        assert claims[cid]["verdict"] == "agrees", claims[cid]
    # A fact the paper does not state is reported as not comparable, never as agreeing.
    assert claims["004-appB-only-one-third"]["verdict"] == "not comparable"
    assert claims["004-appB-only-one-third"]["computed"] is True


@pytest.mark.slow
def test_report_case_studies(tmp_path):
    ids = ["000-fig3", "000-example3", "000-fig6a", "000-fig6b", "004-examples-1-2"]
    summary = report.run(tmp_path, quick=True, only=ids, progress=False)
    claims = _check_summary(tmp_path, summary, ids)
    quick_notes = {e["id"]: e["quick_note"] for e in summary["experiments"]}
    assert all(quick_notes[i] for i in ("000-example3", "000-fig6a", "000-fig6b"))
    # The certified threshold bracket has width ≤ 1e-4, and the library agrees at both ends; the
    # 0.01-grid answer g is the first grid point at or above the bracket.
    for key, space in (("fig6a", sum_space(150, 5)), ("fig6b", kcount_space(30, 2))):
        c = claims[f"000-{key}-threshold"]
        lo, hi = c["readings"][0]["value"]
        assert 0 < hi - lo <= 1e-4
        assert not tight_constraints(space, epsilon=lo).exists
        assert tight_constraints(space, epsilon=hi).exists
        g = c["computed"]
        assert g - GRID < hi and g >= lo
        assert tight_constraints(space, epsilon=g).exists
        assert not tight_constraints(space, epsilon=round(g - GRID, 10)).exists
    # Example 3: regularity begins at ln 2 (μ factorizes over the individuals), so 0.70 on the 0.01 grid.
    assert claims["000-ex3-regular-from"]["computed"] == pytest.approx(math.ceil(math.log(2) / GRID) * GRID)
    assert claims["000-ex3-thm3-at-0.5"]["computed"] == pytest.approx(5 * math.log2(4 * math.exp(0.5) / (3 + math.exp(0.5))))


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


@given(st.floats(0.01, 1.0))
def test_region_fraction_3_of_a_shrunken_simplex(s):
    # The simplex shrunk about its barycentre by s has s² of its area.
    u = np.full(3, 1 / 3)
    corners = u + s * (np.eye(3) - u)
    assert region_fraction_3(corners) == pytest.approx(s**2, rel=1e-9)


@given(st.floats(0.05, 1.0))
def test_region_fraction_4_of_a_shrunken_simplex(s):
    u = np.full(4, 1 / 4)
    corners = u + s * (np.eye(4) - u)
    assert region_fraction_4(corners) == pytest.approx(s**3, rel=1e-9)


def test_region_fraction_3_of_clique_corners():
    # Corner priors of the 3-clique: c^y = ((1 − a) e_y + 3a·u)/(1 + 2a), the simplex shrunk by (1−a)/(1+2a).
    for e in (0.3, 1.0, 2.5):
        a = math.exp(-e)
        c = priors.corner_priors(spaces.clique(3), epsilon=e)
        assert region_fraction_3(c) == pytest.approx(((1 - a) / (1 + 2 * a)) ** 2, rel=1e-12)


@given(st.floats(0.02, 0.97))
def test_first_true_on_grid_finds_the_first_grid_point_above_a_threshold(t):
    calls = []

    def pred(e):
        calls.append(e)
        return e >= t - 1e-12

    g, seen = first_true_on_grid(pred, 0.01, 1.0)
    k = math.ceil(t / GRID - 1e-9)
    assert g == pytest.approx(k * GRID)
    assert pred(g) and not pred(g - GRID)
    assert len(calls) <= 12  # bisection, not a scan of the 100 grid points


def test_first_true_on_grid_when_nothing_passes():
    g, seen = first_true_on_grid(lambda e: False, 0.1, 0.5)
    assert g is None and seen


def test_formula_where_absent_joins_at_the_first_existing_point():
    assert formula_where_absent([1, 2, 3, 4], [None, None, 3.5, 4.5]) == [1, 2, 3.5, None]
    assert formula_where_absent([1, 2], [1.5, 2.5]) == [None, None]


def test_product_prior_follows_the_hamming_labels():
    p = np.array([0.5, 0.3, 0.2])
    sp = spaces.hamming(3, 3)
    pi = _product_prior(p, 3)
    assert pi.sum() == pytest.approx(1.0)
    for i, lab in enumerate(sp.labels):
        assert pi[i] == pytest.approx(np.prod(p[list(lab)]))


def test_uniform_mu_is_the_tight_diagonal_over_n():
    # ElSalamouny et al. 2014 Prop 8: μΦ = u iff Φ(nμ) = 1, so μ = z/n; the experiments read Σμ as mean(z).
    sp = sum_space(10, 3)
    for e in (0.4, 0.9, 1.5):
        mu = priors.regularity(sp, np.full(sp.n, 1 / sp.n), epsilon=e).mu
        z = tight_constraints(sp, epsilon=e).z
        np.testing.assert_allclose(mu, z / sp.n, rtol=1e-9, atol=1e-13)


def test_cube_with_antipodes_is_k44_in_gray_order():
    sp = cube_with_antipodes()
    d = sp.distances
    assert sp.n == 8 and d.max() == 2
    assert np.all((d == 1).sum(axis=1) == 4)
    even, odd = [0, 2, 4, 6], [1, 3, 5, 7]
    # Even-numbered nodes form one side: pairwise at distance 2, and at distance 1 from every odd node.
    assert np.all(d[np.ix_(even, even)] == 2 * (1 - np.eye(4)))
    assert np.all(d[np.ix_(even, odd)] == 1)
    # Consecutive nodes (Gray code) are adjacent.
    assert all(d[i, i + 1] == 1 for i in range(7))


@pytest.mark.parametrize("u", [2, 4])
def test_geometric_per_count_at_half_epsilon_is_exactly_epsilon_private(u):
    # One individual moves both counts by ≤ 1: ε/2 per count gives ε on the king's graph (diagonal steps
    # are the worst), ε per count only 2ε.
    space = kcount_space(u, 2)
    line = spaces.line(u + 1)
    for e in (0.3, 1.0):
        g = truncated_geometric(line, epsilon=e / 2).matrix
        assert measures.smallest_epsilon(Channel(np.kron(g, g)), space) == pytest.approx(e, rel=1e-9)
        g2 = truncated_geometric(line, epsilon=e).matrix
        assert measures.smallest_epsilon(Channel(np.kron(g2, g2)), space) == pytest.approx(2 * e, rel=1e-9)
