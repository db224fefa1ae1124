"""
The region of regular priors
============================

For a metric space and ε, a prior π is *ε·d-regular* when π = μΦ for some μ ≥ 0, where
Φ[y, y′] = e^(−ε·d(y, y′)) :cite:p:`ElSalamouny2014`. On regular priors the tight-constraints
mechanism is optimal. The region is the convex hull of the *corner priors* (Prop. 3), which grows with
ε. This example draws it for three secrets on a line and on a ring (the paper's Fig. 2), on the
triangle of all priors.
"""

# %%
# Corner priors
# -------------
# :func:`dprivacy.corner_priors` returns one corner prior per secret, row y being proportional to row
# y of Φ. Priors on three secrets are points of a triangle; barycentric coordinates place them.

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Polygon

import dprivacy as dp
from dprivacy import spaces

TRIANGLE = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])


def to_plane(p):
    """A prior on three secrets as a point of the triangle."""
    return np.asarray(p) @ TRIANGLE


print(dp.corner_priors(spaces.line(3), epsilon=0.7).round(3))

# %%
# The regions, checked against random priors
# ------------------------------------------
# Each panel shades the region for ε = 0.7 and ε = 1.6, and tests 400 random priors with
# :func:`dprivacy.regularity`, which returns the certificate μ ≥ 0 or says why there is none.

rng = np.random.default_rng(0)
samples = rng.dirichlet(np.ones(3), size=400)

fig, axes = plt.subplots(1, 2, figsize=(8, 3.8))
for ax, (name, space) in zip(
    axes, [("line 1 – 2 – 3", spaces.line(3)), ("ring of 3", spaces.ring(3))]
):
    ax.add_patch(Polygon(TRIANGLE, fill=False, color="black", lw=0.8))
    for eps, color in [(1.6, "tab:blue"), (0.7, "tab:orange")]:
        corners = dp.corner_priors(space, epsilon=eps)
        ax.add_patch(
            Polygon(
                to_plane(corners),
                alpha=0.35,
                color=color,
                label=f"regular at ε = {eps}",
            )
        )
    inside = np.array(
        [dp.regularity(space, p, epsilon=0.7).regular for p in samples]
    )
    pts = to_plane(samples)
    ax.scatter(
        *pts[inside].T,
        s=4,
        color="black",
        label="random prior, regular at ε = 0.7",
    )
    ax.scatter(*pts[~inside].T, s=4, color="lightgrey")
    for k, xy in enumerate(TRIANGLE):
        ax.annotate(
            f"secret {k + 1}",
            xy,
            ha="center",
            va="top" if k < 2 else "bottom",
            fontsize=8,
        )
    ax.set_title(name)
    ax.set_aspect("equal")
    ax.set_xlim(-0.1, 1.1)
    ax.set_ylim(-0.12, 1.0)
    ax.axis("off")
axes[0].legend(fontsize=7, loc="upper left")
fig.tight_layout()

# %%
# On the ring the three secrets are at the same distance from each other, so the region is
# symmetric; on the line the middle secret is close to both ends, and priors that single out the
# middle cannot be regular. The uniform prior (the centre) is regular in every panel, so a
# tight-constraints mechanism exists there (Prop. 8).
print(
    [
        dp.regularity(s, dp.uniform_prior(3), epsilon=0.7).regular
        for s in (spaces.line(3), spaces.ring(3))
    ]
)
