"""The staged upload's C pipeline (ember.backends.cuda._fill) through its stand-in entry
points: every byte lands where it belongs for any chunking, buffers are waited for before
reuse, and a failed transfer stops the pipeline and is reported, with no thread left behind."""

from __future__ import annotations

import numpy as np
import pytest
from fake_backend import run_threads
from hypothesis import given, settings
from hypothesis import strategies as st

fill = pytest.importorskip("ember.backends.cuda._fill", reason="C stub not built")
if not hasattr(fill, "upload_chunks"):
    pytest.skip("the C stub was built without threads", allow_module_level=True)

COPY = 1


def run(src, chunk, slots, threads, primed=None, fail_at=0, status=0):
    """Upload ``src`` into a new host array through the probes; (result, dst, calls)."""
    dst = np.zeros(src.nbytes, np.uint8)
    buffers = [np.full(chunk, 0xEE, np.uint8) for _ in range(slots)]
    fill.probe_fill_arm(fail_at, status)
    result = fill.upload_chunks(
        fill.probe_fill_entries(), 0, dst.ctypes.data, src.ctypes.data, src.nbytes, 0,
        tuple(b.ctypes.data for b in buffers), tuple(range(1, slots + 1)), chunk, threads,
        bytes(primed or [0] * slots),
    )  # fmt: skip
    return result, dst, fill.probe_fill_calls()


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(0, 300_000),
    chunk=st.sampled_from([1, 7, 4096, 4097, 65536, 1 << 20]),
    slots=st.integers(1, 6),
    threads=st.integers(1, 6),
    offset=st.integers(0, 63),
    streaming=st.booleans(),
)
def test_every_byte_lands_in_place(n, chunk, slots, threads, offset, streaming):
    """Any size, chunking, thread count and source alignment, with either copy routine
    (non-temporal stores or memcpy)."""
    src = np.random.default_rng(n).integers(0, 256, n + offset, dtype=np.uint8)[offset:]
    if -(-n // chunk) > 5000:
        chunk = -(-n // 5000)
    was = fill.set_streaming(streaming)
    try:
        result, dst, calls = run(src, chunk, slots, threads)
    finally:
        fill.set_streaming(was)
    count = -(-n // chunk)
    assert result == (0, -1, count)
    np.testing.assert_array_equal(dst, src)
    context, copies, records, waits = calls
    assert context == threads + 1  # the caller and each thread asked for set the context
    assert copies == records == count
    assert waits == max(0, count - slots)  # a buffer is waited for before each reuse


def test_primed_buffers_are_waited_for_before_their_first_use():
    src = np.arange(10_000, dtype=np.uint32).view(np.uint8)
    result, dst, (_, copies, _, waits) = run(src, 4096, 4, 3, primed=[1, 0, 1, 0])
    assert result[0] == 0 and copies == 10
    assert waits == 2 + (10 - 4)  # the two primed buffers, then every reuse
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize("fail_at", [1, 2, 9, 40])
def test_a_failed_transfer_stops_the_pipeline_and_is_reported(fail_at):
    src = np.ones(40 * 4096, np.uint8)
    result, dst, (_, copies, records, _) = run(src, 4096, 3, 4, fail_at=fail_at, status=700)
    assert result == (700, COPY, fail_at - 1)  # the status, the call, the transfers queued
    assert copies == fail_at and records == fail_at - 1
    # the transfers that were queued landed (in the order the fills finished: within a
    # ring's length of the lowest chunk not yet queued), the others did not
    landed = [bool(c.all()) for c in dst.reshape(40, 4096)]
    assert [c.any() for c in dst.reshape(40, 4096)] == landed
    assert sum(landed) == fail_at - 1 and not any(landed[fail_at - 1 + 3 :])
    # the pool is still usable afterwards: no thread is stuck in the failed job
    result, dst, _ = run(src, 4096, 3, 4)
    assert result == (0, -1, 40) and dst.all()


def test_calls_from_several_threads_run_one_after_the_other():
    rng = np.random.default_rng(1)
    sources = [rng.integers(0, 256, 200_000 + i, dtype=np.uint8) for i in range(6)]
    outputs = [None] * 6

    def one(i):
        dst = np.zeros(sources[i].nbytes, np.uint8)
        bufs = [np.empty(8192, np.uint8) for _ in range(3)]
        r = fill.upload_chunks(
            fill.probe_fill_entries(), 0, dst.ctypes.data, sources[i].ctypes.data,
            sources[i].nbytes, 0, tuple(b.ctypes.data for b in bufs), (1, 2, 3), 8192, 3,
            bytes(3),
        )  # fmt: skip
        assert r[0] == 0
        outputs[i] = dst

    fill.probe_fill_arm(0, 0)
    errors = run_threads(one, 6)
    assert not errors
    for src, out in zip(sources, outputs, strict=True):
        np.testing.assert_array_equal(out, src)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"entries": (1, 2, 3)}, "entries"),
        ({"entries": (0, 0, 0, 0)}, "NULL"),
        ({"events": (1,)}, "one event"),
        ({"threads": 0}, "threads"),
        ({"chunk": 0}, "chunk"),
        ({"dst": "0x10"}, "must be an int"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(change, match):
    src = np.ones(100, np.uint8)
    args = {
        "entries": fill.probe_fill_entries(), "context": 0, "dst": 0, "src": src.ctypes.data,
        "nbytes": 100, "stream": 0, "buffers": (src.ctypes.data, src.ctypes.data),
        "events": (1, 2), "chunk": 50, "threads": 2, "primed": bytes(2),
    }  # fmt: skip
    args.update(change)
    fill.probe_fill_arm(0, 0)
    with pytest.raises((TypeError, ValueError), match=match):
        fill.upload_chunks(*args.values())
    assert fill.probe_fill_calls() == (0, 0, 0, 0)


def test_buffers_at_any_alignment():
    """The streaming copy aligns its stores itself: buffers that start at odd addresses."""
    src = np.random.default_rng(9).integers(0, 256, 50_000, dtype=np.uint8)
    dst = np.zeros(src.nbytes, np.uint8)
    raw = [np.zeros(8192 + 16, np.uint8) for _ in range(2)]
    buffers = [raw[0][3 : 3 + 8192], raw[1][9 : 9 + 8192]]
    fill.probe_fill_arm(0, 0)
    result = fill.upload_chunks(
        fill.probe_fill_entries(), 0, dst.ctypes.data, src.ctypes.data, src.nbytes, 0,
        tuple(b.ctypes.data for b in buffers), (1, 2), 8192, 2, bytes(2),
    )  # fmt: skip
    assert result == (0, -1, 7)
    np.testing.assert_array_equal(dst, src)
    assert not raw[0][:3].any() and not raw[1][9 + 8192 :].any()  # nothing outside them


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_starts_threads_of_its_own():
    import os
    import warnings

    src = np.random.default_rng(4).integers(0, 256, 100_000, dtype=np.uint8)
    assert run(src, 4096, 3, 4)[0][0] == 0  # the parent's threads exist now
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # forking a threaded process
        pid = os.fork()
    if pid == 0:  # the child: the parent's pool threads are not here
        code = 1
        try:
            result, dst, _ = run(src, 4096, 3, 4)
            code = 0 if result == (0, -1, 25) and np.array_equal(dst, src) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
