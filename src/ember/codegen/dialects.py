"""CUDA C++ and OpenCL C as data: what differs between the two dialects.

The emitter (:mod:`ember.codegen.emitter`) is written once; every spelling that differs -
qualifiers, address spaces, type names, literal suffixes, thread indices, the barrier, math
function names, float16 loads and stores, shuffles - is a field of :class:`Dialect`.
Helper functions that need more than a spelling (floor division, atomics through
compare-and-swap, warp reductions) are in :mod:`ember.codegen.helpers`, also driven by these
tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Dialect:
    """The spelling of one C dialect."""

    name: str
    kernel: str  # prefix of a kernel definition
    device: str  # prefix of a device function definition
    global_space: str  # address-space qualifier of device-memory pointers
    shared_space: str  # ... of pointers to per-block memory
    shared_decl: str  # declaration prefix of a static per-block array
    types: dict[str, str]  # dtype name -> C type of a value
    storage: dict[str, str]  # dtype name -> C type of an array element, where it differs
    suffix: dict[str, str]  # "int64" / "uint64" / "uint32" / "float32" -> literal suffix
    index: dict[str, str]  # thread-index intrinsics, formatted with {axis} / {xyz}
    barrier: str
    float_suffix_names: bool  # CUDA spells float32 math with an 'f' suffix (sqrtf)
    math_names: dict[str, str]  # renames (before the suffix)
    predicate: str  # how isnan(x) & co. are wrapped to give a bool
    inf: dict[str, str]  # "float32"/"float64" -> +infinity expression
    nan: dict[str, str]
    shuffle: dict[str, str]  # shfl, shfl_up, shfl_down, shfl_xor -> template {v} {k}
    shuffle_types: frozenset[str]  # dtypes the shuffles take directly (others go via int)
    subgroup_reduce: dict[str, str]  # warp_sum/min/max -> built-in, if the dialect has one
    f16_load: str  # template {ptr} {i}: a float from half storage
    f16_store: str  # template {ptr} {i} {v}: a statement
    unsigned: dict[int, str]  # width in bytes -> unsigned C type (for wrapping arithmetic)
    pragmas: dict[str, str] = field(default_factory=dict)  # feature -> line enabling it
    wrap_pointer_params: bool = True
    # run-time checks and printf (codegen/checks.py): pointer types of the error claim word
    # and record, the claim's compare-and-swap, the fence before the record is marked
    # complete, float bit patterns, printf conversions, the no-inline qualifier
    checks: dict[str, str] = field(default_factory=dict)
    fence: str = ""  # ember.threadfence(): order this thread's global writes, device-wide
    votes: dict[str, str] = field(default_factory=dict)  # ballot {p}, popc32/popc64 {x}


CUDA = Dialect(
    name="cuda",
    kernel='extern "C" __global__ void',
    device="static __device__",
    global_space="",
    shared_space="",
    shared_decl="__shared__ ",
    types={
        "bool": "bool",
        "int8": "signed char",
        "int16": "short",
        "int32": "int",
        "int64": "long long",
        "uint8": "unsigned char",
        "uint16": "unsigned short",
        "uint32": "unsigned int",
        "uint64": "unsigned long long",
        "float16": "float",
        "float32": "float",
        "float64": "double",
    },  # fmt: skip
    storage={"float16": "unsigned short"},
    suffix={"int64": "LL", "uint64": "ULL", "uint32": "u", "float32": "f"},
    index={
        "thread_idx": "(long long)threadIdx.{xyz}",
        "block_idx": "(long long)blockIdx.{xyz}",
        "block_dim": "(long long)blockDim.{xyz}",
        "grid_dim": "(long long)gridDim.{xyz}",
        "global_id": "((long long)blockIdx.{xyz} * blockDim.{xyz} + threadIdx.{xyz})",
        "global_size": "((long long)gridDim.{xyz} * blockDim.{xyz})",
        "warp_size": "(long long)warpSize",
        "lane_id": "(long long)em_lane_id()",
    },
    barrier="__syncthreads()",
    fence="__threadfence()",
    votes={
        "ballot": "__ballot_sync(0xffffffffu, {p})",
        "popc32": "__popc({x})",
        "popc64": "__popcll({x})",
    },
    float_suffix_names=True,
    math_names={},
    predicate="{f}({x})",
    inf={
        "float32": "__int_as_float(0x7f800000)",
        "float64": "__longlong_as_double(0x7ff0000000000000LL)",
    },  # fmt: skip
    nan={
        "float32": "__int_as_float(0x7fc00000)",
        "float64": "__longlong_as_double(0x7ff8000000000000LL)",
    },  # fmt: skip
    shuffle={
        "shfl": "__shfl_sync(0xffffffffu, {v}, {k})",
        "shfl_up": "__shfl_up_sync(0xffffffffu, {v}, (unsigned int){k})",
        "shfl_down": "__shfl_down_sync(0xffffffffu, {v}, (unsigned int){k})",
        "shfl_xor": "__shfl_xor_sync(0xffffffffu, {v}, {k})",
    },
    shuffle_types=frozenset(
        {"int32", "uint32", "int64", "uint64", "float16", "float32", "float64"}
    ),
    subgroup_reduce={},
    f16_load="em_f16_load({ptr}[{i}])",
    f16_store="{ptr}[{i}] = em_f16_store({v});",
    unsigned={4: "unsigned int", 8: "unsigned long long"},
    checks={
        "claim": "unsigned int*",  # device memory
        "record": "volatile long long*",  # mapped pinned host memory: read without a copy
        "claim_cas": "atomicCAS({p}, 0u, 1u)",
        "fence": "__threadfence_system()",
        "f32_bits": "__float_as_int({x})",
        "f64_bits": "__double_as_longlong({x})",
        "int_fmt": "%lld",
        "uint_fmt": "%llu",
        "int_cast": "(long long)",
        "uint_cast": "(unsigned long long)",
        "float_cast": "(double)",
        "cold": "__noinline__ ",
    },
)

OPENCL = Dialect(
    name="opencl",
    kernel="__kernel void",
    device="static",
    global_space="__global ",
    shared_space="__local ",
    shared_decl="__local ",
    types={
        "bool": "bool",
        "int8": "char",
        "int16": "short",
        "int32": "int",
        "int64": "long",
        "uint8": "uchar",
        "uint16": "ushort",
        "uint32": "uint",
        "uint64": "ulong",
        "float16": "float",
        "float32": "float",
        "float64": "double",
    },  # fmt: skip
    storage={"float16": "half", "bool": "uchar"},
    suffix={"int64": "L", "uint64": "UL", "uint32": "u", "float32": "f"},
    index={
        "thread_idx": "(long)get_local_id({axis})",
        "block_idx": "(long)get_group_id({axis})",
        "block_dim": "(long)get_local_size({axis})",
        "grid_dim": "(long)get_num_groups({axis})",
        "global_id": "(long)get_global_id({axis})",
        "global_size": "(long)get_global_size({axis})",
        "warp_size": "(long)get_sub_group_size()",
        "lane_id": "(long)get_sub_group_local_id()",
    },
    barrier="barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
    fence="mem_fence(CLK_GLOBAL_MEM_FENCE)",
    votes={
        "ballot": "sub_group_ballot({p}).x",
        "popc32": "(int)popcount({x})",
        "popc64": "(int)popcount({x})",
    },
    float_suffix_names=False,
    math_names={},
    predicate="(bool){f}({x})",
    inf={"float32": "INFINITY", "float64": "(double)INFINITY"},
    nan={"float32": "NAN", "float64": "(double)NAN"},
    shuffle={
        "shfl": "sub_group_shuffle({v}, (uint){k})",
        "shfl_up": "sub_group_shuffle_up({v}, (uint){k})",
        "shfl_down": "sub_group_shuffle_down({v}, (uint){k})",
        "shfl_xor": "sub_group_shuffle_xor({v}, (uint){k})",
    },
    shuffle_types=frozenset(
        {
            "int8",
            "uint8",
            "int16",
            "uint16",
            "int32",
            "uint32",
            "int64",
            "uint64",
            "float16",
            "float32",
            "float64",
        }
    ),
    subgroup_reduce={
        "warp_sum": "sub_group_reduce_add",
        "warp_min": "sub_group_reduce_min",
        "warp_max": "sub_group_reduce_max",
    },  # fmt: skip
    f16_load="vload_half({i}, {ptr})",
    f16_store="vstore_half_rte({v}, {i}, {ptr});",
    unsigned={4: "uint", 8: "ulong"},
    checks={
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
    },
    pragmas={
        "fp64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
        "int64_atomics": "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
        "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable",
        "subgroups": "#pragma OPENCL EXTENSION cl_khr_subgroups : enable",
        "subgroup_shuffle": "#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable",
        "subgroup_ballot": "#pragma OPENCL EXTENSION cl_khr_subgroup_ballot : enable",
        "subgroup_shuffle_relative": (
            "#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle_relative : enable"
        ),
    },
)

DIALECTS = {"cuda": CUDA, "opencl": OPENCL}


def get(name: str) -> Dialect:
    """The dialect called ``name`` (``"cuda"`` or ``"opencl"``)."""
    return DIALECTS[name]
