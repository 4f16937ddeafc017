"""NumPy's type predicates, dtype helpers and array-information functions: ``iscomplex``,
``isreal``, ``iscomplexobj``, ``isrealobj``, ``real_if_close``, ``promote_types``,
``common_type``, ``min_scalar_type``, ``ndim``, ``shape``, ``size``, ``shares_memory``,
``may_share_memory``, ``asanyarray``, ``asarray_chkfinite`` and ``require``.

Most of them read an array's metadata only (dtype, shape, strides, buffer) and never touch
its elements.  The elementwise predicates (``iscomplex``, ``isreal``) are comparisons of
the imaginary part on the device; ``real_if_close`` and ``asarray_chkfinite`` reduce on the
device and read one boolean back.  The dtype helpers answer with Ember dtypes
(:class:`ember.DType`) where NumPy answers with NumPy dtypes or scalar types, by NumPy's
own rules applied to the dtypes (``min_scalar_type`` to a value: a 0-d ember array is one
element read back).

Memory overlap compares buffers and byte ranges: two ember arrays can share memory only
when they view the same device buffer (the same Ember buffer object, or buffers with one
native handle).  ``may_share_memory`` checks that their byte extents overlap, as NumPy's
bounds check; ``shares_memory`` is exact: for disjoint extents it is False, else it lists
the byte offsets of the elements of both arrays on the host (metadata, computed from
shapes and strides, not the data) and looks for two intervals that overlap, which is
linear-logarithmic in the sizes; beyond :data:`EXACT_LIMIT` elements (or ``max_work``) it
raises NumPy's ``TooHardError`` rather than guess.
"""

from __future__ import annotations

import math
import operator

import numpy as np

import ember
from ember import dtypes
from ember.array import creation, manipulation
from ember.array.ndarray import ndarray

EXACT_LIMIT = 1 << 22  # elements of both arrays together that shares_memory enumerates


# --------------------------------------------------------------------- helpers
_array = creation.operand


def _dtype_of(x) -> dtypes.DType:
    """The dtype of an array (ember or host), a dtype spec, or a Python/NumPy value."""
    if isinstance(x, ndarray):
        return x.dtype
    if isinstance(x, dtypes.DType | str | type | np.dtype):
        return dtypes.dtype(x)
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return dtypes.dtype(dt)
    return dtypes.dtype(np.asarray(x).dtype)


# --------------------------------------------------------------------- predicates
def iscomplex(x) -> ndarray:
    """Elementwise whether ``x`` has a nonzero imaginary part (NumPy's ``iscomplex``): a
    bool array of ``x``'s shape, all False for real dtypes."""
    x = _array(x, "iscomplex")
    if x.dtype.is_complex:
        return ember.imag(x) != 0
    return ember.zeros(x.shape, dtypes.bool_, device=x.backend)


def isreal(x) -> ndarray:
    """Elementwise whether ``x`` has a zero imaginary part (NumPy's ``isreal``): a bool
    array of ``x``'s shape, all True for real dtypes."""
    x = _array(x, "isreal")
    if x.dtype.is_complex:
        return ember.imag(x) == 0
    return ember.full(x.shape, True, dtypes.bool_, device=x.backend)


def iscomplexobj(x) -> bool:
    """Whether ``x``'s dtype is complex (NumPy's ``iscomplexobj``), whatever its values:
    ``x`` an ember array, a dtype, or a host value (a Python number or list)."""
    return _dtype_of(x).is_complex


def isrealobj(x) -> bool:
    """``not iscomplexobj(x)`` (NumPy's ``isrealobj``)."""
    return not iscomplexobj(x)


def real_if_close(a, tol=100) -> ndarray:
    """``a``'s real part if every imaginary part is within ``tol`` (in machine epsilons of
    ``a``'s dtype when ``tol > 1``, else absolute) of zero, else ``a`` (NumPy's
    ``real_if_close``).  Real arrays come back as they are.  One boolean read back."""
    a = _array(a, "real_if_close")
    if not a.dtype.is_complex:
        return a
    if tol > 1:
        tol = ember.finfo(a.dtype).eps * tol
    if bool(ember.all(ember.abs(ember.imag(a)) < tol)):
        return ember.real(a)
    return a


