"""ember.random: Philox4x32-10 known answers, the documented stream (checked bit for bit
against a host reimplementation, so every backend gives the same bits), distributions,
permutations, and kernels drawing from the same stream as the Generator."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.array import random as rnd

# Random123's known-answer file (D. E. Shaw Research, github.com/DEShawResearch/random123,
# tests/kat_vectors at commit 9545ff64, the three "philox4x32 10" lines):
# counter (4 words), key (2 words) -> output (4 words).
KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]  # fmt: skip


# --------------------------------------------------------------------- host reference
def philox_host(key, counters):
    """Philox4x32-10 of an (n, 4) uint64 array of counters, vectorized with NumPy (written
    from Salmon et al. 2011, independently of the kernel)."""
    c = [counters[:, j].astype(np.uint64) for j in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask = np.uint64(0xFFFFFFFF)
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(0x9E3779B9)) & mask, (k1 + np.uint64(0xBB67AE85)) & mask
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k1,
             p0 & mask]  # fmt: skip
    return np.stack(c, axis=1)


def words(key, start, blocks):
    b = np.arange(start, start + blocks, dtype=np.uint64)
    ctr = np.zeros((blocks, 4), np.uint64)
    ctr[:, 0] = b & np.uint64(0xFFFFFFFF)
    ctr[:, 1] = b >> np.uint64(32)
    return philox_host(key, ctr)


def uniform32_host(key, start, n):
    w = words(key, start, -(-n // 4)).reshape(-1)[:n]
    return (w >> np.uint64(8)).astype(np.float32) * np.float32(2.0**-24)


def uniform64_host(key, start, n):
    w = words(key, start, -(-n // 2)).reshape(-1, 2)[:n]
    a, b = (w[:, 0] >> np.uint64(5)).astype(np.float64), (w[:, 1] >> np.uint64(6)).astype(float)
    return (a * 67108864.0 + b) * 2.0**-53


def integers_host(key, start, n, low, high):
    r = high - low
    if r <= 1 << 32:
        w = words(key, start, -(-n // 2)).reshape(-1, 2)[:n]
        x = [(int(a) << 32) | int(b) for a, b in w]
        return [low + (v * r >> 64) for v in x]
    w = words(key, start, n)
    x = [(int(a) << 96) | (int(b) << 64) | (int(c) << 32) | int(d) for a, b, c, d in w]
    return [low + (v * r >> 128) for v in x]


# --------------------------------------------------------------------- known answers
@ember.kernel
def philox_words(out, ctr, key):
    w0, w1, w2, w3 = ember.random.philox((key[0], key[1]), (ctr[0], ctr[1], ctr[2], ctr[3]))
    out[0] = w0
    out[1] = w1
    out[2] = w2
    out[3] = w3


@pytest.mark.parametrize("ctr, key, expected", KAT)
def test_philox_known_answers(backend, ctr, key, expected):
    out = ember.zeros(4, ember.uint32)
    c = ember.asarray(np.array(ctr, np.uint32))
    k = ember.asarray(np.array(key, np.uint32))
    philox_words[1, 1](out, c, k)
    assert [int(v) for v in out.to_numpy()] == list(expected)


def test_host_reference_matches_the_known_answers():
    for ctr, key, expected in KAT:
        got = philox_host(key, np.array([ctr], np.uint64))[0]
        assert [int(v) for v in got] == list(expected)


# --------------------------------------------------------------------- the stream
def test_uniform_streams_are_the_documented_ones(backend):
    rng = ember.random.default_rng(0x1234_0000_ABCD)
    assert rng.key == (0xABCD, 0x1234)
    a = rng.random(1001, dtype=ember.float32)
    assert rng.counter == 251  # ceil(1001 / 4) blocks
    b = rng.random((7, 3))
    assert rng.counter == 251 + 11
    np.testing.assert_array_equal(a.to_numpy(), uniform32_host(rng.key, 0, 1001))
    np.testing.assert_array_equal(b.to_numpy().ravel(), uniform64_host(rng.key, 251, 21))
    assert b.dtype is ember.float64 and b.shape == (7, 3)


@pytest.mark.parametrize(
    "low, high, dtype",
    [(0, 10, "int64"), (-5, 3, "int8"), (0, 2**32, "uint32"), (-(2**63), 2**63, "int64"),
     (7, 3 * 2**62, "uint64"), (0, 2, "bool")],
)  # fmt: skip
def test_integers_are_the_documented_stream(backend, low, high, dtype):
    rng = ember.random.default_rng(99)
    got = rng.integers(low, high, 37, dtype=dtype).to_numpy()
    expected = np.array(integers_host(rng.key, 0, 37, low, high), dtype=object)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.astype(object), expected.astype(got.dtype).astype(object))
    assert got.min() >= low and got.max() < high


@pytest.mark.parametrize("dist", ["uniform", "std_normal"])
def test_the_stream_does_not_depend_on_the_launch_shape(backend, dist):
    kernel, per = rnd.fill_kernel(dist, 4)
    n = 999  # (not a multiple of 4: the last Philox block's values are stored one by one)
    outs = []
    for grid, block in [(1, 1), (3, 7), (64, 256)]:
        out = ember.empty(n, ember.float32)
        kernel[grid, block](out, n, 5, 6, 0, 0, np.float32(0), np.float32(1))
        outs.append(out.to_numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
    if dist == "uniform":
        np.testing.assert_array_equal(outs[0], uniform32_host((5, 6), 0, n))


@ember.kernel
def user_normals(out, k0, k1, base):
    b = ember.global_id()
    if b * 4 < out.shape[0]:
        z0, z1, z2, z3 = ember.random.normal4((k0, k1), (base + b, 0, 0, 0))
        out[4 * b] = z0
        out[4 * b + 1] = z1
        out[4 * b + 2] = z2
        out[4 * b + 3] = z3


def test_a_user_kernel_draws_the_generators_numbers(backend):
    rng = ember.random.default_rng(2024)
    rng.random(10)  # move the counter: 5 blocks
    base = rng.counter
    expected = rng.standard_normal(64, dtype=ember.float32).to_numpy()
    out = ember.zeros(64, ember.float32)
    user_normals[4, 4](out, rng.key[0], rng.key[1], base)
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_normals_follow_box_muller_on_the_uniforms(backend):
    rng = ember.random.default_rng(7)
    z = rng.standard_normal(4000, dtype=ember.float32).to_numpy()
    w = words(rng.key, 0, 1000).reshape(-1, 2)
    u1 = 1.0 - (w[:, 0] >> np.uint64(8)).astype(np.float64) * 2.0**-24
    u2 = (w[:, 1] >> np.uint64(8)).astype(np.float64) * 2.0**-24
    r = np.sqrt(-2.0 * np.log(u1))
    ref = np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], 1).ravel()
    # float32 math libraries differ by a few ulp; large |z| loses relative accuracy in log
    np.testing.assert_allclose(z, ref, rtol=2e-5, atol=2e-5)
    z64 = ember.random.default_rng(7).standard_normal(1000).to_numpy()
    assert abs(z64.mean()) < 0.1 and abs(z64.std() - 1) < 0.06


def test_distribution_moments(backend):
    rng = ember.random.default_rng(11)
    n = 200_000  # deterministic seed: the bounds are ~6 standard errors, never flaky
    u = rng.uniform(-2.0, 6.0, n, dtype=ember.float32).to_numpy()
    assert u.dtype == np.float32 and u.min() >= -2 and u.max() < 6
    assert abs(u.mean() - 2) < 0.03
    x = rng.normal(3.0, 2.0, n).to_numpy()
    assert abs(x.mean() - 3) < 0.03 and abs(x.std() - 2) < 0.02
    e = rng.exponential(0.5, n, dtype=ember.float32).to_numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01
    counts = np.bincount(rng.integers(0, 10, n).to_numpy(), minlength=10)
    assert counts.min() > n / 10 - 800 and counts.max() < n / 10 + 800
    assert rng.standard_normal().shape == ()


def test_array_parameters_broadcast_as_numpy(backend):
    rng = ember.random.default_rng(12)
    n = 100_000  # deterministic seed: the bounds are ~6 standard errors
    x = rng.normal([0.0, 10.0, -4.0], np.array([1.0, 0.0, 2.0]), size=(n, 3)).to_numpy()
    assert x.shape == (n, 3) and x.dtype == np.float64
    assert np.allclose(x.mean(0), [0, 10, -4], atol=0.03) and np.all(x[:, 1] == 10)
    assert np.allclose(x.std(0), [1, 0, 2], atol=0.03)
    u = rng.uniform(ember.asarray([0.0, 5.0]), 6.0, size=(n, 2), dtype=ember.float32)
    u = u.to_numpy()
    assert u.dtype == np.float32 and np.all(u.min(0) >= [0, 5]) and np.all(u.max(0) < 6)
    e = rng.exponential([[0.5], [2.0]], size=(2, n)).to_numpy()
    assert e.min() >= 0 and np.allclose(e.mean(1), [0.5, 2.0], rtol=0.03)
    # without size: the parameters' broadcast shape, as NumPy's
    assert rng.normal(np.zeros((2, 1)), np.ones(3)).shape == (2, 3)
    assert rng.uniform(0, [1, 2]).shape == (2,)
    with pytest.raises(ValueError, match="scale < 0"):
        rng.normal([0.0, 1.0], [1.0, -1.0])
    with pytest.raises(ValueError, match="scale < 0"):
        rng.exponential([1.0, -0.5])
    with pytest.raises(ValueError, match=r"shape \(2,\) does not broadcast to size \(3,\)"):
        rng.normal([0.0, 1.0], 1.0, size=3)
    assert np.isnan(rng.normal(0.0, [1.0, np.nan]).to_numpy()[1])  # NaN passes, as NumPy's


def test_location_scale_families_take_array_parameters(backend):
    # lognormal, laplace, logistic, gumbel, rayleigh: standard draws of the broadcast shape,
    # shifted and scaled; the moments match the closed forms (~6 standard errors)
    rng = ember.random.default_rng(21)
    n = 200_000
    loc, scale = np.array([0.0, 5.0]), np.array([1.0, 2.0])
    cases = {
        "laplace": (loc, scale * np.sqrt(2)),
        "logistic": (loc, scale * np.pi / np.sqrt(3)),
        "gumbel": (loc + 0.5772156649 * scale, scale * np.pi / np.sqrt(6)),
    }
    for name, (mean, std) in cases.items():
        x = getattr(rng, name)(loc, ember.asarray(scale), size=(n, 2)).to_numpy()
        assert x.shape == (n, 2)
        assert np.allclose(x.mean(0), mean, atol=0.04), name
        assert np.allclose(x.std(0), std, rtol=0.02), name
    x = rng.lognormal([0.0, 1.0], 0.25, size=(n, 2)).to_numpy()
    assert np.allclose(x.mean(0), np.exp(np.array([0.0, 1.0]) + 0.25**2 / 2), rtol=0.01)
    r = rng.rayleigh([1.0, 4.0], size=(n, 2)).to_numpy()
    assert np.allclose(r.mean(0), np.array([1.0, 4.0]) * np.sqrt(np.pi / 2), rtol=0.01)
    assert rng.gumbel(np.zeros((3, 1)), [1.0, 2.0]).shape == (3, 2)
    with pytest.raises(ValueError, match="sigma < 0"):
        rng.lognormal(0.0, [1.0, -1.0])
    with pytest.raises(ValueError, match="scale < 0"):
        rng.rayleigh([-1.0])


# --------------------------------------------------------------------- permutations
def test_permutation_shuffle_choice(backend):
    rng = ember.random.default_rng(5)
    for n in (1, 2, 3, 17, 1000):
        p = rng.permutation(n).to_numpy()
        assert sorted(p.tolist()) == list(range(n))
    assert rng.permutation(0).shape == (0,)
    assert not np.array_equal(rng.permutation(50).to_numpy(), rng.permutation(50).to_numpy())
    host = np.arange(24).reshape(4, 6)
    a = ember.asarray(host)
    shuffled = rng.permutation(a, axis=1).to_numpy()
    assert sorted(map(tuple, shuffled.T)) == sorted(map(tuple, host.T))
    rng.shuffle(a)
    assert sorted(map(tuple, a.to_numpy())) == sorted(map(tuple, host))
    c = rng.choice(5, (3, 4)).to_numpy()
    assert c.shape == (3, 4) and c.min() >= 0 and c.max() < 5
    d = rng.choice(10, 10, replace=False).to_numpy()
    assert sorted(d.tolist()) == list(range(10))
    w = rng.choice(3, 2000, p=[0.2, 0.0, 0.8]).to_numpy()
    assert 1 not in w and 300 < (w == 0).sum() < 500
    # weighted without replacement (Efraimidis-Spirakis): distinct, p = 0 never drawn, the
    # first pick distributed as p
    p = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    picks = np.stack([rng.choice(5, 3, replace=False, p=p).to_numpy() for _ in range(1500)])
    assert all(len(set(row)) == 3 for row in picks) and not (picks == 4).any()
    assert np.allclose(np.bincount(picks[:, 0], minlength=5) / len(picks), p, atol=0.05)
    with pytest.raises(ValueError, match="fewer non-zero entries in p than size"):
        rng.choice(5, 5, replace=False, p=p)
    rows = rng.choice(a, 2, replace=False).to_numpy()
    assert rows.shape == (2, 6) and all(tuple(r) in set(map(tuple, host)) for r in rows)


def test_seeds_and_errors():
    assert ember.random.default_rng(5).key == (5, 0)
    assert ember.random.default_rng(2**64 - 1).key == (2**32 - 1, 2**32 - 1)
    assert ember.random.default_rng([1, 2]).key != ember.random.default_rng([1, 3]).key
    assert ember.random.default_rng(2**70).key == ember.random.default_rng(2**70).key
    with pytest.raises(ValueError, match="non-negative"):
        ember.random.default_rng(-1)
    rng = ember.random.default_rng(0)
    assert ember.random.default_rng(rng) is rng
    with pytest.raises(TypeError, match="float32 or float64"):
        rng.random(3, dtype=ember.int32)
    with pytest.raises(ValueError, match="low >= high"):
        rng.integers(5, 5)
    with pytest.raises(ValueError, match="out of bounds for int8"):
        rng.integers(0, 300, dtype=ember.int8)
    with pytest.raises(TypeError, match="integer or bool"):
        rng.integers(0, 3, dtype=ember.float32)
    with pytest.raises(ValueError, match="larger sample"):
        rng.choice(3, 5, replace=False)
    with pytest.raises(ValueError, match="scale < 0"):
        rng.normal(0, -1.0, 3)


def test_integers_take_array_bounds(backend):
    # NumPy's array bounds: broadcast with each other and size, each value in its own range
    rng = ember.random.default_rng(5)
    low, high = np.array([0, 5, -100, 7]), np.array([10, 20, -50, 8])
    x = rng.integers(low, high, size=(40000, 4)).to_numpy()
    assert x.dtype == np.int64 and x.shape == (40000, 4)
    assert np.all(x >= low) and np.all(x < high)
    np.testing.assert_allclose(x.mean(axis=0), (low + high - 1) / 2, atol=0.1)
    for column, (lo, hi) in enumerate(zip(low, high, strict=True)):
        assert len(np.unique(x[:, column])) == hi - lo  # every value drawn
    y = rng.integers(ember.asarray(np.array([[0], [100]])), [150, 200, 300], endpoint=True,
                     dtype=ember.int16).to_numpy()  # fmt: skip
    assert y.dtype == np.int16 and y.shape == (2, 3)
    assert np.all(y <= [150, 200, 300]) and np.all(y[1] >= 100)
    z = rng.integers(0, [2**64 - 1], size=(1000, 1), dtype=ember.uint64, endpoint=True)
    assert len(np.unique(z.to_numpy())) == 1000  # the whole range (a span of 2**64)
    w = rng.integers([-(2**63)], [2**63 - 1], size=1000, endpoint=True).to_numpy()
    assert (w < 0).any() and (w > 0).any()
    assert rng.integers(np.array([0.5, 2.9]), 3).to_numpy().tolist()[1] == 2  # truncated
    for call, message in (
        (lambda: rng.integers([0, 5], [10, 5]), "low >= high"),
        (lambda: rng.integers([0, 6], [10, 5], endpoint=True), "low > high"),
        (lambda: rng.integers([-1, 0], 10, dtype=ember.uint8), "low is out of bounds for uint8"),
        (lambda: rng.integers(0, [257], dtype=ember.uint8), "high is out of bounds for uint8"),
        (lambda: rng.integers([0, 1], [2, 3], size=3), "does not broadcast to size"),
    ):
        with pytest.raises(ValueError, match=message):
            call()
