"""Diagnostics without a device: the code raise/assert/print/boundscheck generate (both
dialects; CUDA compiled by NVRTC for sm_90), the range analysis that leaves provable
indices unchecked, the slow-path report (each item: a kernel that has it is reported, its
fixed version is not), the EMBER_DIAGNOSTICS policy, KernelError texts and the error
record's bookkeeping."""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np
import pytest

import ember
from ember.backends.cuda import toolkit
from ember.codegen import abi, dialects
from ember.compiler import driver
from ember.diagnostics import device_errors as errors
from ember.diagnostics import findings, report
from ember.runtime import sync
from ember.runtime.backend import DeviceInfo, ErrorMemory, Function

F32 = np.zeros(8, np.float32)
F64 = np.zeros(8, np.float64)
I32 = np.zeros(8, np.int32)
M32 = np.zeros((4, 4), np.float32)
DEBUG = False


@pytest.fixture(autouse=True)
def unchecked_by_default():
    """Kernels without boundscheck= are unchecked even under EMBER_BOUNDSCHECK=1."""
    with ember.config.override(boundscheck=False):
        yield


def nvrtc_or_skip():
    nvrtc = pytest.importorskip("ember.backends.cuda.nvrtc")
    try:
        nvrtc.nvrtc_version()
    except ember.EmberError as exc:
        pytest.skip(str(exc))
    return nvrtc


def program(kernel, *args, dialect="opencl"):
    types, target, _ = kernel._inspect_types(args, dialect)
    return driver.typed_ir(kernel.captured, types, target, kernel._captures, kernel.checks)


def kinds(kernel, *args, dialect="opencl"):
    return [i.kind for i in kernel.report(*args, dialect=dialect)]


# ------------------------------------------------------------------ code generation
@ember.kernel(boundscheck=True)
def everything(x, out, n):
    i = ember.global_id()
    assert n > 0, "n must be positive"
    if i >= out.shape[0]:
        return
    v = x[i + 1]
    if v < 0:
        raise ValueError("negative value")
    out[i] = ember.int32(v) + int(v)
    print("i", i, v, v > 1)


@pytest.mark.parametrize("dialect", ["cuda", "opencl"])
def test_checks_generate_guarded_accesses_and_stops(dialect):
    src = everything.inspect(F32, I32, 3, stage="source", dialect=dialect)
    assert "em_ctx_t* em_c = &em_ctx;" in src
    assert "(em_in_bounds(i + 1, x.shape[0], 1, em_c) ? x.data[i + 1] : 0)" in src
    assert "out.data[i] = " in src and "if (em_in_bounds(i, out.shape[0]" not in src  # proven
    assert "em_failed(em_c, 0, 0, 0);  // AssertionError" in src
    assert "em_failed(em_c, 2, 0, 0);  // ValueError" in src
    assert src.count("if (em_c->failed) return;") >= 2
    assert "em_cvt_i32_f32(" in src and "em_cvt_i64_f32(" in src
    fmt = "%lld" if dialect == "cuda" else "%ld"
    assert f'printf("i {fmt} %g %s\\n"' in src and '"True" : "False"' in src


def test_cuda_checks_compile_with_nvrtc():
    nvrtc = nvrtc_or_skip()
    for args in [(F32, I32, 3), (F64, np.zeros(8, np.int8), 3)]:
        src = everything.inspect(*args, stage="source", dialect="cuda")
        nvrtc.compile_program(src, "sm_90", "everything")


def test_opencl_checks_build_on_the_device():
    try:
        be = ember.get_backend("opencl")
    except ember.EmberError as exc:
        pytest.skip(str(exc))
    be.compile(everything.inspect(F32, I32, 3, stage="source", dialect="opencl"), "k")


def test_kernels_without_checks_keep_their_abi():
    @ember.kernel
    def plain(x):
        i = ember.global_id()
        if i < x.shape[0]:
            x[i] = 1

    p = program(plain, F32)
    assert not p.kernel.can_fail and p.sites == []
    cuda = dialects.get("cuda")
    assert [q.kind for q in abi.kernel_abi(p.kernel, cuda)] == ["data", "shape"]
    q = program(everything, F32, I32, 3)
    assert [a.kind for a in abi.kernel_abi(q.kernel, cuda)][-3:] == ["claim", "record", "kid"]


