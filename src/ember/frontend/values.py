"""What the typer holds while typing: values that are not (yet) IR, and C names.

* :class:`TupleVal` - a tuple of values (shapes, multi-indices); flattened before the IR.
* :class:`Static` - a compile-time Python object: a module, a function, a dtype, an intrinsic.
* :class:`ArrayVal` - the result of ``ember.shared(...)`` / ``ember.local(...)``, declared
  when it gets a name.
* :func:`from_python` - a captured global / closure value as a typer value.
"""

from __future__ import annotations

import keyword
import re
import types as pytypes
from dataclasses import dataclass, field
from typing import Any

from ember import dtypes
from ember.frontend import ir
from ember.frontend.types import (
    BOOL,
    WEAK_COMPLEX,
    WEAK_FLOAT,
    WEAK_INT,
    Array,
    Scalar,
    Tuple,
    Type,
    scalar,
)


@dataclass(eq=False)
class TupleVal:
    items: list[Value]

    @property
    def type(self) -> Tuple:
        return Tuple(tuple(value_type(i) for i in self.items))


@dataclass(eq=False)
class Static:
    obj: Any


@dataclass(eq=False)
class ArrayVal:
    """An array to allocate: ``size`` holds the run-time extents of a dynamic shared array."""

    type: Array
    size: list = field(default_factory=list)


Value = ir.Expr | TupleVal | Static | ArrayVal


class Pending(Exception):
    """A local variable was read before any assignment to it has been typed (retry later)."""

    def __init__(self, name: str, node):
        super().__init__(name)
        self.name = name
        self.node = node


