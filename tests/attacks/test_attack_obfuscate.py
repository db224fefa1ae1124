"""Privacy attacks found on `dprivacy obfuscate`, each kept as a test so that no change reopens it (issue #30).

The comment above each test names the leak it closes. Inventory (leak, fix commit → test):

- float noise made outputs possible from one point and impossible from its neighbour (Mironov) (8dda01a, 1ed316d)
  → test_every_released_point_is_reachable_from_a_neighbour, test_stochastic_privacy_loss_of_the_released_points
- --lat/--lon naming GeoJSON properties released the true geometry; coordinate-named properties went out (7707569,
  0d29139) → test_a_geojson_s_points_are_its_geometry_whatever_its_properties_are_called
- a GeoParquet geometry column and the "geo" bounding box of the true points were released (abf2b08)
  → test_a_geoparquet_s_geometry_and_bounding_box_are_never_released
- the report and sidecar quoted a rejected row's true coordinates (6dfbca0)
  → test_the_sidecar_never_quotes_a_rejected_row_s_true_location
- pickup_latitude, homeLat, struct/list fields and WKB columns were copied untouched (b405155, b7ae459)
  → test_other_copies_of_the_location_are_refused
- maps and fixed-size binary columns holding the points were copied untouched (b7ae459)
  → test_a_map_or_fixed_size_binary_location_column_is_refused (written for issue #30)
- latlng, homelat, geohash, x_coord... (the location inside a word) were released (8d233ff)
  → test_names_with_the_location_inside_a_word_are_refused
- x/y, Breite, "42.55623,1.53319", radians, E7, semicircles, Web Mercator, DMS copies went out (8d233ff, be8d97a,
  a14e9a0) → test_a_copy_of_the_points_under_any_name_is_refused_by_its_values
- "40.4461° N, 79.9822° W" and the geocaching form were not read as the points (a000966, 6e2c67c)
  → test_decimal_degrees_with_hemisphere_letters_are_a_copy
- a copy after the first 10,000 rows, in a later batch or behind a one-row Dask part was released (be8d97a)
  → test_the_copy_check_reads_every_batch_and_every_dask_part
- Address1-3 and Postcode were released beside points moved by 2 km (be8d97a)
  → test_an_address_or_a_spatial_index_is_refused_by_its_name
- the input fields' metadata (a bbox, a first latitude) reached the release (9a24968)
  → test_the_input_fields_metadata_is_not_released
- a seeded release, whose noise anyone with the seed undoes, carried no mark in the file (14d6805)
  → test_a_seeded_release_says_so_in_the_file_itself; test_a_seeded_dask_release_says_so_in_every_part (written for
  issue #30)
- Parquet row groups followed the bytes of the true coordinates' text, published in the footer (fd99daa)
  → test_parquet_row_groups_do_not_follow_the_input
- a GPS track's altitude column was released untouched (64b1e60)
  → test_an_altitude_column_is_refused_unless_kept
- a column empty but for a copy in one block of rows (12,400 of a batch's 262,144) passed when the check read 20 runs
  of 500 rows (861a44d, found by a review)
  → test_a_copy_in_one_block_of_an_otherwise_empty_column_is_refused
- a decimal-comma copy ("41,41185") passed the copy check (aee9cff)
  → test_the_copy_check_on_big_ids_lists_and_decimal_commas
- under --coords semicircles a copy in semicircles was released (1e425a1)
  → test_a_copy_in_semicircles_is_refused
- a file sorted by latitude gave each row's latitude by its rank (8315fcf, 2da64f4; --shuffle: db5604f, c8924fd)
  → test_a_file_sorted_by_location_is_named_in_the_report,
  test_shuffle_releases_the_rows_in_a_random_order_each_with_its_own_noise,
  test_shuffle_on_dask_releases_the_rows_in_a_random_order_over_all_parts
- the seeded release order keys equalled words of the records' noise stream (6e2c67c)
  → test_the_release_order_keys_share_no_word_with_the_noise_stream
- x = lon was released when most rows lay within 0.01° of the meridian (9fdba0d)
  → test_small_numbers_near_the_prime_meridian_or_the_equator_are_not_a_copy
- --prior-from the input itself made the release depend on the points; a refusal by content overlap was itself a
  membership test
  outside ε (4ed2f4a, fc0c468, e1a1835)
  → test_a_prior_from_the_input_itself_is_refused, test_whether_a_prior_is_accepted_does_not_depend_on_the_input
- --accuracy gave ε per metre, so the per-user --budget allowed 1000 times the reports (7707569)
  → test_accuracy_is_recorded_in_the_sidecar
- OPEN: a map column whose keys or values are the points is released untouched (the copy check does not read maps)
  → test_a_copy_of_the_points_in_a_map_column_is_refused_by_its_values

Tested where they are, beside the samplers they exercise: the grid sampler's reachability (float tables made far cells
impossible from one secret and possible from a nearer one, d368f69) in test_location_grid.py::
test_tight_sampler_mixture_matches_the_mixed_rows_and_reaches_every_cell, and the library samplers' floating-point
tests (query and series draw through them) in test_sampling_exact.py, test_sampling_planar.py and
test_sampling_snapping.py.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

pyproj = pytest.importorskip("pyproj")
pa = pytest.importorskip("pyarrow")

from dprivacy.data.locations import displace, obfuscate_file  # noqa: E402
from dprivacy.sampling import random_source  # noqa: E402
from test_locations import GEOD, _copies_table, _data  # noqa: E402
import test_locations_cli  # noqa: E402
from test_locations_cli import _cli, _one_line  # noqa: E402

pts = test_locations_cli.pts  # the module-scoped fixture: a file of 3,000 points near Paris


# obfuscate: float noise made outputs possible from one true point and impossible from its neighbour (Mironov)
@pytest.mark.parametrize("lat, lon", [(48.85, 2.35), (-33.9, 179.999), (86.0, 30.0)])
def test_every_released_point_is_reachable_from_a_neighbour(lat, lon):
    """Mironov's condition for the geodesic pipeline: for outputs drawn at x, the noise lattice point of
    the neighbour x' (100 m away) nearest to each output is exhibited and mapped through the same
    geodesic step and rounding: it lands in the same output cell, so the output has positive
    probability from x' too."""
    from dprivacy.data.locations import NOISE_LATTICE_M, planar_laplace_displacements

    eps = 1e-3
    n = 300
    r, az = planar_laplace_displacements(n, epsilon=eps, generator=random_source(3).generator)
    la, lo = displace(np.full(n, lat), np.full(n, lon), r, az)
    lo_n, la_n, _ = GEOD.fwd(lon, lat, 90.0, 100.0)  # the neighbour, 100 m east
    az_b, _, dist = GEOD.inv(np.full(n, lo_n), np.full(n, la_n), lo, la)
    east = np.rint(dist * np.sin(np.radians(az_b)) / NOISE_LATTICE_M) * NOISE_LATTICE_M
    north = np.rint(dist * np.cos(np.radians(az_b)) / NOISE_LATTICE_M) * NOISE_LATTICE_M
    la2, lo2 = displace(np.full(n, la_n), np.full(n, lo_n), np.hypot(east, north), np.degrees(np.arctan2(east, north)))
    assert np.array_equal(la2, la) and np.array_equal(lo2, lo)


