"""Fourier transforms: ``ember.fft`` (cuFFT, and Ember's own kernels with ``EMBER_FFT=ember``)
against ``torch.fft`` and ``cupy.fft`` in the same run, timed with each library's CUDA events
on its own stream, medians of ``repeats`` (issue 20; the peers' figures there: H100,
2026-11-23).

GB/s = 2 x input bytes / time (one read and one write of the input's size).

* ``fft_c2c_2e24``: ``fft`` of 2**24 complex64 (torch 901 / CuPy 862 GB/s).
* ``fft_batched``: ``fft`` of 16 x 2**20 complex64 along the last axis (1153 / 1049).
* ``fft_r2c``: ``rfft`` of 4096 rows of 4096 float32 (2058 / 1699).
* ``fft_3d``: ``fftn`` of 512**3 complex64 (844 / 804).
* ``fft_prime``: ``fft`` of 1000003 complex64, a prime length (121 / 114).
* ``fft_dispatch``: host microseconds per ``fft`` of 256 complex64 with the plan cached
  (calls queued back to back; the device work is shorter than the call, so this is the
  host's time; target: <= PyTorch's); ``ember-cufft-run`` is the binding's plan-cache hit
  and ``cufftExec`` alone (the floor under Ember's row).

Targets: Ember (cuFFT) >= 0.95 x the better peer; ``ember-kernels`` >= 50 % of Ember on the
power-of-two cases.  ``x_best`` in Ember's rows is Ember / the better peer, ``x_cufft`` in
the kernels' rows is kernels / Ember (cuFFT).
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

import ember
from benchmarks.arrays_sort import _ember_timer, _peer_timer, _release, time_ms
from benchmarks.harness import Context, case, guarded, interleaved_into, median

SEED = 0


def _local(ctx: Context) -> bool:
    """A check of Ember's side on a non-CUDA backend: small sizes, no peers."""
    return ctx.backend.name != "cuda"


def _iters(ctx: Context) -> int:
    return 3 if ctx.quick else 10


@contextlib.contextmanager
def _kernels():
    """Ember's own kernels even where cuFFT is installed."""
    with ember.config.override(fft="ember"):
        yield


def _complex(shape) -> np.ndarray:
    rng = np.random.default_rng(SEED)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def _run(ctx: Context, host: np.ndarray, ember_fn, peer_fns: dict) -> dict:
    """GB/s of Ember (vendor, then its kernels) and the peers on ``host``."""
    nbytes = 2 * host.nbytes
    results: dict[str, dict] = {}

    def measure(impl, fn, timer):
        def one():
            ms = time_ms(fn, timer, _iters(ctx), ctx.repeats)
            return {"gbs": ms.map(lambda v: nbytes / (v * 1e-3) / 1e9)}

        guarded(results, impl, one)

    x = ember.asarray(host)
    timer = _ember_timer(ctx)
    measure("ember", lambda: ember_fn(x), timer)
    with _kernels():
        measure("ember-kernels", lambda: ember_fn(x), timer)
    x = None
    _release(ctx)
    for name, mod in ctx.peers.items():
        try:
            px = mod.as_tensor(host, device="cuda") if name == "torch" else mod.asarray(host)
        except Exception as exc:
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        measure(name, lambda px=px, f=peer_fns[name]: f(px), _peer_timer(name, mod))
        del px
        _release(ctx)
    _ratios(results, "gbs")
    return results


def _ratios(results: dict, metric: str) -> None:
    mine = results.get("ember", {}).get(metric)
    peers = [results.get(p, {}).get(metric) for p in ("torch", "cupy")]
    peers = [p for p in peers if p]
    if mine and peers:
        results["ember"]["x_best"] = mine / max(peers)
    kern = results.get("ember-kernels", {}).get(metric)
    if mine and kern:
        results["ember-kernels"]["x_cufft"] = kern / mine


def _peers(torch_fn, cupy_fn) -> dict:
    return {"torch": torch_fn, "cupy": cupy_fn}


# ------------------------------------------------------------------ cases
@case("fft_c2c_2e24", "gbs", "GB/s", better="higher")
def fft_c2c_2e24(ctx: Context):
    """fft of 2**24 complex64 (2 x input bytes)."""
    n = 1 << 12 if _local(ctx) else 1 << (22 if ctx.quick else 24)
    host = _complex(n)
    return _run(ctx, host, ember.fft.fft, _peers(_torch_fft, lambda x: _cupy().fft.fft(x)))


