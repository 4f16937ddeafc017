"""Kernel value types and NumPy 2 (NEP 50) promotion.

Types are small frozen dataclasses, hashable, with a stable text form (:meth:`Type.key`) so a
compiled specialization's key can be written to disk.

Scalars carry a *weak* flag (NEP 50).  Python literals, Python scalar arguments and the
Python-int-like values a kernel computes (``ember.global_id()``, ``x.shape[0]``, ``len(x)``,
``range`` loop variables, ``int(...)``) are weak: in a mixed operation the other, strong,
operand decides the type (``float32 * 2.0`` is ``float32``; ``uint8 + 1`` is ``uint8``).
A weak int is an ``int64`` and a weak float a ``float64`` in the generated code.  Two weak
operands give a weak result; NumPy scalars, array elements and ``ember.float32(...)`` casts
are strong.

Promotion between strong types is NumPy's table (:func:`promote_strong`); :func:`promote`
adds the weak rules.  Both are checked against ``numpy.result_type`` in the unit tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ember import dtypes
from ember.dtypes import DType


class Type:
    """Base class of kernel value types."""

    def key(self) -> str:
        """A short stable text form, used in cache keys and mangled names."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.key()


@dataclass(frozen=True)
class Scalar(Type):
    """A number of ``dtype``; ``weak`` for Python-scalar-like values (NEP 50)."""

    dtype: DType
    weak: bool = False

    def key(self) -> str:
        if self.weak:
            return "pyfloat" if self.dtype.is_float else "pyint"
        return self.dtype.name

    @property
    def strong(self) -> Scalar:
        """The same type, not weak (the type the value has in C)."""
        return scalar(self.dtype)


@dataclass(frozen=True)
class Array(Type):
    """An array view: element ``dtype``, ``ndim``, ``layout`` and memory ``space``.

    ``layout`` is ``"C"`` (C-contiguous: strides follow from the shape) or ``"A"`` (any
    strides, passed at launch).  ``space`` is ``"global"`` (device memory, a kernel
    argument) or ``"shared"`` (``ember.shared``: per-block, with a static ``shape``).
    """

    dtype: DType
    ndim: int
    layout: str = "C"
    space: str = "global"
    shape: tuple[int, ...] | None = None

    def key(self) -> str:
        text = f"{self.dtype.name}[{self.ndim}d,{self.layout}"
        if self.space != "global":
            dims = "x".join(map(str, self.shape or ()))
            text += f",{self.space}:{dims}"
        return text + "]"

    def describe(self) -> str:
        """The type as users read it: ``array(float32, 2d, strided)``."""
        layout = "contiguous" if self.layout == "C" else "strided"
        where = f", shared {self.shape}" if self.space == "shared" else ""
        return f"array({self.dtype.name}, {self.ndim}d, {layout}{where})"


@dataclass(frozen=True)
class Tuple(Type):
    """A fixed-length tuple of values (shapes, multi-indices)."""

    items: tuple[Type, ...] = field(default=())

    def key(self) -> str:
        inner = ",".join(t.key() for t in self.items)
        return f"({inner},)" if len(self.items) == 1 else f"({inner})"


@dataclass(frozen=True)
class Void(Type):
    """No value: the result of a function without ``return value``."""

    def key(self) -> str:
        return "void"


VOID = Void()
_SCALARS = {d: Scalar(d) for d in dtypes.ALL}
BOOL = _SCALARS[dtypes.bool_]
INT64 = _SCALARS[dtypes.int64]
FLOAT64 = _SCALARS[dtypes.float64]
WEAK_INT = Scalar(dtypes.int64, weak=True)
WEAK_FLOAT = Scalar(dtypes.float64, weak=True)


def scalar(dtype: DType) -> Scalar:
    """The strong scalar type of ``dtype``."""
    return _SCALARS[dtype]


def describe(t: Type) -> str:
    """A type as it appears in error messages."""
    if isinstance(t, Scalar):
        if t.weak:
            return "Python float" if t.dtype.is_float else "Python int"
        return t.dtype.name
    if isinstance(t, Array):
        return t.describe()
    if isinstance(t, Tuple):
        return "tuple(" + ", ".join(describe(i) for i in t.items) + ")"
    return t.key()


