"""Waiting for the device: idle and never-used streams, launch + sync, long kernels, asyncio.

* ``sync_never_used`` / ``sync_idle_stream`` / ``sync_device_idle``: a wait with nothing to
  wait for (the fast paths; target ≤ 0.2 µs).
* ``launch_sync_modes``: tiny kernel + wait, with each of Ember's wait policies (target: ≤
  the raw ``cuLaunchKernel`` + ``cuStreamSynchronize`` floor).
* ``long_kernel_sync``: a 10 ms kernel + wait: wall time (no slower than raw) and the CPU
  time the waiting process burns.
* ``asyncio_ticks``: a coroutine ticking every 1 ms while another awaits a 200 ms kernel:
  tick rate, gaps (jitter) and process CPU time, for each way of awaiting.
* ``asyncio_latency``: launch a tiny kernel and await it, back to back.
* ``asyncio_many``: 64 streams each running a 2 ms kernel, awaited together.

``--backend opencl`` runs Ember's side only (kernels take iteration counts there, calibrated
once).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from benchmarks.harness import Context, case, guarded, median, per_call_us
from benchmarks.impls import raw_floor
from ember import config
from ember.runtime import sync as _sync

SOURCES = {
    "cuda": r"""
extern "C" __global__ void spin(long long ns, int* out) {
    if (threadIdx.x != 0) return;
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while ((long long)(now - start) < ns);
    out[0] += 1;
}
extern "C" __global__ void tiny(float* y) { if (threadIdx.x == 1000) y[0] = 1.0f; }
""",
    "opencl": r"""
__kernel void spin(long n, __global int* out) {
    float x = 1.0f;
    for (long i = 0; i < n; i++) x = x * 0.999999f + 1.0f;
    out[0] += (x > -1.0f) ? 1 : -1;
}
__kernel void tiny(__global float* y) { if (get_global_id(0) == 1000) y[0] = 1.0f; }
""",
}


class Kernels:
    """Ember's ``spin`` (busy for a given time) and ``tiny`` kernels, on one stream."""

    def __init__(self, ctx: Context):
        be = ctx.backend
        src = SOURCES[be.dialect]
        self.stream = be.create_stream()
        self._spin = ember.RawKernel(src, "spin", backend=be.name)
        self._tiny = ember.RawKernel(src, "tiny", backend=be.name)
        self.out = ember.asarray(np.zeros(1, np.int32))
        self.y = ember.asarray(np.zeros(32, np.float32))
        self.per_second = 1e9  # CUDA: nanoseconds of %globaltimer
        self.tiny()
        self.spin(0.0)
        self.stream.synchronize()
        if be.dialect == "opencl":
            n = 20_000_000
            t = time.perf_counter()
            self._spin[1, 1](n, self.out, stream=self.stream)
            self.stream.synchronize()
            self.per_second = n / (time.perf_counter() - t)

    def spin(self, seconds: float) -> None:
        self._spin[1, 1](max(int(seconds * self.per_second), 1), self.out, stream=self.stream)

    def tiny(self) -> None:
        self._tiny[1, 32](self.y, stream=self.stream)


def kernels_for(ctx: Context) -> Kernels:
    return ctx.once("sync_kernels", lambda: Kernels(ctx))


class RawKernels:
    """The same kernels on the raw ``cuda.bindings`` floor (its own stream)."""

    def __init__(self, ctx: Context):
        self.raw = raw = raw_floor(ctx)
        self.cu = raw.cu
        self._spin = raw.function(SOURCES["cuda"], "spin")
        self._tiny = raw.function(SOURCES["cuda"], "tiny")
        out, y = raw.alloc(4), raw.alloc(128)
        self.cu.cuMemsetD8Async(out, 0, 4, raw.stream)
        self.tiny_params = raw.kernel_params(np.uint64(y))
        self._out = out
        self._spins: dict[int, int] = {}

    def spin(self, seconds: float) -> None:
        ns = int(seconds * 1e9)
        if ns not in self._spins:
            self._spins[ns] = self.raw.kernel_params(np.int64(ns), np.uint64(self._out))
        self.cu.cuLaunchKernel(self._spin, 1, 1, 1, 1, 1, 1, 0, self.raw.stream,
                               self._spins[ns], 0)  # fmt: skip

    def tiny(self) -> None:
        self.cu.cuLaunchKernel(self._tiny, 1, 1, 1, 32, 1, 1, 0, self.raw.stream,
                               self.tiny_params, 0)  # fmt: skip

    def sync(self) -> None:
        self.cu.cuStreamSynchronize(self.raw.stream)