# obfuscate: the whole pipeline's privacy loss between points 200 m apart must stay within ε·d (float leaks, Mironov)
@pytest.mark.parametrize("broken", [False, True])
def test_stochastic_privacy_loss_of_the_released_points(broken):
    """Outputs of the whole pipeline at two true points 200 m apart on a meridian (ε = 1/km, so ε·d = 0.2),
    binned into 250 m strips along the meridian (post-processing): the Clopper–Pearson lower bound on the
    privacy loss stays within ε·d + σ; noise drawn at twice the claimed ε is refuted by the same test
    (power)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from planar_controls import loss_lower_bound

    from dprivacy.data.locations import geodesic_guarantee, planar_laplace_displacements

    eps, d, n = 1e-3, 200.0, 200_000
    draw = 2 * eps if broken else eps
    x = (45.0, 7.0)
    lo_n, la_n, _ = GEOD.fwd(x[1], x[0], 0.0, d)
    feats = []
    for k, (la0, lo0) in enumerate(((x[0], x[1]), (la_n, lo_n))):
        r, az = planar_laplace_displacements(n, epsilon=draw, generator=random_source(10 + k).generator)
        la, lo = displace(np.full(n, la0), np.full(n, lo0), r, az)
        az_b, _, dist = GEOD.inv(np.full(n, x[1]), np.full(n, x[0]), lo, la)
        feats.append(np.clip(np.floor(dist * np.cos(np.radians(az_b)) / 250), -6, 6))
    bound = eps * d + geodesic_guarantee(eps)["sigma"]
    lower = loss_lower_bound(feats[0], feats[1])
    assert (lower > bound) if broken else (lower <= bound), (lower, bound)


# obfuscate: --lat/--lon naming GeoJSON properties released the true geometry; coordinate-named properties went out
def test_a_geojson_s_points_are_its_geometry_whatever_its_properties_are_called(tmp_path):
    """Properties called lat/lon: with --lat lat --lon lon the obfuscated properties became the geometry
    and the true geometry was written out as properties; and properties named like coordinates (often a
    copy of the point) would be released untouched, in a CSV under the names readers take for the point.
    The geometry is always the point: --lat/--lon naming anything else is refused, and so are
    properties named like coordinates."""
    def write(name, props):
        feats = [{"type": "Feature", "geometry": {"type": "Point", "coordinates": [20.0 + k, 10.0 + k]},
                  "properties": p} for k, p in enumerate(props)]
        (tmp_path / name).write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
        return tmp_path / name

    src = write("p.geojson", [{"lat": 50, "lon": 5}, {"lat": 51, "lon": 6}])
    with pytest.raises(ValueError, match="properties 'lat', 'lon' look like coordinates"):
        obfuscate_file(src, tmp_path / "o.csv", epsilon=1.0, lat="lat", lon="lon", rng=1)
    ok = write("q.geojson", [{"name": "a"}, {"name": "b"}])
    with pytest.raises(ValueError, match="--lat 'name': the points of a GeoJSON file are its features' geometry"):
        obfuscate_file(ok, tmp_path / "o.geojson", epsilon=1.0, lat="name", rng=1)
    assert not (tmp_path / "o.geojson").exists() and not (tmp_path / "o.csv").exists()
    rep = obfuscate_file(ok, tmp_path / "o.geojson", epsilon=1e4, rng=1)  # 0.2 m of noise
    assert (rep.lat_column, rep.lon_column) == ("latitude", "longitude")
    out = json.loads((tmp_path / "o.geojson").read_text())["features"]
    assert [o["properties"] for o in out] == [{"name": "a"}, {"name": "b"}]
    assert np.allclose([o["geometry"]["coordinates"] for o in out], [[20, 10], [21, 11]], atol=1e-4)


# obfuscate: a GeoParquet geometry column and the bounding box of the true points were released byte for byte
def test_a_geoparquet_s_geometry_and_bounding_box_are_never_released(tmp_path):
    """A GeoParquet file with a WKB geometry column beside lat/lon: the geometry (the true points) was copied
    byte for byte into the release, and its "geo" metadata (the bounding box of the true points) too. A
    declared geometry column, or any column named like a coordinate or a geometry besides the two obfuscated
    ones, is now refused before anything is written; the input's schema metadata never reaches the output
    (local and Dask engines)."""
    import struct

    import pyarrow.parquet as pq

    lat, lon = [48.85, 51.5, 40.4], [2.35, -0.12, -3.7]
    geo = {"version": "1.0.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Point"],
                                    "bbox": [min(lon), min(lat), max(lon), max(lat)]}}}
    meta = {b"geo": json.dumps(geo).encode()}
    wkb = [struct.pack("<BIdd", 1, 1, x, y) for x, y in zip(lon, lat)]
    pq.write_table(pa.table({"id": [1, 2, 3], "lat": lat, "lon": lon, "shape": wkb}).replace_schema_metadata(
        {b"geo": json.dumps({**geo, "primary_column": "shape", "columns": {"shape": geo["columns"]["geometry"]}}).encode()}),
        tmp_path / "with_geometry.parquet")
    with pytest.raises(ValueError, match="'shape' are GeoParquet geometries holding the true locations"):
        obfuscate_file(tmp_path / "with_geometry.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert not (tmp_path / "o.parquet").exists()
    for extra in ("latitude", "geom", "WKT"):
        pq.write_table(pa.table({"lat": lat, "lon": lon, extra: lat}), tmp_path / "x.parquet")
        with pytest.raises(ValueError, match=f"'{extra}' look like locations"):
            obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, lat="lat", lon="lon", rng=1)
    pq.write_table(pa.table({"id": [1, 2, 3], "lat": lat, "lon": lon}).replace_schema_metadata(meta), tmp_path / "bbox.parquet")
    obfuscate_file(tmp_path / "bbox.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert not (pq.read_schema(tmp_path / "o.parquet").metadata or {}).get(b"geo")
    assert pq.read_table(tmp_path / "o.parquet").column_names == ["id", "lat", "lon"]
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    from dprivacy.data.dask_engine import obfuscate_dask

    obfuscate_dask(tmp_path / "bbox.parquet", tmp_path / "d.parquet", workers=1, epsilon=1.0, rng=1, key="id")
    parts = sorted((tmp_path / "d.parquet").glob("*.parquet"))
    assert parts and all(not (pq.read_schema(p).metadata or {}).get(b"geo") for p in parts)


# obfuscate: the report and the sidecar quoted a rejected row's true coordinates
def test_the_sidecar_never_quotes_a_rejected_row_s_true_location(tmp_path):
    """With --skip-invalid the report (printed, and the sidecar beside the release) quoted the first rejected
    row's coordinates: "row 2: latitude 151.2093 outside [-90, 90]" (a true location given in lon,lat order).
    It now names the row and the problem only, and says that a row's presence depends on its location."""
    src = tmp_path / "sw.csv"
    src.write_text("lat,lon,name\n48.85,2.35,a\n151.2093,-33.8688,swapped\n,2.3,c\n")
    rep = obfuscate_file(src, tmp_path / "o.csv", epsilon=1.0, skip_invalid=True, rng=1)
    assert rep.rows_rejected == 2 and rep.first_rejected == "row 2: latitude outside [-90, 90]"
    side = (tmp_path / "o.csv.dprivacy.json").read_text()
    assert "151.2" not in side and "33.86" not in side and "2.3," not in side
    assert any("presence tells that its true location was valid" in n for n in rep.notes)
    with pytest.raises(ValueError, match="out-of-range coordinate") as e:  # the owner's detail names it, the message not
        obfuscate_file(src, tmp_path / "p.csv", epsilon=1.0, rng=1)
    assert "151.2" not in str(e.value) and re.search(r"row 2: latitude 151.2093 outside \[-90, 90\]", e.value.detail)


