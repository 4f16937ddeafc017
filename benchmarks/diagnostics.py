"""The cost of run-time checks (``boundscheck=True``, ``raise``/``assert``) and of the error
record, against the same kernels without them.

* ``checks_gather``: ``y[i] = x[idx[i]]``: the gathered index comes from memory, so its
  check stays; ``ember.checks`` is the kernel with ``boundscheck=True``, ``ember`` without.
* ``checks_stencil``: a 2-D 5-point stencil; ``u[i - 1, j]`` and friends cannot be proven
  in range, so every neighbour read is tested.
* ``checks_convert``: float32 -> int32 of every element: ``ember.checks`` tests NaN and the
  range of each value, ``ember.unsafe_trunc`` is the fix the report suggests.
* ``checks_assert``: an ``assert`` on every element (always true).
* ``checks_launch``: launch cost of a tiny kernel that can fail (hidden arguments, the look at
  the error record before the launch and the bookkeeping after) vs the same without.
* ``checks_launch_sync``: launch + synchronize; the record is read once the launch is done.

Throughput in GB/s (bytes the kernel must move, read + write); launches in µs.  There is no
raw floor here: the unchecked kernel is the reference.  ``--backend opencl`` runs it on the
CPU with smaller sizes.
"""

from __future__ import annotations

import numpy as np

import ember
from benchmarks.harness import Context, bandwidth_gbs, case, guarded, per_call_us


def _gather(x, idx, y):
    i = ember.global_id()
    if i < y.shape[0] and i < idx.shape[0]:
        y[i] = x[idx[i]]


def _stencil(u, out):
    i, j = ember.grid(2)
    n, m = u.shape
    if 0 < i < n - 1 and 0 < j < m - 1:
        out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]


def _convert(x, y):
    i = ember.global_id()
    if i < x.shape[0] and i < y.shape[0]:
        y[i] = ember.int32(x[i])


def _truncate(x, y):
    i = ember.global_id()
    if i < x.shape[0] and i < y.shape[0]:
        y[i] = ember.unsafe_trunc(x[i], ember.int32)


def _asserted(x, y):
    i = ember.global_id()
    if i < x.shape[0] and i < y.shape[0]:
        assert x[i] >= 0, "negative"
        y[i] = x[i] * 2


def _doubled(x, y):
    i = ember.global_id()
    if i < x.shape[0] and i < y.shape[0]:
        y[i] = x[i] * 2


def _tiny(y):
    if ember.global_id() == 1 << 40:
        y[0] = 1.0


def _tiny_assert(y):
    assert ember.global_id() < 1 << 40, "never fails"
    if ember.global_id() == 1 << 40:
        y[0] = 1.0


def kernels(checks: bool) -> dict:
    """Fresh kernel objects (so the setting of each is its own)."""
    funcs = (_gather, _stencil, _convert, _truncate, _asserted, _doubled, _tiny, _tiny_assert)
    return {f.__name__[1:]: ember.kernel(f, boundscheck=checks) for f in funcs}


def _size(ctx: Context, full: int) -> int:
    if ctx.backend.dialect == "opencl":
        return full >> 6
    return full >> 4 if ctx.quick else full


def _throughput(ctx: Context, variants: dict, nbytes: int) -> dict:
    sync = ctx.backend.default_stream.synchronize
    n = ctx.iterations(50) if ctx.backend.dialect == "cuda" else 5
    results: dict = {}
    with ember.config.override(diagnostics="off"):
        for name, launch in variants.items():
            guarded(results, name, lambda launch=launch: {
                "GB/s": bandwidth_gbs(launch, nbytes, sync, n, ctx.repeats)
            })  # fmt: skip
    return results


