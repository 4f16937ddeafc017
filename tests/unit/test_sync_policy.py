"""Synchronization policy on a fake device (no driver): fast paths, spin/yield/block, asyncio."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from ember import config
from ember.runtime import sync
from ember.runtime.sync import Waitable


class FakeStream(Waitable):
    """Finishes `work_s` seconds after each submit; counts native calls."""

    def __init__(self, work_s=0.0):
        self.work_s = work_s
        self.done_at = 0.0
        self.queries = self.blocks = 0
        self.blocked_with = None

    def submit(self):
        self.submitted += 1
        self.done_at = time.monotonic() + self.work_s

    def _native_query(self):
        self.queries += 1
        return time.monotonic() >= self.done_at

    def _native_block(self, blocking):
        self.blocks += 1
        self.blocked_with = blocking
        time.sleep(max(0.0, self.done_at - time.monotonic()))


def test_never_used_stream_makes_no_native_call():
    s = FakeStream()
    s.synchronize()
    assert s.query()
    assert s.queries == 0 and s.blocks == 0


def test_completed_work_is_remembered():
    s = FakeStream()
    s.submit()
    s.synchronize()
    calls = s.queries + s.blocks
    for _ in range(100):
        s.synchronize()
        assert s.query()
    assert s.queries + s.blocks == calls


def test_short_work_finishes_in_the_spin_phase():
    s = FakeStream()
    s.submit()
    s.synchronize()
    assert s.queries == 1 and s.blocks == 0


class LongStream(FakeStream):
    """Work that only a blocking wait sees finish (never a clock: a loaded machine can take
    longer over the spins and yields than any work time a test could pick)."""

    def _native_query(self):
        self.queries += 1
        return self.blocks > 0

    def _native_block(self, blocking):
        self.blocks += 1
        self.blocked_with = blocking


def test_long_work_spins_a_bounded_number_of_times_then_blocks():
    s = LongStream()
    s.submit()
    s.synchronize(blocking=True)
    assert s.blocks == 1 and s.blocked_with is True
    assert s.queries <= sync.SPINS + sync.YIELDS + sync.HANDOFF_YIELDS
    assert s.completed == s.submitted == 1


def test_a_non_blocking_wait_polls_for_a_while_before_the_driver_wait():
    # work a few ms long ends in the polling phase (no hand-off to the driver's wait, whose
    # wake-up on the main thread costs tens of microseconds); a blocking wait does not poll
    # past its counts, and work longer than POLL_S reaches the driver's wait
    s = LongStream()
    s.submit()
    t0 = time.perf_counter()
    s.synchronize(blocking=False)
    assert s.blocks == 1 and s.blocked_with is False
    assert time.perf_counter() - t0 >= sync.POLL_S  # polled until POLL_S, not just counted
    assert s.queries >= sync.SPINS + sync.YIELDS  # (a loaded machine's yields may fill POLL_S)
    short = FakeStream(work_s=sync.POLL_S / 10)
    short.submit()
    short.synchronize(blocking=False)
    assert short.blocks == 0 and short.completed == 1


def test_plain_mode_goes_straight_to_the_driver():
    s = FakeStream()
    s.submit()
    with config.override(sync="plain"):
        s.synchronize()
    assert s.queries == 0 and s.blocks == 1


def test_work_submitted_during_a_wait_is_not_marked_complete():
    s = FakeStream(work_s=0.05)
    s.submit()
    t = threading.Thread(target=s.synchronize)
    t.start()
    time.sleep(0.01)
    s.submit()  # a second thread submits while the first waits
    t.join()
    assert s.completed == 1 and s.submitted == 2
    assert not s.query() or s.completed == 2


@pytest.mark.parametrize("mode", ["thread", "poll"])
def test_await_keeps_the_event_loop_running(mode):
    s = FakeStream(work_s=0.2)
    s.submit()
    ticks = []

    async def ticker():
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.001)

    async def main():
        tick = asyncio.create_task(ticker())
        await s
        tick.cancel()

    with config.override(async_wait=mode):
        asyncio.run(main())
    assert s.query() and s.completed == 1
    # the loop ran during the 0.2 s wait (a count, not a clock bound: those fail under load)
    assert len(ticks) >= 3


def test_cancelled_await_leaves_nothing_stuck():
    s = FakeStream(work_s=0.1)
    s.submit()

    async def main():
        task = asyncio.create_task(sync.wait_async(s))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        s2 = FakeStream(work_s=0.01)
        s2.submit()
        await s2  # the waiter pool is still usable
        return s2.completed

    assert asyncio.run(main()) == 1


def test_many_concurrent_awaits_on_many_streams_and_loops():
    def run_loop():
        streams = [FakeStream(work_s=0.02) for _ in range(20)]
        for st in streams:
            st.submit()

        async def main():
            await asyncio.gather(*(sync.wait_async(st) for st in streams))

        asyncio.run(main())
        assert all(st.completed == 1 for st in streams)

    threads = [threading.Thread(target=run_loop) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)


def test_device_errors_reach_the_awaiting_task():
    class Broken(FakeStream):
        def _native_query(self):
            return False

        def _native_block(self, blocking):
            raise RuntimeError("device fell over")

    s = Broken()
    s.submit()
    with pytest.raises(RuntimeError, match="device fell over"):
        asyncio.run(sync.wait_async(s))
