"""Device memory: the caching allocator, scoped caches, mixed sizes, pinned uploads.

* ``pool_alloc_free_1MiB``: allocate and free 1 MiB through Ember's pool and with
  ``EMBER_ALLOCATOR=driver`` (``cuMemAllocAsync`` per array), against the raw calls and the
  peers' caching allocators (target ≤ 0.8 µs).
* ``cached_loop_8MiB``: 1000 iterations each allocating an 8 MiB zeroed array, inside
  ``ember.cached`` and not: time per iteration and the peak memory held (target: exactly
  8 MiB); PyTorch's peak is ``max_memory_reserved``.
* ``mixed_sizes`` / ``mixed_fragmentation``: random sizes from 1 KiB to 64 MiB (log-uniform),
  32 live at a time: time per allocation, and peak device memory in use / peak requested and
  live bytes.  The device memory is sampled after every allocation in a second, untimed run
  (``cuMemGetInfo``: total - free, from the same baseline for every library), so memory a
  library gave back to the driver's pool but the driver still holds counts too;
  ``fragmentation_own`` is the library's own statistic (Ember's and PyTorch's peak reserved,
  CuPy's pool total).
* ``upload_64MiB``: host-to-device copies of 64 MiB: throughput, and how long the call takes
  to return while the stream is still busy with a 50 ms kernel.

``--backend opencl`` runs Ember's side only.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import ember
from benchmarks.harness import Context, case, guarded, interleaved_us, per_call_us
from benchmarks.impls import peer_empty_1mib, raw_floor
from benchmarks.sync import kernels_for, raw_kernels_for

MiB = 1 << 20


def _cuda(ctx: Context) -> bool:
    return ctx.backend.name == "cuda"


@contextlib.contextmanager
def driver_allocator(ctx: Context) -> Iterator[None]:
    """``EMBER_ALLOCATOR=driver`` for the block: every array straight from the driver."""
    pool = ember.memory.pool(ctx.backend)
    saved, pool.passthrough = pool.passthrough, True
    try:
        yield
    finally:
        pool.passthrough = saved


def _fresh(ctx: Context) -> None:
    """Start a measurement with empty caches everywhere."""
    ember.synchronize()
    ember.memory.empty_cache()
    if "torch" in ctx.peers:
        ctx.peers["torch"].cuda.synchronize()
        ctx.peers["torch"].cuda.empty_cache()
    if "cupy" in ctx.peers:
        ctx.peers["cupy"].cuda.Device().synchronize()
        ctx.peers["cupy"].get_default_memory_pool().free_all_blocks()


# ------------------------------------------------------------------ alloc + free
@case("pool_alloc_free_1MiB", "us", "us/(alloc+free)")
def pool_alloc_free(ctx: Context):
    """Allocate and free 1 MiB: Ember's pool vs the driver's stream-ordered pool vs peers."""
    be = ctx.backend
    sync = be.default_stream.synchronize
    pool = ember.memory.pool(be)
    f32 = ember.float32

    def driver_empty():
        with driver_allocator(ctx):
            return {"us": per_call_us(lambda: ember.empty(MiB // 4, f32), n, ctx.repeats, sync)}

    impls: dict[str, tuple[Callable, Any]] = {
        "ember.empty": (lambda: ember.empty(MiB // 4, f32), sync),
        "ember.memory.allocate": (lambda: ember.memory.allocate(be, MiB), sync),
        "Pool.allocate": (lambda: pool.allocate(MiB), sync),
    }
    if _cuda(ctx):
        raw = raw_floor(ctx)
        cu, stream = raw.cu, raw.stream
        impls["raw"] = (
            lambda: cu.cuMemFreeAsync(cu.cuMemAllocAsync(MiB, stream)[1], stream),
            raw.sync,
        )
        impls["raw-cuMemAlloc"] = (lambda: cu.cuMemFree(cu.cuMemAlloc(MiB)[1]), None)
    peer_empty_1mib(ctx, impls)
    results: dict[str, dict[str, float]] = {}
    n = ctx.iterations(20000)
    for impl, (fn, s) in impls.items():
        guarded(results, impl, lambda f=fn, s=s: {"us": per_call_us(f, n, ctx.repeats, s)})
    guarded(results, "ember.empty[EMBER_ALLOCATOR=driver]", driver_empty)
    return results


# ------------------------------------------------------------------ scoped loop
@case("cached_loop_8MiB", "us", "us/iteration (8 MiB zeros)")
def cached_loop(ctx: Context):
    """1000 iterations each making an 8 MiB zeroed array: time and peak memory held."""
    n = 100 if ctx.quick else 1000
    words = 2 * MiB  # float32: 8 MiB
    results: dict[str, dict[str, float]] = {}

    def ember_loop(cached: bool, driver: bool = False) -> dict[str, float]:
        _fresh(ctx)
        ember.memory.reset_peak()
        base = ember.memory.stats()["reserved"]
        cache = ember.AllocCache()
        scope = (lambda: ember.cached(cache)) if cached else contextlib.nullcontext
        with driver_allocator(ctx) if driver else contextlib.nullcontext():
            t = time.perf_counter()
            for _ in range(n):
                with scope():
                    x = ember.zeros(words, ember.float32)
                    del x
            ember.synchronize()
            dt = time.perf_counter() - t
        out = {"us": dt / n * 1e6}
        if not driver:
            out["peak_MiB"] = (ember.memory.stats()["peak_reserved"] - base) / MiB
        if cached:
            out["cache_MiB"] = cache.nbytes / MiB
            cache.free()
        return out

    guarded(results, "ember.cached", lambda: ember_loop(True))
    guarded(results, "ember (uncached pool)", lambda: ember_loop(False))
    guarded(results, "ember[EMBER_ALLOCATOR=driver]", lambda: ember_loop(False, driver=True))
    if "torch" in ctx.peers:
        guarded(results, "torch", lambda: _torch_loop(ctx, n, words))
    if "cupy" in ctx.peers:
        guarded(results, "cupy", lambda: _cupy_loop(ctx, n, words))
    return results


def _torch_loop(ctx: Context, n: int, words: int) -> dict[str, float]:
    torch = ctx.peers["torch"]
    _fresh(ctx)
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_reserved()
    t = time.perf_counter()
    for _ in range(n):
        x = torch.zeros(words, device="cuda")
        del x
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    return {"us": dt / n * 1e6, "peak_MiB": (torch.cuda.max_memory_reserved() - base) / MiB}


def _cupy_loop(ctx: Context, n: int, words: int) -> dict[str, float]:
    cp = ctx.peers["cupy"]
    _fresh(ctx)
    pool = cp.get_default_memory_pool()
    base = pool.total_bytes()
    t = time.perf_counter()
    for _ in range(n):
        x = cp.zeros(words, cp.float32)
        del x
    cp.cuda.Device().synchronize()
    dt = time.perf_counter() - t
    return {"us": dt / n * 1e6, "held_MiB": (pool.total_bytes() - base) / MiB}


# ------------------------------------------------------------------ mixed sizes
LIVE = 32


def _plan(steps: int) -> tuple[list[int], list[int], int]:
    """Sizes (log-uniform 1 KiB..64 MiB), which live array to drop after each allocation,
    and the peak of requested bytes alive at once."""
    rng = np.random.default_rng(2026)
    sizes = np.exp(rng.uniform(np.log(1 << 10), np.log(64 * MiB), steps)).astype(int).tolist()
    victims = rng.integers(0, 1 << 30, steps).tolist()
    live: list[int] = []
    peak = 0
    for size, victim in zip(sizes, victims, strict=True):
        live.append(size)
        peak = max(peak, sum(live))
        if len(live) > LIVE:
            live.pop(victim % len(live))
    return sizes, victims, peak


def _churn(alloc: Callable[[int], Any], sizes: list[int], victims: list[int]) -> float:
    """Run the plan with ``alloc``; seconds taken (device sync not included)."""
    live: list[Any] = []
    t = time.perf_counter()
    for size, victim in zip(sizes, victims, strict=True):
        live.append(alloc(size))
        if len(live) > LIVE:
            del live[victim % len(live)]
    dt = time.perf_counter() - t
    live.clear()
    return dt


def _device_used(ctx: Context) -> Callable[[], int] | None:
    """Bytes of device memory in use (``cuMemGetInfo``), or None off CUDA."""
    if not _cuda(ctx):
        return None
    from cuda.bindings import driver as cu

    def used() -> int:
        err, free, total = cu.cuMemGetInfo()
        return int(total) - int(free)

    return used


def _sampled_peak(ctx: Context, alloc, sizes, victims) -> int | None:
    """Peak device memory in use above the starting point while running the plan."""
    used = _device_used(ctx)
    if used is None:
        return None
    base = used()
    peak = [0]

    def sampled(n):
        a = alloc(n)
        peak[0] = max(peak[0], used() - base)
        return a

    _churn(sampled, sizes, victims)
    return peak[0]


def _with_device_peak(ctx: Context, row: dict, alloc, sizes, victims, peak_live) -> dict:
    """``row`` with ``fragmentation`` from device memory (the library's own statistic kept
    as ``fragmentation_own``)."""
    _fresh(ctx)
    peak = _sampled_peak(ctx, alloc, sizes, victims)
    if peak is not None:
        row["fragmentation_own"] = row["fragmentation"]
        row["fragmentation"] = peak / peak_live
        row["peak_device_MiB"] = peak / MiB
    return row


def _mixed(ctx: Context) -> dict[str, dict[str, float]]:
    steps = 300 if ctx.quick else 3000
    sizes, victims, peak_live = _plan(steps)
    u8 = ember.uint8
    results: dict[str, dict[str, float]] = {}

    def ember_run(driver: bool = False) -> dict[str, float]:
        _fresh(ctx)
        ember.memory.reset_peak()
        base = ember.memory.stats()["reserved"]
        mem_pool = _driver_pool(ctx) if driver else None
        with driver_allocator(ctx) if driver else contextlib.nullcontext():
            _churn(lambda n: ember.empty(n, u8), sizes[: steps // 10], victims[: steps // 10])
            ember.synchronize()
            if mem_pool is not None:
                mem_pool.reset()
            else:
                ember.memory.reset_peak()
            dt = _churn(lambda n: ember.empty(n, u8), sizes, victims)
            ember.synchronize()
        if mem_pool is not None:
            peak = mem_pool.peak()
        else:
            peak = ember.memory.stats()["peak_reserved"] - base
        row = _mixed_metrics(dt, steps, peak, peak_live)
        with driver_allocator(ctx) if driver else contextlib.nullcontext():
            return _with_device_peak(
                ctx, row, lambda n: ember.empty(n, u8), sizes, victims, peak_live
            )

    guarded(results, "ember", ember_run)
    if _cuda(ctx):
        guarded(results, "ember[EMBER_ALLOCATOR=driver]", lambda: ember_run(driver=True))
    if "torch" in ctx.peers:
        torch = ctx.peers["torch"]

        def torch_run() -> dict[str, float]:
            _fresh(ctx)
            base = torch.cuda.memory_reserved()
            alloc = lambda n: torch.empty(n, dtype=torch.uint8, device="cuda")  # noqa: E731
            _churn(alloc, sizes[: steps // 10], victims[: steps // 10])
            torch.cuda.reset_peak_memory_stats()
            dt = _churn(alloc, sizes, victims)
            torch.cuda.synchronize()
            row = _mixed_metrics(dt, steps, torch.cuda.max_memory_reserved() - base, peak_live)
            return _with_device_peak(ctx, row, alloc, sizes, victims, peak_live)

        guarded(results, "torch", torch_run)
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]

        def cupy_run() -> dict[str, float]:
            _fresh(ctx)
            pool = cp.get_default_memory_pool()
            alloc = lambda n: cp.empty(n, cp.uint8)  # noqa: E731
            dt = _churn(alloc, sizes, victims)
            peak = [0]

            def sampled(n):  # a second, untimed run: CuPy keeps no peak statistic
                a = alloc(n)
                peak[0] = max(peak[0], pool.total_bytes())
                return a

            _fresh(ctx)
            _churn(sampled, sizes, victims)
            row = _mixed_metrics(dt, steps, peak[0], peak_live)
            return _with_device_peak(ctx, row, alloc, sizes, victims, peak_live)

        guarded(results, "cupy", cupy_run)
    return results


def _mixed_metrics(seconds: float, steps: int, peak_reserved: int, peak_live: int) -> dict:
    return {
        "us": seconds / steps * 1e6,
        "fragmentation": peak_reserved / peak_live,
        "peak_reserved_MiB": peak_reserved / MiB,
        "peak_live_MiB": peak_live / MiB,
    }


class _DriverPool:
    """The device's default ``cuMemAllocAsync`` pool: reset and read its reserved peak."""

    def __init__(self, ctx: Context):
        from cuda.bindings import driver as cu

        self.cu = cu
        device = cu.cuDeviceGet(ctx.backend.device.index)[1]
        self.pool = cu.cuDeviceGetDefaultMemPool(device)[1]
        self.attr = cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH

    def reset(self) -> None:
        self.cu.cuMemPoolTrimTo(self.pool, 0)
        self.cu.cuMemPoolSetAttribute(self.pool, self.attr, self.cu.cuuint64_t(0))

    def peak(self) -> int:
        return int(self.cu.cuMemPoolGetAttribute(self.pool, self.attr)[1])


