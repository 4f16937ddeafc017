"""Numerics: matrix products and random numbers - Ember against PyTorch and CuPy in the
same run.

* ``matmul_f32``: ``a @ b`` of 4096 x 4096 float32 in TFLOP/s (2 n^3 per product).
  ``ember`` is the vendor path (cuBLAS, IEEE float32), ``ember-kernel`` Ember's own tiled
  GEMM kernel (``EMBER_BLAS=ember``; its target is >= 50 % of cuBLAS), ``ember-tf32``
  cuBLAS with TF32 allowed; PyTorch and CuPy with their defaults (no TF32 for float32).
  ``kernel_vs_blas`` in the ``ember-kernel`` row is its share of ``ember``.
* ``matmul_f16``: 8192 x 8192 float16 in TFLOP/s (tensor cores), every peer in float16.
* ``matmul_bf16``: the same in bfloat16 (cuBLAS CUDA_R_16BF, float32 accumulation), every
  peer in bfloat16 (a peer without the dtype reports its error in its column).
* ``matmul_c64``: 4096 x 4096 complex64 in TFLOP/s (8 n^3 real flops per product): cuBLAS
  cgemm (``ember``) and Ember's kernel on complex values (``ember-kernel``).
* ``matmul_dispatch``: host time per 64 x 64 float32 product (µs per call, queued);
  ``ember-gemm-call`` is the cuBLAS binding's ``gemm`` alone (the library's own host time
  plus the ctypes call: the floor under Ember's row).
* ``randn``: 1 GiB of standard normal float32 in GB/s (written bytes);
  ``ember-uniform`` is ``rng.random`` for scale.

``x_torch`` in Ember's rows is Ember / PyTorch (rates: >= 1 is the target; the dispatch
time: <= 1).
"""

from __future__ import annotations

import ember
from benchmarks import harness
from benchmarks.harness import Context, bandwidth_gbs, case, guarded, per_call_us


def _cuda(ctx: Context) -> bool:
    return ctx.backend.name == "cuda"


def _sync(name: str, mod):
    return mod.cuda.synchronize if name == "torch" else mod.cuda.Device().synchronize


def _rate(fn, work: float, sync, iters: int, repeats: int):
    """Work per second in units of 10^12 (``work`` per call)."""
    return bandwidth_gbs(fn, work, sync, iters, repeats).map(lambda g: g / 1000)


def _peer_matrix(name: str, mod, n: int, dtype: str):
    if name == "torch":
        return mod.randn((n, n), device="cuda", dtype=getattr(mod, dtype))
    return mod.random.standard_normal((n, n), dtype="float32").astype(dtype)


def _release(ctx: Context) -> None:
    ember.synchronize()
    ember.memory.empty_cache()
    for name, mod in ctx.peers.items():
        if name == "torch":
            mod.cuda.synchronize()
            mod.cuda.empty_cache()
        else:
            mod.cuda.Device().synchronize()
            mod.get_default_memory_pool().free_all_blocks()


def _ratio(results: dict, metric: str) -> None:
    """``x_torch``: Ember / PyTorch (as the arrays area: > 1 is better for rates, < 1 for
    times)."""
    mine, theirs = results.get("ember", {}).get(metric), results.get("torch", {}).get(metric)
    if mine and theirs:
        results["ember"]["x_torch"] = mine / theirs


def _time_product(results: dict, impl: str, x, y, work: float, sync, ctx: Context) -> None:
    iters = 3 if ctx.quick else 10
    guarded(results, impl, lambda: {"tflops": _rate(lambda: x @ y, work, sync, iters, ctx.repeats)})


