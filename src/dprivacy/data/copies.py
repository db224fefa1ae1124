"""Columns that hold a copy of the points whatever their name: numbers within about 1 km of a row's latitude or
longitude, in degrees or another unit (radians, E7, Garmin semicircles, Web Mercator metres), alone, in a list, a
struct or a map, or written in text (decimals, degrees-minutes-seconds). A release would carry such a column
untouched beside the obfuscated coordinates, so the obfuscation refuses it (:meth:`.obfuscator.Obfuscator.validate`).
"""

from __future__ import annotations

import re


#: A value within this many degrees of a row's latitude or longitude (about 1 km) counts as a copy of it.
COPY_ATOL_DEG = 0.01

#: A number alone matches a coordinate within COPY_ATOL_DEG of 0 only to this (an exact copy): near the equator or the
#: prime meridian every small number is within COPY_ATOL_DEG of it in E7, semicircle or metre units.
NEAR_ZERO_ATOL_DEG = 1e-6

#: A column is a copy of the location when at least this share of the rows with a value match.
COPY_SHARE = 0.5

#: The rows of a column with a value that the copy check reads in each batch (spread over them): a copy is in most
#: of them, and text columns cost about 0.45 s each per 262,144 rows to split into numbers (measured: 10 of them, 5.4 s
#: against 0.96 s).
COPY_SAMPLE_ROWS = 10_000

_NUMBER = r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"


def _number_leaves(arr, rows, many: bool = False):
    """(values as float64, their top-level row, whether they are one of several numbers of the row) for the numbers
    under a column: numeric leaves of structs and lists, and the numbers written in text, each text cut at the
    characters that cannot be part of a number ("42.55623,1.53319", "POINT (1.53 42.55)"). ``many``: the values
    are elements of a list (several per row). The third item is a bool or a boolean array (per value)."""
    import numpy as np
    import pyarrow as pa

    t = arr.type
    if (pa.types.is_integer(t) or pa.types.is_floating(t)) and arr.null_count == 0:
        # (without pyarrow.compute: 25 ms of every command's start; as the unsafe cast below: rounded to nearest)
        yield np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64), rows, many
        return
    import pyarrow.compute as pc

    if pa.types.is_dictionary(t):
        arr, t = arr.cast(t.value_type), t.value_type
    if pa.types.is_struct(t):
        for k in range(t.num_fields):
            yield from _number_leaves(pc.struct_field(arr, [k]), rows, many)
    elif pa.types.is_map(t):
        # a map's keys and values, like a list's elements: several per row ({"a": lat, "b": lon}, {"lat,lon": 1})
        # (from the offsets: pyarrow's list_parent_indices aborts the process on a map; keys and items are the
        # whole child arrays, which the offsets index)
        off = np.asarray(arr.offsets, dtype=np.int64)
        parents = np.repeat(np.arange(len(arr)), np.diff(off))
        for child in (arr.keys, arr.items):
            yield from _number_leaves(child.slice(int(off[0]), int(off[-1] - off[0])), rows[parents], True)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        # the values of a list are many numbers per row (a track, or an accelerometer trace near longitude 0): they
        # count as a copy only with both coordinates among them
        parents = np.asarray(pc.list_parent_indices(arr))
        yield from _number_leaves(pc.list_flatten(arr), rows[parents], True)
    elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        # unsafe: a 64-bit id beyond 2^53 has no exact double, and only its closeness to a coordinate matters
        yield np.asarray(arr.cast(pa.float64(), safe=False).fill_null(float("nan"))), rows, many
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        text = arr.cast(pa.large_string())
        # a decimal comma ("41,41185") where the text has no point
        text = pc.if_else(pc.match_substring(text, "."), text, pc.replace_substring_regex(text, r"(\d),(\d)", r"\1.\2"))
        tokens = pc.split_pattern_regex(text, r"[^0-9.eE+-]+")
        parents = np.asarray(pc.list_parent_indices(tokens))
        flat = pc.list_flatten(tokens)
        ok = np.asarray(pc.fill_null(pc.match_substring_regex(flat, _NUMBER), False))
        if ok.any():
            vals = np.asarray(pc.cast(pc.filter(flat, pa.array(ok)), pa.float64()))
            rows_ok = rows[parents[ok]]
            if many:
                yield vals, rows_ok, True
            else:  # one number in a row's text counts like a number; several, only with both coordinates
                per_row = np.bincount(parents[ok], minlength=len(arr))
                yield vals, rows_ok, per_row[parents[ok]] > 1
        # degrees, minutes and seconds (40°26'46"N 79°58'56"W, 40 26 46.3 N): their decimal degrees, signed by the
        # hemisphere letter, count as several numbers of the row
        dms = np.asarray(pc.fill_null(pc.match_substring_regex(text, _DMS_HINT), False))
        if dms.any():
            vals_d, rows_d = [], []
            for k in np.flatnonzero(dms):
                for v in _dms_values(text[int(k)].as_py()):
                    vals_d.append(v)
                    rows_d.append(rows[k])
            if vals_d:
                yield np.asarray(vals_d, dtype=np.float64), np.asarray(rows_d), True


