"""Call typing (a mixin of :class:`~ember.frontend.typer.FunctionTyper`).

A call in a kernel is one of:

* a dtype (``ember.float32(x)``, ``numpy.int8(x)``): a cast;
* a Python builtin (``abs min max int float bool round len pow divmod``), a ``math``
  function, or an Ember kernel function (:mod:`ember.lang`): an intrinsic;
* any other plain Python function: a *device function*, compiled for the argument types
  of this call (specializations are shared by calls with the same types).

Python's semantics are kept where they are observable: ``int()``, ``round()``,
``math.floor()`` return (weak) ints; ``min``/``max`` return the first argument on ties and when
comparisons are false (NaN).  ``ember.floor`` and the other math functions follow NumPy:
integers become the smallest float that holds them (int8 -> float16, int16 -> float32,
int32/int64 -> float64; Python ints -> Python floats), and float16 is computed in float32
and rounded.
"""

from __future__ import annotations

import ast

from ember.errors import KernelSyntaxError, KernelTypeError
from ember.frontend import ir
from ember.frontend.bits import BitsTyper
from ember.frontend.complexes import ComplexTyper, is_complex
from ember.frontend.intrinsics import MATH1, MATH2, PREDICATES, intrinsic_name
from ember.frontend.operators import OperatorError, cast, minmax, truth
from ember.frontend.parallel import ParallelTyper
from ember.frontend.passes import is_pure
from ember.frontend.types import (
    BOOL,
    VOID,
    WEAK_FLOAT,
    WEAK_INT,
    Array,
    CompileTime,
    Scalar,
    Tuple,
    as_dtype,
    describe,
    float_result,
    promote,
    scalar,
)
from ember.frontend.values import Static, TupleVal, Value, is_plain_function


