"""NumPy's ufunc methods ``reduce``, ``accumulate`` and ``reduceat`` of every binary ufunc
on ember arrays, with NumPy 2's arguments, result dtypes and errors::

    numpy.maximum.accumulate(x, axis=1)       # a scan (ember.array.scan)
    numpy.bitwise_xor.reduce(x, axis=None)    # a reduction (ember.reduce), identity 0
    numpy.subtract.reduce(x)                  # x[0] - x[1] - x[2] ...: a left fold
    numpy.add.reduceat(x, [0, 4, 1, 5])       # segments: one fold per segment

The *loop* is NumPy's: the ufunc's type rule on two operands of the input's dtype (add
and multiply of bools and small integers in int64/uint64, as NumPy's reductions; the
logical functions on bools; ``dtype=`` the loop's dtype, the input cast to it); a ufunc
whose loop gives another dtype than it takes (``less`` of integers) has no reduction, as
in NumPy.  ``out=`` receives the result, cast to its dtype.

Associative operators (:data:`ASSOCIATIVE`) scan with the scan kernels' tree and reduce
with the generic reduction kernels (float sums and products then round in a tree order,
as ``cumsum`` does).  The others are NumPy's left folds, computed exactly in NumPy's
order: one thread per row (``accumulate``) or per segment (``reduce``, ``reduceat``:
:func:`.scan_kernels.fold_segments`); fast with many rows, serial along one long row.
They reduce over one axis only (NumPy: "not reorderable").  An empty reduction gives
NumPy's ``ufunc.identity`` or ``initial=``, else NumPy's ``ValueError``; ``where=``
needs one of them as well.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ember import dtypes
from ember.array import manipulation, reductions, rules, scan
from ember.array.creation import on_device
from ember.array.ndarray import ndarray
from ember.dtypes import DType

# ufuncs whose operator is associative and commutative: tree scans and reductions
ASSOCIATIVE = frozenset({
    "add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "gcd",
})  # fmt: skip
_NO_VALUE = object()


# --------------------------------------------------------------------- the loop
def loop(uf, x_dtype: DType, dtype, label: str) -> tuple:
    """``(op, ct)``: the device function and the dtype NumPy's reduction loop of ``uf``
    computes and returns in, for input ``x_dtype`` and ``dtype=``."""
    from ember.frontend.types import scalar

    name = _numpy_name(uf)
    dt = x_dtype if dtype is None else dtypes.dtype(dtype)
    if dtype is None and name in ("add", "multiply"):
        dt = scan._accumulation_dtype(dt)  # NumPy's reductions: int8 sums in int64
    rules.refuse_complex_to_real(x_dtype, dt, label)
    res = uf.rule((scalar(dt), scalar(dt)))
    if res.out is not res.ct or (dtype is not None and res.out is not dt):
        raise TypeError(
            f"{label}: No loop matching the specified signature and casting was found for "
            f"ufunc {name} (its loop on {dt.name} gives {res.out.name}; NumPy's rule)"
        )
    return res.op, res.ct


def _numpy_name(uf) -> str:
    host = getattr(uf, "host", None)
    return getattr(host, "__name__", None) or uf.__name__


def _numpy_ufunc(uf):
    found = getattr(np, _numpy_name(uf), None)
    return found if isinstance(found, np.ufunc) else None


def _check(uf, method: str, label: str) -> None:
    from ember.array.elementwise import Ufunc

    if not isinstance(uf, Ufunc):
        raise TypeError(f"{label}: Ember's {uf!r} is not a ufunc with a {method} method")
    if uf.nin != 2:
        raise ValueError(f"{label}: {method} only supported for binary functions")


def _value(value, ct: DType):
    """``value`` (a Python or NumPy number) as a NumPy scalar of ``ct`` (NumPy's identity
    -1 of ``bitwise_and`` is all ones in an unsigned type)."""
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(ct.numpy)[()]


def _single_axis(axis, ndim: int, method: str, label: str) -> int:
    if isinstance(axis, tuple | list):
        if len(axis) != 1:
            raise ValueError(f"{label}: {method} does not allow multiple axes")
        axis = axis[0]
    if axis is None:
        if ndim != 1:
            raise ValueError(f"{label}: {method} does not allow multiple axes")
        axis = 0
    return reductions.axes_of(axis, ndim, label)[0]


# --------------------------------------------------------------------- the methods
def accumulate(uf, array, axis=0, dtype=None, out=None, *, label: str = ""):
    """NumPy's ``ufunc.accumulate``: the inclusive scan of ``array`` along ``axis``."""
    label = label or f"ember.{uf.__name__}.accumulate"
    _check(uf, "accumulate", label)
    x = on_device(array, label)
    if x.ndim == 0:
        raise TypeError(f"{label}: cannot accumulate on a scalar")
    k = _single_axis(axis, x.ndim, "accumulate", label)
    op, ct = loop(uf, x.dtype, dtype, label)
    serial = _numpy_name(uf) not in ASSOCIATIVE
    return manipulation.into(out, scan.scan_axis(x, k, op, ct, ct, serial=serial), label)


