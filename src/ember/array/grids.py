"""NumPy's index grids and array editing: ``tri``, ``tril_indices``/``triu_indices`` (and
``*_from``), ``diag_indices`` (and ``_from``), ``indices``, ``ix_``, ``fromfunction``,
``logspace``, ``geomspace``, ``vander``, ``kron``, ``insert``, ``delete``, ``resize``,
``trim_zeros`` and ``ediff1d`` (``pad``: :mod:`ember.array.padding`).

All are compositions of Ember's array operations (every backend, no kernel of their own):

- grids are broadcast ``arange`` views; triangle indices are the ``nonzero`` of a ``tri``
  mask (NumPy's definition, C order; one synchronization to learn the count);
- ``insert`` is a stable ``argsort`` of the slots by position and one ``take`` of the
  joined old and new slices; ``delete`` a ``take`` of the kept slices (``flatnonzero``);
- ``resize`` is a ``tile``, ``kron`` a broadcast ``multiply`` of interleaved views,
  ``vander`` a ``power``; ``trim_zeros`` reads its bounds (a few scalars) back.

The arrays are ember arrays (or numbers); index-like parameters (``obj``, ``insert``'s
``values``, ``ix_``'s arguments, ``to_begin``/``to_end``) may be Python lists, copied to
the array's device as indices are elsewhere; NumPy arrays are refused (``ember.asarray``).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import ember
from ember import dtypes
from ember.array import launch
from ember.array import manipulation as mp
from ember.array.creation import operand as _device
from ember.array.ndarray import ndarray

_TRIMS = ("fb", "bf", "f", "b")


# --------------------------------------------------------------------- operands


def _values(x, what: str, be) -> ndarray:
    """An ember array, number or Python list/tuple (copied to ``be``)."""
    if isinstance(x, list | tuple):
        return ember.asarray(x, device=be)
    x = _device(x, what)
    return x if x.backend is be else x.to_device(be)


def _index(v, what: str, name: str, low=None) -> int:
    try:
        n = operator.index(v)
    except TypeError:
        raise TypeError(f"ember.{what}: {name} must be an integer, got {v!r}") from None
    if low is not None and n < low:
        raise ValueError(f"ember.{what}: {name} must be non-negative, got {n}")
    return n


def _size(v, what: str, name: str) -> int:
    return _index(v, what, name, 0)


def _where(device, like, what: str):
    if like is not None and not isinstance(like, ndarray):
        raise TypeError(f"ember.{what}: like= must be an ember array (its device is used)")
    return like.backend if device is None and like is not None else device


def _at(x: ndarray, axis: int, index) -> ndarray:
    """``x[:, ..., index]`` with ``index`` on ``axis``."""
    return x[(slice(None),) * axis + (index,)]


def _copy(dst: ndarray, src, what: str = "") -> None:
    if dst.size:
        try:
            mp.copy_into(dst, src)
        except ValueError as exc:
            raise ValueError(f"ember.{what}: {exc}") from None


# --------------------------------------------------------------------- triangles, diagonals
def _triangle(n: int, m: int, k: int, lower: bool, device) -> ndarray:
    """``j <= i + k`` (lower) or ``j >= i + k`` at ``[i, j]``: one broadcast comparison."""
    rows = ember.arange(k, n + k, device=device).reshape(-1, 1)
    cols = ember.arange(m, device=device)
    return ember.less_equal(cols, rows) if lower else ember.less_equal(rows, cols)


def tri(N, M=None, k=0, dtype=float, *, like=None, device=None) -> ndarray:
    """An ``(N, M)`` array with ones at and below diagonal ``k`` and zeros above (NumPy's
    ``tri``; ``like=``: an ember array whose device is used; ``device=`` as in
    :func:`ember.zeros`)."""
    n = _size(N, "tri", "N")
    m = n if M is None else _size(M, "tri", "M")
    mask = _triangle(n, m, _index(k, "tri", "k"), True, _where(device, like, "tri"))
    return mp.astype(mask, dtype, copy=False)


def _tri_indices(n, k, m, device, lower: bool, what: str) -> tuple[ndarray, ndarray]:
    rows = _size(n, what, "n")
    cols = rows if m is None else _size(m, what, "m")
    return ember.nonzero(_triangle(rows, cols, _index(k, what, "k"), lower, device))


def tril_indices(n, k=0, m=None, *, device=None) -> tuple[ndarray, ndarray]:
    """The (row, column) int64 indices of the lower triangle (diagonal ``k`` and below) of
    an ``(n, m)`` array, in C order (NumPy's ``tril_indices``)."""
    return _tri_indices(n, k, m, device, True, "tril_indices")


def triu_indices(n, k=0, m=None, *, device=None) -> tuple[ndarray, ndarray]:
    """The (row, column) int64 indices of the upper triangle (diagonal ``k`` and above) of
    an ``(n, m)`` array, in C order (NumPy's ``triu_indices``)."""
    return _tri_indices(n, k, m, device, False, "triu_indices")


def _tri_from(arr, k, lower: bool, what: str) -> tuple[ndarray, ndarray]:
    x = _device(arr, what)
    if x.ndim != 2:
        raise ValueError(f"ember.{what}: input array must be 2-d, got {x.ndim} dimensions")
    return _tri_indices(x.shape[0], k, x.shape[1], x.backend, lower, what)


def tril_indices_from(arr, k=0) -> tuple[ndarray, ndarray]:
    """:func:`tril_indices` for the shape of the 2-d ``arr``, on its device."""
    return _tri_from(arr, k, True, "tril_indices_from")


def triu_indices_from(arr, k=0) -> tuple[ndarray, ndarray]:
    """:func:`triu_indices` for the shape of the 2-d ``arr``, on its device."""
    return _tri_from(arr, k, False, "triu_indices_from")


def diag_indices(n, ndim=2, *, device=None) -> tuple[ndarray, ...]:
    """The indices of the main diagonal of an ``n`` x ... x ``n`` array of ``ndim``
    dimensions: the same int64 ``arange(n)`` ``ndim`` times (NumPy's ``diag_indices``)."""
    idx = ember.arange(_size(n, "diag_indices", "n"), device=device)
    return (idx,) * _size(ndim, "diag_indices", "ndim")


def diag_indices_from(arr) -> tuple[ndarray, ...]:
    """:func:`diag_indices` for ``arr``, of 2 or more dimensions all of one length."""
    x = _device(arr, "diag_indices_from")
    if x.ndim < 2:
        raise ValueError("ember.diag_indices_from: input array must be at least 2-d")
    if len(set(x.shape)) != 1:
        raise ValueError("ember.diag_indices_from: all dimensions of input must be of equal "
                         f"length, got shape {x.shape}")  # fmt: skip
    return diag_indices(x.shape[0], x.ndim, device=x.backend)


# --------------------------------------------------------------------- grids
def indices(dimensions, dtype=int, sparse=False, *, device=None):
    """The index grid of an array of shape ``dimensions`` (NumPy's ``indices``): one array
    ``(len(dimensions), *dimensions)`` whose ``[i]`` holds each element's index along axis
    ``i``, or with ``sparse=True`` a tuple of broadcastable ``(1, .., n_i, .., 1)`` arrays.
    Default dtype int64."""
    dims = tuple(_size(n, "indices", "dimensions") for n in dimensions)
    dt = dtypes.dtype(dtype)
    nd = len(dims)
    axes = [
        ember.arange(n, dtype=dt, device=device).reshape((1,) * i + (n,) + (1,) * (nd - i - 1))
        for i, n in enumerate(dims)
    ]
    if sparse:
        return tuple(axes)
    out = ember.empty((nd, *dims), dt, device=device)
    for i, a in enumerate(axes):
        _copy(out[i], a)
    return out


def ix_(*args, device=None) -> tuple[ndarray, ...]:
    """Open-mesh index arrays from 1-d sequences (NumPy's ``ix_``): argument ``k`` becomes
    an array of shape ``(1, .., n, .., 1)`` with ``n`` on axis ``k``, so that
    ``x[ember.ix_(rows, cols)]`` selects a cross product.  Booleans are masks (their
    ``nonzero``); lists are copied to ``device`` (an empty list is int64)."""
    from ember.array.creation import _on

    like = next((a.backend for a in args if isinstance(a, ndarray)), None)
    be = like if device is None and like is not None else _on(device)
    out = []
    for k, arg in enumerate(args):
        a = _values(arg, "ix_", be)
        if a.size == 0 and not isinstance(arg, ndarray):
            a = mp.astype(a, dtypes.int64)
        if a.ndim != 1:
            raise ValueError(f"ember.ix_: cross index must be 1 dimensional, got shape {a.shape}")
        if a.dtype is dtypes.bool_:
            a = ember.flatnonzero(a)
        out.append(mp.reshape(a, (1,) * k + (a.size,) + (1,) * (len(args) - k - 1)))
    return tuple(out)


def fromfunction(function, shape, *, dtype=float, like=None, device=None, **kwargs):
    """``function(*indices(shape, dtype), **kwargs)`` (NumPy's ``fromfunction``): the
    function is called once, with one ember array of coordinates per axis, and its result
    is returned as it is.  ``device=`` is Ember's and is not passed on."""
    grid = indices(shape, dtype=dtype, device=_where(device, like, "fromfunction"))
    return function(*(grid[i] for i in range(grid.shape[0])), **kwargs)


# --------------------------------------------------------------------- sequences
def _linspace(start, stop, num: int, endpoint: bool, device) -> ndarray:
    """NumPy's ``linspace`` of numbers or arrays, the samples along axis 0."""
    if not isinstance(start, ndarray) and not isinstance(stop, ndarray):
        return ember.linspace(start, stop, num, endpoint=endpoint, device=device)
    return linspace_arrays(start, stop, num, endpoint, None, 0, device)[0]


def linspace_arrays(start, stop, num: int, endpoint: bool, dtype, axis: int, device):
    """``(samples, step)`` of ``linspace`` where ``start`` or ``stop`` is an array (ember
    array or list; the other may be a number, weak as in NumPy 2): NumPy's algorithm step
    for step, in the bounds' inexact result type, the samples along ``axis``.  NumPy takes
    ``y / div * delta`` instead of ``y * step`` when any step is zero (denormal ranges,
    gh-5437): here both are computed and a device-side ``any`` picks, so nothing is read
    back."""
    arrays = [v for v in (start, stop) if isinstance(v, ndarray)]
    if device is not None:
        be = ember.empty(0, device=device).backend
    else:
        be = arrays[0].backend if arrays else ember.empty(0).backend
    s, e = (v if _number(v) else _values(v, "linspace", be) for v in (start, stop))
    dt = ember.result_type(s, e)
    if not (dt.is_float or dt.is_complex):  # NumPy's ensure_inexact
        dt = dtypes.float64
    s, e = (v if _number(v) else mp.astype(v, dt, copy=False) for v in (s, e))
    delta = ember.subtract(e, s)
    if not isinstance(delta, ndarray) or delta.dtype is not dt:
        delta = mp.astype(ember.asarray(delta, device=be), dt, copy=False)
    div = num - 1 if endpoint else num
    y = ember.arange(num, dtype=dt, device=be).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = delta / div
        y = ember.where(ember.any(step == 0), y / div * delta, y * step)
    else:
        step, y = math.nan, y * delta
    y = y + s
    if endpoint and num > 1:
        _copy(y[-1:], e, "linspace")
    if axis != 0:
        y = mp.moveaxis(y, 0, axis)
    if dtype is not None:
        if dtypes.dtype(dtype).kind in "iu":
            y = ember.floor(y)
        y = mp.astype(y, dtype, copy=False)
    return y, step


def _number(v) -> bool:
    return isinstance(v, int | float | complex) or type(v).__module__ == "numpy" and (
        getattr(v, "ndim", 0) == 0)  # fmt: skip


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, *,
             device=None) -> ndarray:  # fmt: skip
    """``base ** linspace(start, stop, num)`` (NumPy's ``logspace``).

    ``start``, ``stop`` and ``base`` are numbers or ember arrays (broadcast together; an
    array base is aligned as NumPy aligns it); with arrays the samples lie along ``axis``.
    The dtype is NumPy's (float64 for numbers) unless ``dtype`` is given."""
    num = _size(num, "logspace", "num")
    if isinstance(base, ndarray) and base.ndim:  # aligned with start/stop, as NumPy
        start, stop = (_values(v, "logspace", base.backend) for v in (start, stop))
        nd = max(v.ndim for v in (start, stop, base))
        start, stop, base = (mp.reshape(v, (1,) * (nd - v.ndim) + v.shape)
                             for v in (start, stop, base))  # fmt: skip
        base = mp.expand_dims(base, 0)
    y = ember.power(base, _linspace(start, stop, num, endpoint, device))
    y = mp.moveaxis(y, 0, mp._axis(axis, y.ndim))  # (computed contiguous, then a view)
    return y if dtype is None else mp.astype(y, dtype, copy=False)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0, *,
              device=None) -> ndarray:  # fmt: skip
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (NumPy's
    ``geomspace``): both ends exact, negative (or complex) ends by rotating to the
    positive reals and back.  Numbers or ember arrays; float64 (complex128) unless
    ``dtype`` is given.  A zero end raises ValueError (arrays: counted on the device)."""
    import numpy as np

    num = _size(num, "geomspace", "num")
    arrays = isinstance(start, ndarray) or isinstance(stop, ndarray)
    if arrays:
        be = (start if isinstance(start, ndarray) else stop).backend
        s, e = (_values(v, "geomspace", be) for v in (start, stop))
        zero = any(ember.flatnonzero(v == 0).size for v in (s, e))  # (one sync each)
        dt = ember.result_type(s.dtype, e.dtype, dtypes.float64)
        s, e = mp.astype(s, dt, copy=False), mp.astype(e, dt, copy=False)
        sign, log = ember.sign(s), ember.log10
    else:
        s, e = complex(start), complex(stop)
        zero = s == 0 or e == 0
        if s.imag == 0 and e.imag == 0:
            s, e = float(start), float(stop)
        sign, log = np.sign(s).item(), np.log10
    if zero:
        raise ValueError("ember.geomspace: a geometric sequence cannot include zero")
    s, e = s / sign, e / sign
    with np.errstate(invalid="ignore"):  # (NaN where the ends' signs differ, as NumPy)
        y = logspace(log(s), log(e), num, endpoint, 10.0, None, 0, device=device)
    if num > 0:
        _copy(y[:1], s)
    if num > 1 and endpoint:
        _copy(y[-1:], e)
    y = mp.moveaxis(y * sign, 0, mp._axis(axis, y.ndim))
    return y if dtype is None else mp.astype(y, dtype, copy=False)


def vander(x, N=None, increasing=False) -> ndarray:
    """The Vandermonde matrix of the 1-d ``x``: column ``j`` is ``x ** (N - 1 - j)``
    (``x ** j`` with ``increasing=True``), of NumPy's dtype (``x``'s promoted with
    int64).  Computed with ``power`` where NumPy multiplies columns cumulatively: float
    results can differ in the last bits."""
    v = _device(x, "vander")
    if v.ndim != 1:
        raise ValueError(f"ember.vander: x must be a one-dimensional array, got shape {v.shape}")
    n = v.shape[0] if N is None else _size(N, "vander", "N")
    dt = ember.result_type(v.dtype, dtypes.int64)
    powers = ember.arange(n, device=v.backend) if increasing else ember.arange(
        n - 1, -1, -1, device=v.backend)  # fmt: skip
    return ember.power(mp.reshape(mp.astype(v, dt, copy=False), (-1, 1)), powers)


def kron(a, b) -> ndarray:
    """The Kronecker product of arrays of any number of dimensions (NumPy's ``kron``: the
    blocks ``a[i, j, ...] * b``; the shorter shape is padded with leading ones)."""
    x, y = _device(a, "kron"), _device(b, "kron")
    if x.ndim == 0 or y.ndim == 0:
        return ember.multiply(x, y)
    nd = max(x.ndim, y.ndim)
    xs = (1,) * (nd - x.ndim) + x.shape
    ys = (1,) * (nd - y.ndim) + y.shape
    xv = mp.reshape(x, tuple(v for n in xs for v in (n, 1)))
    yv = mp.reshape(y, tuple(v for n in ys for v in (1, n)))
    return mp.reshape(ember.multiply(xv, yv), tuple(p * q for p, q in zip(xs, ys, strict=True)))


# --------------------------------------------------------------------- insert, delete
def _flat_axis(x: ndarray, axis, what: str) -> tuple[ndarray, int]:
    if axis is None:
        return mp.reshape(x, (-1,)), 0
    if x.ndim == 0:
        raise ValueError(f"ember.{what}: a 0-d array has no axis {axis}; pass axis=None")
    return x, mp._axis(axis, x.ndim, f"ember.{what}: axis")


def _index_obj(obj, n: int, k: int, what: str, be) -> tuple[Any, ndarray | None, bool]:
    """``obj`` as ``(int, None, zero_d)`` for one index (a one-element integer array is
    read back: one scalar) or ``(None, indices, False)``, int64 indices from a slice, a
    sequence or an array (``delete``: a boolean mask as it is; ``insert``: its positions).
    """
    if isinstance(obj, slice):
        r = range(*obj.indices(n))
        if len(r) == 1:  # (NumPy: one index, though no moveaxis of the values)
            return r[0], None, False
        return None, ember.arange(r.start, r.stop, r.step, device=be), False
    if not isinstance(obj, bool | ndarray) and hasattr(obj, "__index__"):
        return _bounded(operator.index(obj), n, k, what), None, True
    idx = _values(obj, what, be)
    if idx.size == 0 and not isinstance(obj, ndarray):
        idx = mp.astype(idx, dtypes.int64)
    if idx.dtype is dtypes.bool_:
        if what == "delete" and idx.shape != (n,):
            raise ValueError(f"ember.delete: a boolean obj must be one dimensional and match "
                             f"the axis length of {n}, got shape {idx.shape}")  # fmt: skip
        if idx.ndim != 1:
            raise ValueError(f"ember.{what}: a boolean obj must be one dimensional")
        return None, idx if what == "delete" else ember.flatnonzero(idx), False
    if idx.dtype.kind not in "iu":
        raise IndexError(f"ember.{what}: arrays used as indices must be of integer (or "
                         f"boolean) type, not {idx.dtype.name}")  # fmt: skip
    if idx.ndim > 1:
        raise ValueError(f"ember.{what}: an index array obj must be one dimensional or scalar")
    if idx.size == 1:
        return _bounded(int(launch.read(idx.reshape(-1), (0,))), n, k, what), None, idx.ndim == 0
    return None, mp.astype(idx, dtypes.int64, copy=False), False


def _bounded(i: int, n: int, k: int, what: str) -> int:
    """``i`` from the end if negative; IndexError if out of range (insert: up to ``n``)."""
    if not -n <= i < n + (what == "insert"):
        raise IndexError(f"ember.{what}: index {i} is out of bounds for axis {k} with size {n}")
    return i + n if i < 0 else i


def insert(arr, obj, values, axis=None) -> ndarray:
    """``arr`` with ``values`` inserted before the indices ``obj`` along ``axis`` (the
    flattened array if None), as NumPy's ``insert``.

    ``obj``: an int, a slice, a sequence or ember array of ints (each a position in the
    original array; repeats insert several), or a 1-d boolean mask (its ``nonzero``).
    ``values`` are cast to ``arr``'s dtype and broadcast as NumPy does (an int ``obj``
    takes ``values``' first axis as the inserted slices).  A one-element index array is
    read back (one scalar); more are range-checked by reading the sorted ends back."""
    x, k = _flat_axis(_device(arr, "insert"), axis, "insert")
    n, be = x.shape[k], x.backend
    one, idx, zero_d = _index_obj(obj, n, k, "insert", be)
    v = _values(values, "insert", be)
    if one is not None:
        v = mp.reshape(v, (1,) * (x.ndim - v.ndim) + v.shape)
        v = mp.moveaxis(v, 0, k) if zero_d else v
        m = v.shape[k]
        out = ember.empty(x.shape[:k] + (n + m,) + x.shape[k + 1 :], x.dtype, device=be)
        _copy(_at(out, k, slice(0, one)), _at(x, k, slice(0, one)))
        _copy(_at(out, k, slice(one, one + m)), v, "insert")
        _copy(_at(out, k, slice(one + m, None)), _at(x, k, slice(one, None)))
        return out
    m = idx.shape[0]
    shape = x.shape[:k] + (m,) + x.shape[k + 1 :]
    try:
        v = mp.broadcast_to(v, shape)
    except ValueError:
        raise ValueError(f"ember.insert: could not broadcast values of shape {v.shape} to "
                         f"the inserted slices' shape {shape}") from None  # fmt: skip
    if n + m == 0:
        return mp.astype(x, x.dtype)
    # A stable sort of the slots by position: the new slices first (key: their index, so
    # each lands before the old slice it names, in obj's order), then old slice i (key i).
    keys = mp.concatenate([ember.where(idx < 0, idx + n, idx), ember.arange(n, device=be)])
    order = ember.argsort(keys)
    low, high = (int(launch.read(keys, (int(launch.read(order, (i,))),))) for i in (0, -1))
    if low < 0 or high > n:  # (too negative indices stay negative)
        raise IndexError(f"ember.insert: an index is out of bounds for axis {k} with size {n}")
    return ember.take(
        mp.concatenate([v, x], axis=k, dtype=x.dtype, casting="unsafe"), order, axis=k
    )


def delete(arr, obj, axis=None) -> ndarray:
    """A new array without the slices ``obj`` along ``axis`` (the flattened array if
    None), as NumPy's ``delete``: ``obj`` an int, a slice, a sequence or ember array of
    ints (negative ones count from the end; repeats are fine), or a boolean mask of the
    axis's length (True: delete).  Out-of-range indices raise IndexError (checked on the
    device, as ``ember.take`` does)."""
    x, k = _flat_axis(_device(arr, "delete"), axis, "delete")
    n, be = x.shape[k], x.backend
    one, idx, _ = _index_obj(obj, n, k, "delete", be)
    if one is not None:
        parts = [_at(x, k, slice(0, one)), _at(x, k, slice(one + 1, None))]
        return mp.concatenate(parts, axis=k)
    try:  # indices are range-checked on the device, reported by the next synchronization
        if idx.dtype is dtypes.bool_:
            keep = ember.logical_not(idx)
        else:
            keep = ember.ones(n, dtypes.bool_, device=be)
            keep[idx] = False
        kept = ember.flatnonzero(keep)  # (its count read synchronizes)
    except IndexError:
        raise IndexError(f"ember.delete: an index is out of bounds for axis {k} with size "
                         f"{n} (valid: {-n} to {n - 1})") from None  # fmt: skip
    return ember.take(x, kept, axis=k)


# --------------------------------------------------------------------- resize, trims, diffs
def resize(a, new_shape) -> ndarray:
    """A new array of ``new_shape`` filled with ``a``'s elements (C order), repeated as
    often as needed (NumPy's ``resize``; zeros when ``a`` or the result is empty)."""
    x = _device(a, "resize")
    shape = (new_shape,) if hasattr(new_shape, "__index__") else tuple(new_shape)
    shape = tuple(_size(n, "resize", "each element of new_shape") for n in shape)
    size = math.prod(shape)
    if x.size == 0 or size == 0:
        return ember.zeros(shape, x.dtype, device=x.backend)
    flat = mp.reshape(x, (-1,))
    return mp.reshape(mp.tile(flat, -(-size // x.size))[:size], shape)


def trim_zeros(filt, trim="fb", axis=None) -> ndarray:
    """A view of ``filt`` without its leading (``"f"``) and/or trailing (``"b"``) zeros
    (NumPy 2.2's ``trim_zeros``): for an n-d array, the bounding box of the nonzero
    elements along every axis (``axis=None``) or one ``axis``.  An all-zero input gives
    an empty view.  The bounds are computed on the device and read back (a few ints)."""
    x = _device(filt, "trim_zeros")
    if not isinstance(trim, str) or trim.lower() not in _TRIMS:
        raise ValueError(f"ember.trim_zeros: unexpected character(s) in trim: {trim!r}; use "
                         "'f' (front), 'b' (back) or 'fb' (both)")  # fmt: skip
    trim = trim.lower()
    if x.ndim == 0:
        return x
    axes = range(x.ndim) if axis is None else [mp._axis(axis, x.ndim, "ember.trim_zeros: axis")]
    key = [slice(None)] * x.ndim
    for d in axes:  # the first and last nonzero slices along d (C order of moved axes)
        hits = ember.flatnonzero(mp.moveaxis(x, d, 0) != 0)
        if hits.size == 0:  # all zero: empty along the trimmed axes, as NumPy
            return x[tuple(slice(0, 0) if e in axes else slice(None) for e in range(x.ndim))]
        inner = x.size // x.shape[d]
        first, last = (int(launch.read(hits, (i,))) // inner for i in (0, -1))
        key[d] = slice(first if "f" in trim else None, last + 1 if "b" in trim else None)
    return x[tuple(key)]


def _ends(v, what: str, like: ndarray) -> ndarray | None:
    if v is None:
        return None
    e = _values(v, "ediff1d", like.backend)
    if not ember.can_cast(e.dtype, like.dtype, casting="same_kind"):
        raise TypeError(f"ember.ediff1d: the dtype of {what} ({e.dtype}) must be compatible "
                        f"with the input's ({like.dtype}) under the 'same_kind' rule")  # fmt: skip
    return mp.reshape(e, (-1,))


def ediff1d(ary, to_end=None, to_begin=None) -> ndarray:
    """The differences between consecutive elements of the flattened ``ary``, with
    ``to_begin`` and ``to_end`` (numbers, lists or arrays, cast to ``ary``'s dtype, which
    they must reach under ``same_kind`` casting) joined at the ends (NumPy's ``ediff1d``).
    Booleans raise TypeError, as in NumPy."""
    x = mp.reshape(_device(ary, "ediff1d"), (-1,))
    if x.dtype is dtypes.bool_:
        raise TypeError("ember.ediff1d: subtracting booleans is not defined; convert the "
                        "array with .astype(ember.int8) or use ember.not_equal")  # fmt: skip
    begin, end = _ends(to_begin, "to_begin", x), _ends(to_end, "to_end", x)
    if begin is None and end is None:
        return x[1:] - x[:-1]
    lb, le = (0 if e is None else e.shape[0] for e in (begin, end))
    ld = max(x.shape[0] - 1, 0)
    out = ember.empty(lb + ld + le, x.dtype, device=x.backend)
    _copy(out[:lb], begin)
    _copy(out[lb + ld :], end)
    if ld:
        ember.subtract(x[1:], x[:-1], out=out[lb : lb + ld])
    return out


__all__ = [
    "tri", "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from",
    "diag_indices", "diag_indices_from", "indices", "ix_", "fromfunction", "logspace",
    "geomspace", "vander", "kron", "insert", "delete", "resize", "trim_zeros",
    "ediff1d",
]  # fmt: skip