def _driver_pool(ctx: Context) -> _DriverPool:
    return _DriverPool(ctx)


@case("mixed_sizes", "us", "us/allocation (1 KiB-64 MiB, 32 live)")
def mixed_sizes(ctx: Context):
    """Random sizes 1 KiB..64 MiB, 32 alive at once: time per allocation (and free)."""
    return ctx.once("mixed", lambda: _mixed(ctx))


@case("mixed_fragmentation", "fragmentation", "peak device memory / peak live bytes")
def mixed_fragmentation(ctx: Context):
    """The same plan: peak device memory in use over the peak of requested bytes alive."""
    return ctx.once("mixed", lambda: _mixed(ctx))


# ------------------------------------------------------------------ uploads
UPLOAD = 64 * MiB
BUSY_S = 0.050


@case("upload_64MiB", "GB/s", "GB/s (host to device)", better="higher")
def upload(ctx: Context):
    """Host-to-device copies of 64 MiB; ``return_ms_busy``: how long the call takes to
    return when its stream still runs a 50 ms kernel."""
    be = ctx.backend
    k = kernels_for(ctx)
    host = np.random.default_rng(0).integers(0, 255, UPLOAD, dtype=np.uint8)
    stream = k.stream
    impls: dict[str, tuple[Callable, Callable, Callable | None]] = {
        "ember.asarray(stream=)": (
            lambda: ember.asarray(host, stream=stream),
            stream.synchronize,
            lambda: k.spin(BUSY_S),
        ),
        "ember.asarray()": (lambda: ember.asarray(host), ember.synchronize, None),
    }
    peer_host = host.copy()  # the peers' own array: see _transfer_impls
    raw = raw_kernels_for(ctx)
    if raw is not None:
        impls.update(_raw_uploads(ctx, raw, peer_host))
    if "torch" in ctx.peers:
        impls.update(_torch_uploads(ctx.peers["torch"], peer_host))
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]
        impls["cupy"] = (lambda: cp.asarray(peer_host), cp.cuda.Device().synchronize, None)
    results: dict[str, dict[str, float]] = {}
    n = 3 if ctx.quick else 10
    for impl, (copy, sync, busy) in impls.items():

        def measure(copy=copy, sync=sync, busy=busy):
            us = per_call_us(copy, n, ctx.repeats, sync)
            out = {"GB/s": us.map(lambda us: UPLOAD / us / 1e3)}  # bytes/us -> GB/s
            if busy is not None:
                sync()
                busy()
                t = time.perf_counter()
                copy()
                out["return_ms_busy"] = (time.perf_counter() - t) * 1e3
                sync()
            return out

        guarded(results, impl, measure)
    be.synchronize()
    return results


