"""Shape and layout: reshape, transposes, squeeze, expand_dims, broadcast_to, flip (views
wherever NumPy makes views), and copies: astype, concatenate, stack.

Copies and casts run the elementwise ``copy`` kernel (contiguous, strided, or the tiled
transpose for ``x.T.copy()``); a same-dtype copy of a contiguous array is a device memcpy.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

from ember import dtypes
from ember.array import broadcast
from ember.array.ndarray import c_strides, check_writable, ndarray
from ember.errors import axis_error
from ember.runtime.memory import allocate


# --------------------------------------------------------------------- copies and casts
@functools.cache
def _cast(dtype: dtypes.DType):
    from ember.array import rules
    from ember.array.elementwise import Ufunc

    return Ufunc("astype", 1, rules.Cast(dtype))


def into(out, result: ndarray, what: str) -> ndarray:
    """A function's ``out=``: ``result`` when ``out`` is None, else ``out`` (an ember array
    of ``result``'s shape) holding it, cast to ``out``'s dtype."""
    if out is None:
        return result
    if not isinstance(out, ndarray):
        raise TypeError(f"ember.{what}: out= must be an ember array, got {type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(
            f"ember.{what}: out= has shape {out.shape}, the result has shape {result.shape}"
        )
    copy_into(out, result)
    return out


def copy_into(dst: ndarray, src: Any) -> None:
    """``dst[...] = src``: an array (broadcast to ``dst``) or a scalar, cast to ``dst``'s
    dtype (unsafe casting, like NumPy's assignment)."""
    check_writable(dst)
    if isinstance(src, ndarray):
        src = drop_leading_ones(src, dst.ndim)
        try:
            shape = broadcast.broadcast_shapes(src.shape, dst.shape)
        except ValueError:
            shape = None
        if shape != dst.shape:
            raise ValueError(
                f"could not broadcast input array from shape {src.shape} into shape {dst.shape}"
            )
        if (
            src.dtype is dst.dtype
            and src.shape == dst.shape
            and src.c_strided
            and dst.c_strided
            and src.backend is dst.backend
        ):
            if not dst.size or (src.buffer is dst.buffer and src.offset == dst.offset):
                return
            if src.buffer is dst.buffer and abs(src.offset - dst.offset) < dst.nbytes:
                src = src.copy()  # overlapping ranges (x[1:] = x[:-1]): a device copy's
                # result is undefined there (OpenCL refuses it), so through a temporary
            dst.backend.copy_device(dst.buffer, dst.offset, src.buffer, src.offset, dst.nbytes)
            return
    _cast(dst.dtype)(src, out=dst)


def drop_leading_ones(value: ndarray, ndim: int) -> ndarray:
    """``value`` without the leading length-1 axes beyond ``ndim``: NumPy's assignment
    broadcasts ``x[:] = v`` with ``v`` of shape ``(1, n)`` into ``(n,)``."""
    extra = value.ndim - ndim
    if extra > 0 and all(d == 1 for d in value.shape[:extra]):
        return reshape(value, value.shape[extra:])
    return value


def astype(x: ndarray, dtype: Any, /, *, copy: bool = True, device=None) -> ndarray:
    """``x`` converted to ``dtype`` in a new C-contiguous array (``x`` itself when
    ``copy=False`` and nothing needs converting), on ``device`` when given."""
    if device is not None:
        moved = x.to_device(device)
        copy = copy and moved is x
        x = moved
    dt = dtypes.dtype(dtype)
    if not copy and dt is x.dtype:
        return x
    out = ndarray(x.shape, dt, allocate(x.backend, x.size * dt.itemsize), x.backend)
    copy_into(out, x)
    return out


def ascontiguousarray(x: ndarray, dtype: Any = None, *, like=None) -> ndarray:
    """``x`` when it is C-contiguous (and of ``dtype``), else a C-contiguous copy
    (``like=``: NumPy's reference array, accepted; ``x`` stays on its device)."""
    if like is not None and not isinstance(like, ndarray):
        raise TypeError("ember.ascontiguousarray: like= must be an ember array")
    dt = x.dtype if dtype is None else dtypes.dtype(dtype)
    if dt is x.dtype and x.is_c_contiguous:
        return x
    return astype(x, dt)


# --------------------------------------------------------------------- views
def _view(x: ndarray, shape, strides, offset=None) -> ndarray:
    return ndarray(
        tuple(shape), x.dtype, x.buffer, x.backend, tuple(strides),
        x.offset if offset is None else offset,
    )  # fmt: skip


def _axis(axis: int, ndim: int, what: str = "axis") -> int:
    try:
        k = int(axis.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"{what} must be an integer, got {axis!r}") from None
    if not -ndim <= k < ndim:
        raise axis_error(f"{what} {k} is out of bounds for array of dimension {ndim}")
    return k % ndim


def permute_dims(x: ndarray, axes) -> ndarray:
    """A view with the axes in the order ``axes`` (a permutation of ``range(x.ndim)``)."""
    perm = tuple(_axis(a, x.ndim) for a in axes)
    if len(set(perm)) != len(perm):
        raise ValueError(f"repeated axis in transpose: axes {tuple(axes)} (each axis once)")
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"axes {tuple(axes)} don't match array of {x.ndim} dimensions")
    return _view(x, (x.shape[k] for k in perm), (x.strides[k] for k in perm))


