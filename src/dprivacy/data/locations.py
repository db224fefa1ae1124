r"""Geo-indistinguishability for real locations: planar Laplace applied geodesically (seed 002 §6.2).

The planar Laplace mechanism reports z with density D_ε(x)(z) = ε²/(2π) e^{−ε d(x, z)}: a displacement
of length r ~ Gamma(2, 1/ε) in a uniformly random direction (seed 002 §6.2; Andrés et al. CCS 2013).
Here ε is per metre and the displacement is applied **on the WGS84 ellipsoid** with pyproj's geodesic
``Geod.fwd``: the reported point is at geodesic distance r from the true one, in azimuth θ, at every
latitude, across the antimeridian and near the poles. Tools that add the noise in degrees, or in an
unscaled projection, shrink the east–west or north–south noise with latitude; this does not.

**Without floating-point leaks** (what is released, not only the mathematical mechanism):

1. the displacement v = (east, north) is the exact discrete planar Laplace on the lattice ΛZ² of the
   true point's tangent plane, Λ = :data:`NOISE_LATTICE_M` = 2^-22 m (0.24 µm): P(v) ∝ e^{−ε‖v‖},
   drawn with exact decisions (:mod:`dprivacy.sampling.planar`; no float value decides a draw);
2. it is applied along the geodesic (GeographicLib through pyproj: 15 nm accuracy) and the result is
   rounded to a fixed **output lattice** of ``precision`` degrees (default 1e-7°, about 1.1 cm), whose
   longitude step doubles toward the poles so that no cell is narrower than
   :data:`MIN_CELL_WIDTH_M` (1 mm; from 84.8° on), and whose rows within about 560 m of a pole are
   merged into the pole itself (:func:`output_lattice`). The lattice depends on the output only.

**The guarantee** (:func:`geodesic_guarantee`, stated in every sidecar): for true points x, x' at
geodesic distance d and any released point y within distance r of both,

.. math:: P(y \mid x) \le \exp\bigl(\varepsilon d + \sigma + d\,r/(3R^2)\bigr)\, P(y \mid x').

* σ = ε·δ + ln κ is **rigorous in the tangent plane**: a cell of the output lattice (area A, perimeter P,
  diagonal ≤ δ = 1.58 cm) contains between (A − P s)/Λ² and (A + P s + π s²)/Λ² noise-lattice points
  (s = Λ/√2 + 20 nm, the lattice's covering radius plus the geodesic computation's error), each of
  weight between e^{−ε·dmax} and e^{−ε·dmin}, and dmax(x', y) − dmin(x, y) ≤ d + δ. With the defaults
  ln κ ≤ 8.3·10⁻⁴ (at the 1 mm cells near the poles; 1.4·10⁻⁴ at the equator), so σ ≈ ε·0.0158 m + 0.00082.
  Every cell contains at least one lattice point from every input: **every output is reachable from
  every true point** (Mironov's condition), so no output singles out an input.
* d·r/(3R²) (R = 6,335 km, the smallest radius of curvature of WGS84) is the first-order difference
  between the ellipsoid's geodesic polar area element and the plane's (sphere model: ρ sin(r/ρ) vs r);
  it is an approximation, **not certified** — 4·10⁻¹⁰ per metre of d at r = 50 km, against ε of 10⁻³
  per metre for a 1 km scale. Outputs farther than r from the true point have probability at most
  e^{−εr}(1 + εr).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Lattice of reported coordinates, in degrees (≈ 1.1 cm of latitude).
DEFAULT_PRECISION_DEG = 1e-7

#: Step (metres) of the noise lattice in the true point's tangent plane (a power of two): 2^-22 m ≈ 0.24 µm.
NOISE_LATTICE_M = 2.0**-22
#: No cell of the output lattice is narrower (east–west) than this: its longitude step doubles toward the poles.
MIN_CELL_WIDTH_M = 1e-3
#: At most this many doublings; rows that would need more (within ~560 m of a pole at 1e-7°) are the pole.
MAX_COARSENING = 10
#: Error of the geodesic step and of the coordinates' float rounding (GeographicLib: 15 nm), metres.
GEODESIC_ERROR_M = 2e-8
#: WGS84 semi-major axis (m) and flattening.
WGS84_A = 6378137.0
WGS84_F = 1 / 298.257223563
#: Half the circumference of the Earth (m): a 95% radius beyond it is refused.
HALF_CIRCUMFERENCE_M = math.pi * WGS84_A
#: εr of the 95% quantile of the Gamma(2) radius: r₉₅ = RADIUS95_EPS / ε.
RADIUS95_EPS = 4.743864518390695

UNITS = {"m": 1.0, "km": 1000.0}


def epsilon_per_metre(epsilon: float, unit: str) -> float:
    """ε per metre from ε per ``unit`` (m or km)."""
    from .._validate import check_epsilon

    e = check_epsilon(epsilon)
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    return e / UNITS[unit]


def epsilon_for_accuracy(radius_m: float, probability: float) -> float:
    r"""The ε (per metre) at which the planar Laplace displacement is at most ``radius_m`` with
    probability ``probability``: the solution of C_ε(R) = 1 − e^{−εR}(1 + εR) = p, i.e.
    εR = −W₋₁((p − 1)/e) − 1 with W₋₁ the lower branch of Lambert's W (seed 002 §6.2's radial law)."""
    from scipy.special import lambertw

    if not (isinstance(radius_m, (int, float)) and math.isfinite(radius_m) and radius_m > 0):
        raise ValueError(f"accuracy radius must be a positive number of metres, got {radius_m!r}")
    if not (0 < probability < 1):
        raise ValueError(f"accuracy probability must lie strictly between 0 and 1, got {probability!r}")
    t = float(-lambertw((probability - 1.0) / math.e, k=-1).real - 1.0)
    return t / radius_m


def check_sane_epsilon(epsilon_m: float, *, precision_deg: float = DEFAULT_PRECISION_DEG, what: str = "--epsilon") -> float:
    """Refuse an ε (per metre) whose 95% displacement radius r₉₅ = 4.744/ε is below the output lattice
    (about 1.1 cm at 1e-7°: the release would be the true point) or above half the Earth's circumference
    (20,038 km: the release says nothing and geodesics wrap around). Returns r₉₅."""
    r95 = RADIUS95_EPS / epsilon_m
    lattice = math.radians(precision_deg) * WGS84_A * (1 - WGS84_F) ** 2
    if r95 < lattice:
        raise ValueError(f"{what}: ε = {epsilon_m * 1000:.4g} per km puts 95% of the displacements within {r95 * 100:.3g} cm, "
                         f"below the {lattice * 100:.2g} cm output lattice: the release would be the true point (use ε ≤ "
                         f"{RADIUS95_EPS / lattice * 1000:.4g} per km)")
    if r95 > HALF_CIRCUMFERENCE_M:
        raise ValueError(f"{what}: ε = {epsilon_m * 1000:.4g} per km means a 95% displacement radius of {r95 / 1000:,.4g} km, "
                         f"beyond half the Earth's circumference ({HALF_CIRCUMFERENCE_M / 1000:,.0f} km): the release would say "
                         f"nothing (use ε ≥ {RADIUS95_EPS / HALF_CIRCUMFERENCE_M * 1000:.3g} per km)")
    return r95


def parse_accuracy(spec: str) -> tuple[float, float]:
    """'500m@95%' or '2km@0.9' → (radius in metres, probability)."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*(m|km)\s*@\s*([0-9]*\.?[0-9]+)\s*(%?)\s*", spec or "", re.I)
    if not m:
        raise ValueError(f"bad --accuracy {spec!r}: expected RADIUS(m|km)@PROBABILITY, e.g. 500m@95%")
    r = float(m.group(1)) * UNITS[m.group(2).lower()]
    p = float(m.group(3)) / (100.0 if m.group(4) else 1.0)
    return r, p