class NotRepresentable(Exception):
    """A Python object that cannot become a kernel value; ``message`` and ``hint``."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


def value_type(v: Value) -> Type | None:
    """The type of a runtime value; None for compile-time-only values."""
    if isinstance(v, ir.Expr):
        return v.type
    if isinstance(v, TupleVal):
        return v.type
    if isinstance(v, ArrayVal):
        return v.type
    return None


INT64_MIN, UINT64_MAX = -(1 << 63), (1 << 64) - 1


def from_python(obj: Any) -> Value:
    """A captured Python object as a typer value (numbers and tuples become constants)."""
    if isinstance(obj, bool):
        return ir.Const(BOOL, obj)
    if isinstance(obj, int):
        if not INT64_MIN <= obj <= UINT64_MAX:
            raise NotRepresentable(f"the integer {obj} does not fit in 64 bits")
        return ir.Const(WEAK_INT, obj)
    if isinstance(obj, float):
        return ir.Const(WEAK_FLOAT, obj)
    if isinstance(obj, complex):
        return ir.Const(WEAK_COMPLEX, obj)
    if isinstance(obj, tuple):
        return TupleVal([from_python(i) for i in obj])
    kind = getattr(getattr(obj, "dtype", None), "kind", None)
    if kind in ("b", "i", "u", "f", "c") and getattr(obj, "ndim", None) == 0 and not _is_array(obj):
        t = scalar(dtypes.dtype(obj.dtype))
        value = obj.item()
        return ir.Const(t, value)
    if _is_array(obj):  # NumPy arrays become tables (frontend/tables.py); these are not
        raise NotRepresentable(
            f"a kernel cannot capture a device array ({type(obj).__name__}) from its globals",
            "pass the array as a kernel argument instead (captured NumPy arrays are "
            "compiled in as read-only tables)",
        )
    if isinstance(obj, str | bytes | list | dict | set):
        raise NotRepresentable(
            f"a kernel cannot use a {type(obj).__name__} value",
            "kernels work on numbers, tuples of numbers and arrays",
        )
    return Static(obj)


def _is_array(obj: Any) -> bool:
    cls = type(obj)
    return cls.__name__ in ("ndarray", "Tensor") and hasattr(obj, "shape") and hasattr(obj, "dtype")


def is_plain_function(obj: Any) -> bool:
    return isinstance(obj, pytypes.FunctionType)


# ------------------------------------------------------------------------- C names

_C_WORDS = """
auto bool break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union
unsigned void volatile while class namespace template typename this new delete operator private
public protected virtual friend true false nullptr asm catch throw try using explicit mutable
export half kernel global local constant uchar ushort uint ulong size_t ptrdiff_t image2d_t
sampler_t event_t threadIdx blockIdx blockDim gridDim warpSize main printf min max abs
and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq typeid alignas alignof char8_t
char16_t char32_t wchar_t concept consteval constexpr constinit const_cast co_await co_return
co_yield decltype dynamic_cast reinterpret_cast static_cast static_assert noexcept requires
thread_local import module final override register _Bool _Complex _Imaginary complex
imaginary quad private read_only write_only read_write uniform pipe image1d_t image3d_t
image1d_array_t image2d_array_t image1d_buffer_t image2d_depth_t queue_t ndrange_t clk_event_t
reserve_id_t cl_mem_fence_flags intptr_t uintptr_t NULL INFINITY NAN synchronized reflexpr
atomic_cancel atomic_commit atomic_noexcept transaction_safe transaction_safe_dynamic
atomic_int atomic_uint atomic_long atomic_ulong atomic_float atomic_double atomic_flag
atomic_intptr_t atomic_uintptr_t atomic_size_t atomic_ptrdiff_t memory_order memory_scope
sampler image2d_msaa_t image2d_array_msaa_t image2d_msaa_depth_t image2d_array_depth_t
image2d_array_msaa_depth_t dim3 uint3 int3 float3 char1 uchar1 short1 ushort1 int1 uint1
long1 ulong1 float1 double1 longlong1 ulonglong1 longlong2 ulonglong2 longlong3 ulonglong3
longlong4 ulonglong4 int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t
""".split()
# Functions the generated code calls (math in both spellings, atomics, barriers, half
# loads and stores) and common OpenCL built-ins: a variable or function with one of these
# names would shadow or clash with them.
_BUILTIN_CALLS = """
sqrt rsqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh
tanh asinh acosh atanh erf erfc lgamma tgamma floor ceil trunc rint round fabs pow atan2
hypot copysign fmod fmin fmax isnan isinf isfinite fma mad clamp mix step smoothstep sign
dot cross length distance normalize select any all barrier mem_fence vload_half
vstore_half vstore_half_rte atomic_add atomic_sub atomic_min atomic_max atomic_xchg
atomic_cmpxchg atomic_and atomic_or atomic_xor atom_add atom_sub atom_min atom_max atom_xchg
atom_cmpxchg atom_and atom_or atom_xor atomicAdd atomicSub atomicMin atomicMax atomicExch
atomicCAS atomicAnd atomicOr atomicXor as_uint as_float as_ulong as_double convert_float
""".split()
RESERVED = (
    frozenset(_C_WORDS) | frozenset(keyword.kwlist) | frozenset(_BUILTIN_CALLS)
    | frozenset(f"{n}f" for n in _BUILTIN_CALLS)
)  # fmt: skip
_VECTOR = re.compile(r"^(char|uchar|short|ushort|int|uint|long|ulong|float|double|half)\d+$")


class Names:
    """Unique C identifiers within one function, derived from Python names."""

    def __init__(self, taken=()):
        self.taken: set[str] = set(taken)

    def fresh(self, base: str) -> str:
        """A new name from a Python name (made a safe C identifier)."""
        return self._unique(c_identifier(base))

    def internal(self, base: str) -> str:
        """A new name for a compiler temporary (``em_...``, already a safe identifier)."""
        return self._unique(base)

    def _unique(self, name: str) -> str:
        if name not in self.taken:
            self.taken.add(name)
            return name
        n = 1
        while f"{name}_{n}" in self.taken:
            n += 1
        self.taken.add(f"{name}_{n}")
        return f"{name}_{n}"


def c_identifier(name: str) -> str:
    """``name`` as a C identifier that cannot clash with C, CUDA, OpenCL or Ember names."""
    out = "".join(
        c if (c.isascii() and (c.isalnum() or c == "_")) else f"_u{ord(c):x}" for c in name
    )
    if out[:1].isdigit():
        out = "v" + out
    reserved_prefix = out.startswith(("em_", "__", "get_")) or (
        out[:1] == "_" and out[1:2].isupper()  # C reserves _Upper names
    )
    if out in RESERVED or _VECTOR.match(out) or reserved_prefix:
        out += "_"
    return out


def strong(t: Scalar) -> Scalar:
    return scalar(t.dtype)
