"""The caching allocator, scoped caches and pinned staging on real devices.

Runs on every available backend (PoCL's CPU device here, CUDA on the GPU machine).
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from device_work import Work, read_elsewhere, ready_zeros

import ember
from ember.runtime.allocator import size_class

MiB = 1 << 20
LONG = 0.15


@pytest.fixture
def work(backend):
    return Work.on(backend)


def _same(a, b) -> bool:
    """Two arrays on the same device memory (CUDA: an int address; OpenCL: a cl.Buffer)."""
    return a.buffer.handle == b.buffer.handle


# ------------------------------------------------------------------ reuse


def test_reuse_by_size_class(backend):
    ember.memory.empty_cache()  # no idle block of another class to serve a miss
    a = ember.empty(10_001, ember.uint8)
    b = ember.empty(10_002, ember.uint8)  # alive: a different block
    assert not _same(a, b)
    old = a.buffer.handle
    hits = ember.memory.stats()["cache_hits"]
    del a
    c = ember.empty(2_500, ember.int32)  # 10 000 bytes: the same 10 240-byte class
    assert c.buffer.handle == old
    assert ember.memory.stats()["cache_hits"] == hits + 1
    d = ember.empty(5 * MiB // 4, ember.float32)
    e = ember.empty(7 * MiB // 4, ember.float32)  # another class: never the same block
    assert not _same(d, e) and not _same(c, d)


@pytest.mark.parametrize("allocated_on", ["A", "default"])
def test_stream_ordered_reuse_never_lets_a_running_kernel_see_new_writes(
    backend, work, allocated_on
):
    """A kernel on stream A still reading a buffer that was freed and reallocated on stream
    B must not see what B writes into it (whether the buffer was allocated on A, or on the
    default stream and only used on A)."""
    ember.memory.empty_cache()  # the only idle block of the class will be x's
    a, b = ember.Stream(), ember.Stream()
    n = 12_345
    ones = np.ones(n, np.int32)
    x = ember.asarray(ones, stream=a if allocated_on == "A" else None)
    seen = ready_zeros(n)
    work.spin_copy(LONG, x, seen, a)  # reads x only after LONG seconds
    old = x.buffer.handle
    del x  # freed while the kernel still has to read it
    reuses = ember.memory.stats()["cross_stream_reuses"]
    y = ember.empty(n, ember.int32, stream=b)
    assert y.buffer.handle == old  # the same memory, handed to stream b
    assert ember.memory.stats()["cross_stream_reuses"] == reuses + 1
    backend.copy_from_host(y.buffer, 0, np.full(n, 2, np.int32), b)  # B's write
    b.synchronize()
    a.synchronize()
    np.testing.assert_array_equal(read_elsewhere(backend, seen), ones)
    np.testing.assert_array_equal(read_elsewhere(backend, y), np.full(n, 2, np.int32))


@ember.kernel
def _copy(src, dst):
    i = ember.global_id()
    if i < src.shape[0]:
        dst[i] = src[i]


def test_compiled_kernel_on_another_stream_protects_its_arrays(backend, work):
    """An @ember.kernel launch on stream A records its arrays' use there: a buffer freed
    while that launch still has to read it is not handed to stream B's writes early."""
    ember.memory.empty_cache()
    a, b = ember.Stream(), ember.Stream()
    n = 12_345
    ones = np.ones(n, np.int32)
    x = ember.asarray(ones)  # allocated on the default stream, used only on A
    seen = ready_zeros(n)
    flag = ready_zeros(1)
    work.spin_then(LONG, flag, 1, a)  # A is busy for LONG seconds...
    _copy.launch(n)(x, seen, stream=a)  # ...then reads x
    old = x.buffer.handle
    del x
    y = ember.empty(n, ember.int32, stream=b)
    assert y.buffer.handle == old
    backend.copy_from_host(y.buffer, 0, np.full(n, 2, np.int32), b)
    b.synchronize()
    a.synchronize()
    np.testing.assert_array_equal(read_elsewhere(backend, seen), ones)