def planar_laplace_displacements(n: int, *, epsilon: float, generator, lattice: float = NOISE_LATTICE_M,
                                 threads: int = 1, stats: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Distances r (metres, ε per metre) and azimuths θ (degrees) of n planar Laplace displacements, from
    the exact discrete planar Laplace on the lattice ``lattice``·Z² of the tangent plane (module notes):
    v = (east, north) with P(v) ∝ e^{−ε‖v‖}, r = ‖v‖ and θ = atan2(east, north). r follows Gamma(2, 1/ε)
    up to the lattice (a relative O((εΛ)²)). ``generator``: a numpy Generator or a KeyedStream.
    ``threads``: parts drawn in parallel (:meth:`~dprivacy.sampling.planar.LatticeLaplace.offsets`); a
    seeded draw depends on it, so callers pass a constant (``obfuscate``: :data:`NOISE_PARTS`). ``stats``: the
    sampler's counts are added there (``rounds``, ``proposals``, ...; drawn without the points)."""
    from ..sampling.planar import LatticeLaplace

    if n == 0:
        return np.zeros(0), np.zeros(0)
    r, az = np.empty(n), np.empty(n)

    def polar(a, b, z_east, z_north):  # per chunk, in the sampler's threads
        east, north = z_east * lattice, z_north * lattice  # exact (|z| < 2^53)
        np.hypot(east, north, out=r[a:b])
        np.degrees(np.arctan2(east, north), out=az[a:b])

    LatticeLaplace.build(epsilon, lattice).offsets(n, generator, threads=threads, consume=polar, stats=stats)
    return r, az


def output_lattice(lat: np.ndarray, lon: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Integer indices (i, j) of the output lattice cell of each point: latitude i·step, longitude j·step
    (degrees), a function of the point only. Rows: i = rint(lat/step). Row i's longitude step is
    step·2^k with k the smallest ≥ 0 for which its cells are at least :data:`MIN_CELL_WIDTH_M` wide at
    the row's poleward edge (on a sphere of radius a, a lower bound of the ellipsoid's parallel); j is a
    multiple of 2^k, and ±180° is one cell. Rows that reach a pole, or would need more than
    :data:`MAX_COARSENING` doublings, are the pole: (±90°, j = 0)."""
    full = int(round(360.0 / step))
    n90 = int(round(90.0 / step))
    if abs(full * step - 360.0) > 1e-9 or abs(n90 * step - 90.0) > 1e-9:
        raise ValueError(f"the output lattice step {step!r}° must divide 90° exactly")
    kmax = min(MAX_COARSENING, (full & -full).bit_length() - 1)  # 2^k must divide the steps around a parallel
    i = np.clip(np.rint(np.asarray(lat, dtype=np.float64) / step), -n90, n90).astype(np.int64)
    edge = np.minimum((np.abs(i) + 0.5) * step, 90.0)
    width = math.radians(step) * WGS84_A * np.cos(np.radians(edge))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.ceil(np.log2(MIN_CELL_WIDTH_M / np.where(width > 0, width, np.nan)))
    k = np.where(np.isfinite(k), np.maximum(k, 0.0), np.inf)
    cap = (np.abs(i) >= n90) | (k > kmax)
    mult = np.left_shift(np.int64(1), np.where(cap, 0, k).astype(np.int64))
    j = np.rint(np.asarray(lon, dtype=np.float64) / (step * mult)).astype(np.int64) * mult
    j = np.where(j >= full // 2, j - full, np.where(j < -(full // 2), j + full, j))
    i = np.where(cap, np.sign(i) * n90, i)
    j = np.where(cap, 0, j)
    return i, j


def _from_lattice(i: np.ndarray, step: float) -> np.ndarray:
    """Degrees of lattice indices: the nearest double to i·10^-d for a decimal step, else i·step."""
    digits = -math.log10(step)
    if abs(digits - round(digits)) < 1e-12 and round(digits) > 0:
        return i / 10.0 ** round(digits)
    return i * step


def geodesic_guarantee(epsilon_m: float, *, precision_deg: float = DEFAULT_PRECISION_DEG,
                       lattice: float = NOISE_LATTICE_M) -> dict:
    """The figures of the released mechanism's guarantee (module notes): σ = ε·δ + ln κ over the output
    lattice's cells, the curvature coefficient 1/(3R²), and what each covers."""
    e2 = WGS84_F * (2 - WGS84_F)
    step = math.radians(precision_deg)
    h_min = step * WGS84_A * (1 - e2)  # meridian arc of one step at the equator (the smallest)
    h_max = step * WGS84_A / math.sqrt(1 - e2)  # at the poles (the largest)
    w_eq = step * WGS84_A / math.sqrt(1 - e2)  # a parallel step is at most N·step ≤ a/√(1−e²)·step
    w_min = min(MIN_CELL_WIDTH_M, step * WGS84_A)
    s = lattice / math.sqrt(2) + GEODESIC_ERROR_M

    def log_kappa(h, w):
        a, p = h * w, 2 * (h + w)
        if a - p * s <= 0:
            raise ValueError("the noise lattice is too coarse for the output lattice")
        return math.log((a + p * s + math.pi * s * s) / (a - p * s))

    ln_kappa = max(log_kappa(h_min, w_min), log_kappa(h_min, 2 * w_min), log_kappa(h_min, step * WGS84_A * (1 - e2)))
    delta = math.hypot(h_max, max(w_eq, 2 * MIN_CELL_WIDTH_M))
    r_min = WGS84_A * (1 - e2)  # smallest radius of curvature (meridional, at the equator)
    sigma = epsilon_m * delta + ln_kappa
    r95 = RADIUS95_EPS / epsilon_m
    return {
        "noise": {"law": "exact discrete planar Laplace on the tangent-plane lattice ΛZ², P(v) ∝ exp(−ε‖v‖)",
                  "lattice_m": lattice, "sampler": "rejection from block geometrics; each decision compares a lazily extended "
                  "uniform with the exact threshold (float64 with a 2^-40 error bound, Decimal fallback)"},
        "geodesic": "pyproj Geod.fwd on WGS84 (GeographicLib, 15 nm)",
        "output_lattice": {"step_degrees": precision_deg, "min_cell_width_m": MIN_CELL_WIDTH_M,
                           "rule": "longitude step doubled per row toward the poles until cells are ≥ min_cell_width_m wide; "
                                   f"rows needing more than {MAX_COARSENING} doublings are the pole"},
        "bound": "P(y|x) ≤ exp(ε·d + sigma + d·r/(3R²))·P(y|x') for true points x, x' at geodesic distance d (m) and any "
                 "released y within r (m) of both",
        "sigma": sigma, "sigma_terms": {"epsilon_times_cell_diagonal": epsilon_m * delta, "cell_diagonal_m": delta,
                                        "log_kappa": ln_kappa},
        "sigma_is": "rigorous in the true point's tangent plane: lattice points per output cell (area A, perimeter P) lie in "
                    "[(A − P·s)/Λ², (A + P·s + π·s²)/Λ²], s = Λ/√2 + 20 nm; the density varies by e^(ε·δ) over a cell",
        "curvature_per_m": 1.0 / (3.0 * r_min * r_min), "curvature_radius_m": r_min,
        "curvature_is": "first-order difference between the ellipsoid's geodesic polar area element and the plane's "
                        "(sphere model): an approximation, not certified",
        "example": {"r_m": 10 * r95, "epsilon_effective_per_m": epsilon_m + 10 * r95 / (3 * r_min * r_min),
                    "probability_beyond_r": math.exp(-10 * RADIUS95_EPS) * (1 + 10 * RADIUS95_EPS)},
        "every_output_reachable": True,
    }


def validate_coordinates(lat: np.ndarray, lon: np.ndarray, *, first_row: int = 0) -> np.ndarray:
    """A boolean mask of valid rows, or raise naming the first invalid one is the caller's choice:
    returns ``bad`` (True where a coordinate is missing, NaN or out of range)."""
    with np.errstate(invalid="ignore"):
        return ~(np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0))