def transpose(x: ndarray, axes=None) -> ndarray:
    """NumPy's ``transpose``: reverse the axes, or permute them by ``axes``."""
    return permute_dims(x, tuple(range(x.ndim - 1, -1, -1)) if axes is None else axes)


def matrix_transpose(x: ndarray) -> ndarray:
    """The transpose of the last two axes (a view)."""
    return x.mT


def swapaxes(x: ndarray, axis1: int, axis2: int) -> ndarray:
    return x.swapaxes(_axis(axis1, x.ndim), _axis(axis2, x.ndim))


def moveaxis(x: ndarray, source, destination) -> ndarray:
    """A view with axes ``source`` moved to positions ``destination``."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("source and destination must have the same number of elements")
    src = [_axis(a, x.ndim, "source") for a in src]
    dst = [_axis(a, x.ndim, "destination") for a in dst]
    order = [k for k in range(x.ndim) if k not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return permute_dims(x, order)


def squeeze(x: ndarray, axis=None) -> ndarray:
    """A view without the length-1 axes (all, or those in ``axis``)."""
    if axis is None:
        keep = [k for k, n in enumerate(x.shape) if n != 1]
    else:
        drop = {_axis(a, x.ndim) for a in (axis if isinstance(axis, tuple | list) else (axis,))}
        for k in drop:
            if x.shape[k] != 1:
                raise ValueError(
                    "cannot select an axis to squeeze out which has size not equal to one"
                )
        keep = [k for k in range(x.ndim) if k not in drop]
    return _view(x, (x.shape[k] for k in keep), (x.strides[k] for k in keep))


def expand_dims(x: ndarray, axis=0) -> ndarray:
    """A view with length-1 axes inserted at ``axis`` (an int or a tuple)."""
    axes = axis if isinstance(axis, tuple | list) else (axis,)
    ndim = x.ndim + len(axes)
    where = sorted(_axis(a, ndim) for a in axes)
    if len(set(where)) != len(where):
        raise ValueError("repeated axis in expand_dims")
    shape, strides = list(x.shape), list(x.strides)
    for k in where:
        shape.insert(k, 1)
        strides.insert(k, 0)
    return _view(x, shape, strides)


def flip(x: ndarray, axis=None) -> ndarray:
    """A view with the order of elements reversed along ``axis`` (all axes by default)."""
    axes = range(x.ndim) if axis is None else axis if isinstance(axis, tuple | list) else (axis,)
    shape, strides, offset = x.shape, list(x.strides), x.offset
    for k in {_axis(a, x.ndim) for a in axes}:
        if shape[k] > 0:
            offset += (shape[k] - 1) * strides[k]
        strides[k] = -strides[k]
    return _view(x, shape, strides, offset)


def broadcast_to(x: ndarray, shape, subok: bool = False) -> ndarray:
    """A view of ``x`` with ``shape`` (stretched axes have stride 0).  Writes into it are
    refused where they would repeat (:func:`~ember.array.ndarray.check_writable`: NumPy's
    result is read-only); a view of it without a stretched axis (``b[0]``, ``b[1, 2]``)
    writes into ``x``, where NumPy would refuse that too.  ``subok`` is accepted for
    NumPy's signature (Ember has no array subclasses)."""
    from ember.array.ndarray import normalize_shape

    shape = normalize_shape(shape)
    if len(shape) < x.ndim or broadcast.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(
            f"operands could not be broadcast together with remapped shapes "
            f"[original->remapped]: {x.shape} and requested shape {shape}"
        )
    return _view(x, shape, broadcast.stretch(x.shape, x.strides, shape))