# ------------------------------------------------------------------ scoped caches


def test_scoped_cache_bounds_a_loop_exactly(backend, work):
    cache = ember.AllocCache()
    for step in range(50):
        with ember.cached(cache):
            tmp = ember.zeros(2 * MiB, ember.int32)  # 8 MiB
            work.add(tmp, step, None)
            del tmp
    assert cache.nbytes == 8 * MiB and cache.n_free == 1 and cache.n_busy == 0
    cache.free()
    assert cache.nbytes == 0


def test_escaped_arrays_keep_their_data_after_the_scope(backend):
    cache = ember.AllocCache()
    data = np.arange(1000, dtype=np.int32)
    with ember.cached(cache):
        kept = ember.asarray(data)  # escapes the block
        scratch = ember.asarray(-data)
        del scratch
    for _ in range(3):
        with ember.cached(cache):
            other = ember.asarray(np.full(1000, 7, np.int32))  # the same size class
            assert not _same(other, kept)
            del other
    np.testing.assert_array_equal(kept.to_numpy(), data)
    assert cache.n_busy == 1


def test_freeing_a_cache_with_busy_buffers_raises(backend):
    cache = ember.AllocCache()
    with ember.cached(cache):
        live = ember.empty(1000, ember.float32)
    with pytest.raises(ember.EmberError, match=r"1 buffer\(s\) are still used by live arrays"):
        cache.free()
    del live
    cache.free()
    assert cache.n_free == 0 and cache.n_busy == 0


def test_scopes_are_per_thread_and_per_task(backend):
    main_cache, thread_cache = ember.AllocCache(), ember.AllocCache()
    kept = {}

    def worker():
        with ember.cached(thread_cache):
            kept["thread"] = ember.empty(100, ember.float32)
        kept["outside"] = ember.empty(100, ember.float32)

    with ember.cached(main_cache):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        mine = ember.empty(100, ember.float32)
    assert main_cache.n_busy == 1 and thread_cache.n_busy == 1
    del kept["outside"]
    assert thread_cache.n_busy == 1  # the array made outside the thread's scope: pool only

    caches = [ember.AllocCache() for _ in range(2)]

    async def task(cache):
        with ember.cached(cache):
            arrays = []
            for _ in range(3):
                arrays.append(ember.empty(64, ember.int32))
                await asyncio.sleep(0)  # the other task runs here with its own scope
            return arrays

    async def main():
        return await asyncio.gather(*(task(c) for c in caches))

    results = asyncio.run(main())
    assert [c.n_busy for c in caches] == [3, 3]
    del results, mine
    assert [c.n_busy for c in caches] == [0, 0]


# ------------------------------------------------------------------ out of memory


def test_limit_gives_the_documented_error_and_recovers(backend):
    pool = ember.memory.pool(backend)
    saved = pool.limit
    ember.memory.empty_cache()
    base = ember.memory.stats()["reserved"]
    try:
        ember.memory.set_limit(base + 4 * MiB)
        a = ember.empty(3 * MiB, ember.uint8)
        with pytest.raises(ember.OutOfMemoryError) as info:
            ember.empty(2 * MiB, ember.uint8)
        message = str(info.value)
        assert "cannot allocate 2.0 MiB" in message
        assert "it would exceed the memory limit" in message
        for part in ("In use by Ember arrays:", "cached:", "device total:",
                     "limit (EMBER_MEMORY_LIMIT)", "ember.memory.empty_cache()"):  # fmt: skip
            assert part in message
        assert isinstance(info.value, MemoryError)
        del a
        b = ember.empty(2 * MiB, ember.uint8)  # served by the cached 3 MiB block
        assert b.nbytes == 2 * MiB
        with pytest.raises(ember.OutOfMemoryError):
            ember.empty(2 * MiB, ember.uint8)  # 3 + 2 MiB: over the limit
        del b
        ember.memory.set_limit(None)
        c = ember.empty(2 * MiB, ember.uint8)  # no limit: fine again
        assert c.nbytes == 2 * MiB
    finally:
        pool.limit = saved