@case("checks_gather", "GB/s", "GB/s", better="higher")
def checks_gather(ctx: Context):
    """Gather y[i] = x[idx[i]]: boundscheck=True against the same kernel without."""
    n = _size(ctx, 1 << 26)
    rng = np.random.default_rng(0)
    x = ember.asarray(rng.random(n, np.float32))
    idx = ember.asarray(rng.integers(0, n, n, dtype=np.int32))
    y = ember.zeros(n, ember.float32)
    ctx.cache.setdefault("keep", []).extend([x, idx, y])
    off, on = kernels(False)["gather"], kernels(True)["gather"]
    return _throughput(
        ctx,
        {
            "ember": lambda: off.launch(n)(x, idx, y),
            "ember.checks": lambda: on.launch(n)(x, idx, y),
        },
        12 * n,
    )


@case("checks_stencil", "GB/s", "GB/s", better="higher")
def checks_stencil(ctx: Context):
    """2-D 5-point stencil (float32): neighbour reads checked or not."""
    side = int(_size(ctx, 1 << 26) ** 0.5)
    u = ember.asarray(np.random.default_rng(1).random((side, side), np.float32))
    out = ember.zeros((side, side), ember.float32)
    ctx.cache.setdefault("keep", []).extend([u, out])
    off, on = kernels(False)["stencil"], kernels(True)["stencil"]
    return _throughput(
        ctx,
        {
            "ember": lambda: off.launch((side, side))(u, out),
            "ember.checks": lambda: on.launch((side, side))(u, out),
        },
        8 * side * side,
    )


@case("checks_convert", "GB/s", "GB/s", better="higher")
def checks_convert(ctx: Context):
    """float32 -> int32: checked conversion vs unchecked (off, and unsafe_trunc with checks on)."""
    n = _size(ctx, 1 << 26)
    x = ember.asarray((np.random.default_rng(2).random(n, np.float32) - 0.5) * 1e6)
    y = ember.zeros(n, ember.int32)
    ctx.cache.setdefault("keep", []).extend([x, y])
    off, on = kernels(False), kernels(True)
    return _throughput(
        ctx,
        {
            "ember": lambda: off["convert"].launch(n)(x, y),
            "ember.checks": lambda: on["convert"].launch(n)(x, y),
            "ember.unsafe_trunc": lambda: on["truncate"].launch(n)(x, y),
        },
        8 * n,
    )


@case("checks_assert", "GB/s", "GB/s", better="higher")
def checks_assert(ctx: Context):
    """y = 2 * x with an assert on every element (always true) vs without."""
    n = _size(ctx, 1 << 26)
    x = ember.asarray(np.random.default_rng(3).random(n, np.float32))
    y = ember.zeros(n, ember.float32)
    ctx.cache.setdefault("keep", []).extend([x, y])
    k = kernels(False)
    return _throughput(
        ctx,
        {
            "ember": lambda: k["doubled"].launch(n)(x, y),
            "ember.assert": lambda: k["asserted"].launch(n)(x, y),
        },
        8 * n,
    )


def _launch_case(ctx: Context, with_sync: bool) -> dict:
    be = ctx.backend
    stream = be.default_stream
    y = ember.zeros(32, ember.float32)
    ctx.cache.setdefault("keep", []).append(y)
    k = kernels(False)
    iters = ctx.iterations(20000 if be.dialect == "cuda" else 2000)
    results: dict = {}
    with ember.config.override(diagnostics="off"):
        for name, kernel in (("ember", k["tiny"]), ("ember.can_fail", k["tiny_assert"])):
            launch = kernel[1, 32]
            if with_sync:

                def fn(launch=launch):
                    launch(y)
                    stream.synchronize()

                guarded(results, name, lambda fn=fn: {"us": per_call_us(fn, iters, ctx.repeats)})
            else:
                guarded(results, name, lambda launch=launch: {
                    "us": per_call_us(lambda: launch(y), iters, ctx.repeats, stream.synchronize)
                })  # fmt: skip
    return results


@case("checks_launch", "us", "us/launch")
def checks_launch(ctx: Context):
    """Launch a tiny kernel that can fail (an assert) vs the same without."""
    return _launch_case(ctx, with_sync=False)


@case("checks_launch_sync", "us", "us/launch+sync")
def checks_launch_sync(ctx: Context):
    """Launch + synchronize a tiny kernel that can fail vs the same without."""
    return _launch_case(ctx, with_sync=True)
