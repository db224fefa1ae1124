"""The coordinates of a table of points as numbers, and which rows hold a valid location: shared by the
obfuscation (:mod:`.obfuscator`, :mod:`.locations`), its evaluation (:mod:`.displacement`) and the grid releases'
prior estimated from public points (:mod:`.grid_release`)."""

from __future__ import annotations

import numpy as np


#: Garmin/FIT "semicircles": 2^31 units per 180°.
SEMICIRCLE_DEG = 180.0 / 2.0**31

COORDS = ("degrees", "semicircles")


def validate_coordinates(lat: np.ndarray, lon: np.ndarray, *, first_row: int = 0) -> np.ndarray:
    """A boolean mask of valid rows, or raise naming the first invalid one is the caller's choice:
    returns ``bad`` (True where a coordinate is missing, NaN or out of range)."""
    with np.errstate(invalid="ignore"):
        return ~(np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0))


#: A number as text (what a CSV's coordinate column holds when some value is not a number).
_NUMBER_TEXT = r"^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$"


def _as_numbers(col):
    """A coordinate column as float64: numbers (decimals included) as they are; text parsed where it is a
    number, NaN (null) elsewhere — so that one value such as 'abc' is a rejected row (named, or skipped
    with --skip-invalid) instead of refusing the whole column."""
    import pyarrow as pa

    if pa.types.is_float64(col.type):  # (the common case, without loading pyarrow.compute: 25 ms of every start)
        return col
    import pyarrow.compute as pc

    if pa.types.is_dictionary(col.type):  # dictionary-encoded text or numbers: read through their values
        col = col.cast(col.type.value_type)
    if getattr(pa.types, "is_string_view", lambda _: False)(col.type):
        col = col.cast(pa.string())
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        ok = pc.match_substring_regex(col, _NUMBER_TEXT)
        col = pc.if_else(ok, pc.utf8_trim_whitespace(col), pa.scalar(None, col.type))
    return pc.cast(col, pa.float64())


def _as_semicircles(col) -> np.ndarray:
    """A column of Garmin semicircles as float64 (still in semicircles): whole numbers as they are, NaN for anything
    else — a fraction (1.5, in a floating column or as text) is a rejected row like a non-number, wherever it sits.
    A CSV's column is read as text (whole numbers written 1073741824, 1073741824.0 or 1.073741824e9 alike): with the
    type the reader guessed from the file's first block, one fraction typed the column as floating and refused the
    run when it came early, and failed the reader when it came after that block."""
    x = _as_numbers(col).to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore"):
        return np.where(x == np.rint(x), x, np.nan)


def describe_bad(lat, lon, k: int, row: int, *, values: bool = True, whole: bool = False) -> str:
    """Why row ``row`` (index k) has no valid location. ``values=False``: the kind of problem only, without
    the row's coordinates (for the report and the sidecar beside the release: a rejected row's true
    location must not be published with it). ``whole``: the coordinates must be whole numbers (semicircles)."""
    a, b = lat[k], lon[k]
    if not (np.isfinite(a) and np.isfinite(b)):
        what = "missing, non-numeric or fractional coordinate (semicircles are whole numbers)" if whole else \
            "missing or non-numeric coordinate"
        return f"row {row}: {what}" + (f" (lat={a}, lon={b})" if values else "")
    if not values:
        return f"row {row}: " + ("latitude outside [-90, 90]" if abs(a) > 90 else "longitude outside [-180, 180]")
    if abs(a) > 90:
        hint = " — these look like projected coordinates, not degrees" if abs(a) > 1000 else ""
        return f"row {row}: latitude {a} outside [-90, 90]{hint}"
    hint = " — these look like projected coordinates, not degrees" if abs(b) > 1000 else ""
    return f"row {row}: longitude {b} outside [-180, 180]{hint}"
