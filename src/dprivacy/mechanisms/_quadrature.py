"""Deterministic quadrature for the planar Laplace distribution over rectangles (private helper).

Everything here is in *scaled* units: lengths are multiplied by ε, so the density centred at the
origin is (1/2π) e^{−‖z‖} and the mass within radius R is the Gamma(2, 1) CDF

    F(R) = 1 − e^{−R}(1 + R),      with complement  G(R) = 1 − F(R) = e^{−R}(1 + R).

Edge integrals
--------------
The mass of the triangle (0, a, b) is (1/2π) ∫_{θ_a}^{θ_b} F(R(θ)) dθ, R(θ) being the distance from 0
to the line ab along the direction θ. For a line at distance h from the origin, parametrised by the
signed coordinate y along the line (the foot of the perpendicular at y = 0), substitute
y = h sinh t: then R = h cosh t and dθ = dt / cosh t, so the triangle over y ∈ [y_a, y_b] has mass
(1/2π) K_F with

    K_F(h; y_a, y_b) = ∫ F(h cosh t) / cosh t dt,     K_G(h; y_a, y_b) = ∫ G(h cosh t) / cosh t dt,

over t from asinh(y_a/h) to asinh(y_b/h), and K_F + K_G = atan(y_b/h) − atan(y_a/h) (the angle).
The variable t is the natural one: the factor 1/cosh t is analytic in the strip |Im t| < π/2, and
G(h cosh t) decays super-exponentially, so the integrands are smooth on every panel and Gauss–Legendre
converges geometrically. Panels are cut where t advances by ``_PANEL_T`` *or* R advances by
``_PANEL_R`` (whichever comes first), which keeps every panel well inside the region of analyticity
both for tiny h (structure at the scale t ~ 1 and t ~ log(1/h)) and for large h (a Gaussian bump
of width 1/√h). Integration stops where R has grown by ``_CUTOFF_R`` beyond its smallest value on
the piece: past it G is below e^{−_CUTOFF_R}(1 + …) of its largest value, i.e. negligible relative to
the integral, and F is 1 to machine precision, so the rest of K_F is the angle, in closed form.
The extent of each piece in t is computed as one accurate asinh difference, so that short edges far
from the foot of the perpendicular keep their relative precision.

Rectangle masses
----------------
A rectangle (possibly unbounded) is a polygon; its mass is the signed sum of the triangle masses
of its edges (a shoelace sum), and the arcs at infinity of an unbounded region carry F = 1, G = 0.
Hence two exact forms:

    mass = (1/2π) Σ_edges ± K_F                       (bounded rectangles only),
    mass = [0 ∈ rectangle] − (1/2π) Σ_edges ± K_G      (any rectangle).

The G form keeps far, tiny masses to full *relative* precision (the angles cancel exactly, not
numerically); the F form is better close to the origin when ε·step is small. For each rectangle the
form with the smaller condition number Σ|terms| / |mass| is used. The reported error estimate is the
quadrature error estimate, plus the unit roundoff times Σ|terms|, plus 2·R·eps·mass for the rounding
of the coordinates (R the region's distance from the origin: e^{−R} has condition number R).

Accuracy, measured against scipy's adaptive 2-D cubature (epsrel 1e-13) on random cells, strips and
quadrants with ε·step from 1e-3 to 20 and offsets up to 30 cells: relative error ≤ 1e-13 in all
cases, ~1e-15 typically, always within the reported estimate (which also covers far cells, where
the rounding of the coordinates dominates). Thin strips close to the centre (ε·step ≪ 1), whose edge
sum cancels badly, are split at the box [−1, 1]² (see :func:`rectangle_masses`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

#: Gauss–Legendre nodes per panel (the returned value) and for the error estimate (a lower order).
_NODES = 20
_NODES_CHECK = 12
#: Panel limits: at most this much of t, and at most this much of R = h cosh t, per panel.
_PANEL_T = 1.0
_PANEL_R = 4.0
#: Stop where R exceeds its minimum on the piece by this much: e^{−45}(1 + 45) ≈ 1.3e−18.
_CUTOFF_R = 45.0
#: Below this radius F is summed from its Taylor series (1 − e^{−R}(1+R) cancels there).
_SERIES_BELOW = 1.0
_SERIES_TERMS = 22
#: Unbounded regions whose edge sum has a condition number above this are split at the box
#: [−_SPLIT_AT, _SPLIT_AT]² (see rectangle_masses).
_SPLIT_COND = 16.0
_SPLIT_AT = 1.0


@lru_cache(maxsize=8)
def _gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(n)
    return x, w


def radial_cdf(r: np.ndarray) -> np.ndarray:
    """F(R) = 1 − e^{−R}(1 + R), the mass within radius R (scaled units), to full relative precision.

    For R < 1 the alternating series Σ_{k≥2} (−1)^k (k−1) R^k / k! (first term R²/2, no serious
    cancellation); above, −expm1(−R) − R e^{−R}.
    """
    r = np.asarray(r, dtype=np.float64)
    out = np.empty_like(r)
    small = r < _SERIES_BELOW
    rs = r[small]
    # Horner on Σ_{k=2}^{K} c_k R^k, c_k = (−1)^k (k−1)/k!
    acc = np.zeros_like(rs)
    fact = [1.0]
    for k in range(1, _SERIES_TERMS + 1):
        fact.append(fact[-1] * k)
    for k in range(_SERIES_TERMS, 1, -1):
        acc = acc * rs + ((-1.0) ** k) * (k - 1) / fact[k]
    out[small] = acc * rs * rs
    rb = r[~small]
    with np.errstate(over="ignore"):
        out[~small] = -np.expm1(-rb) - rb * np.exp(-rb)
    return out


def radial_sf(r: np.ndarray) -> np.ndarray:
    """G(R) = e^{−R}(1 + R) = 1 − F(R) (no cancellation; 0 at R = ∞)."""
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        g = np.exp(-r) * (1.0 + r)
    return np.where(np.isinf(r), 0.0, g)


def _angle_between(h: np.ndarray, y0: np.ndarray, y1: np.ndarray) -> np.ndarray:
    """atan(y1/h) − atan(y0/h) for 0 ≤ y0 ≤ y1 ≤ ∞, without cancellation when both are large."""
    with np.errstate(invalid="ignore"):
        finite = np.arctan((y1 - y0) * h / (h * h + y1 * y0))
    return np.where(np.isinf(y1), np.arctan2(h, y0), finite)


def _asinh_difference(b: np.ndarray, a: np.ndarray, b_minus_a: np.ndarray) -> np.ndarray:
    """asinh(b) − asinh(a) for 0 ≤ a ≤ b < ∞, given b − a accurately.

    asinh b − asinh a = asinh(b√(1+a²) − a√(1+b²)) and the argument equals
    (b − a)(b + a) / (b√(1+a²) + a√(1+b²)), free of cancellation.
    """
    den = b * np.sqrt(1.0 + a * a) + a * np.sqrt(1.0 + b * b)
    with np.errstate(invalid="ignore", divide="ignore"):
        arg = np.where(den > 0, b_minus_a * (b + a) / den, b_minus_a)
    return np.arcsinh(arg)


def piece_integrals(h, ya, yb, *, shifted: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """K_F and K_G for canonical pieces (a line at distance h > 0, 0 ≤ y_a < y_b ≤ ∞) with error estimates.

    Returns ``(kf, kg, err_f, err_g)``; ``err_*`` is the difference between the ``_NODES``-point rule
    (returned) and a ``_NODES_CHECK``-point rule on the same panels: an estimate of the error of the
    lower-order rule, hence a generous one for the returned higher-order value. ``shifted``: K_G and its
    error are returned multiplied by e^{R_a}, R_a = √(h² + y_a²) the piece's nearest distance (the
    integrand e^{−(R − R_a)}(1 + R)), so that far pieces do not underflow (:func:`log_rectangle_masses`).
    """
    h = np.asarray(h, dtype=np.float64)
    ya = np.asarray(ya, dtype=np.float64)
    yb = np.asarray(yb, dtype=np.float64)
    m = h.size
    ta = np.arcsinh(ya / h)
    ra = np.hypot(h, ya)
    rcap = ra + _CUTOFF_R
    ycap = np.sqrt((rcap - h) * (rcap + h))
    yt = np.minimum(yb, ycap)
    # The piece's extent in t, to full relative precision even when it is short and far from the
    # foot (asinh(b) − asinh(a) would lose |t|/Δt of the digits, and the edge sums amplify that).
    width = _asinh_difference(yt / h, ya / h, (yt - ya) / h)
    tt = ta + width
    rt = np.hypot(h, yt)

    # Panel breakpoints: the union of a uniform split in t and a uniform split in R.
    nt = np.maximum(np.ceil(width / _PANEL_T).astype(np.int64), 1)
    nr = np.maximum(np.ceil((rt - ra) / _PANEL_R).astype(np.int64), 1)
    piece_t = np.repeat(np.arange(m), nt - 1)
    k_t = np.arange(piece_t.size) - np.repeat(np.cumsum(nt - 1) - (nt - 1), nt - 1) + 1
    cand_t = ta[piece_t] + k_t * (width / nt)[piece_t]
    piece_r = np.repeat(np.arange(m), nr - 1)
    k_r = np.arange(piece_r.size) - np.repeat(np.cumsum(nr - 1) - (nr - 1), nr - 1) + 1
    rk = ra[piece_r] + k_r * ((rt - ra) / nr)[piece_r]
    hr = h[piece_r]
    cand_r = np.arcsinh(np.sqrt(np.maximum((rk - hr) * (rk + hr), 0.0)) / hr)
    pid = np.concatenate([np.arange(m), piece_t, piece_r, np.arange(m)])
    tb = np.concatenate([ta, cand_t, cand_r, tt])
    order = np.lexsort((tb, pid))
    pid, tb = pid[order], tb[order]
    same = pid[1:] == pid[:-1]
    p_lo, p_hi, p_id = tb[:-1][same], tb[1:][same], pid[:-1][same]

    mid = 0.5 * (p_lo + p_hi)
    half = 0.5 * (p_hi - p_lo)
    hp = h[p_id]
    near = ra[p_id][:, None] if shifted else None

    def rule(n):
        x, w = _gauss_legendre(n)
        t = mid[:, None] + half[:, None] * x[None, :]
        c = np.cosh(t)
        r = hp[:, None] * c
        wt = half[:, None] * w[None, :] / c
        kf = np.bincount(p_id, weights=(radial_cdf(r) * wt).sum(axis=1), minlength=m)
        sf = radial_sf(r) if near is None else np.exp(-np.maximum(r - near, 0.0)) * (1.0 + r)
        kg = np.bincount(p_id, weights=(sf * wt).sum(axis=1), minlength=m)
        return kf, kg

    kf, kg = rule(_NODES)
    kf_c, kg_c = rule(_NODES_CHECK)
    tail = _angle_between(h, yt, yb)  # beyond the cut-off F = 1 to machine precision
    kf = kf + tail
    return kf, kg, np.abs(kf - tail - kf_c), np.abs(kg - kg_c)


def _canonical(h, a, b):
    """Split K(h; a, b) (a < b, any signs) into at most two canonical pieces [y_a, y_b] ⊂ [0, ∞]."""
    lo1 = np.where(a >= 0, a, np.where(b <= 0, -b, 0.0))
    hi1 = np.where(a >= 0, b, np.where(b <= 0, -a, -a))
    two = (a < 0) & (b > 0)
    return (h, lo1, hi1), (h[two], np.zeros(two.sum()), b[two]), two


def _unique_rows(*cols: np.ndarray) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Distinct rows of the columns ``cols`` and the inverse index (np.unique(axis=0) is far slower)."""
    order = np.lexsort(cols[::-1])
    srt = [c[order] for c in cols]
    new = np.ones(order.size, dtype=bool)
    if order.size > 1:
        new[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in srt])
    group = np.cumsum(new) - 1
    inv = np.empty(order.size, dtype=np.intp)
    inv[order] = group
    return tuple(c[new] for c in srt), inv


