"""Waiting on real devices: fast paths, ordering, asyncio, cancellation, threads.

Runs on every available backend (PoCL's CPU device here, CUDA on the GPU machine).  Long
kernels (``device_work``) make an early return visible: their result is read through a
stream that is not ordered after them.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from device_work import Counted, Work, read_elsewhere, ready_zeros

import ember
from ember import config
from ember.runtime import sync

LONG = 0.15  # seconds: long enough that an early return reads stale data
TRIES = 4  # under load a spin may end before the test looks: again, each time 3x longer


def busy_when_checked(start, tries: int = TRIES):
    """``start(seconds, attempt)`` submits device work; returns what it returns once the
    work was seen unfinished right after (causality, not a clock: a loaded machine can
    deschedule this process for longer than the work takes, so a short spin is retried
    longer)."""
    for attempt in range(tries):
        found = start(LONG * 3**attempt, attempt)
        if found is not None:
            return found
    pytest.fail(f"the device work finished before it could be observed, {tries} times")


@pytest.fixture
def work(backend):
    return Work.on(backend)


# ------------------------------------------------------------------ fast paths


def test_never_used_stream_makes_no_driver_call(backend, monkeypatch):
    stream = ember.Stream()
    calls = Counted(monkeypatch, stream)
    for _ in range(10):
        stream.synchronize()
        assert stream.query()
    assert calls.calls == 0


def test_idle_stream_makes_no_driver_call(backend, work, monkeypatch):
    stream = ember.Stream()
    y = ready_zeros(16)
    work.add(y, 1, stream)
    calls = Counted(monkeypatch, stream)
    stream.synchronize()
    first = calls.calls
    assert first >= 1
    for _ in range(100):
        stream.synchronize()
        stream.synchronize(blocking=True)
        assert stream.query()
    assert calls.calls == first


def test_device_synchronize_with_nothing_busy_makes_no_driver_call(backend, monkeypatch):
    streams = [ember.Stream() for _ in range(3)]
    ember.synchronize()  # whatever earlier tests left running
    counters = [Counted(monkeypatch, s) for s in (*backend._streams, *streams)]
    if hasattr(backend, "_device_wait"):
        device_waits = []
        monkeypatch.setattr(backend, "_device_wait", lambda: device_waits.append(1))
    for _ in range(10):
        ember.synchronize()
    assert sum(c.calls for c in counters) == 0
    if hasattr(backend, "_device_wait"):
        assert not device_waits


def test_device_synchronize_waits_only_for_the_busy_stream(backend, work, monkeypatch):
    ember.synchronize()
    idle, busy = ember.Stream(), ember.Stream()
    out = ready_zeros(1)
    work.spin_then(LONG, out, 7, busy)
    idle_calls, busy_calls = Counted(monkeypatch, idle), Counted(monkeypatch, busy)
    ember.synchronize()
    assert idle_calls.calls == 0 and busy_calls.calls >= 1
    assert read_elsewhere(backend, out)[0] == 7


def test_device_synchronize_waits_for_several_busy_streams(backend, work):
    streams = [ember.Stream() for _ in range(3)]
    outs = [ready_zeros(1) for _ in streams]
    for i, (s, out) in enumerate(zip(streams, outs, strict=True)):
        work.spin_then(LONG / 3, out, 10 + i, s)
    ember.synchronize()
    assert [int(read_elsewhere(backend, o)[0]) for o in outs] == [10, 11, 12]
    assert all(s.query() for s in streams)


def test_closed_stream_with_running_work_is_still_waited_for(backend, work):
    stream = ember.Stream()
    out = ready_zeros(1)
    work.spin_then(LONG, out, 5, stream)
    stream.close()
    ember.synchronize()
    assert read_elsewhere(backend, out)[0] == 5


# ------------------------------------------------------------------ ordering


def _wait_sync(stream, event):
    stream.synchronize()


def _wait_no_spin(stream, event):
    stream.synchronize(spin=False)


def _wait_blocking(stream, event):
    stream.synchronize(blocking=True)


def _wait_plain(stream, event):
    with config.override(sync="plain"):
        stream.synchronize()


def _wait_event(stream, event):
    event.synchronize()


def _wait_event_blocking(stream, event):
    event.synchronize(blocking=True)


def _wait_device(stream, event):
    ember.synchronize()


def _wait_device_plain(stream, event):
    with config.override(sync="plain"):
        ember.synchronize()


def _wait_query_loop(stream, event):
    while not stream.query():
        time.sleep(0.001)


def _wait_await_stream(stream, event):
    async def main():
        await stream

    asyncio.run(main())


def _wait_await_event(stream, event):
    async def main():
        await event

    asyncio.run(main())


def _wait_await_device(stream, event):
    asyncio.run(ember.synchronize_async())


def _wait_await_poll(stream, event):
    async def main():
        await stream

    with config.override(async_wait="poll"):
        asyncio.run(main())


WAYS = [
    _wait_sync, _wait_no_spin, _wait_blocking, _wait_plain, _wait_event,
    _wait_event_blocking, _wait_device, _wait_device_plain, _wait_query_loop,
    _wait_await_stream, _wait_await_event, _wait_await_device, _wait_await_poll,
]  # fmt: skip


@pytest.mark.parametrize("wait", WAYS, ids=[w.__name__[6:] for w in WAYS])
def test_results_read_after_a_wait_are_complete(backend, work, wait):
    stream = ember.Stream()
    out = ready_zeros(1)
    ember.synchronize()

    def start(seconds, attempt):
        work.spin_then(seconds, out, 42 + attempt, stream)
        event = ember.Event()
        event.record(stream)
        if not stream.query() and not event.query():  # still running when the wait begins
            return event, 42 + attempt
        stream.synchronize()
        return None

    event, value = busy_when_checked(start)
    wait(stream, event)
    assert read_elsewhere(backend, out)[0] == value  # written by the work the wait waited for
    assert stream.query() and event.query()


def test_work_submitted_after_a_wait_is_waited_for_again(backend, work):
    stream = ember.Stream()
    out = ready_zeros(1)
    for value in (1, 2, 3):
        work.spin_then(LONG / 3, out, value, stream)
        stream.synchronize()
        assert read_elsewhere(backend, out)[0] == value


# ------------------------------------------------------------------ asyncio


@pytest.mark.parametrize("mode", ["thread", "poll"])
def test_event_loop_keeps_ticking_while_awaiting_a_long_kernel(backend, work, mode):
    stream = ember.Stream()
    out = ready_zeros(1)
    ticks = []

    async def ticker():
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.001)

    async def main(seconds):
        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        start = len(ticks)
        work.spin_then(seconds, out, 9, stream)
        busy = not stream.query()
        await stream
        tick.cancel()
        return start, busy

    def attempt(seconds, _):
        ticks.clear()
        with config.override(async_wait=mode):
            start, busy = asyncio.run(main(seconds))
        return start if busy else None

    start = busy_when_checked(attempt)
    assert read_elsewhere(backend, out)[0] == 9
    # the loop ran while the kernel did: it ticked during the await (how often is the
    # machine's business: no clock bounds, which fail under load)
    assert len(ticks) - start >= 3


@pytest.mark.parametrize("mode", ["thread", "poll"])
def test_cancelled_await_leaves_nothing_stuck(backend, work, mode):
    stream = ember.Stream()
    out = ready_zeros(1)

    async def main(seconds):
        work.spin_then(seconds, out, 3, stream)
        task = asyncio.create_task(sync.wait_async(stream))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        busy = not stream.query()  # still running: the cancel did not wait for it
        await stream  # waiting again works
        return busy

    def attempt(seconds, _):
        with config.override(async_wait=mode):
            return True if asyncio.run(main(seconds)) else None

    busy_when_checked(attempt)
    assert read_elsewhere(backend, out)[0] == 3
    deadline = time.monotonic() + 5
    while sync.waiters.busy and time.monotonic() < deadline:
        time.sleep(0.01)  # the cancelled wait's thread returns once the device is done
    assert sync.waiters.busy == 0


def test_many_concurrent_awaits_on_many_streams_in_several_loops(backend, work):
    errors = []

    def one_loop(base):
        streams = [ember.Stream() for _ in range(6)]
        outs = [ready_zeros(1) for _ in streams]

        async def main():
            for i, (s, o) in enumerate(zip(streams, outs, strict=True)):
                work.spin_then(LONG / 6, o, base + i, s)
            events = []
            for s in streams[::2]:
                e = ember.Event()
                e.record(s)
                events.append(e)
            await asyncio.gather(*streams[1::2], *events)

        try:
            asyncio.run(main())
            got = [int(read_elsewhere(backend, o)[0]) for o in outs]
            assert got == [base + i for i in range(6)], got
        except Exception as exc:  # reported in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=one_loop, args=(100 * k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors


def test_more_awaits_than_waiter_threads_fall_back_to_polling(backend, work, monkeypatch):
    monkeypatch.setattr(sync, "waiters", sync.WaiterThreads(limit=2))
    streams = [ember.Stream() for _ in range(5)]
    outs = [ready_zeros(1) for _ in streams]

    async def main():
        for i, (s, o) in enumerate(zip(streams, outs, strict=True)):
            work.spin_then(LONG / 5, o, i, s)
        await asyncio.gather(*streams)

    asyncio.run(main())
    assert [int(read_elsewhere(backend, o)[0]) for o in outs] == list(range(5))
    assert sync.waiters.threads <= 2


# ------------------------------------------------------------------ threads

THREADS = 8


def _run_threads(target, count=THREADS):
    errors = []

    def guarded(i):
        try:
            target(i)
        except Exception as exc:  # reported in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:3]


def test_eight_threads_launch_and_sync_on_their_own_streams(backend, work):
    n, rounds = 4096, 30
    ys = [ready_zeros(n) for _ in range(THREADS)]
    work.add(ys[0], 0, None)  # load the kernel before the threads start
    ember.synchronize()

    def worker(i):
        stream = ember.Stream()
        for r in range(1, rounds + 1):
            work.add(ys[i], 1, stream)
            if r % 3 == 0:
                ember.synchronize()  # device-wide, while other threads launch
            else:
                stream.synchronize()
            got = read_elsewhere(backend, ys[i])
            assert (got == r).all(), (i, r, got[:4])

    _run_threads(worker)


def test_eight_threads_launch_and_sync_on_one_shared_stream(backend, work):
    n, rounds = 1024, 30
    shared = ember.Stream()
    ys = [ready_zeros(n) for _ in range(THREADS)]
    work.add(ys[0], 0, shared)
    shared.synchronize()
    before = shared.submitted

    def worker(i):
        for r in range(1, rounds + 1):
            work.add(ys[i], 1, shared)
            shared.synchronize(spin=bool(r % 2))
            got = read_elsewhere(backend, ys[i])
            assert (got == r).all(), (i, r, got[:4])

    _run_threads(worker)
    assert shared.submitted - before == THREADS * rounds  # no submission count was lost
    assert shared.query() and shared.completed == shared.submitted


def test_threads_awaiting_and_syncing_the_same_stream(backend, work):
    stream = ember.Stream()
    out = ready_zeros(1)
    work.spin_then(LONG, out, 11, stream)
    seen = []

    def worker(i):
        if i % 2:
            asyncio.run(sync.wait_async(stream))
        else:
            stream.synchronize(blocking=bool(i % 4))
        seen.append(int(read_elsewhere(backend, out)[0]))

    _run_threads(worker)
    assert seen == [11] * THREADS
