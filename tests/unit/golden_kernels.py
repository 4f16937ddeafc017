"""Kernels whose generated source is pinned in ``tests/unit/golden`` (both dialects).

Keep this file stable: the generated source quotes its line numbers.
"""

from __future__ import annotations

import math

import ember

TILE = 8


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@ember.kernel
def stencil(u, out):
    i, j = ember.grid(2)
    n, m = u.shape
    if 0 < i < n - 1 and 0 < j < m - 1:
        out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@ember.kernel
def matmul(a, b, c):
    ta = ember.shared((TILE, TILE), ember.float32)
    tb = ember.shared((TILE, TILE), ember.float32)
    tx, ty = ember.thread_idx.x, ember.thread_idx.y
    row = ember.block_idx.y * TILE + ty
    col = ember.block_idx.x * TILE + tx
    acc = 0.0
    for t in range(a.shape[1] // TILE):
        ta[ty, tx] = a[row, t * TILE + tx]
        tb[ty, tx] = b[t * TILE + ty, col]
        ember.barrier()
        for k in range(TILE):
            acc += ta[ty, k] * tb[k, tx]
        ember.barrier()
    c[row, col] = acc


@ember.kernel
def histogram(values, hist):
    i = ember.global_id()
    if i < values.shape[0]:
        ember.atomic_add(hist, values[i] % hist.shape[0], 1.0)


def split(v, parts):
    return v // parts, v % parts


def scaled(v, parts):
    whole, rest = split(v, parts)
    return whole * 2 + rest


@ember.kernel
def mixed(x, h, out):
    i = ember.global_id()
    if i >= x.shape[0]:
        return
    k = 0
    total = 0
    while True:
        k += 1
        if k % 3 == 0:
            continue
        if k > 10:
            break
        total += scaled(x[i], k)
    for j in range(i, -1, -2):
        total -= j
    out[i] = total
    h[i] = h[i] * 1.5 + math.sqrt(abs(h[i]))


@ember.kernel
def warp_total(x, out):
    i = ember.global_id()
    s = ember.warp_sum(x[i])
    if ember.lane_id() == 0:
        out[i // 32] = ember.shfl_down(s, 1) + s


# ---------------------------------------------------------------- issue 14: the language
# (appended: the sources above quote their line numbers)
import numpy as np  # noqa: E402

WEIGHTS = np.array([0.25, 0.5, 0.25], dtype=np.float32)


def row_total(r):
    total = 0.0
    for k in range(len(r)):
        total += r[k]
    return total


def block_scratch(v):
    tmp = ember.shared(64, ember.float32)  # a shared array in a device function
    tmp[ember.thread_idx.x] = v
    ember.barrier()
    return tmp[63 - ember.thread_idx.x]


@ember.kernel
def views(a, out, lo, hi):
    dyn = ember.shared(ember.block_dim.x, ember.float32)
    loc = ember.local((2, 3), ember.float32)
    i = ember.global_id()
    if i < a.shape[0]:
        loc[1, 0] = row_total(a[i, lo:hi])
        loc[0, 2] = row_total(a[:, 0])
        dyn[ember.thread_idx.x] = loc[1, 0] + loc[0, 2] + WEIGHTS[i % 3]
        out[i] = dyn[ember.thread_idx.x] + block_scratch(a[i, -1])


@ember.kernel
def warps(x, out):
    i = ember.global_id()
    v = x[i]
    mask = ember.ballot(v > 0)
    if ember.all_sync(v > -1.0) and ember.any_sync(mask, v < 1.0):
        v = ember.shfl_xor(v, 1, width=8)
    out[i] = v + ember.popc(mask) + ember.activemask()


@ember.kernel
def atomics(small, half, counters):
    i = ember.global_id()
    ember.atomic_cas(small, i % 4, small.dtype(0), small.dtype(i))
    ember.atomic_exch(half, i % 2, half.dtype(i))
    ember.atomic_inc(counters, 0, 16)
    ember.atomic_dec(counters, 1, 16)


def pair(a, b):
    return a * b


@ember.kernel
def template(out, OP, CT, *ops):
    i = ember.global_id()
    acc = CT(0)
    for k in ember.static_range(len(ops)):
        acc += CT(ops[k][i])
    out[i] = OP(acc, ember.erfinv(CT(0.5)))


@ember.kernel
def grid_steps(buf, steps):
    i = ember.global_id()
    for _ in range(steps):
        buf[i] += 1.0
        ember.grid_sync()


@ember.kernel
def peers(x, keys, out):
    i = ember.global_id()
    if x[i] > 0:  # only some lanes: the others must not count as peers
        out[i] = ember.popc(ember.match_any_sync(x[i])) + ember.match_any_sync(keys[i])
