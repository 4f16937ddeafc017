"""The slow-path report's items from the code: what a freshly compiled kernel's typed IR pulls
in (run-time checks, ``print``, float64 arithmetic, tuples indexed at run time).

A kernel compiled in this process runs :func:`compiled`; the items are stored with the
binary (:func:`ember.diagnostics.report.to_meta`), so that a kernel loaded from the cache
reports them without this module, or the IR it walks, being imported.
"""

from __future__ import annotations

from ember.diagnostics.report import SlowPath, _at
from ember.frontend import ir, passes
from ember.frontend.capture import Loc
from ember.frontend.types import Scalar

TUPLE_INDEX_MIN = 16  # tuples at least this long, indexed at run time, are reported
CHECK_FIX = (
    "check the inputs on the host before launching, or keep debugging checks under a "
    "compile-time constant (with DEBUG = False, `if DEBUG: ...` compiles to nothing)"
)


def compiled(spec, program: ir.Program) -> None:
    """Record what the report needs from a freshly compiled program on ``spec``."""
    spec.slow_paths = tuple(program_items(program))
    spec.kernel_loc = program.kernel.loc


def _snippet(loc: Loc) -> str:
    return loc.text[loc.col - 1 : loc.end_col - 1].strip() or loc.text.strip()


def program_items(program: ir.Program) -> list[SlowPath]:
    """The items found in the typed IR (device-independent; float64 ones are filtered by
    :func:`~ember.diagnostics.report.for_device`)."""
    items = _site_items(program.sites)
    for fn in [*program.functions, program.kernel]:
        for s, e in passes.walk(fn.body):
            if e is None and isinstance(s, ir.Print):
                items.append(_at(s.loc, "print", "print() formats text on the device (printf): "
                                 "slow, it serializes threads, and the output appears only at "
                                 "the next synchronize", "remove it, or keep it under a "
                                 "compile-time constant: `if DEBUG: print(...)`"))  # fmt: skip
        items += _float64_items(fn)
        for kind, loc, n in fn.notes:
            if kind == "tuple-index" and n >= TUPLE_INDEX_MIN:
                items.append(_at(loc, "tuple-index", f"{_snippet(loc)} indexes a tuple of {n} "
                                 f"by a run-time value: a chain of {n - 1} selects", "index it "
                                 "with a constant (unroll the loop over it), or keep the values "
                                 "in a shared or global array", length=n))  # fmt: skip
    return items


def _site_items(sites: list[ir.Site]) -> list[SlowPath]:
    items: list[SlowPath] = []
    bounds: dict[tuple, list[ir.Site]] = {}
    for site in sites:
        if site.kind == "bounds":
            bounds.setdefault((site.loc.filename, site.loc.line), []).append(site)
        elif site.kind == "convert":
            target = site.message.split(" to ")[-1]
            to = "" if target == "int" else f", ember.{target}"
            items.append(_at(site.loc, "checked-conversion", f"{_snippet(site.loc)} is a "
                             f"checked conversion ({site.message}): NaN, infinities and values "
                             "out of range are tested at run time",
                             f"ember.unsafe_trunc(value{to}) where the value is known to fit, "
                             "or boundscheck=False"))  # fmt: skip
        else:
            items.append(_at(site.loc, site.kind, f"{site.kind} in a kernel ({site.error}): each "
                             "launch carries the error record and every thread tests the "
                             "condition", CHECK_FIX))  # fmt: skip
    for group in bounds.values():
        shown = list(dict.fromkeys(_snippet(s.loc) for s in group))
        what = "this index" if len(shown) == 1 else "these indices"
        items.append(_at(group[0].loc, "bounds-check", f"bounds check on {', '.join(shown)}: "
                         f"{what} cannot be proven in range, so each access is tested",
                         "guard the access so Ember can prove it (`if i < x.shape[0]:` around "
                         "it, `if i >= x.shape[0]: return` before it, or `for i in "
                         "range(x.shape[0])`), or compile with boundscheck=False once the "
                         "kernel is debugged", count=len(group)))  # fmt: skip
    return items


def _float64_items(fn: ir.Function) -> list[SlowPath]:
    """One item per statement line with float64 arithmetic (outermost expressions)."""
    found: dict[tuple, tuple[Loc, bool, list[str]]] = {}
    for s in _statements(fn.body):
        for e in passes.own_exprs(s):
            for hit in _double_ops(e):
                key = (s.loc.filename, s.loc.line)
                loc, weak, texts = found.get(key, (s.loc, True, []))
                texts.append(ir.fmt(hit))
                found[key] = (loc, weak and _is_weak(hit), texts)
    items = []
    for loc, weak, texts in found.values():
        shown = ", ".join(dict.fromkeys(texts))
        if weak:
            items.append(_at(loc, "python-float", f"{shown} computes in float64: Python float "
                             "literals and arguments (and float()) are float64 when no float32 "
                             "value fixes the type", "make an operand float32: "
                             "ember.float32(i) * 0.5, or pass numpy.float32 scalars",
                             fp64=True))  # fmt: skip
        else:
            items.append(
                _at(
                    loc,
                    "float64",
                    f"float64 arithmetic: {shown}",
                    "use float32 arrays and values where the precision is enough",
                    fp64=True,
                )
            )
    return items


def _statements(body: list[ir.Stmt]):
    for s in body:
        yield s
        for b in passes.bodies(s):
            yield from _statements(b)


_ARITH = (ir.Binary, ir.Unary, ir.Intrinsic, ir.Compare)


def _double_ops(e: ir.Expr):
    """The outermost float64 arithmetic inside ``e``."""
    if _is_double(e):
        yield e
        return
    for c in passes.children(e):
        yield from _double_ops(c)


def _is_double(e: ir.Expr) -> bool:
    if not isinstance(e, _ARITH):
        return False
    operands = passes.children(e) if isinstance(e, ir.Compare) else [e]
    return any(
        isinstance(o.type, Scalar) and o.type.dtype.real.name == "float64" for o in operands
    ) and not (isinstance(e, ir.Intrinsic) and not e.args)


def _is_weak(e: ir.Expr) -> bool:
    if isinstance(e, ir.Compare):
        return all(getattr(c.type, "weak", True) for c in passes.children(e))
    return bool(getattr(e.type, "weak", False))
