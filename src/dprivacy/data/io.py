"""Reading and writing tables of points: CSV (also .csv.gz), Parquet and GeoJSON, chosen by extension.

Tables are read and written in record batches (pyarrow), so a file larger than memory streams through;
every column other than the coordinates keeps its type and the rows keep their order. Writes are
atomic: the output goes to a temporary file beside OUTPUT and is moved to OUTPUT only when complete, so
an error or an interrupt leaves nothing at OUTPUT; without ``force`` the move fails if OUTPUT exists by then
(:mod:`.commit`). Inputs must be regular files (or a Parquet folder of parts), checked before they are opened
(:func:`dprivacy._system.check_input_file`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path
from typing import Iterator

from .._system import check_input_file, memory_failure, signals_held, stop_signals  # noqa: F401 (io.signals_held, io.stop_signals)
from .commit import commit_new, fresh_temp_name

#: Usual names of coordinate columns, in order of preference.
LAT_NAMES = ("lat", "latitude", "Latitude", "LAT", "Lat", "position_lat", "y_lat")
LON_NAMES = ("lon", "lng", "long", "longitude", "Longitude", "LON", "Lon", "Lng", "position_long")

#: Column names that usually hold a geometry (WKB or WKT): a copy of the location in another form.
GEOMETRY_NAMES = ("geometry", "geom", "the_geom", "wkb_geometry", "wkt", "geography", "geog")

#: Words that make a column name look like a location when they are one of its words (``pickup_latitude``,
#: ``homeLat``, ``Latitude_2``, ``geom``); "long" is left out (``long_description``).
LOCATION_WORDS = frozenset({"lat", "latitude", "lon", "lng", "longitude", "geometry", "geom", "wkt", "wkb",
                            "geography", "geog", "coords", "coordinates",
                            # the third coordinate locates too (with an elevation model, a GPS track's altitudes pin
                            # its points): refused as a GeoJSON position's altitude is
                            "alt", "altitude", "elevation",
                            # an address or a cell of a spatial index locates the point too (a UK postcode to about
                            # 100 m: a review found Address1-3 and Postcode released beside the moved point)
                            "address", "addr", "street", "postcode", "postal", "zip", "zipcode",
                            "pluscode", "easting", "northing", "utm", "mgrs"})


#: Parts that make a column name look like a location wherever they appear in it (``pickuplatitude``,
#: ``dropoff_latlong``, ``geohash``); ``coord`` and ``geometr`` only as words of their own (``x_coord``, but not
#: ``coordinator`` or ``geometric_mean``: a review).
LOCATION_PARTS = ("latitud", "longitud", "latlng", "latlon", "lonlat", "lnglat", "geohash", "wkt", "wkb", "address",
                  "postcode", "zipcode")
LOCATION_WORD_STEMS = ("coord", "coords", "coordinate", "coordinates", "geometry", "geometries")

#: A word made of one of these and lat/lon/lng (``homelat``, ``pickuplon``, ``startlng``) looks like a location; a
#: list of the usual prefixes rather than any word ending so (``epsilon``, ``semicolon``, ``chocolat``, ``flat``).
LOCATION_ENDS = ("lat", "lon", "lng")
LOCATION_PREFIXES = ("home", "work", "pickup", "dropoff", "start", "end", "stop", "origin", "orig", "dest",
                     "destination", "src", "source", "dst", "from", "to", "gps", "device", "user", "event", "cell",
                     "tower", "begin", "finish", "center", "centre", "mid", "last", "first", "prev", "next", "true", "raw")


def _looks_located(name: str) -> bool:
    """Whether a column name looks like a location: one of its words is a location word (:data:`LOCATION_WORDS`,
    :data:`LOCATION_WORD_STEMS`), it contains a location part (:data:`LOCATION_PARTS`), or a word of it is a usual
    prefix followed by lat/lon/lng (``homelat``)."""
    words = _words(name)
    if words & LOCATION_WORDS or words & set(LOCATION_WORD_STEMS):
        return True
    low = name.lower()
    if any(part in low for part in LOCATION_PARTS):
        return True
    return any(w.endswith(LOCATION_ENDS) and w[:-3] in LOCATION_PREFIXES for w in words)


def _words(name: str) -> set:
    """The words of a column name: split at non-letters and at camelCase boundaries, lower-cased."""
    import re

    return {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)}


def _located_fields(field, prefix: str = "") -> list:
    """Names (dotted for struct fields) under ``field`` that look like locations: a name with a location
    word, or a binary column (WKB geometries are binary)."""
    import pyarrow as pa

    name = prefix + field.name
    t = field.type
    binary = (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
              or getattr(pa.types, "is_binary_view", lambda _: False)(t))
    found = [name] if (_looks_located(field.name) or field.name.lower() in GEOMETRY_NAMES or binary) else []
    if pa.types.is_struct(t):
        for k in range(t.num_fields):
            found += _located_fields(t.field(k), name + ".")
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        found += _located_fields(t.value_field.with_name(field.name + "[]"), prefix)  # a track: list<struct<lat, lon>>
    elif pa.types.is_map(t):
        found += (_located_fields(t.key_field.with_name(field.name + "{key}"), prefix)
                  + _located_fields(t.item_field.with_name(field.name + "{}"), prefix))
    return found

FORMATS = {".csv": "csv", ".gz": "csv", ".parquet": "parquet", ".pq": "parquet", ".geojson": "geojson", ".json": "geojson"}

#: Rows per batch when streaming.
BATCH_ROWS = 1 << 18
#: Features per batch when reading GeoJSON (each is a Python dict until converted: smaller batches).
GEOJSON_BATCH_ROWS = 1 << 16


def file_format(path) -> str:
    """'csv', 'parquet' or 'geojson' from the file name (``.csv``, ``.csv.gz``, ``.parquet``/``.pq``,
    ``.geojson``), case-insensitive."""
    name = Path(path).name.lower()
    if name.endswith(".csv.gz") or name.endswith(".csv"):
        return "csv"
    for ext, fmt in FORMATS.items():
        if name.endswith(ext) and ext != ".gz":
            return fmt
    raise ValueError(f"cannot tell the format of {str(path)!r}: expected .csv, .csv.gz, .parquet or .geojson")


def geometry_columns(schema) -> tuple[str, str] | None:
    """(latitude, longitude) columns of a GeoJSON input's geometry (from :func:`geojson_batches`'s schema
    metadata), else None."""
    raw = (getattr(schema, "metadata", None) or {}).get(GEOJSON_COORDS_KEY)
    if not raw:
        return None
    lon_c, lat_c = raw.decode().split(",", 1)
    return lat_c, lon_c


def find_coordinate_columns(names, lat: str | None = None, lon: str | None = None) -> tuple[str, str]:
    """The latitude and longitude column names: the given ones (checked), or found by the usual names.
    ``names`` may be a pyarrow schema: a GeoJSON input's points are its geometry, whatever --lat/--lon
    say (naming properties there released the obfuscated properties as the geometry and the true
    geometry as properties)."""
    geometry = geometry_columns(names)
    if geometry is not None:
        for given, col, flag in ((lat, geometry[0], "--lat"), (lon, geometry[1], "--lon")):
            if given is not None and given != col:
                raise ValueError(f"{flag} {given!r}: the points of a GeoJSON file are its features' geometry (here "
                                 f"columns {geometry[1]!r}, {geometry[0]!r}); --lat/--lon name the columns of a CSV or "
                                 "Parquet file")
        return geometry
    declared = geoparquet_geometry_columns(names) if hasattr(names, "metadata") else []
    names = list(getattr(names, "names", names))
    if lat is not None and lat == lon:
        raise ValueError(f"--lat and --lon both name the column {lat!r}")

    def pick(given, usual, what, flag):
        if given is not None:
            if given not in names:
                raise ValueError(f"no {what} column {given!r} in the file: its columns are {', '.join(names)}")
            return given
        found = [c for c in names if c in usual or c.lower() in {u.lower() for u in usual}]
        if not found:
            raise ValueError(f"no {what} column found (looked for {', '.join(usual[:5])}, ...); name it with {flag} "
                             f"(the columns are {', '.join(names)})")
        if len(found) > 1:
            raise ValueError(f"several possible {what} columns ({', '.join(found)}): choose one with {flag}")
        return found[0]

    if declared and lat is None and lon is None and not any(c.lower() in {u.lower() for u in LAT_NAMES} for c in names):
        raise ValueError(f"the points of this GeoParquet file are in its geometry column(s) {', '.join(map(repr, declared))} "
                         "(WKB), which obfuscate does not read: write them as latitude/longitude columns and drop the "
                         "geometry (e.g. GeoPandas: df['lat'], df['lon'] = df.geometry.y, df.geometry.x)")
    return pick(lat, LAT_NAMES, "latitude", "--lat"), pick(lon, LON_NAMES, "longitude", "--lon")


def without_input_metadata(schema):
    """``schema`` without the input's schema metadata, which describes the input and must not be released:
    GeoParquet's ``geo`` carries the bounding box of the true points, GEOJSON_COORDS_KEY marks a GeoJSON
    input (a CSV/Parquet output is not one), other writers' keys may hold anything. Only the GeoJSON id
    marker (a column name) is kept. The fields' own metadata goes too (a review found it in the Parquet output and
    in the GeoJSON schema member, also on the coordinate columns), nested fields included."""
    import pyarrow as pa

    def bare(field):
        t = field.type
        if pa.types.is_struct(t):
            t = pa.struct([bare(t.field(k)) for k in range(t.num_fields)])
        elif pa.types.is_large_list(t):
            t = pa.large_list(bare(t.value_field))
        elif pa.types.is_fixed_size_list(t):
            t = pa.list_(bare(t.value_field), t.list_size)
        elif pa.types.is_list(t):
            t = pa.list_(bare(t.value_field))
        elif pa.types.is_map(t):
            t = pa.map_(bare(t.key_field).type, bare(t.item_field), keys_sorted=t.keys_sorted)
        return pa.field(field.name, t, nullable=field.nullable)

    schema = pa.schema([bare(f) for f in schema], metadata=schema.metadata)
    meta = {k: v for k, v in (schema.metadata or {}).items() if k == GEOJSON_ID_KEY}
    return schema.with_metadata(meta) if meta else schema.remove_metadata()


def geoparquet_geometry_columns(schema) -> list[str]:
    """The columns a GeoParquet file declares as geometries (its schema metadata ``geo``, GeoParquet 1.x:
    ``{"columns": {name: {"encoding": "WKB", "bbox": ...}}}``) that are present in ``schema``."""
    import json

    raw = (getattr(schema, "metadata", None) or {}).get(b"geo")
    if not raw:
        return []
    try:
        cols = json.loads(raw).get("columns", {})
    except (ValueError, AttributeError):
        cols = {}
    return [c for c in (cols if isinstance(cols, dict) else {}) if c in schema.names]


#: A value within this many degrees of a row's latitude or longitude (about 1 km) counts as a copy of it.
COPY_ATOL_DEG = 0.01

#: A number alone matches a coordinate within COPY_ATOL_DEG of 0 only to this (an exact copy): near the equator or the
#: prime meridian every small number is within COPY_ATOL_DEG of it in E7, semicircle or metre units.
NEAR_ZERO_ATOL_DEG = 1e-6

#: A column is a copy of the location when at least this share of the rows with a value match.
COPY_SHARE = 0.5

#: The rows of each batch the copy check reads (spread over it): a copy is in most rows, and text columns cost
#: about 0.45 s each per 262,144 rows to split into numbers (measured by a review: 10 of them, 5.4 s against 0.96 s).
COPY_SAMPLE_ROWS = 10_000

_NUMBER = r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"


def _number_leaves(arr, rows, many: bool = False):
    """(values as float64, their top-level row, whether they are one of several numbers of the row) for the numbers
    under a column: numeric leaves of structs and lists, and the numbers written in text, each text cut at the
    characters that cannot be part of a number ("42.55623,1.53319", "POINT (1.53 42.55)"). ``many``: the values
    are elements of a list (several per row). The third item is a bool or a boolean array (per value)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    t = arr.type
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
        # hemisphere letter, count as several numbers of the row (a review found such a column released)
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
    its name (``homelat``, ``x``, ``location`` = "42.55623,1.53319", ``track`` = [[lon, lat], ...])."""
    import numpy as np

    encodings = copy_encodings(lat, lon)
    n = encodings[0][0].size
    # a coordinate within the tolerance of 0 (near the equator or the prime meridian) is matched by any small number in
    # E7, semicircle or metre units, and by a 0 flag in degrees (a 1-5 rating near Greenwich was refused, --keep or not:
    # review). A number alone is compared with such a coordinate to 1e-6° only (an exact copy, in any unit); several
    # numbers of a row ("51.47,-0.003") are compared with both coordinates at the usual tolerance.
    with np.errstate(invalid="ignore"):
        lat_scale = np.where(np.abs(np.asarray(lat, dtype=np.float64)) > COPY_ATOL_DEG, 1.0, NEAR_ZERO_ATOL_DEG / COPY_ATOL_DEG)
        lon_scale = np.where(np.abs(np.asarray(lon, dtype=np.float64)) > COPY_ATOL_DEG, 1.0, NEAR_ZERO_ATOL_DEG / COPY_ATOL_DEG)
    found = []
    for name in batch.schema.names:
        if name in skip:
            continue
        # per row: a number alone (a column, a struct's field, a text holding one number) near a coordinate is a copy;
        # among several numbers (a list, "Route 42, km 1.5"), only both coordinates are
        lat_one, lon_one = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        lat_many, lon_many = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        has = np.zeros(n, dtype=bool)
        for vals, rows, several in _number_leaves(batch.column(name), np.arange(n)):
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
                np.logical_or.at(lat_one, rows[one], a_one[one])
                np.logical_or.at(lon_one, rows[one], o_one[one])
                np.logical_or.at(lat_many, rows[several], a[several])
                np.logical_or.at(lon_many, rows[several], o[several])
        match = lat_one | lon_one | (lat_many & lon_many)
        k = int(has.sum())
        if k >= 2 and int(match.sum()) >= max(2, COPY_SHARE * k):
            found.append(name)
    return found


def check_no_other_locations(schema, lat_c: str, lon_c: str, path, keep=()) -> None:
    """Refuse an input with another column that holds the true locations, which the release would copy
    untouched beside the obfuscated ``lat_c``/``lon_c``: a GeoParquet geometry column (WKB points; seen:
    released byte for byte), or a column named like a coordinate or a geometry (as a GeoJSON property
    named so is refused). ``keep``: columns the user declares are not locations (``--keep``; a column named
    ``lat_err`` or ``LatAm``), exempt from the name and binary checks."""
    keep = set(keep)
    unknown = sorted(keep - set(schema.names))
    if unknown:
        raise ValueError(f"--keep {', '.join(map(repr, unknown))}: no such column in {path}: its columns are "
                         f"{', '.join(schema.names)}")
    if keep & {lat_c, lon_c}:
        raise ValueError(f"--keep names the obfuscated coordinate column(s) {', '.join(map(repr, sorted(keep & {lat_c, lon_c})))}")
    declared = geoparquet_geometry_columns(schema)
    if declared:
        raise ValueError(f"{path}: column(s) {', '.join(map(repr, declared))} are GeoParquet geometries holding the true "
                         f"locations; they would be released untouched beside the obfuscated {lat_c!r}/{lon_c!r}: drop them "
                         "from the file (the points are read from the latitude/longitude columns)")
    usual = {n.lower() for n in LAT_NAMES + LON_NAMES + GEOMETRY_NAMES}
    other = []
    for f in schema:
        if f.name in (lat_c, lon_c) or f.name in keep:
            continue
        other += [f.name] if f.name.lower() in usual else _located_fields(f)
    if other:
        raise ValueError(f"{path}: column(s) {', '.join(map(repr, other))} look like locations (a coordinate, a geometry, "
                         "an altitude or an address: a name with lat/lon/geometry/alt/address/postcode/zip in it, or "
                         "binary data such as WKB) besides the obfuscated "
                         f"{lat_c!r}/{lon_c!r}: they would be released untouched; drop them (renaming would only hide "
                         "them from this check), or, for a column that holds no location, name it with --keep COL")


def read_batches(path, *, batch_rows: int = BATCH_ROWS, text_columns=()) -> tuple[object, Iterator]:
    """(schema, iterator of pyarrow.RecordBatch) for a CSV, Parquet or GeoJSON file of points. Two columns
    of one name are refused (written out, one of them was lost: name,name,lat,lon with A,B gave A, A).
    ``text_columns``: columns of a CSV read as their text, without type inference."""
    from .._system import import_pandas_for_pyarrow

    import_pandas_for_pyarrow()  # (before pyarrow's to_numpy imports it where a Ctrl-C is lost)
    schema, batches = _read_batches(path, batch_rows=batch_rows, text_columns=text_columns)
    seen: set = set()
    for name in schema.names:
        if name in seen:
            raise ValueError(f"{path} has two columns called {name!r}: rename one")
        seen.add(name)
    return schema, batches


def _read_batches(path, *, batch_rows: int, text_columns=()) -> tuple[object, Iterator]:
    import pyarrow as pa

    path = Path(path)
    expected = "a CSV, Parquet or GeoJSON file"
    check_input_file(path, "input file", folder=True, expected=expected)  # (a FIFO or /dev/zero: before it is opened)
    fmt = file_format(path)
    if fmt != "parquet" and path.is_dir():  # (a folder is read as Parquet parts only)
        check_input_file(path, "input file", expected=expected)
    if fmt == "csv":
        from pyarrow import csv

        try:
            reader = csv.open_csv(path, read_options=csv.ReadOptions(block_size=1 << 24),
                                  convert_options=csv.ConvertOptions(column_types={c: pa.string() for c in text_columns}))
        except pa.ArrowInvalid as exc:
            raise ValueError(f"cannot read {path} as CSV: {_csv_problem(exc)}") from None
        except MemoryError:  # (pyarrow's ArrowMemoryError is an ArrowException too: not a damaged file)
            raise
        except (OSError, pa.ArrowException) as exc:  # a truncated gzip, a .gz that is not one (review)
            if memory_failure(exc):  # (no thread for the reader: memory, not the file)
                raise MemoryError(memory_failure(exc)) from None
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"cannot read {path}: {msg} (a damaged, truncated or mislabelled file?)") from None
        return reader.schema, _csv_batches(reader, path)
    if fmt == "parquet" and path.is_dir():
        # a folder of parts (the Dask engine's output, part-NNNNN.parquet): read in the order of the names
        import pyarrow.parquet as pq

        parts = sorted(path.rglob("*.parquet"))
        if not parts:
            raise ValueError(f"{path} is a folder with no .parquet file")
        for p in parts:
            check_input_file(p, f"the Parquet part of {path}", expected="a Parquet file")
        def schema_of(p):
            try:
                return pq.read_schema(p)
            except pa.ArrowInvalid as exc:
                raise ValueError(f"cannot read the Parquet part {p} of {path}: {str(exc).splitlines()[0]}") from None

        schema = schema_of(parts[0])

        def batches():
            # one part open at a time (a folder of thousands of parts would exhaust the file handles)
            for p in parts:
                if not schema_of(p).equals(schema):
                    raise ValueError(f"the Parquet parts of {path} differ in their columns ({p.name} against {parts[0].name})")
                with pq.ParquetFile(p, pre_buffer=False) as f:
                    yield from f.iter_batches(batch_size=batch_rows)

        return schema, batches()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            # pre_buffer keeps what it has read for the life of the reader: memory grew by ~20 bytes a row
            # (428 MiB for 10⁷ rows against 222 MiB for 3·10⁶); without it the stream stays flat.
            f = pq.ParquetFile(path, pre_buffer=False)
        except pa.ArrowInvalid as exc:
            raise ValueError(f"cannot read {path} as Parquet: {str(exc).splitlines()[0]}") from None
        return f.schema_arrow, f.iter_batches(batch_size=batch_rows)
    return geojson_batches(path, batch_rows=min(batch_rows, GEOJSON_BATCH_ROWS))


def _csv_problem(exc) -> str:
    """What is wrong with a CSV, without pyarrow's message, which quotes the offending line (a person's values)."""
    msg = str(exc).lower()
    if "conversion error" in msg or "invalid value" in msg:
        what = "a value does not convert to its column's type"
    elif "expected" in msg and "columns" in msg:
        what = "a line has another number of fields than the header"
    elif "quote" in msg:
        what = "a quoted field is not closed"
    else:
        what = "a line does not parse"
    return f"{what} {NOT_QUOTED}"


#: How a refusal about a data file says that it does not quote the file's values.
NOT_QUOTED = "(the line is not quoted: its values are a person's)"


def _csv_batches(reader, path):
    import pyarrow as pa

    try:
        for b in reader:
            yield b
    except pa.ArrowInvalid as exc:
        hint = ("; the column's type was taken from the file's first block (16 MiB), where every value was a number, "
                "so this one cannot be skipped as a row: correct it" if "conversion error" in str(exc).lower() else "")
        raise ValueError(f"cannot read {path} as CSV: {_csv_problem(exc)}{hint}") from None
    except MemoryError:  # (pyarrow's ArrowMemoryError: memory ran out, the file is fine)
        raise
    except (OSError, pa.ArrowException) as exc:  # a truncated gzip, a .gz that is not one: name the file (review)
        if memory_failure(exc):
            raise MemoryError(memory_failure(exc)) from None
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"cannot read {path}: {msg} (a damaged, truncated or mislabelled file?)") from None


#: Top-level member of the GeoJSON files written here (a foreign member, RFC 7946 §6.1): the Arrow schema
#: of the columns (base64 of its IPC serialisation) and which columns are the coordinates and the Feature
#: id, so that a round trip keeps every column's name, order and type (dates, timestamps, int8, ...).
GEOJSON_SCHEMA_MEMBER = "dprivacy:schema"
#: Rows per Parquet row group of a written file (every group but the last).
PARQUET_GROUP_ROWS = 1 << 17

#: The schema metadata key (Parquet) and member (GeoJSON) of a notice the released file carries.
NOTICE_KEY = b"dprivacy:notice"
#: Schema metadata key naming the column that holds the Features' ``id``.
GEOJSON_ID_KEY = b"geojson:id"
#: ... and the two columns that hold a GeoJSON input's geometry, "LON,LAT" (:func:`geometry_columns`)
GEOJSON_COORDS_KEY = b"geojson:coordinates"
_CHUNK_CHARS = 1 << 20
_SEPARATOR = __import__("re").compile(r"[ \t\r\n]*([,\]])[ \t\r\n]*")


class _JsonStream:
    """Incremental reading of one JSON document: values are decoded one at a time with the C scanner of
    :mod:`json` (``raw_decode``) from a buffer refilled in chunks, so memory stays at a chunk plus one
    value whatever the file's size."""

    def __init__(self, f, path):
        self.f, self.path = f, path
        self.buf, self.pos, self.eof = "", 0, False
        self.dec = __import__("json").JSONDecoder()

    def _fill(self) -> bool:
        if self.eof:
            return False
        chunk = self.f.read(_CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next non-blank character ('' at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def expect(self, ch: str) -> None:
        got = self.peek()
        if got != ch:
            raise ValueError(f"cannot read {self.path} as GeoJSON: expected {ch!r} at character {self.pos}, found {got!r}")
        self.pos += 1

    def value(self):
        """Decode the next JSON value."""
        import json

        self.peek()
        while True:
            try:
                v, end = self.dec.raw_decode(self.buf, self.pos)
                # a number at the very end of the buffer may continue in the next chunk
                if end < len(self.buf) or self.eof or self.buf[self.pos] in "\"{[":
                    self.pos = end
                    return v
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise ValueError(f"cannot read {self.path} as GeoJSON: {exc.msg}") from None
            if not self._fill():
                if not self.eof:
                    continue
                raise ValueError(f"cannot read {self.path} as GeoJSON: the file ends inside a value")

    def closes(self, close: str, what: str, fast=None) -> bool:
        """After an item of an array or object: consume "," (False: another item follows) or ``close``
        (True); ``fast``: a compiled separator pattern tried first on the buffer."""
        m = fast(self.buf, self.pos) if fast is not None else None
        if m is not None and m.end() < len(self.buf):
            c = m.group(1)
            self.pos = m.end()
        else:
            c = self.peek()
            self.pos += 1
        if c == close:
            return True
        if c != ",":
            raise ValueError(f"cannot read {self.path} as GeoJSON: expected ',' or '{close}' between {what}, found {c!r}")
        return False


def _geojson_features(path, header: dict):
    """Stream the top-level members of a FeatureCollection into ``header`` and yield its features."""
    import json

    try:
        yield from _geojson_features_of(path, header)
    except json.JSONDecodeError as exc:
        # the decoder's position is within a buffer of the stream, not the file's: name the file and the problem only
        raise ValueError(f"cannot read {path} as GeoJSON: {exc.msg} (the file is cut short or is not valid JSON)") from None


def _geojson_features_of(path, header: dict):
    with open(path, "r", encoding="utf-8-sig") as f:
        js = _JsonStream(f, path)
        js.expect("{")
        if js.peek() == "}":
            raise ValueError(f"{path} is not a GeoJSON FeatureCollection")
        seen_features = False
        while True:
            key = js.value()
            if not isinstance(key, str):
                raise ValueError(f"cannot read {path} as GeoJSON: a member name must be a string")
            js.expect(":")
            if key == "features":
                seen_features = True
                js.expect("[")
                if js.peek() == "]":
                    js.pos += 1
                else:
                    scan, sep = js.dec.scan_once, _SEPARATOR.match  # sep: the separator's fast path
                    while True:
                        # fast path: the C scanner on a buffer holding at least 64 KiB beyond this feature's start
                        if not js.eof and len(js.buf) - js.pos < 1 << 16:
                            js._fill()
                        try:
                            v, end = scan(js.buf, js.pos)
                            if end == len(js.buf) and not js.eof:
                                raise StopIteration
                            js.pos = end
                        except StopIteration:
                            v = js.value()  # a long feature or a syntax error: the careful path
                        yield v
                        if js.closes("]", "features", sep):
                            break
            else:
                header[key] = js.value()
            if js.closes("}", "members"):
                break
        if header.get("type") != "FeatureCollection" or not seen_features:
            raise ValueError(f"{path} is not a GeoJSON FeatureCollection")


def _json_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _feature_rows(path, header: dict, batch_rows: int):
    """Chunks of (properties, ids, lons, lats) lists from the features of ``path``."""
    props, ids, lons, lats = [], [], [], []
    # features are numbered from 1, like the rows of the validation's messages ("row 2: missing coordinate")
    for k, f in enumerate(_geojson_features(path, header), start=1):
        if not isinstance(f, dict):
            raise ValueError(f"{path}: feature {k} is not a Feature object (found {type(f).__name__})")
        g = f.get("geometry")
        if g is not None and not isinstance(g, dict):
            raise ValueError(f"{path}: feature {k} has a geometry that is not an object")
        c = (g or {}).get("coordinates")
        if g is None or (g.get("type") == "Point" and c == []):
            lons.append(None)  # no location (RFC 7946 §3.2: a null geometry; an empty Point): a missing coordinate
            lats.append(None)
        elif g.get("type") != "Point" or not isinstance(c, list) or len(c) < 2:
            raise ValueError(f"{path}: feature {k} is not a Point (only Point features can be obfuscated)")
        elif len(c) > 2:
            # an altitude would be released untouched (it locates too) or dropped without a word
            raise ValueError(f"{path}: feature {k} has {len(c)} coordinates: the obfuscation is of longitude and "
                             "latitude only; remove the altitude first (it would be dropped, or locate the point)")
        else:
            # RFC 7946 positions are numbers: anything else (true, "1.5") is a missing coordinate, a rejected row named
            # by the validation (true was read as 1.0; a string stopped the run even with --skip-invalid)
            lons.append(c[0] if _json_number(c[0]) else float("nan"))
            lats.append(c[1] if _json_number(c[1]) else float("nan"))
        p = f.get("properties") or {}
        if not isinstance(p, dict):
            raise ValueError(f"{path}: feature {k} has properties that are not an object")
        props.append(p)
        ids.append(f.get("id"))
        if len(lons) == batch_rows:
            yield props, ids, lons, lats
            props, ids, lons, lats = [], [], [], []
    if lons or not props:
        yield props, ids, lons, lats


def _decode_json_columns(table, schema, path=""):
    """Cast the columns of a table built from JSON values to ``schema`` (the writer's encodings undone:
    temporal values and decimals travel as strings, binaries as base64)."""
    import base64

    import pyarrow as pa

    cols = []
    for field in schema:
        if field.name not in table.column_names:
            cols.append(pa.nulls(table.num_rows, field.type))
            continue
        col = table.column(field.name)
        t = field.type
        if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)) and not col.type.equals(t):
            vals = [None if v is None else base64.b64decode(v) for v in col.to_pylist()]
            col = pa.array(vals, t)
        elif pa.types.is_duration(t) and not col.type.equals(t):
            col = col.cast(pa.int64()).cast(t)
        elif not col.type.equals(t):
            try:
                col = col.cast(t)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                raise ValueError(f"{path}: property {field.name!r} does not convert to {t} {NOT_QUOTED}") from None
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