#: A number as text (what a CSV's coordinate column holds when some value is not a number).
_NUMBER_TEXT = r"^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$"


def _as_numbers(col):
    """A coordinate column as float64: numbers (decimals included) as they are; text parsed where it is a
    number, NaN (null) elsewhere — so that one value such as 'abc' is a rejected row (named, or skipped
    with --skip-invalid) instead of refusing the whole column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(col.type):  # dictionary-encoded text or numbers (refused as "not numeric": review)
        col = col.cast(col.type.value_type)
    if getattr(pa.types, "is_string_view", lambda _: False)(col.type):
        col = col.cast(pa.string())
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        ok = pc.match_substring_regex(col, _NUMBER_TEXT)
        col = pc.if_else(ok, pc.utf8_trim_whitespace(col), pa.scalar(None, col.type))
    return pc.cast(col, pa.float64())


def copy_sample(rows: int):
    """Row indices of a batch the copy check reads: all of them up to :data:`~dprivacy.data.io.COPY_SAMPLE_ROWS`,
    else that many spread evenly over the batch."""
    from .io import COPY_SAMPLE_ROWS

    if rows <= COPY_SAMPLE_ROWS:
        return np.arange(rows)
    return np.unique(np.linspace(0, rows - 1, COPY_SAMPLE_ROWS).astype(np.int64))


#: |Spearman ρ| between row number and latitude (or longitude) from which a file is called sorted by location
SORTED_RHO = 0.9


def sorted_note(report, lat, lon) -> None:
    """Say in the report when the first batch's rows are ordered by latitude or longitude (|Spearman ρ| between
    row number and coordinate ≥ :data:`SORTED_RHO` over up to 10,000 rows spread over the batch): the release
    keeps the row order, which then tells the true locations apart (a review estimated each row's latitude from
    its rank to 1.2 km where the released points were 9.4 km off). A time-ordered track heading one way is
    flagged too: its order is public only if its times are."""
    found = sorted_by(lat, lon)
    if found is not None:  # read from the true locations: the owner's, never in the sidecar
        report.owner_notes.append(sorted_note_text(*found))


#: --shuffle holds the release in memory: at most this many rows.
SHUFFLE_MAX_ROWS = 20_000_000


def sorted_note_text(name: str, rho: float) -> str:
    return (f"the rows are ordered by {name} (Spearman ρ = {rho:.2f} between row number and {name} in the first rows): "
            "the release keeps the row order, which then tells the true locations apart; unless that order is public (a "
            "time order with its times released), release them with --shuffle")


def sorted_by(lat, lon):
    """("latitude" or "longitude", Spearman ρ) when the rows (up to 10,000 spread over them) are ordered by that
    coordinate, |ρ| ≥ :data:`SORTED_RHO`; else None."""
    take = copy_sample(lat.size)
    if take.size < 20:
        return None
    index = np.arange(take.size, dtype=np.float64)
    for name, v in (("latitude", lat[take]), ("longitude", lon[take])):
        if not np.isfinite(v).all() or np.ptp(v) == 0:
            continue
        # Spearman's ρ: the correlation of the row numbers with the values' ranks (numpy alone: scipy.stats doubled
        # the start-up of a small obfuscate, review; ties ranked in order, which changes ρ by O(ties/n))
        rho = float(np.corrcoef(index, np.argsort(np.argsort(v, kind="stable")).astype(np.float64))[0, 1])
        if abs(rho) >= SORTED_RHO:
            return name, rho
    return None


def rejection_note(report) -> None:
    """Say in the report that rejected rows are missing from the release: which rows are present depends on
    whether their coordinates could be read, which the guarantee does not cover. (A point outside a grid's
    region is not rejected: it is released as the cell nearest it.)"""
    if report.rows_rejected:
        report.notes.append(f"{report.rows_rejected:,} rejected row(s) (--skip-invalid) are not in the release: a row's "
                            "presence tells that its true location was valid; the guarantee is about the locations of the "
                            "rows released")


def add_counts(total: dict, part: dict) -> dict:
    """Add the counts of ``part`` into ``total`` (nested dicts of numbers, as :meth:`Obfuscator.apply` fills them)."""
    for k, v in part.items():
        if isinstance(v, dict):
            add_counts(total.setdefault(k, {}), v)
        else:
            total[k] = total.get(k, 0) + v
    return total


#: What the owner-only counts of ``obfuscate --owner`` are.
NOT_PRIVATE = ("exact counts that depend on the true locations, outside the ε guarantee: for the data owner, never to be "
               "published (they are not in the sidecar)")


def record_sampling(report, release, stats: dict) -> None:
    """Put the counts of a release, read after sampling, where they belong: those that do not depend on the true
    locations in ``report.sampling`` (the sidecar), the others in ``report.owner_only`` (``obfuscate --owner``
    prints them; never written). ``stats``: filled by :meth:`Obfuscator.apply` over every batch (every part)."""
    if release is None:
        smp = stats.get("sampler") or {}
        report.sampling = {"draws": int(stats.get("draws", 0)), "lattice_proposals": int(smp.get("proposals", 0))}
        report.owner_only = {}
    else:
        report.sampling, report.owner_only = release.sampling_counts(stats)
    report.sampling["meaning"] = ("counted after sampling; independent of the true locations given the number of rows "
                                  "(the random source decides them)")
    if report.owner_only:
        report.owner_only["meaning"] = NOT_PRIVATE


def describe_bad(lat, lon, k: int, row: int, *, values: bool = True) -> str:
    """Why row ``row`` (index k) has no valid location. ``values=False``: the kind of problem only, without
    the row's coordinates (for the report and the sidecar beside the release: a rejected row's true
    location must not be published with it)."""
    a, b = lat[k], lon[k]
    if not (np.isfinite(a) and np.isfinite(b)):
        return f"row {row}: missing or non-numeric coordinate" + (f" (lat={a}, lon={b})" if values else "")
    if not values:
        return f"row {row}: " + ("latitude outside [-90, 90]" if abs(a) > 90 else "longitude outside [-180, 180]")
    if abs(a) > 90:
        hint = " — these look like projected coordinates, not degrees" if abs(a) > 1000 else ""
        return f"row {row}: latitude {a} outside [-90, 90]{hint}"
    hint = " — these look like projected coordinates, not degrees" if abs(b) > 1000 else ""
    return f"row {row}: longitude {b} outside [-180, 180]{hint}"


#: Parts (threads) of the planar noise of one batch in the local engine: measured unloaded on 2 cores,
#: 0.21 µs per point on one thread, 0.12 µs on two (benchmarks/RESULTS.md).
NOISE_PARTS = 2

#: Points per thread of the geodesic step (pyproj releases the GIL, so threads use every core).
GEOD_CHUNK = 131072


def _geodesic_forward(lon, lat, az, r) -> tuple[np.ndarray, np.ndarray]:
    """pyproj ``Geod(ellps="WGS84").fwd`` over chunks in a thread pool: (lon2, lat2) as float64 arrays."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from pyproj import Geod

    lon, lat, az, r = (np.ascontiguousarray(a, dtype=np.float64) for a in (lon, lat, az, r))
    n = lon.size
    workers = min(os.cpu_count() or 1, -(-n // GEOD_CHUNK))
    if workers <= 1:
        lo2, la2, _ = Geod(ellps="WGS84").fwd(lon, lat, az, r)
        return np.asarray(lo2, dtype=np.float64), np.asarray(la2, dtype=np.float64)
    lon2, lat2 = np.empty(n), np.empty(n)
    bounds = np.linspace(0, n, workers + 1).astype(int)

    def part(i):
        sl = slice(bounds[i], bounds[i + 1])
        lo2, la2, _ = Geod(ellps="WGS84").fwd(lon[sl], lat[sl], az[sl], r[sl])
        lon2[sl], lat2[sl] = lo2, la2

    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(part, range(workers)))
    return lon2, lat2


def displace(lat: np.ndarray, lon: np.ndarray, r: np.ndarray, az: np.ndarray, *, precision: float = DEFAULT_PRECISION_DEG):
    """Move each point r metres along the geodesic in azimuth az on WGS84; round to the output lattice
    of ``precision`` degrees (:func:`output_lattice`; ``precision=0``: no rounding, for tests)."""
    lon2, lat2 = _geodesic_forward(lon, lat, az, r)
    lon2 = (lon2 + 180.0) % 360.0 - 180.0  # into [−180, 180)
    if precision:
        i, j = output_lattice(lat2, lon2, precision)
        lat2, lon2 = _from_lattice(i, precision), _from_lattice(j, precision)
    return lat2, lon2


@dataclass
class ObfuscationReport:
    """What ``obfuscate_file`` did: the figures of the sidecar."""

    input: str
    output: str
    mechanism: str
    epsilon: float
    unit: str
    epsilon_per_metre: float
    guarantee: str
    random_source: dict
    rows_read: int = 0
    rows_written: int = 0
    rows_rejected: int = 0
    rows_suppressed: int = 0
    first_rejected: str | None = None
    lat_column: str = ""
    lon_column: str = ""
    precision_degrees: float = DEFAULT_PRECISION_DEG
    seconds: float = 0.0
    version: str = ""
    notes: list = field(default_factory=list)
    grid: dict | None = None
    budget: dict | None = None
    coords: str = "degrees"
    guarantee_details: dict | None = None
    accuracy: str | None = None
    shuffled: bool = False  # the rows released in a random order (--shuffle): matched to the original by a key only
    sampling: dict | None = None  # what the sampler did (record_sampling): counts independent of the true locations
    #: counts that depend on the true locations (rows outside --region, the rejection sampler's proposals): for
    #: ``obfuscate --owner`` only, never in :meth:`to_dict` (the sidecar)
    owner_only: dict = field(default_factory=dict)
    #: notes computed from the true locations (the rows sorted by latitude): for ``obfuscate --owner`` only
    owner_notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        from ..results import jsonable

        return jsonable({k: v for k, v in vars(self).items() if k not in ("owner_only", "owner_notes")})


#: Garmin/FIT "semicircles": 2^31 units per 180°.
SEMICIRCLE_DEG = 180.0 / 2.0**31

COORDS = ("degrees", "semicircles")


@dataclass
class Obfuscator:
    """The per-batch work of :func:`obfuscate_file`, picklable so that Dask workers can run it: check
    the coordinates of a batch, drop or refuse the rows whose coordinates cannot be read (a grid release
    keeps a point outside its region: :class:`~dprivacy.data.grid_release.GridRelease` maps it to the
    nearest cell), draw the noise and return the batch with the released coordinates."""

    input_name: str
    schema: object
    lat_c: str
    lon_c: str
    epsilon_m: float
    release: object = None
    precision: float = DEFAULT_PRECISION_DEG
    skip_invalid: bool = False
    coords: str = "degrees"
    seed: int | None = None
    key: str | None = None
    #: Parts the planar noise of a batch is drawn in, in parallel threads. A constant (not the number of
    #: cores) so that a seeded run gives the same output on every machine; the Dask engine sets 1 (its
    #: workers already use the cores).
    noise_parts: int = NOISE_PARTS

    @property
    def out_schema(self):
        import pyarrow as pa

        from .io import without_input_metadata

        if self.coords == "semicircles":
            return without_input_metadata(self.schema)
        return without_input_metadata(self.schema.set(self.schema.get_field_index(self.lat_c), pa.field(self.lat_c, pa.float64()))
                                      .set(self.schema.get_field_index(self.lon_c), pa.field(self.lon_c, pa.float64())))

    def coordinates(self, batch) -> tuple[np.ndarray, np.ndarray]:
        import pyarrow as pa
        import pyarrow.compute as pc

        la, lo = (_as_numbers(batch.column(c)).to_numpy(zero_copy_only=False) for c in (self.lat_c, self.lon_c))
        if self.coords == "semicircles":
            la, lo = la * SEMICIRCLE_DEG, lo * SEMICIRCLE_DEG
        return la, lo

    def validate(self, batch, row0: int, where: str = ""):
        """(batch, lat, lon, rows rejected, first message) with the invalid rows (a coordinate missing, not a
        number or out of range) dropped, or ValueError naming the first one when ``skip_invalid`` is off.
        ``row0``: rows before this batch (for the message); ``where``: a prefix when the global row number is
        unknown (a Dask partition). Whether a valid point lies in a grid's region plays no part here."""
        import pyarrow as pa

        la, lo = self.coordinates(batch)
        # another copy of the points under any name (homelat, x, location = "42.55623,1.53319"): checked by value in
        # every batch (every part on Dask) on rows spread over it, a sample that keeps wide text tables cheap (the
        # first rows only missed a copy that started after them, and a part of one row was not checked: review);
        # --keep does not exempt a column whose values are the points
        from .io import location_copies

        take = copy_sample(batch.num_rows)
        # in degrees and the other units a copy comes in (radians, E7, semicircles, Web Mercator metres)
        copies = location_copies(batch.take(pa.array(take)), la[take], lo[take], skip=(self.lat_c, self.lon_c))
        if copies:
            raise ValueError(f"{self.input_name}: {where}column(s) {', '.join(map(repr, copies))} hold a copy of the points "
                             f"(numbers within 0.01° of a row's latitude or longitude, in at least half of the rows "
                             f"that have one): they would be released untouched beside the obfuscated "
                             f"{self.lat_c!r}/{self.lon_c!r}; drop them from the file")
        bad = validate_coordinates(la, lo)
        if not bad.any():
            return batch, la, lo, 0, None
        k = int(np.flatnonzero(bad)[0])
        public = where + describe_bad(la, lo, k, row0 + k + 1, values=False)
        msg = where + describe_bad(la, lo, k, row0 + k + 1)
        texts = [f"{c} = {batch.column(c)[k].as_py()!r}" for c in (self.lat_c, self.lon_c)
                 if pa.types.is_string(batch.column(c).type) or pa.types.is_large_string(batch.column(c).type)]
        if texts and not (np.isfinite(la[k]) and np.isfinite(lo[k])):
            msg += f" (as read: {', '.join(texts)})"
        if self.coords == "degrees" and "projected" in msg and max(abs(la[k]), abs(lo[k])) <= 2.0**31:
            msg += " (or Garmin semicircles: --coords semicircles)"
        if not self.skip_invalid:
            # the row and its values only for the owner: the true coordinates (and the row) are a person's
            from .._system import RefusedWithDetail

            hint = "; degrees are expected, or Garmin semicircles with --coords semicircles" if self.coords == "degrees" else ""
            raise RefusedWithDetail(f"{self.input_name}: some rows have a missing, non-numeric or out-of-range coordinate "
                                    f"(use --skip-invalid to drop and count such rows; --owner names the first{hint})", msg)
        keep = ~bad
        # the report (printed, and the sidecar beside the release) names the row and the problem, not the
        # row's coordinates: they are true locations
        return batch.filter(pa.array(keep)), la[keep], lo[keep], int(bad.sum()), public

    def generator(self, batch, source):
        """The random stream for a batch: per-record keyed streams in keyed research mode, else ``source``."""
        if self.key is None:
            return source.generator
        from ..sampling.keyed import KeyedStream, record_keys

        return KeyedStream(self.seed, record_keys(batch.column(self.key)))

    def apply(self, batch, la, lo, generator, stats: dict | None = None):
        """The batch with its coordinates replaced by the released ones. ``stats``: the counts of the draws are
        added there (:func:`record_sampling` sorts them into public and owner-only)."""
        import pyarrow as pa

        if self.release is None:
            if stats is not None:
                stats["draws"] = stats.get("draws", 0) + la.size
            r, az = planar_laplace_displacements(la.size, epsilon=self.epsilon_m, generator=generator,
                                                 threads=self.noise_parts,
                                                 stats=None if stats is None else stats.setdefault("sampler", {}))
            if self.coords == "semicircles":  # the output lattice is the semicircles' own (2^31 per 180°)
                lo2, la2 = _geodesic_forward(lo, la, az, r)
                i, j = output_lattice(la2, (lo2 + 180.0) % 360.0 - 180.0, SEMICIRCLE_DEG)
                nla, nlo = i * SEMICIRCLE_DEG, j * SEMICIRCLE_DEG
            else:
                nla, nlo = displace(la, lo, r, az, precision=self.precision)
        else:
            nla, nlo = self.release.apply(la, lo, generator, stats)
        cols = [batch.column(i) for i in range(batch.num_columns)]
        if self.coords == "semicircles":  # back to integer semicircles (a 1 cm lattice), in the input's type
            t_la, t_lo = self.schema.field(self.lat_c).type, self.schema.field(self.lon_c).type
            la_out = pa.array(np.rint(nla / SEMICIRCLE_DEG)).cast(t_la)
            lo_out = pa.array(np.rint(nlo / SEMICIRCLE_DEG)).cast(t_lo)
        else:
            la_out, lo_out = pa.array(nla, pa.float64()), pa.array(nlo, pa.float64())
        cols[self.schema.get_field_index(self.lat_c)] = la_out
        cols[self.schema.get_field_index(self.lon_c)] = lo_out
        return pa.RecordBatch.from_arrays(cols, schema=self.out_schema)


def prepare_obfuscation(input_path, output_path, *, epsilon: float, unit: str = "km", lat=None, lon=None, rng=None,
                        skip_invalid: bool = False, precision: float = DEFAULT_PRECISION_DEG, release=None,
                        user=None, budget=None, key=None, coords: str = "degrees", accuracy: str | None = None,
                        keep=()):
    """Check the arguments and the input's schema; return (Obfuscator, ObfuscationReport, random source,
    schema, batches). ``accuracy``: the --accuracy text the ε came from (recorded). ``keep``: columns declared
    not to be locations (:func:`.io.check_no_other_locations`)."""
    import pyarrow as pa

    from .. import __version__
    from ..sampling import random_source
    from .io import check_no_other_locations, file_format, find_coordinate_columns, read_batches

    e_m = epsilon_per_metre(epsilon, unit)
    if coords not in COORDS:
        raise ValueError(f"--coords must be one of {', '.join(COORDS)}, got {coords!r}")
    src = random_source(rng)
    file_format(output_path)
    schema, batches = read_batches(input_path)
    lat_c, lon_c = find_coordinate_columns(schema, lat, lon)
    check_no_other_locations(schema, lat_c, lon_c, input_path, keep=keep)
    if file_format(input_path) == "csv":
        # Every column as its text, read again: the kept columns are written back as they were (type
        # inference rewrote them: zip code 02134 as 2134, 007 as 7, NA as empty, 1e5 as 100000), and a
        # coordinate that is not a number anywhere in the file is a rejected row (with inferred types, one
        # after the first 16 MiB block refused the whole file). The --key/--user columns keep their types
        # (keyed noise depends on the key's type); semicircles must be integers.
        # Other outputs (Parquet, GeoJSON) keep the inferred types of the kept columns (numbers stay numbers).
        typed = {key, user} | ({lat_c, lon_c} if coords == "semicircles" else set())
        text = [c for c in schema.names if c not in typed] if file_format(output_path) == "csv" else \
            [c for c in (lat_c, lon_c) if c not in typed]
        schema, batches = read_batches(input_path, text_columns=text)
    for c in (lat_c, lon_c):
        t = schema.field(c).type
        if pa.types.is_dictionary(t):  # read through its values (_as_numbers decodes them)
            t = t.value_type
        if getattr(pa.types, "is_string_view", lambda _: False)(t):
            t = pa.string()
        ok = pa.types.is_integer(t) if coords == "semicircles" else (
            pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_null(t) or pa.types.is_decimal(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t))  # text: parsed row by row (_as_numbers)
        if not ok:
            want = "integer semicircles" if coords == "semicircles" else "numeric"
            raise ValueError(f"coordinate column {c!r} is not {want} (type {t})")
    if (user is None) != (budget is None):
        raise ValueError("--user COL and --budget B go together: the budget is per user")
    if user is not None:
        if user not in schema.names:
            raise ValueError(f"no user column {user!r} in {input_path}: its columns are {', '.join(schema.names)}")
        if not (isinstance(budget, (int, float)) and math.isfinite(budget) and budget > 0):
            raise ValueError(f"--budget must be a positive number (ε per {unit}, as --epsilon), got {budget!r}")
        if budget < epsilon * (1 - 1e-12):
            raise ValueError(f"--budget {budget:g} is below the ε of one report ({epsilon:g} per {unit}): no row could be "
                             "released; raise --budget or lower --epsilon")
    if key is not None:
        if key not in schema.names:
            raise ValueError(f"no key column {key!r} in {input_path}: its columns are {', '.join(schema.names)}")
        if src.release:
            raise ValueError("--key makes each record's noise a function of --seed and its key (reproducible research mode): "
                             "give --seed too, or drop --key for a release")
    details = None
    if release is None:
        name = "planar-laplace (geodesic, WGS84)"
        step = precision if coords == "degrees" else SEMICIRCLE_DEG
        check_sane_epsilon(e_m, precision_deg=step or DEFAULT_PRECISION_DEG)
        if not step:
            guarantee = ("precision=0: the released coordinates are unrounded doubles, whose low-order bits depend on the true "
                         "point (no output lattice); for tests only, never for release")
            details = {"output_lattice": None, "warning": guarantee}
        else:
            details = geodesic_guarantee(e_m, precision_deg=step)
            guarantee = (f"geo-indistinguishability as released: for true locations x, x' at geodesic distance d metres and any "
                         f"released point y within r metres of both, P(y|x) ≤ exp({e_m:.6g}·d + {details['sigma']:.3g} + "
                         f"d·r/(3R²))·P(y|x') (ε = {epsilon:g} per {unit}; seed 002 §6.2). The displacement is drawn exactly from "
                         f"the discrete planar Laplace on a {NOISE_LATTICE_M * 1e6:.2f} µm lattice of the tangent plane and applied "
                         "along the WGS84 geodesic; the output is rounded to a fixed lattice on which every output is reachable "
                         f"from every input. The slack {details['sigma']:.3g} (cell size and lattice-point counts) is rigorous in "
                         "the tangent plane; the curvature term, with R = 6,335 km, is a first-order approximation, not "
                         "certified. Each row is one report and repeated reports of one person compose (ε adds up)")
    else:
        from .grid_release import grid_guarantee

        name = release.mechanism.name + (" + distance remap" if release.remap is not None else "")
        guarantee = grid_guarantee(release.grid, epsilon, unit, release.mechanism.name)
    report = ObfuscationReport(
        Path(input_path).name, Path(output_path).name, name, float(epsilon), unit, e_m, guarantee=guarantee,
        random_source=src.to_dict(), lat_column=lat_c, lon_column=lon_c,
        precision_degrees=(precision if coords == "degrees" else SEMICIRCLE_DEG) if release is None else None,
        version=__version__)
    report.coords = coords
    if coords == "semicircles":
        report.notes.append("coordinates read and written as Garmin semicircles (2^31 per 180°)")
    if key is not None:
        report.random_source = dict(report.random_source, keyed_by=key,
                                    generator="Philox4x32-10 per record, counter = (record key, draw), key from the seed")
    if release is not None:
        report.grid = release.info
    report.guarantee_details = details
    report.accuracy = accuracy
    ob = Obfuscator(str(input_path), schema, lat_c, lon_c, e_m, release, precision, skip_invalid, coords,
                    None if src.release else _seed_of(rng), key)
    if keep:
        report.notes.append(f"column(s) {', '.join(map(repr, keep))} released as they are with --keep: declared by the "
                            "user to hold no location although their name or type looks like one")
    return ob, report, src, schema, batches


def _read_sidecar(side: Path) -> dict:
    """A release's sidecar, checked where evaluate relies on it ({} when there is none)."""
    import json

    from .._system import check_input_file

    if not side.exists():
        return {}
    check_input_file(side, "the release's sidecar", expected="a JSON file")  # (a FIFO there was waited on for ever)
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"the release's sidecar {side} is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"the release's sidecar {side} is not a JSON object")
    e = meta.get("epsilon_per_metre")
    if e is not None and not (isinstance(e, (int, float)) and not isinstance(e, bool) and math.isfinite(e) and e > 0):
        raise ValueError(f"the release's sidecar {side} has epsilon_per_metre {e!r}, expected a positive number")
    if meta.get("coords") is not None and meta["coords"] not in COORDS:
        raise ValueError(f"the release's sidecar {side} has coords {meta['coords']!r}, expected one of {', '.join(COORDS)}")
    return meta


def _seed_of(rng):
    from numbers import Integral

    return int(rng) if isinstance(rng, Integral) and not isinstance(rng, bool) else None


def obfuscate_file(input_path, output_path, *, epsilon: float, unit: str = "km", lat: str | None = None,
                   lon: str | None = None, rng=None, force: bool = False, skip_invalid: bool = False,
                   precision: float = DEFAULT_PRECISION_DEG, progress=None, release=None,
                   user: str | None = None, budget: float | None = None, key: str | None = None,
                   coords: str = "degrees", accuracy: str | None = None, keep=(), shuffle: bool = False) -> ObfuscationReport:
    """Obfuscate every point of a CSV/Parquet/GeoJSON file and write OUTPUT (same format family by its
    extension) and ``OUTPUT.dprivacy.json``.

    ``shuffle``: the released rows in an order drawn from the random source (a uniform permutation, integer
    draws), not the file's: a file sorted by location gives each row's location away by its rank. The release is
    then held in memory (at most :data:`SHUFFLE_MAX_ROWS` rows).

    The mechanism is geodesic planar Laplace, or, with ``release`` (a
    :class:`~dprivacy.data.grid_release.GridRelease`), a mechanism on a grid of cells: the released
    point is then a cell centre, and a true point outside the grid's region is released as the cell nearest
    it (kept in its row: which rows lie outside is never shown; their number is in ``report.owner_only``,
    not in the sidecar). Every column other than the coordinates is kept with its type, rows
    keep their order, and the coordinate columns hold the obfuscated values (never the true ones). Rows
    with a missing, non-numeric or out-of-range coordinate are an error naming the
    first one, or, with ``skip_invalid``, are dropped and counted. ``rng=None`` is the release-grade
    random source; a seed is reproducible research mode, said in the sidecar; with ``key`` (a column of
    unique record keys) each record's noise depends only on the seed and its key
    (:mod:`dprivacy.sampling.keyed`), so any batching or partitioning gives the same output.
    ``coords="semicircles"``: the coordinate columns are Garmin semicircles (2^31 per 180°), read and
    written as such.

    ``user`` and ``budget``: each row is one report costing ε (in the units of ``epsilon``); by
    sequential composition a person's reports add up, so the rows of a user beyond the first
    ⌊budget/ε⌋ (in file order) are suppressed and counted (``rows_suppressed``), never released with a
    smaller ε.
    """
    from ..sampling.source import NOT_FOR_RELEASE
    from .commit import release_commit
    from .io import AtomicWriter, check_sidecar, commit_sidecar, file_format, removed_unless_completed

    t0 = time.perf_counter()
    check_sidecar(input_path, output_path, force=force)
    ob, report, src, schema, batches = prepare_obfuscation(
        input_path, output_path, epsilon=epsilon, unit=unit, lat=lat, lon=lon, rng=rng, skip_invalid=skip_invalid,
        precision=precision, release=release, user=user, budget=budget, key=key, coords=coords, accuracy=accuracy,
        keep=keep)
    out_fmt = file_format(output_path)
    allowed = None
    if user is not None:
        allowed = int(math.floor(budget / epsilon * (1 + 1e-12)))
        report.budget = {"user_column": user, "budget": float(budget), "reports_per_user": allowed,
                         "rule": "sequential composition: a user's first ⌊budget/ε⌋ rows (file order) are released, the rest suppressed"}
        spent: dict = {}
    seen_keys = _KeyCheck(key) if key is not None else None
    counts: dict = {}  # what the draws did, over the batches (record_sampling)
    shuffled = [] if shuffle else None
    if shuffle:
        report.shuffled = True
        report.notes.append("rows released in a random order (--shuffle: a uniform permutation from the random source)")
    row0 = 0
    geo = (ob.lat_c, ob.lon_c) if out_fmt == "geojson" else None
    # Batch k is encoded and written in a background thread while batch k+1 is drawn (pyarrow releases
    # the GIL). One writer thread keeps the order; every write is waited for before the writer is
    # closed or its temporary file removed.
    notice = None if src.release else NOT_FOR_RELEASE  # the file says it too, not only its sidecar (review)
    held = contextlib.ExitStack()  # from the last checks to the sidecar: commit.release_commit
    with held:
        with AtomicWriter(output_path, ob.out_schema, force=force, geojson_coords=geo,
                          plain_columns=(ob.lat_c, ob.lon_c), notice=notice) as w, \
                _OrderedWrites(w.write) as writes:
            for batch in batches:
                n = batch.num_rows
                batch, la, lo, rejected, msg = ob.validate(batch, row0)
                if row0 == 0 and not shuffle:
                    sorted_note(report, la, lo)
                if rejected:
                    report.rows_rejected += rejected
                    report.first_rejected = report.first_rejected or msg
                if allowed is not None:
                    keep = _within_budget(batch.column(user), spent, allowed, row0)
                    report.rows_suppressed += int((~keep).sum())
                    if not keep.all():
                        import pyarrow as pa

                        batch = batch.filter(pa.array(keep))
                        la, lo = la[keep], lo[keep]
                if seen_keys is not None:
                    seen_keys.add(batch.column(key), row0)
                out = ob.apply(batch, la, lo, ob.generator(batch, src), counts)
                report.rows_read += n
                row0 += n
                if shuffled is not None:
                    shuffled.append(out)
                    if report.rows_read > SHUFFLE_MAX_ROWS:
                        raise ValueError(f"--shuffle holds the release in memory: {input_path} has more than "
                                         f"{SHUFFLE_MAX_ROWS:,} rows; shuffle the file first, or split it")
                else:
                    writes.put(out)
                if progress is not None:
                    progress(report.rows_read)
            if shuffled is not None:
                import pyarrow as pa

                from .io import BATCH_ROWS

                table = pa.Table.from_batches(shuffled, schema=ob.out_schema)
                shuffled.clear()
                if key is not None and not src.release:
                    # research mode with record keys: the order is a function of the seed and the keys, the same as the
                    # Dask engine's over any partitioning (--key promises the same output whatever the engine)
                    import numpy as np

                    from ..sampling.keyed import record_keys, record_order_keys

                    k0, k1 = record_order_keys(ob.seed, record_keys(table.column(key)))
                    order = np.lexsort((k1, k0))
                else:
                    order = src.generator.permutation(table.num_rows)
                for part in table.take(pa.array(order)).to_batches(max_chunksize=BATCH_ROWS):
                    writes.put(part)
                del table
            writes.flush()
            report.rows_written = w.rows
            if report.rows_read == 0:
                raise ValueError(f"{input_path} has no rows to obfuscate")
            if report.rows_written == 0:  # an empty release is no answer (a header-only input is refused too)
                why = (f"{report.rows_rejected} rejected, the first: {report.first_rejected}" if report.rows_rejected else
                       f"{report.rows_suppressed} suppressed by the budget")
                raise ValueError(f"none of the {report.rows_read:,} rows of {input_path} could be released ({why})")
            if seen_keys is not None:
                seen_keys.check()
            # from here to the sidecar other runs into this folder wait and so does a signal: the writer's move to
            # OUTPUT (which fails, without --force, if OUTPUT exists by then) and the sidecar are one step
            held.enter_context(release_commit(output_path))
        with removed_unless_completed(output_path):
            report.seconds = time.perf_counter() - t0
            rejection_note(report)
            record_sampling(report, release, counts)
            if not src.release:
                report.notes.append("reproducible run (seeded): NOT for release")
            commit_sidecar(output_path, report.to_dict())
    return report


class _OrderedWrites:
    """``write(item)`` calls in one background thread, in order, at most one behind the caller. An
    error of a write is raised by the next ``put`` or ``flush``; leaving the block waits for the write
    in flight whatever happened, so the writer is never closed under it."""

    def __init__(self, write):
        self.write = write
        self.pending = None

    def __enter__(self):
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(1, thread_name_prefix="dprivacy-write")
        return self

    def put(self, item) -> None:
        self.flush()
        self.pending = self.pool.submit(self.write, item)

    def flush(self) -> None:
        if self.pending is not None:
            p, self.pending = self.pending, None
            p.result()

    def __exit__(self, exc_type, exc, tb):
        if self.pending is not None:
            self.pending.exception()  # wait for it; an error already on its way up takes precedence
            if exc_type is None:
                self.flush()
        self.pool.shutdown(wait=True)
        return False


class _KeyCheck:
    """Refuses a repeated record key (two records with one key would get the same noise). Keys are
    collected (8 bytes a row) and checked by one sort before the output is renamed into place."""

    def __init__(self, column: str):
        self.column = column
        self.parts: list = []
        self.values: list = []

    def add(self, values, row0: int) -> None:
        from ..sampling.keyed import record_keys

        self.parts.append(record_keys(values))
        self.values.append((row0, values))

    def check(self) -> None:
        keys = np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=np.uint64)
        order = np.argsort(keys, kind="stable")
        same = np.flatnonzero(keys[order][1:] == keys[order][:-1])
        if not same.size:
            return
        k = int(order[same + 1].min())  # the first row that repeats an earlier key
        for row0, vals in self.values:
            if k < row0 + len(vals):
                v = vals[k - row0].as_py()
                break
        raise ValueError(f"row {k + 1}: key {v!r} of column {self.column!r} is repeated; keyed noise needs unique keys "
                         "(two records with one key would get the same noise)")