# --------------------------------------------------------------------- dtype helpers
def _spec(t, what: str) -> dtypes.DType:
    try:
        return dtypes.dtype(t.dtype if isinstance(t, ndarray) else t)
    except TypeError as exc:
        raise TypeError(f"ember.{what}: {exc}") from None


def promote_types(type1, type2) -> dtypes.DType:
    """The smallest dtype both ``type1`` and ``type2`` cast to safely (NumPy's
    ``promote_types``), as an Ember dtype; the arguments are dtypes or dtype specs
    (``'float32'``, ``int``, ``numpy.int8``...)."""
    return ember.result_type(_spec(type1, "promote_types"), _spec(type2, "promote_types"))


_PRECISION = {"float16": 0, "bfloat16": 0, "float32": 1, "float64": 2, "complex64": 1,
              "complex128": 2}  # fmt: skip
_BY_PRECISION = ((dtypes.float16, dtypes.float32, dtypes.float64),
                 (None, dtypes.complex64, dtypes.complex128))  # fmt: skip


def common_type(*arrays) -> dtypes.DType:
    """The inexact dtype all ``arrays`` fit (NumPy's ``common_type``), as an Ember dtype
    where NumPy gives a scalar type: integers count as float64, the result is complex if
    any input is, of the widest precision.  Booleans raise ``TypeError`` (NumPy's rule);
    with no arguments, float16.  Only the dtypes are read."""
    complex_, precision, kinds = False, 0, set()
    for a in arrays:
        dt = _dtype_of(a)
        if dt.kind in "iu":
            p = 2
        elif dt.name in _PRECISION:
            p = _PRECISION[dt.name]
            kinds.add(dt.name)
        else:
            raise TypeError(f"ember.common_type: can't get common type for non-numeric "
                            f"array of dtype {dt.name}")  # fmt: skip
        complex_ = complex_ or dt.is_complex
        precision = max(precision, p)
    if precision == 0 and "bfloat16" in kinds:  # no NumPy rule: bfloat16 alone stays
        return dtypes.bfloat16 if kinds == {"bfloat16"} else dtypes.float32
    return _BY_PRECISION[complex_][precision]


def min_scalar_type(a, /) -> dtypes.DType:
    """The smallest Ember dtype that holds the value ``a`` (NumPy's ``min_scalar_type``):
    unsigned integers for non-negative ints, float16 for floats it holds without
    overflow, complex64 at least for complex values; an array of one or more dimensions
    answers its own dtype.  A 0-d ember array is one element read back.  Values beyond
    uint64 raise ``TypeError`` (NumPy: the object dtype, which Ember lacks)."""
    if isinstance(a, ndarray):
        if a.ndim:
            return a.dtype
        a = a.item()
    found = np.min_scalar_type(a)
    try:
        return dtypes.dtype(found)
    except TypeError:
        raise TypeError(
            f"ember.min_scalar_type: no Ember dtype holds {a!r} (NumPy's answer "
            f"is {found}); use a value within the int64/uint64 range"
        ) from None


# --------------------------------------------------------------------- array information
def ndim(a) -> int:
    """The number of dimensions of ``a`` (NumPy's ``ndim``): an ember array's ``ndim``,
    else NumPy's answer for the host value (0 for a scalar)."""
    return a.ndim if isinstance(a, ndarray) else int(np.ndim(a))


def shape(a) -> tuple[int, ...]:
    """The shape of ``a`` (NumPy's ``shape``): an ember array's ``shape``, else NumPy's
    answer for the host value."""
    return tuple(a.shape) if isinstance(a, ndarray) else tuple(np.shape(a))