def broadcast_arrays(*arrays: ndarray, subok: bool = False) -> list[ndarray]:
    """Views of ``arrays`` broadcast to their common shape (``subok``: accepted, as in
    :func:`broadcast_to`)."""
    shape = broadcast.broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


# --------------------------------------------------------------------- reshape
def _resolve(shape, size: int) -> tuple[int, ...]:
    dims = [int(n.__index__()) for n in ((shape,) if isinstance(shape, int) else shape)]
    unknown = [k for k, n in enumerate(dims) if n == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(n < -1 for n in dims):
        raise ValueError(f"negative dimensions not allowed: {tuple(dims)}")
    if unknown:
        known = math.prod(n for n in dims if n != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(dims)}")
        dims[unknown[0]] = size // known
    if math.prod(dims) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(dims)}")
    return tuple(dims)


def reshape(x: ndarray, shape, order: str = "C", *, copy: bool | None = None) -> ndarray:
    """``x`` with a new shape: a view when the strides allow it (NumPy's rule), else a copy
    (``copy=False`` refuses to copy, ``copy=True`` always copies).

    ``order`` is NumPy's (third, as in ``numpy.reshape(a, shape, order)``): the elements
    are read and placed in row-major (``'C'``) or column-major (``'F'``) index order;
    ``'A'`` is ``'F'`` for an array that is Fortran- and not C-contiguous, else ``'C'``."""
    if order != "C":
        return _reshape_ordered(x, shape, order, copy)
    new = _resolve(shape, x.size)
    if copy:
        return reshape(astype(x, x.dtype), new)
    if x.is_c_contiguous:
        return _view(x, new, c_strides(new, x.dtype.itemsize))
    strides = _reshape_strides(x.shape, x.strides, new)
    if strides is not None:
        return _view(x, new, strides)
    if copy is False:
        raise ValueError("cannot reshape this array without copying it (copy=False)")
    return reshape(astype(x, x.dtype), new)


def _reshape_ordered(x: ndarray, shape, order, copy: bool | None) -> ndarray:
    """``reshape`` in ``order`` ``'F'`` or ``'A'``: column-major order is row-major order of
    the axes reversed, so the reversed view is reshaped to the reversed shape and reversed
    back (a view where that reshape is one, as in NumPy)."""
    if order not in ("F", "A"):
        raise ValueError(f"ember.reshape: order must be 'C', 'F' or 'A', not {order!r}")
    flipped = permute_dims(x, tuple(range(x.ndim - 1, -1, -1)))
    if order == "A" and not (flipped.is_c_contiguous and not x.is_c_contiguous):
        return reshape(x, shape, copy=copy)
    new = _resolve(shape, x.size)
    out = reshape(flipped, new[::-1], copy=copy)
    return permute_dims(out, tuple(range(len(new) - 1, -1, -1)))


def _reshape_strides(old, strides, new) -> tuple[int, ...] | None:
    """Strides that view ``old``/``strides`` as ``new`` without copying, or None.

    Groups of old axes that are contiguous with each other (ignoring length-1 axes) can be
    re-split into any new axes with the same product."""
    pairs = [(n, s) for n, s in zip(old, strides, strict=True) if n != 1]
    out: list[int] = []
    i = 0
    j = 0
    new_dims = list(new)
    while j < len(new_dims):
        if new_dims[j] == 1:
            out.append(0)
            j += 1
            continue
        if i >= len(pairs):
            return None
        # gather old axes and new axes until their products match
        oi, nj = i, j
        po, pn = pairs[i][0], new_dims[j]
        while po != pn:
            if po < pn:
                i += 1
                if i >= len(pairs):
                    return None
                po *= pairs[i][0]
            else:
                j += 1
                if j >= len(new_dims):
                    return None
                pn *= new_dims[j]
        for k in range(oi, i):  # the old group must be contiguous with itself
            if pairs[k][1] != pairs[k + 1][1] * pairs[k + 1][0]:
                return None
        step = pairs[i][1]
        group = []
        for k in range(j, nj - 1, -1):
            group.append(step if new_dims[k] != 1 else 0)
            step *= new_dims[k]
        out += reversed(group)
        i += 1
        j += 1
    if i != len(pairs):
        return None
    return tuple(out)


