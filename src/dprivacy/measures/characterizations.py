"""Operational characterizations of d-privacy: hiding functions and neighbourhoods (Chatzikokolakis et al. 2013 §3).

Chatzikokolakis et al. 2013 (file Chatzikokolakis et al. 2013), §3 "Generalized Privacy", gives two Bayesian readings of
d-privacy, generalizing the two classical readings of ε-differential privacy (its Thms 1 and 2):

* **Hiding functions (Thm 3).** A hiding function φ : X → X is applied to the secret before the
  mechanism, which then sees only φ(x). With d(φ) = sup_x d(x, φ(x)), d-privacy of K implies, for every
  prior π and every observed event Z,

  .. math:: d_P(σ_1, σ_2) \\le 2\\, d(φ), \\quad σ_1 = \\mathrm{Bayes}(π, K, Z),\\;
            σ_2 = \\mathrm{Bayes}(π, K∘φ, Z).

* **Neighbourhoods (Thm 4).** For a set N of secrets with diameter d(N) = max_{x,x'∈N} d(x, x'), an
  adversary who knows the secret lies in N learns little more about it:

  .. math:: d_P(π_{|N}, σ_{|N}) \\le d(N), \\quad σ = \\mathrm{Bayes}(π, K, Z),

  where π_{|N}(x) = π(x | N).

Both theorems are stated for d-privacy with d already scaled; as everywhere in dprivacy the space holds
the unscaled metric and ``epsilon`` scales it, so the bounds are 2ε·d(φ) and ε·d(N). Distances between
distributions are multiplicative (natural log): d_P(p, q) = max_x |ln p(x)/q(x)|, 0/0 counted as 0 and
p/0 (p > 0) as ∞.

For a finite channel these are computable quantities: the functions below evaluate the left-hand sides
for a given channel, prior, hiding function or neighbourhood, maximized over observed events Z, and
return them with the theorem's bound and the event and secret where the worst case occurs. An event Z
is a set of outputs; by default each single output z (the posteriors of the hyper-distribution [π ▷ H]),
or every non-empty set of outputs (``events="all"``), or sets given explicitly. For neighbourhoods the
single outputs already give the supremum over all events: σ_{|N}(x)/π_{|N}(x) = H[x, Z] / Σ_{x'∈N}
π_{|N}(x') H[x', Z] is a ratio of two sums over z ∈ Z, which lies between the smallest and largest of the
ratios for single z (mediant inequality). For hiding functions σ_1/σ_2 is a product of two such ratios
and larger events can matter, hence the option.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..results import Result
from .._validate import as_prior, check_epsilon
from ..channels import Channel
from ..spaces import GridSpace, MetricSpace
from .privacy import PRIVACY_RTOL, rounding_floor

#: Largest number of outputs for which ``events="all"`` enumerates every non-empty set of outputs.
MAX_ALL_EVENTS_OUTPUTS = 16


@dataclass(frozen=True)
class HidingResult(Result):
    """Outcome of :func:`check_hiding` (Chatzikokolakis et al. 2013 Thm 3).

    Attributes
    ----------
    ok : bool
        ``value <= bound + tolerance``: the conclusion of Thm 3 holds for this prior and hiding function.
    value : float
        max over compared events Z and secrets x of |ln σ_1(x)/σ_2(x)| (nats), with σ_1 the posterior
        given Z under K and σ_2 under K∘φ. 0 when no event could be compared.
    bound : float
        2ε·d(φ), the bound of Thm 3 (∞ when φ moves a point to infinite distance).
    hiding_distance : float
        d(φ) = max_x d(x, φ(x)), unscaled.
    epsilon : float
        The ε scaling the metric.
    worst_event : tuple of int or None
        The outputs forming the event Z where ``value`` is attained.
    worst_secret : int or None
        The secret x where ``value`` is attained.
    posterior, hidden_posterior : ndarray or None
        σ_1 and σ_2 at ``worst_event``.
    events_compared : int
        Events with positive probability under both K and K∘φ (only there are both posteriors defined).
    tolerance : float
        Absolute tolerance used for ``ok``.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 2, Thm 3.
    """

    ok: bool
    value: float
    bound: float
    hiding_distance: float
    epsilon: float
    worst_event: tuple[int, ...] | None
    worst_secret: int | None
    posterior: np.ndarray | None
    hidden_posterior: np.ndarray | None
    events_compared: int
    tolerance: float

    def __bool__(self) -> bool:
        return bool(self.ok)

    @property
    def reason(self) -> str:
        if self.events_compared == 0:
            return "no event has positive probability under both K and K∘φ: there is no posterior to compare"
        verdict = "within" if self.ok else "ABOVE"
        return (f"the posterior changes by at most {self.value:.6g} nats when x is replaced by φ(x) (event "
                f"{self.worst_event}, secret {self.worst_secret}): {verdict} the bound 2ε·d(φ) = {self.bound:.6g} "
                "of Chatzikokolakis et al. 2013 Thm 3")


@dataclass(frozen=True)
class NeighbourhoodResult(Result):
    """Outcome of :func:`check_neighbourhood` (Chatzikokolakis et al. 2013 Thm 4).

    Attributes
    ----------
    ok : bool
        ``value <= bound + tolerance``: the conclusion of Thm 4 holds for this prior and neighbourhood.
    value : float
        max over compared events Z and secrets x ∈ N of |ln σ_{|N}(x)/π_{|N}(x)| (nats). 0 when no event
        could be compared.
    bound : float
        ε·d(N), the bound of Thm 4.
    diameter : float
        d(N) = max_{x,x'∈N} d(x, x'), unscaled.
    epsilon : float
        The ε scaling the metric.
    neighbourhood : ndarray of int
        The secrets of N, sorted.
    worst_event : tuple of int or None
        The outputs forming the event Z where ``value`` is attained.
    worst_secret : int or None
        The secret x ∈ N (an index into the whole space) where ``value`` is attained.
    prior_restricted : ndarray or None
        π_{|N} (entries in the order of ``neighbourhood``); None when π(N) = 0.
    posterior_restricted : ndarray or None
        σ_{|N} at ``worst_event``.
    events_compared : int
        Events Z with σ(N) > 0 (only there is σ_{|N} defined).
    tolerance : float
        Absolute tolerance used for ``ok``.
    note : str
        Why nothing could be compared (π(N) = 0), else "".

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 3, Thm 4.
    """

    ok: bool
    value: float
    bound: float
    diameter: float
    epsilon: float
    neighbourhood: np.ndarray
    worst_event: tuple[int, ...] | None
    worst_secret: int | None
    prior_restricted: np.ndarray | None
    posterior_restricted: np.ndarray | None
    events_compared: int
    tolerance: float
    note: str = ""

    def __bool__(self) -> bool:
        return bool(self.ok)

    @property
    def reason(self) -> str:
        if self.note:
            return self.note
        if self.events_compared == 0:
            return "no event has positive probability from N: there is no posterior to compare"
        verdict = "within" if self.ok else "ABOVE"
        return (f"learning the event {self.worst_event} moves the prior restricted to N by at most {self.value:.6g} "
                f"nats (secret {self.worst_secret}): {verdict} the bound ε·d(N) = {self.bound:.6g} of Chatzikokolakis et al. 2013 Thm 4")


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def _tolerance(bound: float, rtol: float, atol, *distributions) -> float:
    """bound·rtol + atol, atol defaulting to the float64 rounding floor of the logs compared."""
    if atol is None:
        with np.errstate(divide="ignore"):
            atol = max(rounding_floor(np.log(np.asarray(a)[np.asarray(a) > 0])) for a in distributions)
    return (bound * rtol if np.isfinite(bound) else 0.0) + float(atol)


def swap(n: int, i: int, j: int) -> np.ndarray:
    """The hiding function exchanging secrets i and j and fixing the others, as an index array.

    Swaps are the hiding functions of Chatzikokolakis et al. 2013 Def 2 (a maximal Φ-chain needs φ(x_i) = x_{i+1} and
    φ(x_{i+1}) = x_i); with them the converse of Thm 3 holds.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 2, Thm 3.
    """
    for name, v in (("i", i), ("j", j)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v < n:
            raise ValueError(f"{name} must be a secret index in 0..{n - 1}, got {v!r}")
    phi = np.arange(n)
    phi[i], phi[j] = j, i
    return phi


def _channel_matrix(channel, space: MetricSpace) -> np.ndarray:
    h = channel.matrix if isinstance(channel, Channel) else Channel(channel).matrix
    if h.shape[0] != space.n:
        raise ValueError(f"channel has {h.shape[0]} rows but the space has {space.n} points")
    return h


def _event_masks(events, m: int) -> np.ndarray | None:
    """Events as a boolean (k, m) matrix; None means "each single output" (the identity)."""
    if events is None:
        return None
    if isinstance(events, str):
        if events != "all":
            raise ValueError(f"events must be None, 'all' or a collection of output sets, got {events!r}")
        if m > MAX_ALL_EVENTS_OUTPUTS:
            raise ValueError(
                f"events='all' enumerates 2^m - 1 output sets; m = {m} is over the limit "
                f"{MAX_ALL_EVENTS_OUTPUTS}: pass the events explicitly"
            )
        codes = np.arange(1, 2**m)
        return ((codes[:, None] >> np.arange(m)) & 1).astype(bool)
    if isinstance(events, np.ndarray) and events.dtype == bool:
        if events.ndim != 2 or events.shape[1] != m:
            raise ValueError(f"a boolean events array must have shape (k, {m}), got {events.shape}")
        return events
    rows = []
    for e in events:
        idx = np.asarray(list(e) if not np.isscalar(e) else [e])
        if idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"each event must be a set of output indices, got {e!r}")
        if idx.size and (idx.min() < 0 or idx.max() >= m):
            raise ValueError(f"event {e!r} has output indices outside 0..{m - 1}")
        row = np.zeros(m, dtype=bool)
        row[idx] = True
        rows.append(row)
    if not rows:
        raise ValueError("events is empty: give at least one set of outputs")
    return np.array(rows)


def _event_probabilities(h: np.ndarray, masks: np.ndarray | None) -> np.ndarray:
    """P[x, k] = K(x)(Z_k), the probability of event k from secret x."""
    return h if masks is None else h @ masks.T.astype(np.float64)


def _event_outputs(masks: np.ndarray | None, k: int) -> tuple[int, ...]:
    return (int(k),) if masks is None else tuple(int(z) for z in np.flatnonzero(masks[k]))


def _log_ratio_abs(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """|ln p/q| entrywise with 0/0 = 0 and p/0 = ∞ (the d_P conventions)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.abs(np.log(p) - np.log(q))
    r[(p == 0) & (q == 0)] = 0.0
    return r


