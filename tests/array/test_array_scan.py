"""Scans against NumPy: cumulative_sum/prod, cumsum/cumprod, ember.accumulate; every dtype,
every axis, views, empty and 0-d arrays, and sizes across tile boundaries, through both
the reduce-then-scan and the single-pass (decoupled look-back) kernels."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import DTYPES, check, sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.array import lookback, scan


def _exact_cumsum(x, axis=None, dtype=None):
    """NumPy's cumsum, floats summed in float64 (the device combines in another order)."""
    if x.dtype.kind == "f" and dtype is None:
        return np.cumsum(x.astype(np.float64), axis=axis).astype(x.dtype)
    return np.cumsum(x, axis=axis, dtype=dtype)


def _close(actual, expected, rtol=None):
    """Float scans: close relative to the largest partial sum of the row."""
    expected = np.asarray(expected)
    if expected.dtype.kind != "f":
        check(actual, expected)
        return
    a = actual.to_numpy()
    assert a.dtype == expected.dtype and a.shape == expected.shape
    scale = max(float(np.nanmax(np.abs(expected), initial=1.0)), 1.0)
    tol = rtol or {"float16": 4e-3, "float32": 1e-5, "float64": 1e-12}[expected.dtype.name]
    np.testing.assert_allclose(a, expected, rtol=tol, atol=tol * scale, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_and_cumulative_sum_of_every_dtype(backend, dtype):
    x = sample(dtype, (13,), low=-3, high=3)
    d = ember.asarray(x)
    _close(ember.cumsum(d), _exact_cumsum(x))
    _close(ember.cumulative_sum(d), _exact_cumsum(x))
    expected = np.cumulative_sum(x, include_initial=True)
    _close(ember.cumulative_sum(d, include_initial=True), expected)
    check(d.cumsum(), np.cumsum(x), exact=dtype != "float16")


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float32", "float64"])
def test_cumprod_and_cumulative_prod(backend, dtype):
    x = sample(dtype, (11,), low=-2, high=2, nonzero=True)
    d = ember.asarray(x)
    check(ember.cumprod(d), np.cumprod(x))
    check(ember.cumulative_prod(d, include_initial=True),
          np.cumulative_prod(x, include_initial=True))  # fmt: skip


def _tile(backend, ct, single_pass=False) -> int:
    return scan.geometry(backend, ember.dtype(ct), single_pass).tile


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_scan_across_tile_boundaries(backend, dtype):
    tile = _tile(backend, "int64" if dtype == "int32" else dtype)
    for n in (tile - 1, tile, tile + 1, 3 * tile + 5, 40 * tile + 1):
        x = sample(dtype, (n,), seed=n, low=-100, high=100)
        _close(ember.cumsum(ember.asarray(x)), _exact_cumsum(x))


def test_three_levels_of_reduce_then_scan(backend):
    tile = _tile(backend, "int64")
    n = tile * tile + 7  # the tile totals themselves need more than one tile
    if n > 1 << 22:
        pytest.skip("tiles too large for a quick three-level test on this device")
    x = sample("int32", (n,), low=-50, high=50)
    check(ember.cumsum(ember.asarray(x)), np.cumsum(x))


@pytest.fixture
def single_pass(backend, monkeypatch):
    """The single-pass kernel, also where the backend does not choose it (the PoCL CPU
    device runs work-groups on threads, so a waiting work-group cannot block the others
    forever: the look-back is exercised for correctness, not speed)."""
    monkeypatch.setattr(type(backend), "forward_progress", True)
    return backend


# int32 sums in int64 and float64: flags and values apart; float32: packed in one word
@pytest.mark.parametrize("dtype", ["int32", "float64", "float32"])
def test_single_pass_scan(single_pass, dtype):
    tile = _tile(single_pass, "int64" if dtype == "int32" else dtype, True)
    for n in (2 * tile - 1, 37 * tile + 3):  # one window, then several
        x = sample(dtype, (n,), seed=n, low=-100, high=100)
        _close(ember.cumsum(ember.asarray(x)), _exact_cumsum(x))
    rows = sample(dtype, (3, 3 * tile + 1), low=-9, high=9)  # look-back stops at row starts
    _close(ember.cumsum(ember.asarray(rows), axis=1), _exact_cumsum(rows, axis=1))


@pytest.fixture
def ordered_single_pass(single_pass, monkeypatch):
    """The single pass with tiles by block index, as CUDA runs it: one look-back state per
    backend, a new epoch per scan (the geometry is cached per backend: cleared around)."""
    monkeypatch.setattr(type(single_pass), "ordered_blocks", True)
    monkeypatch.setattr(scan, "_kept", {})
    scan.geometry.cache_clear()
    yield single_pass
    scan.geometry.cache_clear()


def test_single_pass_scans_share_one_state_by_epochs(ordered_single_pass, monkeypatch):
    be = ordered_single_pass
    tile = _tile(be, "float32", True)
    assert scan.geometry(be, ember.float32, True).ordered
    sizes = (5 * tile + 3, 2 * tile, 5 * tile + 3, 9 * tile + 1, 3 * tile)
    states = []
    for n in sizes:  # stale words of earlier scans (larger and smaller) are never read
        x = sample("float32", (n,), seed=n, low=-100, high=100)
        _close(ember.cumsum(ember.asarray(x)), _exact_cumsum(x))
        states.append(scan._kept[be][0])
    assert states[0] is states[1] is states[2]  # no memset, no new state...
    assert states[3] is not states[2] and states[4] is states[3]  # ...until a larger scan
    assert scan._kept[be][1] == 3  # the second state has served epochs 1 and 2
    monkeypatch.setattr(lookback, "EPOCHS", 3)  # epochs run out: a new zeroed state
    for seed in range(3):
        x = sample("int32", (4 * tile + 1,), seed=seed, low=-9, high=9)
        check(ember.cumsum(ember.asarray(x)), np.cumsum(x))
    assert scan._kept[be][0] is not states[4] and scan._kept[be][1] == 2


def test_a_scan_in_a_cached_scope_leaves_the_scope_free(ordered_single_pass):
    x = sample("float32", (4 * _tile(ordered_single_pass, "float32", True),))
    cache = ember.AllocCache()
    with ember.cached(cache):
        y = ember.cumsum(ember.asarray(x))
        _close(y, _exact_cumsum(x))
        del y
    cache.free()  # the kept look-back state is not the scope's
    assert cache.n_busy == 0


@pytest.fixture
def warp_scans(backend, monkeypatch):
    """Block scans with 32-lane warp shuffles (the GPU's), emulated in shared memory."""
    from ember.array import scan_kernels

    monkeypatch.setattr(
        scan, "geometry", lambda be, ct, single_pass=False: scan_kernels.Geometry(64, 8, 32, True)
    )
    return backend


def test_warp_shuffle_block_scans(warp_scans, monkeypatch):
    for n in (100, 64 * 8 * 3 + 7):
        x = sample("int32", (n,), seed=n, low=-9, high=9)
        check(ember.cumsum(ember.asarray(x)), np.cumsum(x))
    m = sample("float32", (3000,)) > 0.5
    check(ember.flatnonzero(ember.asarray(m)), np.flatnonzero(m).astype(np.int64))
    monkeypatch.setattr(type(warp_scans), "forward_progress", True)
    x = sample("int64", (64 * 8 * 5 + 1,), low=-9, high=9)
    check(ember.cumsum(ember.asarray(x)), np.cumsum(x))


def test_single_pass_with_a_user_operator(single_pass):
    tile = _tile(single_pass, "int32", True)
    x = sample("int32", (5 * tile + 3,), low=-1000, high=1000)
    check(ember.accumulate(ember.maximum, ember.asarray(x)), np.maximum.accumulate(x))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_every_axis_of_a_3d_array(backend, axis):
    x = sample("int32", (4, 5, 6), low=-50, high=50)
    check(ember.cumsum(ember.asarray(x), axis=axis), np.cumsum(x, axis=axis))
    check(ember.cumulative_sum(ember.asarray(x), axis=axis, include_initial=True),
          np.cumulative_sum(x, axis=axis, include_initial=True))  # fmt: skip


def test_views_transposes_and_negative_strides(backend):
    base = sample("int32", (9, 40), low=-50, high=50)
    d = ember.asarray(base)
    for index in [(slice(None), slice(None, None, -1)), (slice(None, None, 2), slice(3, 30, 3)),
                  (slice(None, None, -1), slice(None))]:  # fmt: skip
        for axis in (0, 1):
            check(ember.cumsum(d[index], axis=axis), np.cumsum(base[index], axis=axis))
    check(ember.cumsum(d.T, axis=1), np.cumsum(base.T, axis=1))
    check(ember.cumsum(d.T), np.cumsum(base.T))  # flattened in C order of the view


def test_vectors_with_offsets_steps_and_dtype_spellings(backend):
    # dense vectors take a path of their own (no axis moves): views that start inside
    # their buffer, rows of a matrix, and the vectors it leaves to the general path
    tile = _tile(backend, "int64")
    x = sample("int32", (2 * tile + 7,), low=-50, high=50)
    d = ember.asarray(x)
    m = sample("float32", (4, 300))
    dm = ember.asarray(m)
    for got, want in [(d[5:], x[5:]), (d[3 : tile + 9], x[3 : tile + 9]), (d[::-1], x[::-1]),
                      (d[1::3], x[1::3]), (dm[2], m[2]), (dm[:, 7], m[:, 7])]:  # fmt: skip
        _close(ember.cumsum(got), _exact_cumsum(want))
        _close(ember.cumulative_sum(got, axis=-1), _exact_cumsum(want))
    for spelling in ("float64", np.float64, ember.float64, np.dtype("float64"), float):
        check(ember.cumsum(d[2:], dtype=spelling), np.cumsum(x[2:], dtype=np.float64))
    check(ember.cumprod(d[:9] % 3 + 1), np.cumprod(x[:9] % 3 + 1))


def test_long_rows_along_a_slow_axis(backend):
    tile = _tile(backend, "int64")
    x = sample("int16", (2 * tile + 3, 3), low=-9, high=9)
    check(ember.cumsum(ember.asarray(x), axis=0), np.cumsum(x, axis=0))


def test_empty_zero_d_and_single_element(backend):
    for shape, axis in [((0,), 0), ((3, 0), 1), ((0, 4), 1), ((0, 4), 0), ((1,), 0)]:
        x = sample("float32", shape)
        check(ember.cumsum(ember.asarray(x), axis=axis), np.cumsum(x, axis=axis))
        check(ember.cumulative_prod(ember.asarray(x), axis=axis, include_initial=True),
              np.cumulative_prod(x, axis=axis, include_initial=True))  # fmt: skip
    z = np.float32(2.5)
    check(ember.cumsum(ember.asarray(z)), np.cumsum(z))
    check(ember.cumulative_sum(ember.asarray(z)), np.cumulative_sum(z))


def test_dtype_argument_and_out(backend):
    x = sample("int32", (3, 20), low=0, high=100)
    d = ember.asarray(x)
    check(ember.cumsum(d, axis=1, dtype=ember.int8), np.cumsum(x, axis=1, dtype=np.int8))
    check(ember.cumsum(d, dtype="float32"), np.cumsum(x, dtype=np.float32))
    b = sample("bool", (17,))
    check(ember.cumsum(ember.asarray(b), dtype=bool), np.cumsum(b, dtype=bool))
    out = ember.zeros(60, ember.int64)
    assert ember.cumsum(d, out=out) is out
    check(out, np.cumsum(x))


def test_nan_propagates(backend):
    x = np.array([1.0, np.nan, 2.0, 3.0], np.float32)
    check(ember.cumsum(ember.asarray(x)), np.cumsum(x))
    check(ember.accumulate(ember.maximum, ember.asarray(x)), np.maximum.accumulate(x))


def first_nonzero(a, b):  # associative, not commutative
    return a if a != 0 else b


def test_accumulate_with_a_python_function(backend):
    tile = _tile(backend, "int16")
    x = sample("int16", (2 * tile + 9,), low=-1, high=1)
    expected = x.copy()
    for i in range(1, len(x)):
        expected[i] = expected[i - 1] if expected[i - 1] != 0 else x[i]
    check(ember.accumulate(first_nonzero, ember.asarray(x)), expected)
    m = sample("int8", (4, 6))
    check(ember.accumulate(ember.add, ember.asarray(m), axis=1), np.add.accumulate(m, axis=1))


def test_errors(backend):
    d = ember.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="axis argument is required"):
        ember.cumulative_sum(d)
    with pytest.raises(ValueError, match="out of bounds"):
        ember.cumsum(d, axis=2)
    with pytest.raises(TypeError, match=r"ember\.asarray"):
        ember.cumsum(np.ones(3))
    with pytest.raises(TypeError, match="ufunc"):
        ember.accumulate("add", d)
    with pytest.raises(ValueError, match="0-d"):
        ember.accumulate(ember.add, ember.asarray(np.float32(1)))