def rectangle_masses(x0, x1, y0, y1) -> tuple[np.ndarray, np.ndarray]:
    """Planar Laplace masses (scaled units, centred at 0) of rectangles [x0, x1] × [y0, y1].

    Bounds may be ±∞ (an unbounded side). No finite side may lie on a line through the origin.
    Returns ``(mass, err)``: the masses and an estimate of their absolute error (quadrature plus
    rounding in the signed edge sum).

    An unbounded region whose edge sum is ill-conditioned (a thin strip close to the origin, where
    the two long edges carry O(1) terms but the mass is O(width)) is recomputed as the sum of its
    parts inside and outside the box [−1, 1]² (scaled units): the inner part is bounded, where the
    F form is accurate, and the outer parts are far, where the G form is.
    """
    x0, x1, y0, y1 = (np.asarray(v, dtype=np.float64).ravel() for v in (x0, x1, y0, y1))
    mass, err, cond = _rectangle_masses(x0, x1, y0, y1)
    bounded = np.isfinite(x0) & np.isfinite(x1) & np.isfinite(y0) & np.isfinite(y1)
    bad = np.flatnonzero(~bounded & (cond > _SPLIT_COND))
    if bad.size:
        owner, parts = _split_at_box(bad, x0[bad], x1[bad], y0[bad], y1[bad], _SPLIT_AT)
        pm, pe, _ = _rectangle_masses(*parts)
        m2 = np.bincount(owner, weights=pm, minlength=x0.size)[bad]
        e2 = np.bincount(owner, weights=pe, minlength=x0.size)[bad]
        better = e2 < err[bad]
        mass[bad[better]] = m2[better]
        err[bad[better]] = e2[better]
    return mass, err


