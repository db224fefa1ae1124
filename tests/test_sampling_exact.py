"""Exact sampling of finite channels (issue 10): integer weights, integer draws, the delivered ε."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dprivacy import measures, spaces
from dprivacy.channels import Channel
from dprivacy.mechanisms import exponential
from dprivacy.mechanisms.geometric import truncated_geometric
from dprivacy.mechanisms import randomized_response
from dprivacy.sampling import random_source
from dprivacy.sampling.exact import WEIGHT_BITS, ExactSampler, delivered_epsilon, quantise_rows


def test_default_random_source_is_the_secure_one(monkeypatch):
    from dprivacy.sampling import source

    src = random_source(None)
    aes = source._aes_instructions()
    assert src.release and "os.urandom" in src.description
    assert type(src.generator.bit_generator).__name__ == ("AESCounter" if aes else "ChaCha")
    assert ("AES-128" if aes else "ChaCha20") in src.description
    # without AES instructions (software AES: slower, and table lookups that leak through the cache): ChaCha20
    monkeypatch.setattr(source, "_AESNI", False)
    src = random_source(None)
    assert type(src.generator.bit_generator).__name__ == "ChaCha" and "ChaCha20" in src.description
    seeded = random_source(5)
    assert not seeded.release and "NOT for release" in seeded.to_dict()["warning"]
    assert type(seeded.generator.bit_generator).__name__ == "ChaCha"  # (the same stream on every machine)


def test_the_release_aes_is_fips_197s():
    # FIPS-197 appendix C.1: AES-128, key 000102…0f, plaintext 00112233…ff → 69c4e0d86a7b0430d8cdb78070b4c55a; the
    # generator's words are the little-endian halves of AES_key(counter), the counter a 128-bit little-endian integer
    from randomgen import AESCounter

    from dprivacy.sampling.source import _aes

    key = int.from_bytes(bytes(range(16)), "little")
    plain = int.from_bytes(bytes.fromhex("00112233445566778899aabbccddeeff"), "little")
    for aesni in (True, False):
        bitgen = AESCounter(key=key, counter=plain)
        if not aesni:
            bitgen.use_aesni = False
        words = bitgen.random_raw(2)
        assert b"".join(int(w).to_bytes(8, "little") for w in words).hex() == "69c4e0d86a7b0430d8cdb78070b4c55a"
    # and _aes is that cipher from counter 0 (AES_k(0) for the same key, from the software path)
    soft = AESCounter(key=key, counter=0)
    soft.use_aesni = False
    assert np.array_equal(_aes(key).bit_generator.random_raw(8), soft.random_raw(8))


def test_a_parts_generator_is_of_its_parents_kind():
    from dprivacy.sampling.source import _aes, _chacha, child_generator

    aes = child_generator(_aes(12345))
    assert type(aes.bit_generator).__name__ == "AESCounter"
    seeded = [child_generator(random_source(9).generator).integers(0, 1 << 64, size=4, dtype=np.uint64) for _ in range(2)]
    assert np.array_equal(*seeded)  # seeded: reproducible
    assert type(child_generator(_chacha(1)).bit_generator).__name__ == "ChaCha"
    a, b = child_generator(_aes(1)), child_generator(_aes(2))
    assert not np.array_equal(a.bit_generator.random_raw(4), b.bit_generator.random_raw(4))


def test_chacha_scalar_path_gives_the_simd_stream():
    # the sources use randomgen's scalar ChaCha20 (faster here); its words must be those of the SIMD path
    from randomgen import ChaCha

    from dprivacy.sampling.source import _chacha

    key = 0x0123456789ABCDEF_FEDCBA9876543210_0F1E2D3C4B5A6978_8796A5B4C3D2E1F0
    ours = _chacha(key)
    simd = ChaCha(key=key, counter=0, rounds=20)
    simd.use_simd = True
    ref = np.random.Generator(simd)
    for size in (1, 7, 65536, 3 * 65536 + 5):  # block boundaries crossed at odd offsets
        assert np.array_equal(ours.integers(0, 1 << 64, size=size, dtype=np.uint64),
                              ref.integers(0, 1 << 64, size=size, dtype=np.uint64))
    assert not ours.bit_generator.use_simd


class _Top(np.random.Generator):
    """A generator whose integer draws are the largest possible: the very top of [0, 2^62)."""

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return np.full(size, (high if high is not None else low) - 1, dtype=dtype)


def test_an_output_below_float_resolution_is_reachable():
    # 1 − 2^-60 rounds to 1.0 in float64: float inverse-CDF sampling (u < 1 against cumsum [1.0, ...])
    # can never return output 1, whose probability is 2^-60 > 0 — an infinite privacy loss.
    row = np.array([[1.0 - 2.0**-60, 2.0**-60]])
    cdf = np.cumsum(row[0])
    u = np.nextafter(1.0, 0.0)  # the largest float in [0, 1)
    assert np.searchsorted(cdf, u, side="right") == 0  # negative control: the float path cannot reach it
    w = quantise_rows(row)
    assert w[0, 1] > 0 and w.sum() == 1 << WEIGHT_BITS
    assert ExactSampler.from_matrix(row).sample(np.zeros(3, dtype=int), _Top(np.random.PCG64(0)))[0] == 1
    assert (Channel(row).sample(np.zeros(3, dtype=int), _Top(np.random.PCG64(0))) == 1).all()


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 40), st.floats(0.01, 8.0), st.sampled_from(["tg", "exp", "rr"]))
def test_quantised_channel_delivers_the_requested_epsilon(n, eps, kind):
    """Support kept exactly, rows sum to 2^62 exactly, and the ε of the *quantised* channel (measured on
    the integers) exceeds the requested one by at most 1e-9 (mixing with the uniform distribution where
    tails are below resolution keeps privacy by the mediant inequality)."""
    space = spaces.line(n) if kind == "tg" else spaces.ring(n) if kind == "exp" else spaces.clique(n)
    m = {"tg": truncated_geometric, "exp": exponential, "rr": randomized_response}[kind](space, epsilon=eps)
    s = m.exact_sampler
    assert (s.weights.sum(axis=1) == 1 << WEIGHT_BITS).all()
    support = (m.matrix > 0).any(axis=0)
    assert ((s.weights > 0) | ~(m.matrix > 0)).all()  # every possible output stays possible
    assert not (s.weights[:, ~support] > 0).any()  # an output impossible from every row stays impossible
    assert s.delivered_epsilon <= eps + 1e-9
    # and the delivered ε is what the float check of the realised channel says
    realised = s.weights / float(1 << WEIGHT_BITS)
    assert s.delivered_epsilon == pytest.approx(measures.check_privacy(realised, space, epsilon=eps).smallest_epsilon, rel=1e-9, abs=1e-12)


def test_delivered_epsilon_sees_a_broken_quantisation():
    # Rounding the tails of a geometric row to the nearest integer without mixing breaks privacy; the
    # delivered ε measured on the integers says so.
    m = truncated_geometric(spaces.line(200), epsilon=0.5)
    naive = np.maximum(np.floor(np.ldexp(m.matrix, WEIGHT_BITS)), 1).astype(np.int64)
    assert delivered_epsilon(naive, m.space) > 0.5 + 0.1  # (ln 2 here: weights 1 and 2 on adjacent rows)
    assert m.exact_sampler.delivered_epsilon <= 0.5 + 1e-9 and m.exact_sampler.gamma > 0


def _chi2_p(samples, probs):
    n = samples.size
    counts = np.bincount(samples, minlength=probs.size)
    exp = probs * n
    keep = exp >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    e = np.append(exp[keep], exp[~keep].sum())
    if e[-1] == 0:
        obs, e = obs[:-1], e[:-1]
    return stats.chisquare(obs, e * obs.sum() / e.sum()).pvalue


def test_samples_follow_the_channel_and_the_test_has_power():
    m = truncated_geometric(spaces.line(12), epsilon=0.8)
    wrong = truncated_geometric(spaces.line(12), epsilon=0.88)  # 10% off
    for y in (0, 5, 11):
        draws = m.sample(np.full(200_000, y), rng=11)
        assert _chi2_p(draws, m.matrix[y]) > 1e-6
        assert _chi2_p(draws, wrong.matrix[y]) < 1e-6  # power: a mis-scaled ε is rejected


def test_sample_takes_and_returns_labels():
    m = randomized_response(spaces.from_graph(__import__("networkx").cycle_graph(["a", "b", "c"])), epsilon=1.0)
    out = m.sample(["a", "c", "c"], rng=3)
    assert set(out) <= {"a", "b", "c"} and len(out) == 3
    with pytest.raises(ValueError, match="unknown secret label 'z'"):
        m.sample(["z"], rng=3)
