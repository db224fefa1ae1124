"""The per-batch work of a location release (:class:`Obfuscator`), picklable so that Dask workers run it, and the
rules that span the batches: unique record keys for keyed noise (:class:`_KeyCheck`), and each user's reports
within their budget (:func:`_within_budget`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .coordinates import SEMICIRCLE_DEG, _as_numbers, _as_semicircles, describe_bad, validate_coordinates
from .geodesic import taylor_radius
from .planar_noise import DEFAULT_PRECISION_DEG, NOISE_PARTS, _from_lattice, displace, prepare_displacements, released_cells


@dataclass
class Obfuscator:
    """The per-batch work of :func:`~.locations.obfuscate_file`, picklable so that Dask workers can run it: check
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
    #: the key column is a CSV's text: its record keys are :func:`text_record_keys`'s (set by prepare_obfuscation)
    text_keys: bool = False

    @property
    def out_schema(self):
        import pyarrow as pa

        from .columns import without_input_metadata

        if self.coords == "semicircles":
            return without_input_metadata(self.schema)
        return without_input_metadata(self.schema.set(self.schema.get_field_index(self.lat_c), pa.field(self.lat_c, pa.float64()))
                                      .set(self.schema.get_field_index(self.lon_c), pa.field(self.lon_c, pa.float64())))

    def coordinates(self, batch) -> tuple[np.ndarray, np.ndarray]:
        """(latitude, longitude) of a batch in degrees, NaN where a value is missing or not a number (a CSV's text is
        parsed here, row by row, wherever the row sits); under semicircles NaN also where it is not a whole number."""
        if self.coords == "semicircles":
            return tuple(_as_semicircles(batch.column(c)) * SEMICIRCLE_DEG for c in (self.lat_c, self.lon_c))
        return tuple(_as_numbers(batch.column(c)).to_numpy(zero_copy_only=False) for c in (self.lat_c, self.lon_c))

    def validate(self, batch, row0: int, where: str = ""):
        """(batch, lat, lon, rows rejected, first message) with the invalid rows (a coordinate missing, not a
        number or out of range) dropped, or ValueError naming the first one when ``skip_invalid`` is off.
        ``row0``: rows before this batch (for the message); ``where``: a prefix when the global row number is
        unknown (a Dask partition). Whether a valid point lies in a grid's region plays no part here."""
        import pyarrow as pa

        la, lo = self.coordinates(batch)
        # another copy of the points under any name (homelat, x, location = "42.55623,1.53319"): checked by value in
        # every batch (every part on Dask, however small) on each column's rows that hold a value (up to 10,000 spread
        # over them: a copy in one block of rows is found, and wide text tables stay cheap); --keep does not exempt a
        # column whose values are the points
        from .copies import location_copies

        # in degrees and the other units a copy comes in (radians, E7, semicircles, Web Mercator metres)
        copies = location_copies(batch, la, lo, skip=(self.lat_c, self.lon_c))
        if copies:
            raise ValueError(f"{self.input_name}: {where}column(s) {', '.join(map(repr, copies))} hold a copy of the points "
                             f"(numbers within 0.01° of a row's latitude or longitude, in at least half of the rows "
                             f"that have one): they would be released untouched beside the obfuscated "
                             f"{self.lat_c!r}/{self.lon_c!r}; drop them from the file")
        bad = validate_coordinates(la, lo)
        if not bad.any():
            return batch, la, lo, 0, None
        k = int(np.flatnonzero(bad)[0])
        semis = self.coords == "semicircles"
        public = where + describe_bad(la, lo, k, row0 + k + 1, values=False, whole=semis)
        finite = bool(np.isfinite(la[k]) and np.isfinite(lo[k]))
        # (semicircles that are not read: as read below, not as degrees)
        msg = where + describe_bad(la, lo, k, row0 + k + 1, whole=semis, values=finite or not semis)
        texts = [f"{c} = {batch.column(c)[k].as_py()!r}" for c in (self.lat_c, self.lon_c)
                 if semis or pa.types.is_string(batch.column(c).type) or pa.types.is_large_string(batch.column(c).type)]
        if texts and not finite:
            msg += f" (as read: {', '.join(texts)})"
        if self.coords == "degrees" and "projected" in msg and max(abs(la[k]), abs(lo[k])) <= 2.0**31:
            msg += " (or Garmin semicircles: --coords semicircles)"
        if not self.skip_invalid:
            # the row and its values only for the owner: the true coordinates (and the row) are a person's
            from .._system import RefusedWithDetail

            hint = "; degrees are expected, or Garmin semicircles with --coords semicircles" if self.coords == "degrees" else ""
            kinds = "missing, non-numeric, fractional or out-of-range" if semis else "missing, non-numeric or out-of-range"
            raise RefusedWithDetail(f"{self.input_name}: some rows have a {kinds} coordinate "
                                    f"(use --skip-invalid to drop and count such rows; --owner names the first{hint})", msg)
        keep = ~bad
        # the report (printed, and the sidecar beside the release) names the row and the problem, not the
        # row's coordinates: they are true locations
        return batch.filter(pa.array(keep)), la[keep], lo[keep], int(bad.sum()), public

    def generator(self, batch, source):
        """The random stream for a batch: per-record keyed streams in keyed research mode, else ``source``."""
        if self.key is None:
            return source.generator
        from ..sampling.keyed import KeyedStream

        return KeyedStream(self.seed, self.record_keys(batch.column(self.key)))

    def record_keys(self, values) -> np.ndarray:
        """The 64-bit record keys of the key column's values: :func:`~dprivacy.sampling.keyed.record_keys`, or, for a
        CSV's text (:attr:`text_keys`), :func:`text_record_keys`."""
        from ..sampling.keyed import record_keys

        return text_record_keys(values) if self.text_keys else record_keys(values)

    def apply(self, batch, la, lo, generator, stats: dict | None = None):
        """The batch with its coordinates replaced by the released ones. ``stats``: the counts of the draws are
        added there (:func:`~.obfuscation_report.record_sampling` sorts them into public and owner-only)."""
        return self.plan(batch, la, lo, generator, stats)(parallel=True)

    def plan(self, batch, la, lo, generator, stats: dict | None = None):
        """:meth:`apply` in two steps, for a pipeline over batches: every word this batch takes from ``generator``'s
        own stream is taken now, in the caller's order (the keys of the noise's parts; a draw of one part, and a grid
        release, are made here), and the returned ``finish(parallel=False)`` computes the rest (the noise's parts, the
        geodesic step, the output lattice) and returns the released batch: in any thread, in any order with the
        other batches' work, the same output as :meth:`apply`. ``parallel``: the noise's parts and the geodesic step
        on threads of their own (else in the calling thread). The counts go to ``stats`` when ``finish`` runs."""
        if self.release is not None:
            nla, nlo = self.release.apply(la, lo, generator, stats)
            out = self._released(batch, nla, nlo)
            return lambda parallel=False: out
        if stats is not None:
            stats["draws"] = stats.get("draws", 0) + la.size
        draw = prepare_displacements(la.size, epsilon=self.epsilon_m, generator=generator, threads=self.noise_parts,
                                     polar=False)

        def finish(parallel=False):
            east, north = draw(stats=None if stats is None else stats.setdefault("sampler", {}), parallel=parallel)
            threads = None if parallel else 1
            radius = taylor_radius(self.epsilon_m)  # (public: ε)
            if self.coords == "semicircles":  # the output lattice is the semicircles' own (2^31 per 180°)
                i, j = released_cells(la, lo, east, north, SEMICIRCLE_DEG, radius_m=radius, threads=threads)
                nla, nlo = i * SEMICIRCLE_DEG, j * SEMICIRCLE_DEG
            elif self.precision:
                i, j = released_cells(la, lo, east, north, self.precision, radius_m=radius, threads=threads)
                nla, nlo = _from_lattice(i, self.precision), _from_lattice(j, self.precision)
            else:  # unrounded (tests)
                nla, nlo = displace(la, lo, np.hypot(east, north), np.degrees(np.arctan2(east, north)), precision=0,
                                    threads=threads)
            return self._released(batch, nla, nlo)

        return finish

    def _released(self, batch, nla, nlo):
        """``batch`` with the released coordinates (degrees) in place of the true ones."""
        import pyarrow as pa

        cols = [batch.column(i) for i in range(batch.num_columns)]
        if self.coords == "semicircles":  # back to integer semicircles (a 1 cm lattice), in the input's type
            t_la, t_lo = self.schema.field(self.lat_c).type, self.schema.field(self.lon_c).type
            la_out = pa.array(np.rint(nla / SEMICIRCLE_DEG)).cast(t_la)
            lo_out = pa.array(np.rint(nlo / SEMICIRCLE_DEG)).cast(t_lo)
        else:
            # (zero-copy; pa.array would load numpy.ma to ask whether they are masked)
            la_out, lo_out = (pa.Array.from_buffers(pa.float64(), x.size, [None, pa.py_buffer(x)])
                              for x in (np.ascontiguousarray(nla, dtype=np.float64), np.ascontiguousarray(nlo, dtype=np.float64)))
        cols[self.schema.get_field_index(self.lat_c)] = la_out
        cols[self.schema.get_field_index(self.lon_c)] = lo_out
        return pa.RecordBatch.from_arrays(cols, schema=self.out_schema)