SETTINGS = settings(
    max_examples=25, derandomize=True, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip


@SETTINGS
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=4),
    st.data(),
)
def test_shapes_and_axes_match_numpy(backend, shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    initial = data.draw(st.booleans())
    x = sample("int32", tuple(shape), low=-20, high=20)
    check(ember.cumulative_sum(ember.asarray(x), axis=axis, include_initial=initial),
          np.cumulative_sum(x, axis=axis, include_initial=initial))  # fmt: skip


def test_kernel_modules_import_in_any_order():
    """ndarray imports its operations lazily: ``ember.kernel`` first must not meet a
    half-initialized compiler through the array kernels (a circular import once did)."""
    import subprocess
    import sys

    code = "import ember; ember.kernel; import ember.array.scan_kernels, ember.array.sort"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_cumulative_fractions_repeat_exactly_at_zero_weights(backend):
    # the CDF behind weighted quantiles and choice(p=): a zero weight repeats the fraction
    # before it bit for bit, and the last positive weight's is exactly 1, whatever the
    # scan's tree order does to the sums (NumPy's sequential sum has both properties)
    rng = np.random.default_rng(4)
    w = rng.random((64, 700)) * (rng.random((64, 700)) < 0.6)
    w[:, 650:] = 0.0
    w[0] = 0.0
    w[0, 5] = 2.0
    fr = scan.cumulative_fractions(ember.asarray(w)).to_numpy()
    for r in range(w.shape[0]):
        pos = np.flatnonzero(w[r] > 0)
        assert fr[r, pos[-1]] == 1.0 and np.all(fr[r, : pos[0]] == 0.0)
        zeros = np.flatnonzero(w[r, pos[0] :] == 0) + pos[0]
        np.testing.assert_array_equal(fr[r, zeros], fr[r, zeros - 1])
    np.testing.assert_allclose(fr, np.cumsum(w, axis=1) / w.sum(axis=1, keepdims=True))
    p = w[1] / w[1].sum()
    draws = ember.random.default_rng(2).choice(700, size=20000, p=p).to_numpy()
    assert np.all(p[draws] > 0)