def fail_in_device(v):
    if v > 10:
        raise OverflowError("too big")
    return v


@ember.kernel
def calls_failing(x):
    x[0] = fail_in_device(x[1])


def test_device_functions_get_the_error_context():
    p = program(calls_failing, F32)
    assert p.kernel.can_fail and p.functions[0].can_fail
    src = calls_failing.inspect(F32, stage="source", dialect="cuda")
    assert "float fail_in_device(float v, em_ctx_t* em_c)" in src
    assert "x.data[0] = fail_in_device(x.data[1], em_c);" in src
    assert "return 0;" in src  # a failing device function returns a zero value


# ------------------------------------------------------------------ the range analysis
@ember.kernel(boundscheck=True)
def guarded(x, y):
    i = ember.global_id()
    n, m = x.shape
    if i < n:
        x[i, 0] = 1  # axis 0 proven (i < n = x.shape[0], i >= 0); axis 1 not (m may be 0)
    if i >= y.shape[0]:
        return
    y[i] = y[i] + 1  # proven by the early return
    for j in range(x.shape[1]):
        x[0, j] = 2  # proven: 0 <= j < x.shape[1]; x[0] on axis 0 is not
    k = i - 1
    if k < y.shape[0]:
        y[k] = 3  # not proven: k may be negative


def test_range_analysis_proves_common_guards():
    text = guarded.inspect(M32, F32, stage="ir", dialect="opencl")
    checked = [ln.split("  # line")[0].strip() for ln in text.splitlines() if "checked(" in ln]
    assert checked == [
        "x[(i * x.shape[1])] checked(#0 0 < x.shape[1]) = 1.0:float32",
        "x[((0 * x.shape[1]) + j)] checked(#1 0 < x.shape[0]) = 2.0:float32",
        "y[k] checked(#2 k < y.shape[0]) = 3.0:float32",
    ], text


@ember.kernel(boundscheck=True)
def assigned_in_guard(x):
    i = ember.global_id()
    if i < x.shape[0]:
        i = i + 5
        x[i] = 1  # i changed inside the guard: checked


def test_a_guard_does_not_hold_after_the_name_changes():
    assert "x[i] checked(" in assigned_in_guard.inspect(F32, stage="ir", dialect="opencl")


# ------------------------------------------------------------------ user mistakes
@ember.kernel
def raises_value(x):
    raise ValueError(x[0])


@ember.kernel
def bare_raise(x):
    raise


@ember.kernel
def raises_number(x):
    raise 3  # noqa: B016 - the mistake under test


@ember.kernel
def assert_message(x):
    assert x[0] > 0, x[0]


@ember.kernel
def print_in_while(x):
    while print(x[0]):
        pass


@pytest.mark.parametrize(
    "kernel, message",
    [
        (raises_value, "must be one string literal"),
        (bare_raise, "a bare 'raise' has nothing to re-raise"),
        (raises_number, "can only raise an exception class"),
        (assert_message, "message of an assert in a kernel must be a string literal"),
        (print_in_while, r"print\(\) cannot be inside a while condition"),
    ],
)
def test_mistakes_are_located(kernel, message):
    with pytest.raises(ember.EmberError, match=message) as info:
        kernel.inspect(F32, stage="ir", dialect="opencl")
    assert info.value.line is not None and "test_checks_and_report.py" in str(info.value)


# ------------------------------------------------------------------ the report: each item
def pair(fast, slow, *args, kind, dialect="opencl"):
    assert kind in kinds(slow, *args, dialect=dialect)
    assert kind not in kinds(fast, *args, dialect=dialect)


@ember.kernel(boundscheck=True)
def unguarded(x, y):
    i = ember.global_id()
    y[i] = x[i]


@ember.kernel(boundscheck=True)
def guarded_copy(x, y):
    i = ember.global_id()
    if i < x.shape[0] and i < y.shape[0]:
        y[i] = x[i]


