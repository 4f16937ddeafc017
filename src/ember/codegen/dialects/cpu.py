"""C for the cpu backend (clang from the ``ziglang`` wheel): a work-group is a function call
that runs its work-items in loops.

* The program is first lowered (:meth:`CPUDialect.lower`, :mod:`ember.codegen.workgroup`):
  barriers split the kernel into loops over work-items, sub-group operations read scratch
  arrays, values that cross a barrier live in per-work-item arrays.
* The kernel is a ``static inline`` function run once per work-group with the group's
  index; :meth:`~CPUDialect.kernel_entry` adds the exported ``em_run_<name>`` that unpacks
  the launch record and takes work-groups from a shared counter
  (:func:`ember.codegen.cpu_runtime.entry`).
* Device functions get the current work-item as a hidden last parameter ``em_it`` (the
  kernel keeps its indices in loop counters, and updates ``em_item`` when a device
  function or the error record may read it).
* Types are ``<stdint.h>``'s, there are no address spaces, atomics are ``__atomic``
  builtins (plain read-modify-write on ``ember.shared`` arrays: one thread runs a group),
  float16 is stored as bits and converted by the runtime header.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from ember.codegen import cpu_runtime
from ember.codegen.dialects.base import Dialect
from ember.dtypes import DType
from ember.frontend.types import Array

if TYPE_CHECKING:  # the backend class holds the dialect: a cache hit imports this module
    from ember.codegen.helpers import Helpers

_FETCH = {
    "add": "__atomic_fetch_add", "sub": "__atomic_fetch_sub", "and": "__atomic_fetch_and",
    "or": "__atomic_fetch_or", "xor": "__atomic_fetch_xor", "exchange": "__atomic_exchange_n",
    "min": "__atomic_fetch_min", "max": "__atomic_fetch_max",
}  # fmt: skip
_PLAIN = {"add": "+", "sub": "-", "and": "&", "or": "|", "xor": "^"}
_UNLOWERED = "em_not_lowered_{v}_{k}"  # shuffles never reach the emitter (lowered before)


class CPUDialect(Dialect):
    """C11 for clang, run by the cpu backend."""

    name = "cpu"
    source_suffix = ".c"
    language = "C"  # raw kernels: EMBER_KERNEL functions, OpenCL's work-item functions
    source_markers = re.compile(r"\bEMBER_KERNEL\b")  # raw kernels (backends/cpu/raw.py)
    preamble = cpu_runtime.HEADER
    kernel = "static inline __attribute__((always_inline)) void"
    device = "static"
    shared_decl = "_Alignas(64) "  # a stack array of the thread running the group
    atomics_by_space = True  # shared atomics are plain read-modify-writes (_plain_atomic)
    constant_space = "const "  # tables are read-only
    constant_decl = "static const "
    # the launch's dynamic shared bytes (launch record word 6), on the stack as well
    dynamic_shared_decl = "_Alignas(64) unsigned char em_dyn[em_dp->shm > 0 ? em_dp->shm : 1];"
    address_type = "uint64_t"
    types = {
        "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
        "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
        "uint64": "uint64_t", "float16": "float", "bfloat16": "float", "float32": "float",
        "float64": "double",
    }  # fmt: skip
    storage = {"float16": "uint16_t", "bfloat16": "uint16_t"}
    suffix = {"int64": "LL", "uint64": "ULL", "uint32": "u", "float32": "f"}
    unsigned = {4: "uint32_t", 8: "uint64_t"}
    inf = {"float32": "INFINITY", "float64": "(double)INFINITY"}
    nan = {"float32": "NAN", "float64": "(double)NAN"}
    # In device functions (the kernel's own indices are its loop counters: workgroup.py).
    index = {
        "thread_idx": "em_it->l[{axis}]",
        "block_idx": "em_it->g[{axis}]",
        "block_dim": "em_it->d->b[{axis}]",
        "grid_dim": "em_it->d->n[{axis}]",
        "global_id": "(em_it->g[{axis}] * em_it->d->b[{axis}] + em_it->l[{axis}])",
        "global_size": "(em_it->d->n[{axis}] * em_it->d->b[{axis}])",
        "warp_size": "32LL",
        "lane_id": "(em_it->wi & 31)",
    }
    barrier = "/* barrier: the kernel is split here (codegen/workgroup.py) */"
    fence = "__atomic_thread_fence(__ATOMIC_SEQ_CST)"
    lanes = "32"
    float_suffix_names = True
    math_names = {"rsqrt": "em_rsqrt"}
    missing_math = frozenset({"erfinv", "erfcinv"})  # not in libm: codegen/mathlib.py
    bit_ops = {  # the runtime header's (cpu_runtime.py)
        "popc": ("em_popc32", "em_popc64"),
        "clz": ("em_clz32", "em_clz64"),
        "mulhi": ("em_mulhi_i32", "em_mulhi_i64", "em_mulhi_u32", "em_mulhi_u64"),
    }
    predicate = "{f}({x})"
    shuffle = {k: _UNLOWERED for k in ("shfl", "shfl_up", "shfl_down", "shfl_xor")}
    shuffle_types = frozenset(
        {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float16", "bfloat16", "float32", "float64"}
    )  # fmt: skip
    f16_load = "em_f16_load({ptr}[{i}])"
    f16_store = "{ptr}[{i}] = em_f16_store({v});"
    cas_bits = {
        4: ("uint32_t", "em_f32_bits", "em_f32_from", "em_cas_u32"),
        8: ("uint64_t", "em_f64_bits", "em_f64_from", "em_cas_u64"),
    }
    checks = {
        "claim": "uint32_t*",
        "record": "volatile int64_t*",  # host memory, read in place
        "claim_cas": "em_claim_cas({p})",
        "fence": "__atomic_thread_fence(__ATOMIC_SEQ_CST)",
        "f32_bits": "(int32_t)em_f32_bits({x})",
        "f64_bits": "(int64_t)em_f64_bits({x})",
        "int_fmt": "%lld",
        "uint_fmt": "%llu",
        "int_cast": "(long long)",
        "uint_cast": "(unsigned long long)",
        "float_cast": "(double)",
        "cold": "__attribute__((noinline, cold)) ",
        "item": "const em_item_t*",  # the error record names the work-item
    }
    kernel_hidden = ("const em_dims* em_dp", "int64_t em_gx", "int64_t em_gy", "int64_t em_gz")
    device_hidden = ("const em_item_t* em_it",)
    call_hidden = ("em_it",)
    kernel_exit = "EM_EXIT;"  # leave this work-item (defined by each item loop)
    offline_warp_size = 32
    offline_features = frozenset(
        {"fp64", "fp16", "int64_atomics", "subgroups", "subgroup_shuffle",
         "subgroup_shuffle_relative"}
    )  # fmt: skip

    # ---------------------------------------------------------------- lowering and frame
    def lower(self, program):
        from ember.codegen.workgroup import lower

        return lower(program)

    def kernel_prologue(self, program) -> list[str]:
        return [
            "const int64_t em_bx = em_dp->b[0], em_by = em_dp->b[1], em_bz = em_dp->b[2];",
            "const int64_t em_nx = em_dp->n[0], em_ny = em_dp->n[1], em_nz = em_dp->n[2];",
            "const int64_t em_wg = em_bx * em_by * em_bz;",
            "int64_t em_lead = 0;  // the work-item group-level code reads values from",
            "em_item_t em_item = {{0, 0, 0}, {em_gx, em_gy, em_gz}, 0, em_dp};",
            "const em_item_t* const em_it = &em_item;",
        ]

    def kernel_entry(self, name: str, params: list, program) -> str:
        """The exported entry, after the figures ``kernel.inspect(stage="resources")``
        reports: static shared bytes per work-group, bytes kept per work-item across
        barriers (the per-work-item arrays)."""
        from ember.codegen import workitems as wi
        from ember.codegen.emitter import uses_dynamic_shared
        from ember.frontend import ir

        body = program.kernel.body
        shared = sum(
            s.var.type.dtype.itemsize * math.prod(s.var.type.shape)
            for s in body
            if isinstance(s, ir.ArrayDecl) and not s.size
        )
        item = sum(_item_bytes(s) for s in body if isinstance(s, wi.ItemArray | wi.ItemStorage))
        dynamic = int(uses_dynamic_shared(program))
        resources = (
            f"EM_EXPORT const int64_t em_shared_bytes_{name} = {shared};\n"
            f"EM_EXPORT const int64_t em_item_bytes_{name} = {item};\n"
            f"EM_EXPORT const int64_t em_dynamic_{name} = {dynamic};\n"
        )
        fields = []
        for ctype, p in params:
            pointer = p.kind in ("data", "claim", "record")
            fields.append((ctype, p.name, "p" if pointer else cpu_runtime.WORD_FIELD[p.dtype.name]))
        args = "".join(f"{p.name}, " for _, p in params)
        call = f"{name}({args}&em_d, em_gx, em_gy, em_gz);"
        return resources + cpu_runtime.entry(name, fields, call)

    def statement(self, emitter, s, depth: int) -> None:
        from ember.codegen import workitems as wi

        if isinstance(s, wi.ItemLoop):
            _item_loop(emitter, s, depth)
        elif isinstance(s, wi.ItemExit):
            done = "em_done[em_wi] = 1; " if s.done else ""
            emitter.put(depth, f"{done}EM_EXIT;")
        elif isinstance(s, wi.ItemArray):
            _item_array(emitter, s, depth)
        elif isinstance(s, wi.ItemStorage):
            t = s.var.type
            emitter.put(
                depth,
                f"_Alignas(64) {emitter.storage(t.dtype)} em_ls_{s.var.name}[em_wg * "
                f"{math.prod(t.shape)}];  // per-thread array, one slice per work-item",
            )
        elif isinstance(s, wi.LeadUpdate):
            emitter.put(depth, "em_lead = 0;  // the first work-item still running")
            emitter.put(depth, "while (em_lead < em_wg && em_done[em_lead]) em_lead++;")
            emitter.put(depth, "if (em_lead == em_wg) return;")
        else:
            super().statement(emitter, s, depth)

    # ---------------------------------------------------------------- code snippets
    def atomic_body(self, h: Helpers, op: str, dt: DType, t: str, space: str) -> str:
        from ember.codegen.atomics import cas_loop, int_cas_loop

        if space == "shared":
            return _plain_atomic(self, op, dt, t)
        if op in ("inc", "dec"):  # CUDA's, with a limit: a compare-and-swap loop
            return int_cas_loop(h, op, dt, space)
        if dt.is_integer:
            if op == "cas":
                return (
                    "    __atomic_compare_exchange_n(p, &expected, v, 0, __ATOMIC_RELAXED, "
                    "__ATOMIC_RELAXED);\n    return expected;"
                )
            return f"    return {_FETCH[op]}(p, v, __ATOMIC_RELAXED);"
        bits, to_bits, from_bits, cas = self.cas_bits[dt.itemsize]
        if op == "exchange":
            return (
                f"    return {from_bits}(__atomic_exchange_n(({bits}*)p, {to_bits}(v), "
                "__ATOMIC_RELAXED));"
            )
        if op == "cas":
            return f"    return {from_bits}({cas}(({bits}*)p, {to_bits}(expected), {to_bits}(v)));"
        return cas_loop(h, op, dt, space)

    def f16_helper(self, h: Helpers, name: str, what: str) -> str:
        if what in ("load", "store"):
            return f"// {name}: in the runtime header"
        if what == "round_d":
            h.features.add("fp64")
            return h.fn("float", name, "double x", "    return em_f16_load(em_f16_store_d(x));")
        return h.fn("float", name, "float x", "    return em_f16_load(em_f16_store(x));")


def _plain_atomic(d: CPUDialect, op: str, dt: DType, t: str) -> str:
    """An atomic on a work-group's shared array: the group runs on one thread, so a plain
    read-modify-write is atomic (integers wrap through their unsigned type)."""
    lines = [f"    {t} old = *p;  // one thread runs the work-group: no other can interleave"]
    if op in _PLAIN:
        if dt.is_integer and op in ("add", "sub"):
            u = d.unsigned[max(dt.itemsize, 4)]
            lines.append(f"    *p = ({t})(({u})old {_PLAIN[op]} ({u})v);")
        else:
            lines.append(f"    *p = old {_PLAIN[op]} v;")
    elif op == "exchange":
        lines.append("    *p = v;")
    elif op == "inc":
        u = d.unsigned[max(dt.itemsize, 4)]
        lines.append(f"    *p = (old >= v) ? ({t})0 : ({t})(({u})old + 1u);  // CUDA's atomicInc")
    elif op == "dec":
        u = d.unsigned[max(dt.itemsize, 4)]
        lines.append(f"    *p = (old == 0 || old > v) ? v : ({t})(({u})old - 1u);  // atomicDec")
    elif op in ("min", "max"):
        cmp = "<" if op == "min" else ">"
        lines.append(f"    if (v {cmp} old) *p = v;  // keep ties and NaN, as on GPUs")
    elif dt.is_integer:  # cas
        lines.append("    if (old == expected) *p = v;")
    else:  # cas on floats compares bit patterns, as on GPUs
        bits = d.cas_bits[dt.itemsize][1]
        lines.append(f"    if ({bits}(old) == {bits}(expected)) *p = v;")
    lines.append("    return old;")
    return "\n".join(lines)


def _item_loop(emitter, s, depth: int) -> None:
    """A region: loops over the work-items (z, y, x; x innermost and bounded by ``stop``)."""
    put = emitter.put
    put(depth, f"#define EM_EXIT goto em_next_{s.label}")
    put(depth, "for (int64_t em_lz = 0; em_lz < em_bz; em_lz++) {")
    put(depth, "for (int64_t em_ly = 0; em_ly < em_by; em_ly++) {")
    bound = "em_bx"
    if s.stop is not None:
        put(depth + 1, f"int64_t em_x1 = {emitter.expr(s.stop)};  // the guard, as a bound")
        put(depth + 1, "if (em_x1 > em_bx) em_x1 = em_bx;")
        bound = "em_x1"
    put(depth + 1, f"for (int64_t em_lx = 0; em_lx < {bound}; em_lx++) {{")
    inner = depth + 2
    put(inner, "const int64_t em_wi = (em_lz * em_by + em_ly) * em_bx + em_lx;")
    if s.item:
        put(inner, "em_item.l[0] = em_lx; em_item.l[1] = em_ly; em_item.l[2] = em_lz;")
        put(inner, "em_item.wi = em_wi;")
    if s.done:
        put(inner, "if (em_done[em_wi]) continue;  // it returned")
    for var in s.arrays:  # per-thread arrays (ember.local)
        t, size = var.type, math.prod(var.type.shape)
        if s.declares:
            put(inner, f"{emitter.storage(t.dtype)} {var.name}[{size}];  // per thread")
        else:
            put(inner, f"{emitter.ctype(t)} const {var.name} = em_ls_{var.name} + em_wi * {size};")
    if s.failed == "reset":
        put(inner, "em_ctx.failed = 0;")
    elif s.failed == "kept":
        put(inner, "em_ctx.failed = em_failed_w[em_wi];")
    emitter.block(s.body, inner)
    put(inner, f"em_next_{s.label}: ;")
    if s.failed == "kept":
        put(inner, "em_failed_w[em_wi] = em_ctx.failed;")
    put(depth + 1, "}")
    put(depth, "}}")
    put(depth, "#undef EM_EXIT")
    emitter.last_line = None


def _item_bytes(s) -> int:
    """Bytes one work-item's slot of item array ``s`` takes."""
    from ember.codegen import workitems as wi

    t = s.var.type
    if isinstance(s, wi.ItemStorage):
        return t.dtype.itemsize * math.prod(t.shape)
    if s.scratch:
        return t.dtype.itemsize
    if isinstance(t, Array):  # a struct (data pointer, shape, strides) or a shared pointer
        return 8 if t.space == "shared" else 8 + 8 * t.ndim * (2 if t.layout == "A" else 1)
    return 4 if t.dtype.is_narrow else t.dtype.itemsize  # (16-bit floats: a float)


def _item_array(emitter, s, depth: int) -> None:
    t = s.var.type

    ctype = emitter.storage(t.dtype) if s.scratch else emitter.ctype(t)
    emitter.put(depth, f"{ctype} {s.var.name}[em_wg];  // one per work-item")
    if s.zero:
        emitter.put(depth, f"for (int64_t em_k = 0; em_k < em_wg; em_k++) {s.var.name}[em_k] = 0;")


CPU = CPUDialect()
