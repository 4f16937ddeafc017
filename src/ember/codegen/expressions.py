"""Expression printing for the emitter (a base class of :class:`~ember.codegen.emitter.Emitter`).

Integer semantics: arithmetic on explicitly typed signed integers (and on 8/16-bit types) is
printed through the unsigned type of the same width - ``(int)((unsigned int)a + (unsigned
int)b)`` - so overflow wraps as documented instead of being undefined behaviour in C.
Python-int arithmetic (indices, ``range`` counters, thread ids: weak ints, int64) is printed
plainly; like Python ints, it is assumed not to overflow 64 bits.

16-bit float values (float16, bfloat16: ``DType.is_narrow``) live in ``float`` registers; each
operation on them is computed in float and rounded to the 16-bit type (``em_f16_round``,
``em_bf16_round``), which is what NumPy does for float16.
"""

from __future__ import annotations

from ember import dtypes, lang
from ember.codegen import atomics
from ember.codegen.complexes import ComplexExpressions
from ember.dtypes import DType
from ember.frontend import ir
from ember.frontend.hoisting import hoisted_name
from ember.frontend.types import Array, Scalar

PRIMARY, UNARY, MUL, ADD, SHIFT, REL, EQ, BAND, BXOR, BOR, LAND, LOR, COND = (
    16, 15, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3
)  # fmt: skip
_INFIX = {
    "add": ("+", ADD), "sub": ("-", ADD), "mul": ("*", MUL), "truediv": ("/", MUL),
    "lshift": ("<<", SHIFT), "rshift": (">>", SHIFT), "bitand": ("&", BAND),
    "bitxor": ("^", BXOR), "bitor": ("|", BOR),
}  # fmt: skip
_COMPARE = {"<": REL, "<=": REL, ">": REL, ">=": REL, "==": EQ, "!=": EQ}
_SWAPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_WRAPPING = {"add", "sub", "mul", "lshift"}
# operations whose float result on a 16-bit float is already one (no rounding needed)
_NARROW_EXACT = {"fabs", "floor", "ceil", "trunc", "rint", "copysign", "fmin", "fmax"}
_MATH_NAMES = frozenset(lang.MATH1) | frozenset(lang.MATH2) | {"fma", "erfinv", "erfcinv", "ldexp"}
_WARP_OPS = ir.WARP_OPS | {"grid_sync", "block_any"}
_SIDE = {
    "global_id",
    "global_size",
    "thread_idx",
    "block_idx",
    "block_dim",
    "grid_dim",
    "warp_size",
    "lane_id",
}


def _wraps(t: Scalar) -> bool:
    """Whether C arithmetic on ``t`` needs the unsigned detour to wrap."""
    dt = t.dtype
    if not dt.is_integer or t.weak:
        return False
    return dt.is_signed or dt.itemsize < 4


