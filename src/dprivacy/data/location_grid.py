r"""A public region of the Earth cut into square cells of a fixed size in metres.

ElSalamouny et al. 2014 §7.2 evaluates mechanisms on a grid of locations. To put real coordinates (degrees, WGS84) on
such a grid without distorting distances we project them with the **Lambert azimuthal equal-area**
projection centred on the region (pyproj, ``+proj=laea``): equal-area, so every cell covers the same
ground area, and at the scale of a city or a country its scale factors stay within a fraction of a
percent of 1 (:meth:`LocationGrid.scale_range` reports them over the region). Cells are squares of side
``cell_m`` projected metres; cell (col, row) has index ``row·width + col`` as in
:class:`dprivacy.spaces.GridSpace`, whose Euclidean metric (step = ``cell_m``) is then the distance in
projected metres between cell centres.

The region is given by the user, not taken from the data: the data's own bounding box would depend on
its extreme points, and publishing it (or a grid cut to fit it) would leak them. For the same reason a
point outside the region is not an error or a dropped row (which rows are missing would say who lies
outside): :meth:`LocationGrid.locate` maps it to the cell nearest it, the standard treatment of a value
outside a declared range (clamping).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

#: Refuse grids with more cells than this (the structured solvers handle 10⁶ in seconds; beyond a few
#: million the per-cell arrays alone take hundreds of MB).
MAX_CELLS = 4_000_000


def parse_cell(spec) -> float:
    """'500m', '1.5km' or a bare number of metres → metres (> 0)."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        v = float(spec)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*(m|km)?\s*", str(spec or ""), re.I)
        if not m:
            raise ValueError(f"bad --cell {spec!r}: expected a length such as 500m or 2km")
        v = float(m.group(1)) * (1000.0 if (m.group(2) or "m").lower() == "km" else 1.0)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"--cell must be a positive length in metres, got {spec!r}")
    return v


def parse_region(spec) -> tuple[float, float, float, float]:
    """'LON_MIN,LAT_MIN,LON_MAX,LAT_MAX' (degrees) → the four numbers, checked."""
    parts = spec if isinstance(spec, (tuple, list)) else str(spec or "").split(",")
    try:
        vals = tuple(float(p) for p in parts)
    except ValueError:
        vals = ()
    if len(vals) != 4 or not all(math.isfinite(v) for v in vals):
        raise ValueError(f"bad --region {spec!r}: expected LON_MIN,LAT_MIN,LON_MAX,LAT_MAX in degrees, e.g. 2.22,48.81,2.47,48.91")
    lo0, la0, lo1, la1 = vals
    for v, what, lim in ((lo0, "LON_MIN", 180), (lo1, "LON_MAX", 180), (la0, "LAT_MIN", 90), (la1, "LAT_MAX", 90)):
        if abs(v) > lim:
            raise ValueError(f"--region {what} = {v:g} is outside [-{lim}, {lim}] degrees")
    if not lo0 < lo1:
        raise ValueError(f"--region LON_MIN = {lo0:g} must be below LON_MAX = {lo1:g} (regions across the antimeridian "
                         "are not supported: split the data at ±180°)")
    if not la0 < la1:
        raise ValueError(f"--region LAT_MIN = {la0:g} must be below LAT_MAX = {la1:g}")
    if la1 - la0 > 60 or lo1 - lo0 > 90:
        raise ValueError(f"--region {spec!r} spans {lo1 - lo0:g}° × {la1 - la0:g}°: an equal-area grid of square cells "
                         "distorts distances too much beyond about 90° × 60°; use smaller regions")
    return vals


