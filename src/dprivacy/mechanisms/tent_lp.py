r"""The tent LP, for the binary gain: ElSalamouny et al. 2014's tight-constraints columns (Def 6) with the row sums relaxed
to ≤ 1. Its dual gives a bound on the optimal mechanism's gain, and its primal, repaired, a private channel:
a quick bracket that the LP's engines start from (:mod:`.lp_solve`), and the answer itself where the prior
is ε·d-regular and the tight-constraints mechanism is optimal (ElSalamouny et al. 2014 Thm 4).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import linprog

from ..channels import Channel
from ..measures.privacy import check_privacy
from ..measures.utility import utility
from .lp_model import _Context
from .repair import certified_repair, lift_work

#: The share of the caller's time limit that the repair of the tent LP's channel may take.
TENT_REPAIR_SHARE = 0.1

#: The tent LP (binary gain) is solved when its dense matrix has at most this many entries.
TENT_ENTRIES = 20_000_000

#: ... and its channel is repaired only when a lift costs at most this many (pair, column) products
#: (:func:`lift_work`; densely, 50×50 with 1,900 outputs takes over 15 minutes: there only its bound is used).
TENT_REPAIR_WORK = 1_000_000_000


def _tent_bracket(ctx: _Context, *, time_limit: float | None = None, share: float | None = None):
    r"""A quick bracket for the binary gain from the *tent LP*

    .. math:: \max \sum_w \pi_w t_w \quad\text{s.t.}\quad \sum_w e^{-\varepsilon d(y, w)}\, t_w \le 1\ (y \in Y),\ t \ge 0

    (over the kept outputs w). Upper bound: every private channel has H[y, w] ≥ e^{−εd(y,w)} H[w, w]
    (privacy between y and w), so with t_w = H[w, w] its rows summing to 1 give Σ_w e^{−εd(y,w)} t_w ≤ 1:
    the tent LP's optimum is ≥ OPT, and so is Σ μ for any dual-feasible μ ≥ 0 (Φᵀμ ≥ π), which is what
    is returned (the solver's duals scaled up until feasible, so the bound does not rest on its
    tolerance). These are ElSalamouny et al. 2014's tight-constraints columns (Def 6) with the row sums relaxed to ≤ 1.
    Lower bound: the columns t_w e^{−εd(·, w)} (private: tents), rows renormalised and repaired by
    :func:`certified_repair`, then checked exactly by the caller.

    Returns (channel n × m, its gain, the bound, the dual-feasible μ) — the channel None (gain −inf) when its repair would
    cost more than ``TENT_REPAIR_WORK`` or when ``time_limit`` (seconds, HiGHS's own limit for the LP)
    ran out before the repair — or None when too large, out of time, or the LP fails.
    """
    n, kept = ctx.space.n, ctx.kept
    if n * kept.size > TENT_ENTRIES:
        return None
    t0 = time.perf_counter()
    with np.errstate(over="ignore", under="ignore"):
        phi = np.exp(-ctx.eps * ctx.space.distances[:, kept])
    phi[~np.isfinite(phi)] = 0.0
    pi = ctx.p[kept]
    opts = None if time_limit is None else {"time_limit": float(time_limit)}
    res = linprog(-pi, A_ub=phi, b_ub=np.ones(n), bounds=(0, None), method="highs", options=opts)
    if res.status != 0 or res.x is None:
        return None
    mu = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)
    cover = phi.T @ mu
    if (cover <= 0).any():
        return None
    mu_feasible = mu * max(1.0, float((pi / cover).max()))  # Φᵀμ ≥ π: dual feasible
    bound = float(mu_feasible.sum())
    t = np.clip(np.asarray(res.x, dtype=np.float64), 0.0, None)
    out_of_time = time_limit is not None and time.perf_counter() - t0 >= time_limit
    if lift_work(ctx.space, max(1, int((t > 0).sum()))) > TENT_REPAIR_WORK or out_of_time:
        return None, float("-inf"), bound, mu_feasible  # the bound only: the repair would cost too much (or no time is left)
    h = np.zeros((n, ctx.m))
    h[:, kept] = phi * t[None, :]
    sums = h.sum(axis=1)
    if (sums <= 0).any():
        return None
    deadline = ctx.deadline
    if share is not None:
        # the tent channel is a start and a fallback, not the answer (unless the prior is regular): its
        # repair may take at most TENT_REPAIR_SHARE of the call's limit (on grid:30x30 with a Dirichlet
        # prior it takes 36 s, which would leave nothing of a 30 s limit to the decomposition)
        own = time.perf_counter() + TENT_REPAIR_SHARE * share
        deadline = own if deadline is None else min(deadline, own)
    h, _ = certified_repair(h / sums[:, None], ctx.space, epsilon=ctx.eps, deadline=deadline)
    if not check_privacy(h, ctx.space, epsilon=ctx.eps).ok:
        return None, float("-inf"), bound, mu_feasible  # the bound stands; the channel could not be repaired (in time)
    return h, float(utility(Channel._trusted(h, ctx.space.labels, ctx.labels), ctx.p).value), bound, mu_feasible