def size(a, axis=None) -> int:
    """The number of elements of ``a``, or along ``axis`` (an int or a tuple of ints), as
    NumPy's ``size``."""
    dims = a.shape if isinstance(a, ndarray) else np.shape(a)
    if axis is None:
        return math.prod(dims)
    axes = axis if isinstance(axis, tuple) else (axis,)
    ks = [manipulation._axis(k, len(dims), "ember.size: axis") for k in axes]
    return math.prod(dims[k] for k in ks)


# --------------------------------------------------------------------- memory overlap
def _pair(a, b, what: str) -> tuple[ndarray, ndarray]:
    for x in (a, b):
        if not isinstance(x, ndarray):
            raise TypeError(f"ember.{what} compares the memory of two ember arrays, got "
                            f"{type(x).__name__}; host data never shares device memory (put "
                            "it on the device with ember.asarray first)")  # fmt: skip
    return a, b


def _same_buffer(a: ndarray, b: ndarray) -> bool:
    if a.buffer is b.buffer:
        return True
    try:
        return a.backend is b.backend and a.buffer.handle == b.buffer.handle
    except Exception:  # a closed buffer, or handles that do not compare
        return False


def _bounds(x: ndarray) -> tuple[int, int]:
    low, high = x._extent()
    return x.offset + low, x.offset + high


def _bounds_overlap(a: ndarray, b: ndarray) -> bool:
    if a.size == 0 or b.size == 0 or not _same_buffer(a, b):
        return False
    (a0, a1), (b0, b1) = _bounds(a), _bounds(b)
    return a0 < b1 and b0 < a1


def _starts(x: ndarray) -> np.ndarray:
    """The byte offset of every element of ``x`` in its buffer, sorted (host metadata)."""
    offs = np.full(1, x.offset, np.int64)
    for n, s in zip(x.shape, x.strides, strict=True):
        offs = (offs[:, None] + np.arange(n, dtype=np.int64) * s).reshape(-1)
    return np.sort(offs)


def _exact_overlap(a: ndarray, b: ndarray) -> bool:
    """Whether an element of ``a`` and one of ``b`` share a byte: for each element
    ``[s, s + ia)`` of ``a``, the first element of ``b`` starting after ``s - ib``."""
    sa, sb = _starts(a), _starts(b)
    ia, ib = a.itemsize, b.itemsize
    k = np.searchsorted(sb, sa - ib, side="right")
    inside = k < sb.size
    return bool(np.any(sb[k[inside]] < sa[inside] + ia))


def may_share_memory(a, b, /, max_work=None) -> bool:
    """Whether the ember arrays ``a`` and ``b`` might share memory (NumPy's
    ``may_share_memory``): they view one buffer and their byte extents overlap.  With
    ``max_work=-1`` (NumPy's ``MAY_SHARE_EXACT``) the answer is :func:`shares_memory`'s
    exact one.  Metadata only."""
    a, b = _pair(a, b, "may_share_memory")
    if max_work is not None and max_work < 0:
        return shares_memory(a, b)
    return _bounds_overlap(a, b)


def shares_memory(a, b, /, max_work=None) -> bool:
    """Whether the ember arrays ``a`` and ``b`` have an element byte in common (NumPy's
    ``shares_memory``).  Exact: disjoint extents (or different buffers) are False; when
    the extents overlap, the elements' byte offsets are enumerated on the host from the
    shapes and strides (no data moves) and compared.  ``max_work``: 0 is the bounds
    check of :func:`may_share_memory`; a positive value (or more than 2**22 elements
    in all) beyond ``a.size + b.size`` raises ``numpy.exceptions.TooHardError``."""
    a, b = _pair(a, b, "shares_memory")
    if not _bounds_overlap(a, b):
        return False
    if max_work == 0:
        return True
    work = a.size + b.size
    limit = EXACT_LIMIT if max_work is None or max_work < 0 else operator.index(max_work)
    if work > limit:
        raise np.exceptions.TooHardError(
            f"ember.shares_memory: exceeded max_work ({work} elements to compare, limit "
            f"{limit}); ember.may_share_memory gives the bounds check"
        )
    return _exact_overlap(a, b)