# obfuscate: pickup_latitude, homeLat, struct and list fields and WKB columns were copied into the release untouched
@pytest.mark.parametrize("extra", ["pickup_latitude", "homeLat", "Latitude_2", "GPSLongitude", "wkb_geometry", "home",
                                   "loc", "track"])
def test_other_copies_of_the_location_are_refused(tmp_path, extra):
    """Copied untouched into the release: columns pickup_latitude, Latitude_2 (only exact names were refused), a
    struct column home{lat, lon}, and a WKB binary column without GeoParquet metadata."""
    import struct

    import pyarrow.parquet as pq

    value = {"home": [{"lat": 48.85, "lon": 2.35}], "loc": [struct.pack("<BIdd", 1, 1, 2.35, 48.85)],
             "track": [[{"lat": 48.85, "lon": 2.35}]]}.get(extra, [48.85])  # a list<struct<lat, lon>> (review)
    pq.write_table(pa.table({"lat": [48.85], "lon": [2.35], "name": ["a"], extra: value}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match=f"'{extra}(.lat|\\[\\].lat)?'.* look like locations"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, lat="lat", lon="lon", rng=1)
    assert not (tmp_path / "o.parquet").exists()


# obfuscate: latlng, homelat, geohash, x_coord... (the location inside a word) were released with the true points
@pytest.mark.parametrize("extra", ["latlng", "latlon", "lonlat", "homelat", "pickuplatitude", "dropoff_latlong", "Latitud",
                                   "longitud", "x_coord", "geohash"])
def test_names_with_the_location_inside_a_word_are_refused(tmp_path, extra):
    """Found by a review: only whole words were matched, and these names were released with the true points."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"lat": [48.85], "lon": [2.35], extra: ["somewhere"]}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match=f"'{extra}'.* look like locations"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, lat="lat", lon="lon", rng=1)


def _dms(x: float, hemi: str) -> str:
    d = abs(x)
    m = (d % 1) * 60
    return f"{int(d)}°{int(m)}'{(m % 1) * 60:.1f}\"{hemi[0] if x >= 0 else hemi[1]}"


# obfuscate: a copy of the points under another name (x/y, Breite, a text, radians, E7, semicircles, metres, DMS)
@pytest.mark.parametrize("name, make", [
    ("x", lambda lat, lon: lon), ("Breite", lambda lat, lon: lat + 0.004),
    ("location", lambda lat, lon: [f"{a:.5f},{o:.5f}" for a, o in zip(lat, lon)]),
    ("shape", lambda lat, lon: [f"POINT ({o:.6f} {a:.6f})" for a, o in zip(lat, lon)]),
    ("pos", lambda lat, lon: [{"y": a, "x": o} for a, o in zip(lat, lon)]),
    ("path", lambda lat, lon: [[o, a] for a, o in zip(lat, lon)]),
    # other units (a review): radians, E7 integers (Google location history), Garmin semicircles, Web Mercator metres
    ("phi", lambda lat, lon: np.radians(lat)), ("e_e7", lambda lat, lon: np.round(lon * 1e7).astype(np.int64)),
    ("sc", lambda lat, lon: np.round(lat * 2.0**31 / 180).astype(np.int64)),
    ("mx", lambda lat, lon: [f"{6378137.0 * np.radians(o):.2f}" for o in lon]),
    ("my", lambda lat, lon: 6378137.0 * np.log(np.tan(np.pi / 4 + np.radians(lat) / 2))),
    # degrees, minutes and seconds (a review)
    ("dms", lambda lat, lon: [_dms(a, "NS") + " " + _dms(o, "EW") for a, o in zip(lat, lon)]),
    ("dms2", lambda lat, lon: [f"{int(abs(a))} {abs(a) % 1 * 60:.3f} {'N' if a >= 0 else 'S'}, "
                               f"{int(abs(o))} {abs(o) % 1 * 60:.3f} {'E' if o >= 0 else 'W'}" for a, o in zip(lat, lon)]),
])
def test_a_copy_of_the_points_under_any_name_is_refused_by_its_values(tmp_path, name, make):
    """Found by a review: x/y, Breite/Länge, 'location' = "42.55623,1.53319", a struct<y, x> and a list<double>
    released the true points under names no word list can foresee; the values give them away, and --keep
    cannot release them."""
    import pyarrow.parquet as pq

    lat, lon, cols = _copies_table()
    cols[name] = make(lat, lon)
    pq.write_table(pa.table(cols), tmp_path / "x.parquet")
    for keep in ((), (name,)):
        with pytest.raises(ValueError, match=f"'{name}' hold a copy of the points"):
            obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, keep=keep)
    assert not (tmp_path / "o.parquet").exists()


def _geocache(x: float, hemi: str) -> str:
    return f"{hemi[0] if x >= 0 else hemi[1]} {int(abs(x)):02d}° {abs(x) % 1 * 60:06.3f}"


# obfuscate: "40.4461° N, 79.9822° W" and "N 40° 26.767" copies were not read as the points, and were released
@pytest.mark.parametrize("form", ["{a:.4f}° {ns}, {o:.4f}° {ew}", "{ns} {a:.5f} {ew} {o:.5f}", "{a:.4f}{ns} {o:.4f}{ew}",
                                  "geocache"])
def test_decimal_degrees_with_hemisphere_letters_are_a_copy(tmp_path, form):
    """Found by a review: "40.4461° N, 79.9822° W" was read as the numbers 40.4461 and 79.9822, and west of Greenwich
    the second never matched the longitude, so the column was released with the true points."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    lat, lon = 35 + 10 * rng.random(60), -80 + 10 * rng.random(60)
    text = [_geocache(a, "NS") + " " + _geocache(o, "EW") if form == "geocache" else
            form.format(a=abs(a), o=abs(o), ns="N" if a >= 0 else "S", ew="E" if o >= 0 else "W") for a, o in zip(lat, lon)]
    pq.write_table(pa.table({"lat": lat, "lon": lon, "where": text}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="'where' hold a copy of the points"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, keep=("where",))
    assert not (tmp_path / "o.parquet").exists()


# obfuscate: a copy after the first 10,000 rows, in a later batch or behind a one-row first Dask part was released
def test_the_copy_check_reads_every_batch_and_every_dask_part(tmp_path, monkeypatch):
    """Found by a review: the check read the first 10,000 rows of the file only (a copy after them was released
    untouched) and, on Dask, the first part only (a first part of one row: nothing was checked at all)."""
    import pyarrow.parquet as pq

    lat, lon, cols = _copies_table(n=30_000)
    raw = np.array([f"{a:.5f} {o:.5f}" for a, o in zip(lat, lon)], dtype=object)
    raw[:12_000] = ""  # the copy starts after the rows the check used to read
    pq.write_table(pa.table({**cols, "raw": raw}), tmp_path / "late.parquet")
    with pytest.raises(ValueError, match="'raw' hold a copy of the points"):
        obfuscate_file(tmp_path / "late.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    # a copy only in a later batch (batches of 5,000 rows here): refused, and nothing written
    from dprivacy.data import io as dio

    read = dio.read_batches
    monkeypatch.setattr(dio, "read_batches", lambda path, **kw: read(path, **{**kw, "batch_rows": 5_000}))
    raw2 = np.array([""] * 30_000, dtype=object)
    raw2[20_000:] = raw[20_000:]
    pq.write_table(pa.table({**cols, "raw": raw2}), tmp_path / "later.parquet")
    with pytest.raises(ValueError, match="'raw' hold a copy of the points"):
        obfuscate_file(tmp_path / "later.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert not (tmp_path / "o.parquet").exists() and not list(tmp_path.glob("*.partial*"))
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    from dprivacy.data.dask_engine import obfuscate_dask

    t = pa.table({"lat": lat[:3000], "lon": lon[:3000], "x": lon[:3000], "y": lat[:3000]})
    w = pq.ParquetWriter(tmp_path / "rg1.parquet", t.schema)
    w.write_table(t.slice(0, 1))  # a first part of one row
    w.write_table(t.slice(1))
    w.close()
    with pytest.raises(ValueError, match="'x', 'y' hold a copy of the points"):
        obfuscate_dask(tmp_path / "rg1.parquet", tmp_path / "d.parquet", workers=1, epsilon=1.0)
    assert not (tmp_path / "d.parquet").exists()


# obfuscate: Address1-3 and Postcode (about 100 m) were released beside points moved by 2 km
@pytest.mark.parametrize("name", ["Address1", "postcode", "zip_code", "ZIP", "postal_code", "street", "pluscode",
                                  "easting"])
def test_an_address_or_a_spatial_index_is_refused_by_its_name(tmp_path, name):
    """Found by a review: sample_geojson.geojson released Address1-3 and Postcode ("SN15 1JW", about 100 m) beside
    points moved by 2 km. Such columns need --keep."""
    import pyarrow.parquet as pq

    lat, lon, cols = _copies_table()
    cols[name] = ["SN15 1JW"] * len(lat)
    pq.write_table(pa.table(cols), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match=f"'{name}' look like locations"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, keep=(name,))
    assert name in pq.read_schema(tmp_path / "o.parquet").names


# obfuscate: the input fields' own metadata (a bbox of the true points, a first latitude) reached the release
def test_the_input_fields_metadata_is_not_released(tmp_path):
    """Found by a review: Arrow field metadata of the input (here a bbox of the true points and a first latitude)
    reached the Parquet release and the GeoJSON schema member."""
    import pyarrow.parquet as pq

    schema = pa.schema([pa.field("name", pa.string(), metadata={"bbox": "[-72.35, -54.8, 72.3, 42.56]"}),
                        pa.field("lat", pa.float64(), metadata={"first": "42.55623"}), pa.field("lon", pa.float64()),
                        pa.field("tags", pa.struct([pa.field("k", pa.string(), metadata={"secret": "x"})]))])
    pq.write_table(pa.table({"name": ["a", "b"], "lat": [42.55623, 48.8], "lon": [1.53, 2.35],
                             "tags": [{"k": "x"}, {"k": "y"}]}, schema=schema), tmp_path / "x.parquet")
    for out in ("o.parquet", "o.geojson"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / out, epsilon=1.0, rng=1)
    released = pq.read_schema(tmp_path / "o.parquet")
    assert all(f.metadata is None for f in released) and released.field("tags").type.field(0).metadata is None
    text = (tmp_path / "o.geojson").read_text()
    assert "42.55623" not in text and "bbox" not in text and "secret" not in text


# obfuscate: a seeded release, whose noise anyone with the seed undoes, carried no mark in the file itself
def test_a_seeded_release_says_so_in_the_file_itself(tmp_path):
    """Found by a review: a seeded Parquet or GeoJSON release carried no mark; apart from its sidecar it looked like
    a release (and anyone with the seed can undo the noise)."""
    import pyarrow.parquet as pq

    (tmp_path / "p.csv").write_text("lat,lon\n48.8,2.3\n48.9,2.4\n")
    for out, rng in (("s.parquet", 3), ("s.geojson", 3), ("r.parquet", None), ("r.geojson", None)):
        obfuscate_file(tmp_path / "p.csv", tmp_path / out, epsilon=1.0, rng=rng)
    assert b"NOT for release" in pq.read_schema(tmp_path / "s.parquet").metadata[b"dprivacy:notice"]
    assert "NOT for release" in json.loads((tmp_path / "s.geojson").read_text())["dprivacy:notice"]
    assert pq.read_schema(tmp_path / "r.parquet").metadata is None
    assert "dprivacy:notice" not in json.loads((tmp_path / "r.geojson").read_text())


# obfuscate: the Parquet row groups' sizes followed the bytes of the true coordinates' text (published in the footer)
def test_parquet_row_groups_do_not_follow_the_input(tmp_path, monkeypatch):
    """Found by a review: row groups were the reader's batches, whose sizes follow the bytes of the true
    coordinates' text (and the rows rejected): 354459, 352141, 350908, ... rows."""
    import pyarrow.parquet as pq

    from dprivacy.data import io

    monkeypatch.setattr(io, "PARQUET_GROUP_ROWS", 1000)
    monkeypatch.setattr(io, "BATCH_ROWS", 777)
    rng = np.random.default_rng(0)
    digits = rng.integers(1, 12, size=5000)
    (tmp_path / "p.csv").write_text("lat,lon\n" + "".join(f"{48 + r:.{k}f},{2 + r:.{k}f}\n"
                                                          for r, k in zip(rng.random(5000), digits)))
    obfuscate_file(tmp_path / "p.csv", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    meta = pq.ParquetFile(tmp_path / "o.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [1000] * 5


# obfuscate: a GPS track's altitude column (which locates its points) was released untouched
def test_an_altitude_column_is_refused_unless_kept(tmp_path):
    """A GPS track's altitudes locate its points (with an elevation model); a GeoJSON position's altitude was refused
    while an 'alt' column of a CSV (obiszow_mtb_xcm.csv) was released untouched."""
    src = _data("obiszow_mtb_xcm.csv")
    with pytest.raises(ValueError, match="'alt' look like locations"):
        obfuscate_file(src, tmp_path / "o.csv", epsilon=5, unit="km", rng=1)
    assert obfuscate_file(src, tmp_path / "o.csv", epsilon=5, unit="km", rng=1, keep=["alt"]).rows_written > 0


# obfuscate: a column empty but in one block of rows, where it copies the points, was released (runs of rows sampled)
def test_a_copy_in_one_block_of_an_otherwise_empty_column_is_refused(tmp_path):
    """Found by a review of 861a44d: the check read 20 runs of 500 rows of each 262,144-row batch, and a column null
    everywhere but rows 600–12,999, where it is the latitude (files merged from several sources; one user's raw GPS
    field), was released untouched. Each column is read on its rows that hold a value."""
    import pyarrow.parquet as pq

    from dprivacy.data.io import BATCH_ROWS

    n = BATCH_ROWS
    rng = np.random.default_rng(5)
    lat, lon = 40 + 10 * rng.random(n), -5 + 20 * rng.random(n)
    block = (np.arange(n) >= 600) & (np.arange(n) < 13_000)
    reading = pa.array(np.where(block, lat, np.nan), mask=~block)
    text = pa.array([f"{a:.5f}, {o:.5f}" if b else None for a, o, b in zip(lat, lon, block)])
    for name, col in (("reading", reading), ("raw", text)):
        pq.write_table(pa.table({"lat": lat, "lon": lon, "id": np.arange(n), name: col}), tmp_path / "block.parquet")
        with pytest.raises(ValueError, match=f"'{name}' hold a copy of the points"):
            obfuscate_file(tmp_path / "block.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
        assert not (tmp_path / "o.parquet").exists()


# obfuscate: a decimal-comma copy of the latitude ("41,41185") passed the copy check
def test_the_copy_check_on_big_ids_lists_and_decimal_commas(tmp_path):
    """Found by a review of the copy check: a 64-bit id beyond 2^53 made obfuscation fail ('Integer value not in
    range'); an accelerometer list near longitude 0 was taken for a copy; a decimal-comma copy ("41,41185") passed."""
    import pyarrow.parquet as pq

    n = 40
    rng = np.random.default_rng(5)
    lat, lon = 51.4 + 0.2 * rng.random(n), -0.1 + 0.2 * rng.random(n)
    base = {"lat": lat, "lon": lon, "tweet_id": pa.array(2**62 + np.arange(n), pa.int64()),
            "accel": [list(rng.normal(0, 0.05, 8)) for _ in range(n)]}
    pq.write_table(pa.table(base), tmp_path / "ok.parquet")
    assert obfuscate_file(tmp_path / "ok.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1).rows_written == n
    pq.write_table(pa.table({**base, "breite": [f"{a:.5f}".replace(".", ",") for a in lat]}), tmp_path / "c.parquet")
    with pytest.raises(ValueError, match="'breite' hold a copy of the points"):
        obfuscate_file(tmp_path / "c.parquet", tmp_path / "o2.parquet", epsilon=1.0, rng=1)


# obfuscate: under --coords semicircles a copy of the positions in semicircles was released
def test_a_copy_in_semicircles_is_refused(tmp_path):
    """Found by a review: under --coords semicircles a copy of the position columns (in semicircles) was released."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    la = np.round((48 + rng.random(30)) / (180 / 2**31)).astype(np.int64)
    lo = np.round((2 + rng.random(30)) / (180 / 2**31)).astype(np.int64)
    pq.write_table(pa.table({"position_lat": la, "position_long": lo, "copy": la}), tmp_path / "s.parquet")
    with pytest.raises(ValueError, match="'copy' hold a copy of the points"):
        obfuscate_file(tmp_path / "s.parquet", tmp_path / "o.parquet", epsilon=1.0, coords="semicircles", rng=1)
    pq.write_table(pa.table({"position_lat": la, "position_long": lo, "speed": rng.random(30)}), tmp_path / "t.parquet")
    assert obfuscate_file(tmp_path / "t.parquet", tmp_path / "o.parquet", epsilon=1.0, coords="semicircles",
                          rng=1).rows_written == 30


# obfuscate: the kept row order of a file sorted by latitude gave each row's latitude away by its rank; and the note
# that said so was read from the true locations and written into the sidecar (whether the file is sorted, and ρ)
def test_a_file_sorted_by_location_is_named_to_the_owner_only(tmp_path):
    """The row order is released as it is, so a file sorted by latitude gives each row's latitude from its rank
    (1.2 km where the released points were 9.4 km off). The owner is told (``owner_notes``, printed with
    ``--owner``); the sidecar, which travels with the release, is the same for a sorted and an unsorted file."""
    import json

    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    lat, lon = rng.uniform(40, 50, 500), rng.uniform(0, 10, 500)
    pq.write_table(pa.table({"lat": np.sort(lat), "lon": lon}), tmp_path / "s.parquet")
    pq.write_table(pa.table({"lat": lat, "lon": lon}), tmp_path / "u.parquet")
    r = obfuscate_file(tmp_path / "s.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert any("ordered by latitude" in n for n in r.owner_notes)
    assert "ordered by" not in json.dumps(r.to_dict()) and "ordered by" not in (tmp_path / "o.parquet.dprivacy.json").read_text()
    u = obfuscate_file(tmp_path / "u.parquet", tmp_path / "o2.parquet", epsilon=1.0, rng=1)
    assert not u.owner_notes and u.notes == r.notes
    p = _cli("obfuscate", tmp_path / "s.parquet", "-o", tmp_path / "o3.parquet", "--epsilon", "1", "--owner", "--json",
             cwd=tmp_path)
    assert p.returncode == 0 and "ordered by latitude" in p.stdout
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    from dprivacy.data.dask_engine import obfuscate_dask

    r = obfuscate_dask(tmp_path / "s.parquet", tmp_path / "d.parquet", workers=1, epsilon=1.0)
    assert any("ordered by latitude" in n for n in r.owner_notes) and "ordered by" not in json.dumps(r.to_dict())


# obfuscate: a sorted file's row order gave its rows' latitudes away (--shuffle releases a uniform permutation)
def test_shuffle_releases_the_rows_in_a_random_order_each_with_its_own_noise(tmp_path):
    """--shuffle: the rows in a uniform random order from the random source (a sorted file's order gave its rows'
    latitudes away); each row keeps its own columns and its own noisy point; seeded runs repeat."""
    import pyarrow.parquet as pq
    from scipy.stats import spearmanr

    n = 3000
    lat = np.sort(np.random.default_rng(0).uniform(40, 50, n))
    pq.write_table(pa.table({"id": np.arange(n), "lat": lat, "lon": np.full(n, 5.0)}), tmp_path / "s.parquet")
    r = obfuscate_file(tmp_path / "s.parquet", tmp_path / "o.parquet", epsilon=10.0, unit="km", rng=3, shuffle=True)
    assert not any("ordered by" in x for x in r.notes + r.owner_notes) and any("random order" in x for x in r.notes)
    out = pq.read_table(tmp_path / "o.parquet").to_pandas()
    ids = out["id"].to_numpy()
    assert sorted(ids) == list(range(n)) and (ids != np.arange(n)).mean() > 0.99
    assert abs(spearmanr(np.arange(n), out["lat"]).statistic) < 0.1
    assert np.abs(out["lat"].to_numpy() - lat[ids]).max() < 0.1  # ε = 10/km: each row within a few km of its own point
    again = obfuscate_file(tmp_path / "s.parquet", tmp_path / "o2.parquet", epsilon=10.0, unit="km", rng=3, shuffle=True)
    assert again.rows_written == n and pq.read_table(tmp_path / "o2.parquet").equals(pq.read_table(tmp_path / "o.parquet"))
    # evaluated by row position, each released row met another row's true point (7,270 km for a predicted 2 km: a
    # review): a shuffled release is matched by --key only
    from dprivacy.data.locations import evaluate_files

    with pytest.raises(ValueError, match="random row order .* --key COL"):
        evaluate_files(tmp_path / "s.parquet", tmp_path / "o.parquet")
    res = evaluate_files(tmp_path / "s.parquet", tmp_path / "o.parquet", key="id")
    assert res["displacement_m"]["mean"] < 1000


# obfuscate: on Dask the parts kept the input's order (--shuffle was refused there), giving the rows away by rank
def test_shuffle_on_dask_releases_the_rows_in_a_random_order_over_all_parts(tmp_path, monkeypatch):
    """Found open in a stop note: --shuffle was refused with --engine dask, whose parts kept the input's order. The
    rows now go to parts by 128-bit keys from the random source and are sorted by them in each part: read in order,
    the parts are a random permutation over all parts (rows move between parts), each row with its own noisy point.
    Seeded with a key, the order is a function of the seed and the keys only: the same over any partitioning."""
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    import pyarrow.parquet as pq
    from scipy.stats import spearmanr

    from dprivacy.data import dask_engine
    from dprivacy.data.dask_engine import obfuscate_dask

    monkeypatch.setattr(dask_engine, "SHUFFLE_PART_ROWS", 1000)  # 4 parts of about 1,000 rows
    n = 4000
    lat = np.sort(np.random.default_rng(0).uniform(40, 50, n))
    t = pa.table({"id": np.arange(n), "lat": lat, "lon": np.full(n, 5.0)})
    pq.write_table(t, tmp_path / "s.parquet", row_group_size=1000)
    r = obfuscate_dask(tmp_path / "s.parquet", tmp_path / "d.parquet", workers=1, epsilon=10.0, unit="km", shuffle=True)
    assert not any("ordered by" in x for x in r.notes + r.owner_notes) and any("random order" in x for x in r.notes)
    parts = sorted((tmp_path / "d.parquet").glob("part-*.parquet"))
    assert len(parts) == 4 and not (tmp_path / "d.parquet" / "stage").exists()
    out = pa.concat_tables([pq.read_table(p) for p in parts]).to_pandas()
    ids = out["id"].to_numpy()
    assert sorted(ids) == list(range(n)) and r.rows_written == n
    assert abs(spearmanr(np.arange(n), ids).statistic) < 0.1
    first = pq.read_table(parts[0]).column("id").to_numpy()
    assert (first >= 1000).mean() > 0.5  # the first part holds rows of every input row group
    assert np.abs(out["lat"].to_numpy() - lat[ids]).max() < 0.1
    # research mode: the order depends on the seed and the keys only, not on the row groups (the parts are ranges of
    # the keys, so their concatenation is the same)
    a = obfuscate_dask(tmp_path / "s.parquet", tmp_path / "k1.parquet", workers=1, epsilon=10.0, unit="km", shuffle=True,
                       rng=5, key="id")
    pq.write_table(t, tmp_path / "s2.parquet", row_group_size=1500)  # 3 parts instead of 4
    obfuscate_dask(tmp_path / "s2.parquet", tmp_path / "k2.parquet", workers=1, epsilon=10.0, unit="km", shuffle=True,
                   rng=5, key="id")
    read = [pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / f).glob("part-*.parquet"))])
            for f in ("k1.parquet", "k2.parquet")]
    assert a.rows_written == n and read[0].equals(read[1])
    assert abs(spearmanr(np.arange(n), read[0].column("id").to_numpy()).statistic) < 0.1
    # and the local engine gives the same release (--key: the same output whatever the engine; a review found the
    # orders different)
    obfuscate_file(tmp_path / "s.parquet", tmp_path / "local.parquet", epsilon=10.0, unit="km", shuffle=True, rng=5,
                   key="id")
    assert pq.read_table(tmp_path / "local.parquet").equals(read[0].replace_schema_metadata(
        pq.read_table(tmp_path / "local.parquet").schema.metadata))


# obfuscate: the seeded release order keys equalled words of the records' own noise stream
def test_the_release_order_keys_share_no_word_with_the_noise_stream():
    """A review found the seeded order keys equal to a word of the records' own noise stream (the same Philox key and
    counter): they now have a key of their own."""
    from dprivacy.sampling.keyed import KeyedStream, record_order_keys

    keys = np.arange(1, 200, dtype=np.uint64) * np.uint64(7919)
    k0, k1 = record_order_keys(7, keys)
    stream = KeyedStream(7, keys)
    words = {int(w) for call in range(3) for k in range(3) for w in
             [stream.extension_word(i, call, k) for i in range(keys.size)]}
    assert len(words) == 9 * keys.size and not (words & {int(x) for x in np.concatenate([k0, k1])})


# obfuscate: x = lon was released when most rows lay within 0.01° of the meridian (no number compared near 0)
def test_small_numbers_near_the_prime_meridian_or_the_equator_are_not_a_copy(tmp_path):
    """Found by a review: near longitude 0 every small number is within 0.01° of it in E7, semicircle or Web Mercator
    units, so a 1-5 rating (or a row id) was refused as a copy of the points, --keep or not. A number alone is compared
    with a coordinate within the tolerance of 0 to 1e-6° only (an exact copy, in any unit, is still refused: a second
    review found x = lon released when most rows were that close); a text holding both coordinates is compared as
    before."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    n = 500
    lat, lon = 51.47 + 0.01 * rng.random(n), 0.003 * (2 * rng.random(n) - 1)
    for lat_, lon_ in ((lat, lon), (0.003 * (2 * rng.random(n) - 1), 32.58 + 0.01 * rng.random(n))):
        cols = {"lat": lat_, "lon": lon_, "rating": rng.integers(1, 6, n), "id": np.arange(1, n + 1)}
        pq.write_table(pa.table(cols), tmp_path / "g.parquet")
        r = obfuscate_file(tmp_path / "g.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, force=True)
        assert r.rows_written == n
        cols["where"] = [f"{a:.5f},{o:.5f}" for a, o in zip(lat_, lon_)]
        pq.write_table(pa.table(cols), tmp_path / "g.parquet")
        with pytest.raises(ValueError, match="'where' hold a copy of the points"):
            obfuscate_file(tmp_path / "g.parquet", tmp_path / "o2.parquet", epsilon=1.0, rng=1)
        del cols["where"]
        for copy in (lon_ if np.abs(lon_).max() < 0.01 else lat_, np.round(lon_ * 1e7).astype(np.int64)
                     if np.abs(lon_).max() < 0.01 else np.round(lat_ * 1e7).astype(np.int64)):
            pq.write_table(pa.table({**cols, "x": copy}), tmp_path / "g.parquet")
            with pytest.raises(ValueError, match="'x' hold a copy of the points"):
                obfuscate_file(tmp_path / "g.parquet", tmp_path / "o2.parquet", epsilon=1.0, rng=1)


# obfuscate: --prior-from the input made the remap and the mechanism depend on the points outside ε
def test_a_prior_from_the_input_itself_is_refused(pts):
    """A prior estimated from the points being released makes the remap (and the optimal mechanism)
    depend on them outside the ε guarantee: the input file itself (any path to it) is refused."""
    p = _cli("obfuscate", "pts.csv", "-o", "pf.csv", "--epsilon", "1", "--mechanism", "tight-constraints",
             "--cell", "2km", "--region", "2.2,48.7,2.5,48.95", "--prior-from", "./pts.csv", "--remap", cwd=pts)
    _one_line(p)
    assert "--prior-from ./pts.csv is the input file" in p.stderr and not (pts / "pf.csv").exists()


# obfuscate: the refusal of a --prior-from holding 90% of the input's points (compared as multisets) was a membership
# test outside ε: with the other rows known, a prior of them plus a guess was refused exactly when the guess was right
def test_whether_a_prior_is_accepted_does_not_depend_on_the_input(tmp_path):
    rng = np.random.default_rng(4)
    known = np.column_stack([48.8 + 0.1 * rng.random(8), 2.3 + 0.1 * rng.random(8)])
    guess, elsewhere = (48.85, 2.35), (48.81, 2.39)
    rows = lambda pts: "lat,lon\n" + "".join(f"{a:.6f},{o:.6f}\n" for a, o in pts)  # noqa: E731
    (tmp_path / "d1.csv").write_text(rows([*known, guess]))
    (tmp_path / "d2.csv").write_text(rows([*known, elsewhere]))
    (tmp_path / "prior.csv").write_text(rows([*known, guess, (48.89, 2.31)]))
    grid = ["--cell", "1km", "--region", "2.30,48.80,2.40,48.90", "--remap", "--mechanism", "planar-laplace-grid"]
    said = []
    for d in ("d1.csv", "d2.csv"):
        p = _cli("obfuscate", d, "-o", f"o_{d}", "--epsilon", "1", *grid, "--prior-from", "prior.csv", "--seed", "1",
                 cwd=tmp_path)
        said.append((p.returncode, "input's points" in p.stderr))
    assert said == [(0, False), (0, False)]


# obfuscate: --accuracy gave ε per metre, so a per-user --budget read per metre allowed 1000 times the reports
def test_accuracy_is_recorded_in_the_sidecar(pts):
    p = _cli("obfuscate", "pts.csv", "-o", "acc.csv", "--accuracy", "500m@95%", "--seed", "1", "--json", cwd=pts)
    assert p.returncode == 0, p.stderr
    side = json.loads((pts / "acc.csv.dprivacy.json").read_text())
    assert side["accuracy"] == "500m@95%" and side["unit"] == "km"  # ε per --unit (default km), as with --epsilon
    assert abs(side["epsilon_per_metre"] * 500 - 4.743864518390695) < 1e-9
    assert abs(side["epsilon"] - 2 * 4.743864518390695) < 1e-9  # per km
    # the budget is in the same unit: 2 per km is below one report at 9.49 per km (it was read per metre)
    p = _cli("obfuscate", "pts.csv", "-o", "acc2.csv", "--accuracy", "500m@95%", "--user", "user", "--budget", "2",
             cwd=pts)
    _one_line(p)
    assert not (pts / "acc2.csv").exists()


# obfuscate: a map column holding the points, or a fixed-size binary (WKB) column, was released untouched
def test_a_map_or_fixed_size_binary_location_column_is_refused(tmp_path):
    """b7ae459 (review): the name check descended into structs and lists only, and took binary and large binary but not
    fixed-size binary, so a map<string, struct<lat, lon>> and a fixed_size_binary(21) WKB point were released with the
    true points. Fails on b7ae459's parent."""
    import pyarrow.parquet as pq

    places = pa.map_(pa.string(), pa.struct([("lat", pa.float64()), ("lon", pa.float64())]))
    for name, value in (("places", pa.array([[("home", {"lat": 48.85, "lon": 2.35})]], type=places)),
                        ("blob", pa.array([struct.pack("<BIdd", 1, 1, 2.35, 48.85)], pa.binary(21)))):
        pq.write_table(pa.table({"lat": [48.85], "lon": [2.35], name: value}), tmp_path / "x.parquet")
        with pytest.raises(ValueError, match=f"'{name}(\\{{\\}}.lat)?'.* look like locations"):
            obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, lat="lat", lon="lon", rng=1)
        assert not (tmp_path / "o.parquet").exists()


# obfuscate: the parts of a seeded Dask release, whose noise anyone with the seed undoes, carried no mark in the file
def test_a_seeded_dask_release_says_so_in_every_part(tmp_path):
    """14d6805 marked the seeded Dask parts too, but only the local engine's mark was tested. Fails on its parent."""
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    import pyarrow.parquet as pq

    from dprivacy.data.dask_engine import obfuscate_dask

    t = pa.table({"id": [1, 2, 3], "lat": [48.8, 48.9, 49.0], "lon": [2.3, 2.4, 2.5]})
    pq.write_table(t, tmp_path / "p.parquet")
    obfuscate_dask(tmp_path / "p.parquet", tmp_path / "s.parquet", workers=1, epsilon=1.0, rng=3, key="id")
    obfuscate_dask(tmp_path / "p.parquet", tmp_path / "r.parquet", workers=1, epsilon=1.0)
    seeded = sorted((tmp_path / "s.parquet").glob("*.parquet"))
    assert seeded and all(b"NOT for release" in pq.read_schema(p).metadata[b"dprivacy:notice"] for p in seeded)
    released = sorted((tmp_path / "r.parquet").glob("*.parquet"))
    assert released and all(b"dprivacy:notice" not in (pq.read_schema(p).metadata or {}) for p in released)


# obfuscate: a map column whose values (or keys) are the points is released untouched, under any name (OPEN)
def test_a_copy_of_the_points_in_a_map_column_is_refused_by_its_values(tmp_path):
    """Found while writing tests/attacks: like the struct<y, x> and list<double> copies of 8d233ff, a map<string,
    double> {"a": lat, "b": lon} (or a map keyed by "lat,lon" texts) holds the true points under names no word list
    foresees; both are released untouched on the current code."""
    import pyarrow.parquet as pq

    lat, lon, cols = _copies_table()
    to_number = pa.map_(pa.string(), pa.float64())
    numbers = pa.array([[("a", float(a)), ("b", float(o))] for a, o in zip(lat, lon)], to_number)
    texts = pa.array([[(f"{a:.5f},{o:.5f}", 1.0)] for a, o in zip(lat, lon)], to_number)
    for name, value in (("tags", numbers), ("seen", texts)):
        pq.write_table(pa.table({**cols, name: value}), tmp_path / "x.parquet")
        with pytest.raises(ValueError, match=f"'{name}' hold a copy of the points"):
            obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
        assert not (tmp_path / "o.parquet").exists()
