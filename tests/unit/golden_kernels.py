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
