r"""The tight-constraints mechanism of a grid held implicitly: the diagonal z and the grid, never the
n×n matrix.

H[y, z] = e^{−ε d(y, z)} z_z (ElSalamouny et al. 2014 Def 6 with diag(H) = z, Prop 7). Everything a caller needs is
computed from z and the translation-invariant kernel:

* rows on demand (O(n) each);
* utility for the binary gain with the optimal remap and min-entropy leakage for any prior, through
  the max-convolution of :mod:`.maxplus` (closed form for the uniform prior: U = Σz/n, L = log₂Σz);
* d-privacy: certified by ElSalamouny et al. 2014 Prop 6 (z ≥ 0 on a metric ⇒ ε·d-private), plus a numeric spot check
  of sampled rows with :func:`dprivacy.measures.check_privacy`;
* exact vectorized sampling (:mod:`.sampling`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import check_epsilon, check_positive_int
from ..channels.mechanism import Mechanism, PrivacyCertificate
from ..channels.privacy import PrivacyResult, check_privacy_log
from ..results import UtilityResult
from ..sampling import as_generator
from ..spaces import GridSpace, MetricSpace
from .maxplus import max_convolution
from .sampling import KernelRejectionSampler


@dataclass(frozen=True)
class SpotCheck:
    """A numeric spot check of an implicit tight-constraints mechanism: ``check_privacy`` in log space on
    ``rows`` sampled secret cells (all pairs among them, every output). It can refute privacy, never
    certify it; the certificate is ElSalamouny et al. 2014 Prop 6 (``ImplicitTightMechanism.certificate``).

    ``ok``: no violation found. ``result``: the :class:`~dprivacy.measures.PrivacyResult`. ``rows``: the
    sampled cells. ``reason``: a sentence.
    """

    ok: bool
    result: PrivacyResult
    rows: np.ndarray
    reason: str

    def __bool__(self) -> bool:
        return self.ok


class ImplicitTightMechanism(Mechanism):
    """H[y, z] = e^{−ε d(y,z)} z_z on a grid, stored as z (ElSalamouny et al. 2014 Def 6).

    Parameters
    ----------
    grid : GridSpace
    z : array_like, shape (n,)
        The diagonal; must be ≥ 0 (a mechanism that exists).
    epsilon : float
    certificate : GridTightResult, optional
        The solver's result that certified z ≥ 0 (kept for :meth:`privacy_certificate`). Without it, z
        is checked to solve Φ z = 1 (one FFT product): ‖Φz − 1‖∞ ≤ ``atol``, so that the rows are
        distributions.
    atol : float
        Tolerance of that check.

    Notes
    -----
    Usually obtained as ``dprivacy.tight_constraints(grid, epsilon=ε).mechanism``. Rows sum to
    (Φz)_y = 1 + r_y with r the solver's residual (|r_y| ≲ 1e-10).
    """

    #: The space type this mechanism is built on (a subclass may take another structured space).
    space_type = GridSpace

    def __init__(self, grid: GridSpace, z, *, epsilon: float, certificate=None, atol: float = 1e-8):
        if not isinstance(grid, self.space_type):
            raise TypeError(f"grid must be a {self.space_type.__name__}, got {type(grid).__name__}")
        self.grid = grid
        self.epsilon = check_epsilon(epsilon)
        z = np.array(z, dtype=np.float64).ravel()
        if z.shape != (grid.n,):
            raise ValueError(f"z has {z.size} entries, expected {grid.n} (one per cell of {grid.name})")
        if not np.isfinite(z).all():
            raise ValueError("z must be finite")
        if (z < 0).any():
            i = int(np.argmin(z))
            raise ValueError(
                f"z has negative entries (z[{i}] = {z[i]:.6g}): the tight-constraints mechanism does not "
                "exist at this ε (ElSalamouny et al. 2014 Prop 7-8)"
            )
        if certificate is None:
            res = float(np.abs(self._phi_matvec(z) - 1.0).max())
            if not res <= atol:
                raise ValueError(
                    f"z does not solve Φz = 1 for ε = {self.epsilon:g} on {grid.name}: ‖Φz − 1‖∞ = {res:.3g} > "
                    f"{atol:g}, so its rows are not distributions (use dprivacy.tight_constraints)"
                )
        z.setflags(write=False)
        self.z = z
        self.solver_result = certificate
        self._sampler = None
        if certificate is not None:
            from .phi_solve import RIGOROUS

            rigorous = certificate.certainty in RIGOROUS
            reason = ("z ≥ 0 " + ("certified" if rigorous else "verified numerically") + f" by the solver ({certificate.reason}); "
                      "a tight-constraints mechanism with z ≥ 0 on a metric is ε·d-private (ElSalamouny et al. 2014 Prop 6)")
        else:
            rigorous = False
            reason = "z ≥ 0 and ‖Φz − 1‖∞ checked in float64; a tight-constraints mechanism with z ≥ 0 is ε·d-private (ElSalamouny et al. 2014 Prop 6)"
        cert = PrivacyCertificate(True, self.epsilon, "theorem", reason, smallest_epsilon=self.epsilon, rigorous=rigorous)
        Mechanism.__init__(self, grid, epsilon=self.epsilon, name="tight-constraints", certificate=cert, n_outputs=grid.n)

    @property
    def n(self) -> int:
        return self.grid.n

    # -- the structure (a subclass on another space overrides these) --------------------------
    def _phi_matvec(self, x: np.ndarray) -> np.ndarray:
        """Φx with Φ = e^{−ε d}, matrix-free (the grid's FFT operator)."""
        from .operator import GridConstraintsOperator

        return GridConstraintsOperator(self.grid, self.epsilon).matvec(x)

    def _max_convolution(self, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(max_y π_y e^{−ε d(y, z)}, argmax_y) for every output z."""
        return max_convolution(self.grid, prior, self.epsilon)

    # -- entries ------------------------------------------------------------------------------
    def rows(self, i) -> np.ndarray:
        """Row(s) H[i, ·] = e^{−ε d(i, ·)} z: shape (n,) for an int, (k, n) for k indices."""
        idx = np.asarray(i)
        if not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"row index must be an integer, got {i!r}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.n):
            raise ValueError(f"row index must lie in 0..{self.n - 1}, got {i!r}")
        return np.exp(-self.epsilon * self.grid.distances_from(idx)) * self.z

    def log_rows(self, i) -> np.ndarray:
        """log H[i, ·] = −ε d(i, ·) + log z, exact where the rows underflow in float64 (ε·d > 708)."""
        with np.errstate(divide="ignore"):
            return -self.epsilon * self.grid.distances_from(np.asarray(i)) + np.log(self.z)

    # -- measure hooks (dprivacy.measures calls these; no n×n matrix) -----------------------
    def _binary_utility(self, prior) -> UtilityResult:
        """Expected binary gain with the optimal remap: U = Σ_z max_y π_y e^{−ε d(y,z)} z_z
        (ElSalamouny et al. 2014 §3.4, Eq. 6), and the remap z ↦ argmax_y.

        For the uniform prior U = Σz/n with the identity remap (Φ's diagonal is 1 and its other entries
        are below 1). Otherwise the max over y is a max-convolution (:func:`.maxplus.max_convolution`:
        O(n) for Manhattan and Chebyshev, branch and bound for Euclidean). For an ε·d-regular prior the
        identity remap is optimal (ElSalamouny et al. 2014 Thm 4) and U = Σ_y μ_y (Thm 2).
        """
        p = np.asarray(prior, dtype=np.float64)
        if p.size and np.all(p == p[0]):
            return UtilityResult(float(self.z.sum()) / self.n, np.arange(self.n))
        m, arg = self._max_convolution(p)
        return UtilityResult(float(m @ self.z), arg)

    def _capacity_sum(self) -> float:
        """Σ_z max_y H[y, z] = Σ_z z_z (the max over y is at y = z: Φ's diagonal is 1)."""
        return float(self.z.sum())

    def _check_privacy(self, space, epsilon, tol):
        """By ElSalamouny et al. 2014 Prop 6 when asked about the mechanism's own grid and ε: holds, smallest ε = ε
        (the constraints towards the diagonal are tight, Def 6); None otherwise (dense check)."""
        if space is not self.grid or epsilon != self.epsilon:
            return None
        if self.n == 1:
            return PrivacyResult(True, self.epsilon, 0.0, None, 0.0, 0.0, 0, tol)
        # The constraint towards a diagonal entry is tight (Def 6): H[1,1] = e^{ε d(0,1)} H[0,1].
        d01 = float(self.grid.distances_from(0)[1])
        return PrivacyResult(True, self.epsilon, self.epsilon, (1, 0, 1), self.epsilon * d01, d01, 0, tol)

    # -- privacy ------------------------------------------------------------------------------
    def spot_check(self, *, rows: int = 16, rng=None, tol: float = 1e-9) -> SpotCheck:
        """A numeric spot check of ε·d-privacy (the proof is ElSalamouny et al. 2014 Prop 6, in :attr:`certificate`).

        It draws ``rows`` distinct secret cells at random, builds their rows (k × n) and
        runs :func:`dprivacy.measures.check_privacy` on them with the metric restricted to those cells:
        every pair among them, every output. Cost O(rows² · n).
        """
        rows = check_positive_int(rows, name="rows", minimum=2)
        gen = as_generator(rng)
        k = min(rows, self.n)
        cells = np.sort(gen.choice(self.n, size=k, replace=False)) if k < self.n else np.arange(self.n)
        # In log space: log H[y, z] = −ε d(y, z) + log z_z is exact where e^{−εd} underflows (ε·d > 708
        # on large grids), so the check concerns the mechanism, not its rounded float64 rows.
        with np.errstate(divide="ignore"):
            log_rows = -self.epsilon * self.grid.distances_from(cells) + np.log(self.z)[None, :]
        sub = MetricSpace(self.grid.distances_from(cells)[:, cells], validate=False, name=f"{k} cells of {self.grid.name}")
        spot = check_privacy_log(log_rows, sub, epsilon=self.epsilon, rtol=tol)
        reason = (
            f"spot check of {k} rows ({k * (k - 1) // 2} pairs × {self.n} outputs): "
            + ("no violation" if spot.ok else f"VIOLATION at {spot.worst} (excess {spot.excess:.3g})")
            + f", largest ratio / distance = {spot.smallest_epsilon:.12g} (ε = {self.epsilon:g})"
        )
        return SpotCheck(bool(spot.ok), spot, cells, reason)

    # -- sampling -----------------------------------------------------------------------------
    @property
    def sampler(self) -> KernelRejectionSampler:
        if self._sampler is None:
            self._sampler = KernelRejectionSampler(self.grid, self.z, self.epsilon)
        return self._sampler

    def sample_indices(self, secrets, *, rng=None, stats: dict | None = None) -> np.ndarray:
        """One output cell per secret cell (exact rejection sampler, see :mod:`.sampling`; ``stats``: its counts
        are added there, :meth:`~.sampling.KernelRejectionSampler.sample`)."""
        return self.sampler.sample(secrets, rng, stats=stats)
