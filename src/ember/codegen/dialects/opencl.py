"""OpenCL C 1.2 (+ extensions): pointers carry address spaces, buffers cannot be offset,
float16 goes through ``vload_half``/``vstore_half_rte``, 32-bit atomics are ``atomic_*`` and
64-bit ones ``atom_*`` (``cl_khr_int64_*_atomics``)."""

from __future__ import annotations

from ember.codegen.atomics import cas_loop
from ember.codegen.dialects.base import Dialect
from ember.codegen.helpers import Helpers
from ember.dtypes import DType

_ATOMIC = {
    "add": "add", "sub": "sub", "min": "min", "max": "max", "exchange": "xchg",
    "cas": "cmpxchg", "and": "and", "or": "or", "xor": "xor",
}  # fmt: skip
_EXT = "#pragma OPENCL EXTENSION {} : enable"


class OpenCLDialect(Dialect):
    """OpenCL C for any OpenCL 1.2+ device."""

    name = "opencl"
    source_suffix = ".cl"
    kernel = "__kernel void"
    device = "static"
    global_space = "__global "
    shared_space = "__local "
    shared_decl = "__local "
    address_spaces = True
    separate_offsets = True
    pragmas = {
        "fp64": _EXT.format("cl_khr_fp64"),
        "int64_atomics": _EXT.format("cl_khr_int64_base_atomics")
        + "\n"
        + _EXT.format("cl_khr_int64_extended_atomics"),
        "subgroups": _EXT.format("cl_khr_subgroups"),
        "subgroup_shuffle": _EXT.format("cl_khr_subgroup_shuffle"),
        "subgroup_shuffle_relative": _EXT.format("cl_khr_subgroup_shuffle_relative"),
    }
    feature_names = {
        "fp64": "cl_khr_fp64", "fp16": "cl_khr_fp16",
        "int64_atomics": "cl_khr_int64_base_atomics", "subgroups": "cl_khr_subgroups",
        "subgroup_shuffle": "cl_khr_subgroup_shuffle",
        "subgroup_shuffle_relative": "cl_khr_subgroup_shuffle_relative",
    }  # fmt: skip
    offline_features = frozenset({"fp64", "int64_atomics"})  # like PoCL's CPU device
    types = {
        "bool": "bool", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
        "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
        "float16": "float", "float32": "float", "float64": "double",
    }  # fmt: skip
    storage = {"float16": "half", "bool": "uchar"}
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
    shuffle = {
        "shfl": "sub_group_shuffle({v}, (uint){k})",
        "shfl_up": "sub_group_shuffle_up({v}, (uint){k})",
        "shfl_down": "sub_group_shuffle_down({v}, (uint){k})",
        "shfl_xor": "sub_group_shuffle_xor({v}, (uint){k})",
    }
    shuffle_types = frozenset(
        {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float16", "float32", "float64"}
    )  # fmt: skip
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
