"""The typed IR: what the typer produces, the passes rewrite and the emitter prints.

A :class:`Program` is one kernel plus the device functions it calls (callees first).  A
:class:`Function` has typed parameters, typed locals and a body of statements.  Every
expression carries its :class:`~ember.frontend.types.Type`; every operand already has the
type its operation computes in (the typer inserts :class:`Cast` nodes), so the emitter never
decides a type.  Tuples do not exist here: the typer flattens them into scalars.

Expressions
    Const, Ref, Field (array shape/stride), Load, Unary, Binary, Compare, Logical, Cast,
    Select, Intrinsic (thread indices, math, shuffles), Call (device function), Atomic,
    View (a sub-array: ``x[i, :]``, ``x[lo:hi]``).
Statements
    Assign, Store, Eval, If, ForRange, While, Break, Continue, Return, ArrayDecl, Raise,
    Print.

Run-time checks (``raise``, ``assert``, bounds checks and checked conversions when checking is
on) are :class:`Site` objects: an :class:`IndexCheck` on a Load, Store or Atomic, a ``site`` on a
Cast, or a :class:`Raise` statement.  :func:`~ember.frontend.passes.number_sites` numbers them;
the device records the number of the first one that fails (``docs/design/diagnostics.md``).

:func:`dump` prints a program in a readable text form (``kernel.inspect(stage="ir")``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ember.frontend.capture import Loc
from ember.frontend.types import Type, describe

# The warp / sub-group operations (frontend/warps.py): collective over a warp, effectful,
# emulated through shared memory on devices without sub-groups.
WARP_OPS = frozenset(
    {"shfl", "shfl_up", "shfl_down", "shfl_xor", "warp_sum", "warp_min", "warp_max", "ballot",
     "all_sync", "any_sync", "match_any_sync", "syncwarp", "activemask"}
)  # fmt: skip
# ... those whose result depends on which lanes run them (CUDA: the active lanes): where
# warps are emulated, the lanes of a branch not taken must take no part
TAKING_PART = frozenset({"ballot", "all_sync", "any_sync", "match_any_sync"})


@dataclass(eq=False)
class Variable:
    """A local variable or parameter: ``name`` is the C name, ``pyname`` the Python one."""

    name: str
    type: Type
    pyname: str


# ------------------------------------------------------------------------- run-time checks


@dataclass(eq=False)
class Site:
    """A place where a kernel can fail at run time.

    ``kind`` is ``"bounds"`` (an index out of range), ``"convert"`` (a float that does not fit
    the integer it is converted to), ``"raise"`` or ``"assert"``.  ``message`` is the
    compile-time text (for bounds: the array's name; for conversions: ``"float32 to int32"``);
    ``error`` is the name of the Python exception it stands for.  ``id`` is set by
    :func:`~ember.frontend.passes.number_sites`.
    """

    kind: str
    message: str
    loc: Loc
    error: str = "RuntimeError"
    axis: int = 0
    id: int = -1


@dataclass(eq=False)
class IndexCheck:
    """``0 <= index < extent`` must hold, else the thread fails at ``site``."""

    index: Expr
    extent: Expr
    site: Site


# ------------------------------------------------------------------------- expressions


@dataclass(eq=False)
class Expr:
    type: Type


@dataclass(eq=False)
class Const(Expr):
    value: Any  # bool, int or float (already of the type's range / precision)


@dataclass(eq=False)
class Ref(Expr):
    var: Variable


@dataclass(eq=False)
class Field(Expr):
    """``array.shape[axis]`` or ``array.strides[axis]`` (in elements), an int64."""

    array: Expr
    name: str  # "shape" | "strides"
    axis: int


@dataclass(eq=False)
class Load(Expr):
    """``array[index...]``; after :func:`~ember.frontend.passes.linearize` one flat index."""

    array: Expr
    index: list[Expr]
    flat: bool = False  # True once the index is a single flat element offset
    checks: list[IndexCheck] = field(default_factory=list)  # per axis, when checking is on


@dataclass(eq=False)
class Unary(Expr):
    op: str  # "neg" | "invert" | "not"
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    """Arithmetic in ``type`` (both operands already have it, except shifts' right side)."""

    op: str  # add sub mul truediv floordiv mod pow lshift rshift bitand bitor bitxor min max
    left: Expr
    right: Expr


@dataclass(eq=False)
class Compare(Expr):
    op: str  # "<" "<=" ">" ">=" "==" "!="
    left: Expr
    right: Expr


@dataclass(eq=False)
class Logical(Expr):
    op: str  # "and" | "or" (short-circuit, on bools)
    left: Expr
    right: Expr


@dataclass(eq=False)
class Cast(Expr):
    value: Expr
    site: Site | None = None  # a checked float -> int conversion (checking on)


@dataclass(eq=False)
class Select(Expr):
    cond: Expr
    if_true: Expr
    if_false: Expr


@dataclass(eq=False)
class Intrinsic(Expr):
    """A built-in operation named by ``name`` (the dialect tables spell it)."""

    name: str
    args: list[Expr]


@dataclass(eq=False)
class Call(Expr):
    """A device function call; ``outs`` receive a tuple result (flattened)."""

    function: Function
    args: list[Expr]
    outs: list[Variable] = field(default_factory=list)


@dataclass(eq=False)
class View(Expr):
    """A sub-array of ``array`` (its type is the view's :class:`~ember.frontend.types.Array`):
    the element ``offset`` of its first element from ``array``'s data, and its ``shape`` and
    ``strides`` (in elements; strides only for layout ``"A"``).  Both lists are empty when
    the result is a bare pointer (a static shape).  ``checks``: the integer indices that
    made it, when checking is on."""

    array: Expr
    offset: Expr
    shape: list[Expr] = field(default_factory=list)
    strides: list[Expr] = field(default_factory=list)
    checks: list[IndexCheck] = field(default_factory=list)


@dataclass(eq=False)
class Atomic(Expr):
    """Atomic read-modify-write of one array element; the value is the old element."""

    op: str  # add sub min max exchange cas and or xor
    array: Expr
    index: list[Expr]
    args: list[Expr]  # [value] or [expected, value] for cas
    flat: bool = False
    checks: list[IndexCheck] = field(default_factory=list)


# ------------------------------------------------------------------------- statements


@dataclass(eq=False)
class Stmt:
    loc: Loc


@dataclass(eq=False)
class Assign(Stmt):
    target: Variable
    value: Expr


@dataclass(eq=False)
class Store(Stmt):
    array: Expr
    index: list[Expr]
    value: Expr
    flat: bool = False
    checks: list[IndexCheck] = field(default_factory=list)


@dataclass(eq=False)
class Eval(Stmt):
    expr: Expr


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    body: list[Stmt]
    orelse: list[Stmt]


@dataclass(eq=False)
class ForRange(Stmt):
    """``for var in range(start, stop, step)``; ``step_sign`` is 1, -1 or 0 (unknown)."""

    var: Variable
    start: Expr
    stop: Expr
    step: Expr
    step_sign: int
    body: list[Stmt]


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: list[Stmt]


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    values: list[Expr]  # empty: bare return; several: a flattened tuple


@dataclass(eq=False)
class ArrayDecl(Stmt):
    """An array the function allocates, declared at its top: per block (``ember.shared``,
    space ``"shared"``) or per thread (``ember.local``, space ``"local"``).  ``size`` holds
    the extents of a *dynamic* shared array (computed at launch, carved from the launch's
    dynamic shared memory); it is empty for a static shape (in the variable's type).
    Shared arrays of device functions are hoisted into the kernel
    (:func:`~ember.frontend.hoisting.hoist_shared`)."""

    var: Variable
    size: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class Raise(Stmt):
    """Record the failure at ``site`` (first failing thread wins) and end the thread."""

    site: Site


@dataclass(eq=False)
class Print(Stmt):
    """``print(...)``: literal text and values, separators and the end already in ``items``."""

    items: list  # of str (literal text) and Expr (a number to format)


# ------------------------------------------------------------------------- functions


@dataclass(eq=False)
class Function:
    """A kernel or a device function specialized for one list of argument types."""

    name: str  # C name
    pyname: str
    params: list[Variable]
    locals: list[Variable]
    body: list[Stmt]
    return_type: Type
    is_kernel: bool
    loc: Loc
    returns: list[Type] = field(default_factory=list)  # flattened return types
    callees: list[Function] = field(default_factory=list)
    can_fail: bool = False  # it or a callee has a Site (set by passes.number_sites)
    notes: list = field(default_factory=list)  # (kind, Loc, detail) for the slow-path report
    # shared arrays it or a callee declares, received from the kernel as hidden trailing
    # parameters (set by hoisting.hoist_shared; the kernel declares them)
    hoisted: list[Variable] = field(default_factory=list)
    grid_sync: bool = False  # a kernel calling grid_sync: takes the barrier word (abi.py)
    dynamic_bytes: bool = False  # uses ember.shared(0, dtype): takes the launch's bytes


@dataclass(eq=False)
class Program:
    """A kernel and every device function it reaches, callees first."""

    kernel: Function
    functions: list[Function]
    sources: dict[str, str] = field(default_factory=dict)  # function -> source hash
    constants: list[tuple[str, str]] = field(default_factory=list)  # captured name -> repr
    sites: list[Site] = field(default_factory=list)  # numbered by passes.number_sites
    no_return: bool = False  # can fail and synchronizes threads: failed threads run on
    # warp operations are emulated through shared memory (a device without sub-groups)
    warp_emulated: bool = False
    grid_sync: bool = False  # calls ember.grid_sync(): needs a cooperative launch
    # captured NumPy arrays (module-level tables): (variable, the array), constant memory
    tables: list = field(default_factory=list)
    # (max threads per block, min blocks per SM: 0 = none) from @ember.kernel(launch_bounds=)
    launch_bounds: tuple[int, int] | None = None


# ------------------------------------------------------------------------- printing


def dump(program: Program) -> str:
    """The program as indented text, one statement a line, with types."""
    out: list[str] = []
    for fn in [*program.functions, program.kernel]:
        _dump_function(fn, out)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _dump_function(fn: Function, out: list[str]) -> None:
    kind = "kernel" if fn.is_kernel else "device"
    params = ", ".join(f"{p.name}: {describe(p.type)}" for p in fn.params)
    out.append(f"{kind} {fn.name}({params}) -> {describe(fn.return_type)}:  # {fn.loc}")
    for var in fn.locals:
        out.append(f"  local {var.name}: {describe(var.type)}")
    _dump_body(fn.body, out, "  ")


def _dump_body(body: list[Stmt], out: list[str], pad: str) -> None:
    for stmt in body:
        _dump_stmt(stmt, out, pad)


def _dump_stmt(s: Stmt, out: list[str], pad: str) -> None:
    line = f"  # line {s.loc.line}"
    if isinstance(s, Assign):
        out.append(f"{pad}{s.target.name} = {fmt(s.value)}{line}")
    elif isinstance(s, Store):
        out.append(f"{pad}{fmt(s.array)}[{_idx(s.index)}]{_chk(s)} = {fmt(s.value)}{line}")
    elif isinstance(s, Eval):
        out.append(f"{pad}{fmt(s.expr)}{line}")
    elif isinstance(s, If):
        out.append(f"{pad}if {fmt(s.cond)}:{line}")
        _dump_body(s.body, out, pad + "  ")
        if s.orelse:
            out.append(f"{pad}else:")
            _dump_body(s.orelse, out, pad + "  ")
    elif isinstance(s, ForRange):
        rng = f"{fmt(s.start)}, {fmt(s.stop)}, {fmt(s.step)}"
        out.append(f"{pad}for {s.var.name} in range({rng}):{line}")
        _dump_body(s.body, out, pad + "  ")
    elif isinstance(s, While):
        out.append(f"{pad}while {fmt(s.cond)}:{line}")
        _dump_body(s.body, out, pad + "  ")
    elif isinstance(s, Return):
        out.append(f"{pad}return {', '.join(fmt(v) for v in s.values)}{line}".rstrip())
    elif isinstance(s, ArrayDecl):
        size = f" size ({_idx(s.size)})" if s.size else ""
        out.append(f"{pad}declare {s.var.name}: {describe(s.var.type)}{size}{line}")
    elif isinstance(s, Raise):
        out.append(f"{pad}raise #{s.site.id} {s.site.error}: {s.site.message}{line}")
    elif isinstance(s, Print):
        shown = ", ".join(repr(i) if isinstance(i, str) else fmt(i) for i in s.items)
        out.append(f"{pad}print({shown}){line}")
    else:
        out.append(f"{pad}{type(s).__name__.lower()}{line}")


def _idx(index: list[Expr]) -> str:
    return ", ".join(fmt(i) for i in index)


def _chk(e) -> str:
    """`` checked(#3 i < n, ...)`` after an access with bounds checks."""
    if not e.checks:
        return ""
    return (
        " checked("
        + ", ".join(f"#{c.site.id} {fmt(c.index)} < {fmt(c.extent)}" for c in e.checks)
        + ")"
    )


_SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^",
    "neg": "-", "invert": "~", "not": "not ",
}  # fmt: skip


def fmt(e: Expr) -> str:
    """One expression as text; constants and casts show their type."""
    t = e.type.key()
    if isinstance(e, Const):
        return f"{e.value!r}" if getattr(e.type, "weak", False) else f"{e.value!r}:{t}"
    if isinstance(e, Ref):
        return e.var.name
    if isinstance(e, Field):
        return f"{fmt(e.array)}.{e.name}[{e.axis}]"
    if isinstance(e, Load):
        return f"{fmt(e.array)}[{_idx(e.index)}]{_chk(e)}"
    if isinstance(e, Unary):
        return f"{_SYMBOLS[e.op]}{fmt(e.operand)}"
    if isinstance(e, Binary) and e.op in ("min", "max"):
        return f"{e.op}({fmt(e.left)}, {fmt(e.right)})"
    if isinstance(e, Binary | Compare | Logical):
        return f"({fmt(e.left)} {_SYMBOLS.get(e.op, e.op)} {fmt(e.right)})"
    if isinstance(e, Cast):
        checked = f" checked #{e.site.id}" if e.site is not None else ""
        return f"{t}({fmt(e.value)}{checked})"
    if isinstance(e, Select):
        return f"({fmt(e.if_true)} if {fmt(e.cond)} else {fmt(e.if_false)})"
    if isinstance(e, Intrinsic):
        return f"{e.name}({_idx(e.args)})"
    if isinstance(e, Call):
        outs = f" -> ({', '.join(v.name for v in e.outs)})" if e.outs else ""
        return f"{e.function.name}({_idx(e.args)}){outs}"
    if isinstance(e, View):
        dims = f", shape ({_idx(e.shape)})" if e.shape else ""
        steps = f", strides ({_idx(e.strides)})" if e.strides else ""
        return f"view({fmt(e.array)} + {fmt(e.offset)}{dims}{steps}){_chk(e)}"
    if isinstance(e, Atomic):
        return f"atomic_{e.op}({fmt(e.array)}[{_idx(e.index)}]{_chk(e)}, {_idx(e.args)})"
    return type(e).__name__
