r"""Geo-indistinguishability for real locations: planar Laplace applied geodesically (Chatzikokolakis et al. 2013 §6.2).

The planar Laplace mechanism reports z with density D_ε(x)(z) = ε²/(2π) e^{−ε d(x, z)}: a displacement
of length r ~ Gamma(2, 1/ε) in a uniformly random direction (Chatzikokolakis et al. 2013 §6.2; Andrés et al. CCS 2013).
Here ε is per metre and the displacement is applied **on the WGS84 ellipsoid** with pyproj's geodesic
``Geod.fwd``: the reported point is at geodesic distance r from the true one, in azimuth θ, at every
latitude, across the antimeridian and near the poles. Tools that add the noise in degrees, or in an
unscaled projection, shrink the east–west or north–south noise with latitude; this does not.

**Without floating-point leaks** (what is released, not only the mathematical mechanism):

1. the displacement v = (east, north) is the exact discrete planar Laplace on the lattice ΛZ² of the
   true point's tangent plane, Λ = :data:`NOISE_LATTICE_M` = 2^-22 m (0.24 µm): P(v) ∝ e^{−ε‖v‖},
   drawn with exact decisions (:mod:`dprivacy.sampling.planar`; no float value decides a draw);
2. it is applied along the geodesic (GeographicLib through pyproj: 15 nm accuracy; where the geodesic's
   Taylor polynomial puts the end point farther than 0.1 mm from every cell boundary, the cell is taken from it:
   :func:`released_cells`, the same cells 3–4× faster) and the result is
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

The noise and the figures of the guarantee are :mod:`.planar_noise`; the per-batch work, :mod:`.obfuscator`; the
report, :mod:`.obfuscation_report`; reading the coordinates as numbers, :mod:`.coordinates`; the evaluation of a
release, :mod:`.displacement`. This module checks the arguments and runs the release (:func:`obfuscate_file`);
the names of those modules are importable from here too.
"""

from __future__ import annotations

import contextlib
import math
import os
import time

from .coordinates import COORDS, SEMICIRCLE_DEG, _NUMBER_TEXT, _as_numbers, describe_bad, validate_coordinates  # noqa: F401 (re-exported)
from .copies import copy_sample  # noqa: F401 (re-exported)
from .displacement import _read_sidecar, evaluate_files  # noqa: F401 (re-exported)
from .obfuscation_report import (  # noqa: F401 (re-exported)
    NOT_PRIVATE, SORTED_RHO, ObfuscationReport, add_counts, record_sampling, rejection_note, sorted_by, sorted_note,
    sorted_note_text)
from .obfuscator import Obfuscator, _factorize, _KeyCheck, _within_budget  # noqa: F401 (re-exported)
from .planar_noise import (  # noqa: F401 (re-exported)
    DEFAULT_PRECISION_DEG, GEOD_CHUNK, GEODESIC_ERROR_M, HALF_CIRCUMFERENCE_M, MAX_COARSENING, MIN_CELL_WIDTH_M,
    NOISE_LATTICE_M, NOISE_PARTS, RADIUS95_EPS, UNITS, WGS84_A, WGS84_F, _from_lattice, _geodesic_forward,
    check_sane_epsilon, displace, displacement_quantiles, epsilon_for_accuracy, epsilon_per_metre, geodesic_guarantee,
    output_lattice, parse_accuracy, planar_laplace_displacements)


#: --shuffle holds the release in memory: at most this many rows.
SHUFFLE_MAX_ROWS = 20_000_000
#: Threads computing batches of the release (noise, geodesic step, output lattice) while the main thread reads the
#: next ones; the output does not depend on it.
PIPELINE_WORKERS = max(1, min(os.cpu_count() or 1, 8))
#: Batches in flight (read and not yet written) at most: memory is flat in the file's size.
PIPELINE_DEPTH = PIPELINE_WORKERS + 2


