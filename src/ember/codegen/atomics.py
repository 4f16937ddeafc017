"""Atomic read-modify-write and warp reduction helpers, for both dialects.

Each atomic is a small helper ``em_atomic_<op>_<dtype>[_<space>](pointer, value...)``
returning the previous element.  Where the dialect has the instruction it is one call
(CUDA ``atomicAdd``, OpenCL ``atomic_add`` / ``atom_add`` for 64-bit ints); where it has not
(float add on OpenCL 1.2, float min/max everywhere) it is a compare-and-swap loop on the
element's bit pattern.  Float min/max keep the current value on ties and NaN, like Python's
``min``/``max``; float compare-and-swap compares bit patterns.
"""

from __future__ import annotations

from ember.codegen.helpers import SHORT, Helpers
from ember.dtypes import DType

# CUDA: functions taking int / unsigned int / unsigned long long (and float for add/exch).
_CUDA_NATIVE = {
    "add": {"int32", "uint32", "uint64", "float32", "float64"},
    "sub": {"int32", "uint32"},
    "min": {"int32", "uint32", "int64", "uint64"},
    "max": {"int32", "uint32", "int64", "uint64"},
    "exchange": {"int32", "uint32", "uint64", "float32"},
    "cas": {"int32", "uint32", "uint64"},
    "and": {"int32", "uint32", "uint64"},
    "or": {"int32", "uint32", "uint64"},
    "xor": {"int32", "uint32", "uint64"},
}
_CUDA_NAME = {
    "add": "atomicAdd",
    "sub": "atomicSub",
    "min": "atomicMin",
    "max": "atomicMax",
    "exchange": "atomicExch",
    "cas": "atomicCAS",
    "and": "atomicAnd",
    "or": "atomicOr",
    "xor": "atomicXor",
}
_OPENCL_NAME = {
    "add": "add",
    "sub": "sub",
    "min": "min",
    "max": "max",
    "exchange": "xchg",
    "cas": "cmpxchg",
    "and": "and",
    "or": "or",
    "xor": "xor",
}
# (bits type, to bits, from bits, CAS) for compare-and-swap loops on floats
_CAS = {
    ("cuda", 4): ("int", "__float_as_int", "__int_as_float", "atomicCAS"),
    ("cuda", 8): ("unsigned long long", "(unsigned long long)__double_as_longlong",
                  "__longlong_as_double", "atomicCAS"),
    ("opencl", 4): ("uint", "as_uint", "as_float", "atomic_cmpxchg"),
    ("opencl", 8): ("ulong", "as_ulong", "as_double", "atom_cmpxchg"),
}  # fmt: skip


def atomic(h: Helpers, op: str, dt: DType, space: str) -> str:
    """The helper implementing atomic ``op`` on ``dt`` elements in ``space`` memory."""
    suffix = f"_{space}" if h.d.name == "opencl" else ""
    name = f"em_atomic_{op}_{SHORT[dt.name]}{suffix}"
    if dt.itemsize == 8:
        h.features.add("int64_atomics")
    return h.use(name, lambda: _atomic(h, name, op, dt, space))


def _pointer(h: Helpers, ctype: str, space: str) -> str:
    if h.d.name == "cuda":
        return f"{ctype}*"
    qualifier = h.d.global_space if space == "global" else h.d.shared_space
    return f"volatile {qualifier}{ctype}*"


def _atomic(h: Helpers, name: str, op: str, dt: DType, space: str) -> str:
    t = h.c(dt)
    params = f"{_pointer(h, t, space)} p, " + ("{t} expected, {t} v" if op == "cas" else "{t} v")
    params = params.format(t=t)
    if h.d.name == "cuda":
        body = _cuda_body(h, op, dt, t)
    else:
        body = _opencl_body(h, op, dt, t, space)
    return h.fn(t, name, params, body)