# --------------------------------------------------------------------- conversions
def _ordered(x: ndarray, order, what: str) -> ndarray:
    if order in (None, "K", "A"):
        return x
    if order == "C":
        return x if x.is_c_contiguous else manipulation.ascontiguousarray(x)
    if order == "F":
        return x if manipulation.transpose(x).is_c_contiguous else ember.copy(x, order="F")
    raise ValueError(f"ember.{what}: order must be 'C', 'F', 'A', 'K' or None, not {order!r}")


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None) -> ndarray:
    """``a`` as an ember array (NumPy's ``asanyarray``; Ember has no array subclasses,
    so this is :func:`ember.asarray` with NumPy's ``order``: ``'C'``/``'F'`` copy into
    that layout when ``a`` is not in it).  ``like`` is accepted for NumPy's signature."""
    return _ordered(ember.asarray(a, dtype, copy=copy, device=device), order, "asanyarray")


def asarray_chkfinite(a, dtype=None, order=None) -> ndarray:
    """``a`` as an ember array, refusing NaNs and infinities with ``ValueError`` (NumPy's
    ``asarray_chkfinite``): one ``all(isfinite(a))`` on the device, one boolean read."""
    x = _ordered(ember.asarray(a, dtype), order, "asarray_chkfinite")
    if x.dtype.is_inexact and x.size and not bool(ember.all(ember.isfinite(x))):
        raise ValueError("ember.asarray_chkfinite: array must not contain infs or NaNs; "
                         "find them with ember.isfinite or replace them with "
                         "ember.nan_to_num")  # fmt: skip
    return x


_FLAGS = {
    "C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
    "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O",
    "OWNDATA": "O", "E": "E", "ENSUREARRAY": "E",
}  # fmt: skip


def _owns(x: ndarray) -> bool:
    """Ember's stand-in for NumPy's OWNDATA: ``x`` spans its whole buffer from its start,
    densely (C or Fortran order)."""
    dense = x.is_c_contiguous or manipulation.transpose(x).is_c_contiguous
    return x.offset == 0 and x.nbytes == x.buffer.nbytes and dense


def require(a, dtype=None, requirements=None, *, like=None) -> ndarray:
    """``a`` as an ember array of ``dtype`` meeting ``requirements`` (NumPy's
    ``require``), copying only when needed: ``'C'`` (C-contiguous), ``'F'`` (Fortran-
    contiguous), ``'O'`` (owns its data: Ember counts an array that spans its whole buffer
    densely, so a full transposed view counts too), and ``'A'`` (aligned), ``'W'``
    (writeable), ``'E'`` (a base-class array), which every ember array already is.
    Long names (``'C_CONTIGUOUS'``...) work
    too; an unknown one raises ``KeyError`` and ``'C'`` with ``'F'`` ``ValueError``, as
    in NumPy."""
    wanted = set()
    for r in requirements or ():
        try:
            wanted.add(_FLAGS[r.upper()])
        except KeyError:
            raise KeyError(f"ember.require: unknown requirement {r!r}; use one of "
                           f"{', '.join(_FLAGS)}") from None  # fmt: skip
    if {"C", "F"} <= wanted:
        raise ValueError('ember.require: cannot specify both "C" and "F" order')
    order = "F" if "F" in wanted else "C" if "C" in wanted else None
    x = _ordered(ember.asarray(a, dtype), order, "require")
    if "O" in wanted and not _owns(x):
        x = ember.copy(x, order=order or "K")
    return x


__all__ = [
    "iscomplex", "isreal", "iscomplexobj", "isrealobj", "real_if_close", "promote_types",
    "common_type", "min_scalar_type", "ndim", "shape", "size", "shares_memory",
    "may_share_memory", "asanyarray", "asarray_chkfinite", "require",
]  # fmt: skip
