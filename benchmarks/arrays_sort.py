"""Scans, sorting, masks and sets: Ember against CuPy and PyTorch in the same run, timed with
each library's CUDA events on its own stream, medians of ``repeats`` (the method of
DESIGN.md's array baselines, measured on an H100 on 2026-11-23).

* ``scan_cumsum``: ``cumsum`` of 2**26 float32 (GB/s counts read + write, 8 bytes per
  element).  ``ember`` is the single-pass decoupled look-back scan; ``ember-3pass`` the
  reduce-then-scan that other devices run (for the comparison; target: ember >= 1.25 x torch).
* ``scan_cumsum_int32``: ``cumsum`` of 2**26 int32 in [-1000, 1000), summed into int64 as
  NumPy, PyTorch and CuPy do (GB/s: 12 bytes per element); the look-back's values are
  8 bytes, too wide to share the flags' words.
* ``sort_values``: ``sort`` of 2**26 random float32 (GB/s, 8 bytes per element; PyTorch's
  ``torch.sort`` also returns indices).  ``ember-classic``: radix passes without onesweep.
  Target: >= the better peer (CuPy's CUB).
* ``sort_argsort``: ``argsort`` of the same (target: >= PyTorch).
* ``mask_select``: ``x[x > 0.5]`` of 2**26 uniform float32, comparison included (GB/s of
  the input: 4 bytes per element; target: >= PyTorch).
* ``unique_int32``: sorted unique values of 2**24 int32 drawn from ``[0, 2**24)`` (about 63 %
  distinct), µs per call (target: <= PyTorch's time).  ``ember`` marks a table of the range
  (``ember.array.sets``); ``ember-sort`` is the radix-sort path that wider ranges take.
* ``unique_int32_wide``: the same from the whole int32 range (every library sorts).

``x_torch`` in Ember's rows is Ember / PyTorch (GB/s: higher is better; µs: lower).
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

import ember
from benchmarks.harness import Context, case, guarded, median

SEED = 0


def _n(ctx: Context, full_log2: int) -> int:
    if ctx.backend.name != "cuda":
        return 1 << 16  # a local check on PoCL
    return 1 << (full_log2 - 2 if ctx.quick else full_log2)


def _iters(ctx: Context) -> int:
    return 3 if ctx.quick else 10


# ------------------------------------------------------------------ timing
def _ember_timer(ctx: Context):
    be = ctx.backend
    if be.name != "cuda":  # no device timer worth having on the CPU device: wall clock
        return None
    return (
        lambda: be.create_event(timing=True),
        lambda e: e.record(be.default_stream),
        lambda a, b: a.elapsed_ms(b),
        be.synchronize,
    )


def _peer_timer(name: str, mod):
    if name == "torch":
        return (
            lambda: mod.cuda.Event(enable_timing=True),
            lambda e: e.record(),
            lambda a, b: a.elapsed_time(b),
            mod.cuda.synchronize,
        )
    return (
        mod.cuda.Event,
        lambda e: e.record(),
        mod.cuda.get_elapsed_time,
        mod.cuda.Device().synchronize,
    )


def time_ms(fn, timer, n: int, repeats: int):
    """Median over ``repeats`` of milliseconds per ``fn()`` (``n`` calls between two events;
    ``timer`` is ``(make event, record, elapsed ms, sync)``, None for the wall clock)."""
    if timer is None:
        fn()
        ember.synchronize()
        samples = []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(n):
                fn()
            ember.synchronize()
            samples.append((time.perf_counter() - t) * 1e3 / n)
        return median(samples)
    make, record, elapsed, sync = timer
    fn()
    sync()
    start, end = make(), make()
    samples = []
    for _ in range(repeats):
        record(start)
        for _ in range(n):
            fn()
        record(end)
        sync()
        samples.append(elapsed(start, end) / n)
    return median(samples)


def _measure(ctx, results, impl, fn, timer, nbytes):
    def one():
        ms = time_ms(fn, timer, _iters(ctx), ctx.repeats)
        if nbytes is None:
            return {"us": ms.map(lambda v: v * 1e3)}
        return {"gbs": ms.map(lambda v: nbytes / (v * 1e-3) / 1e9)}

    guarded(results, impl, one)


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


def _run(ctx: Context, host: np.ndarray, ember_fns: dict, peer_fn, nbytes, metric: str):
    """Time Ember's functions on ``host`` copied to the device, then each peer's."""
    results: dict[str, dict] = {}
    x = ember.asarray(host)
    timer = _ember_timer(ctx)
    for impl, make in ember_fns.items():
        with make() as fn:
            _measure(ctx, results, impl, lambda fn=fn, x=x: fn(x), timer, nbytes)
    x = None
    _release(ctx)
    for name, mod in ctx.peers.items():
        try:
            px = mod.as_tensor(host, device="cuda") if name == "torch" else mod.asarray(host)
            fn = peer_fn(name, mod)
        except Exception as exc:
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        _measure(ctx, results, name, lambda px=px, fn=fn: fn(px), _peer_timer(name, mod), nbytes)
        del px
        _release(ctx)
    mine, theirs = results.get("ember", {}).get(metric), results.get("torch", {}).get(metric)
    if mine and theirs:
        results["ember"]["x_torch"] = mine / theirs
    return results


@contextlib.contextmanager
def _plain(fn):
    yield fn


@contextlib.contextmanager
def _without_forward_progress(ctx: Context, fn):
    """``fn`` as a backend without ``forward_progress`` runs it (multi-pass designs)."""
    cls = type(ctx.backend)
    before = cls.forward_progress
    cls.forward_progress = False
    try:
        yield fn
    finally:
        cls.forward_progress = before


# ------------------------------------------------------------------ cases
@case("scan_cumsum", "gbs", "GB/s", better="higher")
def scan_cumsum(ctx: Context):
    """cumsum of 2**26 float32 (read + write)."""
    n = _n(ctx, 26)
    host = np.random.default_rng(SEED).random(n, dtype=np.float32)
    fns = {
        "ember": lambda: _plain(ember.cumsum),
        "ember-3pass": lambda: _without_forward_progress(ctx, ember.cumsum),
    }

    def peer(name, mod):
        return (lambda x: mod.cumsum(x, 0)) if name == "torch" else mod.cumsum

    return _run(ctx, host, fns, peer, 8 * n, "gbs")


@case("scan_cumsum_int32", "gbs", "GB/s", better="higher")
def scan_cumsum_int32(ctx: Context):
    """cumsum of 2**26 int32 into int64 (read 4 + write 8 bytes per element)."""
    n = _n(ctx, 26)
    host = np.random.default_rng(SEED).integers(-1000, 1000, n, dtype=np.int32)
    fns = {"ember": lambda: _plain(ember.cumsum)}

    def peer(name, mod):
        return (lambda x: mod.cumsum(x, 0)) if name == "torch" else mod.cumsum

    return _run(ctx, host, fns, peer, 12 * n, "gbs")


@case("sort_values", "gbs", "GB/s", better="higher")
def sort_values(ctx: Context):
    """sort of 2**26 random float32 (read + write)."""
    n = _n(ctx, 26)
    host = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
    fns = {
        "ember": lambda: _plain(ember.sort),
        "ember-classic": lambda: _without_forward_progress(ctx, ember.sort),
    }

    def peer(name, mod):
        return (lambda x: mod.sort(x)[0]) if name == "torch" else mod.sort

    return _run(ctx, host, fns, peer, 8 * n, "gbs")


@case("sort_argsort", "gbs", "GB/s", better="higher")
def sort_argsort(ctx: Context):
    """argsort of 2**26 random float32 (read + write of the keys)."""
    n = _n(ctx, 26)
    host = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
    fns = {
        "ember": lambda: _plain(ember.argsort),
        "ember-classic": lambda: _without_forward_progress(ctx, ember.argsort),
    }
    return _run(ctx, host, fns, lambda name, mod: mod.argsort, 8 * n, "gbs")


@case("mask_select", "gbs", "GB/s", better="higher")
def mask_select(ctx: Context):
    """x[x > 0.5] of 2**26 uniform float32, the comparison included (input bytes)."""
    n = _n(ctx, 26)
    host = np.random.default_rng(SEED).random(n, dtype=np.float32)

    def select(x):
        return x[x > 0.5]

    return _run(ctx, host, {"ember": lambda: _plain(select)}, lambda name, mod: select,
                4 * n, "gbs")  # fmt: skip


@contextlib.contextmanager
def _sorting_unique(fn):
    """``fn`` with the unique family's table turned off (every integer range sorts)."""
    from ember.array import sets

    saved = sets.DENSE_SPAN, sets.DENSE_FLOOR
    sets.DENSE_SPAN = sets.DENSE_FLOOR = -(1 << 62)
    try:
        yield fn
    finally:
        sets.DENSE_SPAN, sets.DENSE_FLOOR = saved


def _unique(ctx: Context, low: int, high: int):
    n = _n(ctx, 24)
    host = np.random.default_rng(SEED).integers(low, high, n, dtype=np.int32)
    fns = {"ember": lambda: _plain(ember.unique_values),
           "ember-sort": lambda: _sorting_unique(ember.unique_values)}  # fmt: skip

    def peer(name, mod):
        return mod.unique

    return _run(ctx, host, fns, peer, None, "us")


@case("unique_int32", "us", "us")
def unique_int32(ctx: Context):
    """Sorted unique values of 2**24 int32 from [0, 2**24) (DESIGN.md's case): a range the
    table takes."""
    return _unique(ctx, 0, _n(ctx, 24))


@case("unique_int32_wide", "us", "us")
def unique_int32_wide(ctx: Context):
    """Sorted unique values of 2**24 int32 from the whole int32 range: Ember sorts."""
    return _unique(ctx, -(1 << 31), 1 << 31)
