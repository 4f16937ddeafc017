"""The native CPU backend against PoCL (Ember's OpenCL backend on the PoCL CPU device) and
NumPy, in the same run: ``python -m benchmarks --backend cpu --only cpu``.

Kernels (milliseconds per launch, launch + synchronize, medians):

* ``cpu_axpy``: ``y = a * x + y`` on 2**24 float32 (one element per work-item, blocks of
  256); NumPy: ``np.multiply(x, a, out=t); np.add(t, y, out=y)``.  ``gbs``: the three
  arrays' bytes (x and y read, y written) per second.  Ember's kernel runs at the
  machine's memory bandwidth (a 2-core Zen 1 VM: 28-30 GB/s, as fast as a hand-written C
  loop over ``restrict`` pointers), so its ratio to PoCL, which runs below that bandwidth,
  follows the host: ~3x on that VM; the issue's prototype measured 3.5-4.0 ms against
  PoCL's 13-17 on a Zen 4.  The result files name the CPU (``Target``).
* ``cpu_block_reduction``: 65,536 blocks of 256 work-items, each summing its 256 elements
  in shared memory with a tree of barriers; NumPy: ``x.reshape(-1, 256).sum(1)``.
* ``cpu_matmul``: 512 x 512 float32, 16 x 16 tiles in shared memory; NumPy: ``a @ b``
  (its BLAS: not the same algorithm, a ceiling).
* ``cpu_compile``: seconds from the first launch of a new kernel to its end (typing,
  code generation, the C compiler or PoCL's build, loading; PoCL compiles its work-group
  code at that launch), each kernel renamed so that no cache answers; ``compiler_s``: the
  C compiler's (zig cc) or PoCL's build call alone; ``compiler_cpu_s``: the CPU time of the
  compiler processes (zig's), which a busy machine inflates less than wall time.
* ``cpu_array_*``: Ember's array library (``x + y``, ``2 * x + y``, ``ember.sin``,
  ``x.sum()``) on 2**24 float32, against NumPy.

Each row's ``ember`` entry carries ``x_pocl`` and ``x_numpy`` (how many times faster
Ember's cpu backend is: time ratios) and ``load`` (the 1-minute load average when the case
started: this is a shared machine).
"""

from __future__ import annotations

import os
import time
import types

import numpy as np

import ember
from benchmarks.harness import Context, Median, case, guarded, median, per_call_us
from ember import config

N = 1 << 24
BLOCK = 256
TILE = 16
M = 512


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@ember.kernel
def block_reduce(x, out):
    buf = ember.shared(BLOCK, ember.float32)
    t = ember.thread_idx.x
    buf[t] = x[ember.global_id()]
    ember.barrier()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            buf[t] += buf[t + step]
        ember.barrier()
        step //= 2
    if t == 0:
        out[ember.block_idx.x] = buf[0]


@ember.kernel
def matmul(a, b, c):
    ta = ember.shared((TILE, TILE), ember.float32)
    tb = ember.shared((TILE, TILE), ember.float32)
    tx, ty = ember.thread_idx.x, ember.thread_idx.y
    row = ember.block_idx.y * TILE + ty
    col = ember.block_idx.x * TILE + tx
    acc = ember.float32(0)
    for t in range(0, a.shape[1], TILE):
        ta[ty, tx] = a[row, t + tx]
        tb[ty, tx] = b[t + ty, col]
        ember.barrier()
        for kk in range(TILE):
            acc += ta[ty, kk] * tb[kk, tx]
        ember.barrier()
    c[row, col] = acc


def _backends() -> dict:
    """``{"ember": cpu backend, "pocl": OpenCL backend}``, those that are here."""
    from ember.runtime import backend as registry

    found = {}
    for impl, name in (("ember", "cpu"), ("pocl", "opencl")):
        try:
            found[impl] = registry.get(name)
        except ember.EmberError:
            pass
    return found


