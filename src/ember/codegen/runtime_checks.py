"""C for run-time checks and printing (a base class of :class:`~ember.codegen.emitter.Emitter`).

A function that can fail (``ir.Function.can_fail``: it has a check site or calls a function
that does) works with an error context, ``em_ctx_t* em_c``: the kernel builds it from three
hidden trailing parameters (``em_claim``, ``em_rec``, ``em_kid``; :mod:`ember.codegen.abi`)
and passes it to every device function that can fail.

* A failed check calls ``em_failed``: the thread sets ``em_c->failed``; the first failing
  thread of the context wins the claim word (an atomic compare-and-swap in device memory)
  and writes kernel id, site number, block, thread and two values into the record, then
  marks it complete.  No trap: the context stays usable.
* A checked access ``x[i]`` reads ``(em_in_bounds(i, n, site, em_c) ? x.data[i] : 0)``; a
  checked store is ``if (em_in_bounds(...)) x.data[i] = v;``.  A failed check so never
  touches memory out of bounds.
* After each statement that can fail, and at the start of the bodies of an ``if`` or loop
  whose header can, ``if (em_c->failed) return;``: a failing thread stops at the end of
  the statement (a device function returns a zero value, its caller then stops).
* Except in a program with barriers or warp operations (``ir.Program.no_return``): there a
  thread must not leave early, so a failed thread runs on with every memory access
  guarded by ``!em_c->failed`` (loads give 0, stores and atomics are skipped).

The record layout (16 int64 words: :data:`ember.codegen.abi.RECORD_WORDS`) is read on the host
by :mod:`ember.diagnostics.device_errors`.
"""

from __future__ import annotations

import numpy as np

from ember import dtypes
from ember.codegen.abi import DONE
from ember.codegen.helpers import SHORT
from ember.codegen.text import c_string, comment
from ember.dtypes import DType
from ember.frontend import ir, passes
from ember.frontend.types import Array, Scalar, Tuple