def _within_budget(users, spent: dict, allowed: int, row0: int) -> np.ndarray:
    """True for the rows whose user has not yet used up ``allowed`` reports (counting earlier batches
    through ``spent``, which is updated). A missing user is an error: its reports could not be counted."""
    import pyarrow.compute as pc

    if users.null_count:
        k = int(np.flatnonzero(pc.is_null(users).to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"row {row0 + k + 1}: the user column is empty, so the row's reports cannot be counted against a budget")
    codes, uniq = _factorize(users)
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    first = np.r_[0, np.flatnonzero(sc[1:] != sc[:-1]) + 1]
    rank = np.empty(codes.size, dtype=np.int64)
    starts = np.repeat(first, np.diff(np.r_[first, sc.size]))
    rank[order] = np.arange(sc.size) - starts
    base = np.array([spent.get(u, 0) for u in uniq], dtype=np.int64)
    keep = base[codes] + rank < allowed
    counts = np.bincount(codes, minlength=len(uniq))
    for u, b, c in zip(uniq, base, counts):
        spent[u] = int(b + c)
    return keep


def _factorize(users):
    """(codes, distinct values) of a pyarrow column, values as Python objects."""
    import pyarrow as pa

    if isinstance(users, pa.ChunkedArray):
        users = users.combine_chunks()
    enc = users.dictionary_encode()
    return np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64), enc.dictionary.to_pylist()