# --------------------------------------------------------------------- joining
def result_dtype(arrays) -> dtypes.DType:
    from ember.frontend.types import promote_strong

    return functools.reduce(promote_strong, (a.dtype for a in arrays))


CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def concatenate(
    arrays, /, axis: int | None = 0, out=None, *, dtype=None, casting: str = "same_kind"
) -> ndarray:
    """Join arrays along an existing ``axis`` (``None``: flatten them first) into a new
    array of their promoted dtype (``dtype``: that one, each input cast to it under
    ``casting``, NumPy's rule), or into ``out`` (NumPy's: an array of the result's shape,
    the values cast to its dtype)."""
    if out is not None:
        return into(out, concatenate(arrays, axis, dtype=dtype, casting=casting), "concatenate")
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    _all_device(arrays, "concatenate")
    dt = result_dtype(arrays) if dtype is None else dtypes.dtype(dtype)
    if casting != "unsafe":
        check_casting(arrays, dt, casting, "concatenate")
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    k = _axis(axis, first.ndim)
    for i, a in enumerate(arrays[1:], 1):
        if a.ndim != first.ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {first.ndim} dimension(s) and the array at index {i} has "
                f"{a.ndim} dimension(s)"
            )
        for d in range(first.ndim):
            if d != k and a.shape[d] != first.shape[d]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the array at index 0 has size "
                    f"{first.shape[d]} and the array at index {i} has size {a.shape[d]}"
                )
    shape = list(first.shape)
    shape[k] = sum(a.shape[k] for a in arrays)
    out = ndarray(tuple(shape), dt, allocate(first.backend, math.prod(shape) * dt.itemsize),
                  first.backend)  # fmt: skip
    start = 0
    for a in arrays:
        stop = start + a.shape[k]
        if a.size:
            index = (slice(None),) * k + (slice(start, stop),)
            copy_into(out[index], a)
        start = stop
    return out


def check_casting(arrays, target, casting: str, what: str) -> None:
    """Refuse (``TypeError``) an input that does not cast to ``target`` under ``casting``."""
    if casting not in CASTINGS:
        raise ValueError(f"ember.{what}: casting must be one of {CASTINGS}, not {casting!r}")
    from ember.array.info import can_cast

    for a in arrays:
        if not can_cast(a.dtype, target, casting):
            raise TypeError(
                f"ember.{what}: cannot cast {a.dtype} to {target} under casting="
                f"{casting!r}; pass casting='unsafe' (or 'same_kind') or another dtype="
            )


def concat(
    arrays, /, axis: int | None = 0, out=None, *, dtype=None, casting: str = "same_kind"
) -> ndarray:
    """The Array API's name of :func:`concatenate`, with NumPy's parameters (``numpy.concat``
    is ``numpy.concatenate``)."""
    return concatenate(arrays, axis, out, dtype=dtype, casting=casting)


def stack(arrays, axis: int = 0, out=None, *, dtype=None, casting: str = "same_kind") -> ndarray:
    """Join arrays of one shape along a new ``axis`` (into ``out``; ``dtype`` and
    ``casting`` as in :func:`concatenate`)."""
    if out is not None:
        return into(out, stack(arrays, axis, dtype=dtype, casting=casting), "stack")
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    _all_device(arrays, "stack")
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    k = _axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, k) for a in arrays], axis=k, dtype=dtype, casting=casting)


