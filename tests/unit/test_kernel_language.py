"""The kernel language of issue 14 without a device: views, per-thread arrays, compile-time
values, tables, launch-time shared sizes, warp operations' typing, atomics' dtypes, errors
and the host versions of the new math functions."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from ember import lang
from ember.frontend import launchsize

F32 = np.zeros(8, np.float32)
M32 = np.zeros((4, 6), np.float32)


def ir_of(kernel, *args, dialect="opencl"):
    return kernel.inspect(*args, stage="ir", dialect=dialect)


def source_of(kernel, *args, dialect="opencl"):
    return kernel.inspect(*args, stage="source", dialect=dialect)


# ---------------------------------------------------------------- views
def _row(a, i):
    return a[i]


@ember.kernel
def view_types(a, out):
    r = a[1]  # a row: contiguous
    c = a[:, 2]  # a column: strided
    s = a[1, 1:5:2]  # a stepped slice: strided
    t = a[1:3]  # leading rows: contiguous
    out[0] = r[0] + c[0] + s[1] + t[1, 0] + _row(a, 2)[3]


def test_views_have_numpy_layouts():
    text = ir_of(view_types, M32, F32)
    assert "local r: array(float32, 1d, contiguous)" in text
    assert "local c: array(float32, 1d, strided)" in text
    assert "local s: array(float32, 1d, strided)" in text
    assert "local t: array(float32, 2d, contiguous)" in text


@ember.kernel
def too_many_indices(a):
    a[0] = a[1, 2, 3]  # mistake


@ember.kernel
def runtime_step(a, k):
    x = a[::k]  # mistake
    a[0] = x[0]


def test_view_errors_are_located():
    with pytest.raises(ember.KernelTypeError, match="needs 1 indices, got 3"):
        ir_of(too_many_indices, F32)
    with pytest.raises(ember.KernelTypeError, match="slice step .* non-zero constant"):
        ir_of(runtime_step, F32, 2)


@ember.kernel
def static_views(out):
    s = ember.shared((4, 32), ember.float32)
    w = s[ember.thread_idx.x // 32]
    w[ember.thread_idx.x % 32] = 1.0
    out[0] = w[0]


def test_a_view_of_a_static_shared_array_keeps_a_static_shape():
    text = ir_of(static_views, F32)
    assert "local w: array(float32, 1d, contiguous, shared (32,))" in text
    assert "__local float* w;" in source_of(static_views, F32)


# ---------------------------------------------------------------- per-thread arrays
@ember.kernel
def local_runtime_shape(out, n):
    tmp = ember.local(n, ember.float32)  # mistake
    out[0] = tmp[0]


def make_local():
    return ember.local(4, ember.float32)


@ember.kernel
def returns_local(out):
    out[0] = make_local()[0]  # mistake


def test_local_arrays_need_constant_shapes_and_stay_in_their_function():
    with pytest.raises(ember.KernelTypeError, match="positive constant integers"):
        ir_of(local_runtime_shape, F32, 3)
    with pytest.raises(ember.KernelTypeError, match="cannot return a per-thread array"):
        ir_of(returns_local, F32)


# ---------------------------------------------------------------- compile-time values
def plus(a, b):
    return a + b


def times(a, b):
    return a * b


@ember.kernel
def apply2(out, OP, *xs):
    i = ember.global_id()
    total = xs[0][i]
    for k in ember.static_range(1, len(xs)):
        total = OP(total, xs[k][i])
    out[i] = total


def test_compile_time_arguments_specialize():
    plus_src = source_of(apply2, F32, plus, F32, F32)
    times_src = source_of(apply2, F32, times, F32, F32, F32)
    assert "plus(" in plus_src and "times(" not in plus_src
    assert times_src.count("times(") >= 3  # two calls, unrolled, plus the definition
    assert "for (" not in times_src.split("apply2(")[-1]  # the static_range is unrolled


@ember.kernel
def static_break(out):
    for k in ember.static_range(3):
        if out[k] > 0:
            break  # mistake
        out[k] = 1.0


@ember.kernel
def static_reassigned(out, OP):
    OP = 3  # mistake
    out[0] = OP


def test_static_range_and_compile_time_argument_errors():
    with pytest.raises(ember.KernelSyntaxError, match="break and continue are not supported"):
        ir_of(static_break, F32)
    with pytest.raises(ember.KernelSyntaxError, match="compile-time value"):
        ir_of(static_reassigned, F32, plus)


# ---------------------------------------------------------------- tables
TABLE = np.arange(12, dtype=np.int32).reshape(3, 4)
BIG = np.zeros(20_000, np.float32)  # 80 KB: past 64 KiB of constant memory


@ember.kernel
def reads_table(out):
    i = ember.global_id()
    out[i] = TABLE[i % 3, 1] + TABLE.shape[1]


@ember.kernel
def writes_table(out):
    TABLE[0, 0] = 1  # mistake
    out[0] = 0.0


@ember.kernel
def reads_big(out):
    out[0] = BIG[ember.global_id()]


def test_captured_numpy_arrays_become_constant_tables():
    cuda = source_of(reads_table, F32, dialect="cuda")
    assert "__constant__ const int em_tbl_TABLE[12] = {" in cuda
    assert "em_tbl_TABLE[em_mod_i64(i, 3) * 4 + 1] + 4" in cuda
    assert "__constant int em_tbl_TABLE[12]" in source_of(reads_table, F32)
    with pytest.raises(ember.KernelTypeError, match="read-only table"):
        ir_of(writes_table, F32)


def test_tables_past_constant_memory():
    assert "__device__ const float em_tbl_BIG[20000]" in source_of(reads_big, F32, dialect="cuda")
    with pytest.raises(ember.UnsupportedFeatureError, match="pass the large array"):
        source_of(reads_big, F32)


def test_table_bytes_are_in_the_cache_key():
    from ember.cache import key as keymod

    before = keymod.dependencies(reads_table.captured, {})
    TABLE[0, 0] = 99
    try:
        assert keymod.dependencies(reads_table.captured, {}) != before
    finally:
        TABLE[0, 0] = 0


# ---------------------------------------------------------------- dynamic shared memory
def test_launch_size_trees_round_trip_to_python():
    tree = ["add", ["mul", ["block", 0], ["const", 4]], ["shape", 1, [], 0]]
    text = launchsize.python(tree)
    assert eval(text, {"block": (32, 1, 1), "a1": F32}) == 32 * 4 + 8  # noqa: S307
    layout = {"arrays": [[4, [["block", 0]]], [2, [["arg", 2, []]]]], "scratch": True}
    need = launchsize.layout_bytes(layout)
    assert eval(need, {"block": (64, 1, 1), "a2": 3}) == 256 + 16 + (64 + 1) * 8  # noqa: S307


@pytest.mark.parametrize(
    "bad", [["call", "os.system"], ["arg", "0", []], ["shape", 0, ["x"], 0], [], "block"]
)
def test_launch_size_trees_refuse_anything_else(bad):
    with pytest.raises(ValueError, match="launch-size"):
        launchsize.python(bad)


@ember.kernel
def dynamic_from_argument(out, n):
    s = ember.shared((n, 2), ember.float32)
    s[ember.thread_idx.x % n, 0] = 1.0
    out[0] = s[0, 0]


def test_dynamic_shared_arrays_are_carved_at_the_kernel_start():
    text = source_of(dynamic_from_argument, F32, 5, dialect="cuda")
    assert "extern __shared__ __align__(16) unsigned char em_dyn[];" in text
    assert "em_f32_2d_sh s = em_f32_2d_sh_make((float*)(em_dyn + em_dyn_at), n, 2);" in text
    assert ", long n, __local uchar* em_dyn)" in source_of(dynamic_from_argument, F32, 5)


def test_launch_configurations_accept_both_orders_of_stream_and_shared_bytes():
    from ember.compiler.kernel import _stream_and_shared

    s = object()
    assert _stream_and_shared(()) == (None, 0)
    assert _stream_and_shared((s,)) == (s, 0)  # [grid, block, stream]
    assert _stream_and_shared((128,)) == (None, 128)  # CUDA: [grid, block, bytes]
    assert _stream_and_shared((0, 128)) == (None, 128)  # Numba: stream 0 is the default
    assert _stream_and_shared((s, 64)) == (s, 64)
    assert _stream_and_shared((64, s)) == (s, 64)  # CUDA: <<<g, b, bytes, stream>>>


@ember.kernel
def rest_twice(out):
    a = ember.shared(0, ember.float32)
    b = ember.shared(0, ember.float32)  # mistake
    out[0] = a[0] + b[0]


def test_the_rest_of_the_dynamic_shared_memory_is_made_once():
    with pytest.raises(ember.KernelSyntaxError, match="can be made once"):
        ir_of(rest_twice, F32)
    text = source_of(dynamic_from_argument, F32, 5, dialect="cuda")
    assert "em_dyn_bytes" not in text  # only ember.shared(0, ...) takes the launch's bytes


# ---------------------------------------------------------------- warps, atomics, grid
@ember.kernel
def bad_width(out):
    out[0] = ember.shfl(out[0], 1, width=6)  # mistake


@ember.kernel
def atomic_on_local(out):
    t = ember.local(2, ember.int32)
    ember.atomic_add(t, 0, 1)  # mistake
    out[0] = t[0]


@ember.kernel
def add_on_int8(a):
    ember.atomic_add(a, 0, 1)  # mistake


def test_warp_and_atomic_errors():
    with pytest.raises(ember.KernelTypeError, match="power of two"):
        ir_of(bad_width, F32, dialect="cuda")
    with pytest.raises(ember.KernelTypeError, match="global and shared arrays"):
        ir_of(atomic_on_local, np.zeros(2, np.int32))
    with pytest.raises(ember.KernelTypeError, match="not available for int8"):
        ir_of(add_on_int8, np.zeros(2, np.int8))


@ember.kernel
def bitcast_size(x, out):
    out[0] = ember.bitcast(x[0], ember.uint16)


@ember.kernel
def bitcast_bool(x, out):
    out[0] = ember.bitcast(x[0] > 0, ember.uint8)


@ember.kernel
def bitcast_weak(x, out):
    out[0] = ember.bitcast(1.5, ember.uint64)


@ember.kernel
def bitcast_to_bool(x, out):
    out[0] = ember.bitcast(x[0], ember.bool_)


def test_bitcast_errors_name_the_sizes_and_dtypes():
    u = np.zeros(2, np.uint32)
    with pytest.raises(ember.KernelTypeError, match="float32 has 4 bytes, uint16 2"):
        ir_of(bitcast_size, F32, u)
    with pytest.raises(ember.KernelTypeError, match="known dtype, got a bool"):
        ir_of(bitcast_bool, F32, u)
    with pytest.raises(ember.KernelTypeError, match="got a Python number"):
        ir_of(bitcast_weak, F32, u)
    with pytest.raises(ember.KernelTypeError, match="integer or float dtype"):
        ir_of(bitcast_to_bool, F32, u)
    assert lang.bitcast(np.float32(1.0), ember.uint32) == 0x3F800000
    assert lang.bitcast(np.uint16(0x3C00), ember.float16) == 1.0
    with pytest.raises(TypeError, match="NumPy scalar or array"):
        lang.bitcast(1.0, ember.uint64)


# ---------------------------------------------------------------- typing per binding
@ember.kernel
def rebinds(x, out):
    i = ember.global_id()
    offset = x[i]
    offset = ember.uint32(offset) + 1
    out[i] = offset


def test_a_variable_of_two_promoting_types_is_warned_about():
    with pytest.warns(ember.KernelTypeWarning, match="'offset'.*int32 and uint32.*int64"):
        ir_of(rebinds, np.zeros(4, np.int32), np.zeros(4, np.int32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ir_of(apply2, F32, plus, F32, F32)  # same-type rebinding: silent


# ---------------------------------------------------------------- host math
def test_erfinv_and_erfcinv_on_the_host():
    for x in (-0.99, -0.5, 0.0, 1e-9, 0.3, 0.999999):
        assert math.isclose(math.erf(lang.erfinv(x)), x, rel_tol=1e-14, abs_tol=1e-16)
    for y in (1e-300, 1e-10, 0.5, 1.0, 1.7):
        assert math.isclose(math.erfc(lang.erfcinv(y)), y, rel_tol=1e-13)
    assert lang.erfinv(1.0) == math.inf and math.isnan(lang.erfinv(2.0))


def test_bit_functions_on_the_host():
    assert lang.popc(np.int8(-1)) == 8 and lang.popc(np.uint64(2**63 + 1)) == 2
    assert lang.clz(np.uint32(1)) == 31 and lang.ffs(np.uint32(8)) == 4
    assert lang.brev(np.uint32(1)) == np.uint32(2**31)
    assert lang.umulhi(np.uint32(2**31), np.uint32(4)) == 2
