r"""Per-record randomness from a seed and a record key: the same output whatever the partitioning.

In reproducible research mode (``--seed S --key COL``) the j-th uniform of a record is a function of
(S, the record's key, j) only, so a file obfuscated in one pass, in batches of any size, or on a Dask
cluster over any partitioning gives the same output record for record. The function is the
counter-based generator **Philox4x32-10** (Salmon, Moraes, Dror, Shaw, *Parallel random numbers: as
easy as 1, 2, 3*, SC 2011) with

* key  = the first 64 bits of SHA-256("dprivacy-keyed-v1" ‖ S),
* counter = (low 32 bits of the record key, high 32 bits, j, 0),

vectorised over the records in numpy (checked against randomgen's Philox4x32 and the Random123
known-answer vector). A record key is the 64-bit value of an integer key column, or the first 8 bytes
of BLAKE2b of the UTF-8 text of any other key. Keys must be unique: two records with one key would get
the same noise, and the difference of their releases would be the difference of their true values.

This is research mode: the seed determines everything, and the output must not be released. Release
mode (no seed) draws from the cryptographic stream of :mod:`.source`.
"""

from __future__ import annotations

import hashlib

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def philox4x32(counter, key: tuple[int, int]) -> list[np.ndarray]:
    """Philox4x32-10 of the four uint32 counter words (arrays, broadcast) under the two key words:
    the four output words (uint64 arrays holding 32-bit values)."""
    c = [np.asarray(x, dtype=np.uint64) & _MASK for x in counter]
    c = np.broadcast_arrays(*c)
    c = [np.array(x) for x in c]
    k0, k1 = np.uint64(key[0]) & _MASK, np.uint64(key[1]) & _MASK
    for _ in range(10):
        p0 = _M0 * c[0]
        p1 = _M1 * c[2]
        c = [(p1 >> _S32) ^ c[1] ^ k0, p1 & _MASK, (p0 >> _S32) ^ c[3] ^ k1, p0 & _MASK]
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return c


def seed_key(seed: int, domain: bytes = b"dprivacy-keyed-v1") -> tuple[int, int]:
    """The Philox key of a seed (first 64 bits of SHA-256(domain ‖ seed)); the noise uses the domain
    "dprivacy-keyed-v1", other streams their own."""
    h = hashlib.sha256(domain + str(int(seed)).encode()).digest()
    return int.from_bytes(h[:4], "little"), int.from_bytes(h[4:8], "little")


def record_keys(values) -> np.ndarray:
    """64-bit record keys of a key column (pyarrow array or sequence); nulls are an error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else (values if isinstance(values, pa.Array) else pa.array(values))
    if arr.null_count:
        k = int(np.flatnonzero(pc.is_null(arr).to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"the key column is empty at row {k + 1} of its batch: every record needs a key")
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.int64()).to_numpy(zero_copy_only=False).view(np.uint64)
    return np.fromiter((int.from_bytes(hashlib.blake2b(str(v).encode(), digest_size=8).digest(), "little")
                        for v in arr.to_pylist()), dtype=np.uint64, count=len(arr))


def record_order_keys(seed: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two uint64 words per record, a function of (seed, record key) only, for a release order that does not depend
    on the partitioning or the engine (sort by them): Philox4x32-10 at counter (low 32 bits of the key, high 32 bits,
    0, 0) under a key of its own (domain "dprivacy-order-v1"), so no word of it is a word of the noise stream."""
    keys = np.asarray(keys, dtype=np.uint64)
    w = philox4x32((keys & _MASK, keys >> _S32, 0, 0), seed_key(seed, b"dprivacy-order-v1"))
    return (w[0] << _S32) | w[1], (w[2] << _S32) | w[3]


class KeyedStream:
    """A stand-in for a numpy Generator that gives each record its own stream: call j of
    :meth:`random` (or :meth:`integers`) returns draw j of every record, in record order. Samplers
    that draw one value per record per call (planar Laplace, the exact inverse-CDF sampler) work
    unchanged; a call for any other number of values is refused (such a sampler cannot be made
    partition-independent this way)."""

    def __init__(self, seed: int, keys: np.ndarray):
        self.key = seed_key(seed)
        self.keys = np.asarray(keys, dtype=np.uint64)
        self.n = self.keys.size
        self.calls = 0

    def _words(self, size) -> list[np.ndarray]:
        m = int(np.prod(size)) if np.ndim(size) else int(size)
        if m != self.n:
            raise RuntimeError(f"keyed randomness: a sampler asked for {m} values for {self.n} records; only samplers that "
                               "draw one value per record per call can be keyed")
        j = self.calls
        self.calls += 1
        return philox4x32((self.keys & _MASK, self.keys >> _S32, np.uint64(j), np.uint64(0)), self.key)

    def integers_at(self, idx: np.ndarray, bits: int) -> np.ndarray:
        """Draw j (this call) of the records ``idx`` only: uniform integers below 2^bits. Rejection
        samplers use it for the records still pending; the others' draw j is skipped, not shifted."""
        if not 1 <= bits <= 63:
            raise ValueError(f"bits must lie in 1..63, got {bits}")
        j = self.calls
        self.calls += 1
        k = self.keys[np.asarray(idx)]
        w = philox4x32((k & _MASK, k >> _S32, np.uint64(j), np.uint64(0)), self.key)
        u64 = (w[0] << _S32) | w[1]
        return (u64 >> np.uint64(64 - bits)).astype(np.int64)

    def words_at(self, idx: np.ndarray) -> np.ndarray:
        """Draw j (this call) of the records ``idx`` only, as full 64-bit words (uint64)."""
        j = self.calls
        self.calls += 1
        k = self.keys[np.asarray(idx)]
        w = philox4x32((k & _MASK, k >> _S32, np.uint64(j), np.uint64(0)), self.key)
        return (w[0] << _S32) | w[1]

    def extension_word(self, record: int, call: int, k: int) -> int:
        """Word k of the extension of record ``record``'s draw ``call`` (the exact samplers' rare
        fallback): counter (key, call, k + 1), a space the main draws (last word 0) never use, so the
        main streams stay aligned whatever needs a fallback."""
        key = self.keys[int(record)]
        w = philox4x32((key & _MASK, key >> _S32, np.uint64(call), np.uint64(k + 1)), self.key)
        return (int(w[0]) << 32) | int(w[1])

    def random(self, size=None) -> np.ndarray:
        """Uniform doubles in [0, 1) on the 2^-53 lattice, one per record."""
        w = self._words(self.n if size is None else size)
        u64 = (w[0] << _S32) | w[1]
        return (u64 >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def integers(self, low, high=None, size=None, dtype=np.int64) -> np.ndarray:
        """Uniform integers in [low, high) for a power-of-two range (the exact samplers' use)."""
        if high is None:
            low, high = 0, low
        span = int(high) - int(low)
        if span <= 0 or span & (span - 1) or span > 1 << 64:
            raise ValueError(f"keyed integers need a power-of-two range up to 2^64, got [{low}, {high})")
        w = self._words(self.n if size is None else size)
        u64 = (w[0] << _S32) | w[1]
        bits = span.bit_length() - 1
        v = u64 >> np.uint64(64 - bits) if bits else np.zeros_like(u64)
        return (v.astype(np.int64) + int(low)).astype(dtype)