def _raw_uploads(ctx: Context, raw, host: np.ndarray) -> dict[str, tuple]:
    cu, stream = raw.cu, raw.raw.stream
    dst = raw.raw.alloc(UPLOAD)
    pinned = ctx.backend.alloc_host(UPLOAD)
    pinned[:] = host
    ctx.cache.setdefault("keep", []).append(pinned)

    def from_pinned():
        cu.cuMemcpyHtoDAsync(dst, pinned.ctypes.data, UPLOAD, stream)

    def from_pageable():
        cu.cuMemcpyHtoDAsync(dst, host.ctypes.data, UPLOAD, stream)

    busy = lambda: raw.spin(BUSY_S)  # noqa: E731
    return {
        "raw": (from_pinned, raw.sync, busy),
        "raw (pageable)": (from_pageable, raw.sync, busy),
    }


def _torch_uploads(torch, host: np.ndarray) -> dict[str, tuple]:
    src = torch.from_numpy(host)
    pinned = src.pin_memory()
    s = torch.cuda.Stream()

    def busy():
        with torch.cuda.stream(s):
            torch.cuda._sleep(int(BUSY_S * 2e9))  # cycles: about 50 ms at ~2 GHz

    def copy(t):
        def run():
            with torch.cuda.stream(s):
                return t.to("cuda", non_blocking=True)

        return run

    return {
        "torch (pageable, non_blocking)": (copy(src), s.synchronize, busy),
        "torch (pinned, non_blocking)": (copy(pinned), s.synchronize, busy),
    }


