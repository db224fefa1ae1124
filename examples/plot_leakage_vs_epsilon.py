"""
Min-entropy leakage against ε
=============================

How much can an ε-differentially private mechanism reveal about a whole database? :cite:t:`Alvim2015`
(Thm. 15) bound the min-entropy leakage :cite:p:`Smith2009` of every such mechanism, for every prior,
by Bnd(u, v, ε) = u·log₂(v·e^ε / (v − 1 + e^ε)) bits for u individuals with v values each, and show the
bound is attained (Prop. 16). This example plots it for 3 people with 3 values (27 databases) beside
the leakage of two mechanisms.
"""

# %%
# The database space and two mechanisms
# -------------------------------------
# ``spaces.hamming(3, 3)`` is the set of databases with the Hamming distance: ε·d_h-privacy is
# standard ε-differential privacy. :func:`dprivacy.maximal_leakage_mechanism` is the mechanism of
# Prop. 16; the exponential mechanism is another ε-private mechanism on the same space.

import matplotlib.pyplot as plt
import numpy as np

import dprivacy as dp
from dprivacy import bounds, spaces

U, V = 3, 3
space = spaces.hamming(U, V)

# A non-uniform prior: each person's value is 0, 1, 2 with probability 0.6, 0.3, 0.1.
prior = np.ones(1)
for _ in range(U):
    prior = np.kron(prior, [0.6, 0.3, 0.1])

epsilons = np.linspace(0.1, 5, 25)
bnd, cap_max, cap_exp, leak_max, leak_exp = [], [], [], [], []
for eps in epsilons:
    k = dp.maximal_leakage_mechanism(U, V, epsilon=eps)
    e = dp.exponential(space, epsilon=eps)
    bnd.append(bounds.bnd(U, V, epsilon=eps).value)
    cap_max.append(dp.min_capacity(k))  # leakage maximised over priors
    cap_exp.append(dp.min_capacity(e))
    leak_max.append(dp.min_entropy_leakage(k, prior))
    leak_exp.append(dp.min_entropy_leakage(e, prior))

# %%
# The plot
# --------
# Min-capacity is the leakage for the worst prior (the uniform one); the dashed lines are the leakage
# for the skewed prior above, which the adversary's better starting guess makes smaller.

fig, ax = plt.subplots(figsize=(6.4, 4))
ax.plot(
    epsilons,
    bnd,
    color="black",
    lw=3,
    alpha=0.3,
    label="Bnd(3, 3, ε): every ε-DP mechanism",
)
ax.plot(
    epsilons,
    cap_max,
    color="tab:blue",
    label="maximal-leakage mechanism, worst prior",
)
ax.plot(
    epsilons,
    cap_exp,
    color="tab:orange",
    label="exponential mechanism, worst prior",
)
ax.plot(
    epsilons,
    leak_max,
    color="tab:blue",
    ls="--",
    label="maximal-leakage mechanism, skewed prior",
)
ax.plot(
    epsilons,
    leak_exp,
    color="tab:orange",
    ls="--",
    label="exponential mechanism, skewed prior",
)
ax.axhline(
    np.log2(V**U), color="grey", ls=":", label="log₂ 27: the whole database"
)
ax.set_xlabel("ε")
ax.set_ylabel("min-entropy leakage (bits)")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Every ε-private mechanism stays under the bound, and the mechanism of Prop. 16 meets it: the bound
# is tight. The exponential mechanism, private at ε, has entries proportional to e^(−ε·d/2): it is
# the maximal-leakage mechanism at ε/2, and leaks exactly as much as that one does at ε/2.
gap = np.max(np.abs(np.subtract(cap_max, bnd)))
print(
    f"largest gap between the Prop. 16 mechanism and the bound: {gap:.1e} bits"
)
