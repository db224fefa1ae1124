"""The privacy-constraints matrix of a grid as an FFT operator (never the n×n matrix).

On a W×H grid with a translation-invariant metric, Φ = exp(−ε d) (ElSalamouny et al. 2014 Def 3) depends only on the
offset between two cells: Φ[(r, c), (r', c')] = k(c' − c, r' − r) with k(dx, dy) = exp(−ε·d(dx, dy)),
an even function of each offset. Φ is therefore block-Toeplitz with Toeplitz blocks (BTTB), and it is
the leading principal submatrix of the block-circulant matrix C of the same kernel wrapped on a torus
of P × Q ≥ (2H − 1) × (2W − 1) cells (the *circulant embedding*). C is diagonalized by the 2-D DFT, so

    Φ x = first H×W block of  IDFT( DFT(K) ⊙ DFT(x padded with zeros to P×Q) ),

in O(PQ log PQ) time and O(PQ) memory. K is even, so DFT(K) is real: it is the spectrum of C.

The torus entries outside the offsets |dx| < W, |dy| < H are free; this module fills them with the
kernel of the *wrapped* offset min(i, P − i) (the minimum-image convention), which keeps C close to
the bi-infinite convolution and makes its spectrum positive in most cases (zero padding does not:
a truncated kernel has negative side lobes). Positivity of the spectrum is checked, never assumed.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_epsilon
from ..spaces import GridSpace

_PRECONDITIONERS = ("none", "embedding", "circulant")


def wrapped_kernel(grid: GridSpace, epsilon: float, rows: int, cols: int) -> np.ndarray:
    """The kernel exp(−ε d) on a rows×cols torus, offsets taken by minimum image: K[i, j] =
    exp(−ε·offset_distance(min(j, cols − j), min(i, rows − i)))."""
    i = np.arange(rows)
    j = np.arange(cols)
    di = np.minimum(i, rows - i)
    dj = np.minimum(j, cols - j)
    return np.exp(-epsilon * grid.offset_distance(dj[None, :], di[:, None]))


#: Grids of more cells use scipy.fft (threads, fast lengths); smaller ones numpy.fft on power-of-two
#: lengths: the same pocketfft library, and importing scipy costs ~0.15 s, more than such a solve.
SCIPY_FFT_MIN_CELLS = 12_000


class _NumpyFFT:
    """The subset of ``scipy.fft`` the operator uses, on ``numpy.fft`` (no threads, no overwrite)."""

    @staticmethod
    def next_fast_len(m: int, real: bool = True) -> int:
        return 1 << max(0, int(m - 1).bit_length())

    @staticmethod
    def rfft(x, n=None, axis=-1, workers=None):
        return np.fft.rfft(x, n=n, axis=axis)

    @staticmethod
    def fft(x, n=None, axis=-1, overwrite_x=False, workers=None):
        return np.fft.fft(x, n=n, axis=axis)

    @staticmethod
    def ifft(x, n=None, axis=-1, overwrite_x=False, workers=None):
        return np.fft.ifft(x, n=n, axis=axis)

    @staticmethod
    def irfft(x, n=None, axis=-1, workers=None):
        return np.fft.irfft(x, n=n, axis=axis)

    @staticmethod
    def rfft2(x, s=None, workers=None):
        return np.fft.rfft2(x, s=s)

    @staticmethod
    def irfft2(x, s=None, overwrite_x=False, workers=None):
        return np.fft.irfft2(x, s=s)


def _fft_backend(n: int):
    if n >= SCIPY_FFT_MIN_CELLS:
        import scipy.fft

        return scipy.fft
    return _NumpyFFT


class GridConstraintsOperator:
    """Φ = exp(−ε d) of a :class:`~dprivacy.spaces.GridSpace` as a matrix-free operator.

    Parameters
    ----------
    grid : GridSpace
    epsilon : float
        The metric is ε·d.
    workers : int, optional
        Threads for ``scipy.fft`` (default: scipy's, one).

    Attributes
    ----------
    n : int
        Number of cells (W·H).
    torus : (P, Q)
        Size of the circulant embedding: the smallest fast FFT lengths ≥ (2H − 1, 2W − 1)
        (``scipy.fft.next_fast_len``).
    spectrum : ndarray, shape (P, Q // 2 + 1)
        Eigenvalues of the embedding C (``rfft2`` of the wrapped kernel; real because K is even).

    Notes
    -----
    Vectors are flat arrays of length n in the grid's cell order (index = row·W + col), or arrays of
    shape (H, W). The forward transform is *pruned*: only the H non-zero rows of the padded input are
    transformed along the columns axis before the transform along rows, which saves about a quarter of
    the work of a plain ``rfft2``.
    """

    def __init__(self, grid: GridSpace, epsilon: float, *, workers: int | None = None):
        if not isinstance(grid, GridSpace):
            raise TypeError(f"grid must be a GridSpace, got {type(grid).__name__}")
        self.grid = grid
        self.epsilon = check_epsilon(epsilon)
        self.workers = workers
        self.height, self.width = grid.height, grid.width
        self.n = grid.n
        sfft = self._fft = _fft_backend(self.n)
        self.torus = (
            sfft.next_fast_len(2 * self.height - 1, real=True),
            sfft.next_fast_len(2 * self.width - 1, real=True),
        )
        p, q = self.torus
        kernel = wrapped_kernel(grid, self.epsilon, p, q)
        self.kernel_sum = float(kernel.sum())  # Σ over the torus ≥ any row sum of Φ
        self.kernel_norm2 = float(np.sqrt(np.square(kernel).sum()))
        self.spectrum = sfft.rfft2(kernel, workers=workers).real
        self._circulant = None

    # -- the matrix-vector product ------------------------------------------------------------
    def _forward(self, x2: np.ndarray) -> np.ndarray:
        p, q = self.torus
        f = self._fft.rfft(x2, n=q, axis=-1, workers=self.workers)
        return self._fft.fft(f, n=p, axis=-2, overwrite_x=True, workers=self.workers)

    def _backward(self, f: np.ndarray) -> np.ndarray:
        q = self.torus[1]
        g = self._fft.ifft(f, axis=-2, overwrite_x=True, workers=self.workers)[..., : self.height, :]
        return self._fft.irfft(g, n=q, axis=-1, workers=self.workers)[..., : self.width]

    def _as_grid(self, x) -> tuple[np.ndarray, tuple]:
        x = np.asarray(x, dtype=np.float64)
        shape = x.shape
        if shape[-1:] == (self.n,):
            return x.reshape(shape[:-1] + (self.height, self.width)), shape
        if shape[-2:] == (self.height, self.width):
            return x, shape
        raise ValueError(
            f"vector has shape {shape}; expected (..., {self.n}) or (..., {self.height}, {self.width}) "
            f"for the {self.width}x{self.height} grid"
        )

    def matvec(self, x) -> np.ndarray:
        """Φ x (same shape as ``x``; leading axes are batched)."""
        x2, shape = self._as_grid(x)
        f = self._forward(x2)
        f *= self.spectrum
        return self._backward(f).reshape(shape)

    __call__ = matvec

    def embedding_solve(self, x) -> np.ndarray:
        """R C⁻¹ Rᵀ x: the leading block of C⁻¹ applied to x padded with zeros.

        A symmetric positive-definite preconditioner when the spectrum of C is positive (a principal
        submatrix of C⁻¹); it costs one matrix-vector product.
        """
        x2, shape = self._as_grid(x)
        f = self._forward(x2)
        f /= self.spectrum
        return self._backward(f).reshape(shape)

    def circulant_solve(self, x) -> np.ndarray:
        """M⁻¹ x for the circulant approximation M of Φ on a torus of about the grid's own size.

        M has the wrapped kernel on a (P', Q') = fast lengths ≥ (H, W) torus; its eigenvalues are
        clipped from below at :attr:`circulant_floor` so that it is positive definite, and it is applied
        as R M⁻¹ Rᵀ (zero padding, leading block), which is symmetric positive definite. Cheaper than
        :meth:`embedding_solve` (a quarter of the FFT size).
        """
        if self._circulant is None:
            self._build_circulant()
        lam, (p, q) = self._circulant
        x2, shape = self._as_grid(x)
        f = self._fft.rfft2(x2, s=(p, q), workers=self.workers)
        f /= lam
        y = self._fft.irfft2(f, s=(p, q), overwrite_x=True, workers=self.workers)
        return y[..., : self.height, : self.width].reshape(shape)

    def _build_circulant(self):
        sfft = self._fft
        p = sfft.next_fast_len(self.height, real=True)
        q = sfft.next_fast_len(self.width, real=True)
        lam = sfft.rfft2(wrapped_kernel(self.grid, self.epsilon, p, q), workers=self.workers).real
        # Clip at a fraction of the largest eigenvalue: wrapping a long-range kernel on a small torus
        # can give tiny or negative eigenvalues that would make M⁻¹ useless or indefinite.
        self.circulant_floor = 1e-3 * float(lam.max())
        self._circulant = (np.maximum(lam, self.circulant_floor), (p, q))

    # -- spectral facts ------------------------------------------------------------------------
    @property
    def embedding_min(self) -> float:
        """The smallest eigenvalue of the circulant embedding C (as computed by the FFT)."""
        return float(self.spectrum.min())

    @property
    def embedding_max_abs(self) -> float:
        """‖C‖₂ = the largest |eigenvalue| of the embedding: the amplification in the FFT product."""
        return float(np.abs(self.spectrum).max())

    @property
    def embedding_max(self) -> float:
        """The largest eigenvalue of C; an upper bound on λ_max(Φ) (Cauchy interlacing)."""
        return float(self.spectrum.max())

    def preconditioner(self, kind: str):
        """The function x ↦ M⁻¹x for ``kind`` in {"none", "embedding", "circulant"}."""
        if kind == "none":
            return None
        if kind == "embedding":
            if not self.embedding_min > 0:
                raise ValueError(
                    "the 'embedding' preconditioner needs a positive-definite circulant embedding; "
                    f"its smallest eigenvalue is {self.embedding_min:.3g}"
                )
            return self.embedding_solve
        if kind == "circulant":
            return self.circulant_solve
        raise ValueError(f"preconditioner must be one of {', '.join(map(repr, _PRECONDITIONERS))}; got {kind!r}")

    def as_linear_operator(self):
        """A ``scipy.sparse.linalg.LinearOperator`` (symmetric) acting on flat vectors."""
        from scipy.sparse.linalg import LinearOperator

        n = self.n
        return LinearOperator((n, n), matvec=lambda v: self.matvec(np.ravel(v)), rmatvec=lambda v: self.matvec(np.ravel(v)), dtype=np.float64)

    def row(self, i: int) -> np.ndarray:
        """Row i of Φ: exp(−ε d(y_i, ·)) (length n)."""
        return np.exp(-self.epsilon * self.grid.distances_from(int(i)))

    def __repr__(self) -> str:
        return f"<GridConstraintsOperator {self.grid.name} ε={self.epsilon:g}, torus {self.torus[0]}x{self.torus[1]}>"
