"""
Private counts and sums on a sales table
========================================

``dprivacy query`` answers aggregate queries on a table with the truncated geometric mechanism,
universally optimal for counts :cite:p:`Ghosh2012` and, under metrics on values, for sums
:cite:p:`Chatzikokolakis2013`. This example asks the number of orders per region and the number of
items sold per category of ``SampleSuperstore.csv.gz`` at several values of ε, with the 95% error bars
that each answer comes with.
"""

# %%
# The true answers
# ----------------
# Only the data owner can compute these; they are here to show the error. DuckDB, which dprivacy uses
# to read tables, computes them.

import json
import os
import subprocess
import sys

import bokeh_sampledata
import duckdb
import matplotlib.pyplot as plt
import numpy as np

table = os.path.join(
    os.path.dirname(bokeh_sampledata.__file__),
    "_data",
    "SampleSuperstore.csv.gz",
)
REGIONS = ["Central", "East", "South", "West"]
CATEGORIES = ["Furniture", "Office Supplies", "Technology"]
true_count = dict(
    duckdb.sql(
        f"SELECT Region, count(*) FROM read_csv_auto('{table}') GROUP BY Region"
    ).fetchall()
)
true_items = dict(
    duckdb.sql(
        f"SELECT Category, sum(Quantity) FROM read_csv_auto('{table}') "
        "GROUP BY Category"
    ).fetchall()
)
print(true_count, true_items)


def query(*args):
    """Run ``dprivacy query --json``: {group: (noisy answer, 95% within ±)}."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "dprivacy",
            "query",
            table,
            *args,
            "--seed",
            "11",
            "--json",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {
        a["group"]: (a["noisy"], a["within"])
        for a in json.loads(out)["answers"]
    }


# %%
# Counts per region, standard differential privacy
# ------------------------------------------------
# Under standard DP the regions are declared (``--keys``) and each group's answer uses ε/2, since
# one changed row can move between two groups.

epsilons = [0.05, 0.1, 0.2, 0.5, 1.0]
counts = {
    eps: query(
        "--query",
        "count",
        "--epsilon",
        str(eps),
        "--group-by",
        "Region",
        "--keys",
        ",".join(REGIONS),
    )
    for eps in epsilons
}

# %%
# Items per category, d1 on the quantities
# ----------------------------------------
# Under ``--privacy d1`` what is protected is one item more or less in any order (the total change
# of the values, in units of one item); the category is public. Quantities are clamped to the public
# bounds 0..15.

items = {
    eps: query(
        "--query",
        "sum:Quantity",
        "--bounds",
        "0,15",
        "--privacy",
        "d1",
        "--epsilon",
        str(eps),
        "--group-by",
        "Category",
    )
    for eps in epsilons
}

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, answers, truth, groups, title in [
    (axes[0], counts, true_count, REGIONS, "orders per region (standard DP)"),
    (
        axes[1],
        items,
        true_items,
        CATEGORIES,
        "items per category (d1 on quantities)",
    ),
]:
    for k, group in enumerate(groups):
        err = np.array([answers[e][group][0] - truth[group] for e in epsilons])
        bars = np.array([answers[e][group][1] for e in epsilons])
        x = np.array(epsilons) * (
            1 + 0.06 * (k - len(groups) / 2)
        )  # spread the groups apart
        ax.errorbar(x, err, yerr=bars, fmt="o", capsize=3, label=group)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("noisy answer − true answer")
    ax.set_title(title)
    ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Every bar is the "within ±" figure that the answer is released with: it holds with probability 95%
# whatever the true answer, and shrinks as 1/ε. A count over a few thousand orders is useful from
# ε = 0.1. The items per category have half the noise at the same ε: under d1 the categories are
# public and disjoint, so each answer gets the whole ε, while under standard DP a changed order can
# move between two regions and each count gets ε/2.
