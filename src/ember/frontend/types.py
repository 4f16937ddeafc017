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

bfloat16, which NumPy lacks, promotes as in PyTorch and JAX: with itself it stays bfloat16,
with float16 it gives float32 (neither holds the other), with a wider float or a complex
type that type, and with *any* integer or bool array bfloat16 (not the smallest float
holding the integers, NumPy's rule for float16: ``int32 + bfloat16`` is ``bfloat16``).
Python scalars stay weak: ``bfloat16 * 2.5`` is ``bfloat16``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from ember import dtypes
from ember._records import record
from ember.dtypes import DType

# The math functions defined for complex operands (ember.exp(z), ember.sqrt(z)...; their code
# is in frontend/complexes.py).  Here, not there, so that the array library's type rules read
# it without importing the kernel compiler's IR (~25 ms at start-up).
COMPLEX_MATH = frozenset(
    {"sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
     "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "pow"}
)  # fmt: skip


class Type:
    """Base class of kernel value types."""

    def key(self) -> str:
        """A short stable text form, used in cache keys and mangled names."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.key()


@record(frozen=True)
class Scalar(Type):
    """A number of ``dtype``; ``weak`` for Python-scalar-like values (NEP 50)."""

    dtype: DType
    weak: bool = False

    def key(self) -> str:
        if self.weak:
            return _WEAK_KEYS[self.dtype.kind]
        return self.dtype.name

    @property
    def strong(self) -> Scalar:
        """The same type, not weak (the type the value has in C)."""
        return scalar(self.dtype)


SPACES = ("global", "shared", "local", "constant")
_SPACE_WORDS = {"shared": "shared", "local": "per-thread", "constant": "constant"}


@record(frozen=True)
class Array(Type):
    """An array view: element ``dtype``, ``ndim``, ``layout`` and memory ``space``.

    ``layout`` is ``"C"`` (C-contiguous: strides follow from the shape) or ``"A"`` (any
    strides, known at run time).  ``space`` is ``"global"`` (device memory: kernel
    arguments and their views), ``"shared"`` (``ember.shared``: per block), ``"local"``
    (``ember.local``: per thread) or ``"constant"`` (captured NumPy arrays).  ``shape`` is
    the static shape when it is known at compile time.

    An array with a static shape and C layout is a plain C pointer in generated code
    (:attr:`is_pointer`); every other array is a struct of a data pointer, the shape and
    (layout ``"A"``) the strides.
    """

    dtype: DType
    ndim: int
    layout: str = "C"
    space: str = "global"
    shape: tuple[int, ...] | None = None

    @property
    def is_pointer(self) -> bool:
        """Whether the array is a bare pointer (its shape and strides are constants)."""
        return self.shape is not None and self.layout == "C"

    def key(self) -> str:
        text = f"{self.dtype.name}[{self.ndim}d,{self.layout}"
        if self.space != "global" or self.shape is not None:
            dims = "x".join(map(str, self.shape)) if self.shape is not None else "?"
            text += f",{self.space}:{dims}"
        return text + "]"

    def describe(self) -> str:
        """The type as users read it: ``array(float32, 2d, strided)``."""
        layout = "contiguous" if self.layout == "C" else "strided"
        where = ""
        if self.space != "global":
            where = f", {_SPACE_WORDS[self.space]}"
            if self.shape is not None:
                where += f" {self.shape}"
        return f"array({self.dtype.name}, {self.ndim}d, {layout}{where})"


@record(frozen=True)
class Tuple(Type):
    """A fixed-length tuple of values (shapes, multi-indices)."""

    items: tuple[Type, ...] = field(default=())

    def key(self) -> str:
        inner = ",".join(t.key() for t in self.items)
        return f"({inner},)" if len(self.items) == 1 else f"({inner})"


@record(frozen=True)
class CompileTime(Type):
    """A compile-time argument: a dtype, a function (a device function to call) or a tuple
    of those.  It has no run-time value: the kernel is specialized on it (its identity for
    functions), and its code sees the object itself."""

    value: Any

    def key(self) -> str:
        return _static_key(self.value)


def _static_key(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ",".join(_static_key(i) for i in v) + ")"
    if isinstance(v, DType):
        return f"dtype:{v.name}"
    func = getattr(v, "__ember_py_func__", v)
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", type(func).__name__)
    return f"fn:{getattr(func, '__module__', '?')}.{name}"


@record(frozen=True)
class Void(Type):
    """No value: the result of a function without ``return value``."""

    def key(self) -> str:
        return "void"


VOID = Void()
_WEAK_KEYS = {"i": "pyint", "f": "pyfloat", "c": "pycomplex"}
_WEAK_WORDS = {"i": "Python int", "f": "Python float", "c": "Python complex"}
_SCALARS = {d: Scalar(d) for d in dtypes.ALL}
BOOL = _SCALARS[dtypes.bool_]
INT64 = _SCALARS[dtypes.int64]
FLOAT64 = _SCALARS[dtypes.float64]
COMPLEX128 = _SCALARS[dtypes.complex128]
WEAK_INT = Scalar(dtypes.int64, weak=True)
WEAK_FLOAT = Scalar(dtypes.float64, weak=True)
WEAK_COMPLEX = Scalar(dtypes.complex128, weak=True)


def scalar(dtype: DType) -> Scalar:
    """The strong scalar type of ``dtype``."""
    return _SCALARS[dtype]


# Here, not in frontend/values.py (the typer's), so that typing a launch's arguments from
# the cache (compiler/args.py) does not import the IR.
def as_dtype(obj: Any) -> DType | None:
    """The Ember dtype ``obj`` names when it is a dtype object or scalar type, else None."""
    if isinstance(obj, DType):
        return obj
    if obj is bool or obj is int or obj is float or obj is complex:
        return None  # Python's own types are functions in kernels: int(x), float(x)
    if isinstance(obj, type) or type(obj).__name__.startswith("dtype"):
        try:
            return dtypes.dtype(obj)
        except (TypeError, ValueError):
            return None
    return None


def describe(t: Type) -> str:
    """A type as it appears in error messages."""
    if isinstance(t, Scalar):
        if t.weak:
            return _WEAK_WORDS[t.dtype.kind]
        return t.dtype.name
    if isinstance(t, Array):
        return t.describe()
    if isinstance(t, Tuple):
        return "tuple(" + ", ".join(describe(i) for i in t.items) + ")"
    if isinstance(t, CompileTime):
        return f"compile-time {t.key()}"
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
    if a.is_complex or b.is_complex:  # complex parts as wide as the other's float needs
        cpx, other = (a, b) if a.is_complex else (b, a)
        part = other.real if other.is_inexact else _smallest_float_for_int(other)
        return dtypes.complex_of(promote_strong(cpx.real, part))
    if a.is_float and b.is_float:
        if a.itemsize == b.itemsize:  # float16 with bfloat16: float32 holds both
            return dtypes.float32
        return a if a.itemsize >= b.itemsize else b
    if a.is_float or b.is_float:
        flt, other = (a, b) if a.is_float else (b, a)
        if flt is dtypes.bfloat16:  # PyTorch's and JAX's rule: any integer gives bfloat16
            return flt
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
    * weak float with a strong float or complex: the strong type; with an int or bool:
      ``float64``;
    * weak complex with a strong complex: the strong type; with a float: the complex type of
      the same precision (``float32`` -> ``complex64``, the Array API's rule); with an int or
      bool: ``complex128``;
    * weak with weak: the highest kind of the two (complex > float > int).
    """
    if a.weak and b.weak:
        kinds = a.dtype.kind + b.dtype.kind
        return WEAK_COMPLEX if "c" in kinds else WEAK_FLOAT if "f" in kinds else WEAK_INT
    if not a.weak and not b.weak:
        return scalar(promote_strong(a.dtype, b.dtype))
    weak, strong = (a, b) if a.weak else (b, a)
    sk = strong.dtype.kind
    if weak.dtype.is_complex:
        if sk == "c":
            return strong
        return scalar(dtypes.complex_of(strong.dtype)) if sk == "f" else COMPLEX128
    if weak.dtype.is_float:
        return strong if sk in "fc" else FLOAT64
    return strong if sk != "b" else INT64


def float_result(t: Scalar) -> Scalar:
    """The float type NumPy's math ufuncs (sqrt, sin, true division...) give for ``t``
    (complex stays complex)."""
    if t.dtype.is_inexact:
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


@record(frozen=True)
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
    constant_bytes: int = 65536  # constant memory for captured tables (frontend/tables.py)

    def key(self) -> str:
        return (
            f"{self.dialect}:{self.arch or '-'}:w{self.warp_size}:{','.join(sorted(self.features))}"
            f":c{self.constant_bytes}"
        )

    def has(self, feature: str) -> bool:
        return feature in self.features

    def lacks(self, feature: str, what: str) -> str:
        """``"<device> has no <what> (<API name>)"``, for a missing ``feature``."""
        api = self.feature_names.get(feature)
        return f"{self.device} has no {what}" + (f" ({api})" if api else "")
