"""NumPy's ``pad``: the array is copied into the middle of a new one, then each axis is
filled in turn from what is already filled (slices, flipped slices, broadcast edges: the
copy kernel), which gives NumPy's corners; ``reflect``/``symmetric``/``wrap`` pads wider
than the array are filled chunk by chunk, as NumPy does (so ``reflect_type="odd"``
matches too).  Modes constant, edge, reflect, symmetric, wrap and empty; the others raise
``NotImplementedError``.  ``pad_width`` and ``constant_values`` are host values."""

from __future__ import annotations

import ember
from ember.array import manipulation as mp
from ember.array.grids import _at, _copy, _device
from ember.array.ndarray import ndarray

_REFLECT = {"reflect_type"}
_PAD_KEYWORDS = {"constant": {"constant_values"}, "edge": set(), "wrap": set(),
                 "reflect": _REFLECT, "symmetric": _REFLECT, "empty": set()}  # fmt: skip
_PAD_LATER = ("linear_ramp", "maximum", "mean", "median", "minimum")


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
    and ``"symmetric"`` (``reflect_type="even"`` or ``"odd"``), ``"wrap"`` and
    ``"empty"``, with NumPy's results (pads wider than the array included; corners take
    the last axis's values).  ``linear_ramp``, ``maximum``, ``mean``, ``median``,
    ``minimum`` and a callable mode raise NotImplementedError.  Returns a new array."""
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
    values = _pairs(kwargs.get("constant_values", 0), x.ndim, "constant_values", False)
    for k, (before, after) in enumerate(widths):
        roi = out[tuple(slice(None) if d <= k else inner[d] for d in range(x.ndim))]
        if mode == "constant":
            _copy(_at(roi, k, slice(0, before)), values[k][0])
            _copy(_at(roi, k, slice(roi.shape[k] - after, None)), values[k][1])
        elif mode == "edge" or (mode != "wrap" and x.shape[k] == 1):
            _edges(roi, k, before, after)
        else:
            while before or after:
                step = _wrap_step if mode == "wrap" else _reflect_step
                before, after = step(roi, k, before, after, x.shape[k], mode, odd)
    return out


def _pad_mode(mode, kwargs) -> bool:
    """Check ``mode`` and its keywords; whether ``reflect_type`` is ``"odd"``."""
    if callable(mode) or mode in _PAD_LATER:
        raise NotImplementedError(
            f"ember.pad: mode {mode!r} is not implemented yet; available: "
            f"{', '.join(_PAD_KEYWORDS)} (or pad with mode='constant' and fill it yourself)"
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
            pivot = _at(roi, k, slice(before, before + 1))
            src = pivot + (pivot - src)
        _copy(_at(roi, k, slice(before - c, before)), src)
        before -= c
    if after:
        end = roi.shape[k] - after
        c = min(chunk, after)
        src = mp.flip(_at(roi, k, slice(end - 1 + edge - c, end - 1 + edge)), k)
        if odd:
            pivot = _at(roi, k, slice(end - 1, end))
            src = pivot + (pivot - src)
        _copy(_at(roi, k, slice(end, end + c)), src)
        after -= c
    return before, after


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
