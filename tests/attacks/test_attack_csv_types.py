"""Privacy attacks on how `dprivacy obfuscate` and `evaluate` read a CSV, each kept as a test (issue #30).

A data command is an oracle for whoever can run it: what it refuses, and which rows it keeps or drops, must not
depend on where one person's row sits in the file. The CSV reader guesses a column's type from the file's first
block (16 MiB): a column read with that guess released one odd value when it came early (the whole column typed as
text or floating) and failed the whole file when it came after the first block. The fixed columns are read as text
and parsed value by value. Inventory (leak → test):

- --coords semicircles: one fraction (1.5) among integer semicircles was refused as a column type when early and
  failed the reader when late, --skip-invalid or not → test_where_one_fractional_semicircle_sits_does_not_decide_the_run,
  test_a_semicircle_past_a_real_16_mib_first_block_is_a_rejected_row_like_an_early_one
- --key: one 12a or 3.5 among integer keys changed every record key (all hashed as text) when early and failed the
  file when late → test_where_one_odd_key_sits_changes_no_record_s_noise, test_007_repeats_7_wherever_it_sits
- --user: one non-number among integer user ids made 007 and 7 two users when early (one when all were numbers) and
  failed the file when late → test_where_one_odd_user_id_sits_does_not_change_who_is_suppressed
- a blank key or user id was a null (refused) in an integer column and a value in a text one
  → test_a_blank_key_or_user_is_refused_wherever_it_sits
- evaluate: one 'abc' coordinate or 12a key of the original was read when early and failed the file when late
  → test_evaluate_reads_an_odd_row_the_same_wherever_it_sits
- the other kept columns (CSV in, Parquet or GeoJSON out): one 'unknown' among integer ages was released when early
  and failed the file when late; every column of a CSV is now its text
  → test_where_one_odd_value_of_a_kept_column_sits_does_not_decide_the_release

The reader's block is lowered (``formats.CSV_BLOCK_BYTES``) so that small files have a second block; each test
checks that the guess would have typed the column otherwise (``_guessed``), so it fails where the guess decides.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from dprivacy._system import RefusedWithDetail
from dprivacy.data import formats
from dprivacy.data.locations import evaluate_files, obfuscate_file

BLOCK = 1 << 12
N = 3000  # rows: about 75 kB, some twenty blocks
SEMI_LAT, SEMI_LON = 582_000_000, 28_000_000  # 48.8°, 2.35° in semicircles


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(formats, "CSV_BLOCK_BYTES", BLOCK)


def _where(where: str) -> int:
    return 3 if where == "early" else N - 3


def _write(path, columns: dict) -> None:
    names = list(columns)
    rows = zip(*(columns[c] for c in names))
    path.write_text(",".join(names) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))


def _guessed(path, column):
    """The type the reader's guess from the first block gives ``column`` (what it was read as before the fix)."""
    reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=BLOCK))
    return reader.schema.field(column).type


def _points(n=N):
    i = np.arange(n)
    return 48.0 + (i % 997) / 1000, 2.0 + (i % 991) / 1000


def _message(exc, folder) -> str:
    return str(exc).replace(str(folder), "DIR")


# obfuscate --coords semicircles: a fraction among integers was refused by the column's type early, failed the reader late
@pytest.mark.parametrize("skip", [False, True])
def test_where_one_fractional_semicircle_sits_does_not_decide_the_run(tmp_path, small_blocks, skip):
    """A semicircle is a whole number: 1.5 is a bad coordinate, refused (the same refusal) or skipped and counted (the
    same count) wherever it sits. Before: early, the column was typed floating and the run refused ('not integer
    semicircles'), --skip-invalid or not; late, the reader failed on the whole file."""
    got = {}
    for where in ("early", "late"):
        d = tmp_path / where
        d.mkdir()
        lat = [str(SEMI_LAT + i) for i in range(N)]
        lat[_where(where)] = "582000000.5"
        _write(d / "ride.csv", {"id": range(N), "position_lat": lat, "position_long": [SEMI_LON] * N})
        if where == "late":
            assert _guessed(d / "ride.csv", "position_lat") == pa.int64()  # the guess: integers
        out = d / "o.parquet"
        if not skip:
            with pytest.raises(RefusedWithDetail) as e:
                obfuscate_file(d / "ride.csv", out, epsilon=1.0, coords="semicircles", rng=1)
            assert "fractional" in str(e.value) and "582000000.5" not in str(e.value)  # (the value: for the owner)
            assert f"row {_where(where) + 1}: missing, non-numeric or fractional" in e.value.detail
            assert "582000000.5" in e.value.detail
            assert not out.exists()
            got[where] = _message(e.value, d)
        else:
            rep = obfuscate_file(d / "ride.csv", out, epsilon=1.0, coords="semicircles", rng=1, skip_invalid=True)
            released = pq.read_table(out)
            assert pa.types.is_integer(released.schema.field("position_lat").type)  # written back as integers
            assert rep.first_rejected == f"row {_where(where) + 1}: missing, non-numeric or fractional coordinate (semicircles are whole numbers)"
            got[where] = (rep.rows_read, rep.rows_rejected, rep.rows_written, released.num_rows)
    assert got["early"] == got["late"]
    if skip:
        assert got["early"] == (N, 1, N - 1, N - 1)


