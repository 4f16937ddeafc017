"""Reductions: bandwidth of full and axis reductions and the dispatch cost of a small one -
Ember against CuPy and PyTorch in the same run (the issue-11 table; target: Ember >= 0.95 x
the better peer's GB/s, and a small reduction's host time <= PyTorch's).

GB/s counts the bytes read (the outputs are small).  The data are random float32 (made on
the host once, copied to each library), so ``argmax`` does real comparisons.

* ``reduce_sum``: ``x.sum()`` of 1 GiB.
* ``reduce_max`` / ``reduce_argmax``: ``x.max()`` / ``x.argmax()`` of 1 GiB.
* ``reduce_sum_axis0`` / ``reduce_sum_axis1``: ``m.sum(axis=...)`` of a 16k x 16k matrix
  (1 GiB): a slow axis (threads across columns) and the fast one (a block per row).
* ``reduce_std_mean_axis1``: mean and standard deviation of each row of the 16k x 16k
  matrix.  Ember: ``ember.std_mean`` (one pass); PyTorch: ``torch.std_mean``; CuPy has no
  fused form (its row is ``m.mean(1)`` and ``m.std(1)``).
* ``reduce_var``: ``x.var()`` of 1 GiB (Welford, one pass).
* ``reduce_dispatch``: host time per ``y.sum()`` and ``y.max(axis=0)`` of 32 float32
  elements (µs per call, launches queued, one sync per repeat; the libraries' repeats
  interleaved so that the machine's drifts fall on all alike).

``x_torch`` is Ember / PyTorch; ``x_best`` Ember / the better peer (higher is better for
GB/s; for µs lower is better).
"""

from __future__ import annotations

import math

import numpy as np

import ember
from benchmarks.arrays import _bandwidth, _elements, _release, _sync
from benchmarks.harness import Context, case, interleaved_into


def _host(ctx: Context, shape) -> np.ndarray:
    """Random float32 data of ``shape``, made once per run and shared by the cases."""
    key = f"reduce-host-{shape}"
    return ctx.once(key, lambda: np.random.default_rng(0).random(shape, dtype=np.float32))


def _square(ctx: Context) -> tuple[int, int]:
    side = 1 << (int(math.log2(_elements(ctx))) // 2)  # 16k x 16k on CUDA
    return side, side


def _on(name: str, mod, host: np.ndarray):
    if name == "torch":
        return mod.from_numpy(host).to("cuda")
    return mod.asarray(host)


def _peer_sync(name: str, mod):
    return mod.cuda.synchronize if name == "torch" else mod.cuda.Device().synchronize


def _ratios(results: dict, metric: str, higher: bool = True) -> None:
    mine = results.get("ember", {}).get(metric)
    peers = [results.get(p, {}).get(metric) for p in ("torch", "cupy")]
    peers = [p for p in peers if p]
    if not mine or not peers:
        return
    if results.get("torch", {}).get(metric):
        results["ember"]["x_torch"] = mine / results["torch"][metric]
    best = max(peers) if higher else min(peers)
    results["ember"]["x_best"] = mine / best


def _measure(ctx: Context, shape, ember_fns, peer_fns) -> dict:
    """GB/s of reading ``shape`` float32: ``ember_fns(x)`` and ``peer_fns(name, mod, a)``
    give ``{impl: fn}``; the arrays are freed between libraries."""
    host = _host(ctx, shape)
    nbytes = host.nbytes
    results: dict[str, dict[str, float]] = {}
    x = ember.asarray(host)
    for impl, fn in ember_fns(x).items():
        _bandwidth(ctx, results, impl, fn, nbytes, _sync(ctx))
    del x
    _release(ctx)
    for name, mod in ctx.peers.items():
        try:
            impls = peer_fns(name, mod, _on(name, mod, host))
        except Exception as exc:  # a peer that cannot run the case
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        for impl, fn in impls.items():
            _bandwidth(ctx, results, impl, fn, nbytes, _peer_sync(name, mod))
        impls.clear()
        _release(ctx)
    _ratios(results, "gbs")
    return results


def _same(method: str, **kwargs):
    """The same method call on every library (``x.sum()``, ``x.max()``...)."""

    def peer(name, mod, a):
        if name == "torch" and "axis" in kwargs:
            dim = kwargs["axis"]
            return {name: lambda: getattr(a, method)(dim=dim)}
        return {name: lambda: getattr(a, method)(**kwargs)}

    return lambda x: {"ember": lambda: getattr(x, method)(**kwargs)}, peer


# ------------------------------------------------------------------ bandwidth
@case("reduce_sum", "gbs", "GB/s", better="higher")
def reduce_sum(ctx: Context):
    """x.sum() of 1 GiB float32."""
    return _measure(ctx, (_elements(ctx),), *_same("sum"))


@case("reduce_max", "gbs", "GB/s", better="higher")
def reduce_max(ctx: Context):
    """x.max() of 1 GiB float32."""
    return _measure(ctx, (_elements(ctx),), *_same("max"))


@case("reduce_argmax", "gbs", "GB/s", better="higher")
def reduce_argmax(ctx: Context):
    """x.argmax() of 1 GiB float32 (first occurrence)."""
    return _measure(ctx, (_elements(ctx),), *_same("argmax"))


@case("reduce_sum_axis0", "gbs", "GB/s", better="higher")
def reduce_sum_axis0(ctx: Context):
    """m.sum(axis=0) of a 16k x 16k float32 matrix (a slow axis)."""
    return _measure(ctx, _square(ctx), *_same("sum", axis=0))


@case("reduce_sum_axis1", "gbs", "GB/s", better="higher")
def reduce_sum_axis1(ctx: Context):
    """m.sum(axis=1) of a 16k x 16k float32 matrix (the fast axis)."""
    return _measure(ctx, _square(ctx), *_same("sum", axis=1))


@case("reduce_std_mean_axis1", "gbs", "GB/s", better="higher")
def reduce_std_mean_axis1(ctx: Context):
    """Mean and std of each row of a 16k x 16k float32 matrix (one pass where fused)."""

    def mine(x):
        return {"ember": lambda: ember.std_mean(x, axis=1)}

    def peer(name, mod, a):
        if name == "torch":
            return {"torch": lambda: mod.std_mean(a, dim=1, correction=0)}
        return {"cupy": lambda: (a.mean(axis=1), a.std(axis=1))}  # two calls: no fused form

    return _measure(ctx, _square(ctx), mine, peer)


@case("reduce_var", "gbs", "GB/s", better="higher")
def reduce_var(ctx: Context):
    """x.var() of 1 GiB float32 (one pass, Welford)."""
    return _measure(ctx, (_elements(ctx),), *_same("var"))


# ------------------------------------------------------------------ dispatch
@case("reduce_dispatch", "us", "us/op")
def reduce_dispatch(ctx: Context):
    """Host time per y.sum() of 32 float32 elements (kernel launches queued)."""
    iters = ctx.iterations(20000)
    results: dict[str, dict[str, float]] = {}
    host = np.ones(32, np.float32)
    y = ember.asarray(host)
    sync = _sync(ctx)
    impls = {"ember": (y.sum, sync), "ember-max-axis0": (lambda: y.max(axis=0), sync)}
    for name, mod in ctx.peers.items():
        impls[name] = (_on(name, mod, host).sum, _peer_sync(name, mod))
    interleaved_into(results, impls, iters, ctx.repeats)
    _ratios(results, "us", higher=False)
    return results
