"""Device-side errors on every backend (PoCL here, CUDA on the GPU machine): ``raise``,
``assert``, bounds checks and checked conversions become a :class:`ember.KernelError` naming
the Python line at the next synchronize or launch, and the device stays usable."""

from __future__ import annotations

import asyncio
import math
import pathlib
import time
import warnings

import numpy as np
import pytest

import ember

THIS = pathlib.Path(__file__)
SOURCE = THIS.read_text().splitlines()


def line_of(marker: str) -> int:
    return next(i for i, text in enumerate(SOURCE, 1) if text.rstrip().endswith(marker))


@pytest.fixture(autouse=True)
def quiet():
    """These kernels have slow paths on purpose: no performance warnings here; and the
    kernels without boundscheck= are unchecked even under EMBER_BOUNDSCHECK=1."""
    with ember.config.override(diagnostics="off", boundscheck=False):
        yield


@ember.kernel(boundscheck=True)
def shifted(x, y, k):
    i = ember.global_id()
    if i < y.shape[0]:
        y[i] = x[i + k]  # site: shifted


@ember.kernel
def fill(y, v):
    i = ember.global_id()
    if i < y.shape[0]:
        y[i] = v


def test_bounds_error_names_the_line_and_the_device_stays_usable(backend):
    x = ember.asarray(np.arange(10, dtype=np.float32))
    y = ember.zeros(10, ember.float32)
    shifted[1, 16](x, y, 3)
    with pytest.raises(ember.KernelError) as info:
        ember.synchronize()
    e = info.value
    assert isinstance(e, IndexError)
    line = line_of("# site: shifted")
    text = str(e)
    assert "kernel 'shifted' failed on the device: IndexError: index " in text
    assert "is out of bounds for axis 0 of 'x' with size 10" in text
    assert f"{THIS}:{line}:" in text and "y[i] = x[i + k]" in text and "^^^^^^^^" in text
    assert e.line == line and e.kind == "bounds" and e.block == (0, 0, 0)
    assert 7 <= e.thread[0] <= 9 and e.thread[1:] == (0, 0)
    ember.synchronize()  # reported once
    fill[1, 16](y, 5.0)  # the next kernel runs fine
    np.testing.assert_array_equal(y.to_numpy(), np.full(10, 5, np.float32))
    shifted[1, 16](x, y, 0)  # and the checked one again, in range
    np.testing.assert_array_equal(y.to_numpy(), np.arange(10, dtype=np.float32))


def test_negative_index_is_out_of_bounds(backend):
    x = ember.asarray(np.arange(4, dtype=np.float32))
    y = ember.zeros(4, ember.float32)
    shifted[1, 4](x, y, -1)
    with pytest.raises(IndexError, match="index -1 is out of bounds for axis 0 of 'x'"):
        y.to_numpy()  # a copy back synchronizes too


@ember.kernel(boundscheck=True)
def grid2(a, out):
    i, j = ember.grid(2)
    n, m = out.shape
    if i < n and j < m:
        out[i, j] = a[j, i]  # site: grid2


def test_multi_axis_check_names_the_axis(backend):
    a = ember.zeros((3, 5), ember.float32)
    out = ember.zeros((5, 4), ember.float32)
    grid2[(1, 1), (8, 8)](a, out)
    with pytest.raises(ember.KernelError, match=r"for axis 0 of 'a' with size 3") as info:
        ember.synchronize()
    assert info.value.line == line_of("# site: grid2")


def check_positive(v):
    if v < 0:
        raise ValueError("negative input")  # site: device-raise
    return v * 2


