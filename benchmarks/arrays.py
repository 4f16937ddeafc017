"""Arrays: bandwidth of copies and elementwise operations, the dispatch cost of a small
operation, and the first ``x * 2 + 1`` of a fresh process - Ember's array library against
CuPy and PyTorch in the same run (the method of ``shared/peers/peers.py``).

* ``array_copy``: ``x.copy()`` of 1 GiB (GB/s counts read + write); raw: ``cuMemcpyDtoD``.
* ``array_axpy``: ``2*x + y`` on 1 GiB vectors, counted as 3 x 1 GiB as peers.py does.
  ``ember``/``cupy``/``torch`` are the fused forms (``ember.vectorize``, an
  ``ElementwiseKernel``, ``torch.add(y, x, alpha=2, out=y)``); ``*-expr`` rows are the plain
  expression ``2 * x + y`` (two kernels and a temporary; same bytes counted).
* ``array_sin``: ``sin(x)``, 1 GiB.
* ``array_row_broadcast``: ``m + row``: a row of 4096 over a 1 GiB matrix.
* ``array_transpose_copy``: ``m.T.copy()`` of a square 1 GiB matrix (PyTorch:
  ``m.t().contiguous()``).
* ``array_dispatch``: host time per ``y * 2`` on 32 elements (µs per call, launches
  queued, one sync per repeat).
* ``array_first_op``: a fresh process's first ``ember.ones(n) * 2 + 1`` after the import:
  empty cache, warm cache (a previous run filled it), and precompiled (``ember
  precompile`` filled it); CuPy with empty and warm caches, PyTorch.  ``compiles`` is
  Ember's count of kernels built in that process (0 when precompiled).

``x_torch`` in Ember's rows is Ember / PyTorch (GB/s: higher is better; µs and s: lower).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import ember
from benchmarks.harness import Context, bandwidth_gbs, case, guarded, median, per_call_us

ROW = 4096
RAW_AXPY = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@ember.vectorize
def axpy(x, y):
    return 2 * x + y


def _elements(ctx: Context) -> int:
    """float32 elements of the big arrays: 1 GiB on CUDA (64 MiB with --quick)."""
    if ctx.backend.name != "cuda":
        return 1 << 20  # a local check on PoCL
    return 1 << 24 if ctx.quick else 1 << 28


def _sync(ctx: Context):
    return ctx.backend.synchronize


def _iters(ctx: Context) -> int:
    return 5 if ctx.quick else 20


def _release(ctx: Context) -> None:
    """Give cached device memory back between cases (every library's pool)."""
    ember.synchronize()
    ember.memory.empty_cache()
    if "torch" in ctx.peers:
        ctx.peers["torch"].cuda.synchronize()
        ctx.peers["torch"].cuda.empty_cache()
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]
        cp.cuda.Device().synchronize()
        cp.get_default_memory_pool().free_all_blocks()


def _ratio(results: dict, metric: str) -> None:
    mine = results.get("ember", {}).get(metric)
    theirs = results.get("torch", {}).get(metric)
    if mine and theirs:
        results["ember"]["x_torch"] = mine / theirs


def _bandwidth(ctx: Context, results: dict, impl: str, fn, nbytes: int, sync) -> None:
    guarded(
        results, impl,
        lambda: {"gbs": bandwidth_gbs(fn, nbytes, sync, _iters(ctx), ctx.repeats)},
    )  # fmt: skip


def _run(ctx: Context, ember_impls: dict, peer_impls, nbytes: int) -> dict:
    """Measure Ember's implementations, then each peer's (made by ``peer_impls(name, mod)``
    as ``{impl: fn}``), releasing memory in between."""
    results: dict[str, dict[str, float]] = {}
    for impl, fn in ember_impls.items():
        _bandwidth(ctx, results, impl, fn, nbytes, _sync(ctx))
    ember_impls.clear()
    _release(ctx)
    for name, mod in ctx.peers.items():
        sync = mod.cuda.synchronize if name == "torch" else mod.cuda.Device().synchronize
        try:
            impls = peer_impls(name, mod)
        except Exception as exc:  # a peer that cannot run the case
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        for impl, fn in impls.items():
            _bandwidth(ctx, results, impl, fn, nbytes, sync)
        impls.clear()
        _release(ctx)
    _ratio(results, "gbs")
    return results


def _peer_arrays(name: str, mod, shape, value: float = 1.0):
    if name == "torch":
        return mod.full(shape, value, dtype=mod.float32, device="cuda")
    return mod.full(shape, value, dtype=mod.float32)


# ------------------------------------------------------------------ bandwidth
@case("array_copy", "gbs", "GB/s", better="higher")
def array_copy(ctx: Context):
    """x.copy() of 1 GiB float32 (read + write)."""
    n = _elements(ctx)
    x = ember.ones(n, ember.float32)
    impls = {"ember": lambda: x.copy()}
    results = _run(ctx, impls, lambda name, mod: _copy_peer(name, mod, n), 2 * 4 * n)
    if ctx.backend.name == "cuda":
        _raw_copy(ctx, results, n)
    return results