def _rows_table(chunk, id_c: str, lon_c: str, lat_c: str, path="", ids_as_text: bool = False):
    import pyarrow as pa

    props, ids, lons, lats = chunk
    keys = dict.fromkeys(k for p in props for k in p)  # every property of the chunk, in first-seen order

    def column(name, values):
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            raise ValueError(f"{path}: {name} has values that do not make one column (e.g. numbers beside text, or an "
                             f"integer beyond 64 bits) {NOT_QUOTED}") from None

    t = (pa.table({k: column(f"property {k!r}", [p.get(k) for p in props]) for k in keys}) if keys
         else pa.table({"_": pa.nulls(len(lons))}).drop(["_"]))
    if any(i is not None for i in ids) and id_c not in t.column_names:
        if ids_as_text:  # RFC 7946 §3.2: a string or a number; both in one file make a text column
            ids = [None if i is None else str(i) for i in ids]
        t = t.append_column(id_c, column("the feature ids", ids))
    return t.append_column(lon_c, pa.array(lons, pa.float64())).append_column(lat_c, pa.array(lats, pa.float64()))


def geojson_batches(path, *, batch_rows: int = BATCH_ROWS):
    """(schema, iterator of record batches) of a GeoJSON FeatureCollection of Points, streamed.

    Columns: the properties, the Feature ``id`` (column ``id``, or ``feature_id`` when a property is
    already called ``id``; named in the schema metadata under ``geojson:id``), then ``longitude`` and
    ``latitude`` from the geometry. A file written by :class:`AtomicWriter` carries its Arrow schema
    (member ``dprivacy:schema``, written before the features): its columns come back with their names,
    order and types. Otherwise the types are inferred in a first pass that unifies the chunks' types
    (memory stays flat; the file is read twice)."""
    import base64
    import itertools

    import pyarrow as pa

    check_input_file(path, "input file", expected="a GeoJSON file")
    header: dict = {}
    rows = _feature_rows(path, header, batch_rows)
    first = next(rows)  # reads the members written before the features, and the first chunk
    meta = header.get(GEOJSON_SCHEMA_MEMBER)
    schema = None
    if isinstance(meta, dict) and isinstance(meta.get("arrow"), str) and len(meta.get("coordinates") or ()) == 2:
        try:
            schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(meta["arrow"])))
        except Exception:  # noqa: BLE001 - a damaged member: infer the types instead
            schema = None
    if schema is not None:
        lon_c, lat_c = meta["coordinates"]
        id_c = (schema.metadata or {}).get(GEOJSON_ID_KEY, b"id").decode()
        schema = schema.with_metadata({**(schema.metadata or {}), GEOJSON_COORDS_KEY: f"{lon_c},{lat_c}".encode()})

        def written():
            for chunk in itertools.chain([first], rows):
                yield from _decode_json_columns(_rows_table(chunk, id_c, lon_c, lat_c, path), schema, path).to_batches(batch_rows)

        return schema, written()
    unified = None
    tmp = ("\0longitude", "\0latitude")  # first pass: names no property has
    tmp_id = "\0id"
    id_kinds: set = set()
    id_property = False  # a property called "id" in any feature (not only the first 1000: the ids were dropped)
    for chunk in itertools.chain([first], rows):  # first pass: the types of every chunk, unified
        id_kinds |= {type(i) for i in chunk[1] if i is not None}
        id_property = id_property or any("id" in p for p in chunk[0])
        s = _rows_table(chunk, tmp_id, *tmp, path=path, ids_as_text=True).schema
        try:
            unified = s if unified is None else pa.unify_schemas([unified, s], promote_options="permissive")
        except (pa.ArrowTypeError, pa.ArrowInvalid) as exc:
            raise ValueError(f"{path}: a property has values of incompatible types across features ({exc})") from None
    id_c = "feature_id" if id_property else "id"
    if tmp_id in unified.names:
        unified = unified.set(unified.get_field_index(tmp_id), unified.field(tmp_id).with_name(id_c))
    ids_as_text = bool(id_kinds - {int, float})
    if id_kinds and not ids_as_text:  # numbers only: integers, or doubles if any id has a fraction part
        ids_type = pa.float64() if float in id_kinds else pa.int64()
        unified = unified.set(unified.get_field_index(id_c), pa.field(id_c, ids_type))
    props = [f for f in unified if f.name not in tmp]
    # a property named like a coordinate holds a location (often a copy of the point): it would be
    # released untouched beside the obfuscated geometry, under the name readers take for the point
    usual = {n.lower() for n in LAT_NAMES + LON_NAMES}
    located = [f.name for f in props if f.name.lower() in usual]
    if located:
        raise ValueError(f"{path}: properties {', '.join(map(repr, located))} look like coordinates: they would be released "
                         "untouched beside the obfuscated geometry; remove or rename them (the point is the geometry)")
    lon_c, lat_c = "longitude", "latitude"
    fields = props + [pa.field(lon_c, pa.float64()), pa.field(lat_c, pa.float64())]
    meta = {GEOJSON_COORDS_KEY: f"{lon_c},{lat_c}".encode()}
    if id_c in unified.names:
        meta[GEOJSON_ID_KEY] = id_c.encode()
    schema = pa.schema(fields, metadata=meta)

    def inferred():
        for chunk in _feature_rows(path, {}, batch_rows):  # second pass
            yield from _decode_json_columns(_rows_table(chunk, id_c, lon_c, lat_c, path, ids_as_text), schema,
                                            path).to_batches(batch_rows)

    return schema, inferred()


