"""Advanced indexing: ``x[idx]``, ``x[[0, 2], :]``, ``x[mask]``, ``x[0, :, idx]`` and their
assignments, with NumPy's result-shape rules (see :mod:`ember.array.indexing`).

A key is turned into a :class:`Plan`: the basic items (slices, integers, ``None``) become
strides and an origin into ``x``; the index arrays, broadcast to ``B``, become int64 element
offsets (:func:`ember.array.gather.offsets`, range-checked on the device); the result's
axes are the basic ones with ``B`` inserted where the advanced indices stood (adjacent) or
in front (separated).  :func:`ember.array.gather.gather` and ``scatter`` do the rest.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any

from ember import dtypes
from ember.array import broadcast, gather, launch, manipulation
from ember.array.indexing import refuse_bool_scalar
from ember.array.ndarray import ndarray, not_on_device


def index_array(obj: Any, what: str, be=None, values: bool = False) -> ndarray:
    """``obj`` as an ember array: ember arrays as they are, (nested) lists and tuples of
    numbers copied to the device (``be``, default the current backend), and so are NumPy
    integer or bool arrays used as indices (an index is a description of the selection,
    made on the host like a list: Dask's chunk slicing passes them).  Index arrays must be
    integer or bool (``values``: any dtype; NumPy *values* are refused: copy them with
    ``ember.asarray``)."""
    if isinstance(obj, ndarray):
        out = obj
    elif (
        isinstance(obj, list | tuple | int)
        or (isinstance(obj, float | complex) and values)
        or (not values and _host_index(obj))
    ):
        import numpy as np

        host = np.asarray(obj)
        if host.dtype.kind == "f" and host.size == 0:
            host = host.astype(np.int64)  # x[[]]: an empty list indexes like integers
        if host.dtype.kind not in ("biufc" if values else "biuf"):
            raise IndexError(f"{what}: cannot use {obj!r} as an index")
        if be is None:
            from ember.runtime import backend as registry

            be = registry.current()
        out = _on(be, host)
    else:
        if type(obj).__module__ == "numpy":
            raise not_on_device(obj, f"{what} (as an index)")
        raise IndexError(
            f"{what}: only integers, slices (`:`), ellipsis (`...`), None, and integer or "
            f"boolean arrays are valid indices, got {type(obj).__name__}"
        )
    if not values and out.dtype.kind not in "biu":
        raise IndexError(
            f"{what}: arrays used as indices must be of integer (or boolean) type, not "
            f"{out.dtype.name}"
        )
    return out


def _host_index(obj: Any) -> bool:
    """Whether ``obj`` is a NumPy integer or bool array (an index made on the host)."""
    kind = getattr(getattr(obj, "dtype", None), "kind", None)
    return type(obj).__module__ == "numpy" and kind is not None and kind in "biu"


def _on(be, host) -> ndarray:
    """A host array copied to backend ``be``."""
    import numpy as np

    host = np.array(host, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    out = launch.new(be, host.shape, dtypes.dtype(host.dtype))
    if out.nbytes:
        be.copy_from_host(out.buffer, out.offset, host)
    return out


@dataclass
class Plan:
    """What ``x[key]`` reads: ``origin`` and ``strides`` (elements) of the basic axes,
    the index arrays with the length and stride of the axis each indexes, and where the
    broadcast index shape goes among the basic axes."""

    shape: list[int]  # basic axes
    strides: list[int]
    origin: int
    arrays: list[ndarray]
    sizes: list[int]
    astrides: list[int]
    insert: int

    def index_shape(self) -> tuple[int, ...]:
        try:
            return broadcast.broadcast_shapes(*(a.shape for a in self.arrays))
        except ValueError:
            shapes = " ".join(str(a.shape) for a in self.arrays)
            raise IndexError(
                f"shape mismatch: indexing arrays could not be broadcast together with "
                f"shapes {shapes}"
            ) from None

    def result(self, x: ndarray):
        """``(shape, xstrides, lstrides, offsets)`` of the result."""
        b = self.index_shape()
        lo = gather.offsets(x.backend, self.arrays, self.sizes, self.astrides, b)
        k = self.insert
        shape = (*self.shape[:k], *b, *self.shape[k:])
        xstrides = (*self.strides[:k], *(0,) * len(b), *self.strides[k:])
        lst = tuple(s // 8 for s in lo.strides)
        lstrides = (*(0,) * k, *lst, *(0,) * (len(self.shape) - k))
        return shape, xstrides, lstrides, lo


def _items(x: ndarray, key: Any) -> list:
    """The key's items with lists as device arrays and masks as their index arrays."""
    from ember.array.search import nonzero

    raw = list(key) if isinstance(key, tuple) else [key]
    items: list = []
    for item in raw:
        refuse_bool_scalar(item)
        if (
            isinstance(item, ndarray | list)
            or type(item).__module__ == "numpy"
            and getattr(item, "ndim", 0)
        ):
            arr = index_array(item, "x[...]", x.backend)
            if arr.dtype.kind == "b":
                items.append(("mask", arr, nonzero(arr) if arr.ndim else None))
                continue
            items.append(("array", arr))
        else:
            items.append(item)
    return items


def plan(x: ndarray, key: Any) -> Plan:
    """The :class:`Plan` of ``x[key]`` for a key with at least one array index."""
    items = _items(x, key)
    used = sum(
        it[1].ndim if isinstance(it, tuple) and it[0] == "mask" else 0 if it is None
        or it is Ellipsis else 1 for it in items
    )  # fmt: skip
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > x.ndim:
        raise IndexError(
            f"too many indices for array: array is {x.ndim}-dimensional, but {used} were indexed"
        )
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k : k + 1] = [slice(None)] * (x.ndim - used)
    else:
        items += [slice(None)] * (x.ndim - used)
    return _walk(x, items)