def test_whole_semicircles_read_from_text_are_the_integers_they_were(tmp_path):
    """The text is parsed as a number that must be whole: 1073741824.0 and 1.073741824e9 are the semicircle they
    name; the release is in integers, as an integer column's is, and the same seeded release as the Parquet file of
    the same integers."""
    lat = [SEMI_LAT + 1000 * i for i in range(50)]
    text = [str(v) for v in lat]
    text[1], text[2] = f"{lat[1]}.0", f"{lat[2] / 1e8}e8"
    _write(tmp_path / "a.csv", {"lat": text, "lon": [SEMI_LON] * 50})
    pq.write_table(pa.table({"lat": pa.array(lat, pa.int64()), "lon": pa.array([SEMI_LON] * 50, pa.int64())}),
                   tmp_path / "a.parquet")
    for src in ("a.csv", "a.parquet"):
        obfuscate_file(tmp_path / src, tmp_path / f"{src}.out.parquet", epsilon=1.0, coords="semicircles", rng=5)
    a, b = (pq.read_table(tmp_path / f"{s}.out.parquet") for s in ("a.csv", "a.parquet"))
    assert a.schema.field("lat").type == pa.int64() and a.equals(b)
    obfuscate_file(tmp_path / "a.csv", tmp_path / "o.csv", epsilon=1.0, coords="semicircles", rng=5)
    out = pacsv.read_csv(tmp_path / "o.csv", convert_options=pacsv.ConvertOptions(column_types={"lat": pa.string()}))
    assert all(v.lstrip("-").isdigit() for v in out.column("lat").to_pylist())  # integers, not 5.82e8


def test_a_semicircle_past_a_real_16_mib_first_block_is_a_rejected_row_like_an_early_one(tmp_path):
    """The same at the reader's own block size (16 MiB), without lowering it: 700,000 rows, 27 bytes each."""
    n = 700_000
    counts = {}
    for where, k in (("early", 5), ("late", n - 5)):
        lat = np.char.add(np.arange(SEMI_LAT, SEMI_LAT + n).astype("U10"), "")
        lat[k] = "582000000.5"
        path = tmp_path / f"{where}.csv"
        with open(path, "w") as f:
            f.write("id,position_lat,position_long\n")
            f.writelines(f"{i:07d},{v},{SEMI_LON}\n" for i, v in enumerate(lat))
        assert path.stat().st_size > formats.CSV_BLOCK_BYTES
        rep = obfuscate_file(path, tmp_path / f"{where}.parquet", epsilon=1.0, coords="semicircles", rng=1,
                             skip_invalid=True)
        counts[where] = (rep.rows_rejected, rep.rows_written, rep.first_rejected.split(":", 1)[1])
    assert counts["early"] == counts["late"] == (1, n - 1, " missing, non-numeric or fractional coordinate "
                                                         "(semicircles are whole numbers)")


