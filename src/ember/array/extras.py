"""Array API (and NumPy) functions that are compositions of Ember's operations:
``nextafter`` (exact, on the bits), ``diff``, ``repeat`` with per-element counts,
``unravel_index`` and ``ravel_multi_index``.
"""

from __future__ import annotations

import functools

import ember
from ember import dtypes
from ember.array.ndarray import ndarray, not_on_device
from ember.compiler.kernel import Kernel

_BITS = {2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}


def _nextafter(B):
    """``out_bits[i]``: the float after ``x[i]`` toward ``y[i]``, stepped on the bit
    pattern ``xb[i]`` of ``x[i]`` (``B`` bits): IEEE floats of one sign are ordered like
    their bit patterns, so one step is +-1 on the magnitude."""
    SIGN = 1 << (B - 1)

    def nextafter(out_bits, out, xb, x, y):
        i = ember.global_id()
        while i < out.shape[0]:
            a = x[i]
            b = y[i]
            if a != a or b != b:
                out[i] = a + b  # NaN
            elif a == b:
                out[i] = b  # also nextafter(0.0, -0.0) == -0.0, as C's
            elif a == 0:
                tiny = 1
                if b < 0:
                    tiny = tiny | SIGN
                out_bits[i] = out_bits.dtype(tiny)
            elif (a < b) == (a > 0):
                out_bits[i] = xb[i] + 1
            else:
                out_bits[i] = xb[i] - 1
            i += ember.global_size()

    nextafter.__name__ = nextafter.__qualname__ = f"nextafter{B}"
    return nextafter


@functools.cache
def _nextafter_kernel(bits: int) -> Kernel:
    return Kernel(_nextafter(bits))


def _view(x: ndarray, dt: dtypes.DType) -> ndarray:
    """The C-contiguous ``x`` (1-d) read as ``dt`` (same itemsize): a view of its bits."""
    v = ndarray(x.shape, dt, x.buffer, x.backend, (dt.itemsize,), x.offset)
    v._c = True
    return v


