"""Small C helper functions the emitter asks for by name, written once for every dialect.

Python/NumPy semantics that C lacks live here: floor division and modulo, integer power,
``min``/``max`` that keep the first argument on ties and NaN, wrapping ``abs``, 16-bit float
conversions and rounding (float16: the dialect's; bfloat16: bit arithmetic, the same on
every dialect), atomics that a dialect has no instruction for (compare-and-swap loops), warp
reductions.  :class:`Helpers` collects each helper once, in dependency order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ember.dtypes import DType

if TYPE_CHECKING:  # the dialect classes use these helpers
    from ember.codegen.dialects.base import Dialect

SHORT = {
    "bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
    "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16",
    "float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128",
}  # fmt: skip


_OP_NAMES = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


class Helpers:
    """The helper functions one program needs, each defined once."""

    def __init__(self, dialect: Dialect):
        self.d = dialect
        self.defs: dict[str, str] = {}
        self.typedefs: dict[str, str] = {}  # value types (complex numbers), before all else
        self.features: set[str] = set()

    def use(self, name: str, make: Callable[[], str]) -> str:
        if name not in self.defs:
            text = make()  # may itself use other helpers, which are then defined first
            self.defs[name] = text
        return name

    def text(self) -> str:
        return "\n\n".join(self.defs.values())

    # ------------------------------------------------------------------ spelling
    def c(self, dt: DType) -> str:
        if dt.name == "float64":
            self.features.add("fp64")
        if dt.kind == "c":
            from ember.codegen.complexes import ctype

            return ctype(self, dt)
        return self.d.types[dt.name]

    def unsigned(self, dt: DType) -> str:
        return self.d.unsigned[max(dt.itemsize, 4)]

    def fn(self, ret: str, name: str, params: str, body: str) -> str:
        return f"{self.d.device} inline {ret} {name}({params}) {{\n{body}\n}}"

    def math(self, name: str, dt: DType) -> str:
        """The C name of math function ``name`` for floats of ``dt`` (a helper of
        :mod:`ember.codegen.mathlib` where the dialect lacks the function)."""
        if name in self.d.missing_math:
            return self._missing_math(name, dt)
        base = self.d.math_names.get(name, name)
        if self.d.float_suffix_names and (dt.is_narrow or dt.name == "float32"):
            return base + "f"
        return base

    def _missing_math(self, name: str, dt: DType) -> str:
        from ember import dtypes
        from ember.codegen import mathlib

        calc = dtypes.float64 if dt.name == "float64" else dtypes.float32
        helper = f"em_{name}_{SHORT[calc.name]}"
        if name in ("erfinv", "erfcinv"):
            return self.use(helper, lambda: mathlib.erfinv(self, helper, calc, name == "erfcinv"))
        raise AssertionError(f"no portable {name} in codegen/mathlib.py")

    def bit_op(self, name: str, dt: DType) -> str:
        """The C function of ``popc clz ffs brev mulhi`` on 32/64-bit ``dt``: the dialect's,
        else a helper of :mod:`ember.codegen.mathlib`."""
        from ember.codegen import mathlib

        wide = dt.itemsize == 8
        spelled = self.d.bit_ops.get(name)
        if spelled is not None:
            return spelled[wide] if name != "mulhi" or dt.kind == "i" else spelled[2 + wide]
        helper = f"em_{name}_{SHORT[dt.name]}"
        if name == "brev":
            return self.use(helper, lambda: mathlib.brev(self, helper, dt))
        clz = self.bit_op("clz", dt)
        return self.use(helper, lambda: mathlib.ffs(self, helper, dt, clz))

    # ------------------------------------------------------------------ arithmetic
    def floordiv(self, dt: DType) -> str:
        name = f"em_floordiv_{SHORT[dt.name]}"
        return self.use(name, lambda: self._floordiv(name, dt))

    def _floordiv(self, name: str, dt: DType) -> str:
        t = self.c(dt)
        if dt.is_float:
            fmod, floor, copysign = (self.math(f, dt) for f in ("fmod", "floor", "copysign"))
            body = (
                f"    // Python/NumPy floor division: round the quotient toward -infinity\n"
                f"    if (b == 0) return a / b;\n"
                f"    {t} m = {fmod}(a, b);\n"
                f"    {t} q = (a - m) / b;\n"
                f"    if (m != 0 && ((b < 0) != (m < 0))) q -= 1;\n"
                f"    if (q == 0) return {copysign}(({t})0, a / b);\n"
                f"    {t} f = {floor}(q);\n"
                f"    return (q - f > ({t})0.5) ? f + 1 : f;"
            )
        elif dt.is_signed:
            u = self.unsigned(dt)
            body = (
                "    // Python/NumPy: floor, and x // 0 == 0; x // -1 wraps instead of trapping\n"
                "    if (b == 0) return 0;\n"
                f"    if (b == -1) return ({t})(({u})0 - ({u})a);\n"
                f"    {t} q = a / b;\n"
                "    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n"
                "    return q;"
            )
        else:
            body = "    return b == 0 ? 0 : a / b;  // NumPy: x // 0 == 0"
        return self.fn(t, name, f"{t} a, {t} b", body)

    def mod(self, dt: DType) -> str:
        name = f"em_mod_{SHORT[dt.name]}"
        return self.use(name, lambda: self._mod(name, dt))

    def _mod(self, name: str, dt: DType) -> str:
        t = self.c(dt)
        if dt.is_float:
            fmod, copysign = self.math("fmod", dt), self.math("copysign", dt)
            body = (
                "    // Python/NumPy modulo: the result has the sign of b\n"
                f"    {t} m = {fmod}(a, b);\n"
                "    if (b == 0) return m;\n"
                "    if (m != 0) { if ((b < 0) != (m < 0)) m += b; }\n"
                f"    else m = {copysign}(({t})0, b);\n"
                "    return m;"
            )
        elif dt.is_signed:
            body = (
                "    // Python/NumPy: the sign of b, and x % 0 == 0\n"
                "    if (b == 0 || b == -1) return 0;\n"
                f"    {t} r = a % b;\n"
                "    if (r != 0 && ((r < 0) != (b < 0))) r += b;\n"
                "    return r;"
            )
        else:
            body = "    return b == 0 ? 0 : a % b;  // NumPy: x % 0 == 0"
        return self.fn(t, name, f"{t} a, {t} b", body)

    def ipow(self, dt: DType) -> str:
        name = f"em_pow_{SHORT[dt.name]}"
        return self.use(name, lambda: self._ipow(name, dt))

    def _ipow(self, name: str, dt: DType) -> str:
        t, u = self.c(dt), self.unsigned(dt)
        negative = ""
        if dt.is_signed:
            negative = "    if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);\n"
        body = (
            "    // integer power by squaring; wraps like NumPy\n"
            f"{negative}"
            f"    {u} r = 1, x = ({u})b;\n"
            "    while (e > 0) { if (e & 1) r *= x; x *= x; e >>= 1; }\n"
            f"    return ({t})r;"
        )
        return self.fn(t, name, f"{t} b, {t} e", body)

    def minmax(self, op: str, dt: DType) -> str:
        name = f"em_{op}_{SHORT[dt.name]}"
        t = self.c(dt)
        cmp = "<" if op == "min" else ">"
        body = f"    return (b {cmp} a) ? b : a;  // Python's {op}(): the first wins ties and NaN"
        return self.use(name, lambda: self.fn(t, name, f"{t} a, {t} b", body))

    def mixed_compare(self, op: str) -> str:
        """``em_<op>_i64_u64(a, b)``: ``a <op> b`` for an int64 ``a`` and a uint64 ``b``,
        exactly (NumPy 2's comparison; C would convert ``a`` to unsigned)."""
        name = f"em_{_OP_NAMES[op]}_i64_u64"
        i64, u64, b = self.d.types["int64"], self.d.types["uint64"], self.d.types["bool"]
        negative = "true" if op in ("<", "<=", "!=") else "false"  # b >= 0 > a
        body = f"    return a < 0 ? {negative} : ({u64})a {op} b;"
        return self.use(name, lambda: self.fn(b, name, f"{i64} a, {u64} b", body))

    def abs_int(self, dt: DType) -> str:
        name = f"em_abs_{SHORT[dt.name]}"
        t, u = self.c(dt), self.unsigned(dt)
        body = f"    return x < 0 ? ({t})(({u})0 - ({u})x) : x;  // abs(min) wraps, as in NumPy"
        return self.use(name, lambda: self.fn(t, name, f"{t} x", body))

    # ------------------------------------------------------------------ 16-bit floats
    def narrow(self, dt: DType, what: str) -> str:
        """Helper ``what`` of 16-bit float ``dt`` (values live in ``float`` registers):
        ``round`` (a float to the nearest ``dt`` value, as a float), ``round_d`` (the same
        from a double), and ``load``/``store`` (the 16 bits <-> float; float16: those of
        the dialect's ``f16_helpers``)."""
        name = f"em_{SHORT[dt.name]}_{what}"
        if dt.name == "float16":
            return self.use(name, lambda: self.d.f16_helper(self, name, what))
        return self.use(name, lambda: self._bf16(dt, name, what))

    def _bf16(self, dt: DType, name: str, what: str) -> str:
        """bfloat16 is the top half of a float32: loading shifts the bits up, storing rounds
        to nearest even in integer arithmetic (no header, no PTX: any device, any dialect)."""
        bits, to_bits, from_bits, _ = self.d.cas_bits[4]
        u32, u16, f32 = self.d.unsigned[4], self.d.types["uint16"], self.d.types["float32"]
        if what == "load":
            body = f"    return {from_bits}(({bits})(({u32})h << 16));"
            return self.fn(f32, name, f"{u16} h", body)
        if what == "store":
            body = (
                f"    {u32} u = ({u32}){to_bits}(x);\n"
                f"    if ((u & 0x7fffffffu) > 0x7f800000u) return ({u16})((u >> 16) | 0x40u);"
                "  // NaN: stays a quiet NaN\n"
                f"    return ({u16})((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);"
                "  // round to nearest, ties to even"
            )
            return self.fn(u16, name, f"{f32} x", body)
        load, store = self.narrow(dt, "load"), self.narrow(dt, "store")
        if what == "round":
            return self.fn(f32, name, f"{f32} x", f"    return {load}({store}(x));")
        self.features.add("fp64")  # round_d: through float32, as ml_dtypes and PyTorch do
        return self.fn(f32, name, "double x", f"    return {load}({store}(({f32})x));")
