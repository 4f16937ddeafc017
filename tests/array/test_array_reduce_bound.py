"""The bound launches of repeated reductions (``reduce.Call._bind``): after the first call
of a layout, a reduction launches with every argument fixed but the addresses of its
input, outputs and state arrays.  These tests make sure that path is taken and that it
computes what NumPy does: every dtype, other data and other offsets of the same layout,
reversed views (the input's address moves by the view's lowest element), two passes
(state arrays), ``var_mean``'s second output, and a misaligned input (the checked path).
"""

from __future__ import annotations

import numpy as np
import pytest
from array_common import DTYPES, check, sample

import ember
from ember.array import reductions
from ember.compiler import args as argmod


def _bound(fn) -> list:
    """The prepared calls of the reduction ``fn`` that launch bound."""
    return [c for k, c in reductions._calls.items() if k[0] is fn.__wrapped__ and c.fast]


def _tol(dtype: str) -> float | None:
    return {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}.get(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeated_small_reductions_of_every_dtype(backend, dtype):
    host = sample(dtype, (3, 32), seed=3)
    big = ember.asarray(host)
    rows = [big[i] for i in range(3)]  # one layout, three offsets into one buffer
    for _ in range(2):  # the first round prepares and binds; the second runs bound
        for d, h in zip(rows, host, strict=True):
            check(d.sum(), h.sum(), rtol=_tol(dtype))
            check(d.max(axis=0), h.max(axis=0))
    assert _bound(reductions.sum) and _bound(reductions.max)
    fresh = sample(dtype, 32, seed=4)  # other data in a new buffer, the same layout
    check(ember.asarray(fresh).sum(), fresh.sum(), rtol=_tol(dtype))


def test_reversed_views_move_the_bound_address(backend):
    host = sample("float32", 64, seed=5)
    d = ember.asarray(host)
    for _ in range(2):
        for view in (slice(31, None, -1), slice(63, 31, -1), slice(40, 8, -1)):
            check(d[view].sum(), host[view].sum(dtype=np.float64).astype(np.float32), rtol=1e-5)
            check(d[view].argmax(), host[view].argmax())
    assert _bound(reductions.sum) and _bound(reductions.argmax)


def test_axis_reductions_of_views_run_bound(backend):
    host = sample("int32", (6, 10), seed=6, low=-50, high=50)
    d = ember.asarray(host)
    for _ in range(2):
        for v in (np.s_[:3], np.s_[3:], np.s_[1:4, ::-1]):
            check(d[v].sum(axis=0), host[v].sum(axis=0))
            check(d[v].T.min(axis=1), host[v].T.min(axis=1))
    assert _bound(reductions.sum) and _bound(reductions.min)


def test_two_pass_reductions_bind_their_states(backend):
    n = 1 << 16  # long enough to split over blocks: a second pass merges the states
    host = sample("float32", n, seed=7)
    for seed in (8, 9):
        d = ember.asarray(sample("float32", n, seed=seed))
        d.sum()
    calls = _bound(reductions.sum)
    if not any(c.plan.states for c in calls):
        pytest.skip("this device reduces 2**16 elements in one pass")
    for k in range(3):
        data = host * (k + 1)
        expect = data.astype(np.float64)
        d = ember.asarray(data)
        check(d.sum(), expect.sum().astype(np.float32), rtol=1e-6)
        var, mean = ember.var_mean(d)
        check(var, expect.var().astype(np.float32), rtol=1e-4)
        check(mean, expect.mean().astype(np.float32), rtol=1e-5)


def test_var_mean_writes_both_outputs_bound(backend):
    host = sample("float64", (4, 16), seed=10)
    d = ember.asarray(host)
    for _ in range(2):
        for i in range(4):
            var, mean = ember.var_mean(d[i], correction=1)
            check(var, host[i].var(ddof=1), rtol=1e-12)
            check(mean, host[i].mean(), rtol=1e-12)
    assert _bound(reductions.var_mean)


def test_a_misaligned_input_takes_the_checked_path(backend):
    from ember.array.ndarray import ndarray

    d = ember.asarray(sample("float32", 33, seed=11))
    d[:32].sum()
    d[:32].sum()  # bound now
    odd = ndarray((32,), d.dtype, d.buffer, d.backend, (4,), 2)  # 2 bytes in: not aligned
    with pytest.raises(ember.EmberError, match="not multiples of its item size"):
        odd.sum()


# --------------------------------------------------------------------- the binder itself
@ember.kernel
def _axpy(out, a, x, y, n):
    i = ember.global_id()
    if i < n:
        out[i] = a * x[i] + y[i]


def test_a_bound_launch_passes_what_the_packer_would(backend):
    """The native values of a bound launch equal the packer's for the new arrays."""
    host = np.arange(16, dtype=np.float32)
    big = ember.asarray(np.arange(64, dtype=np.float32))
    x, y, out = big[:16], big[16:32], ember.empty(16, ember.float32)
    args = (out, np.float32(2), x, y, 16)
    spec = _axpy.dispatch(args)
    spec.launch(args, (1, 1, 1), (16, 1, 1))
    check(out, 2 * host + host + 16)
    seen = []
    go = argmod.make_bound(
        spec.abi, spec.pack(*args), {0: (0, 0), 2: (1, 4), 3: (1, 0)},
        lambda grid, block, values, shared, stream: seen.append(values), (1, 1, 1), (16, 1, 1),
        backend.dialect.separate_offsets,
    )  # fmt: skip
    other, shifted = ember.empty(16, ember.float32), big[32:48]
    go(other, shifted)
    assert seen == [spec.pack(other, np.float32(2), big[33:49], shifted, 16)]
