"""NumPy's stacking, splitting and comparison helpers: ``hstack``/``vstack``/``dstack``/
``column_stack``, ``split`` and its kin, ``atleast_*d``, ``append``, ``ravel``, ``copy``,
``fliplr``/``flipud``/``rot90``, ``identity``, ``isclose``/``allclose``/``array_equal``/
``array_equiv``, ``nan_to_num``, ``around`` and ``fix``.

Most of them are layout bookkeeping over :mod:`ember.array.manipulation`: the stacks are
one :func:`~ember.array.manipulation.concatenate` of reshaped views (so one copy pass over
the data); the splits, ``atleast_*d``, flips and ``rot90`` return views, as NumPy does;
``ravel`` and ``copy`` follow NumPy's memory orders (``'K'`` keeps the order the elements
have in memory) with views and permuted copies.

The comparisons are elementwise kernels (:class:`~ember.array.elementwise.Ufunc`: any
layout, broadcasting): ``isclose`` is one fused kernel of ``a``, ``b`` and the tolerance
``atol + rtol * |b|``, a scalar when ``b`` is one or ``rtol`` is 0, else made by a second
small kernel (elementwise kernels take three operands; ``a, b, rtol, atol`` are four).
The yes/no answers (``allclose``, ``array_equal``...) reduce on the device and read one
bool back.  ``nan_to_num`` is an Ember kernel over a 1-d view (complex: each part).
Nothing copies an array to the host.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import warnings
from typing import Any

import ember
from ember import dtypes, lang
from ember.array import manipulation as mp
from ember.array import rules, ufuncs
from ember.array.elementwise import Ufunc
from ember.array.ndarray import ndarray, not_on_device
from ember.compiler.kernel import Kernel
from ember.frontend.types import WEAK_FLOAT, promote


# --------------------------------------------------------------------- operands
def _operand(x, what: str):
    """``x`` if it is an ember array or a Python or NumPy number (what the elementwise
    functions take); host arrays and lists are refused, naming ``ember.asarray``."""
    if not isinstance(x, ndarray):
        try:
            rules.scalar_type(x)
        except TypeError:
            raise not_on_device(x, f"ember.{what}") from None
    return x


def _array(x, what: str, like: ndarray | None = None) -> ndarray:
    """``x`` as an ember array: a number becomes a 0-d array (on ``like``'s device)."""
    x = _operand(x, what)
    if isinstance(x, ndarray):
        return x
    return ember.asarray(x, device=None if like is None else like.backend)


def _sequence(tup, what: str) -> list[ndarray]:
    """The arrays of a stack's ``tup`` (a list or tuple; an ember array is its views along
    axis 0, as NumPy iterates it)."""
    if isinstance(tup, ndarray):
        if tup.ndim == 0:
            raise TypeError(f"ember.{what} needs a sequence of arrays, not a 0-d array")
        return list(mp.unstack(tup))
    if not isinstance(tup, list | tuple):
        raise TypeError(
            f"ember.{what}: arrays to stack must be passed as a sequence (a list or a "
            f"tuple), not {type(tup).__name__}; wrap it in list(...)"
        )
    like = next((a for a in tup if isinstance(a, ndarray)), None)
    return [_array(a, what, like) for a in tup]


def _join(arrays: list[ndarray], axis: int, dtype, casting: str, what: str) -> ndarray:
    """``concatenate`` with NumPy's ``dtype=`` and ``casting=`` checks."""
    if not arrays:
        raise ValueError(f"ember.{what}: need at least one array to concatenate")
    target = mp.result_dtype(arrays) if dtype is None else dtypes.dtype(dtype)
    mp.check_casting(arrays, target, casting, what)
    try:
        return mp.concatenate(arrays, axis=axis, dtype=target, casting="unsafe")
    except ValueError as exc:  # shapes that do not join: say which function was called
        raise ValueError(f"ember.{what}: {exc}") from None


# --------------------------------------------------------------------- stacking
def hstack(tup, *, dtype=None, casting: str = "same_kind") -> ndarray:
    """Join arrays column-wise: along axis 1, or axis 0 for 1-d arrays (NumPy's
    ``hstack``; scalars and 0-d arrays count as 1-d)."""
    arrays = [atleast_1d(a) for a in _sequence(tup, "hstack")]
    axis = 0 if arrays and arrays[0].ndim == 1 else 1
    return _join(arrays, axis, dtype, casting, "hstack")


def vstack(tup, *, dtype=None, casting: str = "same_kind") -> ndarray:
    """Join arrays row-wise along axis 0, after making them at least 2-d (a 1-d array of
    ``n`` is a row ``(1, n)``), as NumPy's ``vstack`` (and ``row_stack``)."""
    arrays = [atleast_2d(a) for a in _sequence(tup, "vstack")]
    return _join(arrays, 0, dtype, casting, "vstack")


def dstack(tup) -> ndarray:
    """Join arrays along axis 2, after making them at least 3-d (``(n,)`` is ``(1, n, 1)``,
    ``(m, n)`` is ``(m, n, 1)``), as NumPy's ``dstack``."""
    arrays = [atleast_3d(a) for a in _sequence(tup, "dstack")]
    return _join(arrays, 2, None, "same_kind", "dstack")


def column_stack(tup) -> ndarray:
    """Join 1-d arrays as the columns of a 2-d array (arrays of 2 or more dimensions join
    along axis 1 as they are), as NumPy's ``column_stack``."""
    arrays = [
        mp.reshape(a, (a.size, 1)) if a.ndim < 2 else a for a in _sequence(tup, "column_stack")
    ]
    return _join(arrays, 1, None, "same_kind", "column_stack")


def append(arr, values, axis: int | None = None) -> ndarray:
    """``arr`` with ``values`` joined at the end along ``axis``: a new array of their
    promoted dtype.  With ``axis=None`` (NumPy's default) both are flattened first.  A
    Python scalar in ``values`` is an array of NumPy's default dtype for it (int64 for an
    int), as in NumPy, where it is not weak."""
    x = _array(arr, "append")
    v = _array(values, "append", like=x)
    if axis is None:
        x, v, axis = mp.reshape(x, (-1,)), mp.reshape(v, (-1,)), 0
    return _join([x, v], axis, None, "same_kind", "append")


# --------------------------------------------------------------------- atleast_*d
def _each(arys, what: str, fix) -> Any:
    like = next((a for a in arys if isinstance(a, ndarray)), None)
    out = tuple(fix(_array(a, what, like)) for a in arys)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Each input as an array of at least one dimension (a 0-d array becomes shape
    ``(1,)``, a view): one array for one input, else a tuple, as NumPy."""
    return _each(arys, "atleast_1d", lambda a: mp.reshape(a, (1,)) if a.ndim == 0 else a)


def atleast_2d(*arys):
    """Each input as a view of at least two dimensions: ``()`` is ``(1, 1)`` and ``(n,)``
    is ``(1, n)`` (NumPy's ``atleast_2d``)."""
    return _each(arys, "atleast_2d", lambda a: mp.reshape(a, (1,) * (2 - a.ndim) + a.shape)
                 if a.ndim < 2 else a)  # fmt: skip


def _3d(a: ndarray) -> ndarray:
    shape = ((1, 1, 1), (1, a.size, 1), (*a.shape, 1))[a.ndim] if a.ndim < 3 else None
    return a if shape is None else mp.reshape(a, shape)


def atleast_3d(*arys):
    """Each input as a view of at least three dimensions: ``()`` is ``(1, 1, 1)``, ``(n,)``
    is ``(1, n, 1)`` and ``(m, n)`` is ``(m, n, 1)`` (NumPy's ``atleast_3d``)."""
    return _each(arys, "atleast_3d", _3d)


# --------------------------------------------------------------------- splitting
def _points(n: int, spec, what: str) -> list[int]:
    """The division points of ``array_split``: ``sections`` nearly equal parts (the first
    ``n % sections`` one longer), or ``[0, *indices, n]``."""
    if hasattr(spec, "__index__"):
        sections = operator.index(spec)
        if sections <= 0:
            raise ValueError(f"ember.{what}: number sections must be larger than 0, not {sections}")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        return [0, *itertools.accumulate(sizes)]
    try:
        return [0, *(operator.index(i) for i in spec), n]
    except TypeError:
        raise TypeError(
            f"ember.{what}: indices_or_sections must be an int or a sequence of ints, not {spec!r}"
        ) from None


def _listed(spec):
    """Split points given as an ember array, read to the host (a few ints: one read)."""
    return spec.tolist() if isinstance(spec, ndarray) else spec


def _split(x: ndarray, spec, axis, what: str) -> list[ndarray]:
    x, spec = _array(x, what), _listed(spec)
    k = mp._axis(axis, x.ndim, f"ember.{what}: axis")
    points = _points(x.shape[k], spec, what)
    head = (slice(None),) * k
    return [x[(*head, slice(a, b))] for a, b in itertools.pairwise(points)]


def array_split(ary, indices_or_sections, axis: int = 0) -> list[ndarray]:
    """Views of ``ary`` cut along ``axis``: into ``indices_or_sections`` parts (an int; the
    first ``n % sections`` parts one element longer) or at the given indices (slices
    between them, with Python's rules for negative and out-of-range indices), as NumPy."""
    return _split(ary, indices_or_sections, axis, "array_split")


def split(ary, indices_or_sections, axis: int = 0) -> list[ndarray]:
    """:func:`array_split` where an int must divide the axis into equal parts (NumPy's
    ``split``: otherwise ``ValueError``).  The parts are views of ``ary``."""
    x, spec = _array(ary, "split"), _listed(indices_or_sections)
    if hasattr(spec, "__index__"):
        sections = operator.index(spec)
        n = x.shape[mp._axis(axis, x.ndim, "ember.split: axis")]
        if sections > 0 and n % sections:
            raise ValueError(
                f"ember.split: array split does not result in an equal division ({n} "
                f"elements into {sections} sections); use ember.array_split for unequal parts"
            )
    return _split(x, spec, axis, "split")


def _split_along(ary, spec, axis: int, least: int, what: str) -> list[ndarray]:
    x = _array(ary, what)
    if x.ndim < least:
        raise ValueError(
            f"ember.{what} only works on arrays of {least} or more dimensions, not "
            f"{x.ndim}; use ember.array_split(x, ..., axis=...) or reshape first"
        )
    return _split(x, spec, axis, what)


def hsplit(ary, indices_or_sections) -> list[ndarray]:
    """Split column-wise: along axis 1, or 0 for 1-d arrays (NumPy's ``hsplit``)."""
    ndim = ary.ndim if isinstance(ary, ndarray) else 0
    return _split_along(ary, indices_or_sections, 1 if ndim > 1 else 0, 1, "hsplit")


def vsplit(ary, indices_or_sections) -> list[ndarray]:
    """Split row-wise along axis 0 an array of 2 or more dimensions (NumPy's ``vsplit``)."""
    return _split_along(ary, indices_or_sections, 0, 2, "vsplit")


def dsplit(ary, indices_or_sections) -> list[ndarray]:
    """Split along axis 2 an array of 3 or more dimensions (NumPy's ``dsplit``)."""
    return _split_along(ary, indices_or_sections, 2, 3, "dsplit")


# --------------------------------------------------------------------- ravel, copy
def _memory_order(x: ndarray) -> list[int]:
    """The axes of ``x`` from the slowest to the fastest in memory (NumPy's ``'K'``): an
    insertion sort on ``|stride|`` that keeps C order between equal strides and moves no
    axis past a broadcast or length-1 one (their order is ambiguous), as NumPy's iterator."""
    strides = [0 if n == 1 else abs(s) for n, s in zip(x.shape, x.strides, strict=True)]
    fastest_first: list[int] = []
    for ax in reversed(range(x.ndim)):
        pos = len(fastest_first)
        for j in range(len(fastest_first) - 1, -1, -1):
            a, b = strides[ax], strides[fastest_first[j]]
            if a == 0 or b == 0:
                continue
            if b <= a:
                break
            pos = j
        fastest_first.insert(pos, ax)
    return fastest_first[::-1]


def _order(order, what: str, x: ndarray, copy: bool = False) -> list[int]:
    """The axis permutation that makes ``order`` C order (``'K'``: :func:`_memory_order` for
    ``ravel``; with ``copy``, a copy's layout as NumPy makes it, a stable sort on
    ``|stride|``)."""
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"ember.{what}: order must be 'C', 'F', 'A' or 'K', not {order!r}")
    if x.is_c_contiguous and order in "AK":
        return list(range(x.ndim))
    if order == "F" or (order in "AK" and mp.transpose(x).is_c_contiguous):
        return list(range(x.ndim - 1, -1, -1))
    if order != "K":
        return list(range(x.ndim))
    if copy:
        return sorted(range(x.ndim), key=lambda k: -abs(x.strides[k]))
    return _memory_order(x)


def ravel(a, order: str = "C") -> ndarray:
    """The elements of ``a`` as a 1-d array: a view when the layout allows, else a copy
    (NumPy's rule).  ``order``: ``'C'`` (row-major), ``'F'`` (column-major), ``'A'`` (F
    for a Fortran-contiguous array, else C) or ``'K'`` (the order in memory; axes with
    negative strides are read as they are, as NumPy does)."""
    x = _array(a, "ravel")
    return mp.reshape(mp.permute_dims(x, _order(order, "ravel", x)), (-1,))


def copy(a, order: str = "K", subok: bool = False) -> ndarray:
    """A copy of ``a`` on its device.  ``order`` is NumPy's layout of the copy: ``'C'``,
    ``'F'`` (a Fortran-ordered array: a transposed view of a C-ordered copy), ``'A'`` or
    ``'K'`` (the memory order of ``a``: a copy of a transposed array is transposed too).
    ``subok`` is accepted for NumPy's signature (Ember has no array subclasses)."""
    x = _array(a, "copy")
    return converted(x, x.dtype, order)


def converted(x: ndarray, dtype, order: str = "K", what: str = "copy", **options) -> ndarray:
    """``x`` as ``dtype`` (``manipulation.astype`` with ``options``) in NumPy's layout
    ``order`` (:func:`copy`'s): the conversion runs on ``x`` with its axes permuted into
    that order, and the result is permuted back."""
    perm = _order(order, what, x, copy=True)
    if perm == list(range(x.ndim)):
        return mp.astype(x, dtype, **options)
    back = sorted(range(x.ndim), key=perm.__getitem__)
    return mp.permute_dims(mp.astype(mp.permute_dims(x, perm), dtype, **options), back)


# --------------------------------------------------------------------- flips
def _flip(m, axis: int, what: str) -> ndarray:
    x = _array(m, what)
    if x.ndim <= axis:
        raise ValueError(f"ember.{what}: input must be >= {axis + 1}-d, not {x.ndim}-d")
    return mp.flip(x, axis)


def fliplr(m) -> ndarray:
    """``m`` with its columns (axis 1) reversed: a view (NumPy's ``fliplr``, >= 2-d)."""
    return _flip(m, 1, "fliplr")


def flipud(m) -> ndarray:
    """``m`` with its rows (axis 0) reversed: a view (NumPy's ``flipud``, >= 1-d)."""
    return _flip(m, 0, "flipud")


def rot90(m, k: int = 1, axes=(0, 1)) -> ndarray:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes``, from the first
    axis towards the second: a view (NumPy's ``rot90``)."""
    x = _array(m, "rot90")
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"ember.rot90: axes must be two axes, not {axes!r}")
    if any(not -x.ndim <= a < x.ndim for a in axes):
        raise ValueError(f"ember.rot90: axes {axes} out of range for an array of ndim {x.ndim}")
    a0, a1 = (a % x.ndim for a in axes)
    if a0 == a1:
        raise ValueError(f"ember.rot90: axes must be different, not {axes}")
    k = operator.index(k) % 4
    if k == 0:
        return x[...]
    if k == 2:
        return mp.flip(x, (a0, a1))
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return mp.permute_dims(mp.flip(x, a1), perm)
    return mp.flip(mp.permute_dims(x, perm), a1)


def identity(n: int, dtype=None, *, device=None, like=None) -> ndarray:
    """The ``n`` by ``n`` identity matrix, float64 by default (NumPy's ``identity``), on
    ``device`` (or ``like``'s device, NumPy's ``like=``; default: the current one)."""
    from ember.array.creation import eye

    if device is None and isinstance(like, ndarray):
        device = like.backend
    return eye(operator.index(n), dtype=dtypes.float64 if dtype is None else dtype,
               device=device)  # fmt: skip


# --------------------------------------------------------------------- isclose
def _isclose(a, b, tol):
    """NumPy's ``isclose`` of one element pair, cast to their promotion; ``tol`` is
    ``atol + rtol * |b|`` (real; in a complex promotion, its real part)."""
    if a == b:  # infinities are close to themselves only
        return True
    return abs(a - b) <= tol.real and lang.isfinite(b)


def _isclose_nan(a, b, tol):
    """:func:`_isclose`, and NaN (a NaN part, for complex numbers) is close to NaN."""
    return _isclose(a, b, tol) or (lang.isnan(a) and lang.isnan(b))


def _isclose_tolerance(b, rtol, atol):
    return atol.real + rtol.real * abs(b)


class _Close(rules.Rule):
    """``(a, b, tol)`` computed in the promotion of ``a`` and the inexact ``b`` (NumPy's
    ``result_type(b, 1.0)``), ``tol`` cast to it; bool results."""

    def __init__(self, equal_nan: bool):
        super().__init__("isclose")
        self.equal_nan = equal_nan

    def __call__(self, types):
        ct = promote(types[0], promote(types[1], WEAK_FLOAT)).dtype
        op = _isclose_nan if self.equal_nan else _isclose
        return rules.Resolution(op, ct, dtypes.bool_)


class _Tolerance(rules.Rule):
    """``(b, rtol, atol)``: ``atol + rtol * |b|``, real, in the promotion of all three."""

    def __call__(self, types):
        ct = rules.common((promote(types[0], WEAK_FLOAT), *types[1:])).dtype
        return rules.Resolution(_isclose_tolerance, ct, ct.real)


_close = {flag: Ufunc("isclose", 3, _Close(flag)) for flag in (False, True)}
_tolerance = Ufunc("isclose", 3, _Tolerance("isclose"))


def _host_tolerance(b, rtol, atol):
    """``atol + rtol * |b|`` for a scalar ``b``, in NumPy's types (``b`` made inexact)."""
    import numpy as np

    if not isinstance(b, float | complex):  # a Python int is float(b), as in NumPy
        b = float(b) if isinstance(b, int) else np.asarray(b, np.result_type(b, 1.0))[()]
    return atol + rtol * abs(b)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` on the device, a bool array of the
    broadcast shape (NumPy's ``isclose``, its formula and types: ``b`` is made inexact,
    infinities are close to themselves only, NaN to nothing unless ``equal_nan``; complex
    values compare by ``abs``).  ``rtol``/``atol`` are scalars or ember arrays.

    Deviation: a 0-d result is a 0-d ember array (NumPy returns a NumPy bool); with no
    ember array among ``a`` and ``b`` the answer is NumPy's, computed on the host."""
    a, b = _operand(a, "isclose"), _operand(b, "isclose")
    rtol, atol = _operand(rtol, "isclose"), _operand(atol, "isclose")
    if not isinstance(a, ndarray) and not isinstance(b, ndarray):
        import numpy as np

        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    from ember.array.broadcast import broadcast_shapes

    broadcast_shapes(_shape(a), _shape(b))  # a mismatch raises before any work
    scalars = not isinstance(rtol, ndarray) and not isinstance(atol, ndarray)
    if scalars and not (math.isfinite(abs(rtol)) and math.isfinite(abs(atol))):
        warnings.warn(
            f"ember.isclose: one of rtol or atol is not valid, atol: {atol}, rtol: {rtol}",
            RuntimeWarning,
            stacklevel=2,
        )
    if scalars and not isinstance(b, ndarray):
        tol = _host_tolerance(b, rtol, atol)
    elif scalars and rtol == 0:
        tol = atol
    else:
        tol = _tolerance(b, rtol, atol)
    return _close[bool(equal_nan)](a, b, tol)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False) -> bool:
    """Whether every element pair is close (:func:`isclose`), as a Python bool: the test
    runs on the device and one bool is read back (a synchronization)."""
    return bool(ember.all(isclose(a, b, rtol, atol, equal_nan)))


def _shape(x) -> tuple[int, ...]:
    return x.shape if isinstance(x, ndarray) else ()


def array_equal(a1, a2, equal_nan: bool = False) -> bool:
    """Whether ``a1`` and ``a2`` have one shape and equal elements, as a Python bool (one
    read back; different shapes answer False at once, NumPy's ``array_equal``).  With
    ``equal_nan``, NaNs at the same places count as equal (a complex NaN is one with a NaN
    part)."""
    a, b = _operand(a1, "array_equal"), _operand(a2, "array_equal")
    if not isinstance(a, ndarray) and not isinstance(b, ndarray):
        import numpy as np

        return bool(np.array_equal(a, b, equal_nan=equal_nan))
    if _shape(a) != _shape(b):
        return False
    kinds = {(v.dtype if isinstance(v, ndarray) else rules.scalar_type(v).dtype).kind
             for v in (a, b)}  # fmt: skip
    if equal_nan and kinds & set("fc"):
        # isclose with a negative tolerance: equal, or NaN in both
        return bool(ember.all(_close[True](a, b, -1.0)))
    return bool(ember.all(ufuncs.equal(a, b)))


def array_equiv(a1, a2) -> bool:
    """Whether ``a1`` and ``a2`` broadcast together and are equal everywhere, as a Python
    bool (one read back; shapes that do not broadcast answer False at once)."""
    from ember.array.broadcast import broadcast_shapes

    a, b = _operand(a1, "array_equiv"), _operand(a2, "array_equiv")
    if not isinstance(a, ndarray) and not isinstance(b, ndarray):
        return bool(a == b)
    try:
        broadcast_shapes(_shape(a), _shape(b))
    except ValueError:
        return False
    return bool(ember.all(ufuncs.equal(a, b)))


# --------------------------------------------------------------------- nan_to_num
def _nan_to_num(dst, src, nan, posinf, neginf):
    """``dst[i] = src[i]`` with NaN and the infinities replaced (1-d views of one dtype)."""
    i = ember.global_id()
    while i < dst.shape[0]:
        v = src[i]
        if v != v:
            v = dst.dtype(nan)
        elif lang.isinf(v):
            v = dst.dtype(posinf) if v > 0 else dst.dtype(neginf)
        dst[i] = v
        i += ember.global_size()


@functools.cache
def _nan_to_num_kernel() -> Kernel:
    return Kernel(_nan_to_num)


def _replace(dst: ndarray, src: ndarray, values) -> None:
    """Run the kernel on 1-d ``dst``/``src`` of a real dtype, the values passed in float32
    (float16, bfloat16, float32) or float64."""
    import numpy as np

    ct = np.float64 if dst.dtype is dtypes.float64 else np.float32
    with np.errstate(over="ignore"):  # a value beyond the dtype is its infinity, as NumPy
        args = [ct(v) for v in values]
    block = min(256, dst.backend.device.max_threads_per_block)
    grid = max(1, min(-(-dst.size // block), 4096))
    _nan_to_num_kernel()[grid, block](dst, src, *args)


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """``x`` with NaN replaced by ``nan`` and the infinities by ``posinf``/``neginf``
    (default: the largest/lowest finite value of the dtype), each part of a complex array
    on its own (NumPy's ``nan_to_num``).  Integer and bool arrays are returned unchanged
    (copied unless ``copy=False``).  ``copy=False`` replaces in ``x`` itself and returns it.
    The replacement values are real scalars.  With a scalar ``x`` the answer is NumPy's."""
    if not isinstance(x, ndarray):
        import numpy as np

        _operand(x, "nan_to_num")
        return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    if not x.dtype.is_inexact:
        return mp.astype(x, x.dtype) if copy else x
    from ember.array.creation import empty
    from ember.array.info import finfo

    big = finfo(x.dtype.real).max
    try:
        values = [float(v) for v in (nan, big if posinf is None else posinf,
                                     -big if neginf is None else neginf)]  # fmt: skip
    except TypeError:
        raise TypeError(
            f"ember.nan_to_num: nan, posinf and neginf must be real numbers, got "
            f"{nan!r}, {posinf!r}, {neginf!r}"
        ) from None
    src = mp.reshape(x, (-1,))  # a view when the layout allows, else a copy
    dst = empty((x.size,), x.dtype, device=x.backend) if copy else src
    if x.size:
        parts = ("real", "imag") if x.dtype.is_complex else (None,)
        for p in parts:
            d, s = (dst, src) if p is None else (getattr(dst, p), getattr(src, p))
            _replace(d, s, values)
    if copy:
        return mp.reshape(dst, x.shape)
    if src.buffer is not x.buffer:  # x's layout needed a flat copy: write it back
        mp.copy_into(x, mp.reshape(src, x.shape))
    return x


# --------------------------------------------------------------------- rounding
def around(a, decimals: int = 0, out=None):
    """Round half to even to ``decimals`` digits: :func:`ember.round` (integers keep their
    dtype, as NumPy's ``around``)."""
    return ufuncs.round(a, decimals, out=out)


def fix(x, out=None):
    """Round toward zero (NumPy's ``fix``: ``ember.trunc``): floats stay floats (``-0.5``
    gives ``-0.0``), integers and bools are unchanged; ``out=`` as the ufuncs'."""
    return ufuncs.trunc(x, out=out)


__all__ = [
    "hstack", "vstack", "dstack", "column_stack", "split", "array_split", "hsplit",
    "vsplit", "dsplit", "atleast_1d", "atleast_2d", "atleast_3d", "append", "ravel",
    "copy", "fliplr", "flipud", "rot90", "identity", "isclose", "allclose", "array_equal",
    "array_equiv", "nan_to_num", "around", "fix",
]  # fmt: skip