def test_report_bounds_check():
    pair(guarded_copy, unguarded, F32, F32, kind="bounds-check")
    [item] = unguarded.report(F32, F32, dialect="opencl")
    assert item.message.startswith("bounds check on y[i], x[i]")
    assert item.line == unguarded.captured.first_line + 3 and "if i < x.shape[0]" in item.fix


@ember.kernel(boundscheck=True)
def converts(x, y):
    i = ember.global_id()
    if i < x.shape[0] and i < y.shape[0]:
        y[i] = int(x[i])


@ember.kernel(boundscheck=True)
def truncates(x, y):
    i = ember.global_id()
    if i < x.shape[0] and i < y.shape[0]:
        y[i] = ember.unsafe_trunc(x[i], ember.int32)


def test_report_checked_conversion():
    pair(truncates, converts, F32, I32, kind="checked-conversion")
    [item] = converts.report(F32, I32, dialect="opencl")
    assert "int(x[i])" in item.message and "ember.unsafe_trunc" in item.fix


@ember.kernel
def asserting(x):
    i = ember.global_id()
    assert i < x.shape[0]
    x[i] = 1


@ember.kernel
def asserting_in_debug(x):
    i = ember.global_id()
    if DEBUG:
        assert i < x.shape[0]
    if i < x.shape[0]:
        x[i] = 1


@ember.kernel
def raising(x):
    if x[0] < 0:
        raise ValueError("negative")


@ember.kernel
def raising_fixed(x):
    if x[0] < 0:
        x[0] = 0


@ember.kernel
def printing(x):
    print(x[0])


@ember.kernel
def printing_in_debug(x):
    if DEBUG:
        print(x[0])


def test_report_error_checks_and_print():
    pair(asserting_in_debug, asserting, F32, kind="assert")
    pair(raising_fixed, raising, F32, kind="raise")
    pair(printing_in_debug, printing, F32, kind="print")
    assert "compile-time constant" in raising.report(F32, dialect="opencl")[0].fix


@ember.kernel
def weak_float(x):
    i = ember.global_id()
    if i < x.shape[0]:
        x[i] = x[i] * (i * 0.5)


@ember.kernel
def strong_float(x):
    i = ember.global_id()
    if i < x.shape[0]:
        x[i] = x[i] * (ember.float32(i) * 0.5)


def test_report_python_float_and_float64_on_a_slow_fp64_device():
    pair(strong_float, weak_float, F32, kind="python-float", dialect="cuda")
    [item] = weak_float.report(F32, dialect="cuda")
    assert "* 0.5) computes in float64" in item.message and "ember.float32(i)" in item.fix
    assert "unknown rate" in item.message  # no device: the rate is not known
    assert "float64" in kinds(strong_float, F64, dialect="cuda")
    assert kinds(strong_float, F32, dialect="cuda") == []


def device(backend: str, kind="GPU", fp64_ratio=None, **extra) -> DeviceInfo:
    return DeviceInfo(backend, 0, "test device", 1 << 30, 4, 32, 1024, 49152, kind=kind,
                      fp64_ratio=fp64_ratio, extra=extra)  # fmt: skip


def test_float64_items_follow_the_devices_rate():
    items = findings.program_items(program(weak_float, F32))
    h100, gaming = (
        device("cuda", fp64_ratio=2),
        device("cuda", fp64_ratio=64),
    )
    cpu = device("opencl", kind="CPU", fp64_ratio=1)
    assert report.for_device(items, h100) == [] and report.for_device(items, cpu) == []
    [item] = report.for_device(items, gaming)
    assert "1/64 of its float32 rate" in item.message


def test_tuple_index_is_reported_for_long_tuples():
    @ember.kernel
    def long_tuple(x, k):
        t = tuple_of_16()
        x[0] = t[k]

    @ember.kernel
    def constant_index(x, k):
        t = tuple_of_16()
        x[0] = t[3]

    pair(constant_index, long_tuple, F32, 3, kind="tuple-index")


