"""NumPy's ``packbits`` and ``unpackbits``: bits of an array packed into, and unpacked from,
``uint8`` bytes along an axis, each one Ember kernel.

The input is made C-contiguous (a copy only when it is not) and seen as ``outer x n x
inner`` with the packed axis in the middle (``axis=None``: the flattened array, ``outer =
inner = 1``).  :func:`pack_kernel` gives each output byte ``(o, j, r)`` one thread, which
reads the up-to-8 elements ``(o, 8j .. 8j + 7, r)`` (missing ones past the end count as
zero, NumPy's padding) and sets a bit for each nonzero one, most significant first
(``bitorder='big'``) or least significant first (``'little'``).  :func:`unpack_kernel`
gives each output bit ``(o, k, r)`` one thread, which shifts byte ``(o, k // 8, r)``;
positions past the input's bits (a ``count`` longer than ``8 n``) are zero, as NumPy's.
Both kernels are grid-stride loops over the output; the bit order is a launch argument,
so each input dtype compiles one packing kernel and unpacking compiles one in all.
"""

from __future__ import annotations

import functools
import math
import operator

import ember
from ember import dtypes
from ember.array import kernels, launch, manipulation
from ember.array.ndarray import ndarray, not_on_device
from ember.compiler.kernel import Kernel

BLOCK = 256
U8 = dtypes.uint8


@functools.cache
def pack_kernel(dt: dtypes.DType) -> Kernel:
    """``out[(o * m + j) * inner + r]``: the nonzero flags of ``a[o, 8j .. 8j + 7, r]``
    (``a`` C-contiguous ``outer x n x inner``, ``m = ceil(n / 8)``) as one byte."""
    ZERO = dt(0)  # noqa: N806

    def packbits(total, n, m, inner, a, little, out):
        i = ember.global_id()
        while i < total:
            r = i % inner
            j = (i // inner) % m
            o = i // (inner * m)
            byte = 0
            b = 0
            while b < 8:
                k = j * 8 + b
                if k < n:
                    if a[(o * n + k) * inner + r] != ZERO:
                        byte = byte | ((1 << b) if little else (128 >> b))
                b += 1
            out[i] = ember.uint8(byte)
            i += ember.global_size()

    return kernels._named(packbits, f"packbits_{dt.name}")


@functools.cache
def unpack_kernel() -> Kernel:
    """``out[(o * c + k) * inner + r]``: bit ``k % 8`` of byte ``a[o, k // 8, r]`` (``a``
    C-contiguous ``outer x n x inner``); 0 for ``k >= 8 n``."""

    def unpackbits(total, n, c, inner, a, little, out):
        i = ember.global_id()
        while i < total:
            r = i % inner
            k = (i // inner) % c
            o = i // (inner * c)
            bit = 0
            if k < n * 8:
                byte = ember.int32(a[(o * n + k // 8) * inner + r])
                shift = (k % 8) if little else (7 - k % 8)
                bit = (byte >> shift) & 1
            out[i] = ember.uint8(bit)
            i += ember.global_size()

    return kernels._named(unpackbits, "unpackbits")


def _little(bitorder, what: str) -> bool:
    if bitorder not in ("big", "little"):
        raise ValueError(f"ember.{what}: 'order' must be either 'little' or 'big', not "
                         f"{bitorder!r}")  # fmt: skip
    return bitorder == "little"


def _lanes(a: ndarray, axis, what: str) -> tuple[ndarray, int, tuple[int, int, int]]:
    """``(C-contiguous a, axis, (outer, n, inner))``; ``axis=None`` flattens ``a``."""
    if not isinstance(a, ndarray):
        raise not_on_device(a, f"ember.{what}")
    if axis is None:
        a = manipulation.reshape(a, (-1,))
        axis = 0
    elif a.ndim == 0:
        raise ValueError(f"ember.{what}: a 0-d array has no axis {axis}; pass axis=None")
    else:
        axis = manipulation._axis(axis, a.ndim, f"ember.{what}: axis")
    a = manipulation.ascontiguousarray(a)
    lanes = (math.prod(a.shape[:axis]), a.shape[axis], math.prod(a.shape[axis + 1 :]))
    return a, axis, lanes


def packbits(a, /, axis=None, bitorder="big") -> ndarray:
    """The elements of ``a`` (integers or booleans; nonzero means 1) packed into ``uint8``
    bytes along ``axis`` (None: the flattened array), 8 to a byte, the last byte padded
    with zeros (NumPy's ``packbits``).  ``bitorder='big'`` puts the first element in the
    most significant bit, ``'little'`` in the least.  The result has ``ceil(n / 8)``
    elements along ``axis``.  One kernel (plus a copy when ``a`` is not C-contiguous)."""
    if isinstance(a, ndarray) and a.dtype.kind not in "iub":
        raise TypeError(f"ember.packbits: expected an input array of integer or boolean data "
                        f"type, got {a.dtype.name}; compare it first, e.g. a != 0")  # fmt: skip
    little = _little(bitorder, "packbits")
    x, axis, (outer, n, inner) = _lanes(a, axis, "packbits")
    m = -(-n // 8)
    out = launch.new(x.backend, x.shape[:axis] + (m,) + x.shape[axis + 1 :], U8)
    if out.size:
        args = (out.size, n, m, inner, launch.flat1(x), little, launch.flat1(out))
        launch.run(pack_kernel(x.dtype), launch.grid(x.backend, out.size, BLOCK), BLOCK, args)
    return out


def unpackbits(a, /, axis=None, count=None, bitorder="big") -> ndarray:
    """The bits of the ``uint8`` array ``a`` as a ``uint8`` array of 0s and 1s, unpacked
    along ``axis`` (None: the flattened array), 8 elements per byte (NumPy's
    ``unpackbits``).  ``count`` keeps that many bits along the axis (more: padded with
    zeros; negative: that many dropped from the end); ``bitorder`` as :func:`packbits`.
    One kernel (plus a copy when ``a`` is not C-contiguous)."""
    if isinstance(a, ndarray) and a.dtype is not U8:
        raise TypeError(f"ember.unpackbits: expected an input array of unsigned byte data "
                        f"type (uint8), got {a.dtype.name}; convert it with "
                        "a.astype(ember.uint8) or view its bytes another way")  # fmt: skip
    little = _little(bitorder, "unpackbits")
    x, axis, (outer, n, inner) = _lanes(a, axis, "unpackbits")
    c = 8 * n
    if count is not None:
        count = operator.index(count)
        c = count if count >= 0 else c + count
        if c < 0:
            raise ValueError(f"ember.unpackbits: -count larger than number of elements "
                             f"({count} with {8 * n} bits along the axis)")  # fmt: skip
    out = launch.new(x.backend, x.shape[:axis] + (c,) + x.shape[axis + 1 :], U8)
    if out.size:
        args = (out.size, n, c, inner, launch.flat1(x), little, launch.flat1(out))
        launch.run(unpack_kernel(), launch.grid(x.backend, out.size, BLOCK), BLOCK, args)
    return out


__all__ = ["packbits", "unpackbits"]