def _copy_peer(name: str, mod, n: int) -> dict:
    a = _peer_arrays(name, mod, (n,))
    return {name: (lambda: a.clone()) if name == "torch" else (lambda: a.copy())}


def _raw_copy(ctx: Context, results: dict, n: int) -> None:
    from benchmarks.impls import raw_floor

    raw = raw_floor(ctx)
    src, dst = raw.alloc(4 * n), raw.alloc(4 * n)
    cu, stream = raw.cu, raw.stream
    try:
        _bandwidth(
            ctx, results, "raw",
            lambda: cu.cuMemcpyDtoDAsync(dst, src, 4 * n, stream), 2 * 4 * n, raw.sync,
        )  # fmt: skip
    finally:
        raw.free(src)
        raw.free(dst)


@case("array_axpy", "gbs", "GB/s", better="higher")
def array_axpy(ctx: Context):
    """2*x + y on 1 GiB vectors (3 x 1 GiB counted); fused and as an expression."""
    n = _elements(ctx)
    x, y = ember.ones(n, ember.float32), ember.ones(n, ember.float32)
    impls = {"ember": lambda: axpy(x, y, out=y), "ember-expr": lambda: 2 * x + y}
    results = _run(ctx, impls, lambda name, mod: _axpy_peer(name, mod, n), 3 * 4 * n)
    if ctx.backend.name == "cuda":
        _raw_axpy(ctx, results, n)
    return results


def _axpy_peer(name: str, mod, n: int) -> dict:
    a, b = _peer_arrays(name, mod, (n,)), _peer_arrays(name, mod, (n,))
    if name == "torch":
        return {
            "torch": lambda: mod.add(b, a, alpha=2, out=b),
            "torch-expr": lambda: 2 * a + b,
        }
    fused = mod.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = 2*x + y", "axpy")
    return {"cupy": lambda: fused(a, b, b), "cupy-expr": lambda: 2 * a + b}


def _raw_axpy(ctx: Context, results: dict, n: int) -> None:
    from benchmarks.impls import raw_floor

    raw = raw_floor(ctx)
    fn = raw.function(RAW_AXPY, "axpy")
    px, py = raw.alloc(4 * n), raw.alloc(4 * n)
    params = raw.kernel_params(np.float32(2), np.uint64(px), np.uint64(py), np.int64(n))
    cu, stream, blocks = raw.cu, raw.stream, (n + 255) // 256
    try:
        _bandwidth(
            ctx, results, "raw",
            lambda: cu.cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, stream, params, 0),
            3 * 4 * n, raw.sync,
        )  # fmt: skip
    finally:
        raw.free(px)
        raw.free(py)


@case("array_sin", "gbs", "GB/s", better="higher")
def array_sin(ctx: Context):
    """sin(x) of 1 GiB float32."""
    n = _elements(ctx)
    x = ember.ones(n, ember.float32)

    def peer(name, mod):
        a = _peer_arrays(name, mod, (n,))
        return {name: lambda: mod.sin(a)}

    return _run(ctx, {"ember": lambda: ember.sin(x)}, peer, 2 * 4 * n)