def displacement_quantiles(epsilon_m: float, qs=(0.5, 0.9, 0.95, 0.99)) -> dict:
    """Quantiles (metres) of the planar Laplace displacement r ~ Gamma(2, 1/ε) and its mean 2/ε."""
    from scipy import stats

    out = {"mean": 2.0 / epsilon_m}
    out.update({f"p{round(q * 100)}": float(stats.gamma.ppf(q, a=2.0, scale=1.0 / epsilon_m)) for q in qs})
    return out


def evaluate_files(original, released, *, lat: str | None = None, lon: str | None = None, key: str | None = None,
                   coords: str | None = None, return_points: bool = False):
    """Displacement in metres between an original file and its obfuscated version (rows joined by ``key``,
    or by position), on the WGS84 ellipsoid: mean, median, 90/95/99th percentiles, max; and, when the
    release's sidecar gives ε, the same figures predicted by the mechanism's radial law. ``coords``:
    the unit of both files' coordinates (default: the release's sidecar says, else degrees). With a
    key, original rows the release left out are counted as ``rows_not_released``, and a released key
    missing from the original is an error."""
    import json
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.compute as pc
    from pyproj import Geod

    from .io import find_coordinate_columns, read_batches

    def load(path):
        schema, batches = read_batches(path)
        t = pa.Table.from_batches(list(batches), schema=schema)
        la, lo = find_coordinate_columns(t.schema, lat, lon)
        return t, la, lo

    side = Path(str(released) + ".dprivacy.json")
    meta = _read_sidecar(side)
    if coords is not None and meta.get("coords") and coords != meta["coords"]:
        raise ValueError(f"--coords {coords}, but the release's sidecar {side} says its coordinates are {meta['coords']}")
    coords = coords or meta.get("coords") or "degrees"
    shuffled = meta.get("shuffled") or any("random order" in str(n) for n in meta.get("notes") or ())  # (older sidecars)
    if key is None and shuffled:
        # matched by position, each released row was compared with another row's true point (a mean displacement of
        # 7,270 km for a predicted 2 km: review)
        raise ValueError(f"the release {released} is in a random row order (obfuscate --shuffle, its sidecar says): match "
                         "its rows to the original with --key COL (a column both files have, unique per row)")
    if coords not in COORDS:
        raise ValueError(f"--coords must be one of {', '.join(COORDS)}, got {coords!r}")
    scale = SEMICIRCLE_DEG if coords == "semicircles" else 1.0
    a, la_a, lo_a = load(original)
    b, la_b, lo_b = load(released)
    not_released = 0
    if key is not None:
        for t, name in ((a, original), (b, released)):
            if key not in t.column_names:
                raise ValueError(f"no key column {key!r} in {name}")
            if pc.count_distinct(t.column(key)).as_py() != t.num_rows:
                raise ValueError(f"key column {key!r} of {name} has repeated values: it cannot join rows one to one")
        stray = pc.is_null(pc.index_in(b.column(key), value_set=a.column(key)))
        if pc.any(stray).as_py():
            first = b.column(key).filter(stray)[0].as_py()
            raise ValueError(f"{pc.sum(stray).as_py()} key(s) of {released} are not in {original} (e.g. {first!r})")
        # rows of the original that the release left out (invalid and skipped, or over a user's budget) are not
        # joined; the report counts them
        where = pc.index_in(a.column(key), value_set=b.column(key))
        released_rows = pc.is_valid(where)
        not_released = a.num_rows - b.num_rows
        a = a.filter(released_rows)
        b = b.take(where.filter(released_rows))
    elif a.num_rows != b.num_rows:
        raise ValueError(f"{original} has {a.num_rows} rows and {released} {b.num_rows}: give --key COL to join them")
    f = lambda t, c: pc.cast(t.column(c), pa.float64()).to_numpy(zero_copy_only=False)  # noqa: E731
    lat0, lon0, lat1, lon1 = (f(a, la_a) * scale, f(a, lo_a) * scale, f(b, la_b) * scale, f(b, lo_b) * scale)
    for name, la, lo in ((original, lat0, lon0), (released, lat1, lon1)):
        with np.errstate(invalid="ignore"):
            out_of_range = np.isfinite(la) & np.isfinite(lo) & ((np.abs(la) > 90) | (np.abs(lo) > 180))
        if out_of_range.any():
            k = int(np.flatnonzero(out_of_range)[0])
            hint = " (Garmin semicircles? give --coords semicircles)" if coords == "degrees" else ""
            raise ValueError(f"{name}: {describe_bad(la, lo, k, k + 1)}{hint}")
    ok = np.isfinite(lat0) & np.isfinite(lon0) & np.isfinite(lat1) & np.isfinite(lon1)
    if not ok.any():
        raise ValueError(f"no row has coordinates in both {original} and {released}")
    _, _, d = Geod(ellps="WGS84").inv(lon0[ok], lat0[ok], lon1[ok], lat1[ok])
    d = np.asarray(d)
    res = {"original": str(original), "released": str(released), "rows": int(ok.sum()), "rows_skipped": int((~ok).sum()),
           **({"rows_not_released": not_released} if not_released else {}),
           "displacement_m": {"mean": float(d.mean()), "p50": float(np.median(d)), "p90": float(np.quantile(d, 0.9)),
                              "p95": float(np.quantile(d, 0.95)), "p99": float(np.quantile(d, 0.99)), "max": float(d.max())}}
    if coords != "degrees":
        res["coords"] = coords
    if not meta:
        res["note"] = (f"no sidecar {side.name} beside the release: its ε and mechanism are unknown, so only the "
                       "displacement is measured (is it a dprivacy release?)")
    if meta:
        e = meta.get("epsilon_per_metre")
        if e:
            res["epsilon_per_metre"] = e
            res["mechanism"] = meta.get("mechanism")
            if not meta.get("grid"):  # the radial law of the continuous mechanism; a grid release also snaps
                res["predicted_displacement_m"] = displacement_quantiles(float(e))
            res["random_source"] = meta.get("random_source")
    if return_points:
        return res, meta, (lat0[ok], lon0[ok]), (lat1[ok], lon1[ok]), d
    return res