class CallTyper(ComplexTyper, BitsTyper, ParallelTyper):
    """Call visitors: casts, intrinsics and device functions."""

    def ex_Call(self, node: ast.Call) -> Value:
        method = self.scalar_method(node)  # z.conjugate()
        if method is not None:
            return method
        callee = self.value(node.func)
        if not isinstance(callee, Static):
            raise self.fail(KernelTypeError, "this value is not callable", node.func)
        if any(k.arg is None for k in node.keywords):
            raise self.fail(
                KernelSyntaxError, "'**kwargs' in calls is not supported in kernels", node
            )
        obj = callee.obj
        if any(isinstance(a, ast.Starred) for a in node.args):
            inner = getattr(obj, "__ember_py_func__", obj)
            if not is_plain_function(inner) or intrinsic_name(obj) is not None:
                raise self.fail(
                    KernelSyntaxError, "'*' in a call works for device functions only", node,
                    "pass the items one by one",
                )  # fmt: skip
        name = intrinsic_name(obj)
        if name is not None:
            return self.intrinsic(name, node)
        if obj is range:
            raise self.fail(KernelSyntaxError, "range() can only be used in a for loop", node)
        dtype = as_dtype(obj)
        if dtype is not None:
            return self._dtype_call(dtype, node)
        obj = getattr(obj, "__ember_py_func__", obj)  # an @ember.kernel called from a kernel
        if is_plain_function(obj):
            return self.device_call(obj, node)
        raise self.fail(
            KernelTypeError, f"a kernel cannot call {type(obj).__name__} "
            f"'{getattr(obj, '__name__', obj)}'", node,
            "kernels can call plain Python functions, math functions, dtypes, builtins such "
            "as abs/min/max, and ember's kernel functions",
        )  # fmt: skip

    # ------------------------------------------------------------------ arguments
    def args_of(self, node: ast.Call, names: tuple[str, ...], required: int) -> list[Value]:
        """The call's arguments bound to ``names`` (positional or keyword); missing optional
        arguments are None."""
        what = _call_name(node)
        if len(node.args) > len(names):
            raise self.fail(
                KernelTypeError,
                f"{what}() takes at most {len(names)} arguments, got {len(node.args)}",
                node,
            )
        bound: list[ast.expr | None] = [*node.args, *[None] * (len(names) - len(node.args))]
        for kw in node.keywords:
            if kw.arg not in names or bound[names.index(kw.arg)] is not None:
                raise self.fail(
                    KernelTypeError,
                    f"{what}() got an unexpected or repeated argument '{kw.arg}'",
                    kw,
                )
            bound[names.index(kw.arg)] = kw.value
        missing = [n for n, b in zip(names[:required], bound, strict=False) if b is None]
        if missing:
            raise self.fail(KernelTypeError, f"{what}() is missing argument '{missing[0]}'", node)
        return [None if b is None else self.value(b) for b in bound]

    def scalar_arg(self, v: Value, node: ast.AST, what: str) -> ir.Expr:
        e = self.scalar_of(v, node)
        if not isinstance(e.type, Scalar):
            raise self.fail(KernelTypeError, f"{what} needs a number, got {describe(e.type)}", node)
        return e

    def const_int(self, v: Value | None, node: ast.AST, what: str, default: int) -> int:
        if v is None:
            return default
        if not (isinstance(v, ir.Const) and isinstance(v.value, int)):
            raise self.fail(KernelTypeError, f"{what} must be a constant integer", node)
        return int(v.value)

    # ------------------------------------------------------------------ dispatch
    def intrinsic(self, name: str, node: ast.Call) -> Value:
        if name in MATH1 or name in MATH2 or name in ("fma", "erfinv", "erfcinv"):
            return self._math(name, node)
        if name in PREDICATES:
            return self._predicate(name, node)
        if name.startswith("py_"):
            return getattr(self, "_" + name)(node)
        if name.startswith("cmath_"):
            return self.cmath(name[len("cmath_") :], node)
        if name.startswith("atomic_"):
            return self.atomic(name[len("atomic_") :], node)
        method = getattr(self, "_k_" + name, None) or getattr(self, "warp_" + name, None)
        if method is None:
            raise self.fail(KernelSyntaxError, f"ember.{name} cannot be called like this", node)
        return method(node)

    def _dtype_call(self, dtype, node: ast.Call) -> Value:
        if dtype.is_complex:
            return self.complex_dtype_call(dtype, node)
        (v,) = self.args_of(node, ("value",), 0)
        t = scalar(dtype)
        if v is None:
            return ir.Const(t, 0)
        e = self.scalar_arg(v, node, f"{dtype.name}()")
        if isinstance(e.type, Scalar) and e.type.dtype.kind != "b" and t.dtype.kind == "b":
            return truth(e)
        try:
            return self.checked(cast(e, t), node, e)
        except OperatorError as exc:
            raise self.type_error(exc, node) from None

    # ------------------------------------------------------------------ math
    def _math(self, name: str, node: ast.Call) -> Value:
        arity = 3 if name == "fma" else 2 if name in MATH2 else 1
        args = [
            self.scalar_arg(a, node, f"{name}()")
            for a in self.args_of(node, ("x", "y", "z")[:arity], arity)
        ]
        t = args[0].type
        for a in args[1:]:
            t = promote(t, a.type)
        t = float_result(t)
        if is_complex(t):
            return self.complex_math(name, args, t, node)
        return ir.Intrinsic(t, name, [cast(a, t, check=False) for a in args])

    def _predicate(self, name: str, node: ast.Call) -> Value:
        (x,) = self.args_of(node, ("x",), 1)
        e = self.scalar_arg(x, node, f"{name}()")
        if not e.type.dtype.is_inexact:
            return ir.Const(BOOL, name == "isfinite")
        return ir.Intrinsic(BOOL, name, [e])

    def _float_then_int(self, name: str, node: ast.Call, x: Value | None = None) -> Value:
        if x is None:
            (x,) = self.args_of(node, ("x",), 1)
        e = self.scalar_arg(x, node, f"{name}()")
        if e.type.dtype.is_float:
            e = ir.Intrinsic(e.type, name, [e])
        try:
            return self.checked(cast(e, WEAK_INT, check=False), node, e)
        except OperatorError as exc:  # complex
            raise self.type_error(exc, node) from None

    def _py_floor(self, node):
        return self._float_then_int("floor", node)

    def _py_ceil(self, node):
        return self._float_then_int("ceil", node)

    def _py_trunc(self, node):
        return self._float_then_int("trunc", node)

    def _py_round(self, node: ast.Call) -> Value:
        x, ndigits = self.args_of(node, ("number", "ndigits"), 1)
        if ndigits is not None:
            raise self.fail(
                KernelSyntaxError,
                "round() with ndigits is not supported in kernels",
                node,
                "use ember.rint(x * 10**n) / 10**n",
            )
        return self._float_then_int("rint", node, x)

    def _py_log(self, node: ast.Call) -> Value:
        x, base = self.args_of(node, ("x", "base"), 1)
        e = self.scalar_arg(x, node, "math.log()")
        t = float_result(e.type)
        result = ir.Intrinsic(t, "log", [cast(e, t, check=False)])
        if base is None:
            return result
        b = self.scalar_arg(base, node, "math.log()")
        bt = float_result(b.type)
        return self.arith("truediv", result, ir.Intrinsic(bt, "log", [cast(b, bt)]), node)

    def _py_abs(self, node: ast.Call) -> Value:
        (x,) = self.args_of(node, ("x",), 1)
        e = self.scalar_arg(x, node, "abs()")
        if e.type.dtype.kind == "b":
            return e
        if is_complex(e.type):
            return self.complex_abs(e)
        return ir.Intrinsic(e.type, "fabs" if e.type.dtype.is_float else "abs", [e])

    def _py_min(self, node: ast.Call) -> Value:
        return self._minmax("min", node)

    def _py_max(self, node: ast.Call) -> Value:
        return self._minmax("max", node)

    def _minmax(self, op: str, node: ast.Call) -> Value:
        if node.keywords:
            raise self.fail(
                KernelSyntaxError, f"{op}() with keywords is not supported in kernels", node
            )
        values = [self.value(a) for a in node.args]
        if len(values) == 1 and isinstance(values[0], TupleVal):
            values = values[0].items
        if len(values) < 2:
            raise self.fail(
                KernelTypeError, f"{op}() needs at least two numbers (or a tuple)", node
            )
        result = self.scalar_arg(values[0], node, f"{op}()")
        try:
            for v in values[1:]:
                if not is_pure(result):
                    result = self.spill(result, node)
                result = minmax(op, result, self.scalar_arg(v, node, f"{op}()"))
        except OperatorError as exc:
            raise self.type_error(exc, node) from None
        return result

    def _py_int(self, node: ast.Call) -> Value:
        return self._py_convert(node, WEAK_INT, "int")

    def _py_float(self, node: ast.Call) -> Value:
        return self._py_convert(node, WEAK_FLOAT, "float")

    def _py_convert(self, node: ast.Call, t: Scalar, what: str) -> Value:
        (x,) = self.args_of(node, ("x",), 0)
        if x is None:
            return ir.Const(t, 0)
        e = self.scalar_arg(x, node, f"{what}()")
        try:
            return self.checked(cast(e, t, check=False), node, e)
        except OperatorError as exc:  # complex
            raise self.type_error(exc, node) from None

    def _py_bool(self, node: ast.Call) -> Value:
        (x,) = self.args_of(node, ("x",), 0)
        if x is None:
            return ir.Const(BOOL, False)
        return truth(self.scalar_arg(x, node, "bool()"))

    def _py_len(self, node: ast.Call) -> Value:
        (x,) = self.args_of(node, ("obj",), 1)
        if isinstance(x, TupleVal):
            return ir.Const(WEAK_INT, len(x.items))
        e = self.scalar_of(x, node)
        if isinstance(e.type, Array) and e.type.ndim > 0:
            return self.extent(e, 0)
        raise self.fail(KernelTypeError, f"len() of {describe(e.type)}", node)

    def _py_pow(self, node: ast.Call) -> Value:
        base, exp, mod = self.args_of(node, ("base", "exp", "mod"), 2)
        if mod is not None:
            raise self.fail(KernelSyntaxError, "pow() with a modulus is not supported", node)
        return self.arith("pow", base, exp, node)

    def _py_divmod(self, node: ast.Call) -> Value:
        a, b = self.args_of(node, ("a", "b"), 2)
        a, b = (
            self.spill(v, node) if not is_pure(v) else v
            for v in (self.scalar_of(a, node), self.scalar_of(b, node))
        )
        return TupleVal([self.arith("floordiv", a, b, node), self.arith("mod", a, b, node)])

    # ------------------------------------------------------------------ device functions
    def device_call(self, func, node: ast.Call) -> Value:
        cap = self._capture_callee(func, node)
        values = self._bind_device_args(cap, func, node)
        types = [self.arg_type_of(v, node) for v in values]
        fn = self.ctx.specialize(func, tuple(types), self.loc(node))
        if fn not in self.callees:
            self.callees.append(fn)
        args = [x for v, t in zip(values, types, strict=True) for x in self.flatten_to(v, t, node)]
        ret = fn.return_type
        if isinstance(ret, Tuple):
            outs = [self._out_var(t) for t in fn.returns]
            self._no_spill_check(node)
            self.emit(ir.Eval(self.loc(node), ir.Call(VOID, fn, args, outs)))
            return _rebuild(ret, iter(outs))
        return ir.Call(ret, fn, args)

    def _out_var(self, t) -> ir.Variable:
        var = ir.Variable(self.names.internal("em_ret"), t, "ret")
        self.locals.append(var)
        return var

    def _no_spill_check(self, node: ast.AST) -> None:
        if self.no_spill:
            raise self.fail(
                KernelSyntaxError,
                f"a call returning a tuple cannot be inside {self.no_spill}",
                node,
                "call it on the line before",
            )

    def _capture_callee(self, func, node: ast.Call):
        try:
            return self.ctx.capture(func)
        except KernelSyntaxError as exc:
            if getattr(exc, "line", None) is not None:
                raise
            raise self.fail(KernelSyntaxError, str(exc), node) from None

    def arg_type_of(self, v: Value, node: ast.AST):
        """The type a device function is specialized on for argument ``v``: its run-time
        type, or :class:`CompileTime` for functions, dtypes and tuples of them."""
        if isinstance(v, Static):
            if (
                is_plain_function(getattr(v.obj, "__ember_py_func__", v.obj))
                or as_dtype(v.obj) is not None
                or intrinsic_name(v.obj) is not None
            ):
                return CompileTime(v.obj)
        if isinstance(v, TupleVal) and any(_static_item(i) for i in v.items):
            if all(_static_item(i) for i in v.items):
                return CompileTime(_static_value(v))
            return Tuple(tuple(self.arg_type_of(i, node) for i in v.items))
        return self.require_runtime(v, node)

    def _positional(self, node: ast.Call) -> list[Value]:
        """The call's positional argument values, ``*t`` expanded (t a tuple)."""
        out: list[Value] = []
        for arg in node.args:
            if not isinstance(arg, ast.Starred):
                out.append(self.value(arg))
                continue
            v = self.value(arg.value)
            if not isinstance(v, TupleVal):
                raise self.fail(KernelTypeError, "'*' needs a tuple here", arg)
            out.extend(v.items)
        return out

    def _bind_device_args(self, cap, func, node: ast.Call) -> list[Value]:
        params = [a.arg for a in cap.tree.args.args]
        a = cap.tree.args
        if a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.fail(
                KernelSyntaxError, f"device function '{cap.name}' cannot take **kwargs or "
                "keyword-only parameters", node,
            )  # fmt: skip
        positional = self._positional(node)
        defaults = dict(
            zip(
                params[len(params) - len(func.__defaults__ or ()) :],
                func.__defaults__ or (),
                strict=True,
            )
        )
        if a.vararg is not None:  # the extra positional values, as one tuple
            extra = positional[len(params) :]
            positional = positional[: len(params)]
            params = [*params, a.vararg.arg]
        values: list[Value | None] = [None] * len(params)
        if a.vararg is not None:
            values[-1] = TupleVal(extra)
        if len(positional) > len(params):
            raise self.fail(
                KernelTypeError,
                f"{cap.name}() takes {len(params)} arguments, got {len(positional)}",
                node,
            )
        for i, v in enumerate(positional):
            values[i] = v
        for kw in node.keywords:
            if kw.arg not in params or values[params.index(kw.arg)] is not None:
                raise self.fail(
                    KernelTypeError,
                    f"{cap.name}() got an unexpected or repeated argument '{kw.arg}'",
                    kw,
                )
            values[params.index(kw.arg)] = self.value(kw.value)
        for i, p in enumerate(params):
            if values[i] is None:
                if p not in defaults:
                    raise self.fail(
                        KernelTypeError, f"{cap.name}() is missing argument '{p}'", node
                    )
                values[i] = self.from_python(defaults[p], node)
        return values  # type: ignore[return-value]


def _static_item(v: Value) -> bool:
    if isinstance(v, Static):
        return True
    return isinstance(v, TupleVal) and bool(v.items) and all(_static_item(i) for i in v.items)


def _static_value(v: Value):
    return v.obj if isinstance(v, Static) else tuple(_static_value(i) for i in v.items)


def _rebuild(t, outs) -> Value:
    if isinstance(t, Tuple):
        return TupleVal([_rebuild(item, outs) for item in t.items])
    var = next(outs)
    return ir.Ref(var.type, var)


def _call_name(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return "function"
