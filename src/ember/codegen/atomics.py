"""Atomic read-modify-write and warp reduction helpers, for every dialect.

``load`` is the one that does not write: a volatile read, so that a loop polling a flag
sees another thread's store (no copy kept in a register, and on GPUs no incoherent L1 hit).

Each atomic is a small helper ``em_atomic_<op>_<dtype>[_<space>](pointer, value...)``
returning the previous element; its body is the dialect's (:meth:`.Dialect.atomic_body`).
Where the dialect has the instruction it is one call
(CUDA ``atomicAdd``, OpenCL ``atomic_add`` / ``atom_add`` for 64-bit ints); where it has not
(float add on OpenCL 1.2, float min/max everywhere) it is a compare-and-swap loop on the
element's bit pattern.  Float min/max keep the current value on ties and NaN, like Python's
``min``/``max``; float compare-and-swap compares bit patterns.
"""

from __future__ import annotations

from ember.codegen.helpers import SHORT, Helpers
from ember.dtypes import DType


def atomic(h: Helpers, op: str, dt: DType, space: str) -> str:
    """The helper implementing atomic ``op`` on ``dt`` elements in ``space`` memory."""
    suffix = f"_{space}" if h.d.address_spaces or h.d.atomics_by_space else ""
    name = f"em_atomic_{op}_{SHORT[dt.name]}{suffix}"
    if dt.itemsize == 8:
        h.features.add("int64_atomics")
    return h.use(name, lambda: _atomic(h, name, op, dt, space))


def _atomic(h: Helpers, name: str, op: str, dt: DType, space: str) -> str:
    t = h.c(dt)
    element = h.d.storage.get(dt.name, h.d.types[dt.name])  # 16-bit floats: half / ushort
    if op == "load":  # a volatile read: the compiler may neither cache nor drop it
        pointer = f"volatile {h.d.space(space)}{element}*"
        return h.fn(
            t, name, f"{h.d.atomic_pointer(element, space)} p", f"    return *({pointer})p;"
        )
    params = f"{h.d.atomic_pointer(element, space)} p, " + (
        f"{t} expected, {t} v" if op == "cas" else f"{t} v"
    )
    if dt.itemsize < 4:  # no instruction on 8- and 16-bit elements: their 32-bit word
        body = subword_cas_loop(h, op, dt, space)
    else:
        body = h.d.atomic_body(h, op, dt, t, space)
    return h.fn(t, name, params, body)


def int_cas_loop(h: Helpers, op: str, dt: DType, space: str) -> str:
    """``inc``/``dec`` with CUDA's semantics as a compare-and-swap loop (32/64-bit ints):
    inc stores 0 once the element reaches the limit ``v``, dec stores ``v`` at 0 or past it."""
    bits, _, _, cas = h.d.cas_bits[dt.itemsize]
    q = h.d.atomic_pointer(bits, space)
    t, u = h.c(dt), h.d.unsigned[dt.itemsize]
    if op == "inc":
        step = f"(assumed >= v) ? ({t})0 : ({t})(({u})assumed + 1u)"
    else:
        step = f"(assumed == 0 || assumed > v) ? v : ({t})(({u})assumed - 1u)"
    return (
        f"    // compare-and-swap loop: CUDA's atomic{op.capitalize()} (wraps at the limit)\n"
        f"    {t} old = *p, assumed;\n"
        "    do {\n"
        "        assumed = old;\n"
        f"        old = ({t}){cas}(({q})p, ({bits})assumed, ({bits})({step}));\n"
        "    } while (old != assumed);\n"
        "    return old;"
    )


def subword_cas_loop(h: Helpers, op: str, dt: DType, space: str) -> str:
    """``cas``/``exchange`` on an 8- or 16-bit element: a compare-and-swap loop on the
    aligned 32-bit word holding it (little-endian lanes, as on every GPU and CPU device);
    a compare-and-swap compares bit patterns (floats too)."""
    bits, _, _, cas = h.d.cas_bits[4]
    q, u32 = h.d.atomic_pointer(bits, space), h.d.unsigned[4]
    addr = h.d.address_type
    width = dt.itemsize * 8
    if dt.is_narrow:  # a float in registers, 16 bits in memory
        to_bits = f"({u32}){h.narrow(dt, 'store')}({{x}})"
        from_bits = f"{h.narrow(dt, 'load')}(({h.d.types['uint16']}){{x}})"
    else:
        ut = h.d.types[f"uint{width}"]
        to_bits = f"({u32})({ut})({{x}})"
        from_bits = f"({h.c(dt)})({ut})({{x}})"
    keep = ""
    if op == "cas":
        expected, current = to_bits.format(x="expected"), from_bits.format(x="cur")
        keep = f"        if (cur != {expected}) return {current};\n"
    return (
        f"    // {width}-bit elements: compare-and-swap on the 32-bit word that holds them\n"
        f"    {q} w = ({q})(({addr})p & ~({addr})3);\n"
        f"    {u32} shift = ({u32})(({addr})p & {4 - dt.itemsize}) * 8u;\n"
        f"    {u32} mask = {(1 << width) - 1}u << shift;\n"
        f"    {u32} old = ({u32})*w, assumed, cur;\n"
        "    do {\n"
        "        assumed = old;\n"
        "        cur = (assumed & mask) >> shift;\n"
        f"{keep}"
        f"        {u32} next = (assumed & ~mask) | ({to_bits.format(x='v')} << shift);\n"
        f"        old = ({u32}){cas}(w, ({bits})assumed, ({bits})next);\n"
        "    } while (old != assumed);\n"
        f"    return {from_bits.format(x='cur')};"
    )


def cas_loop(h: Helpers, op: str, dt: DType, space: str) -> str:
    """The body of a float atomic ``add``/``sub``/``min``/``max`` as a compare-and-swap loop
    on the element's bit pattern (the dialect's :attr:`~.Dialect.cas_bits`), for dialects
    without the instruction."""
    bits, to_bits, from_bits, cas = h.d.cas_bits[dt.itemsize]
    q = h.d.atomic_pointer(bits, space or "global")
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
    shuffled = h.d.shuffle["shfl_xor"].format(v="(int)v" if via_int else "v", k="offset")
    body = (
        "    // butterfly: after log2(warpSize) steps every lane holds the result\n"
        f"    for (int offset = {h.d.lanes} / 2; offset > 0; offset /= 2) {{\n"
        f"        {t} o = ({t}){shuffled};\n"
        f"        v = {combine};\n"
        "    }\n"
        "    return v;"
    )
    return h.fn(t, name, f"{t} v", body)