def reduce(uf, array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
           where=True, *, label: str = ""):  # fmt: skip
    """NumPy's ``ufunc.reduce`` over ``axis`` (an int, a tuple, None: all)."""
    label = label or f"ember.{uf.__name__}.reduce"
    _check(uf, "reduce", label)
    x = on_device(array, label)
    name = _numpy_name(uf)
    op, ct = loop(uf, x.dtype, dtype, label)
    axes = reductions.axes_of(axis, x.ndim, label)
    serial = name not in ASSOCIATIVE
    npu = _numpy_ufunc(uf)
    identity = None if npu is None else npu.identity
    if serial and identity is None and len(axes) > 1:  # NumPy: an identity makes it so
        raise ValueError(
            f"{label}: reduction operation '{name}' is not reorderable, so at most one axis "
            "may be specified"
        )
    start = None if initial is _NO_VALUE or initial is None else _value(initial, ct)
    if where is not True:
        x = _masked(x, where, name, identity, start, serial, ct, label)
    shape = tuple(1 if k in axes else n for k, n in enumerate(x.shape))
    count = math.prod(x.shape[k] for k in axes)
    if count == 0 and start is None:
        if identity is None and math.prod(shape):
            raise ValueError(
                f"{label}: zero-size array to reduction operation {name} which has no identity"
            )
        start = _value(0 if identity is None else identity, ct)
    if not axes:  # nothing reduced: each element, combined with initial or the identity
        start = _value(identity, ct) if start is None and identity is not None else start
        res = manipulation.astype(x, ct)
        res = res if start is None else uf(start, res)
    elif count == 0:
        res = _full(shape, start, ct, x)
    elif serial:  # the reduced axes last, folded in C order as NumPy's loop runs
        kept = [k for k in range(x.ndim) if k not in axes]
        rows = manipulation.reshape(manipulation.permute_dims(x, (*kept, *axes)), (-1, count))
        res = scan.fold_axis(rows, 1, _zero_index(x), op, ct, ct, start)
        res = manipulation.reshape(res, shape)
    else:
        ember = sys.modules["ember"]
        res = ember.reduce(op, x, axis=axes, dtype=ct, keepdims=True,
                           **({} if start is None else {"initial": start}))  # fmt: skip
    if not keepdims:
        res = manipulation.reshape(res, tuple(n for k, n in enumerate(x.shape) if k not in axes))
    return manipulation.into(out, res, label)


def reduceat(uf, array, indices, axis=0, dtype=None, out=None, *, label: str = ""):
    """NumPy's ``ufunc.reduceat``: ``out[i]`` (along ``axis``) reduces ``array[idx[i]:
    idx[i + 1]]``, or is ``array[idx[i]]`` where ``idx[i] >= idx[i + 1]``; the last
    segment runs to the end.  One left fold per segment (any ufunc, exact order)."""
    label = label or f"ember.{uf.__name__}.reduceat"
    _check(uf, "reduceat", label)
    x = on_device(array, label)
    k = _single_axis(axis, max(x.ndim, 1), "reduceat", label)
    if x.ndim == 0:
        raise TypeError(f"{label}: cannot reduceat a scalar")
    op, ct = loop(uf, x.dtype, dtype, label)
    idx = _indices(indices, x.shape[k], _numpy_name(uf), x, label)
    return manipulation.into(out, scan.fold_axis(x, k, idx, op, ct, ct), label)


# --------------------------------------------------------------------- helpers
def _masked(x, where, name, identity, start, serial, ct, label):
    """``x`` with the elements ``where`` leaves out replaced by the neutral value: the
    identity, or ``initial`` for the idempotent ``maximum``/``fmin``... (no identity)."""
    ember = sys.modules["ember"]
    if identity is None and start is None:
        raise ValueError(
            f"{label}: reduction operation '{name}' does not have an identity, so to use a "
            "where mask one has to specify 'initial'"
        )
    if serial and identity is None:
        raise TypeError(
            f"{label}: where= with '{name}', which has no identity and is not associative, "
            f"is not supported for ember arrays; fold the kept elements instead, e.g. "
            f"numpy.{name}.reduce(x[mask], initial=...) for a 1-d x"
        )
    mask = where if isinstance(where, ndarray) else ember.asarray(where, device=x.backend)
    fill = _value(identity, ct) if identity is not None else start
    mask = manipulation.broadcast_to(mask, x.shape)
    return ember.where(mask, manipulation.astype(x, ct), fill.item())


def _full(shape, value, ct: DType, x: ndarray) -> ndarray:
    ember = sys.modules["ember"]
    return ember.full(shape, value.item(), dtype=ct, device=x.backend)


def _zero_index(x: ndarray) -> ndarray:
    ember = sys.modules["ember"]
    return ember.zeros((1,), dtype=dtypes.int64, device=x.backend)


def _indices(indices, n: int, name: str, x: ndarray, label: str) -> ndarray:
    """``reduceat``'s indices as an int64 device vector, each checked in ``[0, n)``."""
    ember = sys.modules["ember"]
    if isinstance(indices, ndarray):
        if not indices.dtype.is_integer or indices.ndim != 1:
            raise TypeError(f"{label}: indices must be a 1-d integer array")
        idx = manipulation.ascontiguousarray(manipulation.astype(indices, dtypes.int64))
        bad = [] if idx.size == 0 else [int(idx.min()), int(idx.max())]  # reads two numbers
    else:
        host = np.asarray(indices)
        if host.ndim != 1:
            raise ValueError(f"{label}: indices must be 1-d, got {host.ndim} dimensions")
        host = host.astype(np.int64)
        wrong = (host < 0) | (host >= n)
        bad = [int(host[wrong.argmax()])] if wrong.any() else []
        idx = ember.asarray(host, device=x.backend)
    for i in bad:
        if not 0 <= i < n:
            raise IndexError(f"index {i} out-of-bounds in {name}.reduceat [0, {n})")
    return idx


METHODS = {"reduce": reduce, "accumulate": accumulate, "reduceat": reduceat}

__all__ = ["reduce", "accumulate", "reduceat", "loop", "ASSOCIATIVE", "METHODS"]