# ------------------------------------------------------------------ host <-> device by size
TRANSFER_MIB = (1, 16, 64, 256, 1024)


def _transfer_impls(ctx: Context, nbytes: int, upload: bool) -> dict[str, tuple[Callable, Any]]:
    """impl -> (copy, sync) for one direction.  ``raw`` is the driver's own copy of a
    pageable NumPy array (what code on the bindings does), ``raw (pinned)`` the copy
    engine's limit."""
    host = ctx.once(
        f"host_{nbytes}", lambda: np.random.default_rng(1).integers(0, 255, nbytes, dtype=np.uint8)
    )
    # The peers copy an array of their own: Ember page-locks an array it uploads again
    # (runtime/hostcache.py), which would speed up their copies of the same memory too.
    peer_host = host.copy()
    dev = ember.asarray(host)
    keep = ctx.cache.setdefault("keep_transfer", [])
    keep.append(dev)
    stream = ember.Stream()
    impls: dict[str, tuple[Callable, Any]] = {}
    if upload:
        impls["ember.asarray()"] = (lambda: ember.asarray(host), None)
        impls["ember.asarray(stream=)"] = (
            lambda: ember.asarray(host, stream=stream),
            stream.synchronize,
        )
    else:
        impls["ember.to_numpy()"] = (dev.to_numpy, None)
    if _cuda(ctx):
        impls.update(_raw_transfers(ctx, peer_host, nbytes, upload, keep))
    if "torch" in ctx.peers:
        torch = ctx.peers["torch"]
        th = torch.from_numpy(peer_host)
        if upload:
            pinned = th.pin_memory()
            keep.append(pinned)
            impls["torch (pageable)"] = (lambda: th.to("cuda"), torch.cuda.synchronize)
            impls["torch (pinned, non_blocking)"] = (
                lambda: pinned.to("cuda", non_blocking=True), torch.cuda.synchronize,
            )  # fmt: skip
        else:
            td = th.to("cuda")
            keep.append(td)
            impls["torch .cpu()"] = (td.cpu, None)
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]
        if upload:
            impls["cupy"] = (lambda: cp.asarray(peer_host), cp.cuda.Device().synchronize)
        else:
            cd = cp.asarray(peer_host)
            keep.append(cd)
            impls["cupy.asnumpy"] = (lambda: cp.asnumpy(cd), None)
    return impls


