"""NumPy's ``pad``: the array is copied into the middle of a new one, then each axis is
filled in turn from what is already filled (slices, flipped slices, broadcast edges: the
copy kernel), which gives NumPy's corners; ``reflect``/``symmetric``/``wrap`` pads wider
than the array are filled chunk by chunk, as NumPy does (so ``reflect_type="odd"``
matches too).  ``maximum``/``minimum``/``mean``/``median`` fill each side with a reduction
of ``stat_length`` elements next to it (keepdims, broadcast), and ``linear_ramp`` with
NumPy's ``linspace`` from ``end_values`` to the edge, computed the way NumPy computes it.
Every mode but a callable one.  ``pad_width``, ``constant_values``, ``end_values`` and
``stat_length`` are host values."""

from __future__ import annotations

import numpy as np

import ember
from ember.array import manipulation as mp
from ember.array.grids import _at, _copy, _device
from ember.array.ndarray import ndarray

_REFLECT = {"reflect_type"}
_STATS = ("maximum", "minimum", "mean", "median")  # -> ember.max, min, mean, median
_PAD_KEYWORDS = {"constant": {"constant_values"}, "edge": set(), "wrap": set(),
                 "reflect": _REFLECT, "symmetric": _REFLECT, "empty": set(),
                 "linear_ramp": {"end_values"}, **{m: {"stat_length"} for m in _STATS}}  # fmt: skip


def _pairs(spec, ndim: int, name: str, index: bool) -> list[tuple]:
    """NumPy's ``(before, after)`` per axis from a number, a pair, or one pair per axis."""
    import numpy as np

    p = np.asarray(spec.tolist() if isinstance(spec, ndarray) else spec)
    if index and (p.dtype.kind not in "iu" or (p.size and p.min() < 0)):
        error = ValueError if p.dtype.kind in "iu" else TypeError
        raise error(f"ember.pad: {name} must be non-negative integers, got {spec!r}")
    if p.size == 2 and p.shape != (2, 1):
        p = p.reshape(1, 2)
    try:
        return [tuple(v.item() for v in pair) for pair in np.broadcast_to(p, (ndim, 2))]
    except ValueError:
        raise ValueError(f"ember.pad: {name} of shape {p.shape} does not fit an array of {ndim} "
                         "dimensions: give one number, one (before, after) pair, or one pair "
                         "per axis") from None  # fmt: skip


def pad(array, pad_width, mode="constant", **kwargs) -> ndarray:
    """``array`` padded by ``pad_width`` elements before and after each axis (NumPy's
    ``pad``).

    Modes: ``"constant"`` (``constant_values``, per axis too), ``"edge"``, ``"reflect"``
    and ``"symmetric"`` (``reflect_type="even"`` or ``"odd"``), ``"wrap"``,
    ``"maximum"``, ``"minimum"``, ``"mean"`` and ``"median"`` (``stat_length``),
    ``"linear_ramp"`` (``end_values``) and ``"empty"``, with NumPy's results (pads wider
    than the array included; corners take the last axis's values; integer statistics
    rounded half to even).  A callable mode raises NotImplementedError.  Returns a new
    array."""
    x, odd = _device(array, "pad"), _pad_mode(mode, kwargs)
    widths = _pairs(pad_width, x.ndim, "pad_width", True)
    out = ember.empty(tuple(n + b + a for n, (b, a) in zip(x.shape, widths, strict=True)),
                      x.dtype, device=x.backend)  # fmt: skip
    inner = tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, widths, strict=True))
    _copy(out[inner] if x.ndim else out, x)
    if mode == "empty" or x.ndim == 0:
        return out
    if mode != "constant":
        for k, n in enumerate(x.shape):
            if n == 0 and any(widths[k]):
                raise ValueError(f"ember.pad: can't extend empty axis {k} using modes other "
                                 "than 'constant' or 'empty'")  # fmt: skip
    keyword = "end_values" if mode == "linear_ramp" else "constant_values"
    values = _pairs(kwargs.get(keyword, 0), x.ndim, keyword, False)
    lengths = _stat_lengths(kwargs.get("stat_length"), x.ndim)
    for k, (before, after) in enumerate(widths):
        roi = out[tuple(slice(None) if d <= k else inner[d] for d in range(x.ndim))]
        if not (before or after) or roi.size == 0:  # nothing to fill along this axis
            continue
        if mode in _STATS:
            _stat_sides(roi, k, before, after, lengths[k], mode)
        elif mode == "linear_ramp":
            _ramps(roi, k, before, after, values[k])
        elif mode == "constant":  # values cast unsafely, as NumPy's pad (-1 into uint16)
            _copy(_at(roi, k, slice(0, before)), _unsafe(values[k][0], x.dtype))
            _copy(_at(roi, k, slice(roi.shape[k] - after, None)), _unsafe(values[k][1], x.dtype))
        elif mode == "edge" or (mode != "wrap" and x.shape[k] == 1):
            _edges(roi, k, before, after)
        else:
            while before or after:
                step = _wrap_step if mode == "wrap" else _reflect_step
                before, after = step(roi, k, before, after, x.shape[k], mode, odd)
    return out


