"""Searching: ``nonzero`` (and NumPy's one-argument ``where``, ``argwhere``,
``flatnonzero``) by stream compaction, and ``searchsorted`` by one binary search per
element.

``nonzero`` compacts the flat indices of the nonzero elements in C order
(:mod:`ember.array.compact`; one synchronization to learn their count) and splits them
into one coordinate array per axis.  ``searchsorted`` compares in the promoted dtype of
the sorted array and the values, in NumPy's sort order (NaN after every number), and
takes ``sorter=`` indices (checked on the device: one out of range raises ``ValueError``
at the next synchronization).
"""

from __future__ import annotations

import functools
import math

import ember
from ember import dtypes
from ember.array import kernels, launch, manipulation
from ember.array.creation import on_device
from ember.array.ndarray import ndarray
from ember.compiler.kernel import Kernel
from ember.dtypes import DType

BLOCK = 256


def _flat(x: ndarray) -> ndarray:
    return manipulation.reshape(x, (math.prod(x.shape),))


def flatnonzero(x, /) -> ndarray:
    """The int64 indices of the nonzero elements of ``x`` flattened (C order)."""
    from ember.array.compact import compact

    x = on_device(x, "flatnonzero")
    return compact(_flat(x))


def nonzero(x, /) -> tuple[ndarray, ...]:
    """The indices of the nonzero elements: one int64 array per axis, in C order.

    NaN counts as nonzero.  A 0-d array is refused, as in NumPy 2 (use
    ``ember.reshape(x, (1,))``)."""
    x = on_device(x, "nonzero")
    if x.ndim == 0:
        raise ValueError(
            "ember.nonzero of a 0-d array is not allowed (as in NumPy 2); use "
            "ember.reshape(x, (1,)).nonzero() or ember.flatnonzero(x)"
        )
    flat = flatnonzero(x)
    if x.ndim == 1:
        return (flat,)
    if flat.size == 0:
        return tuple(flat for _ in x.shape)
    coords = []
    step = math.prod(x.shape)
    for d, n in enumerate(x.shape):
        step //= n
        c = flat if step == 1 else flat // step
        coords.append(c % n if d > 0 else c)
    return tuple(coords)


def argwhere(x, /) -> ndarray:
    """The indices of the nonzero elements as an ``(N, x.ndim)`` int64 array."""
    x = on_device(x, "argwhere")
    if x.ndim == 0:
        return launch.zeroed(x.backend, (int(bool(x)), 0), dtypes.int64)
    return ember.stack(nonzero(x), axis=1)


# --------------------------------------------------------------------- searchsorted
def _less_float(a, b):
    """NumPy's sort order: NaN after every number."""
    return a < b or (b != b and a == a)


def _less(a, b):
    return a < b


def _plain_key(a, abase, astep, s, sbase, sstep, n, mid):
    return a[abase + mid * astep]


def _sorted_key(a, abase, astep, s, sbase, sstep, n, mid):
    j = ember.int64(s[sbase + mid * sstep])
    if j < 0 or j >= n:
        raise ValueError("searchsorted: a sorter index is out of range")
    return a[abase + j * astep]


@functools.cache
def search_kernel(ct: DType, sorter: bool) -> Kernel:
    """``out[i]`` = the insertion point of ``v[i]`` in ``a`` (``right``: after equals)."""
    LESS = _less_float if ct.is_float else _less
    KEY = _sorted_key if sorter else _plain_key
    CT = ct

    def searchsorted(m, n, a, abase, astep, s, sbase, sstep, v, out, right):
        i = ember.global_id()
        while i < m:
            x = CT(v[i])
            lo = 0
            hi = n
            while lo < hi:
                mid = lo + hi
                mid >>= 1
                y = CT(KEY(a, abase, astep, s, sbase, sstep, n, mid))
                if (not LESS(x, y)) if right else LESS(y, x):
                    lo = mid + 1
                else:
                    hi = mid
            out[i] = lo
            i += ember.global_size()

    name = f"searchsorted_{ct.name}" + ("_sorter" if sorter else "")
    return kernels._named(searchsorted, name)


def searchsorted(x1, x2, /, side: str = "left", sorter=None):
    """Indices where the values ``x2`` would be inserted into the sorted 1-d ``x1`` to
    keep it sorted (Array API; NumPy's ``searchsorted(a, v, side, sorter)``).

    Parameters
    ----------
    x1 : ndarray
        1-d, sorted ascending (NaNs last), or any order with ``sorter``.
    x2 : ndarray or Python/NumPy scalar
        The values; the result has their shape.
    side : {"left", "right"}
        ``left``: the first suitable index; ``right``: the last.
    sorter : ndarray of int, optional
        Indices that sort ``x1`` (e.g. from :func:`ember.argsort`).

    Returns
    -------
    ndarray
        int64, of ``x2``'s shape (0-d for a scalar).
    """
    from ember.array.advanced import index_array
    from ember.array.rules import scalar_type
    from ember.frontend.types import promote, scalar

    a = on_device(x1, "searchsorted")
    if a.ndim != 1:
        raise ValueError(f"ember.searchsorted: x1 must be 1-d, got {a.ndim} dimensions")
    if side not in ("left", "right"):
        raise ValueError(f"ember.searchsorted: side must be 'left' or 'right', got {side!r}")
    if isinstance(x2, ndarray):
        ct = promote(scalar(a.dtype), scalar(x2.dtype)).dtype
        v = manipulation.ascontiguousarray(x2)
    else:
        ct = promote(scalar(a.dtype), scalar_type(x2)).dtype
        v = index_array([x2], "searchsorted", a.backend, values=True)
        v = manipulation.reshape(manipulation.astype(v, ct), ())
    out = launch.new(a.backend, v.shape, dtypes.int64)
    if out.size == 0:
        return out
    av, abase, (astep,) = launch.flat(a)
    if sorter is not None:
        s = index_array(sorter, "searchsorted sorter", a.backend)
        if s.shape != a.shape or s.dtype.kind not in "iu":
            raise ValueError("ember.searchsorted: sorter must be integer indices of x1's shape")
        sv, sbase, (sstep,) = launch.flat(s)
    else:
        sv, sbase, sstep = av, 0, 0
    if ct.is_complex:
        from ember.array.rules import no_order

        no_order(ct, "searchsorted")
    k = search_kernel(ct, sorter is not None)
    m = v.size
    args = (m, a.shape[0], av, abase, astep, sv, sbase, sstep, launch.flat1(v),
            launch.flat1(out), side == "right")  # fmt: skip
    launch.run(k, launch.grid(a.backend, m, BLOCK, whole=True), BLOCK, args)  # (searches)
    return out


__all__ = ["nonzero", "flatnonzero", "argwhere", "searchsorted"]
