"""ember.random against NumPy's Generator: regressions found by comparing distributions and
behaviour (permutations that were not uniform, ranges and probabilities that gave garbage
instead of NumPy's errors, NumPy arguments that were missing).  Fixed seeds throughout, and
tolerances a correct generator passes by a wide margin."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember


def _parity(p) -> int:
    """0 for an even permutation, 1 for an odd one (by its cycles)."""
    seen, swaps = [False] * len(p), 0
    for i in range(len(p)):
        j, length = i, 0
        while not seen[j]:
            seen[j], j, length = True, p[j], length + 1
        swaps += max(length - 1, 0)
    return swaps % 2


# --------------------------------------------------------------------- permutations
def test_permutations_reach_odd_permutations(backend):
    # The Feistel network (until 2026-12) gave only even permutations of 16 = 2**4 values,
    # and 94% odd ones of 15.  Uniform: half are odd (120 draws: 60 +- 5.5).
    rng = ember.random.default_rng(11)
    for n in (15, 16):
        odd = sum(_parity(rng.permutation(n).to_numpy()) for _ in range(120))
        assert 30 < odd < 90, (n, odd)


def test_permuted_rows_are_uniform_permutations(backend):
    rng = ember.random.default_rng(12)
    rows = rng.permuted(ember.asarray(np.tile(np.arange(4), (2400, 1))), axis=1).to_numpy()
    assert (np.sort(rows, axis=1) == np.arange(4)).all()
    _, counts = np.unique(rows, axis=0, return_counts=True)
    assert counts.size == 24  # every permutation of 4, each 100 +- 10 times
    chi2 = ((counts - 100.0) ** 2 / 100.0).sum()  # 23 degrees of freedom: p = 1e-6 at 68
    assert chi2 < 68, counts


def test_permuted_axes_and_out(backend):
    rng = ember.random.default_rng(13)
    host = np.arange(24).reshape(4, 6)
    cols = rng.permuted(ember.asarray(host), axis=0).to_numpy()
    assert (np.sort(cols, axis=0) == host).all()
    flat = rng.permuted(ember.asarray(host)).to_numpy()
    assert flat.shape == (4, 6) and sorted(flat.ravel()) == list(range(24))
    x = ember.asarray(host)
    assert rng.permuted(x, axis=-1, out=x) is x
    assert (np.sort(x.to_numpy(), axis=1) == host).all()
    assert sorted(rng.permuted([3, 1, 2]).to_numpy()) == [1, 2, 3]  # a host list: copied


def test_permutation_and_choice_take_host_arrays(backend):
    rng = ember.random.default_rng(14)
    assert sorted(rng.permutation([5, 6, 7]).to_numpy()) == [5, 6, 7]
    assert sorted(rng.permutation(np.arange(4)).to_numpy()) == [0, 1, 2, 3]
    picks = rng.choice([10, 20, 30], 50).to_numpy()
    assert set(picks) <= {10, 20, 30}
    assert set(rng.choice(np.array([4, 5]), 20).to_numpy()) <= {4, 5}
    assert 0 <= int(rng.choice(np.array(5))) < 5  # a 0-d array is its integer, as NumPy's


# --------------------------------------------------------------------- uniform
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_uniform_refuses_reversed_and_infinite_ranges(dtype):
    # (checks made on the host, before any draw: the default backend only)
    rng = ember.random.default_rng(0)
    with pytest.raises(ValueError, match="high - low < 0"):
        rng.uniform(1.0, 0.0, 3, dtype=dtype)  # (gave values in (0, 1] silently)
    with pytest.raises(ValueError, match="high - low < 0"):
        rng.uniform(np.array([0.0, 1.0]), np.array([1.0, 0.0]), dtype=dtype)
    for low, high in ((0.0, math.inf), (-1e308, 1e308), (0.0, math.nan)):
        with pytest.raises(OverflowError, match="range exceeds valid bounds"):
            rng.uniform(low, high, 3, dtype=dtype)  # (gave inf or NaN silently)
        with (
            pytest.raises(OverflowError, match="range exceeds valid bounds"),
            np.errstate(over="ignore"),
        ):
            rng.uniform(np.array([low]), high, dtype=dtype)  # (-1e308 is -inf in float32)
    if dtype == "float32":  # a range beyond float32, finite in float64
        with pytest.raises(OverflowError, match="range exceeds valid bounds"):
            rng.uniform(-3e38, 3e38, 3, dtype=dtype)
    assert (rng.uniform(2.0, 2.0, 5, dtype=dtype).to_numpy() == 2.0).all()


# --------------------------------------------------------------------- choice
def test_choice_refuses_what_numpy_refuses():
    rng = ember.random.default_rng(1)
    with pytest.raises(ValueError, match="positive integer"):
        rng.choice(-1)  # (drew from [0, 1) silently)
    with pytest.raises(ValueError, match="sequence or an integer"):
        rng.choice(3.5)  # (drew from range(3) silently)
    with pytest.raises(ValueError, match="contain NaN"):
        rng.choice(2, p=[math.nan, 1.0])  # (a NaN sum passed the sum check)
    with pytest.raises(ValueError, match="1-dimensional"):
        rng.choice(1, p=[[1.0]])
    with pytest.raises(ValueError, match="sum to 1"):
        rng.choice(3, p=[0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="non-negative"):
        rng.choice(2, p=[1.5, -0.5])


def test_choice_accepts_float32_weights_as_numpy():
    # float32 weights normalized in float32 sum to 1 only within float32's rounding: NumPy
    # allows sqrt(eps) of p's dtype; the fixed 1e-8 refused them.
    w = np.random.default_rng(0).random(1000).astype(np.float32)
    p = w / w.sum(dtype=np.float32)
    assert abs(float(p.astype(np.float64).sum()) - 1.0) > 1e-8
    rng = ember.random.default_rng(2)
    x = rng.choice(1000, 200, p=ember.asarray(p)).to_numpy()
    assert x.min() >= 0 and x.max() < 1000
    with pytest.raises(ValueError, match="sum to 1"):
        rng.choice(2, p=np.array([0.5, 0.5], np.float64) + 1e-7)


# --------------------------------------------------------------------- integers
def test_integers_empty_sizes_and_float_bounds(backend):
    rng = ember.random.default_rng(3)
    assert rng.integers(3, 3, 0).shape == (0,)  # NumPy: no values, no range check
    assert rng.integers(5, 2, (2, 0), dtype=ember.int8).shape == (2, 0)
    with pytest.raises(ValueError, match="low >= high"):
        rng.integers(3, 3, 1)
    x = rng.integers(5.7, 10.2, 2000).to_numpy()  # truncated, as NumPy's (and array bounds)
    assert x.min() == 5 and x.max() == 9
    with pytest.raises(TypeError, match="finite float"):
        rng.integers(0, math.inf)


# --------------------------------------------------------------------- more distributions
def test_negative_binomial_refuses_means_beyond_int64():
    rng = ember.random.default_rng(4)
    for n, p in ((math.inf, 0.5), (1.0, 1e-19), (1e18, 0.01)):  # (were clamped silently)
        with pytest.raises(ValueError, match="n too large or p too small"):
            rng.negative_binomial(n, p, 3)
        with pytest.raises(ValueError, match="n too large or p too small"):
            rng.negative_binomial(np.array([1.0, n]), p)
    with pytest.raises(ValueError, match="n must not be NaN"):
        rng.negative_binomial(math.nan, 0.5)


def test_standard_exponential_method_and_out(backend):
    rng = ember.random.default_rng(5)
    a = rng.standard_exponential(1000, method="inv").to_numpy()
    assert a.min() > 0 and abs(a.mean() - 1) < 0.15
    out = ember.empty((4, 5), ember.float32)
    assert rng.standard_exponential(out=out, dtype=ember.float32) is out
    assert (out.to_numpy() > 0).all()
    with pytest.raises(ValueError, match="method must be 'zig' or 'inv'"):
        rng.standard_exponential(3, method="ziggurat")


def test_beta_keeps_subnormal_values(backend):
    # Beta(0.001, 5) lies below 2**-1022 (subnormal) 1.8% of the time: 1 / (1 + exp(big))
    # flushed all of those to 0.
    x = ember.random.default_rng(6).beta(0.001, 5.0, 20000).to_numpy()
    subnormal = ((x > 0) & (x < np.finfo(np.float64).tiny)).sum()
    assert 200 < subnormal < 520, subnormal  # 354 +- 19


def test_seed_sequences_seed():
    a = ember.random.default_rng(np.random.SeedSequence(5))
    b = ember.random.default_rng(np.random.SeedSequence(5))
    assert a.key == b.key != ember.random.default_rng(np.random.SeedSequence(6)).key


def test_integers_array_bounds_up_to_2_64(backend):
    # high = 2**64 (uint64's exclusive top) with array bounds: was an OverflowError
    rng = ember.random.default_rng(7)
    x = rng.integers([0, 2**63], [2**64, 2**64], (500, 2), dtype=ember.uint64).to_numpy()
    assert x[:, 1].min() >= 2**63 and np.unique(x).size == 1000
    top = rng.integers(np.array([2**64 - 2], np.uint64), 2**64, 200, dtype="uint64").to_numpy()
    assert set(top.tolist()) == {2**64 - 2, 2**64 - 1}
    with pytest.raises(ValueError, match="high is out of bounds for uint64"):
        rng.integers([0], 2**64 + 1, dtype=ember.uint64)