def _pairwise_distances(space: MetricSpace, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """d(i[k], j[k]) for index arrays; grids use their offsets, never their dense matrix."""
    i, j = np.asarray(i, dtype=np.intp), np.asarray(j, dtype=np.intp)
    if isinstance(space, GridSpace):
        c = space.coordinates / space.step
        return space.offset_distance(c[i, 0] - c[j, 0], c[i, 1] - c[j, 1])
    return space.distances[i, j]


# ---------------------------------------------------------------------------------------------
# Thm 3: hiding functions
# ---------------------------------------------------------------------------------------------


def hiding_distance(space: MetricSpace, hiding) -> float:
    """d(φ) = max_x d(x, φ(x)), the largest distance a hiding function moves a secret (Chatzikokolakis et al. 2013 §3).

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 2, Thm 3.
    """
    phi = _as_hiding(hiding, space.n)
    return float(_pairwise_distances(space, np.arange(space.n), phi).max())


def _as_hiding(hiding, n: int) -> np.ndarray:
    phi = np.asarray(hiding)
    if phi.ndim != 1 or phi.shape[0] != n:
        raise ValueError(f"hiding function must be an index array of length {n} (x ↦ φ(x)), got shape {phi.shape}")
    if not np.issubdtype(phi.dtype, np.integer):
        raise TypeError(f"hiding function must be an integer index array, got dtype {phi.dtype}")
    if phi.min() < 0 or phi.max() >= n:
        raise ValueError(f"hiding function values must lie in 0..{n - 1}, got range {phi.min()}..{phi.max()}")
    return phi.astype(np.intp)


def check_hiding(
    channel, space: MetricSpace, prior, hiding, *, epsilon: float, events=None, rtol: float = PRIVACY_RTOL,
    atol: float | None = None,
) -> HidingResult:
    """How much a hiding function changes the adversary's posterior, against the bound of Chatzikokolakis et al. 2013 Thm 3.

    Computes max_Z d_P(σ_1, σ_2), where σ_1(x) ∝ π(x) K(x)(Z) is the posterior after observing the
    event Z from the channel K, and σ_2(x) ∝ π(x) K(φ(x))(Z) the posterior when the channel is run on
    the hidden secret φ(x). Thm 3 (Chatzikokolakis et al. 2013, file Chatzikokolakis et al. 2013): if K is ε·d-private then
    this is at most 2ε·d(φ) for every prior, with d(φ) = max_x d(x, φ(x)); conversely, if it holds for
    all priors and a maximally tight set of hiding functions (e.g. the swaps of :func:`swap` along the
    edges of a graph metric), K is ε·d-private.

    Parameters
    ----------
    channel : Mechanism, Channel or array_like (n, m)
    space : MetricSpace
        The secrets' metric d (unscaled).
    prior : array_like (n,)
        May contain zeros.
    hiding : array_like of int, shape (n,)
        φ as an index array: secret x is replaced by ``hiding[x]``.
    epsilon : float
        Scale of the metric (the theorem is applied to ε·d).
    events : None, "all", or collection of output sets
        The observed events Z: None for each single output; "all" for every non-empty set of outputs
        (at most :data:`MAX_ALL_EVENTS_OUTPUTS` outputs); or explicit sets of output indices (or a
        boolean array of shape (k, m)). Events impossible under K or under K∘φ are skipped: a
        posterior is undefined there.
    rtol, atol : float
        ``ok`` when the value is at most bound·(1 + rtol) + atol; ``atol`` defaults to the float64
        rounding of the log posteriors compared (:func:`dprivacy.measures.privacy.rounding_floor`), as in
        :func:`~dprivacy.measures.check_privacy`.

    Returns
    -------
    HidingResult

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 2, Thm 3 (the hiding-function
       characterization).
    """
    e = check_epsilon(epsilon)
    h = _channel_matrix(channel, space)
    p = as_prior(prior, space.n)
    phi = _as_hiding(hiding, space.n)
    d_phi = float(_pairwise_distances(space, np.arange(space.n), phi).max())
    bound = 2.0 * e * d_phi

    masks = _event_masks(events, h.shape[1])
    pz = _event_probabilities(h, masks)
    j1 = p[:, None] * pz
    j2 = p[:, None] * pz[phi]
    s1, s2 = j1.sum(axis=0), j2.sum(axis=0)
    keep = np.flatnonzero((s1 > 0) & (s2 > 0))
    if keep.size == 0:
        return HidingResult(True, 0.0, bound, d_phi, e, None, None, None, None, 0, 0.0)
    post1 = j1[:, keep] / s1[keep]
    post2 = j2[:, keep] / s2[keep]
    r = _log_ratio_abs(post1, post2)
    x, k = np.unravel_index(int(np.argmax(r)), r.shape)
    value = float(r[x, k])
    tol = _tolerance(bound, rtol, atol, post1, post2)
    return HidingResult(
        ok=bool(value <= bound + tol),
        value=value,
        bound=bound,
        hiding_distance=d_phi,
        epsilon=e,
        worst_event=_event_outputs(masks, keep[k]),
        worst_secret=int(x),
        posterior=post1[:, k].copy(),
        hidden_posterior=post2[:, k].copy(),
        events_compared=int(keep.size),
        tolerance=tol,
    )


# ---------------------------------------------------------------------------------------------
# Thm 4: neighbourhoods
# ---------------------------------------------------------------------------------------------


def _as_neighbourhood(neighbourhood, n: int) -> np.ndarray:
    a = np.asarray(neighbourhood)
    if a.dtype == bool:
        if a.shape != (n,):
            raise ValueError(f"a boolean neighbourhood mask must have shape ({n},), got {a.shape}")
        a = np.flatnonzero(a)
    else:
        a = np.atleast_1d(a)
        if a.ndim != 1:
            raise ValueError(f"neighbourhood must be a 1-D collection of secret indices, got shape {a.shape}")
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"neighbourhood must hold integer secret indices, got dtype {a.dtype}")
        if a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError(f"neighbourhood indices must lie in 0..{n - 1}, got range {a.min()}..{a.max()}")
    if a.size == 0:
        raise ValueError("neighbourhood is empty: give at least one secret")
    return np.unique(a).astype(np.intp)


