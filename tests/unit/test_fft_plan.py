"""Host side of ember.fft, no device: the planner (factoring, passes, twiddle and chirp
tables, checked by running the plan's Stockham passes in NumPy), and the cuFFT binding's
plan cache on a fake library (it must import and fail cleanly without a GPU)."""

from __future__ import annotations

import ctypes
import math
from types import SimpleNamespace

import numpy as np
import pytest

from ember.array.fft import kernels as k
from ember.array.fft import plan as planning
from ember.backends.cuda import cufft
from ember.backends.cuda.vendor import VendorUnavailable
from ember.errors import DriverError

GPU = planning.Geometry(cap=2048, block=256, single=2048, rmax=256)
SMALL = planning.Geometry(cap=2048, block=256, single=16, rmax=8)


def test_factors_split_and_stages():
    assert planning.factors(2**5 * 3 * 49) == [2] * 5 + [3, 7, 7]
    assert planning.factors(22) is None and planning.factors(1) == []
    assert planning.split(1 << 24, 256) == [256, 256, 256]
    assert planning.split(1 << 20, 256) == [128, 128, 64]
    for n in (2, 12, 1000, 2**13, 7**5, 6000, 5**7, 3 * 5 * 7 * 2**10):
        parts = planning.split(n, 64)
        assert math.prod(parts) == n and max(parts) <= 64
        assert len(parts) <= 1 + math.ceil(math.log(n, 64))
    for r in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3, 60, 343, 1000):
        st = planning.stages(r)
        assert math.prod(st) == r and set(st) <= set(k.RADICES)
    assert planning.stages(256) == [8, 8, 4] and planning.stages(16) == [4, 4]
    assert planning.pack([8, 4, 2]) == 8 | 4 << 4 | 2 << 8


def _twiddle(p: planning.Plan, ps: planning.Pass, e: np.ndarray) -> np.ndarray:
    """What the kernel reads: ``W_L^e`` as the product of the coarse and fine entries."""
    q = 1 << ps.gq
    return p.table[ps.gc + (e >> ps.gq)] * p.table[ps.gf + (e & (q - 1))]


def _run_passes(p: planning.Plan, x: np.ndarray, length: int) -> np.ndarray:
    """The plan's passes in NumPy, indexed as the kernel indexes (each block DFT by NumPy)."""
    for ps in p.passes:
        m = length // ps.r
        j = np.arange(m)[:, None]
        r = np.arange(ps.r)[None, :]
        v = x[j + r * m]
        if ps.ns > 1:
            v = v * _twiddle(p, ps, r * (j % ps.ns))
        v = np.fft.fft(v, axis=1)
        y = np.empty_like(x)
        jk = j % ps.ns
        y[(j - jk) * ps.r + jk + r * ps.ns] = v
        x = y
    return x


@pytest.mark.parametrize("g", [GPU, SMALL], ids=["wide", "small"])
def test_plans_compute_the_dft(g):
    rng = np.random.default_rng(0)
    for n in (1, 2, 8, 60, 64, 343, 4096, 1 << 14, 3 * 5 * 7 * 64, 11, 97, 1009):
        x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        p = planning.plan(n, g)
        if not p.bluestein:
            got = _run_passes(p, x, n)
        else:  # Bluestein as the engine chains it: premultiply, FFT, multiply, FFT, post
            w, wc, kern = (p.table[o : o + p.m] for o in (p.w, p.wconj, p.kernel))
            a = np.zeros(p.m, complex)
            a[:n] = x
            a = _run_passes(p, a * w, p.m)
            a = _run_passes(p, a.conj() * kern, p.m)
            got = (a * wc).conj()[:n]
        np.testing.assert_allclose(got, np.fft.fft(x), rtol=0, atol=1e-11 * np.sqrt(n) * 4)
        for ps in p.passes:
            assert ps.r <= max(g.single if len(p.passes) == 1 else g.rmax, 1)


def test_bluestein_length_is_a_power_of_two():
    for n in (3 * 11, 13, 1000003):
        if planning.factors(n) is None:
            p = planning.plan(n, GPU)
            assert p.bluestein and p.m >= 2 * n - 1 and p.m & (p.m - 1) == 0 and p.m < 4 * n


# ----------------------------------------------------------------------- cuFFT binding
def test_cufft_is_unavailable_cleanly_without_the_library():
    try:
        cufft._Api()
    except VendorUnavailable as exc:
        assert "cufft" in str(exc) and "nvidia-cufft" in str(exc)
    else:  # pragma: no cover - a machine with the wheel
        pytest.skip("libcufft is installed here")