def nextafter(x1, x2, /) -> ndarray:
    """The next representable float after ``x1`` toward ``x2`` (NumPy's ``nextafter``:
    float operands of one dtype after promotion, exact for float16/32/64)."""
    from ember.array import rules, ufuncs
    from ember.array.creation import empty
    from ember.array.manipulation import astype, broadcast_arrays
    from ember.frontend.types import scalar

    arrays = [v for v in (x1, x2) if isinstance(v, ndarray)]
    if not arrays:
        raise not_on_device(x1, "ember.nextafter")
    types = tuple(scalar(v.dtype) if isinstance(v, ndarray) else rules.scalar_type(v)
                  for v in (x1, x2))  # fmt: skip
    dt = ufuncs.hypot.rule(types).out  # NumPy's float loop for the operands (int8: float16)
    be = arrays[0].backend
    a, b = (v if isinstance(v, ndarray) else ember.full((), v, dt, device=be) for v in (x1, x2))
    a, b = broadcast_arrays(a, b)
    shape = a.shape
    a, b = astype(a, dt).reshape(-1), astype(b, dt).reshape(-1)
    out = empty(a.shape, dt, device=be)
    n = out.size
    if n:
        bits = _BITS[dt.itemsize]
        grid = max(1, min(-(-n // 256), 4096))
        _nextafter_kernel(dt.bits)[grid, 256](_view(out, bits), out, _view(a, bits), a, b)
    return out.reshape(shape)


def diff(x: ndarray, /, n: int = 1, axis: int = -1, prepend=None, append=None) -> ndarray:
    """The ``n``-th forward difference along ``axis`` (``out[i] = x[i+1] - x[i]``, bools
    by ``!=`` as NumPy does), after joining ``prepend`` and ``append`` to ``x``; ``n = 0``
    returns ``x`` itself, as NumPy's does."""
    from ember.array import ufuncs
    from ember.array.manipulation import _axis, broadcast_to, concatenate

    if not isinstance(x, ndarray):
        raise not_on_device(x, "ember.diff")
    if n == 0:  # the input as it is, prepend and append ignored (NumPy's)
        return x
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    if x.ndim == 0:
        raise ValueError("diff requires an input of at least 1 dimension")
    k = _axis(axis, x.ndim)

    def slab(extra):  # a scalar is one slice along the axis
        if isinstance(extra, ndarray):
            return extra
        shape = x.shape[:k] + (1,) + x.shape[k + 1 :]
        return broadcast_to(ember.full((), extra, device=x.backend), shape)

    parts = ([slab(prepend)] if prepend is not None else []) + [x]
    parts += [slab(append)] if append is not None else []
    x = concatenate(parts, axis=k) if len(parts) > 1 else x
    op = ufuncs.not_equal if x.dtype.kind == "b" else ufuncs.subtract
    head = (slice(None),) * k
    for _ in range(n):
        x = op(x[(*head, slice(1, None))], x[(*head, slice(None, -1))])
    return x


def repeat_counts(x: ndarray, repeats: ndarray, axis: int | None) -> ndarray:
    """``repeat`` with one count per element along ``axis``: the counts are read to size
    the result (a data-dependent shape), then the slices are gathered on the device."""
    import numpy as np

    from ember.array.creation import asarray
    from ember.array.random import _take_rows

    if axis is None:
        x, axis = x.reshape(-1), 0
    counts = repeats.to_numpy().astype(np.int64).reshape(-1)
    length = x.shape[axis]
    if counts.size == 1:
        counts = np.full(length, counts[0])
    if counts.shape != (length,) or (counts < 0).any():
        raise ValueError(
            f"repeat: repeats must be non-negative and have one count per element along "
            f"axis {axis} ({length}), got shape {repeats.shape}"
        )
    index = asarray(np.repeat(np.arange(length, dtype=np.int64), counts))
    return _take_rows(x, index, axis)


def unravel_index(indices, shape, order: str = "C") -> tuple[ndarray, ...]:
    """NumPy's ``unravel_index`` on the device: the coordinates in an array of ``shape``
    of the flat ``indices`` (an integer ember array), one int64 array per axis.

    Raises ValueError when an index is out of bounds (a check that reads one bool back).
    """
    dims = _dims(shape, "unravel_index")
    order = _order(order, "unravel_index")
    idx = _integers(indices, "unravel_index")
    size = 1
    for n in dims:
        size *= n
    if idx.size and bool(ember.any((idx < 0) | (idx >= size))):
        raise ValueError(f"unravel_index: an index is out of bounds for an array of size {size}")
    coords, rest = [], idx
    for n in reversed(dims) if order == "C" else dims:
        coords.append(rest % n)
        rest = rest // n
    return tuple(reversed(coords)) if order == "C" else tuple(coords)


def ravel_multi_index(multi_index, dims, mode="raise", order: str = "C") -> ndarray:
    """NumPy's ``ravel_multi_index`` on the device: the flat index (int64) of each
    coordinate tuple of ``multi_index`` (one integer ember array per axis of ``dims``).
    ``mode``: ``"raise"`` (out-of-range coordinates raise ValueError, which reads one bool
    back), ``"wrap"`` or ``"clip"``, or a tuple of them, one per axis."""
    dims = _dims(dims, "ravel_multi_index")
    order = _order(order, "ravel_multi_index")
    coords = [_integers(c, "ravel_multi_index") for c in multi_index]
    if len(coords) != len(dims):
        raise ValueError(
            f"ravel_multi_index: {len(coords)} coordinate arrays for {len(dims)} dimensions"
        )
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    fixed = [_in_range(c, n, m) for c, n, m in zip(coords, dims, modes, strict=True)]
    flat = None
    pairs = (
        zip(fixed, dims, strict=True) if order == "C" else zip(fixed[::-1], dims[::-1], strict=True)
    )
    for c, n in pairs:
        flat = c if flat is None else flat * n + c
    return flat if flat is not None else ember.zeros((), dtype=dtypes.int64)


def _dims(shape, what: str) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(n, int) and not hasattr(n, "__index__") for n in dims):
        raise TypeError(f"{what}: the shape must be integers, got {shape!r}")
    dims = tuple(int(n) for n in dims)
    if any(n < 0 for n in dims):
        raise ValueError(f"{what}: dimensions must be non-negative, got {dims}")
    return dims


def _order(order: str, what: str) -> str:
    if order not in ("C", "F"):
        raise ValueError(f"{what}: order must be 'C' or 'F', got {order!r}")
    return order


def _integers(x, what: str) -> ndarray:
    if not isinstance(x, ndarray):
        if type(x).__module__ == "numpy" and getattr(x, "ndim", 0):
            raise not_on_device(x, f"ember.{what}")
        x = ember.asarray(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"{what}: indices must be integers, got {x.dtype.name}")
    return x.astype(dtypes.int64, copy=False)


def _in_range(c: ndarray, n: int, mode: str) -> ndarray:
    if mode == "wrap":
        return c % n
    if mode == "clip":
        return ember.clip(c, 0, max(n - 1, 0))
    if mode != "raise":
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', not {mode!r}")
    if c.size and bool(ember.any((c < 0) | (c >= n))):
        raise ValueError("ravel_multi_index: invalid entry in coordinates array")
    return c