class CheckEmitter:
    """Needs ``self.d`` (dialect), ``self.h`` (helpers), ``self.fn`` (current function)."""

    # ------------------------------------------------------------------ helpers
    def ctx_type(self) -> str:
        c = self.d.checks
        text = (
            "// Where a failing thread reports (read on the host by "
            "ember/diagnostics/device_errors.py)\n"
            "typedef struct {\n"
            f"    {c['claim']} claim;  // 0 until the first failure claims the record\n"
            f"    {c['record']} rec;  // state, kernel, site, block xyz, thread xyz, 2 values\n"
            f"    {self.h.c(dtypes.uint32)} kid;  // which kernel specialization this is\n"
            "    int failed;  // this thread failed: it stops after the current statement\n"
            + (f"    {c['item']} item;  // the work-item it runs for\n" if "item" in c else "")
            + "} em_ctx_t;"
        )
        return self.h.use("em_ctx_t", lambda: text)

    def fail_helper(self) -> str:
        """``em_failed(c, site, v0, v1)``: mark the thread failed, record if first.

        The recording itself (``em_fail``) is a separate, not inlined function that takes
        the context's fields by value: a pointer to the local context passed to a call that
        is not inlined would put the context in local memory (a stack frame) in every
        kernel that can fail."""
        return self.h.use("em_failed", self._failed)

    def _failed(self) -> str:
        ctx, record, i64 = (
            self.ctx_type(),
            self.h.use("em_fail", self._fail),
            self.h.c(dtypes.int64),
        )
        item = ", c->item" if "item" in self.d.checks else ""
        body = f"    c->failed = 1;\n    {record}(c->claim, c->rec, c->kid, site, v0, v1{item});"
        return self.h.fn("void", "em_failed", f"{ctx}* c, {i64} site, {i64} v0, {i64} v1", body)

    def _fail(self) -> str:
        c, d = self.d.checks, self.d
        i64, u32 = self.h.c(dtypes.int64), self.h.c(dtypes.uint32)
        where = [
            f"    rec[{3 + k}] = {d.index['block_idx'].format(axis=k, xyz='xyz'[k])};"
            for k in range(3)
        ] + [
            f"    rec[{6 + k}] = {d.index['thread_idx'].format(axis=k, xyz='xyz'[k])};"
            for k in range(3)
        ]
        body = "\n".join([
            "    // first failing thread wins; no trap, so the context stays usable",
            f"    if ({c['claim_cas'].format(p='claim')} != 0u) return;",
            "    rec[1] = kid;",
            "    rec[2] = site;",
            *where,
            "    rec[9] = v0;",
            "    rec[10] = v1;",
            f"    {c['fence']};",
            f"    rec[0] = {DONE};  // complete: the host may read it",
        ])  # fmt: skip
        params = f"{c['claim']} claim, {c['record']} rec, {u32} kid, {i64} site, {i64} v0, {i64} v1"
        if "item" in c:  # the index templates read the work-item through em_it
            params += f", {c['item']} em_it"
        return f"{d.device} {c['cold']}void em_fail({params}) {{\n{body}\n}}"

    def bounds_helper(self) -> str:
        def make() -> str:
            fail, i64, u64 = self.fail_helper(), self.h.c(dtypes.int64), self.d.unsigned[8]
            body = (
                f"    if (({u64})i < ({u64})n) return true;  // also catches i < 0\n"
                f"    {fail}(c, site, i, n);\n"
                "    return false;"
            )
            params = f"{i64} i, {i64} n, {i64} site, em_ctx_t* c"
            return self.h.fn("bool", "em_in_bounds", params, body)

        return self.h.use("em_in_bounds", make)

    def convert_helper(self, src: DType, dst: DType) -> str:
        calc = dtypes.float64 if src.name == "float64" else dtypes.float32
        name = f"em_cvt_{SHORT[dst.name]}_{SHORT[calc.name]}"
        return self.h.use(name, lambda: self._convert(name, calc, dst))

    def _convert(self, name: str, calc: DType, dst: DType) -> str:
        fail, t, s, i64 = self.fail_helper(), self.h.c(dst), self.h.c(calc), self.h.c(dtypes.int64)
        info = np.iinfo(dst.numpy)
        low, high = int(info.min), int(info.max) + 1  # high is a power of two: exact
        exact = float(calc.numpy.type(low - 1)) == low - 1
        lo = f"x > {self.literal(float(low - 1), _f(calc))[0]}" if exact else (
            f"x >= {self.literal(float(low), _f(calc))[0]}"
        )  # fmt: skip
        hi = f"x < {self.literal(float(high), _f(calc))[0]}"
        bits = self.d.checks["f64_bits" if calc.name == "float64" else "f32_bits"].format(x="x")
        body = (
            f"    // checked conversion (checking on): NaN, infinities and values out of\n"
            f"    // {dst.name}'s range fail instead of giving an unspecified value\n"
            f"    if ({lo} && {hi}) return ({t})x;\n"
            f"    {fail}(c, site, ({i64}){bits}, {calc.bits});\n"
            "    return 0;"
        )
        return self.h.fn(t, name, f"{s} x, {i64} site, em_ctx_t* c", body)

    # ------------------------------------------------------------------ expressions
    def guard(self, checks: list[ir.IndexCheck]) -> str | None:
        """The condition under which an access happens: every index in range (a failed
        check records itself) and, in a program whose threads cannot stop early, the thread
        has not failed.  None: unconditional."""
        parts = ["!em_c->failed"] if self.program.no_return and self.fn.can_fail else []
        helper = self.bounds_helper() if checks else ""
        parts += [
            f"{helper}({self.expr(c.index)}, {self.expr(c.extent)}, {c.site.id}, em_c)"
            for c in checks
        ]
        return " && ".join(parts) or None

    def guarded(self, checks: list[ir.IndexCheck], text: str, prec: int) -> tuple[str, int]:
        """``text`` (an access) evaluated only when its guard holds, else 0."""
        cond = self.guard(checks)
        if cond is None:
            return text, prec
        return f"({cond} ? {text} : 0)", 16

    def stops_on_failure(self) -> bool:
        """Whether a failed thread returns at the end of the statement.  Not in a program
        with barriers or warp operations: the other threads would wait for it there (and
        PoCL compiles a branch that can return before a barrier as if it were uniform).  A
        failed thread then runs to the end with every access skipped (loads give 0)."""
        return self.fn.can_fail and not self.program.no_return

    def checked_cast(self, e: ir.Cast) -> tuple[str, int]:
        helper = self.convert_helper(e.value.type.dtype, e.type.dtype)
        return f"{helper}({self.expr(e.value)}, {e.site.id}, em_c)", 16

    # ------------------------------------------------------------------ statements
    def fails(self, s: ir.Stmt) -> bool:
        """Whether statement ``s`` itself (not its nested bodies) can fail."""
        if isinstance(s, ir.Store) and s.checks:
            return True
        for e in passes.own_exprs(s):
            for sub in passes.subexprs(e):
                if passes.sites_of(s, sub):
                    return True
                if isinstance(sub, ir.Call) and sub.function.can_fail:
                    return True
        return False

    def bail(self) -> str:
        """Stop this thread if it failed: return (a zero value from a device function)."""
        return f"if (em_c->failed) {self.zero_return()}"

    def zero_return(self) -> str:
        fn = self.fn
        t = fn.return_type
        if fn.is_kernel:
            return self.d.kernel_exit
        if isinstance(t, Tuple) or not isinstance(t, Scalar | Array):
            return "return;"
        if isinstance(t, Array) and not t.is_pointer:
            return f"{{ {self.ctype(t)} em_z = {{0}}; return em_z; }}"
        return "return 0;"

    def raise_stmt(self, s: ir.Raise, depth: int) -> None:
        self.put(
            depth, f"{self.fail_helper()}(em_c, {s.site.id}, 0, 0);  // {comment(s.site.error)}"
        )
        if not self.program.no_return:
            self.put(depth, self.zero_return())

    def context_prologue(self) -> list[str]:
        ctx = self.ctx_type()
        item = ", em_it" if "item" in self.d.checks else ""
        return [f"{ctx} em_ctx = {{em_claim, em_rec, em_kid, 0{item}}};", f"{ctx}* em_c = &em_ctx;"]

    # ------------------------------------------------------------------ print
    def print_stmt(self, s: ir.Print, depth: int) -> None:
        fmt, args = [], []
        for item in s.items:
            if isinstance(item, str):
                fmt.append(item.replace("%", "%%"))
                continue
            spec, arg = self._print_arg(item)
            fmt.append(spec)
            args.append(arg)
        text = "".join(fmt)
        self.put(depth, f"printf({c_string(text)}{''.join(', ' + a for a in args)});")

    def _print_arg(self, e: ir.Expr) -> tuple[str, str]:
        c = self.d.checks
        dt = e.type.dtype
        value = self.expr(e)
        if dt.kind == "b":
            return "%s", f'{self.expr(e, 4)} ? "True" : "False"'
        if dt.is_float:
            cast = c["float_cast"] if dt.name != "float64" else ""
            return "%g", f"{cast}{self.expr(e, 15)}" if cast else value
        if dt.is_complex:  # Python's form, (1+2j); the value is printed twice, once per part
            cast = c["float_cast"] if dt.name != "complex128" else ""
            re, im = (f"{cast}{value_part}" for value_part in self.complex_parts(e))
            return "(%g%+gj)", f"{re}, {im}"
        if dt.kind == "u":
            return c["uint_fmt"], f"{c['uint_cast']}{self.expr(e, 15)}"
        return c["int_fmt"], f"{c['int_cast']}{self.expr(e, 15)}"


def _f(dt: DType) -> Scalar:
    from ember.frontend.types import scalar

    return scalar(dt)