# --------------------------------------------------------------------- promotion


def _smallest_float_for_int(d: DType) -> DType:
    """NumPy's smallest float that holds every value of integer type ``d`` (or bool)."""
    if d.itemsize == 1:
        return dtypes.float16
    if d.itemsize == 2:
        return dtypes.float32
    return dtypes.float64


def _int_of(bits: int, signed: bool) -> DType:
    return dtypes.BY_NAME[f"{'' if signed else 'u'}int{bits}"]


def promote_strong(a: DType, b: DType) -> DType:
    """``numpy.promote_types(a, b)`` for Ember's dtypes."""
    if a is b:
        return a
    if a.kind == "b":
        return b
    if b.kind == "b":
        return a
    if a.is_float and b.is_float:
        return a if a.itemsize >= b.itemsize else b
    if a.is_float or b.is_float:
        flt, other = (a, b) if a.is_float else (b, a)
        need = _smallest_float_for_int(other)
        return flt if flt.itemsize >= need.itemsize else need
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    if unsigned.itemsize == 8:
        return dtypes.float64
    return _int_of(unsigned.bits * 2, True)


def promote(a: Scalar, b: Scalar) -> Scalar:
    """The result type of a binary operation on ``a`` and ``b`` (NEP 50 weak scalars).

    * strong with strong: NumPy's promotion table;
    * weak int with a strong int or float: the strong type; with bool: ``int64``;
    * weak float with a strong float: the strong type; with an int or bool: ``float64``;
    * weak with weak: weak float if either is a float, else weak int.
    """
    if a.weak and b.weak:
        return WEAK_FLOAT if (a.dtype.is_float or b.dtype.is_float) else WEAK_INT
    if not a.weak and not b.weak:
        return scalar(promote_strong(a.dtype, b.dtype))
    weak, strong = (a, b) if a.weak else (b, a)
    if weak.dtype.is_float:
        return strong if strong.dtype.is_float else FLOAT64
    return strong if strong.dtype.kind != "b" else INT64


def float_result(t: Scalar) -> Scalar:
    """The float type NumPy's math ufuncs (sqrt, sin, true division...) give for ``t``."""
    if t.dtype.is_float:
        return t
    if t.weak:
        return WEAK_FLOAT
    return scalar(_smallest_float_for_int(t.dtype))


def unify(a: Type, b: Type) -> Type | None:
    """The type of a variable assigned values of types ``a`` and ``b``, or None if none fits.

    Numbers unify by promotion (so ``acc = 0`` then ``acc += x[i]`` makes ``acc`` the
    element type); tuples unify item by item; arrays only with an identical array type.
    """
    if a == b:
        return a
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        return promote(a, b)
    if isinstance(a, Tuple) and isinstance(b, Tuple) and len(a.items) == len(b.items):
        items = [unify(x, y) for x, y in zip(a.items, b.items, strict=True)]
        if any(i is None for i in items):
            return None
        return Tuple(tuple(items))  # type: ignore[arg-type]
    return None


# --------------------------------------------------------------------- target


@dataclass(frozen=True)
class Target:
    """What the code is generated for: dialect, architecture and device features.

    ``features`` holds names such as ``"fp64"``, ``"int64_atomics"``, ``"subgroups"``,
    ``"subgroup_shuffle"`` (:data:`ember.runtime.backend.FEATURES`).  Part of every cache
    key.  ``device`` (how messages call the device) and ``feature_names`` (feature -> the
    device API's name for it, e.g. ``cl_khr_fp64``) only word error messages.
    """

    dialect: str
    arch: str | None = None
    warp_size: int = 32
    features: frozenset[str] = frozenset()
    device: str = field(default="this device", compare=False)
    feature_names: Mapping[str, str] = field(default_factory=dict, compare=False)

    def key(self) -> str:
        return (
            f"{self.dialect}:{self.arch or '-'}:w{self.warp_size}:{','.join(sorted(self.features))}"
        )

    def has(self, feature: str) -> bool:
        return feature in self.features

    def lacks(self, feature: str, what: str) -> str:
        """``"<device> has no <what> (<API name>)"``, for a missing ``feature``."""
        api = self.feature_names.get(feature)
        return f"{self.device} has no {what}" + (f" ({api})" if api else "")
