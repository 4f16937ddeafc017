"""OpenCL C 1.2 (+ extensions): pointers carry address spaces, buffers cannot be offset,
float16 goes through ``vload_half``/``vstore_half_rte``, 32-bit atomics are ``atomic_*`` and
64-bit ones ``atom_*`` (``cl_khr_int64_*_atomics``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ember.codegen.dialects.base import Dialect
from ember.dtypes import DType

if TYPE_CHECKING:  # the backend class holds the dialect: a cache hit imports this module
    from ember.codegen.helpers import Helpers

_ATOMIC = {
    "add": "add", "sub": "sub", "min": "min", "max": "max", "exchange": "xchg",
    "cas": "cmpxchg", "and": "and", "or": "or", "xor": "xor",
}  # fmt: skip
_EXT = "#pragma OPENCL EXTENSION {} : enable"


class OpenCLDialect(Dialect):
    """OpenCL C for any OpenCL 1.2+ device."""

    name = "opencl"
    source_suffix = ".cl"
    language = "OpenCL C"
    source_markers = re.compile(
        r"\b(__kernel|get_global_id|get_local_id|get_group_id|get_local_size|__local"
        r"|CLK_LOCAL_MEM_FENCE|CLK_GLOBAL_MEM_FENCE)\b|\b__global\s"
    )
    kernel = "__kernel void"
    device = "static"
    # Always inlined: PoCL (3.0, 3.1) lowers a kernel's ``__local`` arrays to arguments in the
    # kernel's body only, after clang has specialized a helper that was passed one and left
    # out of line to use the array itself; that helper's stores then go to a dead copy
    # (FFT passes read stale data). A helper inlined into its kernel has no such uses.
    device_shared = "static inline __attribute__((always_inline))"
    global_space = "__global "
    shared_space = "__local "
    shared_decl = "__local "
    constant_space = "__constant "
    constant_decl = "__constant "
    dynamic_shared_param = "__local uchar* em_dyn"
    array_storage = {"float16": "ushort"}  # no `half` variables without cl_khr_fp16
    address_spaces = True
    separate_offsets = True
    pragmas = {
        "fp64": _EXT.format("cl_khr_fp64"),
        "int64_atomics": _EXT.format("cl_khr_int64_base_atomics")
        + "\n"
        + _EXT.format("cl_khr_int64_extended_atomics"),
        "subgroups": _EXT.format("cl_khr_subgroups"),
        "subgroup_shuffle": _EXT.format("cl_khr_subgroup_shuffle"),
        "subgroup_ballot": _EXT.format("cl_khr_subgroup_ballot"),
        "subgroup_shuffle_relative": _EXT.format("cl_khr_subgroup_shuffle_relative"),
    }
    feature_names = {
        "fp64": "cl_khr_fp64", "fp16": "cl_khr_fp16",
        "int64_atomics": "cl_khr_int64_base_atomics", "subgroups": "cl_khr_subgroups",
        "subgroup_shuffle": "cl_khr_subgroup_shuffle",
        "subgroup_shuffle_relative": "cl_khr_subgroup_shuffle_relative",
        "subgroup_ballot": "cl_khr_subgroup_ballot",
    }  # fmt: skip
    offline_features = frozenset({"fp64", "int64_atomics"})  # like PoCL's CPU device
    types = {
        "bool": "bool", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
        "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
        "float16": "float", "bfloat16": "float", "float32": "float", "float64": "double",
    }  # fmt: skip
    storage = {"float16": "half", "bfloat16": "ushort", "bool": "uchar"}
    address_type = "size_t"
    complex_struct = "typedef {t}2 {name};"  # a vector: aligned loads, like cl_complex
    complex_fields = ("x", "y")
    suffix = {"int64": "L", "uint64": "UL", "uint32": "u", "float32": "f"}
    unsigned = {4: "uint", 8: "ulong"}
    inf = {"float32": "INFINITY", "float64": "(double)INFINITY"}
    nan = {"float32": "NAN", "float64": "(double)NAN"}
    index = {
        "thread_idx": "(long)get_local_id({axis})",
        "block_idx": "(long)get_group_id({axis})",
        "block_dim": "(long)get_local_size({axis})",
        "grid_dim": "(long)get_num_groups({axis})",
        "global_id": "(long)get_global_id({axis})",
        "global_size": "(long)get_global_size({axis})",
        "warp_size": "(long)get_sub_group_size()",
        "lane_id": "(long)get_sub_group_local_id()",
    }
    barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)"
    fence = "mem_fence(CLK_GLOBAL_MEM_FENCE)"
    lanes = "get_sub_group_size()"
    predicate = "(bool){f}({x})"
    missing_math = frozenset({"erfinv", "erfcinv"})
    bit_ops = {
        "popc": ("popcount", "popcount"),
        "clz": ("clz", "clz"),
        "mulhi": ("mul_hi", "mul_hi", "mul_hi", "mul_hi"),
    }
    shuffle = {
        "shfl": "sub_group_shuffle({v}, (uint){k})",
        "shfl_up": "sub_group_shuffle_up({v}, (uint){k})",
        "shfl_down": "sub_group_shuffle_down({v}, (uint){k})",
        "shfl_xor": "sub_group_shuffle_xor({v}, (uint){k})",
    }
    shuffle_types = frozenset(
        {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float16", "bfloat16", "float32", "float64"}
    )  # fmt: skip
    votes = {
        # the sum of distinct powers of two is their union: cl_khr_subgroups has no ballot
        "ballot": "sub_group_reduce_add(({p}) && get_sub_group_local_id() < 32u ? "
        "1u << get_sub_group_local_id() : 0u)",
        "all_sync": "(sub_group_all((int)({p})) != 0)",
        "any_sync": "(sub_group_any((int)({p})) != 0)",
        "syncwarp": "sub_group_barrier(CLK_LOCAL_MEM_FENCE)",
        "activemask": "(get_sub_group_size() >= 32u ? 0xffffffffu : "
        "(1u << get_sub_group_size()) - 1u)",
    }
    subgroup_reduce = {
        "warp_sum": "sub_group_reduce_add",
        "warp_min": "sub_group_reduce_min",
        "warp_max": "sub_group_reduce_max",
    }
    f16_load = "vload_half({i}, {ptr})"
    f16_store = "vstore_half_rte({v}, {i}, {ptr});"
    atomic_volatile = "volatile "
    cas_bits = {
        4: ("uint", "as_uint", "as_float", "atomic_cmpxchg"),
        8: ("ulong", "as_ulong", "as_double", "atom_cmpxchg"),
    }
    checks = {
        "claim": "volatile __global uint*",
        "record": "volatile __global long*",
        "claim_cas": "atomic_cmpxchg({p}, 0u, 1u)",
        "fence": "mem_fence(CLK_GLOBAL_MEM_FENCE)",
        "f32_bits": "as_int({x})",
        "f64_bits": "as_long({x})",
        "int_fmt": "%ld",
        "uint_fmt": "%lu",
        "int_cast": "(long)",
        "uint_cast": "(ulong)",
        "float_cast": "",  # OpenCL printf takes a float for %g
        "cold": "",
    }

    def atomic_body(self, h: Helpers, op: str, dt: DType, t: str, space: str) -> str:
        from ember.codegen.atomics import cas_loop, int_cas_loop

        if op in ("inc", "dec"):  # OpenCL's atomic_inc has no limit: CUDA's needs a loop
            return int_cas_loop(h, op, dt, space)
        prefix = "atom_" if dt.itemsize == 8 else "atomic_"
        args = "expected, v" if op == "cas" else "v"
        if dt.is_integer:
            return f"    return {prefix}{_ATOMIC[op]}(p, {args});"
        if op == "exchange" and dt.itemsize == 4:
            return "    return atomic_xchg(p, v);"
        bits, to_bits, from_bits, cas = self.cas_bits[dt.itemsize]
        q = self.atomic_pointer(bits, space)
        if op == "exchange":
            return f"    return {from_bits}({prefix}xchg(({q})p, {to_bits}(v)));"
        if op == "cas":
            return f"    return {from_bits}({cas}(({q})p, {to_bits}(expected), {to_bits}(v)));"
        return cas_loop(h, op, dt, space)

    def f16_helper(self, h: Helpers, name: str, what: str) -> str:
        if what == "store":  # float -> the bits of the nearest half
            body = "    ushort bits;\n    vstore_half_rte(x, 0, (half*)&bits);\n    return bits;"
            return h.fn("ushort", name, "float x", body)
        if what == "load":  # the bits of a half -> float
            return h.fn("float", name, "ushort h", "    return vload_half(0, (const half*)&h);")
        if what == "round_d":
            h.features.add("fp64")
        arg = "double x" if what == "round_d" else "float x"
        body = (
            "    // float16 arithmetic is done in float and rounded to half (as NumPy does)\n"
            "    ushort bits;\n"
            "    vstore_half_rte(x, 0, (half*)&bits);\n"
            "    return vload_half(0, (const half*)&bits);"
        )
        return h.fn("float", name, arg, body)


OPENCL = OpenCLDialect()