def read_geojson(path):
    """A GeoJSON FeatureCollection of Points as one pyarrow Table (see :func:`geojson_batches`)."""
    import pyarrow as pa

    schema, batches = geojson_batches(path)
    return pa.Table.from_batches(list(batches), schema=schema)


class AtomicWriter:
    """Write record batches to OUTPUT through a temporary file moved to OUTPUT on success.

    Use as a context manager: on an exception (or KeyboardInterrupt) the temporary file is removed and
    OUTPUT is left as it was (absent, or the old file when ``force`` was given). Without ``force`` the move
    fails with FileExistsError when OUTPUT exists by then (another run finished first), leaving it as it is
    (:func:`~.commit.commit_new`).
    """

    def __init__(self, path, schema, *, force: bool = False, geojson_coords: tuple[str, str] | None = None,
                 plain_columns: tuple = (), notice: str | None = None):
        self.path = Path(path)
        if self.path.is_dir():  # os.replace would fail at the end and leave the finished temporary file
            raise ValueError(f"output {self.path} is a folder: give a file name")
        if self.path.exists() and not force:
            raise FileExistsError(f"output {self.path} exists; use --force to replace it")
        if not self.path.parent.exists():
            raise FileNotFoundError(f"output folder {self.path.parent} does not exist")
        self.force = force
        self.fmt = file_format(self.path)
        if self.fmt == "geojson" and geojson_coords is None:  # before the temporary file: nothing left behind
            raise ValueError(f"cannot write {self.path} as GeoJSON: these rows have no point (coordinate columns) to be "
                             "its geometry; write .csv or .parquet")
        self.schema = without_input_metadata(schema)
        #: a sentence the file itself carries (Parquet schema metadata ``dprivacy:notice``, a GeoJSON member of that
        #: name): a seeded run's "NOT for release", so that the file says it even without its sidecar (a CSV cannot)
        self.notice = notice
        if notice and self.fmt == "parquet":
            self.schema = self.schema.with_metadata({**(self.schema.metadata or {}), NOTICE_KEY: notice.encode()})
        self.geojson_coords = geojson_coords
        # Parquet: columns written without dictionary encoding (released coordinates: nearly every value
        # distinct, so the dictionary attempt only costs time — a third of the write)
        self.plain_columns = tuple(plain_columns)
        self._writer = None
        self.rows = 0
        self._pending: list = []
        self._pending_rows = 0

    def __enter__(self):
        # the name first, then the file: an interrupt at any point of the opening removes what was made (__exit__ is
        # not called when __enter__ fails)
        self.tmp = fresh_temp_name(self.path)
        try:
            os.close(os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            self._open()
        except BaseException:
            with contextlib.suppress(Exception):
                if self._writer is not None:
                    self._writer.close()
            with contextlib.suppress(FileNotFoundError):
                self.tmp.unlink()
            raise
        return self

    def _open(self) -> None:
        if self.fmt == "csv":
            import pyarrow as pa
            from pyarrow import csv

            sink = pa.CompressedOutputStream(str(self.tmp), "gzip") if self.path.name.lower().endswith(".gz") else str(self.tmp)
            self._sink = sink
            self._writer = csv.CSVWriter(sink, self.schema)
        elif self.fmt == "parquet":
            import pyarrow.parquet as pq

            dictionary = [n for n in self.schema.names if n not in self.plain_columns] if self.plain_columns else True
            self._writer = pq.ParquetWriter(str(self.tmp), self.schema, use_dictionary=dictionary)
        else:
            self._writer = _GeoJSONWriter(self.tmp, self.schema, self.geojson_coords, self.notice)

    def write(self, batch) -> None:
        self.rows += batch.num_rows
        if self.fmt == "parquet":
            # row groups of a fixed number of rows: the batches' sizes follow the input's bytes (the length of
            # the true coordinates' text in a CSV) and the rows rejected, which row groups of the batches' sizes
            # published (a review read them from a release's footer)
            self._pending.append(batch)
            self._pending_rows += batch.num_rows
            if self._pending_rows >= PARQUET_GROUP_ROWS:
                self._write_groups(final=False)
        else:
            self._writer.write(batch)

    def _write_groups(self, *, final: bool) -> None:
        import pyarrow as pa

        if not self._pending:
            return
        t = pa.Table.from_batches(self._pending, schema=self._pending[0].schema)
        k = t.num_rows if final else t.num_rows // PARQUET_GROUP_ROWS * PARQUET_GROUP_ROWS
        if k:
            self._writer.write_table(t.slice(0, k), row_group_size=PARQUET_GROUP_ROWS)
        rest = t.slice(k)
        self._pending, self._pending_rows = (rest.to_batches() if rest.num_rows else []), rest.num_rows

    def __exit__(self, exc_type, exc, tb):
        # OUTPUT is replaced only when everything was written and closed: the last row group, written here, or a
        # close that fails (a full disk, an interrupt) leaves the old OUTPUT and removes the temporary file (a
        # review had an empty release committed by a SIGTERM during the last group)
        done = False
        try:
            try:
                if self.fmt == "parquet" and exc_type is None:
                    self._write_groups(final=True)
            finally:
                if self.fmt == "csv":
                    self._writer.close()
                    if not isinstance(self._sink, str):
                        self._sink.close()
                else:
                    self._writer.close()
            done = exc_type is None
        finally:
            if done:
                try:
                    _chmod_like_new_file(self.tmp)
                    commit_new(self.tmp, self.path, force=self.force)  # (FileExistsError: another run's release)
                except BaseException:
                    with contextlib.suppress(FileNotFoundError):
                        self.tmp.unlink()
                    raise
            else:
                with contextlib.suppress(FileNotFoundError):
                    self.tmp.unlink()
        return False



class _GeoJSONWriter:
    """A FeatureCollection written feature by feature (one batch in memory at a time): first the member
    ``dprivacy:schema`` (the Arrow schema, so that :func:`geojson_batches` restores every type), then the
    features, each with its Point geometry [lon, lat], its ``id`` when the schema names an id column,
    and the other columns as properties (dates and timestamps as ISO strings, decimals as strings,
    durations as integers, binaries as base64)."""

    def __init__(self, path, schema, coords, notice: str | None = None):
        import base64
        import json

        if coords is None:
            raise ValueError("writing GeoJSON needs the coordinate columns")
        self.lat, self.lon = coords
        self.schema = schema
        id_c = (schema.metadata or {}).get(GEOJSON_ID_KEY, b"").decode()
        self.id_c = id_c if id_c and id_c in schema.names else None
        self.f = open(path, "w", encoding="utf-8")
        member = {"arrow": base64.b64encode(schema.serialize().to_pybytes()).decode("ascii"),
                  "coordinates": [self.lon, self.lat],
                  "columns": [f"{f.name}: {f.type}" for f in schema]}
        head = '{"type": "FeatureCollection", '
        if notice:
            head += json.dumps(NOTICE_KEY.decode()) + ": " + json.dumps(notice) + ", "
        self.f.write(head + json.dumps(GEOJSON_SCHEMA_MEMBER) + ": " + json.dumps(member) + ', "features": [\n')
        self.first = True

    @staticmethod
    def _json_text(col):
        """The JSON text of each value of a column, as a pyarrow string array (see the class notes):
        numbers and booleans formatted by Arrow (shortest round-trip doubles; NaN and ±Infinity as
        Python's json writes them), strings escaped by :mod:`json`'s C encoder, null as null."""
        import base64
        import json

        import pyarrow as pa
        import pyarrow.compute as pc

        t = col.type
        if pa.types.is_dictionary(t):
            col = col.cast(t.value_type)
            t = col.type
        if pa.types.is_boolean(t) or pa.types.is_integer(t):
            out = pc.cast(col, pa.string())
        elif pa.types.is_floating(t):
            x = pc.cast(col, pa.float64())
            out = pc.cast(x, pa.string())
            out = pc.if_else(pc.is_nan(x), "NaN", out)
            out = pc.if_else(pc.equal(x, float("inf")), "Infinity", out)
            out = pc.if_else(pc.equal(x, float("-inf")), "-Infinity", out)
        elif pa.types.is_duration(t):
            out = pc.cast(pc.cast(col, pa.int64()), pa.string())
        else:
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                vals = col.to_pylist()
            elif pa.types.is_temporal(t) or pa.types.is_decimal(t):
                vals = pc.cast(col, pa.string()).to_pylist()
            elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
                vals = [None if v is None else base64.b64encode(v).decode("ascii") for v in col.to_pylist()]
            else:  # nested values: their JSON as json.dumps writes it
                return pa.array(["null" if v is None else json.dumps(v, default=str, ensure_ascii=False) for v in col.to_pylist()],
                                pa.string())
            enc = json.encoder.encode_basestring
            return pa.array(["null" if v is None else enc(v) for v in vals], pa.string())
        return pc.fill_null(out, "null")

    def write(self, batch) -> None:
        import json

        import pyarrow.compute as pc

        if batch.num_rows == 0:
            return
        names = batch.schema.names
        text = lambda name: self._json_text(batch.column(names.index(name)))  # noqa: E731
        parts = ['{"type": "Feature", "geometry": {"type": "Point", "coordinates": [', text(self.lon), ", ", text(self.lat), "]}"]
        if self.id_c:
            ids = batch.column(names.index(self.id_c))
            parts.append(pc.if_else(pc.is_null(ids), "", pc.binary_join_element_wise(', "id": ', text(self.id_c), "")))
        keys = [n for n in names if n not in (self.lon, self.lat, self.id_c)]
        parts.append(', "properties": {')
        for k, name in enumerate(keys):
            parts.append(("" if k == 0 else ", ") + json.dumps(name, ensure_ascii=False) + ": ")
            parts.append(text(name))
        parts.append("}}")
        feats = pc.binary_join_element_wise(*parts, "")
        self.f.write(("" if self.first else ",\n") + ",\n".join(feats.to_pylist()))
        self.first = False

    def close(self) -> None:
        self.f.write("\n]}\n")
        self.f.close()


def write_json_atomic(path, obj) -> None:
    """Write a JSON document atomically (strict JSON, see :func:`dprivacy.results.dumps`)."""
    from ..results import dumps

    write_bytes_atomic(path, (dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def write_bytes_atomic(path, data: bytes, *, force: bool = True) -> None:
    """Write ``data`` to exactly ``path`` through a temporary file beside it, moved to ``path``: an error or
    Ctrl-C leaves nothing new (the old file, if any, stays). ``force=False``: FileExistsError, and ``path`` left as
    it is, when a file is there by the time the data is written (:func:`~.commit.commit_new`)."""
    path = Path(path)
    if not path.parent.exists():
        raise FileNotFoundError(f"output folder {path.parent} does not exist")
    tmp = fresh_temp_name(path)  # (the name before the file: a Ctrl-C right after mkstemp left an empty .partial)
    try:
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(data)
        _chmod_like_new_file(tmp)
        commit_new(tmp, path, force=force)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def sidecar_path(output_path) -> Path:
    """Where the report of a release written to ``output_path`` goes: ``OUTPUT.dprivacy.json``."""
    return Path(str(output_path) + ".dprivacy.json")


def check_sidecar(input_path, output_path, *, force: bool = False) -> None:
    """Refuse, before anything is written, a release whose sidecar would replace the input (``obfuscate
    q.csv.dprivacy.json -o q.csv`` overwrote its input with the report) or, without ``force``, an
    existing file."""
    side = sidecar_path(output_path)
    if side.is_dir():
        raise ValueError(f"the sidecar {side} (the report written beside OUTPUT) is a folder: name OUTPUT differently")
    if not side.exists():
        return
    try:
        same = os.path.samefile(side, input_path)
    except OSError:
        same = False
    if same:
        raise ValueError(f"the sidecar {side} (the report written beside OUTPUT) would replace the input file: name "
                         "OUTPUT differently")
    if not force:
        raise FileExistsError(f"the sidecar {side} exists (use --force to replace it with OUTPUT)")


#: Called with the release's path once its sidecar is written (the release is then complete). Empty in the library;
#: the command line adds one that lets the command finish from there on: a Ctrl-C while the report is printed
#: said "interrupted" (exit 130) beside a complete release (review).
ON_COMPLETE: list = []


def remove_release(output_path) -> None:
    """Remove a release (a file, or the Dask engine's folder of parts) whose sidecar could not be written, and any
    sidecar at its place (an older release's, under --force: it must not be read as this one's)."""
    p = Path(output_path)
    if p.is_dir():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
        sidecar_path(output_path).unlink()


@contextlib.contextmanager
def removed_unless_completed(output_path):
    """The code between a release's rename to ``output_path`` and its sidecar: an error or an interrupt there removes
    the release, so that none is left without its report."""
    try:
        yield
    except BaseException:
        remove_release(output_path)
        raise


#: Fields of a report that stay with the caller and are not in the sidecar, which travels with the release: the run
#: time depends on the owner's machine and its load (and on the size and content of the data).
SIDECAR_OMITS = ("seconds",)


def sidecar_report(report: dict) -> dict:
    """``report`` as the sidecar carries it: without :data:`SIDECAR_OMITS`, and the input and output named by their
    file names only (a full path names the owner's folders, often their user name, and the working directory)."""
    out = {k: v for k, v in report.items() if k not in SIDECAR_OMITS}
    for k in ("input", "output"):
        if isinstance(out.get(k), str):
            out[k] = Path(out[k]).name
    return out


def commit_sidecar(output_path, report: dict) -> None:
    """Write the sidecar of a release already at ``output_path`` (:func:`sidecar_report` of ``report``); when that
    fails, remove the release too, so that an error leaves no release without its report. Then the release is
    complete: :data:`ON_COMPLETE`."""
    with removed_unless_completed(output_path):
        write_json_atomic(sidecar_path(output_path), sidecar_report(report))
    for hook in list(ON_COMPLETE):
        hook(output_path)


def _chmod_like_new_file(path) -> None:
    """mkstemp creates files readable by their owner only; give the result the mode a plain open() would."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)