def _ms(ctx: Context, fn, sync, n: int) -> dict:
    return {"ms": per_call_us(fn, ctx.iterations(n), ctx.repeats, sync).map(lambda us: us / 1e3)}


def _kernels(ctx: Context, make, numpy_fn, n: int) -> dict:
    """Time ``make(backend)``'s launch on each backend, and ``numpy_fn``; add the ratios."""
    from ember.runtime import backend as registry

    results: dict[str, dict] = {}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for impl, be in _backends().items():
        previous = registry.current().name
        registry.use(be.name)
        try:
            launch = make()
            guarded(results, impl, lambda launch=launch, be=be: _ms(ctx, launch, be.synchronize, n))
        finally:
            registry.use(previous)
    if numpy_fn is not None:
        guarded(results, "numpy", lambda: _ms(ctx, numpy_fn, None, n))
    mine = results.get("ember", {}).get("ms")
    if mine:
        for other in ("pocl", "numpy"):
            theirs = results.get(other, {}).get("ms")
            if theirs:
                results["ember"][f"x_{other}"] = theirs / mine
        results["ember"]["load"] = load
    return results


@case("cpu_axpy", "ms", "ms")
def cpu_axpy(ctx: Context):
    """y = a*x + y, 2**24 float32: cpu backend vs PoCL vs NumPy (out=)."""
    x = np.random.default_rng(0).random(N, np.float32)

    def make():
        dx, dy = ember.asarray(x), ember.zeros(N, ember.float32)
        a = np.float32(2)
        return lambda: axpy[N // BLOCK, BLOCK](a, dx, dy)

    y, t = np.zeros_like(x), np.empty_like(x)

    def numpy_axpy():
        np.multiply(x, np.float32(2), out=t)
        np.add(t, y, out=y)

    results = _kernels(ctx, make, numpy_axpy, 20)
    for metrics in results.values():  # what the memory moves: axpy is bandwidth-bound
        if isinstance(metrics.get("ms"), Median):
            metrics["gbs"] = metrics["ms"].map(lambda ms: 3 * x.nbytes / ms / 1e6)
    return results


@case("cpu_block_reduction", "ms", "ms")
def cpu_block_reduction(ctx: Context):
    """65,536 x 256 shared-memory tree reductions with barriers vs PoCL vs NumPy."""
    x = np.random.default_rng(1).random(N, np.float32)

    def make():
        dx, out = ember.asarray(x), ember.zeros(N // BLOCK, ember.float32)
        return lambda: block_reduce[N // BLOCK, BLOCK](dx, out)

    return _kernels(ctx, make, lambda: x.reshape(-1, BLOCK).sum(1), 10)


@case("cpu_matmul", "ms", "ms")
def cpu_matmul(ctx: Context):
    """512x512 float32, 16x16 shared-memory tiles vs PoCL vs NumPy's BLAS."""
    rng = np.random.default_rng(2)
    a, b = rng.random((M, M), np.float32), rng.random((M, M), np.float32)

    def make():
        da, db, dc = ember.asarray(a), ember.asarray(b), ember.zeros((M, M), ember.float32)
        return lambda: matmul[(M // TILE, M // TILE), (TILE, TILE)](da, db, dc)

    return _kernels(ctx, make, lambda: a @ b, 10)


@case("cpu_compile", "s", "s per kernel")
def cpu_compile(ctx: Context):
    """First launch of a new kernel: compile + load + run (PoCL builds its work-group code
    at the first launch), caches defeated; cpu backend vs PoCL."""
    from ember.runtime import backend as registry

    results: dict[str, dict] = {}
    for impl, be in _backends().items():
        previous = registry.current().name
        registry.use(be.name)
        try:
            guarded(results, impl, lambda be=be: _compile_figures(ctx, be))
        finally:
            registry.use(previous)
    mine, theirs = results.get("ember", {}).get("s"), results.get("pocl", {}).get("s")
    if mine and theirs:
        results["ember"]["x_pocl"] = theirs / mine
    return results


def _compile_figures(ctx: Context, be) -> dict:
    first, compiler, cpu = _first_launches(ctx, be)
    out = {"s": median(first), "compiler_s": median(compiler)}
    if any(cpu):  # the compiler's own processes (zig cc): CPU time, which a busy machine
        out["compiler_cpu_s"] = median(cpu)  # does not inflate the way it does wall time
    return out


def _children_cpu() -> float:
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _first_launches(ctx: Context, be) -> tuple[list[float], list[float], list[float]]:
    """Seconds of the first launch (and wait) of new copies of the three kernels: each
    copy has its own name, so its source is new to every cache (Ember's, zig's, PoCL's)."""
    f32 = ember.zeros(TILE * TILE, ember.float32)
    m2 = ember.zeros((TILE, TILE), ember.float32)
    runs = [
        (axpy, lambda k: k[1, BLOCK](np.float32(2), f32, f32)),
        (block_reduce, lambda k: k[1, BLOCK](ember.zeros(BLOCK, ember.float32), f32)),
        (matmul, lambda k: k[(1, 1), (TILE, TILE)](m2, m2, m2)),
    ]
    samples, compiler, cpu = [], [], []
    for r in range(ctx.repeats if be.name == "cpu" else 2):
        for kernel, launch in runs:
            f = kernel.py_func
            name = f"{f.__name__}_{be.name}_{os.getpid()}_{r}"
            fresh = ember.kernel(
                types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
            )
            t, c = time.perf_counter(), _children_cpu()
            with config.override(cache=False):  # (keys hash the code, not the name)
                launch(fresh)
                be.synchronize()
            samples.append(time.perf_counter() - t)
            cpu.append(_children_cpu() - c)
            (spec,) = {id(s): s for s in fresh.specializations.values()}.values()
            compiler.append(spec.timings["compile"])  # the C compiler / OpenCL build alone
    return samples, compiler, cpu


def _array_case(ctx: Context, op, numpy_op) -> dict:
    from ember.runtime import backend as registry

    x = np.random.default_rng(3).random(N, np.float32)
    y = np.random.default_rng(4).random(N, np.float32)
    registry.use("cpu")
    dx, dy = ember.asarray(x), ember.asarray(y)
    results: dict[str, dict] = {}
    cpu = registry.get("cpu")
    guarded(results, "ember", lambda: _ms(ctx, lambda: op(dx, dy), cpu.synchronize, 10))
    guarded(results, "numpy", lambda: _ms(ctx, lambda: numpy_op(x, y), None, 10))
    mine, theirs = results.get("ember", {}).get("ms"), results.get("numpy", {}).get("ms")
    if mine and theirs:
        results["ember"]["x_numpy"] = theirs / mine
    return results


@case("cpu_array_add", "ms", "ms")
def cpu_array_add(ctx: Context):
    """x + y, 2**24 float32 (a new array each time), cpu backend vs NumPy."""
    return _array_case(ctx, lambda x, y: x + y, lambda x, y: x + y)


@case("cpu_array_axpy", "ms", "ms")
def cpu_array_axpy(ctx: Context):
    """2 * x + y as an expression (two kernels, a temporary), vs NumPy's."""
    return _array_case(ctx, lambda x, y: 2 * x + y, lambda x, y: 2 * x + y)


@case("cpu_array_sin", "ms", "ms")
def cpu_array_sin(ctx: Context):
    """ember.sin(x), 2**24 float32, vs np.sin."""
    return _array_case(ctx, lambda x, y: ember.sin(x), lambda x, y: np.sin(x))


@case("cpu_array_sum", "ms", "ms")
def cpu_array_sum(ctx: Context):
    """x.sum() of 2**24 float32 (a device scalar), vs NumPy."""
    return _array_case(ctx, lambda x, y: x.sum(), lambda x, y: x.sum())
