"""
Tight-constraints vs geometric mechanism on a sum query
=======================================================

Two ε-differentially private mechanisms for a sum query, compared as in Fig. 6a of
:cite:t:`ElSalamouny2014` (§7.1). 150 people each hold a value in 0..5, so the sum has 751
possible answers, and two answers are adjacent when changing one person's value can move the sum
from one to the other (they differ by at most 5). The *geometric* mechanism adds noise calibrated to that sensitivity; the *tight-constraints*
mechanism is optimal for every prior in the region of regular priors, but exists only from a threshold
ε* on. This example computes both utilities for the uniform prior as ε varies.
"""

# %%
# The answer space of the sum query, and the threshold ε*
# -------------------------------------------------------
# :func:`dprivacy.queries.sum_space` builds the 751 answers with the graph distance
# ⌈|i − j| / 5⌉. :func:`dprivacy.tight_threshold` brackets ε* with a certificate: below it the
# solution of Φh = 1 has negative entries, so no tight-constraints mechanism exists.

import matplotlib.pyplot as plt
import numpy as np

import dprivacy as dp
from dprivacy.queries import sum_space

space = sum_space(150, 5)
threshold = dp.tight_threshold(space)
lo, hi = threshold.bracket
print(
    f"{space.n} answers; tight-constraints exists from ε* ∈ ({lo:.4f}, {hi:.4f}]"
)

# %%
# Utility as ε varies
# -------------------
# The utility is the probability that the best guess from the output is the true answer (the
# optimal remap, for the uniform prior). The truncated geometric mechanism here adds noise with ε/5
# per unit step of the sum, which is what makes it ε-private on this graph.

prior = dp.uniform_prior(space.n)
epsilons = np.round(np.arange(0.80, 1.401, 0.025), 3)
tight, geometric = [], []
for eps in epsilons:
    res = dp.tight_constraints(space, epsilon=float(eps))
    tight.append(
        dp.utility(res.mechanism, prior).value if res.exists else np.nan
    )
    geometric.append(
        dp.utility(
            dp.truncated_geometric(space, epsilon=float(eps)), prior
        ).value
    )

fig, ax = plt.subplots(figsize=(6.4, 4))
ax.plot(
    epsilons,
    tight,
    "o-",
    color="tab:blue",
    label="tight-constraints (absent below ε*)",
)
ax.plot(
    epsilons, geometric, "s-", color="tab:red", label="truncated geometric"
)
ax.axvline(hi, color="grey", ls="--", lw=1, label=f"certified ε* ≈ {hi:.3f}")
ax.axvline(0.8, color="grey", ls=":", lw=1, label="ε* = 0.8 as published")
ax.set_xlabel("ε")
ax.set_ylabel("utility (uniform prior)")
ax.set_title("Sum query, 150 people, values 0..5")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Where the tight-constraints mechanism exists it has markedly higher utility, and by Thm 4 of the
# paper it is optimal for every regular prior, not only the uniform one. The paper reports the
# threshold as 0.8; the certified threshold is about 0.968. ``dprivacy reproduce`` explains the
# difference: a check that tolerates entries of μ down to −10⁻⁴ gives 0.8 exactly.
ratio = np.array(tight) / np.array(geometric)
print(
    f"utility tight/geometric: {np.nanmin(ratio):.2f} to {np.nanmax(ratio):.2f}"
)