@case("array_row_broadcast", "gbs", "GB/s", better="higher")
def array_row_broadcast(ctx: Context):
    """m + row: a 4096-row broadcast over a 1 GiB float32 matrix."""
    n = _elements(ctx)
    shape = (n // ROW, ROW)
    m, row = ember.ones(shape, ember.float32), ember.ones(ROW, ember.float32)

    def peer(name, mod):
        a, r = _peer_arrays(name, mod, shape), _peer_arrays(name, mod, (ROW,))
        return {name: lambda: a + r}

    return _run(ctx, {"ember": lambda: m + row}, peer, 2 * 4 * n)


@case("array_transpose_copy", "gbs", "GB/s", better="higher")
def array_transpose_copy(ctx: Context):
    """m.T.copy() of a square 1 GiB float32 matrix (a strided copy)."""
    side = int(round(_elements(ctx) ** 0.5))
    m = ember.ones((side, side), ember.float32)

    def peer(name, mod):
        a = _peer_arrays(name, mod, (side, side))
        if name == "torch":
            return {name: lambda: a.t().contiguous()}
        return {name: lambda: a.T.copy()}

    return _run(ctx, {"ember": lambda: m.T.copy()}, peer, 2 * 4 * side * side)


# ------------------------------------------------------------------ dispatch
@case("array_dispatch", "us", "us/op")
def array_dispatch(ctx: Context):
    """Host time per y * 2 on 32 float32 elements (kernel launches queued)."""
    iters = ctx.iterations(20000)
    results: dict[str, dict[str, float]] = {}
    y = ember.ones(32, ember.float32)
    sync = _sync(ctx)
    guarded(results, "ember", lambda: {"us": per_call_us(lambda: y * 2, iters, ctx.repeats, sync)})
    guarded(
        results, "ember-x*y",
        lambda: {"us": per_call_us(lambda: y * y, iters, ctx.repeats, sync)},
    )  # fmt: skip
    guarded(
        results, "ember.empty",
        lambda: {"us": per_call_us(lambda: ember.empty(32, ember.float32), iters, ctx.repeats)},
    )  # fmt: skip
    for name, mod in ctx.peers.items():
        a = _peer_arrays(name, mod, (32,))
        psync = mod.cuda.synchronize if name == "torch" else mod.cuda.Device().synchronize
        guarded(
            results, name,
            lambda a=a, psync=psync: {"us": per_call_us(lambda: a * 2, iters, ctx.repeats, psync)},
        )  # fmt: skip
    _ratio(results, "us")
    return results


# ------------------------------------------------------------------ first operation
CHILD = r"""
import time
T0 = time.perf_counter()
import json, sys
import numpy
impl, n = sys.argv[1], 1 << 20
t0 = time.perf_counter()
out = {}
if impl == "ember":
    import ember
    t1 = time.perf_counter()
    y = ember.ones(n, dtype=ember.float32) * 2 + 1
    ember.synchronize()
    t2 = time.perf_counter()
    assert float(y.to_numpy()[0]) == 3.0
    out["compiles"] = ember.cache.stats()["compiles"]
elif impl == "cupy":
    import cupy as cp
    t1 = time.perf_counter()
    y = cp.ones(n, dtype=cp.float32) * 2 + 1
    cp.cuda.Device().synchronize()
    t2 = time.perf_counter()
    assert float(y[0]) == 3.0
else:
    import torch
    t1 = time.perf_counter()
    y = torch.ones(n, dtype=torch.float32, device="cuda") * 2 + 1
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    assert float(y[0]) == 3.0
out.update(import_s=t1 - t0, first_op_s=t2 - t1, total_s=t2 - T0)
print("RESULT " + json.dumps(out))
"""
PRECOMPILE = (
    "from ember.precompile import precompile; "
    "r = precompile(echo=lambda *a: None); assert not r['failed'], r['errors']"
)


def _child(impl: str, env: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, impl], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (proc.stderr or proc.stdout)[-600:]}


def _env(ctx: Context, cache_dir: str) -> dict:
    """A child's environment: its caches, and Ember's modules compiled once into a shared
    bytecode cache (as an installed package has them; the startup area's), never from
    source in every child (on the GPU machine a checkout copied anew has stale ``.pyc``
    files: 2026-12-01, the first op measured 0.33 s against 0.21 before)."""
    from benchmarks.startup import bytecode_dir

    env = dict(os.environ, PYTHONPYCACHEPREFIX=bytecode_dir(), EMBER_BACKEND=ctx.backend.name)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(EMBER_CACHE="1", EMBER_CACHE_DIR=os.path.join(cache_dir, "ember"))
    env.update(CUPY_CACHE_DIR=os.path.join(cache_dir, "cupy"))
    return env


def _median(runs: list[dict]) -> dict:
    good = [r for r in runs if "error" not in r]
    if not good:
        return {"error": str(runs[0].get("error"))[:300]}
    keys = [k for k in good[0] if isinstance(good[0][k], int | float)]
    out = {k: median(r[k] for r in good) for k in keys}
    out["runs"] = len(good)
    return out


@case("array_first_op", "first_op_s", "s")
def array_first_op(ctx: Context):
    """Fresh process: first ones(n) * 2 + 1 after import; empty/warm/precompiled caches."""
    runs = 3 if ctx.quick else 5
    rows: dict[str, list[dict]] = {}
    impls = ["ember"] + [p for p in ("cupy", "torch") if p in ctx.peers]
    for _ in range(runs):  # empty caches: a new directory every run
        for impl in impls:
            rows.setdefault(f"{impl}-cold" if impl != "torch" else impl, []).append(
                _child(impl, _env(ctx, tempfile.mkdtemp(prefix="ember-arrays-")))
            )
    warm = _env(ctx, tempfile.mkdtemp(prefix="ember-arrays-"))
    for impl in [i for i in impls if i != "torch"]:
        _child(impl, warm)  # fill the cache once
        rows[f"{impl}-warm"] = [_child(impl, warm) for _ in range(runs)]
    pre = _env(ctx, tempfile.mkdtemp(prefix="ember-arrays-"))
    done = subprocess.run(
        [sys.executable, "-c", PRECOMPILE], env=pre, capture_output=True, text=True, timeout=900
    )
    if done.returncode:
        rows["ember-precompiled"] = [{"error": done.stderr[-600:]}]
    else:
        rows["ember-precompiled"] = [_child("ember", pre) for _ in range(runs)]
    results = {name: _median(samples) for name, samples in rows.items()}
    mine = results.get("ember-precompiled", {}).get("first_op_s")
    for name in ("cupy-warm", "cupy-cold", "torch"):
        theirs = results.get(name, {}).get("first_op_s")
        if mine and theirs:
            results["ember-precompiled"][f"x_{name}"] = theirs / mine
    return results