def _raw_transfers(ctx: Context, host, nbytes: int, upload: bool, keep: list) -> dict:
    raw = raw_floor(ctx)
    cu, s = raw.cu, raw.stream
    dst = raw.alloc(nbytes)
    keep.append(_Freed(raw, dst))
    pinned = ctx.backend.alloc_host(nbytes)
    pinned[:] = host
    keep.append(pinned)
    if upload:

        def h2d(src):
            return lambda: cu.cuMemcpyHtoDAsync(dst, src.ctypes.data, nbytes, s)

        return {"raw": (h2d(host), raw.sync), "raw (pinned)": (h2d(pinned), raw.sync)}
    cu.cuMemcpyHtoD(dst, host.ctypes.data, nbytes)

    def fresh():
        out = np.empty(nbytes, np.uint8)
        cu.cuMemcpyDtoHAsync(out.ctypes.data, dst, nbytes, s)
        raw.sync()
        return out

    return {
        "raw": (fresh, None),
        "raw (pinned)": (
            lambda: cu.cuMemcpyDtoHAsync(pinned.ctypes.data, dst, nbytes, s),
            raw.sync,
        ),
    }


class _Freed:
    """Frees a raw device allocation when the benchmark's cache is dropped."""

    def __init__(self, raw, ptr):
        self.raw, self.ptr = raw, ptr

    def __del__(self):
        try:
            self.raw.free(self.ptr)
        except Exception:
            pass