def log_rectangle_masses(x0, x1, y0, y1) -> tuple[np.ndarray, np.ndarray]:
    """Natural logarithms of the planar Laplace masses (scaled units, centred at 0) of rectangles
    [x0, x1] × [y0, y1] that do not contain the origin, to full relative precision where the masses
    themselves underflow in float64 (a rectangle at distance R has mass about e^{−R}: 0 past R ≈ 745).

    The G form of :func:`rectangle_masses` (mass = −(1/2π) Σ_edges ± K_G, exact cancellation of the
    angles) with every term taken relative to e^{−R₀}, R₀ the rectangle's nearest distance: each piece's
    K_G is integrated as e^{R_a}·K_G (``piece_integrals(shifted=True)``), R_a ≥ R₀ its own nearest
    distance, and log mass = −R₀ + log(−(1/2π) Σ ± e^{−(R_a − R₀)}·e^{R_a}K_G). Returns ``(log_mass,
    rel_err)``: rel_err the estimated relative error of the mass (quadrature plus rounding, as there).
    """
    x0, x1, y0, y1 = (np.asarray(v, dtype=np.float64).ravel() for v in (x0, x1, y0, y1))
    if np.any((x0 < 0) & (x1 > 0) & (y0 < 0) & (y1 > 0)):
        raise ValueError("log_rectangle_masses: a rectangle contains the centre of the distribution (its mass does "
                         "not underflow: use rectangle_masses)")
    m = x0.size
    rect, sgn, two, uniq, inv, n1 = _edge_pieces(x0, x1, y0, y1)
    _, kg, _, eg = piece_integrals(*uniq, shifted=True)
    r_a = np.hypot(uniq[0], uniq[1])  # each piece's nearest distance (its K_G came multiplied by e^{R_a})
    gap_x = np.maximum(np.maximum(x0, -x1), 0.0)
    gap_y = np.maximum(np.maximum(y0, -y1), 0.0)
    near = np.hypot(gap_x, gap_y)
    # each edge's term relative to e^{−R₀} of its rectangle: e^{−(R_a − R₀)} ≤ 1 (the piece is on the edge)
    rel1 = np.exp(-np.maximum(r_a[inv[:n1]] - near[rect], 0.0))
    kg1, eg1 = kg[inv[:n1]] * rel1, eg[inv[:n1]] * rel1
    two_at = np.flatnonzero(two)
    rel2 = np.exp(-np.maximum(r_a[inv[n1:]] - near[rect[two_at]], 0.0))
    kg1 = kg1 + np.bincount(two_at, weights=kg[inv[n1:]] * rel2, minlength=n1)
    eg1 = eg1 + np.bincount(two_at, weights=eg[inv[n1:]] * rel2, minlength=n1)
    two_pi = 2.0 * np.pi
    total = -np.bincount(rect, weights=sgn * kg1, minlength=m) / two_pi
    terms = np.bincount(rect, weights=kg1, minlength=m) / two_pi
    quad = np.bincount(rect, weights=eg1, minlength=m) / two_pi
    eps = np.finfo(np.float64).eps
    with np.errstate(divide="ignore", invalid="ignore"):
        log_mass = np.where(total > 0, -near + np.log(np.maximum(total, 0.0)), -np.inf)
        rel = (quad + 4 * eps * terms) / total + 2 * eps * near
    return log_mass, np.where(total > 0, rel, np.inf)


