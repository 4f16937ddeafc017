"""Ember's scalar types.

``ember.float32`` and friends are :class:`DType` objects.  They do not import NumPy (so that
``import ember`` stays fast); :attr:`DType.numpy` gives the NumPy dtype when it is needed.
Anything NumPy accepts as a dtype is accepted wherever Ember takes one: see :func:`dtype`.

Calling a dtype converts a value like NumPy's scalar types (``ember.float32(2)`` is
``numpy.float32(2.0)``); inside a kernel it is a cast.

``ember.bfloat16`` (1 sign, 8 exponent and 7 mantissa bits: float32's range with 8 bits of
precision) has no NumPy dtype; ``DType.numpy`` gives ``ml_dtypes.bfloat16``'s where the
optional ``ml_dtypes`` package is installed and raises a ``TypeError`` that says so otherwise
(:attr:`DType.has_numpy` asks first).

Dtypes compare like NumPy's: ``ember.float32 == numpy.float32``, ``== numpy.dtype("f4")``
and ``== "float32"`` are all true, ``numpy.dtype(ember.float32)`` works, and an Ember dtype
hashes like its NumPy dtype, so either finds the other in a dict or set; bfloat16 hashes
like its name instead, since hashing it must not import ``ml_dtypes`` (0.9 s on the build
machine: a first array operation paid it wherever ``ml_dtypes`` is installed).  Two Ember
dtypes are equal only when they are the same object (the Array API's rule); anything that
names no dtype (``None``, numbers, arrays) compares unequal, never raises.
"""

from __future__ import annotations

import sys
from typing import Any


class DType:
    """A scalar type: ``name``, ``itemsize`` in bytes and ``kind`` ('b', 'i', 'u', 'f', 'c').

    Complex dtypes (kind ``'c'``) are pairs of floats, real part first, as in NumPy and C99:
    :attr:`real` is the dtype of one part (``complex64.real`` is ``float32``)."""

    __slots__ = ("name", "itemsize", "kind", "_numpy", "_hash")

    def __init__(self, name: str, itemsize: int, kind: str):
        self.name = name
        self.itemsize = itemsize
        self.kind = kind
        self._numpy = None
        self._hash: int | None = None

    @property
    def numpy(self):
        """The matching ``numpy.dtype`` (imports NumPy on first use).  bfloat16's is
        ``ml_dtypes``'s: a ``TypeError`` where that package is not installed."""
        if self._numpy is None:
            import numpy as np

            self._numpy = np.dtype(_ml_dtypes_type(self) if self.name in _ML_DTYPES else self.name)
        return self._numpy

    @property
    def has_numpy(self) -> bool:
        """Whether :attr:`numpy` exists here (bfloat16: only with ``ml_dtypes``, which
        this asks of the installed packages, without importing it)."""
        return self.name not in _ML_DTYPES or _ml_dtypes_installed()

    @property
    def dtype(self):
        """The NumPy dtype: lets ``numpy.dtype(ember.float32)`` (and every NumPy function
        taking ``dtype=``) accept an Ember dtype."""
        return self.numpy

    @property
    def type(self):
        """The NumPy scalar type (``numpy.float32``...), as ``numpy.dtype.type``."""
        return self.numpy.type

    @property
    def bits(self) -> int:
        return self.itemsize * 8

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_narrow(self) -> bool:
        """A 16-bit float (float16, bfloat16): kept in memory as its 16 bits, computed in
        float32 and rounded back after each operation (NumPy's float16 loops)."""
        return self.kind == "f" and self.itemsize == 2

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_inexact(self) -> bool:
        """Real or complex floating point (NumPy's ``inexact``)."""
        return self.kind in "fc"

    @property
    def real(self) -> DType:
        """The dtype of the real (and imaginary) part: itself for real dtypes."""
        return _REAL.get(self.name, self)

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind in "if"

    def __call__(self, value: Any = 0, imag: Any = None) -> Any:
        if imag is not None:  # complex64(re, im), as NumPy's
            if self.kind != "c":
                raise TypeError(f"ember.{self.name}() takes one value; only complex dtypes "
                                "take a real and an imaginary part")  # fmt: skip
            return self.numpy.type(value, imag)
        return self.numpy.type(value)

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (dtype, (self.name,))

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, DType):
            return self is other
        found = _named(other)
        return NotImplemented if found is None else self is found

    def __ne__(self, other: Any) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        # the NumPy dtype's hash (equal objects hash alike); NumPy is imported by the first
        # hash, which `import ember` never does; bfloat16: its name's (the module docstring)
        h = self._hash
        if h is None:
            h = self._hash = hash(self.name) if self.name in _ML_DTYPES else hash(self.numpy)
        return h


bool_ = DType("bool", 1, "b")
int8 = DType("int8", 1, "i")
int16 = DType("int16", 2, "i")
int32 = DType("int32", 4, "i")
int64 = DType("int64", 8, "i")
uint8 = DType("uint8", 1, "u")
uint16 = DType("uint16", 2, "u")
uint32 = DType("uint32", 4, "u")
uint64 = DType("uint64", 8, "u")
float16 = DType("float16", 2, "f")
bfloat16 = DType("bfloat16", 2, "f")
float32 = DType("float32", 4, "f")
float64 = DType("float64", 8, "f")
complex64 = DType("complex64", 8, "c")
complex128 = DType("complex128", 16, "c")

ALL: tuple[DType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
    float64, complex64, complex128,
)  # fmt: skip
_REAL = {"complex64": float32, "complex128": float64}


