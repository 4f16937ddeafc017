"""ember.fft on CUDA (GPU machine): cuFFT's plan cache and large transforms from both
engines against NumPy.  The layout battery runs on CUDA through test_fft.py (``engine``:
cuFFT, and Ember's kernels) and test_fft_vendor_layouts.py (the fake library)."""

from __future__ import annotations

import numpy as np
import pytest
from fft_common import check, complex_sample, real_sample, wide

import ember
from ember.runtime import backend as registry

pytestmark = pytest.mark.gpu
F = ember.fft


@pytest.fixture
def cuda():
    with registry.use("cuda") as be:
        if be.fft() is None:
            pytest.skip(f"cuFFT unavailable: {be.vendor_missing.get('fft')}")
        yield be


@pytest.fixture(params=["cufft", "kernels"])
def engine(request, cuda):
    if request.param == "cufft":
        yield cuda
    else:
        with ember.config.override(fft="ember"):
            yield cuda


def test_plan_cache_counts_hits_and_is_bounded(cuda):
    cache = F.get_plan_cache()
    assert cache is cuda.fft().cache
    cache.clear()
    before = cache.info()
    x = ember.asarray(complex_sample((4, 1000), "complex64"))
    F.fft(x)
    F.fft(x)
    F.ifft(x)  # the same plan: cuFFT's direction is an argument of the call
    info = cache.info()
    assert info["misses"] == before["misses"] + 1 and info["hits"] >= before["hits"] + 2
    assert info["size"] == 1 and info["plans"][0][:3] == ("c2c", "single", (1000,))
    saved = cache.max_size
    try:
        cache.max_size = 2
        for n in (100, 200, 300):
            F.fft(ember.asarray(complex_sample(n, "complex128")))
        assert cache.size == 2
        cache.max_size = 0  # nothing kept: each call makes and destroys its plan
        y = F.fft(x)
        assert cache.size == 0
        check(y, np.fft.fft(wide(x.to_numpy())), "complex64", 1000)
        F.fft(x)  # the recipe's plan was destroyed: made again
    finally:
        cache.max_size = saved
    with ember.config.override(fft="ember"):
        misses = cache.misses
        F.fft(x)
        assert cache.misses == misses  # Ember's kernels: no plan


@pytest.mark.parametrize("n", [1 << 20, 3 * (1 << 18), 1000003, 4096 * 7])
def test_large_lengths(engine, n):
    h = complex_sample((2, n), "complex64")
    check(F.fft(ember.asarray(h)), np.fft.fft(wide(h)), "complex64", n)


def test_large_real_and_multidimensional(engine):
    r = real_sample((64, 4096), "float32")
    check(F.rfft(ember.asarray(r)), np.fft.rfft(wide(r)), "complex64", 4096)
    s = np.fft.rfft(wide(r)).astype(np.complex64)
    check(F.irfft(ember.asarray(s)), np.fft.irfft(wide(s)), "float32", 4096)
    h = complex_sample((64, 64, 64), "complex64")
    check(F.fftn(ember.asarray(h)), np.fft.fftn(wide(h)), "complex64", 64)
    d = complex_sample((3, 128, 96), "complex128")
    check(F.ifftn(ember.asarray(d), axes=(0, 2)), np.fft.ifftn(wide(d), axes=(0, 2)),
          "complex128", 128)  # fmt: skip


def test_torch_and_cupy_arrays_are_taken_without_a_copy(cuda):
    torch = pytest.importorskip("torch")
    # (torch has no complex arange on CUDA)
    t = torch.arange(64, dtype=torch.float32, device="cuda").to(torch.complex64)
    got = F.fft(ember.asarray(t))
    check(got, np.fft.fft(np.arange(64, dtype=np.complex128)), "complex64", 64)


def test_real_transforms_along_middle_axes_and_unaligned_views(engine):
    """Real sides cuFFT cannot take as they are (a batch loop stepping one float, a view
    starting one float in): declined to Ember's kernels or copied, never an error."""
    for shape in [(3, 2, 2), (2, 1, 3), (5, 3, 4)]:
        r = real_sample(shape, "float32")
        check(F.rfft(ember.asarray(r), axis=1), np.fft.rfft(wide(r), axis=1), "complex64", 4)
        c = np.fft.rfft(wide(r), axis=1).astype(np.complex64)
        got = F.irfft(ember.asarray(c), n=shape[1], axis=1)
        check(got, np.fft.irfft(wide(c), n=shape[1], axis=1), "float32", 4)
    r = real_sample((33,), "float32")
    x = ember.asarray(r)[1:]  # 4 bytes past an 8-byte boundary
    check(F.rfft(x), np.fft.rfft(wide(r[1:])), "complex64", 32)
    out = ember.zeros(34, ember.float32)[1:33]
    F.irfft(ember.asarray(np.fft.rfft(r[1:]).astype(np.complex64)), n=32, out=out)
    np.testing.assert_allclose(out.to_numpy(), r[1:], rtol=1e-4, atol=1e-5)