class _FakeApi:
    """cuFFT's entry points, recording what they were asked."""

    def __init__(self, fail_make: int = 0, work: int = 0):
        self.next, self.destroyed, self.fail_make, self.calls = 1, [], fail_make, []
        self.work, self.bound = work, []  # work-area bytes plans need; set_stream/work calls

        def exec_(*args):
            self.calls.append(args)
            return 0

        self.exec = dict.fromkeys(cufft.TYPES.values(), exec_)

    def create(self, ref):
        ref._obj.value = self.next
        self.next += 1
        return 0

    def destroy(self, handle):
        self.destroyed.append(handle)
        return 0

    def auto_allocation(self, handle, on):
        return 0

    def make(self, handle, rank, n, inembed, istride, idist, onembed, ostride, odist, t, batch,
             size):  # fmt: skip
        size._obj.value = self.work
        return self.fail_make

    def stream(self, handle, stream):
        self.bound.append(("stream", handle, stream))
        return 0

    def work_area(self, handle, ptr):
        self.bound.append(("work", handle, ptr))
        return 0


def _fft(api) -> cufft.Fft:
    lib = object.__new__(cufft.Fft)
    lib.api = api
    lib.backend = SimpleNamespace(
        context=SimpleNamespace(ensure_current=lambda: None, alive=True),
        native_pointer=lambda b, o=0: getattr(b, "handle", 0) + o,
    )
    lib.cache = cufft.PlanCache(lib, max_size=2)
    import threading

    lib._lock = threading.Lock()
    return lib


def _key(n):
    return ("c2c", "single", (n,), (n,), 1, n, (n,), 1, n, 4)


def test_plan_cache_is_bounded_and_counts():
    api = _FakeApi()
    lib = _fft(api)
    a = lib.plan(*_key(8))
    assert lib.plan(*_key(8)) is a and (lib.cache.hits, lib.cache.misses) == (1, 1)
    b = lib.plan(*_key(16))
    lib.plan(*_key(8))  # 8 is now the most recent
    lib.plan(*_key(32))  # evicts 16
    assert api.destroyed == [2] and b.handle is None and len(lib.cache) == 2
    info = lib.cache.info()
    assert info["size"] == 2 and info["misses"] == 3 and info["hits"] == 2
    assert [key[2] for key in info["plans"]] == [(8,), (32,)]
    lib.cache.max_size = 1
    assert len(lib.cache) == 1 and "1/1 plans" in repr(lib.cache)
    lib.cache.clear()
    assert len(lib.cache) == 0 and len(api.destroyed) == 3
    with pytest.raises(ValueError, match="max_size"):
        lib.cache.max_size = -1


def test_uncached_plans_are_destroyed_after_their_call():
    api = _FakeApi()
    lib = _fft(api)
    lib.cache.max_size = 0
    p = lib.plan(*_key(8))
    stream = SimpleNamespace(handle=7, submitted=0)
    lib.execute(p, 100, 200, True, stream)
    assert api.calls == [(1, 100, 200, cufft.INVERSE)]
    assert api.destroyed == [1] and stream.submitted == 1 and len(lib.cache) == 0


def test_cufft_errors_name_the_status():
    lib = _fft(_FakeApi(fail_make=8))
    with pytest.raises(DriverError, match="CUFFT_INVALID_SIZE"):
        lib.plan(*_key(8))
    assert lib.api.destroyed == [1]  # the half-made plan was destroyed
    assert ctypes.sizeof(cufft.LL) == 8


def test_repeated_runs_set_stream_and_work_area_only_when_they_change(monkeypatch):
    """The hit path (Fft.run) binds a plan's stream and work area once, and again when
    the stream or the work block's address changes; every call executes, and counts as a
    cache hit like Fft.plan's."""
    blocks = iter([0x1000, 0x1000, 0x1000, 0x2000, 0x2000, 0x1000, 0x1000])
    monkeypatch.setattr(
        cufft, "allocate", lambda be, n, stream: SimpleNamespace(handle=next(blocks))
    )
    api = _FakeApi(work=256)
    lib = _fft(api)
    s1, s2 = SimpleNamespace(handle=7, submitted=0), SimpleNamespace(handle=9, submitted=0)
    for stream in (s1, s1, s2, s2, s2, s1):
        lib.run(_key(8), 100, 200, False, stream)
    assert api.bound == [
        ("stream", 1, 7), ("work", 1, 0x1000),
        ("stream", 1, 9), ("work", 1, 0x2000),
        ("stream", 1, 7), ("work", 1, 0x1000),
    ]  # fmt: skip
    assert api.calls == [(1, 100, 200, cufft.FORWARD)] * 6
    assert (s1.submitted, s2.submitted) == (3, 3)
    assert (lib.cache.hits, lib.cache.misses) == (5, 1)
    p = lib.plan(*_key(8))
    lib.execute(p, 1, 2, True, s1)  # execute() shares the memory of what was set
    assert api.bound[-1] == ("work", 1, 0x1000) and len(api.bound) == 6


def test_a_failed_run_raises_and_counts_nothing(monkeypatch):
    api = _FakeApi()
    lib = _fft(api)
    api.exec = dict.fromkeys(cufft.TYPES.values(), lambda *args: 6)
    lib.cache.get(_key(8)).run = api.exec[0x29]
    stream = SimpleNamespace(handle=7, submitted=0)
    with pytest.raises(DriverError, match="CUFFT_EXEC_FAILED"):
        lib.run(_key(8), 1, 2, False, stream)
    assert stream.submitted == 0