def _split_at_box(owner, x0, x1, y0, y1, a):
    """Cut rectangles by the lines x = ±a and y = ±a where those cross their interiors."""

    def cuts(lo, hi):
        pts = [lo, np.where((lo < -a) & (-a < hi), -a, np.nan), np.where((lo < a) & (a < hi), a, np.nan), hi]
        return np.stack(pts, axis=1)  # (k, 4): breakpoints, NaN where a cut does not apply

    cx, cy = cuts(x0, x1), cuts(y0, y1)
    out = [[], [], [], [], []]
    for i in range(3):
        for j in range(3):
            xa, xb = _slot(cx, i)
            ya, yb = _slot(cy, j)
            ok = (xa < xb) & (ya < yb)
            for lst, v in zip(out, (owner, xa, xb, ya, yb)):
                lst.append(v[ok])
    o, *parts = (np.concatenate(v) for v in out)
    return o, parts


def _slot(c, i):
    """Sub-interval starting at breakpoint i of each row of c, up to the next valid breakpoint.

    NaN where breakpoint i is absent (NaN), so that the caller's ``left < right`` test drops it.
    """
    valid = ~np.isnan(c)
    left = np.where(valid[:, i], c[:, i], np.nan)
    right = np.full(c.shape[0], np.nan)
    for k in range(c.shape[1] - 1, i, -1):
        right = np.where(valid[:, k], c[:, k], right)
    return left, right