def neighbourhood_diameter(space: MetricSpace, neighbourhood) -> float:
    """d(N) = max_{x,x'∈N} d(x, x'), the diameter of a set of secrets (Chatzikokolakis et al. 2013 §3, Def 3).

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 3.
    """
    nb = _as_neighbourhood(neighbourhood, space.n)
    i, j = np.meshgrid(nb, nb, indexing="ij")
    return float(_pairwise_distances(space, i.ravel(), j.ravel()).max())


def check_neighbourhood(
    channel, space: MetricSpace, prior, neighbourhood, *, epsilon: float, events=None, rtol: float = PRIVACY_RTOL,
    atol: float | None = None,
) -> NeighbourhoodResult:
    """How much an adversary who knows the secret lies in N learns, against the bound of Chatzikokolakis et al. 2013 Thm 4.

    Computes max_Z d_P(π_{|N}, σ_{|N}), with π_{|N}(x) = π(x)/π(N) and σ_{|N}(x) ∝ π(x) K(x)(Z) for
    x ∈ N (the posterior restricted to N). Thm 4 (Chatzikokolakis et al. 2013, file Chatzikokolakis et al. 2013): if K is
    ε·d-private then this is at most ε·d(N) for every prior, d(N) the diameter of N; conversely, if it
    holds for all priors and a maximally tight family of neighbourhoods (e.g. the pairs {y, y'} of the
    edges of a graph metric), K is ε·d-private.

    Parameters
    ----------
    channel : Mechanism, Channel or array_like (n, m)
    space : MetricSpace
    prior : array_like (n,)
        May contain zeros; when π(N) = 0 nothing is compared and ``reason`` says so.
    neighbourhood : collection of int, or boolean mask of length n
        The secrets of N (duplicates are ignored).
    epsilon : float
        Scale of the metric.
    events : None, "all", or collection of output sets
        As in :func:`check_hiding`. Single outputs (the default) already give the supremum over all
        events, by the mediant inequality (see the module notes); events with σ(N) = 0 are skipped.
    rtol, atol : float
        ``ok`` when the value is at most bound·(1 + rtol) + atol; ``atol`` defaults to the float64
        rounding of the log posteriors compared (:func:`dprivacy.measures.privacy.rounding_floor`), as in
        :func:`~dprivacy.measures.check_privacy`.

    Returns
    -------
    NeighbourhoodResult

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 3, Thm 4 (the neighbourhood
       characterization).
    """
    e = check_epsilon(epsilon)
    h = _channel_matrix(channel, space)
    p = as_prior(prior, space.n)
    nb = _as_neighbourhood(neighbourhood, space.n)
    i, j = np.meshgrid(nb, nb, indexing="ij")
    diam = float(_pairwise_distances(space, i.ravel(), j.ravel()).max())
    bound = e * diam

    mass = p[nb].sum()
    if mass <= 0:
        return NeighbourhoodResult(
            True, 0.0, bound, diam, e, nb, None, None, None, None, 0, 0.0,
            note="the prior gives N probability 0: π restricted to N is undefined, nothing is compared",
        )
    prior_n = p[nb] / mass
    masks = _event_masks(events, h.shape[1])
    pz = _event_probabilities(h, masks)[nb]
    joint = prior_n[:, None] * pz
    s = joint.sum(axis=0)
    keep = np.flatnonzero(s > 0)
    if keep.size == 0:  # only possible with explicit events that N never produces
        return NeighbourhoodResult(True, 0.0, bound, diam, e, nb, None, None, prior_n, None, 0, 0.0)
    post = joint[:, keep] / s[keep]
    r = _log_ratio_abs(post, np.broadcast_to(prior_n[:, None], post.shape))
    x, k = np.unravel_index(int(np.argmax(r)), r.shape)
    value = float(r[x, k])
    tol = _tolerance(bound, rtol, atol, post, prior_n)
    return NeighbourhoodResult(
        ok=bool(value <= bound + tol),
        value=value,
        bound=bound,
        diameter=diam,
        epsilon=e,
        neighbourhood=nb,
        worst_event=_event_outputs(masks, keep[k]),
        worst_secret=int(nb[x]),
        prior_restricted=prior_n,
        posterior_restricted=post[:, k].copy(),
        events_compared=int(keep.size),
        tolerance=tol,
    )