def prepare_obfuscation(input_path, output_path, *, epsilon: float, unit: str = "km", lat=None, lon=None, rng=None,
                        skip_invalid: bool = False, precision: float = DEFAULT_PRECISION_DEG, release=None,
                        user=None, budget=None, key=None, coords: str = "degrees", accuracy: str | None = None,
                        keep=()):
    """Check the arguments and the input's schema; return (Obfuscator, ObfuscationReport, random source,
    schema, batches). ``accuracy``: the --accuracy text the ε came from (recorded). ``keep``: columns declared
    not to be locations (:func:`.columns.check_no_other_locations`)."""
    import pyarrow as pa

    from .. import __version__
    from ..sampling import random_source
    from .io import check_no_other_locations, file_format, find_coordinate_columns, read_batches
    from .memory import display_name

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
        # inference rewrote them: zip code 02134 as 2134, 007 as 7, NA as empty, 1e5 as 100000). The coordinates and
        # the --key/--user columns are read as text whatever the output, and parsed per batch: with the types the
        # reader guessed from the file's first block (16 MiB), one value (a fraction among integer semicircles, 12a
        # among integer keys or user ids) was a rejected row, or changed every record key or the grouping of the
        # users, when it came early, and refused the whole file after that block; its place decided, at no cost in ε.
        # The other kept columns are their text in every output (Parquet, GeoJSON too): typed by that guess, one
        # value (unknown among ages) was released when early and refused the file when late.
        schema, batches = read_batches(input_path, text_columns=list(schema.names))
    for c in (lat_c, lon_c):
        t = schema.field(c).type
        if pa.types.is_dictionary(t):  # read through its values (_as_numbers decodes them)
            t = t.value_type
        if getattr(pa.types, "is_string_view", lambda _: False)(t):
            t = pa.string()
        text = pa.types.is_string(t) or pa.types.is_large_string(t)  # parsed row by row (_as_numbers)
        if coords == "semicircles":
            # whole numbers, checked row by row (Obfuscator.coordinates: 1.5 is a rejected row wherever it sits): an
            # integer or floating column, or a CSV's text, written back as integers
            ok = pa.types.is_integer(t) or pa.types.is_floating(t) or (text and file_format(input_path) == "csv")
            if ok and text:
                schema = schema.set(schema.get_field_index(c), pa.field(c, pa.int64()))
        else:
            ok = text or pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_null(t) or pa.types.is_decimal(t)
        if not ok:
            want = "semicircles (whole numbers)" if coords == "semicircles" else "numeric"
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
                         f"d·r/(3R²))·P(y|x') (ε = {epsilon:g} per {unit}; Chatzikokolakis et al. 2013 §6.2). The displacement is drawn exactly from "
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
        display_name(input_path), display_name(output_path), name, float(epsilon), unit, e_m, guarantee=guarantee,
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
    ob.text_keys = key is not None and file_format(input_path) == "csv"  # (read as text: Obfuscator.record_keys)
    if keep:
        report.notes.append(f"column(s) {', '.join(map(repr, keep))} released as they are with --keep: declared by the "
                            "user to hold no location although their name or type looks like one")
    return ob, report, src, schema, batches


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
    seen_keys = _KeyCheck(key, ob) if key is not None else None
    counts: dict = {}  # what the draws did, over the batches (record_sampling)
    shuffled = [] if shuffle else None
    if shuffle:
        report.shuffled = True
        report.notes.append("rows released in a random order (--shuffle: a uniform permutation from the random source)")
    row0 = 0
    geo = (ob.lat_c, ob.lon_c) if out_fmt == "geojson" else None
    # A pipeline over the batches: the main thread reads and checks batch k + 1 and takes its words from the random
    # source (Obfuscator.plan: in file order, so a seeded run gives the same release) while workers compute the
    # noise, the geodesic step and the output lattice of batches k, k − 1, ... (numpy and pyproj release the GIL), and
    # one writer thread encodes and writes them in order (pyarrow releases it too). At most PIPELINE_DEPTH batches
    # are in flight (memory flat in the file's size); every job and write is waited for before the writer is closed
    # or its temporary file removed.
    notice = None if src.release else NOT_FOR_RELEASE  # the file says it too, not only its sidecar
    held = contextlib.ExitStack()  # from the last checks to the sidecar: commit.release_commit
    with held:
        with AtomicWriter(output_path, ob.out_schema, force=force, geojson_coords=geo,
                          plain_columns=(ob.lat_c, ob.lon_c), notice=notice) as w, \
                _OrderedWrites(lambda item: (add_counts(counts, item[1]), w.write(item[0])), workers=PIPELINE_WORKERS,
                               depth=PIPELINE_DEPTH) as writes:
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
                local: dict = {}  # this batch's counts (added to counts by the writer thread, in order)
                finish = ob.plan(batch, la, lo, ob.generator(batch, src), local)
                report.rows_read += n
                row0 += n
                if shuffled is not None:
                    shuffled.append(finish(parallel=True))
                    add_counts(counts, local)
                    if report.rows_read > SHUFFLE_MAX_ROWS:
                        raise ValueError(f"--shuffle holds the release in memory: {input_path} has more than "
                                         f"{SHUFFLE_MAX_ROWS:,} rows; shuffle the file first, or split it")
                else:
                    writes.put_job(lambda finish=finish, local=local: (finish(parallel=False), local))
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

                    from ..sampling.keyed import record_order_keys

                    k0, k1 = record_order_keys(ob.seed, ob.record_keys(table.column(key)))
                    order = np.lexsort((k1, k0))
                else:
                    order = src.generator.permutation(table.num_rows)
                for part in table.take(pa.array(order)).to_batches(max_chunksize=BATCH_ROWS):
                    writes.put((part, {}))
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
    """``write(item)`` calls in one background thread, in order, at most ``depth`` behind the caller; with
    ``workers``, :meth:`put_job` computes the items first, by jobs on that many threads (a pipeline over batches: the
    caller reads and checks batch k + 1 while batches k, k − 1, ... are computed and written). An error of a job or
    a write is raised by a later ``put``, ``put_job`` or ``flush``, and nothing after it is written; leaving the
    block waits for everything in flight whatever happened, so the writer is never closed under it."""

    def __init__(self, write, *, workers: int = 0, depth: int = 1):
        self.write, self.workers, self.depth = write, workers, max(1, depth)

    def __enter__(self):
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(1, thread_name_prefix="dprivacy-write")
        self.compute = ThreadPoolExecutor(self.workers, thread_name_prefix="dprivacy-batch") if self.workers else None
        self.pending: deque = deque()
        self.failed = False
        return self

    def put(self, item) -> None:
        self._enqueue(lambda: item)

    def put_job(self, job) -> None:
        """``job()`` on a worker thread, then ``write`` of what it returns, in the order of the calls."""
        if self.compute is None:
            item = job()
            self._enqueue(lambda: item)
        else:
            self._enqueue(self.compute.submit(job).result)

    def _enqueue(self, get) -> None:
        while len(self.pending) >= self.depth:
            self.pending.popleft().result()
        self.pending.append(self.pool.submit(self._write, get))

    def _write(self, get) -> None:
        if self.failed:  # (an earlier item failed: its error is on its way up; nothing after it is written)
            return
        try:
            self.write(get())
        except BaseException:
            self.failed = True
            raise

    def flush(self) -> None:
        while self.pending:
            self.pending.popleft().result()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.failed = True  # (what is still queued is not written)
            if self.compute is not None:
                self.compute.shutdown(wait=False, cancel_futures=True)  # jobs not started are dropped
            for p in self.pending:
                p.exception()  # wait for it; the error already on its way up takes precedence
            self.pending.clear()
        else:
            self.flush()
        for pool in (self.pool, self.compute):
            if pool is not None:
                pool.shutdown(wait=True)
        return False

