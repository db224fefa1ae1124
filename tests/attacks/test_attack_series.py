"""Privacy attacks found on `dprivacy series`, each kept as a test so that no change reopens it (issue #30).

The comment above each test names the leak it closes. Inventory (leak, fix commit → test):

- --time naming the reading (or another number) copied it to the output without noise (3ecd8cb)
  → test_the_time_column_must_hold_times
- a meter log growing between the two passes was released at the ε/n of fewer readings (a64a0e9)
  → test_a_file_that_grows_between_the_two_passes_is_refused_and_nothing_written
- a seeded release, whose noise anyone with the seed undoes, carried no mark in the file (14d6805)
  → test_a_seeded_series_release_says_so_in_the_file_itself (written for issue #30)
"""

from __future__ import annotations

import numpy as np
import pyarrow.csv as pacsv
import pytest

from dprivacy.data.series import release_series
from test_series import _write


# series: --time naming the reading (or another number) copied it into the release without noise
def test_the_time_column_must_hold_times(tmp_path):
    """The time column is copied to the output without noise: naming the reading itself, or another
    number, as the time released it exactly (found with --time glucose on the glucose readings)."""
    src = _write(tmp_path / "in.csv", t=np.array(["2024-01-01 00:00:00", "2024-01-01 00:05:00"]),
                 v=np.array([258, 260]), w=np.array([22.5, 23.1]), s=np.array(["a", "b"]))
    with pytest.raises(ValueError, match="time column and the reading column are both 'v'"):
        release_series(src, tmp_path / "o.csv", column="v", time_column="v", epsilon=1.0)
    with pytest.raises(ValueError, match="time column 'w' .type double. is not a date/time"):
        release_series(src, tmp_path / "o.csv", column="v", time_column="w", epsilon=1.0)
    with pytest.raises(ValueError, match="time column 's' .type string. is not a date/time"):
        release_series(src, tmp_path / "o.csv", column="v", time_column="s", epsilon=1.0)
    assert not (tmp_path / "o.csv").exists() and not list(tmp_path.glob(".o.csv*"))
    rep = release_series(src, tmp_path / "o.csv", column="v", time_column="t", epsilon=1.0, rng=0)
    assert rep.readings == 2 and pacsv.read_csv(tmp_path / "o.csv").column_names == ["t", "v"]


# series: a meter log growing between the two passes was released at the ε/n of fewer readings
def test_a_file_that_grows_between_the_two_passes_is_refused_and_nothing_written(tmp_path, monkeypatch):
    """Found by a review: a meter log appended to while it was released gave 5,000,000 readings at the ε/n of
    the 4,000,000 counted in pass 1 (d∞ ε 1.25 stated as 1). Here rows are appended right after pass 1."""
    from dprivacy.data import io as dio

    src = tmp_path / "m.csv"
    src.write_text("t,kwh\n" + "".join(f"2020-01-01T{h:02d}:00:00,{h % 5}\n" for h in range(24)))
    reads = []
    real = dio.read_batches

    def reading(path, **kw):
        reads.append(path)
        if len(reads) == 3:  # the schema, pass 1, then pass 2: the log grows in between
            with open(src, "a") as fh:
                fh.write("2020-01-02T00:00:00,7\n")
        return real(path, **kw)

    monkeypatch.setattr(dio, "read_batches", reading)
    with pytest.raises(ValueError, match="changed while it was read .24 valid readings counted, 25 read"):
        release_series(src, tmp_path / "o.csv", column="kwh", time_column="t", epsilon=1.0, metric="dinf")
    assert not (tmp_path / "o.csv").exists() and not list(tmp_path.glob("o.csv*"))


# series: a seeded release, whose noise anyone with the seed undoes, carried no mark in the file itself
def test_a_seeded_series_release_says_so_in_the_file_itself(tmp_path):
    """14d6805 marked seeded series releases too (Parquet schema metadata dprivacy:notice), but only obfuscate's mark
    was tested. Fails on its parent."""
    import pyarrow.parquet as pq

    times = np.array(["2024-01-01 00:00:00", "2024-01-01 00:05:00"])
    src = _write(tmp_path / "in.csv", t=times, v=np.array([258, 260]))
    release_series(src, tmp_path / "s.parquet", column="v", time_column="t", epsilon=1.0, rng=3)
    release_series(src, tmp_path / "r.parquet", column="v", time_column="t", epsilon=1.0)
    assert b"NOT for release" in pq.read_schema(tmp_path / "s.parquet").metadata[b"dprivacy:notice"]
    assert pq.read_schema(tmp_path / "r.parquet").metadata is None


@pytest.mark.parametrize("where", ["early", "late"])
def test_where_one_fractional_reading_sits_does_not_decide_the_release(tmp_path, where):
    """The CSV reader guesses a column's type from its first block: with the readings read as typed, one 12.5 among
    whole numbers was released when it came early and refused when it came after the first 16 MiB, so a d1 neighbour
    (12 in its place) decided release vs refusal at no cost in ε. The readings are read as text and parsed per batch."""
    n = 1_500_000
    kwh = np.full(n, "7", dtype=object)
    kwh[5 if where == "early" else n - 5] = "12.5"
    path = tmp_path / "m.csv"
    with open(path, "w") as f:
        f.write("time,kwh\n")
        f.writelines(f"{i:014d},{v}\n" for i, v in enumerate(kwh))  # 27 MB: past the reader's first block
    rep = release_series(path, tmp_path / "out.csv", column="kwh", epsilon=1.0, unit=0.5, rng=1)
    assert rep.readings == n
