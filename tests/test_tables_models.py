"""Privacy models, k-counts, invalid values and mechanisms of `dprivacy query` (issue 12; Chatzikokolakis et al. 2013 §5)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("duckdb")

from dprivacy.data.tables import Query, parse_query, run_query, sensitivity  # noqa: E402


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    return subprocess.run([sys.executable, "-m", "dprivacy.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_sensitivity_follows_seed_002_section_5():
    b = (0, 15)
    s, a, p = Query("sum", "x"), Query("avg", "x"), Query("percentile", "x", 50.0)
    for q in (s, a, p):
        assert sensitivity(q, "standard", b) == 15  # d_h: HI − LO
        assert sensitivity(q, "normalized-d1", b) == 15  # Thm 11: uniformly qk-sensitive wrt d̃1
        assert sensitivity(q, "d1", b) == 1  # Thm 12
    assert sensitivity(p, "dinf", b) == 1  # Thm 13
    # Thm 13 holds for the mean rounded to the value grid (the exact mean is not uniformly 1-sensitive wrt d∞):
    # that is what is released, with Δ = 1 on LO..HI
    assert sensitivity(a, "dinf", b, total=250) == 1
    # under d_h a row can enter or leave a --where selection or a group: a sum moves by up to max(|LO|, |HI|)
    assert sensitivity(s, "standard", (100, 1000), selected=True) == 1000
    assert sensitivity(s, "standard", (-50, 10), selected=True) == 60
    assert sensitivity(s, "d1", (100, 1000), selected=True) == 1  # value metrics: the selection's columns are public
    with pytest.raises(ValueError, match="dinf is not available for sum"):
        sensitivity(s, "dinf", b)
    assert sensitivity(Query("count"), "standard", None) == 1
    with pytest.raises(ValueError, match="not a query on values"):
        sensitivity(Query("kcount", columns=("a", "b")), "d1", None)


def _bool_table(path: Path, n: int = 300, bad: str | None = None) -> tuple[int, int]:
    rng = np.random.default_rng(0)
    a = rng.random(n) < 0.3
    b = rng.random(n) < 0.6
    rows = [f"{int(x)},{'true' if y else 'false'},{i % 3}" for i, (x, y) in enumerate(zip(a, b))]
    if bad is not None:
        rows[7] = f"{bad},true,1"
    path.write_text("a,b,g\n" + "\n".join(rows) + "\n")
    return int(a.sum()), int(b.sum())


def test_kcount_noise_is_the_geometric_at_eps_over_k_per_count(tmp_path):
    """Each of the k counts gets two-sided geometric noise at ε/k (chi-square), not at ε (power)."""
    t = tmp_path / "flags.csv"
    ta, tb = _bool_table(t)
    q = parse_query("kcount:a,b")
    eps = 1.2
    noise = []
    for seed in range(300):
        r = run_query(str(t), q, epsilon=eps, rng=seed)
        assert len(r.answers) == 1 and len(r.answers[0].noisy) == 2
        noise += [r.answers[0].noisy[0] - ta, r.answers[0].noisy[1] - tb]
    noise = np.array(noise)
    support = np.arange(-6, 7)

    def pvalue(e):
        al = math.exp(-e)
        p = (1 - al) / (1 + al) * al ** np.abs(support)
        obs = np.append([(noise == s).sum() for s in support], (np.abs(noise) > 6).sum())
        return stats.chisquare(obs, np.append(p, 1 - p.sum()) * noise.size).pvalue

    assert pvalue(eps / 2) > 1e-4
    assert pvalue(eps) < 1e-4
    assert r.delivered_epsilon <= eps and "Thm 9" in r.theorem


def test_invalid_values_are_named_or_skipped(tmp_path):
    t = tmp_path / "v.csv"
    t.write_text("x,g\n" + "\n".join(["7,a", "8,b", ",a", "oops,b", "9,a", "6,b"]) + "\n")
    q = parse_query("sum:x")
    with pytest.raises(ValueError, match=r"1 non-numeric and 1 empty value\(s\) in the table.*the first at row 3 of the file \(1 = first data row\);"):
        run_query(str(t), q, epsilon=1, bounds=(5, 10), owner=True)
    r = run_query(str(t), q, epsilon=1, bounds=(5, 10), skip_invalid=True, group_by="g", rng=1, keys=["a", "b"])
    assert r.rows_skipped_not_private == 2
    # a value turning null changes the sum by up to max(|LO|, |HI|) = 10 > HI − LO = 5
    assert r.sensitivity == 10
    r1 = run_query(str(t), q, epsilon=1, bounds=(5, 10), skip_invalid=True, privacy="d1", rng=1)
    assert r1.sensitivity == 2  # d1: a null is at distance HI − LO = 5 and moves the sum by ≤ 10
    with pytest.raises(ValueError, match="avg divides"):
        run_query(str(t), parse_query("avg:x"), epsilon=1, bounds=(5, 10), skip_invalid=True)
    kt = tmp_path / "k.csv"
    _bool_table(kt, bad="maybe")
    with pytest.raises(ValueError, match="non-boolean"):
        run_query(str(kt), parse_query("kcount:a,b"), epsilon=1)


def test_geometric_is_not_clamped_and_truncated_geometric_is(tmp_path):
    t = tmp_path / "one.csv"
    t.write_text("x\n" + "\n".join(["1"] * 5) + "\n")
    q = parse_query("count")
    # 40 seeds (200 took 11 s): an unclamped answer stays in [0, 5] with probability about 0.14 per draw at ε = 0.05
    # (two-sided geometric, ratio e^-0.05), so 40 draws all inside happen with probability below 1e-34
    tg = [run_query(str(t), q, epsilon=0.05, rng=s).answers[0].noisy for s in range(40)]
    g = [run_query(str(t), q, epsilon=0.05, rng=s, mechanism="geometric").answers[0].noisy for s in range(40)]
    assert min(tg) >= 0 and max(tg) <= 5
    assert min(g) < 0 or max(g) > 5
    # on the path of answers the tight-constraints mechanism is the truncated geometric: the same draws
    tc = [run_query(str(t), q, epsilon=0.05, rng=s, mechanism="tight-constraints").answers[0].noisy for s in range(40)]
    assert tc == tg


def test_cli_privacy_models_and_kcount(tmp_path):
    bs = pytest.importorskip("bokeh_sampledata")
    sup = os.path.join(os.path.dirname(bs.__file__), "_data", "SampleSuperstore.csv.gz")
    p = _cli("query", sup, "--query", "sum:Quantity", "--bounds", "0,15", "--privacy", "normalized-d1", "--epsilon", "1",
             "--group-by", "Region", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["sensitivity"] == 15 and "Thm 11" in rep["theorem"] and len(rep["answers"]) == 4
    p = _cli("query", sup, "--query", "avg:Sales", "--bounds", "0,2000", "--unit", "1", "--privacy", "dinf", "--epsilon", "1", "--json", cwd=tmp_path)
    rep = json.loads(p.stdout)
    assert p.returncode == 0 and rep["sensitivity"] == 1 and rep["answer_range"] == [0, 2000] and "rounded" in rep["theorem"]
    flags = tmp_path / "flags.csv"
    _bool_table(flags)
    p = _cli("query", str(flags), "--query", "kcount:a,b", "--epsilon", "1", "--group-by", "g", "--keys", "0,1,2", cwd=tmp_path)
    assert p.returncode == 0 and "kcount:a,b" in p.stdout
    for args, needle in ((["--query", "kcount:a"], "two or more"), (["--query", "kcount:a,zz"], "unknown column"),
                         (["--query", "kcount:a,b", "--mechanism", "tight-constraints"], "design kcount")):
        p = _cli("query", str(flags), "--epsilon", "1", *args, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and needle in p.stderr, (args, p.stderr)


def test_optimal_with_a_prior_is_the_lp_optimum_for_the_absolute_error(tmp_path):
    """--mechanism optimal = the truncated geometric + the Bayes remap for |error|: on a count of 6 rows
    its expected |error| under a lumpy prior equals the LP optimum over all ε-DP mechanisms on 0..6
    (Chatzikokolakis et al. 2013 Thm 8: the truncated geometric is universally optimal)."""
    from dprivacy import spaces
    from dprivacy.data.tables import bayes_remap_abs, truncated_geometric_rows
    from dprivacy.mechanisms.optimal import optimal_mechanism

    prior = np.array([0.05, 0.3, 0.02, 0.03, 0.4, 0.1, 0.1])
    for eps in (0.4, 1.1):
        rows = truncated_geometric_rows(math.exp(-eps), 0, 6)
        assert np.allclose(rows.sum(axis=1), 1)
        _, err = bayes_remap_abs(rows, prior)
        sp = spaces.line(7)
        lp = optimal_mechanism(sp, prior, epsilon=eps, loss=sp.distances, method="full")
        assert err == pytest.approx(-lp.value if lp.value < 0 else lp.value, rel=1e-6, abs=1e-9)
    t = tmp_path / "six.csv"
    t.write_text("x\n" + "\n".join(["1"] * 6) + "\n")
    pfile = tmp_path / "prior.txt"
    pfile.write_text("\n".join(str(v) for v in prior))
    r = run_query(str(t), parse_query("count"), epsilon=1.1, mechanism="optimal", prior=str(pfile), rng=2)
    assert r.mechanism == "truncated-geometric + Bayes remap" and 0 <= r.answers[0].noisy <= 6
    with pytest.raises(ValueError, match="needs --prior"):
        run_query(str(t), parse_query("count"), epsilon=1.1, mechanism="optimal")
    with pytest.raises(ValueError, match="expected 7"):
        run_query(str(t), parse_query("count"), epsilon=1.1, mechanism="optimal", prior=np.ones(5))


def test_kcount_refuses_numbers_that_are_not_flags(tmp_path):
    t = tmp_path / "n.csv"
    t.write_text("a,b\n0,1\n1,0\n0.2,1\n")
    with pytest.raises(ValueError, match=r"non-boolean.*the first at row 3"):
        run_query(str(t), parse_query("kcount:a,b"), epsilon=1, owner=True)


def test_a_table_shaped_prior_and_a_folder_are_refused(tmp_path):
    """Found by a review: a 2x657 .npy prior was flattened into the 1,314 weights of a count's answers, and a folder of
    Parquet parts gave DuckDB's "file system operations are disabled"."""
    t = tmp_path / "t.csv"
    t.write_text("a\n" + "1\n" * 5)
    np.save(tmp_path / "p2.npy", np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"has shape 2×3, expected 6 weights \(one per answer 0..5"):
        run_query(str(t), parse_query("count"), epsilon=1, mechanism="optimal", prior=str(tmp_path / "p2.npy"))
    np.save(tmp_path / "p1.npy", np.ones((1, 6)))  # one row is one weight per answer
    r = run_query(str(t), parse_query("count"), epsilon=1, mechanism="optimal", prior=str(tmp_path / "p1.npy"), rng=1)
    assert len(r.answers) == 1
    (tmp_path / "parts.parquet").mkdir()
    with pytest.raises(ValueError, match="is a folder: query reads one CSV or Parquet file"):
        run_query(str(tmp_path / "parts.parquet"), parse_query("count"), epsilon=1)