def raw_kernels_for(ctx: Context) -> RawKernels | None:
    if ctx.backend.name != "cuda":
        return None
    return ctx.once("sync_raw_kernels", lambda: RawKernels(ctx))


# ------------------------------------------------------------------ nothing to wait for
def _timed(results: dict, impls: dict[str, Callable[[], Any]], ctx: Context, n: int) -> dict:
    for impl, fn in impls.items():
        guarded(results, impl, lambda f=fn: {"us": per_call_us(f, n, ctx.repeats)})
    return results


@case("sync_never_used", "us", "us/sync")
def sync_never_used(ctx: Context):
    """Synchronize a stream nothing was ever submitted to."""
    be = ctx.backend
    fresh = be.create_stream()
    ctx.cache.setdefault("keep", []).append(fresh)
    impls: dict[str, Callable[[], Any]] = {"ember": fresh.synchronize}
    raw = raw_kernels_for(ctx)
    if raw is not None:
        cu = raw.cu
        stream = cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)[1]
        impls["raw"] = lambda: cu.cuStreamSynchronize(stream)
    if "cupy" in ctx.peers:
        impls["cupy"] = ctx.peers["cupy"].cuda.Stream(non_blocking=True).synchronize
    if "torch" in ctx.peers:
        impls["torch"] = ctx.peers["torch"].cuda.Stream().synchronize
    return _timed({}, impls, ctx, ctx.iterations(20000))


@case("sync_idle_stream", "us", "us/sync")
def sync_idle_stream(ctx: Context):
    """Synchronize a stream whose last kernel is known to be complete."""
    k = kernels_for(ctx)
    k.tiny()
    k.stream.synchronize()
    impls: dict[str, Callable[[], Any]] = {
        "ember": k.stream.synchronize,
        "ember.query": k.stream.query,
    }
    raw = raw_kernels_for(ctx)
    if raw is not None:
        raw.tiny()
        raw.sync()
        impls["raw"] = raw.sync
        impls["raw-cuStreamQuery"] = lambda: raw.cu.cuStreamQuery(raw.raw.stream)
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            cp.zeros(1)
        s.synchronize()
        impls["cupy"] = s.synchronize
    if "torch" in ctx.peers:
        torch = ctx.peers["torch"]
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.zeros(1, device="cuda")
        s.synchronize()
        impls["torch"] = s.synchronize
    return _timed({}, impls, ctx, ctx.iterations(20000))


@case("sync_device_idle", "us", "us/sync")
def sync_device_idle(ctx: Context):
    """Device-wide synchronize with nothing running (ember.synchronize vs cuCtxSynchronize)."""
    kernels_for(ctx)  # a few streams exist
    ember.synchronize()
    impls: dict[str, Callable[[], Any]] = {"ember": ember.synchronize}
    raw = raw_kernels_for(ctx)
    if raw is not None:
        impls["raw"] = raw.cu.cuCtxSynchronize
    if "cupy" in ctx.peers:
        impls["cupy"] = ctx.peers["cupy"].cuda.Device().synchronize
    if "torch" in ctx.peers:
        impls["torch"] = ctx.peers["torch"].cuda.synchronize
    return _timed({}, impls, ctx, ctx.iterations(20000))


# ------------------------------------------------------------------ launch + wait
@case("launch_sync_modes", "us", "us/(launch+sync)")
def launch_sync_modes(ctx: Context):
    """Tiny kernel + wait with each wait policy; peers launch their cheapest op + sync."""
    k = kernels_for(ctx)
    s = k.stream

    def ember_with(**options):
        def both():
            k.tiny()
            s.synchronize(**options)

        return both

    def plain():
        with config.override(sync="plain"):
            k.tiny()
            s.synchronize()

    impls: dict[str, Callable[[], Any]] = {
        "ember": ember_with(),
        "ember[spin=False]": ember_with(spin=False),
        "ember[blocking=True]": ember_with(blocking=True),
        "ember[EMBER_SYNC=plain]": plain,
        "ember[device]": lambda: (k.tiny(), ember.synchronize()),
    }
    raw = raw_kernels_for(ctx)
    if raw is not None:
        impls["raw"] = lambda: (raw.tiny(), raw.sync())
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]
        kern = cp.RawKernel(SOURCES["cuda"], "tiny")
        y = cp.zeros(32, cp.float32)
        cs = cp.cuda.get_current_stream()
        impls["cupy"] = lambda: (kern((1,), (32,), (y,)), cs.synchronize())
    if "torch" in ctx.peers:
        torch = ctx.peers["torch"]
        t = torch.zeros(32, device="cuda")
        impls["torch"] = lambda: (t.add_(1), torch.cuda.synchronize())
    return _timed({}, impls, ctx, ctx.iterations(5000))


