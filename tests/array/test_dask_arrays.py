"""Dask arrays of Ember chunks (issue 16): Dask's graphs run Ember's functions on the
device and agree with the same graphs on NumPy chunks.  The local (synchronous)
scheduler keeps them fast; tests/backend/test_dask_cluster.py runs worker processes."""

from __future__ import annotations

import numpy as np
import pytest

import ember

da = pytest.importorskip("dask.array")
import ember.dask  # noqa: E402 - after the skip

SYNC = {"scheduler": "sync"}


@pytest.fixture
def pair(backend):
    """The same 2-d float32 data as a Dask array of ember chunks and of NumPy chunks;
    uneven chunks, so that block edges are crossed along both axes."""
    host = np.random.default_rng(1).standard_normal((30, 14)).astype(np.float32)
    x = ember.dask.from_array(ember.asarray(host), chunks=(8, 5))
    return x, da.from_array(host, chunks=(8, 5))


def same(result, expected, rtol=1e-5):
    """``result`` (computed on ember chunks) is an ember array equal to NumPy's."""
    assert isinstance(result, ember.ndarray), type(result)
    np.testing.assert_allclose(result.to_numpy(), np.asarray(expected), rtol=rtol, atol=1e-5)


def test_meta_says_ember(pair):
    x, _ = pair
    assert isinstance(x._meta, ember.ndarray) and x.dtype == np.float32
    assert isinstance((x * 2 + 1)._meta, ember.ndarray)
    assert isinstance(x.sum(axis=0)._meta, ember.ndarray)
    y = da.from_array(ember.arange(10.0), chunks=5, asarray=False)  # the plain Dask spelling
    assert isinstance(y._meta, ember.ndarray)
    same(y.sum().compute(**SYNC), 45.0)


OPS = {
    "elementwise": lambda d: da.sin(d) * 2 + d**2 - 1,
    "where": lambda d: da.where(d > 0, d, -d),
    "sum": lambda d: d.sum(),
    "sum0": lambda d: d.sum(axis=0),
    "sum1_keep_f64": lambda d: d.sum(axis=1, keepdims=True, dtype=np.float64),
    "mean": lambda d: d.mean(),
    "mean1": lambda d: d.mean(axis=1),
    "std0": lambda d: d.std(axis=0),
    "var1_ddof": lambda d: d.var(axis=1, ddof=1),
    "std": lambda d: d.std(),
    "max0": lambda d: d.max(axis=0),
    "min1_keep": lambda d: d.min(axis=1, keepdims=True),
    "argmax0": lambda d: d.argmax(axis=0),
    "argmax1": lambda d: d.argmax(axis=1),
    "argmin": lambda d: d.argmin(),
    "nanmean0": lambda d: da.nanmean(da.where(d > 1, np.nan, d), axis=0),
    "any0": lambda d: (d > 1).any(axis=0),
    "cumsum0": lambda d: d.cumsum(axis=0),
    "rechunk": lambda d: d.rechunk((11, 14)).rechunk((30, 3)),
    "concatenate": lambda d: da.concatenate([d, d[::2]], axis=0),
    "stack": lambda d: da.stack([d, d + 1], axis=1),
    "transpose_matmul": lambda d: d.T @ d,
    "tensordot": lambda d: da.tensordot(d, d, axes=((0,), (0,))),
    "einsum": lambda d: da.einsum("ij,ij->j", d, d),
    "fancy_take": lambda d: d[[1, 9, 20, 29]],
    "slices": lambda d: d[3:25:2, ::-3],
}


@pytest.mark.parametrize("op", list(OPS))
def test_graphs_match_numpy(pair, op):
    x, h = pair
    same(OPS[op](x).compute(**SYNC), OPS[op](h).compute(**SYNC), rtol=1e-4)