# obfuscate --key: one odd key among integers changed every record key when early, and failed the file when late
@pytest.mark.parametrize("odd", ["12a", "3.5"])
def test_where_one_odd_key_sits_changes_no_record_s_noise(tmp_path, small_blocks, odd):
    """A seeded keyed release gives each record the noise of (seed, key) only: a record's release must not depend on
    another row's key. Before: an odd key in the first block typed the column as text (every key hashed: every
    record's noise changed); after it, the reader failed on the file. A key written as a whole number is that integer
    (the release of the same data in Parquet, integer keys), any other text a key as written."""
    la, lo = _points()
    released = {}
    for where in ("early", "late"):
        d = tmp_path / where
        d.mkdir()
        ids = [str(i) for i in range(N)]
        ids[_where(where)] = odd
        _write(d / "p.csv", {"id": ids, "lat": la, "lon": lo})
        if where == "late":
            assert _guessed(d / "p.csv", "id") == pa.int64()
        rep = obfuscate_file(d / "p.csv", d / "o.csv", epsilon=1.0, rng=11, key="id")
        assert rep.rows_written == N
        out = pacsv.read_csv(d / "o.csv", convert_options=pacsv.ConvertOptions(column_types={"id": pa.string()}))
        released[where] = dict(zip(out.column("id").to_pylist(), zip(out.column("lat").to_pylist(), out.column("lon").to_pylist())))
    early, late = released["early"], released["late"]
    common = (set(early) & set(late)) - {odd}
    assert len(common) == N - 2  # every record but the two odd rows (the odd one holds another point in each file)
    assert all(early[k] == late[k] for k in common)
    # and an integer key's release is the Parquet release of the same integer key
    pq.write_table(pa.table({"id": pa.array(range(N), pa.int64()), "lat": la, "lon": lo}), tmp_path / "p.parquet")
    obfuscate_file(tmp_path / "p.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=11, key="id")
    par = pq.read_table(tmp_path / "o.parquet")
    by_int = dict(zip(map(str, par.column("id").to_pylist()), zip(par.column("lat").to_pylist(), par.column("lon").to_pylist())))
    assert all(early[k] == by_int[k] for k in common)


def test_007_repeats_7_wherever_it_sits(tmp_path, small_blocks):
    """A key written as a whole number is that number: 007 repeats 7 (same record key, the same noise), refused the
    same way early and late. Before: with a 12a in the first block they were two keys; without, one; after the first
    block the 12a failed the file."""
    la, lo = _points()
    got = {}
    for where in ("early", "late"):
        d = tmp_path / where
        d.mkdir()
        ids = [str(i) for i in range(N)]
        ids[_where(where)] = "12a"
        ids[N // 2] = "007"
        _write(d / "p.csv", {"id": ids, "lat": la, "lon": lo})
        with pytest.raises(ValueError, match=r"key 7 \(written '007'\) of column 'id' is repeated") as e:
            obfuscate_file(d / "p.csv", d / "o.csv", epsilon=1.0, rng=11, key="id")
        assert "007 and 7 are one key" in str(e.value) and not (d / "o.csv").exists()
        got[where] = _message(e.value, d)
    assert got["early"] == got["late"]


# obfuscate --user: one non-number among integer user ids changed the grouping of the users when early
def test_where_one_odd_user_id_sits_does_not_change_who_is_suppressed(tmp_path, small_blocks):
    """User ids are compared as written. Before: with a non-number ('x') in the first block the ids were text, so 007
    and 7 were two users (each with a full budget); with only numbers there, 007 was 7 (one user); after the first
    block the 'x' failed the file. Here user 7 has 3 reports written 7 and 2 written 007, at 2 reports a user."""
    la, lo = _points()
    got = {}
    for where in ("early", "late"):
        d = tmp_path / where
        d.mkdir()
        users = [str(1000 + i) for i in range(N)]  # every other row its own user
        for r in (100, 200, 300):
            users[r] = "7"
        for r in (1500, 1600):
            users[r] = "007"
        users[_where(where)] = "x"
        _write(d / "p.csv", {"user": users, "lat": la, "lon": lo})
        if where == "late":
            assert _guessed(d / "p.csv", "user") == pa.int64()
        rep = obfuscate_file(d / "p.csv", d / "o.csv", epsilon=1.0, rng=3, user="user", budget=2.0)
        out = pacsv.read_csv(d / "o.csv", convert_options=pacsv.ConvertOptions(column_types={"user": pa.string()}))
        got[where] = (rep.rows_suppressed, rep.rows_written, sorted(u for u in out.column("user").to_pylist() if u in ("7", "007")))
    assert got["early"] == got["late"]
    assert got["early"][0] == 1  # the third 7; both 007 released: two users, as written
    assert got["early"][2] == ["007", "007", "7", "7"]


@pytest.mark.parametrize("what", ["key", "user"])
def test_a_blank_key_or_user_is_refused_wherever_it_sits(tmp_path, small_blocks, what):
    """An empty key or user id was a null (refused) in a column typed as integers and a value ('') in one typed as
    text: a non-number early decided. Blank is missing, refused the same way wherever it sits."""
    la, lo = _points()
    got = {}
    for where in ("early", "late"):
        d = tmp_path / where
        d.mkdir()
        col = [str(i) for i in range(N)]
        col[_where(where)] = ""
        col[N // 3] = "x"  # (a non-number in the first block, or not, decided before)
        if where == "late":
            col[N // 3], col[N - 10] = str(N // 3), "x"
        _write(d / "p.csv", {"c": col, "lat": la, "lon": lo})
        kw = {"key": "c", "rng": 1} if what == "key" else {"user": "c", "budget": 1.0}
        with pytest.raises(ValueError, match="empty") as e:
            obfuscate_file(d / "p.csv", d / "o.csv", epsilon=1.0, **kw)
        assert not (d / "o.csv").exists()
        got[where] = type(e.value)
    assert got["early"] == got["late"]


# evaluate: an odd coordinate or key of the original was read when early and failed the file when late
def test_evaluate_reads_an_odd_row_the_same_wherever_it_sits(tmp_path, small_blocks):
    la, lo = _points()
    got = {}
    for where in ("early", "late"):
        d = tmp_path / where
        d.mkdir()
        k = _where(where)
        ids, lat = [str(i) for i in range(N)], [f"{v:.6f}" for v in la]
        ids[k], lat[k] = "12a", "abc"
        _write(d / "o.csv", {"id": ids, "lat": lat, "lon": lo})
        if where == "late":
            assert _guessed(d / "o.csv", "lat") == pa.float64() and _guessed(d / "o.csv", "id") == pa.int64()
        obfuscate_file(d / "o.csv", d / "r.parquet", epsilon=1.0, rng=1, key="id", skip_invalid=True)
        obfuscate_file(d / "o.csv", d / "r.csv", epsilon=1.0, rng=1, key="id", skip_invalid=True)
        by_key = evaluate_files(d / "o.csv", d / "r.parquet", key="id")
        by_key_csv = evaluate_files(d / "o.csv", d / "r.csv", key="id")
        itself = evaluate_files(d / "o.csv", d / "o.csv")
        assert by_key["displacement_m"] == by_key_csv["displacement_m"]
        got[where] = (by_key["rows"], by_key["rows_not_released"], itself["rows"], itself["rows_skipped"])
    assert got["early"] == got["late"] == (N - 1, 1, N - 1, 1)


def test_a_text_key_s_record_key_does_not_depend_on_the_other_keys_of_its_batch():
    """The reader's batches follow the file's blocks, so which keys share a batch depends on where rows sit: a key's
    record key must be the same alone and beside any other (a batch of digits only takes a faster path)."""
    from dprivacy.data.obfuscator import text_record_keys
    from dprivacy.sampling.keyed import record_keys

    keys = ["7", "007", " 7", "-0", "0", "-12", "0x10", "0X10", "+7", "12a", "3.5", "1e3", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "٣"]
    alone = [int(text_record_keys(pa.array([k]))[0]) for k in keys]
    assert alone == [int(v) for v in text_record_keys(pa.array(keys))]
    assert alone == [int(v) for v in text_record_keys(pa.array(keys).dictionary_encode())]
    as_int = {"7": 7, "007": 7, " 7": 7, "-0": 0, "0": 0, "-12": -12, "9223372036854775807": 2**63 - 1,
              "-9223372036854775808": -2**63}
    for k, v in zip(keys, alone):  # a whole number is its integer (as a Parquet integer key); other text is hashed
        want = as_int[k] % 2**64 if k in as_int else int(record_keys(pa.array([k]))[0])
        assert v == want, k


# the other kept columns, CSV in, Parquet out: typed by the first block's guess, one 'unknown' among ages was released
# (the column text) when early and refused the file when late
@pytest.mark.parametrize("where", ["early", "late"])
def test_where_one_odd_value_of_a_kept_column_sits_does_not_decide_the_release(tmp_path, small_blocks, where):
    lat, lon = _points()
    age = [str(20 + i % 50) for i in range(N)]
    age[_where(where)] = "unknown"
    src = tmp_path / "p.csv"
    _write(src, {"lat": lat, "lon": lon, "age": age})
    if where == "late":
        assert pa.types.is_integer(_guessed(src, "age"))
    rep = obfuscate_file(src, tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert rep.rows_written == N
    out = pq.read_table(tmp_path / "o.parquet")
    assert out.schema.field("age").type == pa.string() and out.column("age").to_pylist() == age