def _cuda_body(h: Helpers, op: str, dt: DType, t: str) -> str:
    fn = _CUDA_NAME[op]
    args = "expected, v" if op == "cas" else "v"
    if dt.name in _CUDA_NATIVE[op]:
        return f"    return {fn}(p, {args});"
    if dt.is_integer:  # int64 (and uint64 sub): same bits as unsigned long long
        ull = "unsigned long long"
        if op == "sub":
            return f"    return ({t})atomicAdd(({ull}*)p, ({ull})0 - ({ull})v);"
        cast_args = f"({ull})expected, ({ull})v" if op == "cas" else f"({ull})v"
        return f"    return ({t}){fn}(({ull}*)p, {cast_args});"
    if op == "sub":
        return "    return atomicAdd(p, -v);"
    if op in ("exchange", "cas"):
        bits, to_bits, from_bits, cas = _CAS[("cuda", dt.itemsize)]
        if op == "exchange":
            return f"    return {from_bits}(atomicExch(({bits}*)p, {to_bits}(v)));"
        return f"    return {from_bits}({cas}(({bits}*)p, {to_bits}(expected), {to_bits}(v)));"
    return _cas_loop(h, op, dt, t, "")


def _opencl_body(h: Helpers, op: str, dt: DType, t: str, space: str) -> str:
    prefix = "atom_" if dt.itemsize == 8 else "atomic_"
    args = "expected, v" if op == "cas" else "v"
    if dt.is_integer:
        return f"    return {prefix}{_OPENCL_NAME[op]}(p, {args});"
    if op == "exchange" and dt.itemsize == 4:
        return "    return atomic_xchg(p, v);"
    bits, to_bits, from_bits, cas = _CAS[("opencl", dt.itemsize)]
    q = _pointer(h, bits, space)
    if op == "exchange":
        return f"    return {from_bits}({prefix}xchg(({q})p, {to_bits}(v)));"
    if op == "cas":
        return f"    return {from_bits}({cas}(({q})p, {to_bits}(expected), {to_bits}(v)));"
    return _cas_loop(h, op, dt, t, space)


def _cas_loop(h: Helpers, op: str, dt: DType, t: str, space: str) -> str:
    bits, to_bits, from_bits, cas = _CAS[(h.d.name, dt.itemsize)]
    q = _pointer(h, bits, space or "global") if h.d.name == "opencl" else f"{bits}*"
    if op in ("add", "sub"):
        sign = "+" if op == "add" else "-"
        step = f"        old = {cas}(q, assumed, {to_bits}({from_bits}(assumed) {sign} v));"
        keep = ""
    else:
        cmp = "<" if op == "min" else ">"
        keep = f"        if (!(v {cmp} {from_bits}(assumed))) break;  // keep ties and NaN\n"
        step = f"        old = {cas}(q, assumed, {to_bits}(v));"
    return (
        f"    // compare-and-swap loop: the dialect has no {op} on {dt.name}\n"
        f"    {q} q = ({q})p;\n"
        f"    {bits} old = *q, assumed;\n"
        "    do {\n"
        "        assumed = old;\n"
        f"{keep}{step}\n"
        "    } while (old != assumed);\n"
        f"    return {from_bits}(old);"
    )


# ------------------------------------------------------------------------- warps


def warp_reduce(h: Helpers, op: str, dt: DType, combine: str) -> str:
    """``warp_sum/min/max`` for ``dt``: a built-in where the dialect has one, else a
    butterfly of xor-shuffles.  ``combine`` is a C expression of ``v`` and ``o``."""
    name = f"em_{op}_{SHORT[dt.name]}"
    return h.use(name, lambda: _warp_reduce(h, name, op, dt, combine))


def _warp_reduce(h: Helpers, name: str, op: str, dt: DType, combine: str) -> str:
    t = h.c(dt)
    builtin = h.d.subgroup_reduce.get(op)
    if builtin:
        h.features.add("subgroups")
        wide = t if dt.itemsize >= 4 else h.d.types["int32"]
        return h.fn(t, name, f"{t} v", f"    return ({t}){builtin}(({wide})v);")
    via_int = dt.name not in h.d.shuffle_types
    shuffled = "__shfl_xor_sync(0xffffffffu, {v}, offset)".format(v="(int)v" if via_int else "v")
    body = (
        "    // butterfly: after log2(warpSize) steps every lane holds the result\n"
        "    for (int offset = warpSize / 2; offset > 0; offset /= 2) {\n"
        f"        {t} o = ({t}){shuffled};\n"
        f"        v = {combine};\n"
        "    }\n"
        "    return v;"
    )
    return h.fn(t, name, f"{t} v", body)
