"""Array API namespace extras: dtype inspection and promotion, constants, and the
namespace inspection object.

``result_type``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``, ``bool`` (the dtype),
``newaxis``, ``e``, ``pi``, ``inf``, ``nan``, ``__array_api_version__`` and
``__array_namespace_info__`` (capabilities, devices, default and supported dtypes).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ember import dtypes

__array_api_version__ = "2024.12"
bool = dtypes.bool_  # noqa: A001 - the Array API's name of the dtype
newaxis = None
e = math.e
pi = math.pi
inf = math.inf
nan = math.nan

_KINDS = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
    "real floating": "f", "complex floating": "c", "numeric": "iufc",
}  # fmt: skip


def result_type(*arrays_and_dtypes) -> dtypes.DType:
    """The dtype NumPy's ``result_type`` gives for the operands (NEP 50: Python scalars are
    weak).  With more than two operands NumPy promotes them together, not pairwise
    (``int8, uint8, float16 -> float16`` where pairwise gives float32); Ember's binary
    operators are the two-operand case of the same rules.  At least one operand must be
    an array or a dtype (the Array API's rule).  bfloat16, which NumPy lacks, joins the
    other dtypes' result by Ember's rule (:mod:`ember.frontend.types`), then the Python
    scalars do."""
    import numpy as np

    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    if all(isinstance(x, builtins_number) for x in arrays_and_dtypes):
        raise ValueError("result_type: at least one operand must be an array or a dtype")
    operands = []
    for x in arrays_and_dtypes:
        if hasattr(x, "dtype") and hasattr(x, "shape") and type(x).__module__ != "numpy":
            operands.append(dtypes.dtype(x.dtype))
        elif isinstance(x, builtins_number):
            operands.append(x)  # stays a weak Python scalar for NumPy too
        else:
            operands.append(dtypes.dtype(x))
    if dtypes.bfloat16 in operands:
        return _with_bfloat16(operands)
    numpy_operands = [x.numpy if isinstance(x, dtypes.DType) else x for x in operands]
    return dtypes.dtype(np.result_type(*numpy_operands))


def _with_bfloat16(operands: list) -> dtypes.DType:
    """:func:`result_type` of operands among which is bfloat16: the other dtypes together
    (NumPy's rule), then bfloat16, then the weak Python scalars one by one."""
    from ember.frontend.types import WEAK_COMPLEX, WEAK_FLOAT, WEAK_INT, promote, scalar

    strong = [x for x in operands if isinstance(x, dtypes.DType) and x is not dtypes.bfloat16]
    t = scalar(dtypes.bfloat16)
    if strong:
        t = promote(t, scalar(result_type(*strong)))
    for x in operands:
        if isinstance(x, builtins_number):
            weak = WEAK_COMPLEX if isinstance(x, complex) else WEAK_FLOAT
            t = promote(t, WEAK_INT if isinstance(x, int) else weak)
    return t.dtype


builtins_number = (int, float, complex)


def can_cast(from_, to, /, casting: str = "safe") -> bool:
    """Whether ``from_`` (a dtype or array) casts to ``to`` under NumPy's ``casting`` (the
    Array API's rule is ``"safe"``).  For an array the device counts: float64 is no target
    on a device without float64."""
    import numpy as np

    target = dtypes.dtype(to)
    if hasattr(from_, "shape") and hasattr(from_, "backend"):
        if target.real is dtypes.float64 and not _has_fp64(from_.backend):
            return False
        src = from_.dtype
    else:
        src = dtypes.dtype(from_)
    if dtypes.bfloat16 in (src, target):
        return _can_cast_bfloat16(src, target, casting)
    return bool(np.can_cast(src.numpy, target.numpy, casting))


def _can_cast_bfloat16(src: dtypes.DType, target: dtypes.DType, casting: str) -> bool:
    """NumPy's casting rules, applied to bfloat16: a cast is safe when every value of
    ``src`` is exact in ``target`` (bfloat16 holds bool, int8 and uint8 exactly; float32
    and wider floats and complex64/128 hold bfloat16)."""
    if casting in ("no", "equiv") or src is target:
        return src is target
    if casting == "unsafe":
        return True
    if src is dtypes.bfloat16:
        safe = target.is_inexact and target.itemsize > 2 and target.real.itemsize >= 4
    else:
        safe = src.kind == "b" or (src.is_integer and src.itemsize == 1)
    if casting == "safe":
        return safe
    kinds = "biufc"  # same_kind: safe, or toward a kind that is not lower
    return safe or kinds.index(target.kind) >= kinds.index(src.kind)


def _has_fp64(backend) -> bool:
    from ember.compiler.driver import target_of

    return target_of(backend).has("fp64")


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the Array API's name
    """Machine limits of a float dtype, as Python numbers (the Array API's finfo object).
    For a complex dtype, those of its parts: ``finfo(complex64).dtype`` is ``float32``."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: dtypes.DType
    resolution: float
    tiny: float


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801
    """Limits of an integer dtype, as Python ints (the Array API's iinfo object)."""

    bits: int
    max: int
    min: int
    dtype: dtypes.DType


def _dtype_arg(type_) -> dtypes.DType:
    return dtypes.dtype(type_.dtype if hasattr(type_, "shape") else type_)


@functools.cache
def _finfo(dt: dtypes.DType) -> finfo_object:
    import numpy as np

    if not dt.is_inexact:
        raise ValueError(f"finfo: {dt} is not a floating-point dtype")
    dt = dt.real  # a complex dtype's limits are its parts' (the Array API; NumPy's too)
    if dt is dtypes.bfloat16:  # no NumPy dtype: from the format (7 + 1 bits, 8 exponent)
        tiny = 2.0**-126
        return finfo_object(16, 2.0**-7, (2 - 2**-7) * 2.0**127, -(2 - 2**-7) * 2.0**127,
                            tiny, dt, 0.01, tiny)  # fmt: skip
    f = np.finfo(dt.numpy)
    return finfo_object(
        int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), dt,
        float(f.resolution), float(f.smallest_normal),
    )  # fmt: skip


@functools.cache
def _iinfo(dt: dtypes.DType) -> iinfo_object:
    import numpy as np

    if not dt.is_integer:
        raise ValueError(f"iinfo: {dt} is not an integer dtype")
    i = np.iinfo(dt.numpy)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), dt)