def _unsafe(value, dt):
    """A constant pad value as NumPy's pad casts it: unsafely (``asarray(v).astype``)."""
    if isinstance(value, ndarray):
        return value
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dt.numpy)[()]


def _pad_mode(mode, kwargs) -> bool:
    """Check ``mode`` and its keywords; whether ``reflect_type`` is ``"odd"``."""
    if callable(mode):
        raise NotImplementedError(
            "ember.pad: a callable mode is not supported (it would run per 1-d slice on the "
            f"host); available: {', '.join(_PAD_KEYWORDS)}"
        )
    if mode not in _PAD_KEYWORDS:
        raise ValueError(f"ember.pad: mode {mode!r} is not supported; use one of "
                         f"{', '.join(_PAD_KEYWORDS)}")  # fmt: skip
    unknown = set(kwargs) - _PAD_KEYWORDS[mode]
    if unknown:
        raise ValueError(f"ember.pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(unknown)}")  # fmt: skip
    odd = kwargs.get("reflect_type", "even")
    if odd not in ("even", "odd"):
        raise ValueError(f"ember.pad: reflect_type must be 'even' or 'odd', got {odd!r}")
    return odd == "odd"


def _stat_lengths(spec, ndim: int) -> list[tuple]:
    """``stat_length`` as a ``(before, after)`` pair per axis (None: the whole axis)."""
    if spec is None:
        return [(None, None)] * ndim
    return _pairs(spec, ndim, "stat_length", True)


def _stat_sides(roi: ndarray, k: int, before: int, after: int, lengths, mode: str) -> None:
    """NumPy's statistic modes on axis ``k``: each side gets the statistic of the (up to)
    ``lengths`` original elements next to it, rounded half to even for integer arrays."""
    left, right = before, roi.shape[k] - after
    n = right - left
    lo, hi = (n if v is None or v > n else v for v in lengths)
    if (lo == 0 or hi == 0) and mode in ("maximum", "minimum"):
        raise ValueError("ember.pad: stat_length of 0 yields no value for padding")
    reduce = getattr(ember, {"maximum": "max", "minimum": "min"}.get(mode, mode))

    def stat(chunk: ndarray) -> ndarray:
        value = reduce(chunk, axis=k, keepdims=True)
        if roi.dtype.kind in "iu" and value.dtype.kind == "f":
            value = ember.round(value)  # then cast on assignment, as NumPy's
        return value

    first = stat(_at(roi, k, slice(left, left + lo)))
    last = first if lo == hi == n else stat(_at(roi, k, slice(right - hi, right)))
    _copy(_at(roi, k, slice(0, before)), first)
    _copy(_at(roi, k, slice(right, None)), last)


