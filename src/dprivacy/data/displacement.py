"""How far a location release moved its points (``dprivacy evaluate``): the displacement between an original file
and its release on the WGS84 ellipsoid, beside the figures the mechanism's radial law predicts."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .coordinates import COORDS, SEMICIRCLE_DEG, _as_numbers, describe_bad
from .planar_noise import displacement_quantiles


def _read_sidecar(side: Path) -> dict:
    """A release's sidecar, checked where evaluate relies on it ({} when there is none)."""
    import json

    from .._system import check_input_file

    if not side.exists():
        return {}
    check_input_file(side, "the release's sidecar", expected="a JSON file")  # (a FIFO there would block for ever)
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"the release's sidecar {side} is not valid JSON ({exc})") from None
    return _checked_sidecar(meta, side)


def sidecar_of(released) -> tuple[dict, str]:
    """(the release's sidecar, checked; how messages name it): the file beside a released file, or the report given
    with an in-memory release (:class:`~.memory.ArrowInput`'s ``sidecar``)."""
    from .memory import ArrowInput

    if isinstance(released, ArrowInput):
        name = f"given with {released}"
        return (_checked_sidecar(released.sidecar, name) if released.sidecar is not None else {}), name
    side = Path(str(released) + ".dprivacy.json")
    return _read_sidecar(side), str(side)


def _checked_sidecar(meta, side) -> dict:
    if not isinstance(meta, dict):
        raise ValueError(f"the release's sidecar {side} is not a JSON object")
    e = meta.get("epsilon_per_metre")
    if e is not None and not (isinstance(e, (int, float)) and not isinstance(e, bool) and math.isfinite(e) and e > 0):
        raise ValueError(f"the release's sidecar {side} has epsilon_per_metre {e!r}, expected a positive number")
    if meta.get("coords") is not None and meta["coords"] not in COORDS:
        raise ValueError(f"the release's sidecar {side} has coords {meta['coords']!r}, expected one of {', '.join(COORDS)}")
    return meta


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

    from .io import file_format, find_coordinate_columns, read_batches
    from .memory import in_memory

    def load(path):
        schema, batches = read_batches(path)
        la, lo = find_coordinate_columns(schema, lat, lon)
        if file_format(path) == "csv":
            # every column as its text (the coordinates parsed value by value, the key compared as written): with the
            # types the reader guessed from the first block, one 'abc' or '12a' among numbers, in any column, was read
            # when it came early and refused the file after that block
            schema, batches = read_batches(path, text_columns=schema.names)
        t = pa.Table.from_batches(list(batches), schema=schema)
        return t, la, lo

    meta, side = sidecar_of(released)
    released_file = not in_memory(released)
    if coords is not None and meta.get("coords") and coords != meta["coords"]:
        raise ValueError(f"--coords {coords}, but the release's sidecar {side} says its coordinates are {meta['coords']}")
    coords = coords or meta.get("coords") or "degrees"
    shuffled = meta.get("shuffled") or any("random order" in str(n) for n in meta.get("notes") or ())  # (older sidecars)
    if key is None and shuffled:
        # matched by position, each released row would be compared with another row's true point (a mean
        # displacement of 7,270 km for a predicted 2 km)
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
        if a.schema.field(key).type != b.schema.field(key).type:  # (a CSV's text against a Parquet integer): as text
            try:
                a, b = (t.set_column(t.schema.get_field_index(key), key, pc.cast(t.column(key), pa.string())) for t in (a, b))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise ValueError(f"key column {key!r} has the type {a.schema.field(key).type} in {original} and "
                                 f"{b.schema.field(key).type} in {released}: they cannot be compared") from None
        for t, name in ((a, original), (b, released)):
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
    f = lambda t, c: _as_numbers(t.column(c)).to_numpy(zero_copy_only=False)  # noqa: E731 (a non-number: NaN, skipped)
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
        res["note"] = (f"no sidecar {Path(side).name} beside the release: its ε and mechanism are unknown, so only the "
                       "displacement is measured (is it a dprivacy release?)" if released_file else
                       f"no sidecar given with {released}: its ε and mechanism are unknown, so only the displacement is "
                       "measured (pass the release's result as sidecar=)")
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
