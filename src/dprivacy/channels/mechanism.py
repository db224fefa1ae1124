r"""The Mechanism object: a built noise mechanism that knows its space, its ε and why it is private.

A mechanism K : Y → Z on a finite metric space (Y, d) is ε·d-private when
K[y, z] ≤ e^{ε d(y, y')} K[y', z] for all y, y', z (ElSalamouny et al. 2014 Def 1; Chatzikokolakis et al. 2013 Def 1). A
:class:`Mechanism` carries

* its **space** (the secrets, with their labels) and its output labels;
* its **ε** (keyword-only and required everywhere: there is no default privacy level);
* its :class:`PrivacyCertificate`: *how* ε·d-privacy is known — by construction (a theorem about the
  construction, e.g. Chatzikokolakis et al. 2013 §4 for the geometric mechanisms), by ElSalamouny et al. 2014 Prop 6 (a
  tight-constraints mechanism with z ≥ 0), by an exact check of the channel, or only numerically;
* its channel, **dense** (:class:`DenseMechanism`, a :class:`~dprivacy.channels.Channel`) or
  **implicit** (e.g. a grid tight-constraints mechanism is its diagonal z and the metric): rows on
  demand (:meth:`Mechanism.rows`), the dense matrix on demand (:attr:`Mechanism.matrix`, refused with a
  clear message when it would not fit in memory), and sampling from secret labels to output labels
  (:meth:`Mechanism.sample`) through :mod:`dprivacy.sampling`.

Every measure in :mod:`dprivacy.measures` accepts a Mechanism or a plain Channel and chooses the dense
or implicit algorithm itself (an implicit mechanism offers the hooks ``_binary_utility``,
``_capacity_sum``, ``_check_privacy``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .._validate import check_epsilon, check_row_indices
from ..results import Result, UtilityResult
from ..spaces import DENSE_LIMIT_BYTES, MetricSpace
from . import Channel
from .privacy import check_privacy_log, check_stored_privacy

#: The ways ε·d-privacy of a mechanism can be known, strongest first.
BASES = ("construction", "theorem", "exact-check", "numerical-check", "spot-check", "none")


@dataclass(frozen=True)
class PrivacyCertificate(Result):
    """How a mechanism's ε·d-privacy is known.

    Attributes
    ----------
    ok : bool
        ε·d-privacy is established (on the basis below). False when it is refuted or unknown.
    epsilon : float
        The ε the mechanism was asked for.
    basis : str
        One of :data:`BASES`: ``"construction"`` (the construction is private by a theorem cited in
        ``reason``), ``"theorem"`` (a theorem applied to computed quantities whose signs are certified,
        e.g. ElSalamouny et al. 2014 Prop 6 with z ≥ 0), ``"exact-check"`` (every constraint of the stored channel
        checked in exact or certified arithmetic), ``"numerical-check"`` (checked in float64 with a
        stated tolerance), ``"spot-check"`` (a sample of rows checked: can refute, cannot certify, so
        ``ok`` is False unless another basis holds), ``"none"``.
    reason : str
        A sentence: the theorem or the check, and its outcome.
    smallest_epsilon : float or None
        The smallest ε' for which the *stored* channel is ε'·d-private, when computed.
    slack : float
        A certified excess allowed over ``epsilon`` (quantisation, solver margin); 0 when none.
    rigorous : bool
        True when the basis is a proof (construction, certified signs, exact arithmetic); False when it
        rests on floating-point computation with estimated error ("verified numerically").

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1, Prop 6.
    """

    ok: bool
    epsilon: float
    basis: str
    reason: str
    smallest_epsilon: float | None = None
    slack: float = 0.0
    rigorous: bool = True
    check: Any = field(default=None, repr=False)

    def __post_init__(self):
        if self.basis not in BASES:
            raise ValueError(f"basis must be one of {', '.join(BASES)}; got {self.basis!r}")

    @property
    def certificate(self):
        return self.check


def by_construction(*, epsilon: float, reason: str) -> PrivacyCertificate:
    """A certificate for a mechanism private by a theorem about its construction (cite it in ``reason``)."""
    return PrivacyCertificate(True, float(epsilon), "construction", reason, smallest_epsilon=None)


class Mechanism:
    """A mechanism K : Y → Z built on a metric space at a privacy level ε.

    Subclasses implement :meth:`rows` (and, for implicit mechanisms, the measure hooks). Users get
    Mechanisms from the constructors (``truncated_geometric(space, epsilon=...)``) or from the
    ``.mechanism`` of a result (``tight_constraints(space, epsilon=...).mechanism``).

    Attributes
    ----------
    name : str
        The mechanism's name (``"truncated-geometric"``, ``"tight-constraints"``, ...).
    space : MetricSpace
        The secrets Y and their metric d (unscaled).
    epsilon : float
        The privacy level: the mechanism is meant to be ε·d-private.
    certificate : PrivacyCertificate
        How that is known.
    outputs : list
        Labels of the outputs Z (default: the space's labels when Z = Y, else ``0..m-1``).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1 (§3.1: a
       mechanism H : Y → Z and d-privacy).
    """

    #: True when the channel is stored as a matrix.
    is_dense: bool = False

    def __init__(self, space: MetricSpace, *, epsilon: float, name: str, certificate: PrivacyCertificate,
                 n_outputs: int, outputs: Sequence | None = None, details: dict | None = None):
        if not isinstance(space, MetricSpace):
            raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
        self.space = space
        self.epsilon = check_epsilon(epsilon)
        self.name = str(name)
        if not isinstance(certificate, PrivacyCertificate):
            raise TypeError(f"certificate must be a PrivacyCertificate, got {type(certificate).__name__}")
        self.certificate = certificate
        self._m = int(n_outputs)
        if outputs is None:
            outputs = space.labels if self._m == space.n else range(self._m)
        self._outputs = outputs
        #: Construction figures worth reporting (solver, iterations, residual, ...): plain values only.
        self.details = dict(details or {})

    # -- shape and labels -----------------------------------------------------------------------
    @property
    def n_inputs(self) -> int:
        return self.space.n

    @property
    def n_outputs(self) -> int:
        return self._m

    @property
    def shape(self) -> tuple[int, int]:
        return (self.space.n, self._m)

    @property
    def inputs(self) -> list:
        """Labels of the secrets (the space's labels)."""
        return self.space.labels

    @property
    def outputs(self) -> list:
        """Labels of the outputs."""
        if not isinstance(self._outputs, list):
            self._outputs = list(self._outputs)
        return self._outputs

    def __repr__(self) -> str:
        kind = "dense" if self.is_dense else "implicit"
        return f"<Mechanism {self.name} on {self.space.name}, ε={self.epsilon:g}, {kind} {self.shape[0]}x{self.shape[1]}>"

    # -- entries --------------------------------------------------------------------------------
    def rows(self, secrets) -> np.ndarray:
        """Rows K[y, ·] for secret *indices* ``secrets``: shape (m,) for an int, (k, m) for k indices."""
        raise NotImplementedError

    def log_rows(self, secrets) -> np.ndarray:
        """Natural logarithms of :meth:`rows` (−∞ for 0). Implicit mechanisms give them exactly where the
        rows underflow in float64."""
        with np.errstate(divide="ignore"):
            return np.log(self.rows(secrets))

    @property
    def dense_nbytes(self) -> int:
        """Bytes of the dense float64 matrix."""
        return 8 * self.space.n * self._m

    def _check_dense_fits(self) -> None:
        need = self.dense_nbytes
        if need > DENSE_LIMIT_BYTES:
            raise MemoryError(
                f"the dense {self.space.n}x{self._m} matrix of {self.name} on {self.space.name} needs "
                f"{need / 2**30:.1f} GiB, over the {DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit; use rows(), "
                "sample() and the measures, which work on the implicit mechanism"
            )

    @property
    def matrix(self) -> np.ndarray:
        """The dense channel matrix (read-only), built on demand; MemoryError when it would not fit."""
        return self.channel.matrix

    @property
    def channel(self) -> Channel:
        """The dense :class:`~dprivacy.channels.Channel` with the mechanism's labels."""
        ch = getattr(self, "_channel", None)
        if ch is None:
            self._check_dense_fits()
            ch = Channel._trusted(self.rows(np.arange(self.space.n)), self.inputs, self.outputs)
            self._channel = ch
        return ch

    def __array__(self, dtype=None, copy=None):
        h = self.matrix
        return h if dtype is None else h.astype(dtype)

    # -- labels <-> indices ---------------------------------------------------------------------
    def secret_index(self, secrets) -> np.ndarray:
        """Row indices of secret labels (vectorised over the distinct labels)."""
        return _index_of(self.inputs, secrets, "secret")

    def output_labels(self, idx) -> np.ndarray:
        """Output labels of output indices (an array of the labels' type)."""
        idx = np.asarray(idx, dtype=np.intp)
        labels = self.outputs
        if _is_range(labels):
            return idx.copy()
        arr = np.empty(len(labels), dtype=object)
        arr[:] = labels
        return arr[idx]

    # -- sampling -------------------------------------------------------------------------------
    def sample_indices(self, secrets, *, rng=None) -> np.ndarray:
        """One output index per secret index (rng: see :func:`dprivacy.sampling.random_source`)."""
        from ..sampling import as_generator

        return self.channel.sample(np.asarray(secrets), as_generator(rng))

    def sample(self, secrets, *, rng=None) -> np.ndarray:
        """One output label per secret label.

        ``rng=None`` draws from the release-grade source; an int seed is reproducible research mode
        (:func:`dprivacy.sampling.random_source`).
        """
        return self.output_labels(self.sample_indices(self.secret_index(secrets), rng=rng))

    # -- measure hooks (None: the measure uses the dense matrix) --------------------------------
    def _binary_utility(self, prior):
        """The binary-gain utility U = V(π, K) = Σ_z max_y π_y K[y, z] with its optimal remap (a
        :class:`~dprivacy.measures.UtilityResult`) without the dense matrix, or None."""
        return None

    def _capacity_sum(self) -> float | None:
        """Σ_z max_y K[y, z] without the dense matrix, or None."""
        return None

    def _check_privacy(self, space: MetricSpace, epsilon: float, tol: float):
        """A :class:`~dprivacy.measures.PrivacyResult` without the dense matrix, or None."""
        return None

    # -- reporting ------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The mechanism's description as strict-JSON-ready figures (no matrix)."""
        from ..results import jsonable

        return jsonable({
            "mechanism": self.name,
            "space": self.space.name,
            "n": self.space.n,
            "n_outputs": self._m,
            "epsilon": self.epsilon,
            "dense": self.is_dense,
            "privacy": self.certificate.to_dict(),
            **self.details,
        })


class DenseMechanism(Mechanism):
    """A mechanism stored as a dense channel matrix."""

    is_dense = True

    def __init__(self, channel, space: MetricSpace, *, epsilon: float, name: str,
                 certificate: PrivacyCertificate | None = None, details: dict | None = None):
        ch = channel if isinstance(channel, Channel) else Channel(channel)
        if ch.n_inputs != space.n:
            raise ValueError(f"the channel has {ch.n_inputs} rows but {space.name} has {space.n} points")
        e = check_epsilon(epsilon)
        if certificate is None:
            certificate = checked_certificate(ch, space, epsilon=e)
        # The channel's own output labels win (an LP's guesses); its input labels are the space's.
        outputs = ch.outputs if ch.outputs != list(range(ch.n_outputs)) else None
        super().__init__(space, epsilon=e, name=name, certificate=certificate, n_outputs=ch.n_outputs,
                         outputs=outputs, details=details)
        self._channel = Channel._trusted(ch.matrix, space.labels, self.outputs)

    def rows(self, secrets) -> np.ndarray:
        return self._channel.matrix[np.asarray(secrets)]

    def sample_indices(self, secrets, *, rng=None) -> np.ndarray:
        """One output index per secret index, drawn exactly from the integer-quantised channel
        (:attr:`exact_sampler`; its delivered ε is ``exact_sampler.delivered_epsilon``)."""
        from ..sampling import as_generator

        ys = check_row_indices(secrets, self.n_inputs)
        return self.exact_sampler.sample(ys, as_generator(rng))

    @property
    def exact_sampler(self):
        """The :class:`~dprivacy.sampling.exact.ExactSampler` of this mechanism (built once): rows
        quantised to integers summing to 2^62, with the ε the quantised channel actually delivers on the
        mechanism's space."""
        s = getattr(self, "_exact", None)
        if s is None:
            from ..sampling.exact import ExactSampler

            s = ExactSampler.from_matrix(self._channel.matrix, space=self.space, epsilon=self.epsilon)
            self._exact = s
        return s


_TINY = float(np.finfo(np.float64).tiny)

#: Rows per block of the log-space measures of :class:`LogMechanism`.
_BLOCK_ROWS = 1024


def log_underflows(log_h: np.ndarray) -> bool:
    """Whether a matrix given by its log-entries has a positive entry (finite log) below the smallest normal
    float64, i.e. one its float64 matrix would hold as 0 or without its relative precision (the exact zeros, −∞,
    at infinite distance are fine)."""
    lg = np.asarray(log_h)
    return bool((np.isfinite(lg) & (lg < np.log(_TINY))).any())


class LogEntries:
    """The measures of a mechanism from its exact log-entries (:meth:`Mechanism.log_rows`), a block of rows at a
    time, for mechanisms whose float64 entries underflow: utility for the binary gain with its remap (ElSalamouny et al. 2014
    §3.4, Eq. 6) and Σ_z max_y K[y, z] for the capacity. Mixed in before :class:`Mechanism`."""

    def _blocks(self):
        n = self.space.n
        for a in range(0, n, _BLOCK_ROWS):
            rows = np.arange(a, min(n, a + _BLOCK_ROWS))
            yield rows, self.log_rows(rows)

    def _binary_utility(self, prior):
        """Σ_z max_y π_y K[y, z] with the remap z ↦ argmax_y, from the log-entries (ElSalamouny et al. 2014 §3.4, Eq. 6)."""
        with np.errstate(divide="ignore"):
            logp = np.log(np.asarray(prior, dtype=np.float64))
        best = np.full(self._m, -np.inf)
        arg = np.zeros(self._m, dtype=np.intp)
        for rows, lg in self._blocks():
            v = lg + logp[rows, None]
            i = np.argmax(v, axis=0)
            top = v[i, np.arange(self._m)]
            better = top > best
            best[better], arg[better] = top[better], rows[i[better]]
        return UtilityResult(float(np.exp(best).sum()), arg)

    def _capacity_sum(self) -> float:
        best = np.full(self._m, -np.inf)
        for _, lg in self._blocks():
            best = np.maximum(best, lg.max(axis=0))
        return float(np.exp(best).sum())


class LogMechanism(LogEntries, Mechanism):
    r"""A mechanism held by the natural logarithms of its entries (n × m, −∞ for 0): for the kernels
    e^{−εd} whose float64 matrix underflows (ε·d above about 708: a ring of 1,600 points at ε = 1, a
    clique at distance 800), where a 0 beside a positive entry makes the stored matrix fail the privacy
    check although the mechanism is private.

    :func:`dprivacy.check_privacy` checks it on the exact log-entries (every constraint pair, every
    output); utility, leakage and capacity are computed from them a block of rows at a time; sampling
    quantises the rows to integers with the uniform mixing the exact entries call for (which keeps privacy
    by the mediant inequality, :func:`dprivacy.sampling.exact.mixing_weight`), and measures the ε the
    integers deliver.
    """

    def __init__(self, log_matrix, space: MetricSpace, *, epsilon: float, name: str, certificate: PrivacyCertificate,
                 outputs=None, details: dict | None = None):
        lg = np.array(log_matrix, dtype=np.float64)
        if lg.ndim != 2 or lg.shape[0] != space.n:
            raise ValueError(f"the log-matrix must have {space.n} rows (one per point of {space.name}), got shape {lg.shape}")
        if np.isnan(lg).any() or (lg == np.inf).any():
            raise ValueError("the log-matrix must hold logarithms of probabilities (finite, or −∞ for 0)")
        lg.setflags(write=False)
        self._log = lg
        super().__init__(space, epsilon=epsilon, name=name, certificate=certificate, n_outputs=lg.shape[1],
                         outputs=outputs, details={"implicit": True, **(details or {})})

    def log_rows(self, secrets) -> np.ndarray:
        """log K[y, ·], exact where the entries underflow in float64."""
        return self._log[check_row_indices(secrets, self.space.n)]

    def rows(self, secrets) -> np.ndarray:
        return np.exp(self.log_rows(secrets))

    def _check_privacy(self, space, epsilon, tol):
        """:func:`~dprivacy.measures.check_privacy_log` on the exact log-entries."""
        return check_privacy_log(self._log, space, epsilon=epsilon, rtol=tol)

    @property
    def exact_sampler(self):
        """The :class:`~dprivacy.sampling.exact.ExactSampler` of the rows (built once), its uniform mixing
        decided on the exact log-entries: :func:`~dprivacy.sampling.exact.mixing_weight` reads float rows, in
        which an underflowed entry is 0 (on a clique at distance 800 every off-diagonal one)."""
        s = getattr(self, "_exact", None)
        if s is None:
            import math

            from ..sampling.exact import (DELIVERED_EPS_WORK, PRECISION_BITS, WEIGHT_BITS, ExactSampler,
                                          delivered_epsilon, quantise_rows)

            lg = self._log
            finite = np.isfinite(lg)
            floor = 2.0 ** (PRECISION_BITS - WEIGHT_BITS)
            m = int(finite.any(axis=0).sum())
            gamma = min(1.0, m * floor) if finite.any() and float(lg[finite].min()) < math.log(floor) else 0.0
            w = quantise_rows(np.exp(lg), bits=WEIGHT_BITS, gamma=gamma)
            eps = None
            if self.space.constraint_pairs()[0].size * w.shape[1] <= DELIVERED_EPS_WORK:
                eps = delivered_epsilon(w, self.space)
            s = ExactSampler(w, WEIGHT_BITS, gamma, eps, self.epsilon, None if eps is None else eps - self.epsilon,
                             np.cumsum(w, axis=1))
            self._exact = s
        return s

    def sample_indices(self, secrets, *, rng=None) -> np.ndarray:
        """One output index per secret index, drawn exactly from :attr:`exact_sampler`."""
        from ..sampling import as_generator

        return self.exact_sampler.sample(check_row_indices(secrets, self.space.n), as_generator(rng))


def built(matrix: np.ndarray, space: MetricSpace, *, epsilon: float, name: str, reason: str,
          outputs=None, details: dict | None = None) -> DenseMechanism:
    """A DenseMechanism from a matrix the library built itself, private by construction (``reason``
    cites the theorem). The matrix is trusted: rows sum to 1 up to rounding."""
    if np.isnan(matrix).any():
        # a construction that broke down in float64 (ε·d below or above what float64 carries) leaves NaN entries:
        # refused, not certified by construction
        raise ValueError(f"{name} at ε = {epsilon:g} on {space.name}: the channel's entries are not numbers in float64 "
                         "(ε·d too small or too large for float64); use an ε nearer the scale of the distances")
    obj = DenseMechanism.__new__(DenseMechanism)
    ch = Channel._trusted(matrix, space.labels, outputs if outputs is not None else (space.labels if matrix.shape[1] == space.n else None))
    Mechanism.__init__(obj, space, epsilon=epsilon, name=name, certificate=by_construction(epsilon=epsilon, reason=reason),
                       n_outputs=ch.n_outputs, outputs=ch.outputs, details=details)
    obj._channel = ch
    return obj


def built_from_log(log_matrix: np.ndarray, space: MetricSpace, *, epsilon: float, name: str, reason: str,
                   details: dict | None = None) -> Mechanism:
    """A mechanism the library built from its exact log-entries, private by construction (``reason``):
    dense when its float64 matrix is private as stored, else a :class:`LogMechanism` (:func:`underflows`)."""
    lg = np.asarray(log_matrix, dtype=np.float64)
    if np.isnan(lg).any():
        raise ValueError(f"{name} at ε = {epsilon:g} on {space.name}: the channel's log-entries are not numbers in float64 "
                         "(ε·d too small or too large for float64); use an ε nearer the scale of the distances")
    if not log_underflows(lg):
        with np.errstate(under="ignore"):
            h = np.exp(lg)
        return built(h, space, epsilon=epsilon, name=name, reason=reason, details=details)
    return LogMechanism(log_matrix, space, epsilon=epsilon, name=name, certificate=by_construction(epsilon=epsilon, reason=reason),
                        details=details)


def checked_certificate(channel, space: MetricSpace, *, epsilon: float) -> PrivacyCertificate:
    """Certificate of a stored channel by the d-privacy check of :func:`dprivacy.measures.check_privacy`
    (float64 log-ratios with its stated tolerance: "verified numerically")."""
    h = channel.matrix if isinstance(channel, Channel) else Channel(channel).matrix
    r = check_stored_privacy(h, space, epsilon=epsilon)
    how = f"checked on {r.pairs_checked} constraint pairs × every output in float64 (log-ratio tolerance ε·d·{r.rtol:g} + {r.atol:.2g})"
    if r.ok:
        reason = f"ε·d-private: {how}; smallest ε of the stored channel {r.smallest_epsilon:.12g}"
    else:
        reason = f"NOT ε·d-private: {how}; worst (y, y', z) = {r.worst}, smallest ε {r.smallest_epsilon:.12g} > {epsilon:g}"
    return PrivacyCertificate(bool(r.ok), float(epsilon), "numerical-check", reason,
                              smallest_epsilon=float(r.smallest_epsilon), rigorous=False, check=r)


def as_mechanism(channel, space: MetricSpace, *, epsilon: float, name: str = "channel") -> DenseMechanism:
    """Wrap a user's channel matrix on ``space`` as a Mechanism, its privacy checked at ε."""
    if isinstance(channel, Mechanism):
        return channel
    return DenseMechanism(channel, space, epsilon=epsilon, name=name)


def _is_range(labels) -> bool:
    if isinstance(labels, range):
        return labels.start == 0 and labels.step == 1
    n = len(labels)
    if n == 0:
        return True
    first, last = labels[0], labels[-1]
    if type(first) is not int or first != 0 or type(last) is not int or last != n - 1:
        return False
    return all(type(v) is int and v == i for i, v in enumerate(labels))


def _index_of(labels: list, query, what: str) -> np.ndarray:
    q = np.asarray(query)
    if _is_range(labels):
        if q.size and not np.issubdtype(q.dtype, np.integer):
            raise TypeError(f"{what} labels here are the integers 0..{len(labels) - 1}, got dtype {q.dtype}")
        if q.size and (q.min() < 0 or q.max() >= len(labels)):
            bad = q[(q < 0) | (q >= len(labels))].ravel()[0]
            raise ValueError(f"unknown {what} label {bad!r}: expected 0..{len(labels) - 1}")
        return q.astype(np.intp, copy=False)
    lookup = {lab: i for i, lab in enumerate(labels)}
    flat = q.reshape(-1) if q.dtype != object or q.ndim <= 1 else q.reshape(-1)
    if q.ndim == 0:
        flat = np.array([q.item()], dtype=object)
    uniq, inverse = np.unique(flat, return_inverse=True) if flat.dtype != object else _unique_objects(flat)
    idx = np.empty(len(uniq), dtype=np.intp)
    for k, lab in enumerate(uniq):  # one lookup per distinct label, not per record
        key = lab.item() if isinstance(lab, np.generic) else lab
        try:
            idx[k] = lookup[key]
        except (KeyError, TypeError):
            raise ValueError(f"unknown {what} label {key!r}: not a point of the space") from None
    return idx[inverse].reshape(q.shape)


def _unique_objects(flat: np.ndarray):
    first: dict = {}
    inverse = np.empty(flat.size, dtype=np.intp)
    uniq = []
    for i, v in enumerate(flat):
        k = first.get(v)
        if k is None:
            k = first[v] = len(uniq)
            uniq.append(v)
        inverse[i] = k
    return uniq, inverse
