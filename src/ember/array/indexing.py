"""Basic indexing: ``x[2]``, ``x[1:-1:2, ..., None]`` as views; assignment with broadcasting;
and the scalar-indexing policy.

Integers, slices (any step, negative too), ``...`` and ``None`` make views that share the
array's buffer, as in NumPy.  An index that selects one element with integers only
(``x[3]``, ``x[1, 2]``) is a 0-d view (the Array API's rule; converting it with ``float``
or ``.item()`` reads the element over the bus): fine once, a classic slow path in a loop.
The first such index in a process warns
(:class:`ScalarIndexingWarning`); ``EMBER_ALLOW_SCALAR=allow|warn|error`` or the scoped
``with ember.allowscalar(False):`` (error) / ``ember.allowscalar(True)`` (silent) change
that, like CUDA.jl's ``allowscalar``.  Array indices (``x[idx]``, boolean masks) are not
supported yet.
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
import warnings
from collections.abc import Iterator
from typing import Any

from ember.array.ndarray import check_writable, ndarray, not_on_device
from ember.errors import EmberError


class ScalarIndexingError(EmberError, IndexError):
    """Scalar indexing (one element read or written over the bus) while it is disallowed."""


class ScalarIndexingWarning(UserWarning):
    """The first scalar indexing of a process: a slow path if it happens in a loop."""


_mode: contextvars.ContextVar[str | None] = contextvars.ContextVar("ember_scalar", default=None)
_warned = False
MODES = ("allow", "warn", "error")


@contextlib.contextmanager
def allowscalar(allow: bool | str = True) -> Iterator[None]:
    """Allow (``True`` / ``"allow"``), forbid (``False`` / ``"error"``) or warn about
    (``"warn"``) scalar indexing inside a ``with`` block (this thread / task only)::

        with ember.allowscalar():
            first = x[0]

    Outside any block ``EMBER_ALLOW_SCALAR`` decides (default ``warn``: once per process).
    """
    mode = {True: "allow", False: "error"}.get(allow, allow)  # type: ignore[call-overload]
    if mode not in MODES:
        raise ValueError(f"allowscalar takes True, False or one of {MODES}, got {allow!r}")
    token = _mode.set(mode)
    try:
        yield
    finally:
        _mode.reset(token)


def scalar_access(what: str) -> None:
    """Apply the scalar-indexing policy to one element read or write."""
    global _warned
    mode = _mode.get()
    if mode is None:
        from ember.config import settings

        mode = settings.allow_scalar
    if mode == "allow":
        return
    message = (
        f"scalar indexing ({what}) works on one element (and reading it copies it over the "
        "bus): in a loop it is a slow path; use whole-array operations, or x.to_numpy() once"
    )
    if mode == "error":
        raise ScalarIndexingError(
            message + " (disallowed by EMBER_ALLOW_SCALAR=error or ember.allowscalar(False); "
            "allow it for a block with `with ember.allowscalar():`)"
        )
    if not _warned:
        _warned = True
        warnings.warn(
            message + " (warned once; EMBER_ALLOW_SCALAR=allow or `with ember.allowscalar():` "
            "silences it, EMBER_ALLOW_SCALAR=error makes it an error)",
            ScalarIndexingWarning,
            stacklevel=4,
        )


# --------------------------------------------------------------------- index kinds
def _is_array_item(item: Any) -> bool:
    return isinstance(item, ndarray | list) or (
        type(item).__module__ == "numpy" and getattr(item, "ndim", 0) > 0
    )


def is_advanced(key: Any) -> bool:
    """Whether ``key`` holds an array index (an ember array, a list, a NumPy array)."""
    if isinstance(key, tuple):
        return any(_is_array_item(i) for i in key)
    return _is_array_item(key)


# --------------------------------------------------------------------- views
def _is_bool_scalar(item: Any) -> bool:
    """A 0-d boolean index item: Python's or NumPy's bool, a 0-d bool array (any kind)."""
    if isinstance(item, bool):
        return True
    dt = getattr(item, "dtype", None)
    return dt is not None and getattr(item, "ndim", None) == 0 and getattr(dt, "kind", "") == "b"


def refuse_bool_scalar(item: Any) -> None:
    """Refuse a bool scalar as an index item where it is not one (``x.item(True)``; the
    indexing entry points rewrite them first: :func:`zero_d_masks`)."""
    if _is_bool_scalar(item):
        raise IndexError("a boolean scalar is not an index here: use integers")


def _axes_taken(item: Any) -> int:
    """How many axes of the indexed array an index item consumes."""
    if item is None or item is Ellipsis or _is_bool_scalar(item):
        return 0
    if isinstance(item, list):
        import numpy as np

        host = np.asarray(item)
        return host.ndim if host.dtype.kind == "b" else 1
    dt = getattr(item, "dtype", None)
    if dt is not None and getattr(dt, "kind", "") == "b":
        return item.ndim
    return 1


def zero_d_masks(x: ndarray, key: Any) -> tuple[ndarray, Any]:
    """NumPy's 0-d boolean indices (``x[True]``, ``x[0, ember.asarray(False)]``): each is a
    new length-1 axis of ``x`` at its place, indexed by a one-element mask (a result axis of
    length 1 or 0, an advanced index as NumPy treats it).  ``(x, key)`` unchanged when the
    key has none; otherwise a view of ``x`` with the axes inserted and the key with masks."""
    items = list(key) if isinstance(key, tuple) else [key]
    if not any(_is_bool_scalar(i) for i in items):
        return x, key
    from ember.array.advanced import index_array

    for k, item in enumerate(items):
        if not _is_bool_scalar(item):
            continue
        before = sum(_axes_taken(i) for i in items[:k])
        if any(i is Ellipsis for i in items[:k]):  # counted from the end
            before = x.ndim - sum(_axes_taken(i) for i in items[k + 1 :])
        if before > x.ndim or before < 0:
            raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional")
        x = x.reshape(x.shape[:before] + (1,) + x.shape[before:])
        mask = item.reshape(1) if isinstance(item, ndarray) else None
        items[k] = mask if mask is not None else index_array([bool(item)], "x[...]", x.backend)
    return x, tuple(items)


def _expand(key: Any, ndim: int) -> tuple[list, bool]:
    """The key as a list with one entry per axis (``...`` expanded) and whether it held an
    ``...`` or ``None`` (those make a 0-d result a view rather than a scalar)."""
    items = list(key) if isinstance(key, tuple) else [key]
    for item in items:
        refuse_bool_scalar(item)
    ellipses = sum(1 for i in items if i is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed"
        )
    marker = ellipses > 0 or any(i is None for i in items)
    if ellipses:
        k = items.index(Ellipsis)
        items[k : k + 1] = [slice(None)] * (ndim - used)
    else:
        items += [slice(None)] * (ndim - used)
    return items, marker


def view(x: ndarray, key: Any) -> tuple[ndarray, bool]:
    """The view ``x[key]`` and whether the key selected a single element by integers."""
    items, marker = _expand(key, x.ndim)
    shape, strides, offset = [], [], x.offset
    axis = 0
    scalar = True
    for item in items:
        if item is None:
            shape.append(1)
            strides.append(0)
            scalar = False
            continue
        n, s = x.shape[axis], x.strides[axis]
        axis += 1
        if isinstance(item, slice):
            start, _stop, step = item.indices(n)
            length = len(range(*item.indices(n)))
            if length:
                offset += start * s
            shape.append(length)
            strides.append(step * s)
            scalar = False
            continue
        try:
            i = operator.index(item)
        except TypeError:
            raise IndexError(
                f"invalid index {item!r} of type {type(item).__name__}: use integers, slices, "
                "... or None"
            ) from None
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for axis {axis - 1} with size {n}")
        offset += (i + n if i < 0 else i) * s
    out = ndarray(tuple(shape), x.dtype, x.buffer, x.backend, tuple(strides), offset)
    return out, scalar and not marker


def getitem(x: ndarray, key: Any) -> Any:
    """``x[key]``: a view; one element selected by integers is a 0-d view (the Array API's
    rule; ``float(x[3])`` or ``x[3].item()`` reads it), under the scalar-indexing policy;
    with array indices (advanced indexing) a new array."""
    x, key = zero_d_masks(x, key)
    if is_advanced(key):
        from ember.array import advanced

        return advanced.getitem(x, key)
    v, one = view(x, key)
    if one and x.ndim:  # (x[()] of a 0-d array is the array: no element is picked out)
        scalar_access(f"reading x[{_show(key)}]")
    return v


def read_element(x: ndarray, index: tuple) -> Any:
    """``x.item(*index)``: one element as a NumPy scalar (the flat index form too)."""
    if len(index) == 1 and isinstance(index[0], tuple):
        index = index[0]
    if len(index) == 1 and x.ndim != 1:
        flat = operator.index(index[0])
        size = x.size
        if not -size <= flat < size:
            raise IndexError(f"index {flat} is out of bounds for size {size}")
        index = _unravel(flat % size if size else flat, x.shape)
    v, one = view(x, tuple(index))
    if not one:
        raise ValueError("item() needs one index per axis (or one flat index)")
    return v._python_host()[()]


def _unravel(i: int, shape) -> tuple[int, ...]:
    out = []
    for n in reversed(shape):
        out.append(i % n)
        i //= n
    return tuple(reversed(out))


def _show(key: Any) -> str:
    if key == ():
        return "()"
    items = key if isinstance(key, tuple) else (key,)
    return ", ".join("..." if i is Ellipsis else repr(i) for i in items)


# --------------------------------------------------------------------- assignment
def setitem(x: ndarray, key: Any, value: Any) -> None:
    """``x[key] = value``: ``value`` (an ember array or a scalar) broadcast into the view,
    cast to ``x.dtype`` as NumPy's assignment does (unsafe casting).  A broadcast view
    (``broadcast_to``) refuses every write, to any part of it, as NumPy's read-only one
    does: its repeated elements are one memory location, also the array it views."""
    check_writable(x)
    x, key = zero_d_masks(x, key)
    if is_advanced(key):
        from ember.array import advanced

        return advanced.setitem(x, key, value)
    v, one = view(x, key)
    if one:
        scalar_access(f"writing x[{_show(key)}]")
    if not isinstance(value, ndarray):
        if isinstance(value, bool | int | float | complex):
            pass
        elif (
            type(value).__module__ == "numpy"
            and getattr(value, "shape", None) == ()
            and not hasattr(value, "__len__")
        ):  # a NumPy scalar casts unsafely, as in NumPy (x[...] = numpy.int64(-1) on uint16)
            from ember.array.advanced import host_values

            value = host_values(value, x.dtype)[()]
        elif hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack__"):
            if type(value).__module__ != "numpy":
                from ember.array.creation import asarray

                value = asarray(value)
            else:
                raise not_on_device(value, "assigning to an ember array")
        else:
            raise not_on_device(value, "assigning to an ember array")
    from ember.array.manipulation import copy_into

    copy_into(v, value)