#: A text that may hold degrees-minutes-seconds or degrees with a hemisphere letter: a degree sign, a number and
#: minutes/seconds marks, or a number next to a hemisphere letter.
_DMS_HINT = r"[°º]|\d\s*['′]|\d\s*[\"″]|\d\s*[NSEWnsew]\b|\b[NSEWnsew]\s*\d"
# an optional hemisphere letter before the degrees (N 40° 26.767, the geocaching form) or after the last part (a letter
# followed by a number is the next coordinate's prefix, not this one's suffix)
_DMS = re.compile(r"(?:(?<![A-Za-z])([NSEWnsew])\s*)?([+-]?\d{1,3}(?:\.\d+)?)\s*([°º:\s])\s*(\d{1,2}(?:\.\d+)?)\s*(['′:])?\s*"
                  r"(?:(\d{1,2}(?:\.\d+)?)\s*([\"″])?)?(?:\s*([NSEWnsew])\b(?!\s*\d))?")
#: Decimal degrees with a hemisphere letter after or before them: 40.4461° N, 79.9822 W, N 40.4461
_DEGREES_HEMISPHERE = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s*[°º]?\s*([NSEWnsew])\b"
                                 r"|\b([NSEWnsew])\s*(\d{1,3}(?:\.\d+)?)(?![\d.])")


def _dms_values(text: str) -> list:
    """The angles written in degrees, minutes (and seconds), or in decimal degrees with a hemisphere letter, in
    ``text``, as signed decimal degrees (a Python pass over the sample's rows that look like such text: about 50 ms
    per 10,000 rows, only for such columns). A match whose parts are separated by colons or spaces only counts with a
    hemisphere letter ("09:51:00" is a time, "40 26 46 N" an angle)."""
    out = []
    text = text or ""
    rest = text
    for m in _DMS.finditer(text):
        before, deg, sep, minutes, mark, seconds, smark, after = m.groups()
        hemi = after or before
        if not (sep in "°º" or (mark and mark != ":") or smark or hemi):
            continue
        v = abs(float(deg)) + float(minutes) / 60 + (float(seconds) / 3600 if seconds else 0.0)
        if deg.startswith("-") or (hemi and hemi.upper() in "SW"):
            v = -v
        out.append(v)
        rest = rest[:m.start()] + " " * (m.end() - m.start()) + rest[m.end():]
    for m in _DEGREES_HEMISPHERE.finditer(rest):
        number, hemi = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(4), m.group(3))
        out.append(-float(number) if hemi.upper() in "SW" else float(number))
    return out


#: Web Mercator's sphere radius (EPSG:3857), metres
_MERCATOR_R = 6378137.0