def _transfer_case(ctx: Context, mib: int, upload: bool) -> dict[str, dict[str, Any]]:
    if ctx.quick and mib > 64:
        return {}
    nbytes = mib * MiB
    impls = _transfer_impls(ctx, nbytes, upload)
    n = max(1, min(20, 64 // mib))
    return _gbps_case(ctx, impls, nbytes, n, 3 if ctx.quick else 5, f"host_{nbytes}")


def _gbps_case(ctx: Context, impls: dict, nbytes: int, n: int, repeats: int, kept: str) -> dict:
    """The interleaved copies of ``impls`` in GB/s; then what they kept (the cache entries
    ``keep_transfer`` and ``kept``) is dropped and every cache emptied."""
    measured = interleaved_us(impls, n, repeats)
    ctx.cache.pop("keep_transfer", None)
    ctx.cache.pop(kept, None)
    _fresh(ctx)
    return {
        impl: {"GB/s": v.map(lambda us: nbytes / us / 1e3)}
        if not isinstance(v, str)
        else {"error": v}
        for impl, v in measured.items()
    }


def _once_each_impls(ctx: Context, nbytes: int, upload: bool, calls: int) -> dict:
    """impl -> (copy, sync) where every call copies memory no call copied before: uploads of
    a new array each time (none uploaded twice, so Ember pins none), downloads whose results
    are all kept (so none is reused).  What a first copy costs."""
    rng = np.random.default_rng(2)
    pattern = rng.integers(0, 255, nbytes, dtype=np.uint8)
    src = ctx.once(f"src_{nbytes}", lambda: ember.asarray(pattern))
    keep = ctx.cache.setdefault("keep_transfer", [])

    def arrays():
        return iter([pattern + np.uint8(i) for i in range(calls)])

    impls: dict[str, tuple[Callable, Any]] = {}
    if upload:
        mine = arrays()
        impls["ember.asarray()"] = (lambda: ember.asarray(next(mine)), None)
    else:
        impls["ember.to_numpy()"] = (lambda: keep.append(src.to_numpy()), None)
    if _cuda(ctx):
        raw = raw_floor(ctx)
        cu, s, dst = raw.cu, raw.stream, raw.alloc(nbytes)
        keep.append(_Freed(raw, dst))
        if upload:
            theirs = arrays()
            impls["raw"] = (
                lambda: cu.cuMemcpyHtoDAsync(dst, next(theirs).ctypes.data, nbytes, s),
                raw.sync,
            )
        else:
            cu.cuMemcpyHtoD(dst, pattern.ctypes.data, nbytes)

            def fresh():
                out = np.empty(nbytes, np.uint8)
                cu.cuMemcpyDtoHAsync(out.ctypes.data, dst, nbytes, s)
                raw.sync()
                keep.append(out)

            impls["raw"] = (fresh, None)
    if "torch" in ctx.peers:
        torch = ctx.peers["torch"]
        if upload:
            torch_src = arrays()
            impls["torch (pageable)"] = (
                lambda: torch.from_numpy(next(torch_src)).to("cuda"),
                torch.cuda.synchronize,
            )
        else:
            td = torch.from_numpy(pattern).to("cuda")
            impls["torch .cpu()"] = (lambda: keep.append(td.cpu()), None)
    return impls


@case("h2d_16MiB_once_each", "GB/s", "GB/s", better="higher")
def h2d_once_each(ctx: Context):
    """Host to device copy of 16 MiB, a new NumPy array every call (impls interleaved)."""
    return _once_each_case(ctx, True)


@case("d2h_16MiB_kept", "GB/s", "GB/s", better="higher")
def d2h_kept(ctx: Context):
    """Device to host copy of 16 MiB into a new array every call, every result kept alive."""
    return _once_each_case(ctx, False)


def _once_each_case(ctx: Context, upload: bool) -> dict[str, dict[str, Any]]:
    nbytes, n, repeats = 16 * MiB, 4, 3 if ctx.quick else 5
    impls = _once_each_impls(ctx, nbytes, upload, max(n // 10, 1) + n * repeats)
    return _gbps_case(ctx, impls, nbytes, n, repeats, f"src_{nbytes}")


def _register_transfers() -> None:
    for mib in TRANSFER_MIB:
        for upload, word in ((True, "h2d"), (False, "d2h")):

            def run(ctx: Context, mib=mib, upload=upload):
                return _transfer_case(ctx, mib, upload)

            run.__doc__ = (
                f"{'Host to device' if upload else 'Device to host'} copy of {mib} MiB of "
                f"pageable NumPy memory (GB/s; impls interleaved)"
            )
            run.__module__ = __name__
            case(f"{word}_{mib}MiB", "GB/s", "GB/s", better="higher")(run)


_register_transfers()