@dataclass(frozen=True)
class LocationGrid:
    """A region (degrees) cut into ``width × height`` square cells of ``cell_m`` metres in the Lambert
    azimuthal equal-area projection centred on it.

    Attributes
    ----------
    region : (lon_min, lat_min, lon_max, lat_max)
    cell_m : float
    crs : str
        The projection (PROJ string).
    x0, y0 : float
        Projected coordinates of the lower-left corner of cell 0.
    width, height : int
    """

    region: tuple
    cell_m: float
    crs: str
    x0: float
    y0: float
    width: int
    height: int

    @classmethod
    def build(cls, region, cell_m, *, max_cells: int = MAX_CELLS) -> "LocationGrid":
        from pyproj import Transformer

        lo0, la0, lo1, la1 = parse_region(region)
        cell = parse_cell(cell_m)
        crs = (f"+proj=laea +lat_0={(la0 + la1) / 2:.10g} +lon_0={(lo0 + lo1) / 2:.10g} +ellps=WGS84 +units=m +no_defs")
        t = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
        # The projected image of the region's boundary (dense along each edge: parallels are curved).
        s = np.linspace(0.0, 1.0, 257)
        lon = np.concatenate([lo0 + (lo1 - lo0) * s, np.full_like(s, lo1), lo1 - (lo1 - lo0) * s, np.full_like(s, lo0)])
        lat = np.concatenate([np.full_like(s, la0), la0 + (la1 - la0) * s, np.full_like(s, la1), la1 - (la1 - la0) * s])
        x, y = t.transform(lon, lat)
        x0, x1, y0, y1 = float(np.min(x)), float(np.max(x)), float(np.min(y)), float(np.max(y))
        w = max(1, math.ceil((x1 - x0) / cell))
        h = max(1, math.ceil((y1 - y0) / cell))
        if w * h > max_cells:
            raise ValueError(f"the region at --cell {cell:g} m is a {w}×{h} grid ({w * h:,} cells), over the limit of "
                             f"{max_cells:,}: use larger cells or a smaller region")
        return cls((lo0, la0, lo1, la1), cell, crs, x0, y0, w, h)

    @property
    def n(self) -> int:
        return self.width * self.height

    def space(self):
        """The grid as a :class:`dprivacy.spaces.GridSpace` (Euclidean, step = ``cell_m``: distances in metres)."""
        from ..spaces import GridSpace

        return GridSpace(self.width, self.height, metric="euclidean", step=self.cell_m)

    def _transformer(self, inverse: bool = False):
        from pyproj import Transformer

        a, b = ("EPSG:4326", self.crs) if not inverse else (self.crs, "EPSG:4326")
        return Transformer.from_crs(a, b, always_xy=True)

    def inside(self, lat, lon) -> np.ndarray:
        """True where a point lies in the region (closed bounding box in degrees)."""
        lo0, la0, lo1, la1 = self.region
        lat, lon = np.asarray(lat), np.asarray(lon)
        return (lat >= la0) & (lat <= la1) & (lon >= lo0) & (lon <= lo1)

    def cell_of(self, lat, lon) -> np.ndarray:
        """The index of the cell of each point; a point outside the grid goes to the nearest cell (:meth:`locate`)."""
        return self.locate(lat, lon)[0]

    def locate(self, lat, lon) -> tuple[np.ndarray, np.ndarray]:
        """(cell index, clamped) of each point (valid degrees). A point whose projection lies outside the grid's
        rectangle is mapped to the cell nearest it in the projection: its projected coordinates are clamped to the
        rectangle (``clamped`` is True for it). Clamping onto a rectangle never increases a distance, so two points'
        cells are at most their projected distance plus a cell diagonal apart, whether they lie inside or not. The one
        point the projection cannot place, the antipode of its centre (infinite coordinates), goes to the last cell."""
        x, y = self._transformer().transform(np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64))
        u = (np.asarray(x, dtype=np.float64) - self.x0) / self.cell_m
        v = (np.asarray(y, dtype=np.float64) - self.y0) / self.cell_m
        u, v = (np.nan_to_num(a, nan=np.inf) for a in (u, v))
        clamped = (u < 0) | (u >= self.width) | (v < 0) | (v >= self.height)
        col = np.clip(np.floor(u), 0, self.width - 1).astype(np.int64)
        row = np.clip(np.floor(v), 0, self.height - 1).astype(np.int64)
        return row * self.width + col, clamped

    def centre_of(self, idx) -> tuple[np.ndarray, np.ndarray]:
        """(lat, lon) of the centres of cells ``idx``."""
        row, col = np.divmod(np.asarray(idx, dtype=np.int64), self.width)
        x = self.x0 + (col + 0.5) * self.cell_m
        y = self.y0 + (row + 0.5) * self.cell_m
        lon, lat = self._transformer(inverse=True).transform(x, y)
        return np.asarray(lat, dtype=np.float64), np.asarray(lon, dtype=np.float64)

    def scale_range(self) -> tuple[float, float]:
        """The smallest and largest scale factor of the projection in any direction (Tissot's semi-minor and
        semi-major axes b ≤ 1 ≤ a; LAEA is equal-area, a·b = 1) over the whole grid, sampled on a 65×65 mesh
        of its projected rectangle and on the region's boundary: a projected distance lies between these
        multiples of the ground distance, to first order. (The meridional and parallel scales h, k alone
        understated the distortion about twice off the projection's axes: at the corner (−10°, 35°) of the
        region −10,35,30,60, h and k stay within 0.7% of 1 where a = 1.0144.)"""
        from pyproj import Proj

        xs = self.x0 + np.linspace(0.0, self.width * self.cell_m, 65)
        ys = self.y0 + np.linspace(0.0, self.height * self.cell_m, 65)
        gx, gy = np.meshgrid(xs, ys)
        lon, lat = self._transformer(inverse=True).transform(gx.ravel(), gy.ravel())
        lo0, la0, lo1, la1 = self.region
        s = np.linspace(0.0, 1.0, 65)
        lon = np.concatenate([lon, lo0 + (lo1 - lo0) * s, np.full_like(s, lo1), lo0 + (lo1 - lo0) * s, np.full_like(s, lo0)])
        lat = np.concatenate([lat, np.full_like(s, la0), la0 + (la1 - la0) * s, np.full_like(s, la1), la0 + (la1 - la0) * s])
        f = Proj(self.crs).get_factors(lon, lat)
        a, b = np.asarray(f.tissot_semimajor), np.asarray(f.tissot_semiminor)
        ok = np.isfinite(a) & np.isfinite(b)
        return float(b[ok].min()), float(a[ok].max())

    def extent(self) -> dict:
        """What the grid covers exactly. The cells tile the smallest rectangle of the projection (LAEA)
        that contains the region's projected boundary, rounded up to whole cells; the region's
        parallels are curved in the projection, so some cells near its corners lie partly or wholly
        outside the lon/lat box, and a grid mechanism can release their centres (it releases any cell of
        the grid). Reported: the projected rectangle, the lon/lat range of the cell centres and how many
        centres lie outside the region."""
        lat, lon = self.centre_of(np.arange(self.n))
        outside = int((~self.inside(lat, lon)).sum())
        return {"projected_rectangle_m": [self.x0, self.y0, self.x0 + self.width * self.cell_m, self.y0 + self.height * self.cell_m],
                "cell_centres_lon": [float(lon.min()), float(lon.max())], "cell_centres_lat": [float(lat.min()), float(lat.max())],
                "cells_with_centre_outside_region": outside,
                "meaning": "the grid tiles the projected bounding rectangle of the region; releases can be any cell centre, "
                           f"including the {outside} outside the lon/lat box"}

    def to_dict(self) -> dict:
        lo, hi = self.scale_range()
        return {"region": list(self.region), "cell_m": self.cell_m, "width": self.width, "height": self.height,
                "cells": self.n, "projection": self.crs, "scale_factor_range": [lo, hi],
                **({"extent": self.extent()} if self.n <= 4_000_000 else {})}

    def counts(self, lat, lon, *, clamp: bool = False) -> np.ndarray:
        """Number of points in each cell: points outside the region are not counted, or with ``clamp`` counted in the
        cell nearest them (:meth:`locate`), as a grid release treats them."""
        lat, lon = np.asarray(lat), np.asarray(lon)
        if not clamp:
            ok = self.inside(lat, lon)
            lat, lon = lat[ok], lon[ok]
        return np.bincount(self.cell_of(lat, lon), minlength=self.n).astype(np.float64)
