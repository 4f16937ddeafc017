"""The draws' device code: what one Philox block (four 32-bit words) becomes for each
distribution, and the kernel that fills an array with them (the host side, the seeding and
the stream layout are in :mod:`ember.array.random`)."""

from __future__ import annotations

import functools

import ember
from ember.array import philox as ph
from ember.compiler.kernel import Kernel


# --------------------------------------------------------------------- distributions
# Each maps one Philox block (four words) and two parameters to up to four values.
def d_uniform32(w0, w1, w2, w3, lo, span):
    return (lo + span * ph.to_float32(w0), lo + span * ph.to_float32(w1),
            lo + span * ph.to_float32(w2), lo + span * ph.to_float32(w3))  # fmt: skip


def d_uniform64(w0, w1, w2, w3, lo, span):
    return lo + span * ph.to_float64(w0, w1), lo + span * ph.to_float64(w2, w3), lo, lo


def d_normal32(w0, w1, w2, w3, loc, scale):
    z0, z1, z2, z3 = d_std_normal32(w0, w1, w2, w3, loc, scale)
    return loc + scale * z0, loc + scale * z1, loc + scale * z2, loc + scale * z3


def d_std_normal32(w0, w1, w2, w3, unused0, unused1):
    z0, z1 = ph.box_muller32(w0, w1)
    z2, z3 = ph.box_muller32(w2, w3)
    return z0, z1, z2, z3


def d_normal64(w0, w1, w2, w3, loc, scale):
    z0, z1 = ph.box_muller64(w0, w1, w2, w3)
    return loc + scale * z0, loc + scale * z1, loc, loc


def d_std_normal64(w0, w1, w2, w3, unused0, unused1):
    z0, z1 = ph.box_muller64(w0, w1, w2, w3)
    return z0, z1, z0, z1


def exp32(w, scale):
    return -scale * ember.log1p(-ph.to_float32(w))


def d_exponential32(w0, w1, w2, w3, scale, unused):
    return exp32(w0, scale), exp32(w1, scale), exp32(w2, scale), exp32(w3, scale)


def d_exponential64(w0, w1, w2, w3, scale, unused):
    a = -scale * ember.log1p(-ph.to_float64(w0, w1))
    b = -scale * ember.log1p(-ph.to_float64(w2, w3))
    return a, b, a, b


def scale64(hi, lo, r):
    """``floor((hi * 2**32 + lo) * r / 2**64)`` for ``r <= 2**32``, exactly."""
    return (ember.uint64(hi) * r + ((ember.uint64(lo) * r) >> 32)) >> 32


def d_int_narrow(w0, w1, w2, w3, low, r):
    a = ember.uint64(low) + scale64(w0, w1, r)
    b = ember.uint64(low) + scale64(w2, w3, r)
    return a, b, a, b


def mac(a, b, acc, carry):
    """``a * b + acc + carry`` (all below 2**32) as ``(low word, high word)``."""
    t = ember.uint64(a) * ember.uint64(b) + ember.uint64(acc) + ember.uint64(carry)
    return t & 0xFFFFFFFF, t >> 32


def mulhi128(a3, a2, a1, a0, r):
    """``floor(x * r / 2**128)`` for ``x = a3 a2 a1 a0`` (32-bit limbs, a3 the highest)
    and a 64-bit ``r``: schoolbook multiplication of the limbs, keeping the top two."""
    b0 = r & 0xFFFFFFFF
    b1 = r >> 32
    _, c = mac(a0, b0, 0, 0)
    p1, p2 = mac(a0, b1, 0, c)
    _, c = mac(a1, b0, p1, 0)
    p2, p3 = mac(a1, b1, p2, c)
    _, c = mac(a2, b0, p2, 0)
    p3, p4 = mac(a2, b1, p3, c)
    _, c = mac(a3, b0, p3, 0)
    p4, p5 = mac(a3, b1, p4, c)
    return (p5 << 32) | p4


def in_span(w0, w1, w2, w3, r):
    """An integer of ``[0, r)`` from one block's words (``r`` 0 stands for ``2**64``): the
    first two words scaled exactly up to ``r = 2**32`` (as :func:`d_int_narrow` scales each
    pair), all four above."""
    x = (ember.uint64(w0) << 32) | ember.uint64(w1)
    if r != 0:
        if r <= 0x100000000:
            x = scale64(w0, w1, r)
        else:
            x = mulhi128(w0, w1, w2, w3, r)
    return x


def d_int_wide(w0, w1, w2, w3, low, r):
    a = ember.uint64(low) + in_span(w0, w1, w2, w3, r)  # r above 2**32, or 0
    return a, a, a, a


def s_integers(k0, k1, c0, c1, low, span, unused0, unused1):
    """One integer of ``[low, low + span)`` (``span`` 0: ``2**64``) from the value's own
    block: the draws with array bounds (:func:`.random_arrays.integers`)."""
    w0, w1, w2, w3 = ph.philox((k0, k1), (c0, c1, 0, 0))
    return ember.uint64(low) + in_span(w0, w1, w2, w3, span)


# name -> (device function per dtype kind/size, values per block)
_DISTS = {
    ("uniform", 4): (d_uniform32, 4),
    ("uniform", 8): (d_uniform64, 2),
    ("normal", 4): (d_normal32, 4),
    ("normal", 8): (d_normal64, 2),
    ("std_normal", 4): (d_std_normal32, 4),  # normal(0, 1): the same values, no affine step
    ("std_normal", 8): (d_std_normal64, 2),
    ("exponential", 4): (d_exponential32, 4),
    ("exponential", 8): (d_exponential64, 2),
    ("int_narrow", 0): (d_int_narrow, 2),
    ("int_wide", 0): (d_int_wide, 1),
}


@functools.cache
def fill_kernel(dist: str, size: int) -> tuple[Kernel, int]:
    """The kernel writing draws of ``dist`` (and its values per block).

    Each thread stores its Philox block's values directly, its stores 16 bytes from its
    neighbours' (float32).  On an H100 (2026-11-24, 2**28 float32) that was faster than
    passing a work-group's values through a shared tile to make each warp's stores
    contiguous (uniform 2789 vs 2498 GB/s, normal 1620 vs 1417): the L2 merges the
    strided stores, and the tile's barriers cost more."""
    fn, per = _DISTS[(dist, size)]
    k = _fill(fn, per)
    k.__name__ = k.__qualname__ = f"rng_{dist}{size * 8 or ''}"
    return Kernel(k), per


def _fill(DIST, PER):
    def fill(out, n, k0, k1, base_lo, base_hi, p0, p1):
        blocks = (n + PER - 1) // PER
        b = ember.global_id()
        while b < blocks:
            c0, c1, c2, c3 = ph.block_counter(base_lo, base_hi, b)
            w0, w1, w2, w3 = ph.philox((k0, k1), (c0, c1, c2, c3))
            v0, v1, v2, v3 = DIST(w0, w1, w2, w3, p0, p1)
            i = b * PER
            if i + PER <= n:  # every block but the last: no test per value (6% on an H100)
                out[i] = out.dtype(v0)
                if PER > 1:
                    out[i + 1] = out.dtype(v1)
                if PER > 2:
                    out[i + 2] = out.dtype(v2)
                    out[i + 3] = out.dtype(v3)
            else:
                out[i] = out.dtype(v0)
                if PER > 1:
                    if i + 1 < n:
                        out[i + 1] = out.dtype(v1)
                if PER > 2:
                    if i + 2 < n:
                        out[i + 2] = out.dtype(v2)
            b += ember.global_size()

    return fill
