"""GeoJSON FeatureCollections of Points read and written as streams of Arrow record batches.

The reader decodes one feature at a time from a buffer refilled in chunks, so memory stays at a chunk plus one batch
whatever the file's size: each Point becomes a longitude and a latitude column, the properties and the ``id`` the
other columns. The writer emits the features batch by batch after a member that carries the Arrow schema, so that a
file written here reads back with every column's name, order and type.
"""

from __future__ import annotations

from .._system import check_input_file
from .columns import LAT_NAMES, LON_NAMES
from .formats import BATCH_ROWS, GEOJSON_COORDS_KEY, GEOJSON_ID_KEY, GEOJSON_SCHEMA_MEMBER, NOT_QUOTED, NOTICE_KEY


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
            # by the validation (not true read as 1.0, nor a string that stops the run even with --skip-invalid)
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
    ``latitude`` from the geometry. A file written by :class:`~.io.AtomicWriter` carries its Arrow schema
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
    id_property = False  # a property "id" in any feature, not only the first ones (else the ids would be dropped)
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