LONG_S = 0.010


@case("long_kernel_sync", "ms", "ms/(10 ms kernel+sync)")
def long_kernel_sync(ctx: Context):
    """A 10 ms kernel and a wait: wall time and CPU time of the waiting process per wait."""
    k = kernels_for(ctx)
    impls: dict[str, tuple[Callable, Callable]] = {
        "ember": (lambda: k.spin(LONG_S), k.stream.synchronize),
        "ember[blocking=True]": (
            lambda: k.spin(LONG_S),
            lambda: k.stream.synchronize(blocking=True),
        ),
        "ember[spin=False]": (lambda: k.spin(LONG_S), lambda: k.stream.synchronize(spin=False)),
    }
    raw = raw_kernels_for(ctx)
    if raw is not None:
        impls["raw"] = (lambda: raw.spin(LONG_S), raw.sync)
    results: dict[str, dict[str, float]] = {}
    n = 5 if ctx.quick else 20
    for impl, (launch, wait) in impls.items():
        guarded(results, impl, lambda launch=launch, wait=wait: _long_wait(launch, wait, n))
    return results


def _long_wait(launch: Callable, wait: Callable, n: int) -> dict[str, float]:
    launch()
    wait()
    walls, cpus = [], []
    for _ in range(n):
        c, t = time.process_time(), time.perf_counter()
        launch()
        wait()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    wall = median(walls)
    return {
        "ms": wall.map(lambda s: s * 1e3),
        "overshoot_us": wall.map(lambda s: (s - LONG_S) * 1e6),
        "cpu_ms": median(cpus).map(lambda s: s * 1e3),
    }


# ------------------------------------------------------------------ asyncio
KERNEL_S = 0.200
TICK_S = 0.001


async def _ticks_during(launch: Callable, wait: Callable) -> dict[str, float]:
    """Tick every TICK_S in one task while ``wait()`` awaits what ``launch()`` started."""
    ticks: list[float] = []
    running = True

    async def ticker():
        while running:
            ticks.append(time.perf_counter())
            await asyncio.sleep(TICK_S)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)  # steady state
    c0, t0 = time.process_time(), time.perf_counter()
    launch()
    await wait()
    t1, c1 = time.perf_counter(), time.process_time()
    running = False
    await task
    during = np.array([t for t in ticks if t0 <= t <= t1])
    gaps = np.diff(during) * 1e3 if len(during) > 1 else np.array([(t1 - t0) * 1e3])
    return {
        "wait_ms": (t1 - t0) * 1e3,
        "ticks_per_s": len(during) / (t1 - t0),
        "mean_gap_ms": float(gaps.mean()),
        "p99_gap_ms": float(np.percentile(gaps, 99)),
        "max_gap_ms": float(gaps.max()),
        "jitter_ms": float(gaps.std()),
        "cpu_ms": (c1 - c0) * 1e3,
        "cpu_share": (c1 - c0) / (t1 - t0),
    }


def _median_runs(make: Callable[[], dict[str, float]], repeats: int) -> dict[str, float]:
    runs = [make() for _ in range(repeats)]
    return {key: median(r[key] for r in runs) for key in runs[0]}


def _async_impls(ctx: Context, k: Kernels, seconds: float) -> dict[str, tuple]:
    """impl -> (launch, async wait, settings override) for awaiting a kernel."""

    async def await_stream():
        await k.stream

    def spin():
        k.spin(seconds)

    impls: dict[str, tuple] = {
        "ember": (spin, await_stream, {}),
        "ember[poll]": (spin, await_stream, {"async_wait": "poll"}),
        "ember[synchronize_async]": (spin, ember.synchronize_async, {}),
    }
    raw = raw_kernels_for(ctx)
    if raw is not None:

        async def in_executor():
            await asyncio.get_running_loop().run_in_executor(None, raw.sync)

        async def blocking_call():
            raw.sync()  # blocks the event loop: the failure mode

        impls["raw"] = (lambda: raw.spin(seconds), in_executor, {})
        impls["raw[blocking call]"] = (lambda: raw.spin(seconds), blocking_call, {})
    return impls