class ExpressionEmitter(ComplexExpressions):
    """Expression rendering; needs ``self.d`` (dialect) and ``self.h`` (helpers)."""

    def expr(self, e: ir.Expr, min_prec: int = 0) -> str:
        text, prec = self.render(e)
        return f"({text})" if prec < min_prec else text

    def render(self, e: ir.Expr) -> tuple[str, int]:
        method = getattr(self, "r_" + type(e).__name__)
        return method(e)

    # ------------------------------------------------------------------ atoms
    def r_Const(self, e: ir.Const) -> tuple[str, int]:
        return self.literal(e.value, e.type)

    def literal(self, value, t: Scalar, typed: bool = False) -> tuple[str, int]:
        dt = t.dtype
        if dt.kind == "b":
            return ("true" if value else "false"), PRIMARY
        if dt.kind == "c":
            return self.complex_literal(value, dt)
        if dt.is_integer:
            return self._int_literal(int(value), dt, typed)
        return self._float_literal(float(value), dt)

    def _int_literal(self, v: int, dt: DType, typed: bool) -> tuple[str, int]:
        suffix = self.d.suffix.get(dt.name, "")
        if dt.name == "int64" and -(2**31) <= v < 2**31 and not typed:
            suffix = ""
        if dt.itemsize < 4 and typed:
            return f"({self.h.c(dt)}){v}", UNARY
        if v == -(2**63):
            return f"(-9223372036854775807{suffix} - 1)", PRIMARY
        if v == -(2**31) and dt.name == "int32":
            return "(-2147483647 - 1)", PRIMARY
        return f"{v}{suffix}", (UNARY if v < 0 else PRIMARY)

    def _float_literal(self, v: float, dt: DType) -> tuple[str, int]:
        key = "float64" if dt.name == "float64" else "float32"
        if key == "float64":
            self.h.features.add("fp64")
        if v != v:
            return self.d.nan[key], UNARY
        if v in (float("inf"), float("-inf")):
            text = self.d.inf[key]
            return (text, UNARY) if v > 0 else (f"-{text}", UNARY)
        text = repr(v)
        if "." not in text and "e" not in text:
            text += ".0"
        if key == "float32":
            text += self.d.suffix["float32"]
        return text, (UNARY if v < 0 or text.startswith("-") else PRIMARY)

    def r_Ref(self, e: ir.Ref) -> tuple[str, int]:
        return e.var.name, PRIMARY

    def r_Field(self, e: ir.Field) -> tuple[str, int]:
        return f"{self.expr(e.array, PRIMARY)}.{e.name}[{e.axis}]", PRIMARY

    # ------------------------------------------------------------------ memory
    def data(self, array: ir.Expr) -> str:
        """The element pointer of an array value."""
        if isinstance(array.type, Array) and array.type.is_pointer:
            return self.expr(array, PRIMARY)
        return f"{self.expr(array, PRIMARY)}.data"

    def r_View(self, e: ir.View) -> tuple[str, int]:
        """A sub-array: the base pointer moved by the offset, plus the view's extents and
        strides for a struct; a failed bounds check (checking on) starts it at offset 0."""
        ptr = self.data(e.array)
        if not (isinstance(e.offset, ir.Const) and e.offset.value == 0):
            offset = self.expr(e.offset, ADD + 1)
            cond = self.guard(e.checks) if e.checks else None
            if cond is not None:
                offset = f"({cond} ? {offset} : 0)"
            ptr = f"{ptr} + {offset}"
        t = e.type
        if t.is_pointer:
            return ptr, ADD
        args = [ptr, *(self.expr(x) for x in e.shape), *(self.expr(x) for x in e.strides)]
        return f"{self.make_struct(t)}({', '.join(args)})", PRIMARY

    def r_Load(self, e: ir.Load) -> tuple[str, int]:
        dt = e.array.type.dtype
        ptr, i = self.data(e.array), self.expr(e.index[0])
        if dt.is_narrow:
            load = self._narrow_memory(dt)[0]
            return self.guarded(e.checks, load.format(ptr=ptr, i=i), PRIMARY)
        if dt.name in self.d.storage and self.d.storage[dt.name] != self.d.types[dt.name]:
            return self.guarded(e.checks, f"({self.h.c(dt)}){ptr}[{i}]", UNARY)
        return self.guarded(e.checks, f"{ptr}[{i}]", PRIMARY)

    def store(self, s: ir.Store) -> str:
        dt = s.array.type.dtype
        ptr, i = self.data(s.array), self.expr(s.index[0])
        cond = self.guard(s.checks)
        guard = f"if ({cond}) " if cond else ""
        if dt.is_narrow:
            store = self._narrow_memory(dt)[1]
            return guard + store.format(ptr=ptr, i=i, v=self.unrounded(s.value, dt))
        return f"{guard}{ptr}[{i}] = {self.expr(s.value)};"

    def _narrow_memory(self, dt: DType) -> tuple[str, str]:
        """The load and store templates of 16-bit float ``dt``, their helpers defined."""
        load, store, helpers = self.d.narrow_memory(dt)
        for what in helpers:
            self.h.narrow(dt, what)
        return load, store

    def r_Atomic(self, e: ir.Atomic) -> tuple[str, int]:
        t = e.array.type
        helper = atomics.atomic(self.h, e.op, t.dtype, t.space)
        args = "".join(f", {self.expr(a)}" for a in e.args)
        text = f"{helper}(&{self.data(e.array)}[{self.expr(e.index[0])}]{args})"
        return self.guarded(e.checks, text, PRIMARY)

    # ------------------------------------------------------------------ operators
    def r_Binary(self, e: ir.Binary) -> tuple[str, int]:
        t = e.type
        if t.dtype.kind == "c":
            return self.complex_binary(e)
        if t.dtype.is_narrow and e.op not in ("min", "max"):
            return self.narrow_round(t.dtype, self._binary(e, t, as_float=True))
        return self._binary(e, t)

    def narrow_round(self, dt: DType, inner: tuple[str, int]) -> tuple[str, int]:
        """``em_f16_round(inner)`` (``em_bf16_round``): a float computation rounded to the
        nearest value of 16-bit float ``dt``."""
        return f"{self.h.narrow(dt, 'round')}({inner[0]})", PRIMARY

    def unrounded(self, e: ir.Expr, dt: DType) -> str:
        """A value for a store into 16-bit float ``dt``, which rounds by itself: the outer
        rounding is left out (rounding twice to the same precision changes nothing)."""
        if e.type.dtype is not dt:
            return self.expr(e)
        if isinstance(e, ir.Binary) and e.op not in ("min", "max"):
            return self._binary(e, e.type, as_float=True)[0]
        if (
            isinstance(e, ir.Intrinsic)
            and e.name not in _NARROW_EXACT
            and e.type.dtype.is_float
            and e.name in _MATH_NAMES
        ):
            return self._math(e, rounded=False)
        if isinstance(e, ir.Cast) and e.value.type.dtype.name == "float32":
            return self.expr(e.value)
        return self.expr(e)

    def _binary(self, e: ir.Binary, t: Scalar, as_float: bool = False) -> tuple[str, int]:
        dt = t.dtype
        calc = dtypes.float32 if as_float else dt
        a, b = e.left, e.right
        if e.op in ("floordiv", "mod"):
            helper = (self.h.floordiv if e.op == "floordiv" else self.h.mod)(calc)
            return f"{helper}({self.expr(a)}, {self.expr(b)})", PRIMARY
        if e.op in ("min", "max"):
            return f"{self.h.minmax(e.op, calc)}({self.expr(a)}, {self.expr(b)})", PRIMARY
        if e.op == "pow":
            helper = self.h.math("pow", calc) if calc.is_float else self.h.ipow(calc)
            return f"{helper}({self.expr(a)}, {self.expr(b)})", PRIMARY
        sym, prec = _INFIX[e.op]
        if _wraps(t) and e.op in _WRAPPING:
            return f"({self.h.c(dt)})({self._unsigned(e)[0]})", UNARY
        left = self._operand(a, prec, e.op)
        right = self._operand(b, prec + 1, e.op)
        return f"{left} {sym} {right}", prec

    def _unsigned(self, e: ir.Expr) -> tuple[str, int]:
        """``e`` computed in the unsigned type of its width: wrapping arithmetic without
        undefined behaviour; nested wrapping operations share one detour."""
        t = e.type
        u = self.d.unsigned[max(t.dtype.itemsize, 4)]
        if isinstance(e, ir.Binary) and e.op in _WRAPPING and _wraps(t):
            sym, prec = _INFIX[e.op]
            left = self._unsigned(e.left)
            # a shift's operand is parenthesized unless it is tighter than '+' (C compilers
            # warn about `a - b << 2`, although it means `(a - b) << 2`)
            tight = MUL if e.op == "lshift" else prec
            left_text = left[0] if left[1] >= tight else f"({left[0]})"
            if e.op == "lshift":
                return f"{left_text} << {self.expr(e.right, MUL)}", SHIFT
            right = self._unsigned(e.right)
            right_text = right[0] if right[1] > prec else f"({right[0]})"
            return f"{left_text} {sym} {right_text}", prec
        if isinstance(e, ir.Const):
            suffix = "u" if u == self.d.unsigned[4] else self.d.suffix["uint64"]
            return f"{int(e.value) % (1 << (8 * max(t.dtype.itemsize, 4)))}{suffix}", PRIMARY
        if (
            isinstance(e, ir.Cast)
            and isinstance(e.value.type, Scalar)
            and e.value.type.dtype.is_integer
        ):  # truncation commutes with wrapping
            return f"({u}){self.expr(e.value, UNARY)}", UNARY
        return f"({u}){self.expr(e, UNARY)}", UNARY

    def _operand(self, e: ir.Expr, prec: int, op: str) -> str:
        if op in ("lshift", "rshift"):
            prec = max(prec, MUL)  # `(a - b) << 2`, not `a - b << 2` (a compiler warning)
            if isinstance(e, ir.Const):
                text, p = self.literal(e.value, e.type, typed=True)
                return f"({text})" if p < prec else text
        if op in ("bitand", "bitor", "bitxor"):
            prec = max(prec, SHIFT + 1)  # parenthesize mixed bitwise operations for clarity
        return self.expr(e, prec)

    def r_Compare(self, e: ir.Compare) -> tuple[str, int]:
        if e.left.type.dtype.kind == "c":
            return self.complex_compare(e)
        kinds = e.left.type.dtype.kind + e.right.type.dtype.kind
        if kinds in ("iu", "ui"):  # an int64 with a uint64, exactly (frontend/operators.py)
            swap = kinds == "ui"
            a, b = (e.right, e.left) if swap else (e.left, e.right)
            op = _SWAPPED[e.op] if swap else e.op
            return f"{self.h.mixed_compare(op)}({self.expr(a)}, {self.expr(b)})", PRIMARY
        prec = _COMPARE[e.op]
        return f"{self.expr(e.left, prec)} {e.op} {self.expr(e.right, prec + 1)}", prec

    def r_Logical(self, e: ir.Logical) -> tuple[str, int]:
        sym, prec = ("&&", LAND) if e.op == "and" else ("||", LOR)
        return f"{self.expr(e.left, prec)} {sym} {self.expr(e.right, prec + 1)}", prec

    def r_Unary(self, e: ir.Unary) -> tuple[str, int]:
        t = e.type
        x = e.operand
        if e.op == "not":
            return f"!{self.expr(x, UNARY)}", UNARY
        if e.op == "invert":
            text = f"~{self.expr(x, UNARY)}"
            if t.dtype.itemsize < 4:
                return f"({self.h.c(t.dtype)})({text})", UNARY
            return text, UNARY
        if _wraps(t):
            u = self.d.unsigned[max(t.dtype.itemsize, 4)]
            return f"({self.h.c(t.dtype)})(({u})0 - {self._unsigned(x)[0]})", UNARY
        if t.dtype.kind == "c":
            return self.complex_negative(e)
        operand = self.expr(x, UNARY)
        if operand.startswith("-"):  # -(-x) as "--x" is C's decrement (found by the fuzz test)
            operand = f"({operand})"
        return f"-{operand}", UNARY

    def r_Cast(self, e: ir.Cast) -> tuple[str, int]:
        if e.site is not None:
            return self.checked_cast(e)
        src, dst = e.value.type, e.type
        if "c" in (src.dtype.kind, dst.dtype.kind):
            return self.complex_cast(e)
        value = self.expr(e.value, UNARY)
        if dst.dtype.is_narrow and src.dtype is not dst.dtype:
            if src.dtype.name == "float64":
                return f"{self.h.narrow(dst.dtype, 'round_d')}({self.expr(e.value)})", PRIMARY
            # a float register already (float32, the other 16-bit type), or converted
            arg = self.expr(e.value) if src.dtype.is_float else f"(float){value}"
            return f"{self.h.narrow(dst.dtype, 'round')}({arg})", PRIMARY
        if self.h.c(src.dtype) == self.h.c(dst.dtype):
            return self.render(e.value)
        if src.dtype.is_float and _narrow_via_int64(dst.dtype):
            # NumPy converts through a 64-bit integer (so -1.0 -> uint16 is 65535); a direct
            # C cast is unspecified out of range and saturates on GPUs
            return f"({self.h.c(dst.dtype)})({self.h.c(dtypes.int64)}){value}", UNARY
        return f"({self.h.c(dst.dtype)}){value}", UNARY

    def r_Select(self, e: ir.Select) -> tuple[str, int]:
        c = self.expr(e.cond, LOR)
        return f"{c} ? {self.expr(e.if_true, COND)} : {self.expr(e.if_false, COND)}", COND

    # ------------------------------------------------------------------ calls
    def r_Call(self, e: ir.Call) -> tuple[str, int]:
        args = [self.expr(a) for a in e.args] + [f"&{v.name}" for v in e.outs]
        args += [hoisted_name(self.fn, v) for v in e.function.hoisted]
        if e.function.can_fail:
            args.append("em_c")
        args += self.d.call_hidden
        return f"{e.function.name}({', '.join(args)})", PRIMARY

    def r_Intrinsic(self, e: ir.Intrinsic) -> tuple[str, int]:
        name = e.name
        if name == "complex" or any(
            isinstance(a.type, Scalar) and a.type.dtype.kind == "c" for a in e.args
        ):
            return self.complex_intrinsic(e)
        if name in _SIDE:
            return self._index(e), UNARY
        if name == "barrier":
            return self.d.barrier, PRIMARY
        if name == "threadfence":
            return self.d.fence, PRIMARY
        if name in _WARP_OPS:
            return self.warp_op(e), PRIMARY
        if name in ("popc", "clz", "ffs", "brev", "mulhi"):
            dt = e.args[0].type.dtype
            args = ", ".join(self.expr(a) for a in e.args)
            return f"({self.h.c(e.type.dtype)}){self.h.bit_op(name, dt)}({args})", UNARY
        if name in ("frexp_m", "frexp_e"):
            return f"{self._frexp(name, e.args[0].type.dtype)}({self.expr(e.args[0])})", PRIMARY
        if name == "bitcast":
            return self._bitcast(e.args[0], e.type.dtype), PRIMARY
        if name in ("isnan", "isinf", "isfinite"):
            text = self.d.predicate.format(f=name, x=self.expr(e.args[0]))
            return text, (PRIMARY if text.startswith(name) else UNARY)
        if name == "abs":
            if not e.type.dtype.is_signed:
                return self.render(e.args[0])
            return f"{self.h.abs_int(e.type.dtype)}({self.expr(e.args[0])})", PRIMARY
        return self._math(e), PRIMARY

    def _index(self, e: ir.Intrinsic) -> str:
        axis = e.args[0].value if e.args else 0
        if e.name in ("lane_id", "warp_size"):
            emulated = self.warp_index(e.name)
            if emulated is not None:
                return emulated
            self.h.features.add("subgroups")
        return self.d.index_expr(self.h, e.name, axis)

    def _bitcast(self, x: ir.Expr, to: DType) -> str:
        """``x``'s bits as a ``to`` (same size): integers convert (two's complement),
        floats go through the dialect's float-bits functions; 16-bit floats, which live in
        float registers, through their 16-bit storage form."""
        src, text = x.type.dtype, self.expr(x)
        size = src.itemsize
        if src.is_float:  # to its bits, as an unsigned integer of its size
            if src.is_narrow:
                text = f"{self.h.narrow(src, 'store')}({text})"
            else:
                text = f"{self.d.cas_bits[size][1]}({text})"
            text = f"({self.h.c(dtypes.dtype(f'uint{8 * size}'))})({text})"
        if not to.is_float:
            return f"(({self.h.c(to)}){text})"
        if to.is_narrow:
            return f"{self.h.narrow(to, 'load')}(({self.h.c(dtypes.uint16)}){text})"
        bits, _, from_bits, _ = self.d.cas_bits[size]
        return f"{from_bits}(({bits})({text}))"

    def _frexp(self, name: str, dt) -> str:
        """``em_frexp_m/e_<t>(x)``: the mantissa or the exponent of ``frexp``."""
        calc = dtypes.float64 if dt.name == "float64" else dtypes.float32
        helper = f"em_{name}_{calc.name}"

        def make() -> str:
            t, i32 = self.h.c(calc), self.h.c(dtypes.int32)
            result = "m" if name == "frexp_m" else "e"
            frexp = self.h.math("frexp", calc)
            body = f"    {i32} e;\n    {t} m = {frexp}(x, &e);\n    return {result};"
            return self.h.fn(t if name == "frexp_m" else i32, helper, f"{t} x", body)

        return self.h.use(helper, make)

    def _math(self, e: ir.Intrinsic, rounded: bool = True) -> str:
        dt = e.type.dtype
        args = ", ".join(self.expr(a) for a in e.args)
        text = f"{self.h.math(e.name, dt)}({args})"
        if rounded and dt.is_narrow and e.name not in _NARROW_EXACT:
            return self.narrow_round(dt, (text, PRIMARY))[0]
        return text


def _narrow_via_int64(dst) -> bool:
    """Integer types NumPy fills from floats through int64: unsigned up to 32 bits, int8/16."""
    return dst.kind == "u" and dst.itemsize <= 4 or dst.kind == "i" and dst.itemsize <= 2