def _torch_fft(x):
    import torch

    return torch.fft.fft(x)


def _cupy():
    import cupy

    return cupy


@case("fft_batched", "gbs", "GB/s", better="higher")
def fft_batched(ctx: Context):
    """fft of 16 x 2**20 complex64 along the last axis."""
    shape = (4, 1 << 10) if _local(ctx) else (16, 1 << (18 if ctx.quick else 20))
    host = _complex(shape)
    return _run(ctx, host, ember.fft.fft, _peers(_torch_fft, lambda x: _cupy().fft.fft(x)))


@case("fft_r2c", "gbs", "GB/s", better="higher")
def fft_r2c(ctx: Context):
    """rfft of 4096 rows of 4096 float32."""
    rows = 64 if _local(ctx) else (1024 if ctx.quick else 4096)
    host = np.random.default_rng(SEED).standard_normal((rows, 4096)).astype(np.float32)

    def torch_rfft(x):
        import torch

        return torch.fft.rfft(x)

    return _run(ctx, host, ember.fft.rfft, _peers(torch_rfft, lambda x: _cupy().fft.rfft(x)))


@case("fft_3d", "gbs", "GB/s", better="higher")
def fft_3d(ctx: Context):
    """fftn of 512**3 complex64."""
    n = 32 if _local(ctx) else (256 if ctx.quick else 512)
    host = _complex((n, n, n))

    def torch_fftn(x):
        import torch

        return torch.fft.fftn(x)

    return _run(ctx, host, ember.fft.fftn, _peers(torch_fftn, lambda x: _cupy().fft.fftn(x)))


@case("fft_prime", "gbs", "GB/s", better="higher")
def fft_prime(ctx: Context):
    """fft of 1000003 complex64 (prime: Bluestein in every library)."""
    n = 4099 if _local(ctx) else 1000003
    host = _complex(n)
    return _run(ctx, host, ember.fft.fft, _peers(_torch_fft, lambda x: _cupy().fft.fft(x)))


@case("fft_dispatch", "us", "µs", better="lower")
def fft_dispatch(ctx: Context):
    """Host µs per fft of 256 complex64, plan cached (calls queued back to back)."""
    host = _complex(256)
    calls = 200 if ctx.quick else 2000
    results: dict[str, dict] = {}

    def host_us(fn, sync):
        def one():
            fn()
            sync()
            samples = []
            for _ in range(ctx.repeats):
                t = time.perf_counter()
                for _ in range(calls):
                    fn()
                samples.append((time.perf_counter() - t) * 1e6 / calls)
                sync()
            return {"us": median(samples)}

        return one

    x = ember.asarray(host)
    with _kernels():
        guarded(results, "ember-kernels", host_us(lambda: ember.fft.fft(x), ember.synchronize))
    impls = {"ember": (lambda: ember.fft.fft(x), ember.synchronize)}
    lib = x.backend.fft()
    if lib is not None and hasattr(lib, "run"):  # the binding and cuFFT alone
        ember.fft.fft(x)  # (makes the plan that `run` finds)
        y, ptr = ember.empty(256, ember.complex64), x.backend.native_pointer
        key = ("c2c", "single", (256,), (256,), 1, 256, (256,), 1, 256, 1)
        px, py, stream = ptr(x.buffer), ptr(y.buffer), x.backend.default_stream

        def run() -> None:
            lib.run(key, px, py, False, stream)

        impls["ember-cufft-run"] = (run, ember.synchronize)
    for name, mod in ctx.peers.items():
        if name == "torch":  # (not `px`: run() above reads that one when called)
            peer_x = mod.as_tensor(host, device="cuda")
            fn, sync = (lambda v=peer_x, m=mod: m.fft.fft(v)), mod.cuda.synchronize
        else:
            peer_x = mod.asarray(host)
            fn, sync = (lambda v=peer_x, m=mod: m.fft.fft(v)), mod.cuda.Device().synchronize
        impls[name] = (fn, sync)
    interleaved_into(results, impls, calls, ctx.repeats)  # repeats interleaved: drifts cancel
    mine, theirs = results.get("ember", {}).get("us"), results.get("torch", {}).get("us")
    if mine and theirs:
        results["ember"]["x_torch"] = mine / theirs
    return results
