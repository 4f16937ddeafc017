"""Arguments of ``ember.fft`` checked and completed as ``numpy.fft`` does (same messages where
NumPy has one), and the dtypes of results."""

from __future__ import annotations

import math
import operator

from ember import dtypes
from ember.array.ndarray import ndarray, not_on_device
from ember.dtypes import DType

NORMS = ("backward", "ortho", "forward")
SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def array(x, name: str) -> ndarray:
    """``x`` as an ember array, or the error saying how to get one."""
    if not isinstance(x, ndarray):
        raise not_on_device(x, f"ember.fft.{name}")
    if x.dtype.kind not in "biufc":
        raise TypeError(f"ember.fft.{name}: {x.dtype.name} input is not numeric")
    return x


def norm(value) -> str:
    """``norm`` with None as ``"backward"`` (NumPy's message for anything else)."""
    if value is None:
        return "backward"
    if value not in NORMS:
        raise ValueError(f'Invalid norm value {value}; should be "backward","ortho" or "forward".')
    return value


def scale(mode: str, n: int, inverse: bool) -> float:
    """The factor ``norm`` puts on a length-``n`` transform (forward or inverse)."""
    if mode == "ortho":
        return 1.0 / math.sqrt(n)
    if (mode == "backward") == inverse:
        return 1.0 / n
    return 1.0


def axis(value, ndim: int) -> int:
    """A non-negative axis of an ``ndim``-d array (NumPy's IndexError otherwise)."""
    try:
        a = operator.index(value)
    except TypeError:
        raise TypeError(f"axis must be an integer, not {type(value).__name__}") from None
    if not -ndim <= a < ndim:
        raise IndexError(f"axis {a} is out of bounds for an array of dimension {ndim}")
    return a % ndim


def points(n, default: int) -> int:
    """A transform length: ``n`` (None: ``default``), at least 1."""
    value = default if n is None else operator.index(n)
    if value < 1:
        raise ValueError(f"Invalid number of FFT data points ({value}) specified.")
    return value


def shape_axes(x: ndarray, s, axes, c2r: bool = False) -> tuple[list[int], list[int]]:
    """``(lengths, axes)`` of an n-dimensional transform, completed as NumPy 2 does: no
    ``axes``: the last ``len(s)`` axes (all without ``s``); no ``s``: the input's lengths
    (for ``c2r`` the last is ``2 * (m - 1)``); ``-1`` in ``s``: the input's length."""
    if x.ndim == 0:
        raise IndexError("tuple index out of range: an n-dimensional FFT needs an array")
    if axes is None:
        count = x.ndim if s is None else len(s)
        axes = list(range(x.ndim - count, x.ndim))
    else:
        axes = [axis(a, x.ndim) for a in (axes if isinstance(axes, list | tuple) else [axes])]
    if s is None:
        s = [x.shape[a] for a in axes]
        if c2r and axes:
            s[-1] = 2 * (x.shape[axes[-1]] - 1)
    else:
        s = list(s) if isinstance(s, list | tuple) else [s]
        if len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        s = [x.shape[a] if v == -1 else v for v, a in zip(s, axes, strict=True)]
        if c2r and axes and s[-1] == -1:
            s[-1] = 2 * (x.shape[axes[-1]] - 1)
    return [points(v, v) for v in s], axes


def complex_of(dt: DType) -> DType:
    """The complex dtype of a transform of ``dt`` input (NumPy 2: float32 and float16 stay
    single precision, integers and bools become complex128)."""
    if dt.is_complex:
        return dt
    if dt.kind == "f" and dt.itemsize <= 4:
        return dtypes.complex64
    return dtypes.complex128


def real_of(dt: DType) -> DType:
    """The real dtype of a ``c2r`` transform of ``dt`` input (NumPy keeps a real float
    input's dtype, float16 included)."""
    if dt.is_complex:
        return dt.real
    if dt.kind == "f":
        return dt
    return dtypes.float64


def real_input(x: ndarray, name: str) -> ndarray:
    """A real transform's input: complex input is refused as NumPy does."""
    if x.dtype.is_complex:
        raise TypeError(
            f"ember.fft.{name} takes real input, got {x.dtype.name}; use ember.fft.fft for "
            "complex input (or pass x.real)"
        )
    return x