def test_device_out_of_memory_names_the_numbers_and_recovers(backend):
    huge = backend.device.total_memory * 4
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.empty(huge, ember.uint8)
    message = str(info.value)
    assert f"on {backend.device.name}" in message
    assert "the device is out of memory" in message or "exceed" in message
    assert "device total:" in message and "ember.memory.empty_cache()" in message
    x = ember.asarray(np.arange(10, dtype=np.int32))  # still usable
    np.testing.assert_array_equal(x.to_numpy(), np.arange(10))


# ------------------------------------------------------------------ statistics


def test_stats_add_up(backend):
    before = ember.memory.stats()
    live = [ember.empty(n, ember.uint8) for n in (100, 70_000, 3 * MiB)]
    dead = [ember.empty(n, ember.uint8) for n in (5_000, 2 * MiB)]
    del dead
    s = ember.memory.stats()
    assert s["reserved"] == s["in_use"] + s["cached"]
    assert s["in_use"] >= sum(size_class(a.nbytes) for a in live)
    assert s["cached"] >= size_class(5_000) + size_class(2 * MiB)
    assert s["allocations"] == s["cache_hits"] + s["cache_misses"]
    assert s["allocations"] - before["allocations"] == 5
    assert s["peak_reserved"] >= s["reserved"]
    assert s["host_reserved"] == s["host_in_flight"] + s["host_cached"]
    ember.memory.reset_peak()
    assert ember.memory.stats()["peak_reserved"] == ember.memory.stats()["reserved"]
    released = ember.memory.empty_cache()
    assert released >= size_class(5_000) + size_class(2 * MiB)
    after = ember.memory.stats()
    assert after["cached"] == 0 and after["reserved"] == after["in_use"]
    del live


# ------------------------------------------------------------------ pinned staging


def test_asarray_on_a_stream_stages_through_pinned_memory(backend, work):
    stream = ember.Stream()
    host = np.arange(1 << 18, dtype=np.float32)  # 1 MiB
    gate = ready_zeros(1)
    for attempt in range(4):  # under load the spin may end first: again, 3x longer
        work.spin_then(LONG * 3**attempt, gate, 1, stream)  # busy: the upload must queue
        start = ember.memory.stats()
        dev = ember.asarray(host, stream=stream)
        if not stream.query():  # returned while the kernel ahead still ran: did not wait
            break
        stream.synchronize()
    else:
        pytest.fail("the device work finished before it could be observed, 4 times")
    expected = host.copy()
    host[:] = -1  # allowed at once: the data was staged
    s = ember.memory.stats()
    assert s["host_uploads"] == start["host_uploads"] + 1
    assert s["host_in_flight"] >= host.nbytes  # held until the stream passes the copy
    again = ember.asarray(expected, stream=stream)  # the first buffer is still in flight
    assert ember.memory.stats()["host_reserved"] >= start["host_reserved"] + host.nbytes
    stream.synchronize()
    np.testing.assert_array_equal(dev.to_numpy(), expected)
    np.testing.assert_array_equal(again.to_numpy(), expected)
    s = ember.memory.stats()
    assert s["host_in_flight"] == 0 and s["host_cached"] >= 2 * host.nbytes
    hits = s["host_cache_hits"]
    third = ember.asarray(expected, stream=stream)  # now a staging buffer is free again
    assert ember.memory.stats()["host_cache_hits"] == hits + 1
    assert ember.memory.stats()["host_reserved"] == s["host_reserved"]
    stream.synchronize()
    np.testing.assert_array_equal(third.to_numpy(), expected)


def test_staged_uploads_from_threads(backend):
    streams = [ember.Stream() for _ in range(4)]
    results = {}

    def worker(i):
        host = np.full(50_000, i, np.int32)
        arrays = [ember.asarray(host + k, stream=streams[i]) for k in range(10)]
        streams[i].synchronize()
        results[i] = [a.to_numpy() for a in arrays]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i in range(4):
        for k, got in enumerate(results[i]):
            assert (got == i + k).all()


