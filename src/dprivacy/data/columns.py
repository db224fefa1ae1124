"""Which columns of a table of points hold its coordinates, and which other columns would give the true locations
away by their name or type (a geometry, an address, an altitude, binary WKB): found, or refused, from the schema
before any row is read. Columns that hold a copy of the points under any name are found by their values
(:mod:`.copies`)."""

from __future__ import annotations

from .formats import GEOJSON_COORDS_KEY, GEOJSON_ID_KEY


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
                            # 100 m: Address1-3 and Postcode columns would be released beside the moved point)
                            "address", "addr", "street", "postcode", "postal", "zip", "zipcode",
                            "pluscode", "easting", "northing", "utm", "mgrs"})


#: Parts that make a column name look like a location wherever they appear in it (``pickuplatitude``,
#: ``dropoff_latlong``, ``geohash``); ``coord`` and ``geometr`` only as words of their own (``x_coord``, but not
#: ``coordinator`` or ``geometric_mean``).
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


def geometry_columns(schema) -> tuple[str, str] | None:
    """(latitude, longitude) columns of a GeoJSON input's geometry (from :func:`~.geojson.geojson_batches`'s schema
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
    marker (a column name) is kept. The fields' own metadata goes too, nested fields included (it would be written to
    the Parquet output and to the GeoJSON schema member, also on the coordinate columns)."""
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


def check_no_other_locations(schema, lat_c: str, lon_c: str, path, keep=()) -> None:
    """Refuse an input with another column that holds the true locations, which the release would copy
    untouched beside the obfuscated ``lat_c``/``lon_c``: a GeoParquet geometry column (WKB points, which
    would be released byte for byte), or a column named like a coordinate or a geometry (as a GeoJSON property
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