@ember.kernel
def doubled(x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = check_positive(x[i])


def test_raise_in_a_device_function(backend):
    x = ember.asarray(np.array([1, 2, -3, 4], np.float32))
    y = ember.zeros(4, ember.float32)
    doubled[1, 4](x, y)
    with pytest.raises(ValueError, match="ValueError: negative input") as info:
        ember.synchronize()
    assert info.value.line == line_of("# site: device-raise")
    assert info.value.thread == (2, 0, 0)
    doubled[1, 4](ember.asarray(np.array([1, 2, 3, 4], np.float32)), y)
    np.testing.assert_array_equal(y.to_numpy(), [2, 4, 6, 8])


class MyError(Exception):
    pass


@ember.kernel
def asserts(x, limit):
    i = ember.global_id()
    if i < x.shape[0]:
        assert x[i] < limit, "value over the limit"  # site: assert
        if x[i] == 99:
            raise MyError("ninety-nine")  # site: custom


def test_assert_and_a_user_exception(backend):
    x = ember.asarray(np.array([1, 5, 2], np.float32))
    asserts[1, 4](x, 4.0)
    with pytest.raises(AssertionError, match="value over the limit") as info:
        ember.synchronize()
    assert info.value.line == line_of("# site: assert")
    asserts[1, 4](ember.asarray(np.array([1, 99, 2], np.float32)), 100.0)
    with pytest.raises(ember.KernelError, match="MyError: ninety-nine") as info:
        ember.synchronize()
    assert info.value.error == "MyError" and info.value.line == line_of("# site: custom")
    asserts[1, 4](x, 10.0)
    ember.synchronize()  # no failure: nothing raised


@ember.kernel(boundscheck=True)
def to_int(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        out[i] = ember.int32(x[i])  # site: convert


@ember.kernel(boundscheck=True)
def to_int_unchecked(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        out[i] = ember.unsafe_trunc(x[i], ember.int32)


@pytest.mark.parametrize(
    "bad, error, text",
    [
        (math.nan, ValueError, "cannot convert float NaN to int32"),
        (math.inf, OverflowError, "cannot convert float inf to int32"),
        (3e9, OverflowError, "float 3000000000.0 is out of range for int32"),
    ],
)
def test_checked_conversion(backend, bad, error, text):
    x = ember.asarray(np.array([1.5, -2.5, bad], np.float32))
    out = ember.zeros(3, ember.int32)
    to_int[1, 4](x, out)
    with pytest.raises(error, match=text) as info:
        ember.synchronize()
    assert info.value.line == line_of("# site: convert")
    to_int_unchecked[1, 4](x, out)  # the fix: no check, no error
    ember.synchronize()
    assert list(out.to_numpy()[:2]) == [1, -2]


def test_error_is_seen_at_the_next_launch_of_a_failing_kernel(backend):
    x = ember.asarray(np.arange(4, dtype=np.float32))
    y = ember.zeros(4, ember.float32)
    ember.synchronize()
    shifted[1, 4](x, y, 2)
    time.sleep(0.5)  # done by now; nothing has synchronized or queried
    with pytest.raises(ember.KernelError, match="index 4 is out of bounds"):
        shifted[1, 4](x, y, 0)  # CUDA: a look at the mapped record; OpenCL: a stream query
    shifted[1, 4](x, y, 0)
    ember.synchronize()


def test_query_reports_a_finished_failure(backend):
    x = ember.asarray(np.arange(4, dtype=np.float32))
    y = ember.zeros(4, ember.float32)
    shifted[1, 4](x, y, 2)
    stream = backend.default_stream
    with pytest.raises(ember.KernelError):
        for _ in range(1000):  # query() marks completion, which reads the record
            if stream.query():
                break
            time.sleep(0.01)
    assert stream.query()


def test_error_on_another_stream(backend):
    s = ember.Stream()
    x = ember.asarray(np.arange(4, dtype=np.float32))
    y = ember.zeros(4, ember.float32)
    ember.synchronize()
    shifted[1, 4, s](x, y, 1)
    with pytest.raises(ember.KernelError):
        s.synchronize()
    s.synchronize()


def test_await_raises_the_kernel_error(backend):
    x = ember.asarray(np.arange(4, dtype=np.float32))
    y = ember.zeros(4, ember.float32)

    async def main():
        shifted[1, 4](x, y, 5)
        await ember.synchronize_async()

    with pytest.raises(ember.KernelError, match="out of bounds"):
        asyncio.run(main())


def test_only_the_first_failure_is_reported(backend):
    x = ember.asarray(np.arange(64, dtype=np.float32))
    y = ember.zeros(64, ember.float32)
    shifted[4, 16](x, y, 64)  # every thread fails; one of them is reported
    with pytest.raises(ember.KernelError, match=r"index \d+ is out of bounds") as info:
        ember.synchronize()
    block, thread = info.value.block[0], info.value.thread[0]
    assert f"index {64 + block * 16 + thread} is out" in str(info.value)
    ember.synchronize()  # reported once


@ember.kernel(boundscheck=True)
def block_reverse(x, out, extra):
    tile = ember.shared(64, ember.float32)
    t = ember.thread_idx.x
    i = ember.block_idx.x * 64 + t
    tile[t] = x[i + extra]  # site: shared
    ember.barrier()
    out[i] = tile[63 - t]


def test_failure_in_a_kernel_with_barriers(backend):
    """No thread may leave before a barrier: the failed one runs on with its accesses
    skipped, the others finish, and the error names the line."""
    x = ember.asarray(np.arange(128, dtype=np.float32))
    out = ember.zeros(128, ember.float32)
    block_reverse[2, 64](x, out, 0)
    expected = np.concatenate([np.arange(63, -1, -1), np.arange(127, 63, -1)])
    np.testing.assert_array_equal(out.to_numpy(), expected)
    block_reverse[2, 64](x, out, 1)  # thread 63 of block 1 reads x[128]
    with pytest.raises(IndexError, match="index 128 is out of bounds") as info:
        ember.synchronize()
    assert info.value.line == line_of("# site: shared") and info.value.block == (1, 0, 0)
    got = out.to_numpy()
    np.testing.assert_array_equal(got[:64], np.arange(64, 0, -1))  # block 0 is complete
    np.testing.assert_array_equal(got[65:127], np.arange(127, 65, -1))
    assert got[64] == 0  # the failed load gave 0 (stored by thread 0)
    assert got[127] == 64  # the failed thread stored nothing: the first launch's value


@ember.kernel(boundscheck=True)
def guarded_axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0] and i < y.shape[0]:
        y[i] = a * x[i] + y[i]


def test_checks_that_pass_change_nothing(backend):
    x = ember.asarray(np.arange(100, dtype=np.float32))
    y = ember.asarray(np.ones(100, np.float32))
    guarded_axpy[4, 32](np.float32(2), x, y)
    np.testing.assert_array_equal(y.to_numpy(), 2 * np.arange(100) + 1)


@ember.kernel
def shout(x):
    i = ember.global_id()
    if i == 1:
        print("value", x[i], "at", i, True, sep="|")


def test_print_reaches_stdout_at_synchronize(backend, capfd):
    x = ember.asarray(np.array([0.5, 2.5], np.float32))
    shout[1, 2](x)
    ember.synchronize()
    out = capfd.readouterr().out
    assert "value|2.5|at|1|True" in out


@ember.kernel
def prints_f64(x):
    print(x[0])


def test_report_of_a_kernel_on_its_device(backend):
    x = ember.zeros(4, ember.float32)
    items = shout.report(x)
    assert [i.kind for i in items] == ["print"]
    assert items[0].line == line_of('print("value", x[i], "at", i, True, sep="|")')
    assert fill.report(ember.zeros(4, ember.float32), 1.0) == []


def test_warning_once_per_specialization(backend):
    k = ember.kernel(shout.py_func)
    with ember.config.override(diagnostics="warn"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            k[1, 2](ember.zeros(2, ember.float32))
        k[1, 2](ember.zeros(2, ember.float64))  # a new specialization
        ember.synchronize()
    perf = [x for x in w if issubclass(x.category, ember.EmberPerformanceWarning)]
    assert len(perf) == 2
    assert "print() formats text on the device" in str(perf[0].message)


def test_error_policy_refuses_the_launch(backend):
    k = ember.kernel(shout.py_func)
    x = ember.zeros(2, ember.float32)
    with ember.config.override(diagnostics="error"):
        for _ in range(2):  # a full warp per block: only the print is a slow path
            with pytest.raises(ember.SlowPathError, match="pulls in 1 slow path") as info:
                k[1, 64](x)
    assert [i.kind for i in info.value.items] == ["print"]


@pytest.mark.gpu
def test_cuda_occupancy_and_resources(backend):
    if backend.name != "cuda":
        pytest.skip("CUDA resource numbers")
    y = ember.zeros(1024, ember.float32)
    res = fill.inspect(y, 1.0, stage="resources")
    assert res["registers"] > 0 and res["max_threads_per_block"] >= 256
    small = [i.kind for i in fill.report(y, 1.0, block=16)]
    assert "occupancy" in small
    assert "occupancy" not in [i.kind for i in fill.report(y, 1.0, block=256)]
    assert "occupancy" in [i.kind for i in fill.report(y, 1.0, block=100)]  # not a multiple