# ------------------------------------------------------------------ large copies


def test_large_copies_round_trip_through_staging(backend):
    n = 9 * MiB + 5  # several chunks and a partial one (runtime/staging.py)
    host = np.random.default_rng(7).integers(0, 256, n, dtype=np.uint8)
    ember.memory.empty_cache()  # no download array's memory to reuse
    before = ember.memory.stats()["host_staged_copies"]
    dev = ember.asarray(host)
    np.testing.assert_array_equal(dev.to_numpy(), host)
    wide = np.random.default_rng(8).standard_normal(n // 8)
    x = ember.asarray(wide)
    np.testing.assert_array_equal(x.to_numpy(), wide)
    np.testing.assert_array_equal(x[::3].to_numpy(), wide[::3])  # a strided view: raw bytes
    np.testing.assert_array_equal(x[::-2].to_numpy(), wide[::-2])
    staged = ember.memory.stats()["host_staged_copies"] - before
    # two uploads, three downloads: the second contiguous one reuses the first one's
    # freed memory, pinned, and goes straight to the driver (runtime/hostcache.py)
    assert staged == (5 if backend.staged_copies else 0)
    s = ember.memory.stats()
    assert s["host_in_flight"] == 0  # every pinned buffer back in the pool


def test_native_staged_upload_pipeline(backend):
    """Backend.copy_chunks_from_host (CUDA: C threads, where the stub is built): small chunks
    through a ring of 3 pinned buffers, twice (the second call's buffers primed), on a
    stream of the caller's."""
    n, chunk = 1 * MiB + 12345, 64 * 1024
    host = np.random.default_rng(3).integers(0, 256, n, dtype=np.uint8)
    dev = backend.alloc(n + 100)
    buffers = [backend.alloc_host(chunk) for _ in range(3)]
    events = [backend.create_event() for _ in range(3)]
    stream = backend.create_stream()
    if not backend.copy_chunks_from_host(
        dev, 100, host, stream, buffers, events, chunk, [False] * 3, 4
    ):
        assert "C threads" not in backend.describe().get("staged uploads", "")
        pytest.skip(f"{backend.name}: no native staged upload here")
    assert "C threads" in backend.describe()["staged uploads"]
    again = host[::-1].copy()
    assert backend.copy_chunks_from_host(
        dev, 100, again, stream, buffers, events, chunk, [True] * 3, 2
    )  # fmt: skip
    stream.synchronize()
    out = np.empty(n, np.uint8)
    backend.copy_to_host(out, dev, 100)
    np.testing.assert_array_equal(out, again)
    assert stream.completed == stream.submitted > 0


def test_large_async_upload_is_staged_and_the_source_reusable_at_once(backend):
    stream = ember.Stream()
    host = np.arange(3 * MiB, dtype=np.float32)  # 12 MiB: chunked
    expected = host.copy()
    dev = ember.asarray(host, stream=stream)
    host[:] = -1  # allowed at once: every chunk was copied out before the call returned
    stream.synchronize()
    np.testing.assert_array_equal(dev.to_numpy(), expected)
    assert ember.memory.stats()["host_in_flight"] == 0


def test_a_reused_download_array_is_pinned_and_filled_directly(backend):
    if not backend.staged_copies:
        pytest.skip("this backend copies host memory directly anyway")
    ember.memory.empty_cache()
    host = np.random.default_rng(3).standard_normal(3 * MiB).astype(np.float32)  # 12 MiB
    x = ember.asarray(host)
    first = x.to_numpy()
    assert not backend.is_pinned(first)  # a size downloaded once: no registration
    np.testing.assert_array_equal(first, host)
    del first
    staged = ember.memory.stats()["host_staged_copies"]
    y = x * 2  # queued: the direct copy below must wait for it
    again = y.to_numpy()
    assert backend.is_pinned(again) and again.flags.writeable
    np.testing.assert_array_equal(again, host * 2)
    s = ember.memory.stats()
    assert s["host_staged_copies"] == staged and s["host_pinned"] >= 12 * MiB
    del again
    ember.memory.empty_cache()
    assert ember.memory.stats()["host_pinned"] == 0
    np.testing.assert_array_equal(x.to_numpy(), host)  # after the unpinning: staged again


def test_an_array_uploaded_again_and_again_is_pinned_and_copied_directly(backend):
    if not backend.staged_copies:
        pytest.skip("this backend copies host memory directly anyway")
    import gc

    # pinned result blocks of earlier tests in this process count against the pinned bound
    # (hostcache.PINNED_MAX): without room, the source would rightly not be pinned
    ember.memory.empty_cache()
    host = np.random.default_rng(4).standard_normal(3 * MiB).astype(np.float32)  # 12 MiB
    before = ember.memory.stats()
    first = ember.asarray(host)  # staged; the array is noted
    ember.asarray(host)  # staged; watched
    assert not backend.is_pinned(host)
    second = ember.asarray(host)  # pinned now, copied straight from it
    assert backend.is_pinned(host)
    host *= -1  # changed in place: the next upload copies the new values
    third = ember.asarray(host)
    after = ember.memory.stats()
    assert after["host_staged_copies"] == before["host_staged_copies"] + 2
    assert after["host_pinned"] == before["host_pinned"] + host.nbytes
    np.testing.assert_array_equal(first.to_numpy(), -host)
    np.testing.assert_array_equal(second.to_numpy(), -host)
    np.testing.assert_array_equal(third.to_numpy(), host)
    nbytes, pinned = host.nbytes, ember.memory.stats()["host_pinned"]
    del host
    gc.collect()
    assert ember.memory.stats()["host_pinned"] == pinned - nbytes  # unpinned when freed


def test_mib_sized_copies_of_reused_memory_are_pinned_and_smaller_ones_not(backend):
    if not backend.staged_copies:
        pytest.skip("this backend copies host memory directly anyway")
    from ember.runtime import hostcache

    ember.memory.empty_cache()
    host = np.random.default_rng(5).standard_normal(MiB // 2).astype(np.float32)  # 2 MiB
    staged = ember.memory.stats()["host_staged_copies"]
    for _ in range(3):
        x = ember.asarray(host)  # below the staging size: pinned on its third upload
    assert backend.is_pinned(host)
    first = x.to_numpy()
    assert not backend.is_pinned(first)
    np.testing.assert_array_equal(first, host)
    del first
    again = (x + 1).to_numpy()  # the freed result's memory, pinned now
    assert backend.is_pinned(again)
    np.testing.assert_array_equal(again, host + 1)
    assert ember.memory.stats()["host_staged_copies"] == staged  # nothing was staged
    small = np.ones(hostcache.MIN_BYTES // 8 - 1)
    for _ in range(3):
        y = ember.asarray(small)
    assert not backend.is_pinned(small) and not backend.is_pinned(y.to_numpy())


def test_pinned_memory_is_copied_directly(backend):
    if not backend.staged_copies:
        pytest.skip("this backend copies host memory directly anyway")
    ember.memory.empty_cache()  # the result below is fresh pageable memory
    pinned = backend.alloc_host(8 * MiB).view(np.float32)
    pinned[:] = np.arange(pinned.size, dtype=np.float32)
    assert backend.is_pinned(pinned) and not backend.is_pinned(np.ones(8))
    before = ember.memory.stats()["host_staged_copies"]
    dev = ember.asarray(pinned)
    out = backend.alloc_host(8 * MiB).view(np.float32)
    np.testing.assert_array_equal(dev.to_numpy(), pinned)  # a fresh pageable result: staged
    assert ember.memory.stats()["host_staged_copies"] == before + 1
    from ember.runtime.memory import copy_out

    copy_out(backend, out, dev.buffer, 0)  # a pinned destination: straight from the driver
    np.testing.assert_array_equal(out, pinned)
    assert ember.memory.stats()["host_staged_copies"] == before + 1