def _edge_pieces(x0, x1, y0, y1):
    """The rectangles' edges as canonical pieces: (rectangle of each live edge, its orientation sign, which edges
    split in two, the distinct pieces (h, y_a, y_b), the inverse index into them, the number of first pieces).
    Edges: (offset of the line, along-line interval, orientation sign); right and top edges count with
    +sign(offset), left and bottom with −sign(offset) (counter-clockwise traversal); unbounded sides have none."""
    m = x0.size
    offs = np.concatenate([x1, x0, y1, y0])
    lo = np.concatenate([y0, y0, x0, x0])
    hi = np.concatenate([y1, y1, x1, x1])
    orient = np.repeat([1.0, -1.0, 1.0, -1.0], m)
    live = np.isfinite(offs)
    if np.any(offs[live] == 0.0):
        raise ValueError("a rectangle side passes through the centre of the distribution")
    idx = np.flatnonzero(live)
    h = np.abs(offs[idx])
    sgn = np.sign(offs[idx]) * orient[idx]
    (h1, a1, b1), (h2, a2, b2), two = _canonical(h, lo[idx], hi[idx])
    uniq, inv = _unique_rows(np.concatenate([h1, h2]), np.concatenate([a1, a2]), np.concatenate([b1, b2]))
    return idx % m, sgn, two, uniq, inv, h1.size


def _rectangle_masses(x0, x1, y0, y1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge-sum masses, error estimates and the condition number of the chosen form."""
    m = x0.size
    rect, sgn, two, uniq, inv, n1 = _edge_pieces(x0, x1, y0, y1)
    kf, kg, ef, eg = (v[inv[:n1]] + np.bincount(np.flatnonzero(two), weights=v[inv[n1:]], minlength=n1)
                      for v in piece_integrals(*uniq))

    two_pi = 2.0 * np.pi
    sum_f = np.bincount(rect, weights=sgn * kf, minlength=m) / two_pi
    abs_f = np.bincount(rect, weights=kf, minlength=m) / two_pi
    sum_g = np.bincount(rect, weights=sgn * kg, minlength=m) / two_pi
    abs_g = np.bincount(rect, weights=kg, minlength=m) / two_pi
    quad_f = np.bincount(rect, weights=ef, minlength=m) / two_pi
    quad_g = np.bincount(rect, weights=eg, minlength=m) / two_pi

    inside = ((x0 < 0) & (x1 > 0) & (y0 < 0) & (y1 > 0)).astype(np.float64)
    bounded = np.isfinite(x0) & np.isfinite(x1) & np.isfinite(y0) & np.isfinite(y1)
    mass_f = sum_f
    mass_g = inside - sum_g
    tiny = np.finfo(np.float64).tiny
    with np.errstate(divide="ignore", invalid="ignore"):
        cond_f = np.where(bounded, abs_f / np.maximum(np.abs(mass_f), tiny), np.inf)
        cond_g = (inside + abs_g) / np.maximum(np.abs(mass_g), tiny)
    use_f = cond_f < cond_g
    mass = np.where(use_f, mass_f, mass_g)
    eps = np.finfo(np.float64).eps
    # Rounding: in the signed edge sum (∝ Σ|terms|), and of the coordinates themselves, which moves
    # e^{−R} by a relative R·eps at the region's nearest distance R.
    gap_x = np.maximum(np.maximum(x0, -x1), 0.0)
    gap_y = np.maximum(np.maximum(y0, -y1), 0.0)
    near = np.hypot(gap_x, gap_y)
    err = np.where(use_f, quad_f, quad_g) + 4 * eps * np.where(use_f, abs_f, inside + abs_g)
    mass = np.maximum(mass, 0.0)
    return mass, err + 2 * eps * near * mass, np.minimum(cond_f, cond_g)