def copy_encodings(lat, lon) -> list:
    """The forms in which a column may hold the points (``lat``, ``lon`` in degrees): (latitudes, longitudes, their
    tolerances) for degrees, radians, E7 integers (Google's location history), Garmin semicircles and Web Mercator
    metres (EPSG:3857, x = Rλ, y = R ln tan(π/4 + φ/2)), each tolerance :data:`COPY_ATOL_DEG` in that unit
    (Mercator's y: the image of 0.01° of latitude, R/cos φ per radian)."""
    import numpy as np

    lat = np.asarray(lat, dtype=np.float64)
    lon = np.asarray(lon, dtype=np.float64)
    rad = np.pi / 180.0
    semi = 2.0**31 / 180.0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        phi = np.clip(lat, -89.9, 89.9) * rad
        y = _MERCATOR_R * np.log(np.tan(np.pi / 4 + phi / 2))
        y_tol = _MERCATOR_R * COPY_ATOL_DEG * rad / np.cos(phi)
    a = COPY_ATOL_DEG
    return [(lat, lon, a, a), (lat * rad, lon * rad, a * rad, a * rad), (lat * 1e7, lon * 1e7, a * 1e7, a * 1e7),
            (lat * semi, lon * semi, a * semi, a * semi), (y, _MERCATOR_R * lon * rad, y_tol, _MERCATOR_R * a * rad)]


def location_copies(batch, lat, lon, skip=()) -> list:
    """Columns of ``batch`` (other than ``skip``) that hold a copy of the points (``lat``, ``lon`` in degrees, one per
    row): a number within :data:`COPY_ATOL_DEG` of the row's latitude or longitude, or a text holding numbers
    close to both, in at least :data:`COPY_SHARE` of the rows that have one (and two rows at least), in degrees or
    another unit of :func:`copy_encodings` (radians, E7, semicircles, Web Mercator metres). Catches a copy whatever
    its name (``homelat``, ``x``, ``location`` = "42.55623,1.53319", ``track`` = [[lon, lat], ...]).

    Each column is read on its rows that hold a value (:func:`_rows_with_a_value`): all of them up to
    :data:`COPY_SAMPLE_ROWS`, else that many spread evenly over them, so a column empty but in one block of rows is
    read in that block (a sample of the batch's rows missed a copy in 12,400 of 262,144 rows)."""
    import numpy as np

    lat = np.asarray(lat, dtype=np.float64)
    lon = np.asarray(lon, dtype=np.float64)
    found = []
    points: dict = {}  # the points' forms at a set of rows, shared by the columns read on the same rows
    for name in batch.schema.names:
        if name in skip:
            continue
        leaves, rows = _rows_with_a_value(batch.column(name))
        if rows.size < 2:
            continue
        key = rows.tobytes()
        if key not in points:
            points[key] = _point_forms(lat[rows], lon[rows])
        if _holds_copy(leaves, points[key]):
            found.append(name)
    return found


def _rows_with_a_value(arr):
    """(the number leaves of ``arr`` at the rows the copy check reads, as :func:`_number_leaves` gives them with rows
    0..k−1, and those rows' positions in ``arr``). The rows: those not null (for numbers, not NaN either), all of them
    up to :data:`COPY_SAMPLE_ROWS`, else that many spread evenly over them (:func:`copy_sample`). Numbers are read by
    numpy (without pyarrow.compute, 25 ms of every command's start); other columns are taken by pyarrow."""
    import numpy as np
    import pyarrow as pa

    n, t = len(arr), arr.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        # (unsafe for a 64-bit integer beyond 2^53: rounded to nearest; only its closeness to a coordinate matters)
        v = arr.to_numpy(zero_copy_only=False)  # (the array's own buffer when it has no null; nulls are NaN)
        finite = None if pa.types.is_integer(t) and arr.null_count == 0 else np.isfinite(v)
        if finite is None or finite.all():
            rows = copy_sample(n)
        else:
            rows = np.flatnonzero(finite)
            rows = rows[copy_sample(rows.size)]
        return [(np.asarray(v[rows], dtype=np.float64), np.arange(rows.size), False)], rows
    if arr.null_count == n:
        return [], np.zeros(0, dtype=np.int64)
    bitmap = arr.buffers()[0] if arr.null_count else None
    if bitmap is None:
        rows = np.arange(n)
    else:  # the validity bitmap, least significant bit first, from the array's offset
        bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
        rows = np.flatnonzero(bits[arr.offset:arr.offset + n])
    rows = rows[copy_sample(rows.size)]
    if rows.size < n:
        arr = arr.take(pa.array(rows))
    return _number_leaves(arr, np.arange(rows.size)), rows