def _walk(x: ndarray, items: list) -> Plan:
    isz = x.dtype.itemsize
    p = Plan([], [], 0, [], [], [], 0)
    axis = 0
    adv_positions: list[int] = []
    insert = None
    for pos, item in enumerate(items):
        if item is None:
            p.shape.append(1)
            p.strides.append(0)
            continue
        if isinstance(item, slice):
            n, s = x.shape[axis], x.strides[axis] // isz
            start, _, step = item.indices(n)
            length = len(range(*item.indices(n)))
            if length:
                p.origin += start * s
            p.shape.append(length)
            p.strides.append(step * s)
            axis += 1
            continue
        if insert is None:
            insert = len(p.shape)
        adv_positions.append(pos)
        if isinstance(item, tuple):
            axis = _advanced_item(x, p, item, axis)
            continue
        n, s = x.shape[axis], x.strides[axis] // isz
        i = _integer(item)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
        p.origin += (i + n if i < 0 else i) * s
        axis += 1
    adjacent = adv_positions == list(range(adv_positions[0], adv_positions[-1] + 1))
    p.insert = insert if adjacent else 0
    return p


def _advanced_item(x: ndarray, p: Plan, item: tuple, axis: int) -> int:
    isz = x.dtype.itemsize
    if item[0] == "array":
        arr = item[1]
        p.arrays.append(arr)
        p.sizes.append(x.shape[axis])
        p.astrides.append(x.strides[axis] // isz)
        return axis + 1
    mask, coords = item[1], item[2]
    for k, n in enumerate(mask.shape):
        if x.shape[axis + k] != n:
            raise IndexError(
                f"boolean index did not match indexed array along axis {axis + k}; size of "
                f"axis is {x.shape[axis + k]} but size of corresponding boolean axis is {n}"
            )
    if coords is None:
        raise IndexError("0-d boolean array indices are not supported for ember arrays")
    for k, c in enumerate(coords):
        p.arrays.append(c)
        p.sizes.append(x.shape[axis + k])
        p.astrides.append(x.strides[axis + k] // isz)
    return axis + mask.ndim


def _integer(item) -> int:
    try:
        return operator.index(item)
    except TypeError:
        raise IndexError(
            f"invalid index {item!r} of type {type(item).__name__}: use integers, slices, "
            "..., None, or integer or boolean arrays"
        ) from None


# --------------------------------------------------------------------- entry points
def _full_mask(x: ndarray, key: Any) -> ndarray | None:
    """The mask of ``x[mask]`` when it covers all of ``x``'s axes (stream compaction)."""
    if isinstance(key, ndarray) and key.dtype.kind == "b" and key.shape == x.shape:
        return key if key.ndim else None
    return None


def getitem(x: ndarray, key: Any) -> ndarray:
    """``x[key]`` for a key with array indices."""
    mask = _full_mask(x, key)
    if mask is not None:
        from ember.array.compact import compact

        return compact(_flat(mask), _flat(x))
    p = plan(x, key)
    shape, xstrides, lstrides, lo = p.result(x)
    out = launch.new(x.backend, shape, x.dtype)
    gather.gather(out, x, p.origin, xstrides, lo, lstrides)
    return out


def setitem(x: ndarray, key: Any, value: Any) -> None:
    """``x[key] = value`` for a key with array indices (``value`` broadcast to the shape
    ``x[key]`` would have, cast to ``x.dtype``)."""
    if isinstance(key, ndarray) and key.dtype.kind == "b" and _is_scalar(value):
        return _masked_fill(x, key, value)
    p = plan(x, key)
    shape, xstrides, lstrides, lo = p.result(x)
    vals = _values(x, value, shape)
    gather.scatter(vals, x, p.origin, xstrides, lo, lstrides)


def _is_scalar(value) -> bool:
    return isinstance(value, bool | int | float | complex) or (
        type(value).__module__ == "numpy" and getattr(value, "shape", None) == ()
    )


def _masked_fill(x: ndarray, mask: ndarray, value) -> None:
    """``x[mask] = scalar``: ``where(mask, scalar, x)`` written back into ``x``."""
    from ember.array import ufuncs

    if mask.shape != x.shape[: mask.ndim]:
        plan(x, mask)  # raises the shape error
    m = manipulation.reshape(mask, mask.shape + (1,) * (x.ndim - mask.ndim))
    ufuncs.where(m, host_values(value, x.dtype)[()], x, out=x)


def host_values(value: Any, dt) -> Any:
    """A scalar, list or tuple as NumPy's assignment converts it to ``dt``: a Python int
    beyond ``dt`` raises ``OverflowError`` and NaN into integers ``ValueError``
    (``numpy.array(value, dtype)``), NumPy scalars cast unsafely.  (``astype`` of the
    value wrapped ``x[idx] = 300`` into int8 to 44, silently.)"""
    import numpy as np

    if np.iscomplexobj(value) and not dt.is_complex:  # the Array API refuses complex->real
        raise TypeError(
            f"cannot assign complex values to an array of {dt.name}: convert "
            "ember.real(v), ember.imag(v) or ember.abs(v) first"
        )
    with np.errstate(all="ignore"):
        return np.array(value, dtype=dt.numpy)


def _values(x: ndarray, value: Any, shape) -> ndarray:
    if isinstance(value, ndarray):
        vals = value if value.dtype is x.dtype else manipulation.astype(value, x.dtype)
    elif _is_scalar(value) or isinstance(value, list | tuple):
        vals = _on(x.backend, host_values(value, x.dtype))
    else:
        vals = index_array(value, "assigning to an ember array", x.backend, values=True)
    try:
        return manipulation.broadcast_to(manipulation.drop_leading_ones(vals, len(shape)), shape)
    except ValueError:
        raise ValueError(
            f"shape mismatch: value array of shape {vals.shape} could not be broadcast to "
            f"indexing result of shape {tuple(shape)}"
        ) from None


def _flat(x: ndarray) -> ndarray:
    """``x`` as a 1-d view (a copy when its layout has no such view)."""
    return manipulation.reshape(x, (math.prod(x.shape),))