def tuple_of_16():
    return (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0)


def test_resource_items():
    h100 = device("cuda", max_threads_per_multiprocessor=2048)
    heavy = report.resource_items({"registers": 168, "local_bytes": 64}, h100, None)
    assert [i.kind for i in heavy] == ["local-memory", "registers"]
    assert "64 bytes of local memory" in heavy[0].message
    assert "at most 384 of 2048 threads" in heavy[1].message and "maxrregcount" in heavy[1].fix
    assert report.resource_items({"registers": 32, "local_bytes": 0}, h100, None) == []


class FakeOccupancyFunction(Function):
    """Blocks per SM as the driver computes them for a light kernel on an sm_90 device."""

    name, params = "light", ()

    def launch(self, grid, block, args, shared_mem=0, stream=None):
        raise NotImplementedError

    def occupancy(self, threads, shared_mem=0):
        warps = -(-threads // 32)
        return min(32, 64 // warps, 2048 // threads)

    def attributes(self):
        return {"max_threads_per_block": 1024}


class FakeSpec:
    def __init__(self):
        self.function = FakeOccupancyFunction()
        self.backend = type("B", (), {"device": device("cuda")})()


def test_launch_occupancy_items():
    spec = FakeSpec()
    assert report.launch_items(spec, (32, 1, 1), None) == []  # 32 blocks of 32: 50%
    ragged, tiny = report.launch_items(spec, (16, 1, 1), None)
    assert tiny.kind == "occupancy" and "fill 25% of an SM's threads" in tiny.message
    assert "blocks of 64 threads (100%)" in tiny.fix
    assert report.launch_items(spec, (256, 1, 1), None) == []
    [ragged] = report.launch_items(spec, (100, 1, 1), None)
    assert "not a multiple of the warp size 32" in ragged.message


def test_offline_cuda_resources_come_from_ptxas():
    nvrtc_or_skip()
    res = guarded_copy.inspect(F32, F32, stage="resources", dialect="cuda")
    assert res["registers"] > 0 and res["local_bytes"] == 0 and "spill_stores" in res


def heavy(x, y):
    """24 values alive at once: many registers; with a register cap, spills."""
    i = ember.global_id()
    if i < y.shape[0]:
        t = (x[i], x[i + 1], x[i + 2], x[i + 3], x[i + 4], x[i + 5], x[i + 6], x[i + 7],
             x[i + 8], x[i + 9], x[i + 10], x[i + 11], x[i + 12], x[i + 13], x[i + 14],
             x[i + 15], x[i + 16], x[i + 17], x[i + 18], x[i + 19], x[i + 20], x[i + 21],
             x[i + 22], x[i + 23])  # fmt: skip
        acc = 0.0
        for r in range(8):
            for k in range(24):
                acc = acc * t[k] + t[(k * 7 + r) % 24]
        y[i] = acc


def streaming(x, y):
    """The same arithmetic reading the values when needed: few registers."""
    i = ember.global_id()
    if i < y.shape[0]:
        acc = 0.0
        for r in range(8):
            for k in range(24):
                acc = acc * x[i + k] + x[i + (k * 7 + r) % 24]
        y[i] = acc


def test_report_registers_and_local_memory_from_nvrtc():
    nvrtc_or_skip()
    capped = ember.kernel(heavy, options=("--maxrregcount=24",))
    assert "local-memory" in kinds(capped, F32, F32, dialect="cuda")
    heavy_kinds = kinds(ember.kernel(heavy), F32, F32, dialect="cuda")  # one NVRTC compile
    assert "registers" in heavy_kinds and "tuple-index" in heavy_kinds
    assert kinds(ember.kernel(streaming), F32, F32, dialect="cuda") == []


def test_checks_keep_the_kernel_out_of_local_memory():
    """The error context's address must not reach a call that is not inlined: that would
    put the context on the stack (local memory) of every kernel that can fail."""
    nvrtc_or_skip()
    for kernel, args in [(unguarded, (F32, F32)), (calls_failing, (F32,)), (converts, (F32, I32))]:
        res = kernel.inspect(*args, stage="resources", dialect="cuda")
        assert res["local_bytes"] == 0 and res["spill_stores"] == 0, (kernel, res)


def test_printf_buffer_is_not_reported_as_local_memory():
    h100 = device("cuda")
    assert report.resource_items({"registers": 24, "local_bytes": 8}, h100, None, prints=True) == []
    spills = {"registers": 24, "local_bytes": 8, "spill_stores": 8}
    assert [i.kind for i in report.resource_items(spills, h100, None, prints=True)] == [
        "local-memory"
    ]


def test_parse_ptxas_log():
    log = (
        "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
        "ptxas info    : Used 9 registers\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Used 40 registers, 16 bytes smem, 380 bytes cmem[0]\n"
    )
    res = toolkit.parse_ptxas(log, "k")
    assert res["registers"] == 40 and res["local_bytes"] == 24 and res["spill_stores"] == 8
    assert res["shared_bytes"] == 16 and res["const_bytes"] == 380


def test_sass_needs_the_disassembler():
    if toolkit.disassembler() is None:
        with pytest.raises(ember.EmberError, match="neither nvdisasm nor cuobjdump is on PATH"):
            guarded_copy.inspect(F32, F32, stage="sass", dialect="cuda")
        pytest.skip("nvdisasm/cuobjdump not on PATH: checked the message only")
    nvrtc_or_skip()
    text = guarded_copy.inspect(F32, F32, stage="sass", dialect="cuda")
    assert "guarded_copy" in text


# ------------------------------------------------------------------ the policy
def test_warning_once_per_specialization_and_error_policy():
    from test_compiler_launch import FakeBackend, array

    fake = FakeBackend()
    k = ember.kernel(printing.py_func)
    x32, x64 = array(fake, (4,)), array(fake, (4,), "float64")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for x in (x32, x32, x64, x32, x64):
            k[1, 1](x)
    perf = [m for m in w if m.category is ember.EmberPerformanceWarning]
    assert len(perf) == 2 and len(fake.launches) == 5
    assert perf[0].filename.endswith("test_checks_and_report.py")
    k2 = ember.kernel(printing.py_func)
    with ember.config.override(diagnostics="error"):
        for _ in range(2):
            with pytest.raises(ember.SlowPathError, match=r"\[print\]"):
                k2[1, 1](x32)
    assert len(fake.launches) == 5  # refused before the launch
    with ember.config.override(diagnostics="off"), warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.kernel(printing.py_func)[1, 1](x32)
    assert len(fake.launches) == 6


# ------------------------------------------------------------------ KernelError texts
def site(kind, message, error="IndexError", axis=0):
    text = "    y[i] = x[i + 1]"
    return errors.SiteInfo(kind, message, error, axis, "/src/k.py", 12, 9, 17, text, "k")


def record(kid, site_id, v0=0, v1=0):
    return [2, kid, site_id, 1, 0, 0, 5, 0, 0, v0, v1, 0, 0, 0, 0, 0]


def f32_bits(v):
    return struct.unpack("<i", struct.pack("<f", v))[0]


def test_kernel_error_texts():
    kid = errors.register("k", (site("bounds", "x", axis=1), site("convert", "float32 to int8"),
                                site("raise", "bad input", "ValueError")))  # fmt: skip
    e = errors.kernel_error(record(kid, 0, 10, 8))
    assert isinstance(e, ember.KernelError) and isinstance(e, IndexError)
    assert str(e).startswith(
        "kernel 'k' failed on the device: IndexError: index 10 is out of bounds for axis 1 of "
        "'x' with size 8\n  --> /src/k.py:12:9 (in k)"
    )
    assert "   |         ^^^^^^^^" in str(e) and "in block (1, 0, 0), thread (5, 0, 0)" in str(e)
    assert (e.block, e.thread, e.line, e.kind) == ((1, 0, 0), (5, 0, 0), 12, "bounds")
    nan = errors.kernel_error(record(kid, 1, f32_bits(math.nan), 32))
    assert isinstance(nan, ValueError) and "cannot convert float NaN to int8" in str(nan)
    big = errors.kernel_error(record(kid, 1, f32_bits(300.0), 32))
    assert isinstance(big, OverflowError) and "float 300.0 is out of range for int8" in str(big)
    bits = struct.unpack("<q", struct.pack("<d", -math.inf))[0]
    assert "cannot convert float -inf" in str(errors.kernel_error(record(kid, 1, bits, 64)))
    raised = errors.kernel_error(record(kid, 2))
    assert isinstance(raised, ValueError) and "ValueError: bad input" in str(raised)
    assert "not known to this process" in str(errors.kernel_error(record(999999, 0)))


def test_site_table_round_trips_through_json():
    sites = (site("bounds", "x"), site("assert", "assertion failed: n > 0", "AssertionError"))
    assert errors.sites_from_json(errors.sites_to_json(sites)) == sites
    assert errors.sites_from_json([["broken"]]) == ()


# ------------------------------------------------------------------ the error record
class FakeStream:
    def __init__(self):
        self.submitted = self.completed = 0
        self.alive = True

    def synchronize(self):
        self.completed = self.submitted

    def query(self):
        self.completed = self.submitted
        for rec in list(sync.pending_errors):
            rec.check()
        return True


class FakeMemory(ErrorMemory):
    claim, record = "claim", "record"

    def __init__(self, peekable):
        self.words = [0] * 16
        self.peekable, self.reads, self.clears = peekable, 0, 0

    def peek(self):
        return self.words[0] if self.peekable else None

    def read(self):
        self.reads += 1
        return list(self.words)

    def clear(self):
        self.clears += 1
        self.words = [0] * 16


class FakeRecordBackend:
    def __init__(self, peekable):
        self.default_stream = FakeStream()
        self.memory = FakeMemory(peekable)

    def error_memory(self, nbytes):
        assert nbytes == errors.RECORD_BYTES
        return self.memory


@pytest.mark.parametrize("peekable", [True, False], ids=["cuda-like", "opencl-like"])
def test_error_record_reads_only_completed_launches(peekable):
    be = FakeRecordBackend(peekable)
    rec = errors.ErrorRecord(be)
    s = be.default_stream
    kid = errors.register("k", (site("raise", "boom", "RuntimeError"),))
    try:
        s.submitted += 1
        rec.launched(None)
        assert rec in sync.pending_errors
        rec.check()  # nothing completed: no read
        assert be.memory.reads == 0
        s.completed = s.submitted
        rec.check()  # completed without a failure: read once, then forgotten
        assert rec not in sync.pending_errors and be.memory.reads == (0 if peekable else 1)
        s.submitted += 1
        rec.launched(s)
        be.memory.words = record(kid, 0)
        with pytest.raises(ember.KernelError, match="RuntimeError: boom"):
            rec.before_launch()  # CUDA: peeks; OpenCL: queries the stream, which checks
        assert be.memory.clears == 1 and not rec.pending and rec not in sync.pending_errors
        rec.before_launch()
    finally:
        if rec in sync.pending_errors:
            sync.pending_errors.remove(rec)


class BlockingStream(FakeStream):
    def __init__(self):
        super().__init__()
        self.native_blocks = 0

    def _native_block(self, blocking):
        self.native_blocks += 1


def test_cuda_printf_is_flushed_once_a_printing_launch_completes():
    be = FakeRecordBackend(True)
    be.default_stream = BlockingStream()
    flush = errors.PrintFlush(be)
    s = be.default_stream
    try:
        s.submitted += 1
        flush.launched(None)
        flush.check()  # not complete: nothing to flush
        assert s.native_blocks == 0 and flush in sync.pending_errors
        s.completed = s.submitted
        flush.check()
        assert s.native_blocks == 1 and flush not in sync.pending_errors
    finally:
        if flush in sync.pending_errors:
            sync.pending_errors.remove(flush)


def test_unsafe_trunc_on_the_host():
    assert ember.unsafe_trunc(-2.7) == -2
    assert ember.unsafe_trunc(np.float32(300.5), ember.int16) == 300
