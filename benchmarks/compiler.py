"""The kernel compiler: launch cost of ``@ember.kernel`` kernels and cold compile time.

* ``kernel_axpy3``: a 3-argument ``@ember.kernel`` axpy (Python float, two float32 arrays)
  against the raw floor, the backend's own ``Function.launch`` with the same packed
  arguments (what the compiler adds is the difference), CuPy's RawKernel and numba-cuda.
* ``kernel_args_{1,3,8,16}``: launch cost against the number of array arguments - Ember's
  must stay flat (Numba adds ~4 us per array); raw is a kernel with as many pointers.
* ``kernel_stale_check``: what the notebook stale-code check adds to a launch that hits the
  inline cache (``overhead_us``: target <= 0.05 us) and to the first launch after a cell.
* ``compile_cold``: one new specialization of a small kernel, split into typing, C
  generation, NVRTC and module load.
"""

from __future__ import annotations

import time

import numpy as np

import ember
from benchmarks.harness import Context, case, guarded, median, per_call_us
from benchmarks.impls import RawCuda

N = 256  # elements: one block, so the launch path and not the GPU is timed
NEVER = 1 << 40  # a global id no thread has: the kernels below do no memory work


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@ember.kernel
def args1(a0):
    if ember.global_id() == NEVER:
        a0[0] = 1.0


@ember.kernel
def args3(a0, a1, a2):
    if ember.global_id() == NEVER:
        a0[0] = a1[0] + a2[0]


@ember.kernel
def args8(a0, a1, a2, a3, a4, a5, a6, a7):
    if ember.global_id() == NEVER:
        a0[0] = a1[0] + a2[0] + a3[0] + a4[0] + a5[0] + a6[0] + a7[0]


@ember.kernel
def args16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15):
    if ember.global_id() == NEVER:
        a0[0] = (
            a1[0]
            + a2[0]
            + a3[0]
            + a4[0]
            + a5[0]
            + a6[0]
            + a7[0]
            + a8[0]
            + a9[0]
            + a10[0]
            + a11[0]
            + a12[0]
            + a13[0]
            + a14[0]
            + a15[0]
        )


KERNELS = {1: args1, 3: args3, 8: args8, 16: args16}


def _raw_source(n: int) -> str:
    params = ", ".join(f"float* a{i}" for i in range(n))
    body = " + ".join(f"a{i}[0]" for i in range(1, n)) or "1.0f"
    return (
        f'extern "C" __global__ void args{n}({params}) {{\n'
        f"    if (blockIdx.x * blockDim.x + threadIdx.x == 4096) a0[0] = {body};\n}}\n"
    )


def _numba():
    from numba import cuda  # numba-cuda; skipped when it does not import

    return cuda


def _numba_kernel(cuda, n: int):
    names = ", ".join(f"a{i}" for i in range(n))
    namespace = {"cuda": cuda}
    exec(f"def k({names}):\n    if cuda.grid(1) == 4096:\n        a0[0] = 1.0\n", namespace)
    return cuda.jit(namespace["k"])


def _args_case(ctx: Context, n: int) -> dict[str, dict[str, float]]:
    be = ctx.backend
    iters = ctx.iterations(20000)
    sync = be.default_stream.synchronize
    results: dict[str, dict[str, float]] = {}
    arrays = [ember.zeros(N, ember.float32) for _ in range(n)]
    ctx.cache.setdefault("keep", []).extend(arrays)
    launch = KERNELS[n][1, 32]
    guarded(
        results,
        "ember",
        lambda: {"us": per_call_us(lambda: launch(*arrays), iters, ctx.repeats, sync)},
    )
    spec = KERNELS[n].specialize(*arrays)
    fn, packed = spec.function, spec.pack(*arrays)
    guarded(
        results,
        "ember.Function",
        lambda: {
            "us": per_call_us(
                lambda: fn.launch((1, 1, 1), (32, 1, 1), packed), iters, ctx.repeats, sync
            )
        },
    )
    raw = ctx.once("raw", lambda: RawCuda(be.device.index, be.device.arch))
    fn = raw.function(_raw_source(n), f"args{n}")
    params = raw.kernel_params(*[np.uint64(raw.alloc(N * 4)) for _ in range(n)])
    cu, stream = raw.cu, raw.stream
    guarded(
        results,
        "raw",
        lambda: {
            "us": per_call_us(
                lambda: cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, 0),
                iters,
                ctx.repeats,
                raw.sync,
            )
        },
    )
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]
        k = cp.RawKernel(_raw_source(n), f"args{n}")
        xs = [cp.zeros(N, cp.float32) for _ in range(n)]
        s = cp.cuda.get_current_stream()
        guarded(
            results,
            "cupy",
            lambda: {
                "us": per_call_us(
                    lambda: k((1,), (32,), tuple(xs)), iters, ctx.repeats, s.synchronize
                )
            },
        )
    _add_numba(results, ctx, n, iters)
    return results


