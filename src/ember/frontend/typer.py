"""AST -> typed IR: one visitor per function, device functions specialized recursively.

:func:`type_program` types a kernel for a list of argument types and returns an
:class:`~ember.frontend.ir.Program`.  Each function is typed by a :class:`FunctionTyper`
(statements here, expressions in :mod:`~ember.frontend.exprs`, calls in
:mod:`~ember.frontend.calls`).

Variables have one type per function.  The typer walks the body repeatedly until the types
stop changing: each assignment *unifies* the variable's type with the assigned value's type
(:func:`~ember.frontend.types.unify`: numbers promote, so ``acc = 0`` followed by
``acc += x[i]`` makes ``acc`` the element type), and the last walk, where nothing changed,
is the IR.  A read of a variable that is assigned only later in the text (a loop-carried
value) is retried on the next walk; if it is still unknown at the end it is an error.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ember.errors import InternalError, KernelSyntaxError, KernelTypeError
from ember.frontend import ir, messages, ranges, rewrite
from ember.frontend.calls import CallTyper
from ember.frontend.capture import Captured, Loc, capture
from ember.frontend.checks import CheckTyper
from ember.frontend.exprs import ExprTyper
from ember.frontend.flow import assigned_names, check_reads
from ember.frontend.operators import OperatorError, binary, cast, fits_64, too_wide, truth
from ember.frontend.statements import StatementTyper
from ember.frontend.tables import TableTyper
from ember.frontend.types import (
    VOID,
    Array,
    CompileTime,
    Scalar,
    Target,
    Tuple,
    Type,
    describe,
    unify,
)
from ember.frontend.values import (
    ArrayVal,
    Names,
    Pending,
    Static,
    TupleVal,
    Value,
    c_identifier,
    from_python,
)
from ember.frontend.views import ViewTyper
from ember.frontend.warps import WarpTyper

_MAX_WALKS = 32


@dataclass(eq=False)
class TypingContext:
    """State shared by every function of one program: target, specializations, call stack."""

    target: Target
    captures: dict[Any, Captured] = field(default_factory=dict)
    checks: bool = False  # bounds checks and checked conversions (boundscheck=True)
    specs: dict[tuple, ir.Function] = field(default_factory=dict)
    stack: list[tuple[str, Loc | None]] = field(default_factory=list)
    function_names: Names = field(default_factory=Names)
    active: list[Any] = field(default_factory=list)  # functions being typed (recursion check)
    tables: dict = field(default_factory=dict)  # id(array) -> (variable, C-ordered data)
    constant_bytes: int = 0  # used by the tables placed in constant memory
    warp_emulated: bool = False  # a warp operation on a target without sub-groups
    grid_sync: bool = False  # ember.grid_sync() is called

    def capture(self, func: Any) -> Captured:
        if func not in self.captures:
            self.captures[func] = capture(func)
        return self.captures[func]

    def specialize(self, func: Any, arg_types: tuple[Type, ...], call_loc: Loc) -> ir.Function:
        """The device function ``func`` typed for ``arg_types`` (typed now if new)."""
        key = (func, arg_types)
        if key in self.specs:
            return self.specs[key]
        cap = self.capture(func)
        if func in self.active:
            raise messages.error(
                KernelSyntaxError, f"recursive call of '{cap.name}' is not supported in kernels",
                call_loc, messages.STAGE_TYPING, "rewrite the recursion as a loop",
                self.notes(),
            )  # fmt: skip
        cname = self.function_names.fresh(cap.name)
        self.stack.append((cap.name, call_loc))
        self.active.append(func)
        try:
            fn = FunctionTyper(self, cap, list(arg_types), False, cname).run()
        finally:
            self.stack.pop()
            self.active.pop()
        self.specs[key] = fn
        return fn

    def notes(self) -> tuple[str, ...]:
        """'called from' lines for errors inside device functions, innermost first."""
        out = []
        for name, loc in reversed(self.stack):
            if loc is not None:
                out.append(f"in device function '{name}', called from {loc} ({loc.function})")
        return tuple(out)


def type_program(cap: Captured, arg_types: list[Type], target: Target, ctx=None) -> ir.Program:
    """Type the kernel ``cap`` for ``arg_types``: the typed IR of it and its callees."""
    ctx = ctx or TypingContext(target)
    ctx.captures.setdefault(cap.func, cap)
    ctx.function_names.taken.add(c_identifier(cap.name))
    kernel = FunctionTyper(ctx, cap, list(arg_types), True, c_identifier(cap.name)).run()
    order: list[ir.Function] = []
    _post_order(kernel, order, set())
    used = {f.pyname for f in order}
    caps = [c for c in ctx.captures.values() if c.name in used]
    sources = {f"{c.func.__module__}.{c.func.__qualname__}": c.source_hash for c in caps}
    constants = [
        (f"{c.name}.{name}", repr(value))
        for c in caps
        for name, value in c.frozen_items()
        if _is_constant(value)
    ]
    program = ir.Program(kernel, [f for f in order if f is not kernel], sources, constants)
    program.warp_emulated = ctx.warp_emulated
    program.tables = list(ctx.tables.values())
    program.grid_sync = ctx.grid_sync
    return program


def _is_constant(value: Any) -> bool:
    """Captured values that are compile-time constants (and so part of the cache key)."""
    if isinstance(value, bool | int | float | tuple):
        return True
    return type(value).__module__ == "numpy" or type(value).__name__ == "DType"


def _post_order(fn: ir.Function, out: list[ir.Function], seen: set[int]) -> None:
    if id(fn) in seen:
        return
    seen.add(id(fn))
    for callee in fn.callees:
        _post_order(callee, out, seen)
    out.append(fn)


class FunctionTyper(
    CheckTyper, StatementTyper, ViewTyper, TableTyper, ExprTyper, WarpTyper, CallTyper
):
    """Types one function (kernel or device function) for given argument types."""

    def __init__(
        self, ctx: TypingContext, cap: Captured, arg_types: list[Type], is_kernel: bool, cname: str
    ):
        self.ctx = ctx
        self.cap = cap
        self.target = ctx.target
        self.arg_types = arg_types
        self.is_kernel = is_kernel
        self.cname = cname
        self.kind = "kernel" if is_kernel else "device function"
        self.var_types: dict[str, Type] = {}
        self.fixed: dict[str, Type] = {}
        self.ret_type: Type | None = None
        self.rebound: dict[str, tuple] = {}  # variables of two promoted types (warned)

    # ------------------------------------------------------------------ errors
    def fail(self, cls, message: str, node: ast.AST | None, hint: str | None = None) -> Exception:
        loc = self.cap.loc(node) if node is not None else self.cap.loc(self.cap.tree)
        stage = messages.STAGE_TYPING if cls is KernelTypeError else messages.STAGE_SYNTAX
        return messages.error(cls, message, loc, stage, hint, self.ctx.notes())

    def type_error(self, exc: OperatorError, node: ast.AST) -> Exception:
        return self.fail(KernelTypeError, exc.message, node, exc.hint)

    def loc(self, node: ast.AST) -> Loc:
        return self.cap.loc(node)

    # ------------------------------------------------------------------ driver
    def run(self) -> ir.Function:
        tree = self.cap.tree
        names = self._check_signature(tree)
        self.assigned = assigned_names(tree)
        unbound = check_reads(tree, self.assigned)
        if unbound is not None:
            raise self.fail(
                KernelSyntaxError, f"local variable '{unbound.id}' is used before it is assigned",
                unbound, f"assign '{unbound.id}' before this line",
            )  # fmt: skip
        self.var_types = dict(zip(names, self.arg_types, strict=True))
        self.ranges = ranges.Ranges(tree, self.cap.lookup)
        for _ in range(_MAX_WALKS):
            self._reset(names)
            body = self.block(tree.body)
            if not self.changed and not self.pending:
                return self._finish(body)
            if not self.changed:
                name, node = self.pending[0]
                raise self.fail(
                    KernelSyntaxError, f"local variable '{name}' is used before it is assigned",
                    node, f"assign '{name}' before this line (on every path that reaches it)",
                )  # fmt: skip
        raise InternalError(f"type inference of '{self.cap.name}' did not settle")

    def _check_signature(self, tree: ast.FunctionDef) -> list[str]:
        a = tree.args
        if a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.fail(
                KernelSyntaxError, f"a {self.kind} cannot take **kwargs or "
                "keyword-only/positional-only parameters", tree,
                "list the parameters one by one (a *args tuple is fine)",
            )  # fmt: skip
        names = [p.arg for p in a.args]
        self.vararg = None
        if a.vararg is not None:
            self.vararg = len(names)
            names.append(a.vararg.arg)
            if self.is_kernel:  # the launch's extra arguments, as one tuple
                rest = self.arg_types[len(names) - 1 :]
                self.arg_types = [*self.arg_types[: len(names) - 1], Tuple(tuple(rest))]
        if self.is_kernel and a.defaults:
            raise self.fail(
                KernelSyntaxError,
                "kernel parameters cannot have default values",
                a.defaults[0],
                "pass every argument at launch",
            )
        if len(names) != len(self.arg_types):
            raise InternalError(f"{self.cap.name}: {len(self.arg_types)} types for {names}")
        return names

    def _reset(self, names: list[str]) -> None:
        self.changed = False
        self.pending: list[tuple[str, ast.AST]] = []
        self.names = Names({self.cname})
        self.bindings: dict[str, Any] = {}
        self.locals: list[ir.Variable] = []
        self.shared: list[ir.ArrayDecl] = []  # declared at the top
        self.callees: list[ir.Function] = []
        self.params: list[ir.Variable] = []
        self.param_sources: list[tuple[int, tuple[int, ...]]] = []
        self.blocks: list[list[ir.Stmt]] = []
        self.loop_depth = 0
        self.no_spill: str | None = None
        self.facts: list[ranges.Fact] = []  # what enclosing conditions say about indices
        self.exit_facts: list[ranges.Fact] = []  # from `if i >= n: return`, for the rest
        self.notes: list = []  # for the slow-path report (ir.Function.notes)
        self.static_names: dict[str, Value] = {}  # static_range counters being unrolled
        self.rest_made = False  # ember.shared(0, dtype) was made (once per kernel)
        prologue: list[ir.Stmt] = []
        for index, (name, t) in enumerate(zip(names, self.arg_types, strict=True)):
            self._bind_param(index, name, t, prologue)
        self.prologue = prologue

    def _bind_param(self, index: int, name: str, t: Type, prologue: list[ir.Stmt]) -> None:
        wanted = self.var_types.get(name, t)
        flat = self.is_kernel and index == self.vararg  # *args: one launch argument per item
        params = self._param_vars(name, t, index, (), flat)
        value = self._read_binding(params)
        if wanted == t:
            self.bindings[name] = params
            return
        binding = self._new_binding(name, wanted)
        self.bindings[name] = binding
        loc = self.loc(self.cap.tree)
        prologue.extend(self._assign_stmts(binding, value, self.cap.tree, loc))

    def _param_vars(self, name: str, t: Type, index: int, path: tuple[int, ...], flat=False):
        if isinstance(t, CompileTime):
            return from_python(t.value)  # a Static (or a tuple of them): no C parameter
        if isinstance(t, Tuple):
            return [
                self._param_vars(f"{name}_{i}", it, index + i, ())
                if flat
                else self._param_vars(f"{name}_{i}", it, index, (*path, i))
                for i, it in enumerate(t.items)
            ]
        var = ir.Variable(self.names.fresh(name), t, name)
        if self.is_kernel:  # the C parameters the ABI derives from this one (codegen/abi.py)
            extra = (
                "data",
                "start",
                "u8",
                "re",
                "im",
                *(f"{w}{k}" for w in ("shape", "stride") for k in range(getattr(t, "ndim", 0))),
            )
            self.names.taken.update(f"{var.name}_{x}" for x in extra)
        self.params.append(var)
        self.param_sources.append((index, path))
        return var

    def _finish(self, body: list[ir.Stmt]) -> ir.Function:
        self._warn_rebindings()
        ret = self.ret_type or VOID
        if not self.is_kernel and ret is not VOID and not _always_returns(body):
            raise self.fail(
                KernelTypeError, f"device function '{self.cap.name}' returns a value on some "
                "paths but can reach its end without one", self.cap.tree,
                "end the function with a return statement",
            )  # fmt: skip
        fn = ir.Function(
            self.cname, self.cap.name, self.params, self.locals,
            [*self.shared, *self.prologue, *body], ret, self.is_kernel, self.loc(self.cap.tree),
            returns=_flat_types(ret), callees=self.callees, notes=self.notes,
        )  # fmt: skip
        fn.param_sources = self.param_sources  # type: ignore[attr-defined]
        return fn

    # ------------------------------------------------------------------ blocks
    def block(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        self.blocks.append(out)
        depth = len(self.facts)
        try:
            for k, node in enumerate(stmts):
                before = len(out)
                try:
                    self.statement(node)
                except Pending as p:
                    self.pending.append((p.name, p.node))
                self._check_widths(out[before:], node)
                if self.exit_facts:  # `if i >= n: return` holds for the rest of the block
                    self.facts += ranges.surviving(self.exit_facts, stmts[k + 1 :])
                    self.exit_facts = []
        finally:
            self.blocks.pop()
            del self.facts[depth:]
        return out

    def _check_widths(self, stmts: list[ir.Stmt], node: ast.stmt) -> None:
        """Refuse a folded Python int constant wider than 64 bits that reaches generated
        code (``2**64 - 1`` folds through one and is fine; ``n = 2**64`` is not)."""
        for s in stmts:
            for e in rewrite.children(s):
                for sub in rewrite.subexprs(e):
                    if isinstance(sub, ir.Const) and isinstance(sub.value, int):
                        if not fits_64(sub.value):
                            raise self.type_error(too_wide(sub.value), node)

    def with_facts(self, facts: list, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        """:meth:`block` with ``facts`` known (those that no statement of it invalidates)."""
        depth = len(self.facts)
        self.facts += ranges.surviving(facts, stmts)
        try:
            return self.block(stmts)
        finally:
            del self.facts[depth:]

    def emit(self, stmt: ir.Stmt) -> None:
        self.blocks[-1].append(stmt)

    def spill(self, value: ir.Expr, node: ast.AST, base: str = "em_t") -> ir.Expr:
        """Evaluate ``value`` once into a new temporary and return a reference to it."""
        if self.no_spill:
            raise self.fail(
                KernelSyntaxError, f"this expression needs a temporary variable, which cannot "
                f"be placed inside {self.no_spill}", node,
                "compute it into a variable on the line before",
            )  # fmt: skip
        var = ir.Variable(self.names.internal(base), value.type, base)
        self.locals.append(var)
        self.emit(ir.Assign(self.loc(node), var, value))
        return ir.Ref(value.type, var)

    # ------------------------------------------------------------------ variables
    def read_name(self, name: str, node: ast.AST) -> Value:
        """The value of local ``name`` (raises :class:`Pending` if not typed yet)."""
        if name in self.static_names:  # a static_range counter in an unrolled body
            return self.static_names[name]
        if name not in self.var_types:
            raise Pending(name, node)
        if name not in self.bindings:
            self.bindings[name] = self._new_binding(name, self.var_types[name])
        return self._read_binding(self.bindings[name])

    def _read_binding(self, binding) -> Value:
        if isinstance(binding, list):
            return TupleVal([self._read_binding(b) for b in binding])
        if isinstance(binding, Static | TupleVal):  # a compile-time argument
            return binding
        return ir.Ref(binding.type, binding)

    def _alias_static(self, name: str, old, value: Static) -> bool:
        """``tid = ember.thread_idx``, ``dt = np.float32``, ``op = helper``: a local that
        names one compile-time object (Numba's ``tx = cuda.threadIdx``) is an alias, read
        as the object itself; binding it to another object is refused below."""
        if name in self.static_names or name in self.fixed:
            return False
        if old is None:
            self.var_types[name] = CompileTime(value.obj)
            self.changed = True
        elif not (isinstance(old, CompileTime) and old.value is value.obj):
            return False
        self.bindings[name] = value
        return True

    def _new_binding(self, name: str, t: Type):
        if isinstance(t, Tuple):
            return [self._new_binding(f"{name}_{i}", it) for i, it in enumerate(t.items)]
        var = ir.Variable(self.names.fresh(name), t, name)
        self.locals.append(var)
        return var

    def assign_name(self, name: str, value: Value, node: ast.AST) -> None:
        """``name = value``: unify the variable's type, then emit the assignment(s)."""
        if isinstance(value, ArrayVal):
            self._declare_array(name, value, node)
            return
        old = self.var_types.get(name)
        if isinstance(value, Static) and self._alias_static(name, old, value):
            return
        if isinstance(old, CompileTime) or name in self.static_names:
            raise self.fail(
                KernelSyntaxError, f"'{name}' is a compile-time value (an argument the kernel "
                "is specialized on, a static_range counter, or a local naming one object); it "
                "cannot be assigned another value", node,
                "use another name",
            )  # fmt: skip
        t = self.require_runtime(value, node)
        if name in self.fixed:
            new = self.fixed[name]
        else:
            new = t if old is None else unify(old, t)
            self._note_rebinding(name, old, t, new, node)
            if new is None:
                raise self.fail(
                    KernelTypeError, f"variable '{name}' holds {describe(old)} elsewhere but is "
                    f"assigned {describe(t)} here; a variable has one type", node,
                    f"use a new name for the {describe(t)} value, or convert it explicitly",
                )  # fmt: skip
        if new != old:
            self.var_types[name] = new
            self.changed = True
            self.bindings.pop(name, None)
        if name not in self.bindings:
            self.bindings[name] = self._new_binding(name, new)
        for stmt in self._assign_stmts(self.bindings[name], value, node, self.loc(node)):
            self.emit(stmt)

    def _note_rebinding(self, name: str, old, t, new, node: ast.AST) -> None:
        """Remember a variable whose two strong scalar types promote to a third one
        (``int32`` and ``uint32`` -> ``int64``): its wrap-around is neither's (warned once
        at the end of typing, :class:`~ember.errors.KernelTypeWarning`)."""
        if not (isinstance(old, Scalar) and isinstance(t, Scalar) and isinstance(new, Scalar)):
            return
        if old.weak or t.weak or new in (old, t):
            return
        self.rebound.setdefault(name, (old, t, new, self.loc(node)))

    def _warn_rebindings(self) -> None:
        import warnings

        from ember.errors import KernelTypeWarning

        for name, (a, b, new, loc) in self.rebound.items():
            message = (
                f"variable '{name}' in {self.kind} '{self.cap.name}' is assigned both "
                f"{a.dtype.name} and {b.dtype.name} values, so it holds {new.dtype.name} "
                f"(NumPy's promotion), whose arithmetic wraps differently from either; "
                f"annotate it (e.g. {name}: ember.{b.dtype.name} = ...) or give the "
                f"{b.dtype.name} value its own name"
            )
            warnings.warn_explicit(message, KernelTypeWarning, loc.filename, loc.line)

    def _assign_stmts(self, binding, value: Value, node: ast.AST, loc: Loc) -> list[ir.Stmt]:
        if isinstance(binding, list):
            if not (isinstance(value, TupleVal) and len(value.items) == len(binding)):
                raise self.fail(KernelTypeError, "tuple assignment of mismatched length", node)
            out: list[ir.Stmt] = []
            for b, v in zip(binding, value.items, strict=True):
                out.extend(self._assign_stmts(b, v, node, loc))
            return out
        return [ir.Assign(loc, binding, self.convert(value, binding.type, node))]

    def convert(self, value: Value, t: Type, node: ast.AST) -> ir.Expr:
        """``value`` as a value of type ``t`` (numbers are cast; arrays must match)."""
        if isinstance(t, Scalar) and isinstance(value, ir.Expr) and isinstance(value.type, Scalar):
            try:
                return cast(value, t)
            except OperatorError as exc:
                raise self.type_error(exc, node) from None
        if isinstance(value, ir.Expr) and value.type == t:
            return value
        raise self.fail(
            KernelTypeError,
            f"expected {describe(t)}, got {describe(self.require_runtime(value, node))}",
            node,
        )

    def _declare_array(self, name: str, value: ArrayVal, node: ast.AST) -> None:
        """``name = ember.shared(...)`` / ``ember.local(...)``: a new array, declared at the
        top of the function.  A per-thread array assigned again with the same type (a loop
        body, an unrolled ``static_range``) keeps its storage: its contents are undefined
        after the declaration either way."""
        old = self.var_types.get(name)
        space = value.type.space
        bound = self.bindings.get(name)
        if space == "local" and isinstance(bound, ir.Variable) and bound.type == value.type:
            return
        if bound is not None and isinstance(old, Array) and old.space == space:
            word = "ember.shared" if space == "shared" else "ember.local"
            raise self.fail(
                KernelSyntaxError, f"'{name}' is assigned {word}(...) twice", node,
                "give each array its own name",
            )  # fmt: skip
        if old is not None and old != value.type:
            raise self.fail(
                KernelTypeError, f"variable '{name}' holds {describe(old)} elsewhere; it "
                f"cannot also name a new {describe(value.type)}", node,
                "give the new array its own name",
            )  # fmt: skip
        if old is None:
            self.var_types[name] = value.type
            self.changed = True
        var = ir.Variable(self.names.fresh(name), value.type, name)
        self.bindings[name] = var
        self.shared.append(ir.ArrayDecl(self.loc(node), var, list(value.size)))

    def materialize(self, value: Value, node: ast.AST) -> Value:
        """An :class:`ArrayVal` not assigned to a name gets an anonymous declaration."""
        if not isinstance(value, ArrayVal):
            return value
        base = "em_shared" if value.type.space == "shared" else "em_local"
        var = ir.Variable(self.names.internal(base), value.type, value.type.space)
        self.shared.append(ir.ArrayDecl(self.loc(node), var, list(value.size)))
        return ir.Ref(value.type, var)

    def note_return(self, value: Value | None, node: ast.AST) -> list[ir.Expr]:
        """Unify the function's return type with ``value``; the flattened, cast values."""
        t = VOID if value is None else self.require_runtime(value, node)
        if isinstance(t, Array) and t.space == "local":
            raise self.fail(
                KernelTypeError, "a device function cannot return a per-thread array (it "
                "would outlive the function)", node,
                "make the array in the caller and pass it in to be filled",
            )  # fmt: skip
        if self.ret_type is None:
            self.ret_type = t
            self.changed = True
        elif self.ret_type != t:
            new = None if VOID in (t, self.ret_type) else unify(self.ret_type, t)
            if new is None:
                raise self.fail(
                    KernelTypeError, f"'{self.cap.name}' returns {describe(t)} here but "
                    f"{describe(self.ret_type)} elsewhere", node,
                    "return the same kind of value on every path",
                )  # fmt: skip
            if new != self.ret_type:
                self.ret_type = new
                self.changed = True
        if value is None:
            return []
        return self.flatten_to(value, self.ret_type, node)

    def flatten_to(self, value: Value, t: Type, node: ast.AST) -> list[ir.Expr]:
        if isinstance(t, CompileTime):
            return []  # compile-time arguments are not passed at run time
        if isinstance(t, Tuple):
            assert isinstance(value, TupleVal)
            out: list[ir.Expr] = []
            for v, it in zip(value.items, t.items, strict=True):
                out.extend(self.flatten_to(v, it, node))
            return out
        return [self.convert(value, t, node)]

    def condition(self, node: ast.expr) -> ir.Expr:
        value = self.runtime(node)
        try:
            return truth(value)
        except OperatorError as exc:
            raise self.type_error(exc, node) from None

    def arith(self, op: str, left: Value, right: Value, node: ast.AST) -> ir.Expr:
        lv, rv = self.scalar_of(left, node), self.scalar_of(right, node)
        try:
            return binary(op, lv, rv)
        except OperatorError as exc:
            raise self.type_error(exc, node) from None


def _flat_types(t: Type) -> list[Type]:
    if isinstance(t, Tuple):
        return [x for item in t.items for x in _flat_types(item)]
    return [] if t is VOID else [t]


def _always_returns(body: list[ir.Stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ir.Return | ir.Raise):
        return True
    if isinstance(last, ir.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False