def _matmul(ctx: Context, n: int, dtype: str, variants: dict, peer_dtypes: dict,
            flops: float = 2.0) -> dict:  # fmt: skip
    work = flops * n**3  # flops per call: bandwidth_gbs gives 10^9 of them per second
    results: dict[str, dict[str, float]] = {}
    a = ember.random.default_rng(1).standard_normal((n, n)).astype(dtype)
    b = ember.random.default_rng(2).standard_normal((n, n)).astype(dtype)
    for impl, settings in variants.items():
        with ember.config.override(**settings):
            _time_product(results, impl, a, b, work, ember.synchronize, ctx)
    a = b = None
    _release(ctx)
    for name, mod in ctx.peers.items():
        for suffix, pdt in peer_dtypes.items():
            try:
                x, y = _peer_matrix(name, mod, n, pdt), _peer_matrix(name, mod, n, pdt)
            except Exception as exc:
                results[f"{name}{suffix}"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                continue
            _time_product(results, f"{name}{suffix}", x, y, work, _sync(name, mod), ctx)
            x = y = None
            _release(ctx)
    _ratio(results, "tflops")
    return results


@case("matmul_f32", "tflops", "TFLOP/s", better="higher")
def matmul_f32(ctx: Context):
    """a @ b, 4096^3 float32: cuBLAS, Ember's kernel, TF32; PyTorch, CuPy."""
    n = (1024 if ctx.quick else 4096) if _cuda(ctx) else 256
    variants = {"ember": {}, "ember-kernel": {"blas": "ember"}}
    if _cuda(ctx):
        variants["ember-tf32"] = {"matmul_tf32": True}
    results = _matmul(ctx, n, "float32", variants, {"": "float32"})
    blas, mine = results.get("ember", {}).get("tflops"), results.get("ember-kernel", {})
    if blas and mine.get("tflops"):
        mine["kernel_vs_blas"] = mine["tflops"] / blas
    return results


@case("matmul_f16", "tflops", "TFLOP/s", better="higher")
def matmul_f16(ctx: Context):
    """a @ b, 8192^3 float16 (tensor cores); the peers in float16."""
    n = (2048 if ctx.quick else 8192) if _cuda(ctx) else 256
    return _matmul(ctx, n, "float16", {"ember": {}}, {"": "float16"})


@case("matmul_bf16", "tflops", "TFLOP/s", better="higher")
def matmul_bf16(ctx: Context):
    """a @ b, 8192^3 bfloat16 (tensor cores, float32 accumulation); the peers in bfloat16."""
    n = (2048 if ctx.quick else 8192) if _cuda(ctx) else 256
    return _matmul(ctx, n, "bfloat16", {"ember": {}}, {"": "bfloat16"})


@case("matmul_c64", "tflops", "TFLOP/s", better="higher")
def matmul_c64(ctx: Context):
    """a @ b, 4096^3 complex64 (8 real flops per multiply-add): cgemm, Ember's kernel."""
    n = (1024 if ctx.quick else 4096) if _cuda(ctx) else 128
    variants = {"ember": {}, "ember-kernel": {"blas": "ember"}}
    results = _matmul(ctx, n, "complex64", variants, {"": "complex64"}, flops=8.0)
    blas, mine = results.get("ember", {}).get("tflops"), results.get("ember-kernel", {})
    if blas and mine.get("tflops"):
        mine["kernel_vs_blas"] = mine["tflops"] / blas
    return results


@case("matmul_dispatch", "us", "us/op")
def matmul_dispatch(ctx: Context):
    """Host time per 64 x 64 float32 product (launches queued, one sync per repeat)."""
    iters = ctx.iterations(5000)
    results: dict[str, dict[str, float]] = {}

    def product(x):
        return lambda: x @ x

    a = ember.ones((64, 64), ember.float32)
    with ember.config.override(blas="ember"):
        guarded(results, "ember-kernel", lambda: {
            "us": per_call_us(product(a), iters, ctx.repeats, ember.synchronize)})  # fmt: skip
    impls = {"ember": (product(a), ember.synchronize)}
    lib = a.backend.blas()
    if lib is not None:  # the binding and cuBLAS alone: no array, no allocation
        out, ptr = ember.empty((64, 64), ember.float32), a.backend.native_pointer
        pa, po, stream = ptr(a.buffer), ptr(out.buffer), a.backend.default_stream

        def call() -> None:
            lib.gemm("float32", "N", "N", 64, 64, 64, pa, 64, 0, pa, 64, 0, po, 64, 0, 1, stream)

        impls["ember-gemm-call"] = (call, ember.synchronize)
    for name, mod in ctx.peers.items():
        impls[name] = (product(_peer_matrix(name, mod, 64, "float32")), _sync(name, mod))
    harness.interleaved_into(results, impls, iters, ctx.repeats)  # interleaved: drifts cancel
    _ratio(results, "us")
    return results


@case("randn", "gbs", "GB/s", better="higher")
def randn(ctx: Context):
    """1 GiB of standard normal float32 (bytes written per second)."""
    n = ((1 << 24) if ctx.quick else (1 << 28)) if _cuda(ctx) else 1 << 20
    iters = 5 if ctx.quick else 20
    rng = ember.random.default_rng(0)
    f32 = ember.float32
    results: dict[str, dict[str, float]] = {}
    for impl, fn in (("ember", lambda: rng.standard_normal(n, dtype=f32)),
                     ("ember-uniform", lambda: rng.random(n, dtype=f32))):  # fmt: skip
        guarded(results, impl, lambda fn=fn: {
            "gbs": bandwidth_gbs(fn, 4 * n, ember.synchronize, iters, ctx.repeats)})  # fmt: skip
    _release(ctx)
    for name, mod in ctx.peers.items():
        if name == "torch":
            fn = lambda mod=mod: mod.randn(n, device="cuda", dtype=mod.float32)  # noqa: E731
        else:
            fn = lambda mod=mod: mod.random.standard_normal(n, dtype="float32")  # noqa: E731
        guarded(results, name, lambda fn=fn, name=name, mod=mod: {
            "gbs": bandwidth_gbs(fn, 4 * n, _sync(name, mod), iters, ctx.repeats)})  # fmt: skip
        _release(ctx)
    _ratio(results, "gbs")
    return results