def complex_of(real: DType) -> DType:
    """The complex dtype whose parts hold ``real`` (float16, bfloat16, float32: complex64)."""
    return complex128 if real.itemsize == 8 else complex64


# Dtypes whose NumPy dtype is the optional ml_dtypes package's (NumPy has none).
_ML_DTYPES = frozenset({"bfloat16"})


def _ml_dtypes():
    """The ``ml_dtypes`` module, or None where it is not installed."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes


_installed: list[bool] = []  # whether ml_dtypes is installed, once asked


def _ml_dtypes_installed() -> bool:
    """Whether ``import ml_dtypes`` would work, without importing it (an entry in
    ``sys.modules`` answers first: the module, or None where imports of it fail)."""
    if "ml_dtypes" in sys.modules:
        return sys.modules["ml_dtypes"] is not None
    if not _installed:
        import importlib.util

        _installed.append(importlib.util.find_spec("ml_dtypes") is not None)
    return _installed[0]


def loaded_scalar_type(dt: DType):
    """``dt``'s NumPy scalar type where it is at hand without importing a package for it
    (bfloat16's once ``ml_dtypes`` is imported: a value of that type exists only then),
    else None: what kernel-argument tables register, importing nothing."""
    if dt.name in _ML_DTYPES and "ml_dtypes" not in sys.modules:
        return None
    return dt.numpy.type if dt.has_numpy else None


def _ml_dtypes_type(dt: DType):
    found = _ml_dtypes()
    if found is None:
        raise TypeError(
            f"NumPy has no {dt.name} dtype: install the 'ml_dtypes' package (pip install "
            f"ml_dtypes) for NumPy {dt.name} arrays, or convert on the device first "
            f"(x.astype(ember.float32))"
        )
    return getattr(found, dt.name)


def bfloat16_bits(values: Any):
    """The bfloat16 bits (a NumPy ``uint16`` array) nearest to ``values``: converted to
    float32 first (as ml_dtypes and PyTorch do), then rounded to nearest even; a NaN stays
    a (quiet) NaN.  The host side of what kernels do; needs no ml_dtypes."""
    import numpy as np

    u = np.asarray(values, np.float32).view(np.uint32)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, (u >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)


def bfloat16_values(bits: Any):
    """The float32 values of bfloat16 bits (a ``uint16`` array): exact."""
    import numpy as np

    return (np.asarray(bits, np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


BY_NAME: dict[str, DType] = {t.name: t for t in ALL}
_ALIASES = {
    "bool_": bool_, "?": bool_, "b1": bool_, "half": float16, "single": float32,
    "double": float64, "float": float64, "int": int64, "f2": float16, "f4": float32,
    "f8": float64, "i1": int8, "i2": int16, "i4": int32, "i8": int64, "u1": uint8,
    "u2": uint16, "u4": uint32, "u8": uint64, "c8": complex64, "c16": complex128,
    "csingle": complex64, "cdouble": complex128, "complex": complex128,
}  # fmt: skip
_PYTHON_TYPES = {bool: bool_, int: int64, float: float64, complex: complex128}


def _named(other: Any) -> DType | None:
    """The dtype ``other`` names for ``==`` (a name, a scalar type, a NumPy dtype), or None.

    Only names, types and NumPy dtypes are tried, so ``x.dtype == None`` or ``== 3`` is
    simply False (NumPy reads None as float64)."""
    if isinstance(other, str):
        found = BY_NAME.get(other) or _ALIASES.get(other)
        if found is not None or "numpy" not in sys.modules:  # no NumPy: only Ember's names
            return found
    elif not isinstance(other, type):
        np = sys.modules.get("numpy")  # a NumPy dtype means NumPy is imported already
        if np is None or not isinstance(other, np.dtype):
            return None
    try:
        return dtype(other)
    except (TypeError, ValueError):
        return None


def dtype(spec: Any) -> DType:
    """Return the Ember :class:`DType` for ``spec``.

    ``spec`` may be an Ember dtype, a name (``"float32"``, ``"f4"``, ``"complex64"``), a NumPy
    dtype or scalar type, or the Python types ``bool``/``int``/``float``/``complex``.

    Raises
    ------
    TypeError
        If ``spec`` names a type Ember does not support (strings, objects, long double...).
    """
    if isinstance(spec, DType):
        return spec
    if spec in _PYTHON_TYPES:
        return _PYTHON_TYPES[spec]
    if isinstance(spec, str):
        found = BY_NAME.get(spec) or _ALIASES.get(spec)
        if found is not None:
            return found
        name = spec
    elif getattr(spec, "isnative", True) is False:  # a NumPy dtype of the other byte order
        raise TypeError(f"Ember supports native byte order only, got dtype {spec.str!r}")
    else:
        name = getattr(spec, "name", None) or getattr(spec, "__name__", None)
    if name is None or name not in BY_NAME:  # NumPy knows more spellings ('<f4', 'd')
        import numpy as np

        try:
            as_numpy = np.dtype(spec)
        except TypeError:
            as_numpy = None
        if as_numpy is not None and not as_numpy.isnative:
            raise TypeError(f"Ember supports native byte order only, got dtype {as_numpy.str!r}")
        name = (
            as_numpy.name if as_numpy is not None else spec if isinstance(spec, str) else repr(spec)
        )
    if name in BY_NAME:
        return BY_NAME[name]
    supported = ", ".join(t.name for t in ALL)
    raise TypeError(f"Ember does not support dtype {name!r}; supported dtypes: {supported}")