def finfo(type, /) -> finfo_object:  # noqa: A002 - the Array API's parameter name
    """Limits of a float dtype (or of an array's dtype): ``bits``, ``eps``, ``max``,
    ``min``, ``smallest_normal`` (Python floats) and ``dtype`` (an Ember dtype)."""
    return _finfo(_dtype_arg(type))


def iinfo(type, /) -> iinfo_object:  # noqa: A002
    """Limits of an integer dtype (or of an array's dtype): ``bits``, ``max``, ``min``
    (Python ints) and ``dtype`` (an Ember dtype)."""
    return _iinfo(_dtype_arg(type))


def isdtype(dtype, kind) -> bool:
    """The Array API's ``isdtype``: ``kind`` is a dtype, a kind name or a tuple of them."""
    dt = dtypes.dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"unknown dtype kind {kind!r}; known: {', '.join(_KINDS)}")
        return dt.kind in _KINDS[kind] if _KINDS[kind] else False
    return dt is dtypes.dtype(kind)


class _NamespaceInfo:
    """What ``ember.__array_namespace_info__()`` returns (Array API 2024.12)."""

    def capabilities(self) -> dict:
        """Data-dependent shapes: ``unique_*``, ``nonzero``, ``repeat`` with array counts and
        ``x[mask]`` size their results on the host.  Boolean indexing: masks of any number
        of axes, 0-d ones too (``x[ember.asarray(True)]``, the standard's ``(1, *x.shape)``).
        Any number of dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self):
        """The calling thread's current device (what creation functions use by default)."""
        from ember.runtime.device import current

        return current()

    def devices(self) -> list:
        """The devices arrays can be created on: those of every usable backend."""
        from ember.runtime import backend
        from ember.runtime.device import devices

        out = []
        for name, reason in backend.available().items():
            if reason is None:
                out.extend(devices(name))
        return out

    def default_dtypes(self, *, device=None) -> dict:
        """float64 and complex128 (float32 and complex64 on a device without float64),
        int64 for integers and indices."""
        real = dtypes.float64 if _device_fp64(device) else dtypes.float32
        return {"real floating": real, "complex floating": dtypes.complex_of(real),
                "integral": dtypes.int64, "indexing": dtypes.int64}  # fmt: skip

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The Array API dtypes Ember supports on ``device`` (all of ``kind``, if given);
        float16 and bfloat16 are Ember extensions and not listed."""
        names = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64", "complex64", "complex128")  # fmt: skip
        fp64 = _device_fp64(device)
        out = {}
        for name in names:
            dt = dtypes.dtype(name)
            if dt.real is dtypes.float64 and not fp64:
                continue
            if kind is None or isdtype(dt, kind):
                out[name] = dt
        return out


def _device_fp64(device) -> bool:
    from ember.array.devices import backend_of

    return _has_fp64(backend_of(device))


def __array_namespace_info__() -> _NamespaceInfo:  # noqa: N807 - the Array API's name
    """The Array API inspection namespace: ``capabilities()``, ``default_device()``,
    ``devices()``, ``default_dtypes()``, ``dtypes()``."""
    return _NamespaceInfo()