def _ramps(roi: ndarray, k: int, before: int, after: int, ends: tuple) -> None:
    """NumPy's ``linear_ramp`` on axis ``k``: ``linspace(end, edge, width, endpoint=False)``
    along the axis on each side (the after side reversed), in NumPy's arithmetic."""
    right = roi.shape[k] - after
    for width, end, edge, at, flip in (
        (before, ends[0], _at(roi, k, slice(before, before + 1)), slice(0, before), False),
        (after, ends[1], _at(roi, k, slice(right - 1, right)), slice(right, None), True),
    ):
        if width:
            ramp = _linspace_along(end, edge, width, k)
            _copy(_at(roi, k, at), mp.flip(ramp, k) if flip else ramp)


def _linspace_along(start, stop: ndarray, num: int, axis: int) -> ndarray:
    """``numpy.linspace(start, stop, num, endpoint=False, dtype=stop.dtype, axis=axis)`` for
    a scalar ``start`` and an array ``stop`` of length 1 on ``axis``."""
    import numpy as np

    kind = np.result_type(stop.dtype.numpy, start, float(num))
    delta = ember.subtract(stop.astype(kind.name), start)
    step = delta / num
    shape = [1] * stop.ndim
    shape[axis] = num
    t = ember.arange(num, dtype=kind.name, device=stop.backend).reshape(tuple(shape))
    if bool(ember.any(step == 0)):  # NumPy's branch for a zero step: divide first
        y = t / num * delta
    else:
        y = t * step
    y = y + start
    if stop.dtype.kind in "iu":
        y = ember.floor(y)
    return y.astype(stop.dtype)


def _edges(roi: ndarray, k: int, before: int, after: int) -> None:
    end = roi.shape[k] - after
    _copy(_at(roi, k, slice(0, before)), _at(roi, k, slice(before, before + 1)))
    _copy(_at(roi, k, slice(end, None)), _at(roi, k, slice(end - 1, end)))


def _reflect_step(roi, k, before, after, n, mode, odd) -> tuple[int, int]:
    """Fill up to one period of each pad from the region filled so far, mirrored about
    its edge (``symmetric``: the edge repeated); returns the widths still to fill."""
    edge = 1 if mode == "symmetric" else 0
    filled = roi.shape[k] - before - after
    period = n if edge else n - 1
    chunk = (filled - 1 + edge) // period * period  # whole periods of the original
    if before:
        c = min(chunk, before)
        src = mp.flip(_at(roi, k, slice(before + 1 - edge, before + 1 - edge + c)), k)
        if odd:  # 2 * edge - src (as edge + (edge - src): kernels shared with linspace)
            src = _odd(_at(roi, k, slice(before, before + 1)), src)
        _copy(_at(roi, k, slice(before - c, before)), src)
        before -= c
    if after:
        end = roi.shape[k] - after
        c = min(chunk, after)
        src = mp.flip(_at(roi, k, slice(end - 1 + edge - c, end - 1 + edge)), k)
        if odd:
            src = _odd(_at(roi, k, slice(end - 1, end)), src)
        _copy(_at(roi, k, slice(end, end + c)), src)
        after -= c
    return before, after


def _odd(pivot: ndarray, src: ndarray) -> ndarray:
    """``2 * pivot - src``; of bools, NumPy's ``2 * e - s != 0``: ``e or s``."""
    if pivot.dtype.kind == "b":
        return pivot | src
    return pivot + (pivot - src)


def _wrap_step(roi, k, before, after, n, mode, odd) -> tuple[int, int]:
    """Fill up to the filled length (whole periods) of each pad from the other end."""
    period = (roi.shape[k] - before - after) // n * n
    if before:
        c = min(period, before)
        _copy(_at(roi, k, slice(before - c, before)),
              _at(roi, k, slice(before + period - c, before + period)))  # fmt: skip
        before -= c
    if after:
        end = roi.shape[k] - after
        c = min(period, after)
        _copy(_at(roi, k, slice(end, end + c)), _at(roi, k, slice(end - period, end - period + c)))
        after -= c
    return before, after


__all__ = ["pad"]