def _point_forms(lat, lon):
    """(:func:`copy_encodings` of the points, and the scales of a number alone's tolerance per row) for
    :func:`_holds_copy`."""
    import numpy as np

    # a coordinate within the tolerance of 0 (near the equator or the prime meridian) is matched by any small number in
    # E7, semicircle or metre units, and by a 0 flag in degrees (a 1-5 rating near Greenwich would be refused, --keep or
    # not). A number alone is compared with such a coordinate to 1e-6° only (an exact copy, in any unit); several
    # numbers of a row ("51.47,-0.003") are compared with both coordinates at the usual tolerance.
    with np.errstate(invalid="ignore"):
        lat_scale = np.where(np.abs(lat) > COPY_ATOL_DEG, 1.0, NEAR_ZERO_ATOL_DEG / COPY_ATOL_DEG)
        lon_scale = np.where(np.abs(lon) > COPY_ATOL_DEG, 1.0, NEAR_ZERO_ATOL_DEG / COPY_ATOL_DEG)
    return copy_encodings(lat, lon), lat_scale, lon_scale


def _holds_copy(leaves, forms) -> bool:
    """Whether the number leaves (values, row, several) of a column's rows hold a copy of those rows' points, given
    as their :func:`_point_forms` (:func:`location_copies`)."""
    import numpy as np

    encodings, lat_scale, lon_scale = forms
    n = lat_scale.size
    # per row: a number alone (a column, a struct's field, a text holding one number) near a coordinate is a copy;
    # among several numbers (a list, "Route 42, km 1.5"), only both coordinates are
    lat_one, lon_one = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    lat_many, lon_many = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    has = np.zeros(n, dtype=bool)
    for vals, rows, several in leaves:
        several = np.broadcast_to(np.asarray(several, dtype=bool), vals.shape)
        good = np.isfinite(vals)
        vals, rows, several = vals[good], rows[good], several[good]
        has[rows] = True
        one = ~several
        for e_lat, e_lon, t_lat, t_lon in encodings:
            tl = t_lat[rows] if np.ndim(t_lat) else t_lat
            to = t_lon[rows] if np.ndim(t_lon) else t_lon
            with np.errstate(invalid="ignore"):
                da, do = np.abs(vals - e_lat[rows]), np.abs(vals - e_lon[rows])
                a, o = da <= tl, do <= to
                a_one, o_one = da <= tl * lat_scale[rows], do <= to * lon_scale[rows]
            # (flag ← flag or hit, for rows that repeat too: setting True at the hits is np.logical_or.at, faster)
            lat_one[rows[one & a_one]] = True
            lon_one[rows[one & o_one]] = True
            lat_many[rows[several & a]] = True
            lon_many[rows[several & o]] = True
    match = lat_one | lon_one | (lat_many & lon_many)
    k = int(has.sum())
    return k >= 2 and int(match.sum()) >= max(2, COPY_SHARE * k)


def copy_sample(rows: int):
    """Positions among ``rows`` values the copy check reads: all of them up to :data:`COPY_SAMPLE_ROWS`, else that many
    spread evenly over them (the first and the last included)."""
    import numpy as np

    if rows <= COPY_SAMPLE_ROWS:
        return np.arange(rows)
    # ⌊k(rows − 1)/(K − 1)⌋ for k < K: strictly increasing (rows > K), in integers
    return np.arange(COPY_SAMPLE_ROWS, dtype=np.int64) * (rows - 1) // (COPY_SAMPLE_ROWS - 1)