def test_map_blocks_with_a_kernel_and_blockwise(pair):
    x, h = pair

    @ember.kernel
    def scale_shift(out, a, s):
        i = ember.global_id()
        if i < a.shape[0]:
            out[i] = a[i] * s + 1

    def block(b):
        flat = b.ravel()
        out = ember.empty_like(flat)
        scale_shift.launch(flat.size)(out, flat, np.float32(3))
        return out.reshape(b.shape)

    same(x.map_blocks(block, dtype=x.dtype).compute(**SYNC), h.compute() * 3 + 1)
    z = da.blockwise(np.multiply, "ij", x, "ij", x.T.T, "ij", dtype=x.dtype)
    same(z.compute(**SYNC), h.compute() ** 2)
    with_block_id = x.map_blocks(lambda b, block_id=None: b * 0 + block_id[0], dtype=x.dtype)
    same(with_block_id.compute(**SYNC), (np.arange(30) // 8)[:, None] + 0 * h.compute())


def test_threads_persist_store_and_delayed(pair):
    x, h = pair
    y = (x * 2).persist(scheduler="threads")  # chunks stay ember arrays, on the device
    assert all(isinstance(c, ember.ndarray) for c in y.dask.values())
    same(y.sum(axis=1).compute(scheduler="threads"), 2 * h.compute().sum(axis=1), rtol=1e-4)
    target = np.zeros(x.shape, np.float32)
    da.store(ember.dask.to_host(x + 1), target, scheduler="threads")
    np.testing.assert_allclose(target, h.compute() + 1, rtol=1e-6)
    from dask import delayed

    parts = [delayed(ember.arange)(4.0) + i for i in range(3)]
    d = da.concatenate(
        [da.from_delayed(p, (4,), np.float64, meta=ember.dask.meta()) for p in parts]
    )
    same(d.compute(**SYNC), np.concatenate([np.arange(4.0) + i for i in range(3)]))


def test_host_and_device_chunks(backend):
    host = np.arange(12.0).reshape(3, 4)
    on_device = ember.dask.to_device(da.from_array(host, chunks=2))
    assert isinstance(on_device._meta, ember.ndarray)
    same(on_device.sum(axis=0).compute(**SYNC), host.sum(axis=0))
    back = ember.dask.to_host(on_device * 2).compute(**SYNC)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, host * 2)
    q = da.percentile(ember.dask.to_host(on_device.ravel()), [10, 50]).compute(**SYNC)
    expected = da.percentile(da.from_array(host, chunks=2).ravel(), [10, 50]).compute(**SYNC)
    np.testing.assert_allclose(q, expected)  # (Dask's merged percentiles are approximate)


def test_ember_array_backend_creates_ember_chunks(backend):
    import dask

    with dask.config.set({"array.backend": "ember"}):
        ones = da.ones((6, 4), chunks=3, dtype=np.float32)
        r = da.arange(10, chunks=4)
        # the *_like functions pass the graph's name= to the backend's creation function
        likes = [da.zeros_like(ones), da.ones_like(ones, dtype=np.int32), da.full_like(ones, 2.5),
                 da.empty_like(ones)]  # fmt: skip
        host = np.arange(24.0).reshape(6, 4) % 5
        x = ember.dask.from_array(ember.asarray(host), chunks=(4, 3))
        found = da.argwhere(x > 2)  # its index arrays are made by the backend's arange
    assert isinstance(ones._meta, ember.ndarray)
    same(ones.sum(axis=0).compute(**SYNC), np.full(4, 6.0))
    same(r.compute(**SYNC), np.arange(10))
    assert all(isinstance(x._meta, ember.ndarray) and x.shape == (6, 4) for x in likes)
    same(likes[0].compute(**SYNC), np.zeros((6, 4), np.float32))
    same(likes[1].compute(**SYNC), np.ones((6, 4), np.int32))
    same(likes[2].compute(**SYNC), np.full((6, 4), 2.5, np.float32))
    same(found.compute(**SYNC), np.argwhere(host > 2))


def test_random_chunks_are_drawn_on_the_device_per_chunk_key(backend):
    rng = ember.dask.default_rng(7)
    x = rng.standard_normal((64, 40), chunks=(16, 20), dtype=ember.float32)
    assert isinstance(x._meta, ember.ndarray) and x.numblocks == (4, 2)
    a = x.compute(**SYNC)
    b = x.rechunk((64, 40)).compute(scheduler="threads")  # same graph keys: same numbers
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    blocks = [x.blocks[i, j].compute(**SYNC).to_numpy() for i in range(4) for j in range(2)]
    assert len({blk.tobytes() for blk in blocks}) == 8  # independent streams per chunk
    first = ember.random.Generator(ember.random.default_rng(7).spawn(8)[0].key)
    np.testing.assert_array_equal(
        blocks[0], first.standard_normal((16, 20), dtype=ember.float32).to_numpy()
    )
    big = ember.dask.default_rng(3).standard_normal(200_000, chunks=50_000, dtype=ember.float32)
    m, s = float(big.mean().compute(**SYNC)), float(big.std().compute(**SYNC))
    assert abs(m) < 0.02 and abs(s - 1) < 0.02
    u = ember.dask.default_rng(1).integers(3, 9, size=1000, chunks=300).compute(**SYNC).to_numpy()
    assert u.min() >= 3 and u.max() <= 8 and set(u) == set(range(3, 9))
    assert (
        ember.dask.default_rng(2).uniform(2, 4, size=10, chunks=5).compute(**SYNC).dtype
        == ember.float64
    )


def test_chunks_on_a_second_device(two_devices):
    d0, d1 = two_devices
    host = np.arange(40.0).reshape(8, 5)
    x = ember.dask.from_array(ember.asarray(host, device=d1), chunks=(3, 2))
    assert x._meta.device is d1
    with d1:  # tasks run where their chunks live; new arrays on the thread's device
        r = (x * 2).sum(axis=0).compute(**SYNC)
    assert r.device is d1
    np.testing.assert_array_equal(r.to_numpy(), 2 * host.sum(axis=0))


def test_stencil_with_map_overlap(pair):
    x, h = pair

    def laplacian(b):
        out = b.copy()
        out[1:-1, 1:-1] = (
            b[:-2, 1:-1] + b[2:, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] - 4 * b[1:-1, 1:-1]
        )
        return out

    meta = ember.dask.meta(ember.float32, 2)
    for boundary in ("none", 0, "periodic", "reflect"):
        got = x.map_overlap(laplacian, depth=1, boundary=boundary, dtype=x.dtype, meta=meta)
        want = h.map_overlap(laplacian, depth=1, boundary=boundary)
        same(got.compute(**SYNC), want.compute(**SYNC), rtol=1e-4)


def test_the_numpy_forms_dask_uses(backend):
    """What Dask's chunk code calls with ember arrays, checked against NumPy directly."""
    h = np.arange(12, dtype=np.int64).reshape(3, 4)
    x = ember.asarray(h)
    flat = ember.asarray(np.array([0, 5, 11]))
    for got, want in zip(
        np.unravel_index(flat, (3, 4)), np.unravel_index([0, 5, 11], (3, 4)), strict=True
    ):
        same(got, want)
    for got, want in zip(ember.unravel_index(flat, (3, 4), order="F"),
                         np.unravel_index([0, 5, 11], (3, 4), order="F"), strict=True):  # fmt: skip
        same(got, want)
    rows, cols = ember.asarray(np.array([0, 2, 1])), ember.asarray(np.array([3, 0, 9]))
    same(np.ravel_multi_index((rows, cols), (3, 4), mode="clip"),
         np.ravel_multi_index(([0, 2, 1], [3, 0, 9]), (3, 4), mode="clip"))  # fmt: skip
    same(ember.ravel_multi_index((rows, cols), (3, 4), mode="wrap", order="F"),
         np.ravel_multi_index(([0, 2, 1], [3, 0, 9]), (3, 4), mode="wrap", order="F"))  # fmt: skip
    with pytest.raises(ValueError, match="invalid entry"):
        ember.ravel_multi_index((rows, cols), (3, 4))
    with pytest.raises(ValueError, match="out of bounds"):
        ember.unravel_index(ember.asarray(np.array([12])), (3, 4))
    f = np.full_like(x, 7, shape=(2, 2), dtype=np.float32, order="C")
    assert isinstance(f, ember.ndarray) and f.shape == (2, 2) and f.dtype is ember.float32
    z = ember.zeros_like(x, order="F")  # (refused until the NumPy-parameter audit)
    same(z, np.zeros_like(h, order="F"))
    assert z.flags.f_contiguous and not z.flags.c_contiguous
    a = np.array([1.5, 2.5], like=x)
    assert isinstance(a, ember.ndarray) and a.dtype is ember.float64
    assert np.array([[1]], ndmin=3, like=x).shape == (1, 1, 1)
    same(np.arange(2, 9, 3, np.int32, like=x), np.arange(2, 9, 3, dtype=np.int32))
    assert x.dtype.type is np.int64 and (x**2).dtype is ember.int64
    same(x**2, h**2)
    z = ember.asarray(np.float32(3))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z[()].shape == () and z[()].device is z.device  # a view, no element read