def _add_numba(results, ctx: Context, n: int, iters: int) -> None:
    def measure():
        cuda = _numba()
        k = _numba_kernel(cuda, n)[1, 32]
        xs = [cuda.device_array(N, np.float32) for _ in range(n)]
        return {
            "us": per_call_us(lambda: k(*xs), max(iters // 10, 10), ctx.repeats, cuda.synchronize)
        }

    guarded(results, "numba-cuda", measure)


@case("kernel_axpy3", "us", "us/launch")
def kernel_axpy3(ctx: Context):
    """Launch a 3-argument @ember.kernel axpy; 'ember.Function' is the backend alone."""
    be = ctx.backend
    iters = ctx.iterations(20000)
    sync = be.default_stream.synchronize
    x, y = ember.zeros(N, ember.float32), ember.zeros(N, ember.float32)
    ctx.cache.setdefault("keep", []).extend([x, y])
    launch = axpy[1, N]
    results: dict[str, dict[str, float]] = {}
    guarded(
        results,
        "ember",
        lambda: {"us": per_call_us(lambda: launch(2.0, x, y), iters, ctx.repeats, sync)},
    )
    spec = axpy.specialize(2.0, x, y)
    packed = spec.pack(2.0, x, y)
    fn = spec.function
    guarded(
        results,
        "ember.Function",
        lambda: {
            "us": per_call_us(
                lambda: fn.launch((1, 1, 1), (N, 1, 1), packed), iters, ctx.repeats, sync
            )
        },
    )
    raw_results = _args_case(ctx, 3)
    results["raw"] = raw_results.get("raw", {})
    for peer in ("cupy", "numba-cuda"):
        if peer in raw_results:
            results[peer] = raw_results[peer]
    return results


def _register_args_case(n: int) -> None:
    def run(ctx: Context):
        return _args_case(ctx, n)

    run.__doc__ = f"Launch a kernel with {n} array argument(s)."
    case(f"kernel_args{n}", "us", "us/launch")(run)


for _n in KERNELS:
    _register_args_case(_n)


@case("kernel_stale_check", "us", "us/launch")
def kernel_stale_check(ctx: Context):
    """The notebook stale-code check (ember/compiler/freshness.py) on the launch path: the
    3-argument axpy hitting the inline cache with cell re-checks off ('ember') and on
    ('ember-notebook'); 'overhead_us' is the difference (target <= 0.05 us: the launch code
    is the same), 'recheck_us' the extra cost of the first launch after a new cell."""
    from ember.compiler import freshness

    sync = ctx.backend.default_stream.synchronize
    iters = ctx.iterations(20000)
    x, y = ember.zeros(N, ember.float32), ember.zeros(N, ember.float32)
    ctx.cache.setdefault("keep", []).extend([x, y])
    plain, watched = ember.kernel(axpy.py_func), ember.kernel(axpy.py_func)
    was = freshness._watching
    try:
        plain_launch, watched_launch = plain[1, N], watched[1, N]
        plain_launch(2.0, x, y)  # compiled while nothing is watched
        freshness.new_cell()  # from here on, as in IPython
        watched_launch(2.0, x, y)  # compiled and tracked
        times: dict[str, list[float]] = {"ember": [], "ember-notebook": []}
        for _ in range(ctx.repeats):  # interleaved: drift hits both alike
            times["ember"].append(per_call_us(lambda: plain_launch(2.0, x, y), iters, 1, sync))
            times["ember-notebook"].append(
                per_call_us(lambda: watched_launch(2.0, x, y), iters, 1, sync)
            )

        def new_cell_and_launch():
            freshness.new_cell()
            watched_launch(2.0, x, y)

        recheck = per_call_us(new_cell_and_launch, max(iters // 100, 20), ctx.repeats, sync)
    finally:
        freshness._watching = was
        freshness._kernels.discard(watched)
    base, watched_us = (float(np.median(times[k])) for k in ("ember", "ember-notebook"))
    return {
        "ember": {"us": base},
        "ember-notebook": {
            "us": watched_us, "overhead_us": watched_us - base, "recheck_us": recheck - base,
        },
    }  # fmt: skip


@case("compile_cold", "ms", "ms/specialization")
def compile_cold(ctx: Context):
    """Compile one new specialization of a small kernel (no cache), by stage."""
    samples: dict[str, list[float]] = {}
    for k in range(3 if ctx.quick else 7):
        kernel = ember.kernel(axpy.py_func)  # a fresh kernel object: nothing cached
        x = ember.zeros(N + k, ember.float32)
        t = time.perf_counter()
        with ember.config.override(cache=False):  # the disk cache would serve it
            spec = kernel.specialize(2.0, x, x)
        samples.setdefault("total", []).append(time.perf_counter() - t)
        for stage, seconds in spec.timings.items():
            samples.setdefault(stage, []).append(seconds)
    return {
        "ember": {
            "ms": median(samples["total"]).map(lambda s: s * 1e3),
            **{
                f"{s}_ms": median(v).map(lambda s: s * 1e3)
                for s, v in samples.items()
                if s != "total"
            },
        }
    }
