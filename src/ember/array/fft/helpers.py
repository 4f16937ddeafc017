"""Sample frequencies and spectrum shifts: ``fftfreq``, ``rfftfreq``, ``fftshift``,
``ifftshift`` (Array API signatures, NumPy's values; NumPy's positional ``device`` and
keyword ``n``, ``x`` are taken too)."""

from __future__ import annotations

import operator

from ember.array.ndarray import ndarray, not_on_device


def _frequencies(n, d, dtype, device, half: bool, name: str) -> ndarray:
    from ember.array.manipulation import astype
    from ember.array.ranges import arange
    from ember.array.ufuncs import multiply, subtract, where

    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(
            f"ember.fft.{name}: n should be an integer, not {type(n).__name__}"
        ) from None
    if n < 1:
        raise ValueError(f"ember.fft.{name}: n must be at least 1, got {n}")
    val = 1.0 / (n * d)
    k = arange(n // 2 + 1 if half else n, dtype="int64", device=device)
    if not half:  # 0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1
        k = where(k < (n + 1) // 2, k, subtract(k, n))
    out = multiply(k, val)
    return out if dtype is None else astype(out, dtype)


def fftfreq(n, d=1.0, device=None, *, dtype=None) -> ndarray:
    """The sample frequencies of a length-``n`` transform with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)`` (float64 unless ``dtype``)."""
    return _frequencies(n, d, dtype, device, False, "fftfreq")


def rfftfreq(n, d=1.0, device=None, *, dtype=None) -> ndarray:
    """The sample frequencies of :func:`~ember.fft.rfft`: ``[0, 1, ..., n // 2] / (d * n)``."""
    return _frequencies(n, d, dtype, device, True, "rfftfreq")


def _shift(x, axes, sign: int, name: str) -> ndarray:
    from ember.array.manipulation import roll

    if not isinstance(x, ndarray):
        raise not_on_device(x, f"ember.fft.{name}")
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    if not axes:
        return roll(x, 0, axis=0) if x.ndim else x
    return roll(x, shifts, axis=tuple(axes))


def fftshift(x, axes=None) -> ndarray:
    """``x`` with the zero frequency moved to the centre of ``axes`` (default all): each
    rolled by half its length."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None) -> ndarray:
    """The inverse of :func:`fftshift` (they differ for odd lengths)."""
    return _shift(x, axes, -1, "ifftshift")