@case("asyncio_ticks", "p99_gap_ms", "ms (p99 gap of 1 ms ticks)")
def asyncio_ticks(ctx: Context):
    """1 ms ticks of one coroutine while another awaits a 200 ms kernel; CPU of the process."""
    k = kernels_for(ctx)
    results: dict[str, dict[str, float]] = {}
    repeats = 2 if ctx.quick else 3

    async def nothing():
        await asyncio.sleep(KERNEL_S)

    impls = {"idle loop (no kernel)": (lambda: None, nothing, {})}
    impls.update(_async_impls(ctx, k, KERNEL_S))
    for impl, (launch, wait, options) in impls.items():

        def measure(launch=launch, wait=wait, options=options):
            with config.override(**options):
                return _median_runs(lambda: asyncio.run(_ticks_during(launch, wait)), repeats)

        guarded(results, impl, measure)
    return results


@case("asyncio_latency", "us", "us/(launch+await)")
def asyncio_latency(ctx: Context):
    """Launch a tiny kernel and await it, back to back, inside one event loop."""
    k = kernels_for(ctx)
    n = ctx.iterations(500)  # polling waits take ~1 ms each (epoll's resolution)

    async def sync_in_coroutine():
        k.stream.synchronize()

    impls = {
        name: (lambda: k.tiny(), wait, options)
        for name, (_, wait, options) in _async_impls(ctx, k, 0).items()
    }
    impls["ember[no spin before hand-off]"] = (lambda: k.tiny(), impls["ember"][1], {})
    impls["ember[synchronize() in coroutine]"] = (lambda: k.tiny(), sync_in_coroutine, {})
    raw = raw_kernels_for(ctx)
    if raw is not None:
        impls["raw"] = (raw.tiny, impls["raw"][1], {})
        impls["raw[blocking call]"] = (raw.tiny, impls["raw[blocking call]"][1], {})
    results: dict[str, dict[str, float]] = {}
    for impl, (launch, wait, options) in impls.items():
        spins = 0 if "no spin" in impl else _sync.ASYNC_SPINS

        def measure(launch=launch, wait=wait, options=options, spins=spins):
            saved, _sync.ASYNC_SPINS = _sync.ASYNC_SPINS, spins
            try:
                with config.override(**options):
                    return asyncio.run(_latency(launch, wait, n, ctx.repeats))
            finally:
                _sync.ASYNC_SPINS = saved

        guarded(results, impl, measure)
    return results


async def _latency(launch, wait, n: int, repeats: int) -> dict[str, float]:
    for _ in range(max(n // 10, 1)):
        launch()
        await wait()
    walls, cpus = [], []
    for _ in range(repeats):
        c, t = time.process_time(), time.perf_counter()
        for _ in range(n):
            launch()
            await wait()
        walls.append((time.perf_counter() - t) / n * 1e6)
        cpus.append((time.process_time() - c) / n * 1e6)
    return {"us": median(walls), "cpu_us": median(cpus)}


@case("asyncio_many", "ms", "ms (64 streams x 2 ms kernel, awaited together)")
def asyncio_many(ctx: Context):
    """64 streams each running a 2 ms kernel, awaited with asyncio.gather."""
    be = ctx.backend
    k = kernels_for(ctx)
    streams = ctx.once("many_streams", lambda: [be.create_stream() for _ in range(64)])
    outs = ctx.once("many_outs", lambda: [ember.asarray(np.zeros(1, np.int32)) for _ in streams])
    amount = max(int(0.002 * k.per_second), 1)

    async def run() -> dict[str, float]:
        c, t = time.process_time(), time.perf_counter()
        for s, o in zip(streams, outs, strict=True):
            k._spin[1, 1](amount, o, stream=s)
        await asyncio.gather(*streams)
        return {"ms": (time.perf_counter() - t) * 1e3, "cpu_ms": (time.process_time() - c) * 1e3}

    results: dict[str, dict[str, float]] = {}
    for impl, options in (("ember", {}), ("ember[poll]", {"async_wait": "poll"})):

        def measure(options=options):
            with config.override(**options):
                return _median_runs(lambda: asyncio.run(run()), ctx.repeats)

        guarded(results, impl, measure)

    def sync_each() -> dict[str, float]:
        c, t = time.process_time(), time.perf_counter()
        for s, o in zip(streams, outs, strict=True):
            k._spin[1, 1](amount, o, stream=s)
        ember.synchronize()
        return {"ms": (time.perf_counter() - t) * 1e3, "cpu_ms": (time.process_time() - c) * 1e3}

    guarded(results, "ember.synchronize()", lambda: _median_runs(sync_each, ctx.repeats))
    return results
