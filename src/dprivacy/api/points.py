"""The points of in-memory data as the data layer reads them, and the result of a location release: shared by
:mod:`.locations` and :mod:`.dask`."""

from __future__ import annotations

from .frames import OptionError, label


def location_result(rep, sidecar: dict | None = None):
    from ..data.io import sidecar_report
    from .results import DataResult

    counts = {k: getattr(rep, k) for k in ("rows_read", "rows_written", "rows_rejected", "rows_suppressed")}
    return DataResult("obfuscate", rep.guarantee, dict(rep.random_source), counts,
                      sidecar if sidecar is not None else sidecar_report(rep.to_dict()), rep)


def points_table(data, kind: str, lat=None, lon=None):
    """(Arrow table for the data layer, lat column, lon column, geometry info or None). A GeoDataFrame's points
    become ``lat``/``lon`` columns in WGS84 degrees; its geometry column is left out (it is what is released)."""
    from .frames import index_columns, to_arrow

    if kind == "geopandas":
        return _geo_table(data, lat, lon)
    table = to_arrow(data, kind)
    from ..data.io import find_coordinate_columns

    lat_c, lon_c = find_coordinate_columns(table.schema, lat, lon)
    in_index = [c for c in (lat_c, lon_c) if kind == "pandas" and c in index_columns(data)]
    if in_index:
        raise OptionError(f"the coordinates {', '.join(map(repr, in_index))} are in {label(kind)}'s index, which the "
                         "release keeps as it is: move them to columns first (df.reset_index())")
    return table, lat_c, lon_c, None


def _geo_table(gdf, lat, lon):
    import pandas as pd

    name = label("geopandas")
    if lat is not None or lon is not None:
        raise OptionError(f"lat= and lon= name coordinate columns; the points of {name} are its geometry "
                         f"{gdf.geometry.name!r} (set another with gdf.set_geometry(...))")
    geom = gdf.geometry.name
    if gdf.crs is None:
        raise OptionError(f"{name} has no CRS: the noise is drawn in metres on WGS84, so the points' CRS must be known "
                         "(gdf.set_crs(...))")
    kinds = gdf.geometry.geom_type
    bad = kinds.notna() & (kinds != "Point")
    if bad.any():
        raise OptionError(f"{name}'s geometry {geom!r} holds {kinds[bad].iloc[0]} geometries: obfuscate releases points "
                         "(one per row); take a point of each first (e.g. .representative_point())")
    for c in ("lat", "lon"):
        if c in gdf.columns:
            raise OptionError(f"{name} has a column {c!r} beside its geometry {geom!r}: the points are read from the "
                             "geometry, and this column would be released untouched; drop it")
    pts = gdf.geometry if gdf.crs.equals("EPSG:4326") else gdf.geometry.to_crs("EPSG:4326")
    missing = pts.isna() | pts.is_empty
    x = pts.x.to_numpy(dtype=float, na_value=float("nan")) if not missing.any() else \
        pts.where(~missing, None).x.to_numpy(dtype=float, na_value=float("nan"))
    y = pts.y.to_numpy(dtype=float, na_value=float("nan")) if not missing.any() else \
        pts.where(~missing, None).y.to_numpy(dtype=float, na_value=float("nan"))
    frame = pd.DataFrame(gdf.drop(columns=[geom]))
    for c in frame.columns:
        if str(frame[c].dtype) == "geometry":  # another geometry: as WKB, which the data layer refuses as a location
            frame[c] = gdf[c].to_wkb()
    frame["lat"], frame["lon"] = y, x
    table, _, _, _ = points_table(frame, "pandas", "lat", "lon")
    return table, "lat", "lon", {"column": geom, "crs": gdf.crs}


def like_input(values, data, kind: str, column: str):
    """``values`` in the dtype of ``data[column]`` (semicircles come back as integers of the input's type)."""
    import numpy as np

    if kind == "arrow":
        return np.asarray(values).astype(data.schema.field(column).type.to_pandas_dtype())
    if kind == "polars":
        return np.asarray(values).astype(data[column].to_numpy().dtype)
    return np.asarray(values).astype(data[column].dtype)