class _KeyCheck:
    """Refuses a repeated record key (two records with one key would get the same noise). Keys are
    collected (8 bytes a row) and checked by one sort before the output is renamed into place. The key
    columns themselves are kept only when they are not integers (an integer key is its own record key, so
    the message can name it without them). ``ob``: the release's :class:`Obfuscator`, whose record keys are
    checked (a CSV's text keys: :func:`text_record_keys`); without it, :func:`~dprivacy.sampling.keyed.record_keys`."""

    def __init__(self, column: str, ob: Obfuscator | None = None):
        self.column = column
        self.text = ob is not None and ob.text_keys
        self.keys_of = ob.record_keys if ob is not None else None
        self.parts: list = []
        self.values: list = []
        self.kept = 0

    def add(self, values, row0: int) -> None:
        import pyarrow as pa

        from ..sampling.keyed import record_keys

        self.parts.append((self.keys_of or record_keys)(values))
        if not pa.types.is_integer(values.type):
            self.values.append((self.kept, values))  # (where its keys start among those collected)
        self.kept += len(values)

    def check(self) -> None:
        keys = np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=np.uint64)
        ordered = np.sort(keys)  # (a sort of the values first: the stable argsort only when a key repeats)
        if not (ordered[1:] == ordered[:-1]).any():
            return
        order = np.argsort(keys, kind="stable")
        same = np.flatnonzero(keys[order][1:] == keys[order][:-1])
        k = int(order[same + 1].min())  # the first row that repeats an earlier key
        v = int(keys[k:k + 1].view(np.int64)[0])  # an integer key (record_keys: its int64 value)
        for start, vals in reversed(self.values):
            if start <= k < start + len(vals):
                v = vals[k - start].as_py()
                break
        written = note = ""
        if self.text:
            if isinstance(v, str) and _is_integer_text(v):  # named as the number it is, and as written if otherwise
                written = "" if v == str(int(v)) else f" (written {v!r})"
                v = int(v)
            note = ("; in a CSV a key written as a whole number is that number (007 and 7 are one key), any other text "
                    "is a key as written")
        # (k counts the rows kept: rows refused as invalid or over a user's budget are not among them)
        raise ValueError(f"record {k + 1} of those kept: key {v!r}{written} of column {self.column!r} is repeated; keyed "
                         f"noise needs unique keys (two records with one key would get the same noise){note}")


