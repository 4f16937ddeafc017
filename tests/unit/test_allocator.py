"""The caching allocator and scoped caches, on a fake backend (no device)."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest
from fake_backend import FakeBase
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.errors import OutOfMemoryError
from ember.runtime import alloccache
from ember.runtime.allocator import Pool, size_class
from ember.runtime.backend import DeviceInfo

MiB = 1 << 20


class FakeStream:
    def __init__(self):
        self.waited = []

    def wait_event(self, event):
        self.waited.append(event)


class FakeEvent:
    def record(self, stream):
        self.stream = stream


class FakeBuffer:
    next_handle = 1

    def __init__(self, backend, nbytes):
        self.backend, self.nbytes = backend, nbytes
        self.handle = FakeBuffer.next_handle
        FakeBuffer.next_handle += 1

    def close(self):
        self.backend.allocated -= self.nbytes
        self.backend.freed.append(self.handle)


class FakeBackend(FakeBase):
    """Just what the pool uses: alloc, default_stream, events, synchronize, device."""

    def __init__(self, capacity=64 * MiB):
        self.capacity = capacity
        self.allocated = 0
        self.freed = []
        self.syncs = 0
        self._stream = FakeStream()
        self.device = DeviceInfo("fake", 0, "Fake GPU", capacity, 1, 32, 1024, 48 * 1024)

    def alloc(self, nbytes, stream=None):
        if self.allocated + nbytes > self.capacity:
            raise OutOfMemoryError("fake out of memory", code_name="FAKE_OOM")
        self.allocated += nbytes
        return FakeBuffer(self, nbytes)

    def create_event(self, timing=False):
        return FakeEvent()

    def synchronize(self):
        self.syncs += 1


@given(st.integers(1, 1 << 34))
def test_size_class_covers_request_with_bounded_waste(n):
    c = size_class(n)
    assert c >= n
    assert c - n < 512 if n <= MiB else c <= n * 1.25 + 1
    assert size_class(c) == c  # a class is its own class


def test_a_miss_gives_idle_blocks_of_other_classes_back_first():
    be = FakeBackend(capacity=10 * MiB)
    pool = Pool(be)
    pool.return_age = 0  # every idle block, however recently freed
    small, big = pool.allocate(MiB), pool.allocate(6 * MiB)
    small_handle = small.handle
    del small, big  # both idle
    b = pool.allocate(8 * MiB)  # a miss: the idle blocks go back before reserving 8 MiB
    assert b.nbytes == 8 * MiB and be.allocated == 8 * MiB
    assert pool.stats()["oom_retries"] == 0 and pool.stats()["returned_blocks"] == 2
    assert small_handle in be.freed and be.syncs == 0  # stream-ordered: no device wait
    assert pool.stats()["reserved"] == 8 * MiB and pool.stats()["cached"] == 0
    del b
    again = pool.allocate(8 * MiB)  # a hit: nothing else is given back
    assert pool.stats()["returned_blocks"] == 2 and again.nbytes == 8 * MiB


def test_a_repeating_working_set_stops_missing():
    """A miss keeps the idle blocks that an allocation took during the last
    ``return_age`` misses: a loop allocating the same sizes each iteration (with a new
    class each time in the middle of a call, the case that used to cascade) misses only
    while it warms up."""
    be = FakeBackend(capacity=256 * MiB)
    pool = Pool(be)

    def call(previous):
        """A unique-like call: temporaries freed between allocations, a result kept
        until the next call has started."""
        bounds = [pool.allocate(512) for _ in range(3)]
        table = pool.allocate(16 * MiB)
        del bounds, previous
        counts = pool.allocate(8192)
        values = pool.allocate(3 * MiB)
        del table, counts
        return values

    out = pool.allocate(MiB)  # the first call's "previous result": a class it never uses
    for _ in range(3):
        out = call(out)
    misses = pool.stats()["cache_misses"]
    for _ in range(5):
        out = call(out)
    assert pool.stats()["cache_misses"] == misses
    assert be.syncs == 0


def test_random_sizes_give_every_idle_block_back():
    """Misses of classes never given back (churn) are no regrets: every idle block of
    another class goes back at once, however recently freed."""
    be = FakeBackend(capacity=1024 * MiB)
    pool = Pool(be)
    for k in range(5):  # classes far enough apart that no request takes a larger block
        idle = pool.allocate(4**k * MiB)
        handle = idle.handle
        del idle
        keep = pool.allocate(3 * 4**k * MiB)  # a new class: a miss, no regret
        assert handle in be.freed
        del keep
    assert pool.stats()["returned_blocks"] == 9 and pool.stats()["cache_misses"] == 10


def test_a_block_idle_for_return_age_misses_goes_back():
    """While misses are regrets (white-box: the moving share set to 1), a block freed
    recently is kept until ``return_age`` misses have passed."""
    be = FakeBackend(capacity=256 * MiB)
    pool = Pool(be)
    pool.return_age, pool._regret = 4, 1.0
    stale = pool.allocate(8 * MiB)
    handle = stale.handle
    del stale
    # each a miss of a new class too small to take the idle 8 MiB block
    keep = [pool.allocate(64 * 1024 * (k + 1)) for k in range(pool.return_age - 1)]
    assert handle not in be.freed and pool.stats()["cached"] == 8 * MiB
    keep.append(pool.allocate(MiB))  # the return_age-th miss since it was freed
    assert handle in be.freed and pool.stats()["returned_blocks"] == 1
    assert pool.stats()["cached"] == 0


def test_enough_returns_only_what_the_request_needs():
    be = FakeBackend(capacity=64 * MiB)
    pool = Pool(be)
    pool.return_idle, pool.return_age = "enough", 0
    blocks = [pool.allocate(n * MiB) for n in (1, 2, 16)]
    del blocks
    kept = pool.allocate(6 * MiB)  # the largest idle block (16 MiB) covers it: the rest stay
    assert pool.stats()["returned_blocks"] == 1
    assert pool.stats()["cached"] == 3 * MiB and kept.nbytes == 6 * MiB


def test_a_block_used_on_another_stream_is_freed_after_that_use():
    be = FakeBackend(capacity=64 * MiB)
    pool = Pool(be)
    pool.return_age = 0
    other = FakeStream()
    a = pool.allocate(MiB, other)  # allocated (home) on `other`
    del a
    b = pool.allocate(MiB)  # reused on the default stream: the default stream waits
    del b
    pool.allocate(4 * MiB)  # miss: the 1 MiB block goes back, freed on its home stream...
    assert len(other.waited) == 1  # ...after an event on the default stream it last ran on
    assert other.waited[0].stream is be.default_stream


def test_reuse_by_size_class():
    pool = Pool(FakeBackend())
    a = pool.allocate(1000)
    handle = a.handle
    del a
    b = pool.allocate(900)  # same 1024-byte class
    assert b.handle == handle
    s = pool.stats()
    assert s["cache_hits"] == 1 and s["cache_misses"] == 1 and s["allocations"] == 2


def test_different_classes_do_not_share():
    pool = Pool(FakeBackend())
    a = pool.allocate(4 * MiB)
    h = a.handle
    del a
    assert pool.allocate(8 * MiB).handle != h


def test_a_miss_takes_an_idle_block_up_to_twice_as_large():
    pool = Pool(FakeBackend())
    a = pool.allocate(5 * MiB)
    h = a.handle
    del a
    b = pool.allocate(3 * MiB)  # class 3 MiB: none cached, the 5 MiB block fits within 2x
    assert b.handle == h and b.nbytes == 3 * MiB
    assert pool.stats()["larger_block_reuses"] == 1
    del b
    assert pool.allocate(2 * MiB).handle != h  # 5 MiB is more than twice 2 MiB
    cache = ember.AllocCache()
    c = cache.allocate(pool, 3 * MiB, pool._default)  # scoped caches take exact classes only
    assert c.handle != h


def test_cross_stream_reuse_orders_the_new_stream_after_the_old():
    be = FakeBackend()
    pool = Pool(be)
    other = FakeStream()
    a = pool.allocate(MiB)  # on the default stream
    h = a.handle
    del a
    b = pool.allocate(MiB, other)
    assert b.handle == h
    assert len(other.waited) == 1 and other.waited[0].stream is be.default_stream
    assert pool.stats()["cross_stream_reuses"] == 1
    del b
    c = pool.allocate(MiB, other)  # now it lives on `other`: no new wait
    assert c.handle == h and len(other.waited) == 1


def test_out_of_memory_releases_cache_and_retries():
    be = FakeBackend(capacity=10 * MiB)
    pool = Pool(be)
    pool.return_idle = "off"  # (with it on, the miss gives the idle block back first: below)
    a = pool.allocate(6 * MiB)
    del a  # 6 MiB cached
    b = pool.allocate(8 * MiB)  # does not fit next to the cached block: release + retry
    assert b.nbytes == 8 * MiB
    assert pool.stats()["oom_retries"] == 1 and pool.stats()["cached"] == 0
    with pytest.raises(OutOfMemoryError) as info:
        pool.allocate(4 * MiB)
    msg = str(info.value)
    assert "cannot allocate 4.0 MiB on Fake GPU: the device is out of memory" in msg
    assert "In use by Ember arrays: 8.0 MiB; cached: 0 B; device total: 10.0 MiB" in msg
    assert "ember.memory.empty_cache()" in msg
    del b
    assert pool.allocate(4 * MiB).nbytes == 4 * MiB  # recovered


def test_limit_is_enforced_and_documented_in_the_error():
    pool = Pool(FakeBackend(), limit=4 * MiB)
    a = pool.allocate(3 * MiB)
    with pytest.raises(OutOfMemoryError, match="exceed the memory limit of 4.0 MiB"):
        pool.allocate(2 * MiB)
    del a
    assert pool.allocate(2 * MiB).nbytes == 2 * MiB  # the cached 3 MiB block was released


def test_stats_add_up():
    pool = Pool(FakeBackend())
    live = [pool.allocate(n) for n in (100, 5000, MiB, 3 * MiB)]
    del live[1:3]
    s = pool.stats()
    assert s["reserved"] == s["in_use"] + s["cached"]
    assert s["in_use"] == size_class(100) + size_class(3 * MiB)
    assert s["cached"] == size_class(5000) + size_class(MiB)
    assert s["allocations"] == s["cache_hits"] + s["cache_misses"]
    assert s["peak_reserved"] >= s["reserved"]


def test_a_buffer_dying_in_a_garbage_cycle_leaves_its_block_usable():
    import gc

    class FinalizedBuffer(FakeBuffer):
        closed = False

        def close(self):
            self.closed = True
            super().close()

        def __del__(self):  # the backends' Buffer.__del__ backstop
            self.close()

    class Backend(FakeBackend):
        def alloc(self, nbytes, stream=None):
            super().alloc(nbytes, stream)
            return FinalizedBuffer(self, nbytes)

    pool = Pool(Backend())
    a = pool.allocate(MiB)
    cycle = [a]
    cycle.append(cycle)  # the buffer is now only reachable from cyclic garbage
    del a, cycle
    gc.collect()
    block = pool._free[MiB][pool._default][0]
    assert not block.raw.closed
    assert pool.allocate(MiB).handle == block.raw.handle


def test_empty_cache_frees_everything_cached():
    be = FakeBackend()
    pool = Pool(be)
    a, b = pool.allocate(MiB), pool.allocate(2 * MiB)
    del a, b
    assert pool.empty_cache() == 3 * MiB
    assert be.allocated == 0 and be.syncs == 1


# ---------------------------------------------------------------- scoped caches


def test_scoped_cache_bounds_a_loop_exactly():
    be = FakeBackend()
    pool = Pool(be)
    cache = ember.AllocCache()
    for _ in range(1000):
        with ember.cached(cache):
            tmp = cache.allocate(pool, 8 * MiB, be.default_stream)
            del tmp
    assert be.allocated == 8 * MiB
    assert cache.nbytes == 8 * MiB
    assert repr(cache) == "AllocCache(n_free=1, n_busy=0, nbytes=8.0 MiB)"


def test_escaped_buffer_is_never_handed_out_again():
    be = FakeBackend()
    pool = Pool(be)
    cache = ember.AllocCache()
    with ember.cached(cache):
        escaped = cache.allocate(pool, MiB, be.default_stream)
    with ember.cached(cache):
        fresh = cache.allocate(pool, MiB, be.default_stream)
    assert fresh.handle != escaped.handle
    assert cache.n_busy == 2
    with pytest.raises(ember.EmberError, match="2 buffer.* still used by live arrays"):
        cache.free()
    del escaped, fresh
    assert cache.n_busy == 0 and cache.n_free == 2
    cache.free()
    assert cache.n_free == 0 and pool.stats()["cached"] == 2 * MiB


def test_scope_is_per_thread_and_per_task():
    cache = ember.AllocCache()
    seen = {}

    def worker():
        seen["thread"] = alloccache.current()

    async def task():
        return alloccache.current()

    async def main():
        with ember.cached(cache):
            inner = asyncio.create_task(task())
            assert await inner is cache
        return await asyncio.create_task(task())

    with ember.cached(cache):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert alloccache.current() is cache
        with ember.uncached():
            assert alloccache.current() is None
    assert seen["thread"] is None
    assert asyncio.run(main()) is None


def test_the_run_tests_the_allocator_form_it_asked_for():
    from ember.runtime import allocator

    made = type(Pool(FakeBackend()).allocate(MiB))
    if os.environ.get("EMBER_TEST_PURE_PYTHON"):  # test_native_pool.py's run
        assert allocator.native is None and made is allocator._PooledBuffer
    else:
        pytest.importorskip("ember.runtime._pool", reason="the C allocator is not built")
        assert made is allocator.native.PooledBuffer


def test_cached_rejects_wrong_type():
    with pytest.raises(TypeError, match="takes an ember.AllocCache"):
        with ember.cached(object()):
            pass
