"""The parts of complex arrays: ``x.real`` and ``x.imag`` as views, ``complex(x)``.

A complex element is two floats, real part first (NumPy's and C99's layout), so a part of a
complex array is a view of the part's float dtype with the same byte strides, the
imaginary part starting half an element later: no copy, and writing the view writes the
complex array (``x.imag[...] = 0``), as in NumPy.  Every kernel takes such a view (its
strides are whole multiples of the part's size).
"""

from __future__ import annotations

from ember.array.ndarray import ndarray


def part(x, which: str) -> ndarray:
    """``x.real`` (``which="real"``) or ``x.imag`` of an ember array."""
    if not isinstance(x, ndarray):
        raise TypeError(f"ember.{which} takes an ember array, got a {type(x).__name__}")
    dt = x.dtype
    if not dt.is_complex:
        if which == "real":
            return x
        from ember.array.creation import zeros

        return zeros(x.shape, dt, device=x.backend.device)
    half = dt.itemsize // 2
    offset = x.offset + (half if which == "imag" else 0)
    return ndarray(x.shape, dt.real, x.buffer, x.backend, x.strides, offset)


def set_part(x: ndarray, which: str, value) -> None:
    """``x.real = value`` / ``x.imag = value`` (NumPy's setters): assign into the view."""
    if not x.dtype.is_complex:
        if which == "imag":
            raise TypeError(f"array of dtype {x.dtype} has no imaginary part to set")
        x[...] = value
        return
    part(x, which)[...] = value


def to_complex(x: ndarray) -> complex:
    """``complex(x)`` of a 0-d array (one element copied to the host)."""
    if x.shape:
        raise TypeError(
            f"only 0-d arrays can be converted to Python scalars (complex() of an array of "
            f"shape {x.shape}); use x.item() for a one-element array"
        )
    return complex(x.to_numpy().reshape(()).item())