#: A key written as a whole number in a CSV: spaces around it, a minus sign, digits (what the CSV reader types as an
#: integer; 64-bit range checked apart).
_INTEGER_KEY = r"^\s*-?[0-9]+\s*$"


def _is_integer_text(v: str) -> bool:
    import re

    return re.match(_INTEGER_KEY, v, re.ASCII) is not None and -2**63 <= int(v) < 2**63


def text_record_keys(values) -> np.ndarray:
    """The record keys of a key column read from a CSV as text, defined by each value alone (not by the reader's
    guess of the column's type from the file's first block, which made one 12a or 3.5 change every record key when it
    came early and refuse the file after that block). A key written as a whole number in the 64-bit range (spaces
    around it, a minus sign and leading zeros allowed: what the CSV reader types as an integer) is that integer, as a
    Parquet file's integer key is (:func:`~dprivacy.sampling.keyed.record_keys`): so 007 and 7 are one key, and a
    seeded release of a CSV of integer keys is the one of the same data in Parquet. Any other text (12a, 3.5, +7) is
    a key as written, hashed. A blank key is missing: refused, as a null key is."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..sampling.keyed import record_keys

    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if getattr(pa.types, "is_string_view", lambda _: False)(arr.type):
        arr = arr.cast(pa.string())
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return record_keys(arr)
    if not arr.null_count:
        try:  # every key digits (the usual id column): pyarrow's cast, which also reads 0x1F (hex: not taken here)
            if not any(pc.any(pc.match_substring(arr, x)).as_py() for x in ("x", "X")):
                return pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False).view(np.uint64)
        except pa.ArrowInvalid:  # (a key that is not, or not only, digits; a blank one: sorted value by value below)
            pass
    blank = pc.fill_null(pc.match_substring_regex(arr, r"^\s*$"), True).to_numpy(zero_copy_only=False)
    if blank.any():
        k = int(np.flatnonzero(blank)[0])
        raise ValueError(f"the key column is empty at row {k + 1} of its batch: every record needs a key")
    s = pc.utf8_trim_whitespace(arr)
    digits = pc.utf8_ltrim(pc.utf8_ltrim(s, characters="-"), characters="0")
    n = pc.utf8_length(digits)
    limit = pc.if_else(pc.starts_with(s, "-"), pa.scalar("9223372036854775808"), pa.scalar("9223372036854775807"))
    fits = pc.or_(pc.less(n, 19), pc.and_(pc.equal(n, 19), pc.less_equal(digits, limit)))
    whole = pc.and_(pc.match_substring_regex(s, r"^-?[0-9]+$"), fits)
    mask = whole.to_numpy(zero_copy_only=False)
    keys = np.empty(len(arr), dtype=np.uint64)
    if mask.any():
        keys[mask] = pc.cast(s.filter(whole), pa.int64()).to_numpy(zero_copy_only=False).view(np.uint64)
    if not mask.all():
        keys[~mask] = record_keys(arr.filter(pc.invert(whole)))
    return keys


def _within_budget(users, spent: dict, allowed: int, row0: int) -> np.ndarray:
    """True for the rows whose user has not yet used up ``allowed`` reports (counting earlier batches
    through ``spent``, which is updated). A missing user (null, or blank text) is an error: its reports could not be
    counted. Users are compared as their values: a CSV's user column is read as text, so its ids are compared as
    written (007 and 7 are two users, as are 'ann' and 'Ann'), wherever a row sits (with the type the reader guessed from
    the file's first block, 007 and 7 were one user or two depending on whether a non-number came early)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(users, pa.ChunkedArray):
        users = users.combine_chunks()
    missing = pc.is_null(users)
    t = users.type.value_type if pa.types.is_dictionary(users.type) else users.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        text = users if users.type == pa.string() else users.cast(pa.string())
        missing = pc.fill_null(pc.match_substring_regex(text, r"^\s*$"), True)
    missing = missing.to_numpy(zero_copy_only=False)
    if missing.any():
        k = int(np.flatnonzero(missing)[0])
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