def unstack(x: ndarray, /, *, axis: int = 0) -> tuple[ndarray, ...]:
    """Views of ``x`` split along ``axis`` (each without that axis)."""
    k = _axis(axis, x.ndim)
    index = (slice(None),) * k
    return tuple(x[(*index, i, ...)] for i in range(x.shape[k]))


def roll(x: ndarray, /, shift, axis=None) -> ndarray:
    """Elements shifted along ``axis`` (the flattened array by default), wrapping around."""
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, axis=0), x.shape)
    shifts = tuple(shift) if isinstance(shift, tuple | list) else (shift,)
    axes = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    if len(shifts) != len(axes):  # broadcast against each other, as NumPy's roll does
        if len(shifts) == 1:
            shifts *= len(axes)
        elif len(axes) == 1:
            axes *= len(shifts)
        else:
            raise ValueError(
                f"roll: {len(shifts)} shifts and {len(axes)} axes do not broadcast together"
            )
    total: dict[int, int] = {}  # shifts of one axis add up
    for s, a in zip(shifts, axes, strict=True):
        k = _axis(a, x.ndim)
        total[k] = total.get(k, 0) + operator.index(s)
    out = x
    for k, s in total.items():
        n = x.shape[k]
        if n == 0:
            continue
        s %= n
        if s:
            head = (slice(None),) * k
            out = concatenate(
                [out[(*head, slice(n - s, None))], out[(*head, slice(0, n - s))]], axis=k
            )
    return out if out is not x else astype(x, x.dtype)


def tile(x: ndarray, /, reps) -> ndarray:
    """``x`` repeated ``reps`` times along each axis (a new array; NumPy's keyword name, the
    Array API's ``repetitions`` positional)."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    ndim = max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    base = reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    wide = []  # (r, n) pairs: broadcast a new axis of r in front of every axis
    for r, n in zip(reps, base.shape, strict=True):
        wide += [r, n]
    expanded = reshape(base, tuple(v for n in base.shape for v in (1, n)))
    out = astype(broadcast_to(expanded, tuple(wide)), x.dtype)
    return reshape(out, tuple(r * n for r, n in zip(reps, base.shape, strict=True)))


def repeat(x: ndarray, /, repeats, axis: int | None = None) -> ndarray:
    """Each element repeated ``repeats`` times along ``axis`` (flattened by default);
    ``repeats`` may be an array of one count per element (read to size the result)."""
    if isinstance(repeats, list | tuple) and len(repeats) != 1:  # NumPy takes a sequence
        from ember.array.creation import asarray

        repeats = asarray(repeats, dtype=dtypes.int64, device=x.backend)
    elif isinstance(repeats, list | tuple):
        repeats = repeats[0]
    if isinstance(repeats, ndarray):
        from ember.array.extras import repeat_counts

        return repeat_counts(x, repeats, axis)
    try:
        repeats = operator.index(repeats)  # an int, a bool or a NumPy integer, never a float
    except TypeError:
        raise TypeError(
            "repeat: repeats must be an int, a list of counts or an ember array of counts, "
            f"not {type(repeats).__name__}"
        ) from None
    if repeats < 0:
        raise ValueError(f"repeat: repeats may not be negative, got {repeats}")
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    k = _axis(axis, x.ndim)
    shape = x.shape[: k + 1] + (repeats,) + x.shape[k + 1 :]
    out = astype(broadcast_to(expand_dims(x, k + 1), shape), x.dtype)
    return reshape(out, x.shape[:k] + (x.shape[k] * repeats,) + x.shape[k + 1 :])


def _all_device(arrays, what: str) -> None:
    from ember.array.ndarray import not_on_device

    for a in arrays:
        if not isinstance(a, ndarray):
            raise not_on_device(a, f"ember.{what}")
    if len({id(a.backend) for a in arrays}) > 1:
        raise ValueError(f"ember.{what}: the arrays live on different devices")


__all__ = [
    "astype", "ascontiguousarray", "permute_dims", "transpose", "matrix_transpose",
    "swapaxes", "moveaxis", "squeeze", "expand_dims", "flip", "broadcast_to",
    "broadcast_arrays", "reshape", "concatenate", "concat", "stack", "copy_into", "unstack",
    "roll", "tile", "repeat",
]  # fmt: skip
