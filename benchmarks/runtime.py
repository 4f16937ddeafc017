"""Runtime overheads: launch, sync, launch + sync, alloc + free, device copy bandwidth.

Each case measures Ember through the backend API (``ember``), through ``ember.RawKernel`` /
``ember.empty`` where those exist, the raw ``cuda.bindings`` floor (``raw``), and CuPy and
PyTorch when importable.  Kernels are tiny so that the launch path, not the GPU, is timed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.harness import (
    Context,
    bandwidth_gbs,
    case,
    guarded,
    interleaved_us,
    paired_ratio,
    per_call_us,
)
from benchmarks.impls import DriverLoop, RawCuda, peer_empty_1mib
from ember.runtime.backend import PTR

SOURCE = r"""
extern "C" __global__ void noop(float* y) { if (threadIdx.x == 1000) y[0] = 1.0f; }
extern "C" __global__ void axpy3(float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a * x[i] + y[i];
}
"""
N_SMALL = 256  # elements of the axpy vectors: one block
ONE, WARP, BLOCK = (1, 1, 1), (32, 1, 1), (N_SMALL, 1, 1)
# The launch cases' row of the driver's own floor: raw's cuLaunchKernel from a C loop
# (impls.DriverLoop), timed in the same interleaved repeats as the Python launches
FLOOR = "raw-C-loop"


def _raw(ctx: Context) -> RawCuda:
    return ctx.once("raw", lambda: RawCuda(ctx.backend.device.index, ctx.backend.device.arch))


def _ember_module(ctx: Context):
    be = ctx.backend
    return ctx.once("ember_module", lambda: be.load_module(be.compile(SOURCE, "bench")))


def _raw_kernel_class():
    try:
        import ember

        return ember.RawKernel
    except (AttributeError, ImportError):
        return None


# ------------------------------------------------------------------ launchers
def _launchers(ctx: Context, kernel: str) -> dict[str, tuple[Any, Any]]:
    """impl -> (launch, sync) for ``noop`` (1 pointer) or ``axpy3`` (float, 2 pointers)."""
    out: dict[str, tuple[Any, Any]] = {}
    be = ctx.backend
    x, y = be.alloc(N_SMALL * 4), be.alloc(N_SMALL * 4)
    ctx.cache.setdefault("keep", []).extend([x, y])
    be.fill_zero(x, 0, x.nbytes)
    be.fill_zero(y, 0, y.nbytes)
    px, py = be.native_pointer(x), be.native_pointer(y)
    if kernel == "noop":
        fn, args, grid, block = _ember_module(ctx).function("noop", (PTR,)), [py], ONE, WARP
    else:
        fn = _ember_module(ctx).function("axpy3", ("float32", PTR, PTR))
        args, grid, block = [np.float32(2.0), px, py], ONE, BLOCK
    sync = be.default_stream.synchronize
    out["ember"] = (lambda: fn.launch(grid, block, args), sync)

    raw = _raw(ctx)
    cu, rf, stream = raw.cu, raw.function(SOURCE, kernel), raw.stream
    rx, ry = raw.alloc(N_SMALL * 4), raw.alloc(N_SMALL * 4)
    if kernel == "noop":
        params = raw.kernel_params(np.uint64(ry))
    else:
        params = raw.kernel_params(np.float32(2.0), np.uint64(rx), np.uint64(ry))
    gx, bx = grid[0], block[0]
    out["raw"] = (
        lambda: cu.cuLaunchKernel(rf, gx, 1, 1, bx, 1, 1, 0, stream, params, 0),
        raw.sync,
    )
    _add_rawkernel(out, ctx, kernel, grid, block, sync)
    _add_peers(out, ctx, kernel)
    return out


def _add_rawkernel(out, ctx, kernel, grid, block, sync) -> None:
    cls = _raw_kernel_class()
    if cls is None:
        return
    import ember

    k = cls(SOURCE, kernel)
    x, y = ember.zeros(N_SMALL, ember.float32), ember.zeros(N_SMALL, ember.float32)
    ctx.cache.setdefault("keep", []).extend([x, y])
    launch = k[grid, block]
    if kernel == "noop":
        out["ember.RawKernel"] = (lambda: launch(y), sync)
    else:
        a = np.float32(2.0)
        out["ember.RawKernel"] = (lambda: launch(a, x, y), sync)


def _add_peers(out, ctx, kernel) -> None:
    if "cupy" in ctx.peers:
        out["cupy"] = _cupy_launcher(ctx.peers["cupy"], kernel)
    if "torch" in ctx.peers:
        out["torch"] = _torch_launcher(ctx.peers["torch"], kernel)


def _cupy_launcher(cp, kernel: str):
    k = cp.RawKernel(SOURCE, kernel)
    x, y = cp.zeros(N_SMALL, cp.float32), cp.zeros(N_SMALL, cp.float32)
    s = cp.cuda.get_current_stream()
    if kernel == "noop":
        return (lambda: k((1,), (32,), (y,))), s.synchronize
    a = cp.float32(2.0)
    return (lambda: k((1,), (N_SMALL,), (a, x, y))), s.synchronize


def _torch_launcher(torch, kernel: str):
    x, y = torch.zeros(N_SMALL, device="cuda"), torch.zeros(N_SMALL, device="cuda")
    if kernel == "noop":  # torch has no source kernels: its cheapest 1-tensor op
        return (lambda: y.add_(1)), torch.cuda.synchronize
    return (lambda: y.add_(x, alpha=2.0)), torch.cuda.synchronize


def _launch_case(ctx: Context, kernel: str) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    n = ctx.iterations(20000)
    for impl, (launch, sync) in _launchers(ctx, kernel).items():
        guarded(results, impl, lambda f=launch, s=sync: {"us": per_call_us(f, n, ctx.repeats, s)})
    return results


@case("launch_noop", "us", "us/launch")
def launch_noop(ctx: Context):
    """Launch a kernel with one pointer argument (throughput; one sync per repeat)."""
    return _launch_case(ctx, "noop")


@case("launch_axpy3", "us", "us/launch")
def launch_axpy3(ctx: Context):
    """Launch a 3-argument axpy (float, 2 pointers) on one block."""
    return _launch_case(ctx, "axpy3")


# ------------------------------------------------------------------ launch by arity
ARITY_SOURCE = r"""
extern "C" __global__ void a0() { }
extern "C" __global__ void a1(float* y) { if (threadIdx.x == 1000) y[0] = 1.0f; }
extern "C" __global__ void a3(float a, const float* x, float* y) {
    if (threadIdx.x == 1000) y[0] = a * x[0];
}
extern "C" __global__ void a8(float a, const float* x, float* y, int n, float b,
                              const float* z, float* w, long long m) {
    if (threadIdx.x == 1000) y[0] = a * x[0] + b * z[0] + n + m + w[0];
}
"""
ARITY_PARAMS = {
    0: (),
    1: (PTR,),
    3: ("float32", PTR, PTR),
    8: ("float32", PTR, PTR, "int32", "float32", PTR, PTR, "int64"),
}


def _arity_values(arity: int, ptrs: list, other: bool = False) -> list:
    """Scalar values and pointers (``ptrs``: 4 device arrays in any form) for ``a<arity>``;
    ``other``: other scalar objects of other values (the launch_8args_varying case)."""
    x, y, z, w = ptrs
    a, n, b, m = (3.0, 6, 1.5, 8) if other else (2.0, 5, 1.0, 7)
    return {
        0: [],
        1: [y],
        3: [np.float32(a), x, y],
        8: [np.float32(a), x, y, np.int32(n), np.float32(b), z, w, np.int64(m)],
    }[arity]


def _ember_kernels():
    import ember

    def never(i):  # a condition the typer cannot fold: the kernels do nothing at run time
        return i == 1 << 40

    @ember.kernel
    def k0():
        i = ember.global_id()
        if never(i):
            pass

    @ember.kernel
    def k1(y):
        i = ember.global_id()
        if never(i):
            y[0] = 1.0

    @ember.kernel
    def k3(a, x, y):
        i = ember.global_id()
        if never(i):
            y[0] = a * x[0]

    @ember.kernel
    def k8(a, x, y, n, b, z, w, m):
        i = ember.global_id()
        if never(i):
            y[0] = a * x[0] + b * z[0] + n + m + w[0]

    return {0: k0, 1: k1, 3: k3, 8: k8}


def _positional(fn: Any, args: list, then: list | None = None) -> Any:
    """``lambda: fn(a0, a1, ...)`` over ``args``, the arguments written out as a program
    calls a kernel (``fn(*args)`` would build a tuple per call that a user's call does not);
    with ``then``, ``lambda: (fn(a0, ...), fn(b0, ...))``: two launches a call."""
    first = [f"a{i}" for i in range(len(args))]
    call = f"fn({', '.join(first)})"
    second = [] if then is None else [f"b{i}" for i in range(len(then))]
    if then is not None:
        call = f"({call}, fn({', '.join(second)}))"
    scope: dict[str, Any] = {}
    exec(f"def make({', '.join(['fn', *first, *second])}):\n    return lambda: {call}", scope)  # noqa: S102
    return scope["make"](fn, *args, *(then or ()))


def _arity_impls(ctx: Context, arity: int, varying: bool = False) -> dict[str, tuple[Any, Any]]:
    """impl -> (launch, sync) of the ``arity``-argument kernel on one block of 32 threads;
    ``varying``: each call makes two launches, the second with other scalar objects (the
    same arrays), as a loop that passes a new value every step (the Python launch paths
    beside the stub's are left out)."""
    import ember

    be = ctx.backend
    module = ctx.once("arity_module", lambda: be.load_module(be.compile(ARITY_SOURCE, "arity")))
    arrays = ctx.once(
        "arity_arrays", lambda: [ember.zeros(N_SMALL, ember.float32) for _ in range(4)]
    )
    sync = be.default_stream.synchronize
    name, params = f"a{arity}", ARITY_PARAMS[arity]
    ptrs = [a.buffer.handle for a in arrays]
    fn = module.function(name, params)
    args, args2 = _arity_values(arity, ptrs), _arity_values(arity, ptrs, other=True)
    out: dict[str, tuple[Any, Any]] = {}
    if varying:
        out["ember"] = (lambda: (fn.launch(ONE, WARP, args), fn.launch(ONE, WARP, args2)), sync)
    else:
        out["ember"] = (lambda: fn.launch(ONE, WARP, args), sync)
        out.update(_python_launches(fn, name, params, module, args, sync))
    kernels = ctx.once("arity_kernels", _ember_kernels)
    kargs = [_arity_values(arity, arrays, other) for other in (False, True)[: 1 + varying]]
    out["ember.kernel"] = (_positional(kernels[arity][1, 32], *kargs), sync)
    raw_kernel = ember.RawKernel(ARITY_SOURCE, name)[1, 32]
    out["ember.RawKernel"] = (_positional(raw_kernel, *kargs), sync)
    out["raw"], out[FLOOR] = _raw_arity(ctx, arity, varying)
    if "cupy" in ctx.peers:
        out["cupy"] = _cupy_arity(ctx, arity, varying)
    return out


def _python_launches(fn, name, params, module, args, sync) -> dict[str, tuple[Any, Any]]:
    """The backend's launch through ``cuda.bindings`` and through ``ctypes`` (where the C
    stub is built), beside the stub's."""
    out: dict[str, tuple[Any, Any]] = {}
    try:
        from ember.backends.cuda.launch import CudaFunction

        slow = CudaFunction(fn.handle, name, params, module, direct=False)
        out["ember[cu.cuLaunchKernel]"] = (lambda: slow.launch(ONE, WARP, args), sync)
        plain = CudaFunction(fn.handle, name, params, module, native=False)
        if getattr(fn, "_native", False):  # the C stub is built: its ctypes path beside it
            out["ember[ctypes]"] = (lambda: plain.launch(ONE, WARP, args), sync)
    except (ImportError, TypeError):  # an Ember before the direct launch (or the C stub)
        pass
    return out


def _raw_arity(ctx: Context, arity: int, varying: bool) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """Raw ``cuLaunchKernel`` of ``a<arity>`` with argument blocks built beforehand, from
    Python and from a C loop (the driver's floor, :data:`FLOOR`); ``varying``: two launches
    a call, one of each block."""
    raw, name = _raw(ctx), f"a{arity}"
    rf = ctx.once(f"raw_{name}", lambda: raw.function(ARITY_SOURCE, name))
    rptrs = ctx.once("raw_arity_ptrs", lambda: [raw.alloc(N_SMALL * 4) for _ in range(4)])
    p1, p2 = (
        raw.kernel_params(*values) if values else 0
        for values in (
            _arity_values(arity, [np.uint64(p) for p in rptrs], o) for o in (False, True)
        )
    )
    cu, stream = raw.cu, raw.stream
    floor = _floor(raw, rf, p1, p2 if varying else 0, 2 if varying else 1)
    if not varying:
        return (lambda: cu.cuLaunchKernel(rf, 1, 1, 1, 32, 1, 1, 0, stream, p1, 0), raw.sync), floor
    return (
        lambda: (
            cu.cuLaunchKernel(rf, 1, 1, 1, 32, 1, 1, 0, stream, p1, 0),
            cu.cuLaunchKernel(rf, 1, 1, 1, 32, 1, 1, 0, stream, p2, 0),
        ),
        raw.sync,
    ), floor


def _floor(raw: Any, function: Any, p1: int, p2: int, launches: int) -> tuple[Any, Any]:
    """The :data:`FLOOR` row's (launch, sync): the C loop, or a launch that raises (and so
    leaves the row out, with the reason) where no C compiler builds it."""
    try:
        return DriverLoop(raw, function, p1, p2, launches), raw.sync
    except OSError as exc:
        message = str(exc)

        def unavailable():
            raise RuntimeError(message)

        return unavailable, None


def _cupy_arity(ctx: Context, arity: int, varying: bool) -> tuple[Any, Any]:
    """CuPy's ``RawKernel`` of ``a<arity>`` on its own arrays; ``varying`` as above."""
    cp = ctx.peers["cupy"]
    ck = cp.RawKernel(ARITY_SOURCE, f"a{arity}")
    carrs = ctx.once("cupy_arity_arrays", lambda: [cp.zeros(N_SMALL, cp.float32) for _ in range(4)])
    c1, c2 = (tuple(_arity_values(arity, carrs, other)) for other in (False, True))
    sync = cp.cuda.get_current_stream().synchronize
    if not varying:
        return lambda: ck((1,), (32,), c1), sync
    return lambda: (ck((1,), (32,), c1), ck((1,), (32,), c2)), sync


def _arity_case(
    ctx: Context, arity: int, varying: bool = False, burst: int | None = None
) -> dict[str, dict[str, Any]]:
    """``us`` per launch; ``per_repeat_to_raw`` (``_to_cupy``, ``_to_floor``): the median of
    the ratios to raw's (CuPy's, the driver's C loop's) time in the same repeat (more
    repeats of fewer launches than the other cases, so that the ratio is taken over a short
    stretch of the machine's drift).
    ``burst``: launches per burst of the issue-time cases (:func:`issue_us`)."""
    calls = 2 if varying else 1  # varying: two launches a call
    n = ctx.iterations(2500 if varying else 5000)
    if burst:
        n, burst = max(n // 2, burst), max(burst // calls, 1)
    samples: dict[str, list[float]] = {}
    impls = _arity_impls(ctx, arity, varying)
    measured = interleaved_us(impls, n, 3 * ctx.repeats, samples, burst=burst)
    out: dict[str, dict[str, Any]] = {}
    for impl, v in measured.items():
        if isinstance(v, str):
            out[impl] = {"error": v}
            continue
        out[impl] = {"us": v / calls}
        for base, key in (("raw", "raw"), ("cupy", "cupy"), (FLOOR, "floor")):
            ratio = paired_ratio(samples, impl, base) if impl != base else None
            if ratio is not None:
                out[impl][f"per_repeat_to_{key}"] = ratio
    return out


@case("launch_0args", "us", "us/launch")
def launch_0args(ctx: Context):
    """Launch a kernel with no arguments (1 block of 32 threads; impls interleaved)."""
    return _arity_case(ctx, 0)


@case("launch_1arg", "us", "us/launch")
def launch_1arg(ctx: Context):
    """Launch a kernel with one pointer argument (impls interleaved)."""
    return _arity_case(ctx, 1)


@case("launch_3args", "us", "us/launch")
def launch_3args(ctx: Context):
    """Launch a kernel with a float and two pointers (impls interleaved)."""
    return _arity_case(ctx, 3)


@case("launch_8args", "us", "us/launch")
def launch_8args(ctx: Context):
    """Launch a kernel with 8 arguments: 4 pointers, 2 floats, an int32, an int64."""
    return _arity_case(ctx, 8)


@case("launch_8args_varying", "us", "us/launch")
def launch_8args_varying(ctx: Context):
    """The 8-argument launch, its four scalars new objects of new values every launch (two
    sets, alternating; the same arrays): only the arrays' packed values are reused."""
    return _arity_case(ctx, 8, varying=True)


# Issue time: what the calling thread spends per launch, in bursts of ISSUE_BURST launches,
# each burst on an idle queue (synchronized before it, off the clock), beside the loops
# above, which time a launch where the queue may be full and a launch may wait for a slot.
# On the H200 hosts the two agree (2026-12-02): the driver's own cuLaunchKernel costs its
# C caller 3.0-3.4 us whether bursts of 16 or loops of 5000 (benchmarks/launch_floor.c).
ISSUE_BURST = 64


@case("launch_issue_0args", "us", "us/launch")
def launch_issue_0args(ctx: Context):
    """Issue time of a launch with no arguments (bursts of ISSUE_BURST, impls interleaved)."""
    return _arity_case(ctx, 0, burst=ISSUE_BURST)


@case("launch_issue_1arg", "us", "us/launch")
def launch_issue_1arg(ctx: Context):
    """Issue time of a launch with one pointer argument (bursts, impls interleaved)."""
    return _arity_case(ctx, 1, burst=ISSUE_BURST)


@case("launch_issue_3args", "us", "us/launch")
def launch_issue_3args(ctx: Context):
    """Issue time of a launch with a float and two pointers (bursts, impls interleaved)."""
    return _arity_case(ctx, 3, burst=ISSUE_BURST)


@case("launch_issue_8args", "us", "us/launch")
def launch_issue_8args(ctx: Context):
    """Issue time of the 8-argument launch (bursts, impls interleaved)."""
    return _arity_case(ctx, 8, burst=ISSUE_BURST)


@case("launch_issue_8args_varying", "us", "us/launch")
def launch_issue_8args_varying(ctx: Context):
    """Issue time of the 8-argument launch with new scalars every launch (bursts)."""
    return _arity_case(ctx, 8, varying=True, burst=ISSUE_BURST)


# ------------------------------------------------------------------ sync
def _syncs(ctx: Context) -> dict[str, Any]:
    stream = ctx.backend.default_stream
    out: dict[str, Any] = {"ember": stream.synchronize, "raw": _raw(ctx).sync}
    if hasattr(stream, "_native_block"):  # the driver wait under ember.runtime.sync
        out["ember-cuStreamSynchronize"] = lambda: stream._native_block(False)
    try:
        import ember

        out["ember.default_stream()"] = ember.default_stream().synchronize
    except (AttributeError, ImportError):
        pass
    if "cupy" in ctx.peers:
        out["cupy"] = ctx.peers["cupy"].cuda.get_current_stream().synchronize
    if "torch" in ctx.peers:
        out["torch"] = ctx.peers["torch"].cuda.synchronize
    return out


@case("sync_idle", "us", "us/sync")
def sync_idle(ctx: Context):
    """Synchronize a stream that has no work queued."""
    results: dict[str, dict[str, float]] = {}
    n = ctx.iterations(20000)
    for impl, sync in _syncs(ctx).items():
        sync()
        guarded(results, impl, lambda s=sync: {"us": per_call_us(s, n, ctx.repeats)})
    return results


@case("launch_sync", "us", "us/(launch+sync)")
def launch_sync(ctx: Context):
    """Launch the 1-pointer kernel and wait for it, back to back."""
    results: dict[str, dict[str, float]] = {}
    n = ctx.iterations(5000)
    for impl, (launch, sync) in _launchers(ctx, "noop").items():

        def both(launch=launch, sync=sync):
            launch()
            sync()

        guarded(results, impl, lambda f=both: {"us": per_call_us(f, n, ctx.repeats)})
    return results


# ------------------------------------------------------------------ Python-side paths
def _noop_kernel():
    import ember

    @ember.kernel
    def bench_noop(y):
        i = ember.global_id()
        if i == 1 << 40:  # never: only the launch path is timed
            y[0] = 1.0

    return bench_noop


@case("launch_paths", "us", "us/launch")
def launch_paths(ctx: Context):
    """One @ember.kernel launched as k[grid, block](y), k.launch(n)(y) with the launcher kept,
    and k.launch(n)(y) made per call (cached per (n, block)); 256 float32, one block."""
    import ember

    k = ctx.once("noop_kernel", _noop_kernel)
    y = ember.zeros(N_SMALL, ember.float32)
    ctx.cache.setdefault("keep", []).append(y)
    sync, n = ctx.backend.default_stream.synchronize, ctx.iterations(20000)
    grid_block, ndrange = k[1, N_SMALL], k.launch(N_SMALL)
    impls = {
        "ember[grid,block]": lambda: grid_block(y),
        "ember.launch(n) kept": lambda: ndrange(y),
        "ember.launch(n)": lambda: k.launch(N_SMALL)(y),
    }
    results: dict[str, dict[str, float]] = {}
    for impl, fn in impls.items():
        fn()  # compile outside the timing
        guarded(results, impl, lambda f=fn: {"us": per_call_us(f, n, ctx.repeats, sync)})
    return results


@case("ufunc_paths", "us", "us/op")
def ufunc_paths(ctx: Context):
    """Host time of one small elementwise operation (256 float32), as an operator and as
    the ufunc call: x * y, ember.multiply(x, y), x * 2, ember.multiply(x, 2)."""
    import ember

    x, y = ember.ones(N_SMALL, ember.float32), ember.ones(N_SMALL, ember.float32)
    sync, n = ctx.backend.default_stream.synchronize, ctx.iterations(20000)
    impls = {
        "x*y": lambda: x * y,
        "ember.multiply(x,y)": lambda: ember.multiply(x, y),
        "x*2": lambda: x * 2,
        "ember.multiply(x,2)": lambda: ember.multiply(x, 2),
    }
    results: dict[str, dict[str, float]] = {}
    for impl, fn in impls.items():
        fn()
        guarded(results, impl, lambda f=fn: {"us": per_call_us(f, n, ctx.repeats, sync)})
    return results


# ------------------------------------------------------------------ memory
MiB = 1 << 20


@case("alloc_free_1MiB", "us", "us/(alloc+free)")
def alloc_free(ctx: Context):
    """Allocate and free 1 MiB (stream-ordered where the library does so; sync per repeat)."""
    be, raw = ctx.backend, _raw(ctx)
    cu, stream = raw.cu, raw.stream
    impls: dict[str, Any] = {
        "ember": (lambda: be.alloc(MiB).close(), be.default_stream.synchronize),
        "raw": (lambda: cu.cuMemFreeAsync(cu.cuMemAllocAsync(MiB, stream)[1], stream), raw.sync),
        "raw-cuMemAlloc": (lambda: cu.cuMemFree(cu.cuMemAlloc(MiB)[1]), None),
    }
    try:
        import ember

        impls["ember.empty"] = (
            lambda: ember.empty(MiB // 4, ember.float32),
            be.default_stream.synchronize,
        )
    except (AttributeError, ImportError):
        pass
    peer_empty_1mib(ctx, impls)
    results: dict[str, dict[str, float]] = {}
    n = ctx.iterations(20000)
    for impl, (fn, sync) in impls.items():
        guarded(results, impl, lambda f=fn, s=sync: {"us": per_call_us(f, n, ctx.repeats, s)})
    return results


def _copy_impls(ctx: Context, nbytes: int) -> dict[str, Any]:
    """impl -> a factory returning (copy, sync, release) over ``nbytes`` buffers."""
    be, raw = ctx.backend, _raw(ctx)

    def ember_impl():
        src, dst = be.alloc(nbytes), be.alloc(nbytes)
        be.fill_zero(src, 0, nbytes)
        release = lambda: (src.close(), dst.close())  # noqa: E731
        return (
            (lambda: be.copy_device(dst, 0, src, 0, nbytes)),
            be.default_stream.synchronize,
            release,
        )

    def raw_impl():
        cu, s = raw.cu, raw.stream
        src, dst = raw.alloc(nbytes), raw.alloc(nbytes)
        cu.cuMemsetD8Async(src, 0, nbytes, s)
        release = lambda: (raw.free(src), raw.free(dst))  # noqa: E731
        return (lambda: cu.cuMemcpyDtoDAsync(dst, src, nbytes, s)), raw.sync, release

    impls = {"ember": ember_impl, "raw": raw_impl}
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]

        def cupy_impl():
            a, b = cp.ones(nbytes // 4, cp.float32), cp.empty(nbytes // 4, cp.float32)
            s = cp.cuda.get_current_stream()
            release = lambda: cp.get_default_memory_pool().free_all_blocks()  # noqa: E731
            return (lambda: cp.copyto(b, a)), s.synchronize, release

        impls["cupy"] = cupy_impl
    if "torch" in ctx.peers:
        torch = ctx.peers["torch"]

        def torch_impl():
            a = torch.ones(nbytes // 4, device="cuda")
            b = torch.empty_like(a)
            return (lambda: b.copy_(a)), torch.cuda.synchronize, torch.cuda.empty_cache

        impls["torch"] = torch_impl
    return impls


@case("copy_1GiB", "GB/s", "GB/s (read+write)", better="higher")
def copy_1gib(ctx: Context):
    """Device-to-device copy of 1 GiB (256 MiB with --quick), bytes read plus written."""
    nbytes = (256 * MiB) if ctx.quick else (1024 * MiB)
    results: dict[str, dict[str, float]] = {}
    for impl, make in _copy_impls(ctx, nbytes).items():

        def measure(make=make):
            copy, sync, release = make()
            try:
                gbs = bandwidth_gbs(copy, 2 * nbytes, sync, 10, ctx.repeats)
            finally:
                sync()
                release()
            return {"GB/s": gbs}

        guarded(results, impl, measure)
    return results
