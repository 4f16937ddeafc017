"""CUDA C++ (compiled by NVRTC): kernels are ``extern "C" __global__``, memory has one flat
address space, float16 is converted with PTX instructions, atomics are ``atomicAdd`` & co."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ember.codegen.dialects.base import Dialect
from ember.dtypes import DType, float16

if TYPE_CHECKING:  # the backend class holds the dialect: a cache hit imports this module
    from ember.codegen.helpers import Helpers

# CUDA's atomic functions take int / unsigned int / unsigned long long (and float for
# add/exch, double for add): the element types each one has directly.
_NATIVE = {
    "add": {"int32", "uint32", "uint64", "float32", "float64"},
    "sub": {"int32", "uint32"},
    "min": {"int32", "uint32", "int64", "uint64"},
    "max": {"int32", "uint32", "int64", "uint64"},
    "exchange": {"int32", "uint32", "uint64", "float32"},
    "cas": {"int32", "uint32", "uint64"},
    "and": {"int32", "uint32", "uint64"},
    "or": {"int32", "uint32", "uint64"},
    "xor": {"int32", "uint32", "uint64"},
    "inc": {"uint32"},
    "dec": {"uint32"},
}
_ATOMIC = {
    "add": "atomicAdd", "sub": "atomicSub", "min": "atomicMin", "max": "atomicMax",
    "exchange": "atomicExch", "cas": "atomicCAS", "and": "atomicAnd", "or": "atomicOr",
    "xor": "atomicXor", "inc": "atomicInc", "dec": "atomicDec",
}  # fmt: skip
_ULL = "unsigned long long"


class CudaDialect(Dialect):
    """CUDA C++ for NVRTC."""

    name = "cuda"
    source_suffix = ".cu"
    language = "CUDA C++"
    source_markers = re.compile(
        r"\b(__global__|__device__|__shared__|__syncthreads|threadIdx|blockIdx|blockDim|gridDim)\b"
        r'|extern\s+"C"'
    )
    kernel = 'extern "C" __global__ void'
    static_shared_limit = 48 * 1024  # CUDA's static __shared__ limit (dynamic goes further)
    device = "static __device__"
    # 16-byte aligned, so NVVM may fuse four neighbouring 4-byte loads into one 128-bit load
    # (ld.shared.v4: a tiled GEMM's inner loop needs a quarter of the instructions)
    shared_decl = "__shared__ __align__(16) "
    constant_space = "const "  # tables are read-only: pointers to them are const
    constant_decl = "__constant__ const "
    global_table_decl = "__device__ const "
    dynamic_shared_decl = "extern __shared__ __align__(16) unsigned char em_dyn[];"
    offline_arch = "sm_90"
    offline_warp_size = 32
    offline_features = frozenset(
        {"fp64", "fp16", "int64_atomics", "subgroups", "subgroup_shuffle",
         "subgroup_shuffle_relative", "subgroup_ballot", "cooperative_launch", "global_tables"}
    )  # fmt: skip
    types = {
        "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
        "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
        "uint32": "unsigned int", "uint64": "unsigned long long", "float16": "float",
        "bfloat16": "float", "float32": "float", "float64": "double",
    }  # fmt: skip
    storage = {"float16": "unsigned short", "bfloat16": "unsigned short"}
    address_type = "unsigned long long"
    # aligned like cuComplex (float2/double2): one 8- or 16-byte load per element
    complex_struct = "typedef struct __align__({align}) {{ {t} re; {t} im; }} {name};"
    suffix = {"int64": "LL", "uint64": "ULL", "uint32": "u", "float32": "f"}
    unsigned = {4: "unsigned int", 8: "unsigned long long"}
    inf = {
        "float32": "__int_as_float(0x7f800000)",
        "float64": "__longlong_as_double(0x7ff0000000000000LL)",
    }
    nan = {
        "float32": "__int_as_float(0x7fc00000)",
        "float64": "__longlong_as_double(0x7ff8000000000000LL)",
    }
    index = {
        "thread_idx": "(long long)threadIdx.{xyz}",
        "block_idx": "(long long)blockIdx.{xyz}",
        "block_dim": "(long long)blockDim.{xyz}",
        "grid_dim": "(long long)gridDim.{xyz}",
        "global_id": "((long long)blockIdx.{xyz} * blockDim.{xyz} + threadIdx.{xyz})",
        "global_size": "((long long)gridDim.{xyz} * blockDim.{xyz})",
        "warp_size": "(long long)warpSize",
        "lane_id": "(long long)em_lane_id()",
    }
    barrier = "__syncthreads()"
    fence = "__threadfence()"
    lanes = "warpSize"
    float_suffix_names = True
    bit_ops = {
        "popc": ("__popc", "__popcll"),
        "clz": ("__clz", "__clzll"),
        "ffs": ("__ffs", "__ffsll"),
        "brev": ("__brev", "__brevll"),
        "mulhi": ("__mulhi", "__mul64hi", "__umulhi", "__umul64hi"),
    }
    predicate = "{f}({x})"
    shuffle = {
        "shfl": "__shfl_sync(0xffffffffu, {v}, {k})",
        "shfl_up": "__shfl_up_sync(0xffffffffu, {v}, (unsigned int){k})",
        "shfl_down": "__shfl_down_sync(0xffffffffu, {v}, (unsigned int){k})",
        "shfl_xor": "__shfl_xor_sync(0xffffffffu, {v}, {k})",
    }
    shuffle_types = frozenset(
        {"int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"}
    )
    shuffle_sync = {
        "shfl": "__shfl_sync({m}, {v}, {k}, {w})",
        "shfl_up": "__shfl_up_sync({m}, {v}, (unsigned int){k}, {w})",
        "shfl_down": "__shfl_down_sync({m}, {v}, (unsigned int){k}, {w})",
        "shfl_xor": "__shfl_xor_sync({m}, {v}, {k}, {w})",
    }
    votes = {
        "ballot": "__ballot_sync({m}, {p})",
        "match_any_sync": "__match_any_sync({m}, {p})",
        "all_sync": "(__all_sync({m}, {p}) != 0)",
        "any_sync": "(__any_sync({m}, {p}) != 0)",
        "syncwarp": "__syncwarp({m})",
        "activemask": "__activemask()",
    }
    f16_load = "em_f16_load({ptr}[{i}])"
    f16_store = "{ptr}[{i}] = em_f16_store({v});"
    f16_helpers = ("load", "store")
    cas_bits = {
        4: ("int", "__float_as_int", "__int_as_float", "atomicCAS"),
        8: (_ULL, f"({_ULL})__double_as_longlong", "__longlong_as_double", "atomicCAS"),
    }
    checks = {
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
    }

    # ------------------------------------------------------------------ threads
    def launch_bounds(self, bounds: tuple[int, int] | None) -> str:
        if bounds is None:
            return ""
        most, blocks = bounds
        return f"__launch_bounds__({most}, {blocks}) " if blocks else f"__launch_bounds__({most}) "

    def index_expr(self, h: Helpers, name: str, axis: int) -> str:
        if name == "lane_id":  # no built-in variable: PTX's %laneid through a helper
            h.use("em_lane_id", lambda: _lane_id(h))
        return super().index_expr(h, name, axis)

    # ------------------------------------------------------------------ atomics
    def atomic_body(self, h: Helpers, op: str, dt: DType, t: str, space: str) -> str:
        from ember.codegen.atomics import cas_loop, int_cas_loop

        fn = _ATOMIC[op]
        args = "expected, v" if op == "cas" else "v"
        if dt.name in _NATIVE[op]:
            return f"    return {fn}(p, {args});"
        if op in ("inc", "dec"):
            return int_cas_loop(h, op, dt, space)
        if dt.is_integer:  # int64 (and uint64 sub): same bits as unsigned long long
            if op == "sub":
                return f"    return ({t})atomicAdd(({_ULL}*)p, ({_ULL})0 - ({_ULL})v);"
            cast_args = f"({_ULL})expected, ({_ULL})v" if op == "cas" else f"({_ULL})v"
            return f"    return ({t}){fn}(({_ULL}*)p, {cast_args});"
        if op == "sub":
            return "    return atomicAdd(p, -v);"
        if op in ("exchange", "cas"):
            bits, to_bits, from_bits, cas = self.cas_bits[dt.itemsize]
            if op == "exchange":
                return f"    return {from_bits}(atomicExch(({bits}*)p, {to_bits}(v)));"
            return f"    return {from_bits}({cas}(({bits}*)p, {to_bits}(expected), {to_bits}(v)));"
        return cas_loop(h, op, dt, "")

    def grid_sync_body(self, h: Helpers) -> str:
        # Every block's first thread adds to the barrier word: block 0 adds 2**31 - (blocks
        # - 1), the others 1, so the top bit flips once all have arrived and the low bits
        # come back to where they were (any starting value works; cooperative_groups' way).
        return (
            "    __syncthreads();\n"
            "    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {\n"
            "        unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;\n"
            "        bool first = blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;\n"
            "        unsigned int add = first ? 0x80000000u - (blocks - 1u) : 1u;\n"
            "        __threadfence();\n"
            "        unsigned int old = atomicAdd(bar, add);\n"
            "        while (((old ^ *(volatile unsigned int*)bar) & 0x80000000u) == 0u) {}\n"
            "        __threadfence();\n"
            "    }\n"
            "    __syncthreads();"
        )

    # ------------------------------------------------------------------ float16
    def f16_helper(self, h: Helpers, name: str, what: str) -> str:
        if what == "load":
            body = '    float f;\n    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));\n    return f;'
            return h.fn("float", name, "unsigned short h", body)
        if what == "store":
            body = (
                '    unsigned short h;\n    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));'
                "\n    return h;"
            )
            return h.fn("unsigned short", name, "float x", body)
        load = h.narrow(float16, "load")
        if what == "round":
            store = h.narrow(float16, "store")
            body = f"    return {load}({store}(x));  // round to the nearest half"
            return h.fn("float", name, "float x", body)
        body = (
            f'    unsigned short h;\n    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(x));'
            f"\n    return {load}(h);"
        )
        return h.fn("float", name, "double x", body)


def _lane_id(h: Helpers) -> str:
    body = '    unsigned int l;\n    asm("mov.u32 %0, %%laneid;" : "=r"(l));\n    return l;'
    return h.fn("unsigned int", "em_lane_id", "", body)


CUDA = CudaDialect()
