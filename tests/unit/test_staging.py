"""The staged host <-> device copy pipeline (ember.runtime.staging) on a fake backend:
chunking, partial last chunks, and no pinned buffer lost when a copy fails midway."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fake_backend import FakeBase, FakeStreamBase, run_threads

from ember.errors import DriverError
from ember.runtime import staging
from ember.runtime.backend import Buffer, DeviceInfo
from ember.runtime.pinned import HostPool

KiB = 1 << 10


class FakeEvent:
    """Completes at once when ``auto`` (the fake device is instantaneous), else when told."""

    def __init__(self, backend):
        self.backend = backend
        self.done = True

    def record(self, stream):
        self.done = self.backend.auto
        self.backend.recorded.append(self)

    def query(self):
        return self.done

    def synchronize(self, blocking=None, spin=None):
        assert self.done, "a worker waited on an event the fake device never completes"


class Memory(Buffer):
    handle = None

    def __init__(self, nbytes):
        self.data = np.zeros(nbytes, np.uint8)
        self.nbytes = nbytes
        self.handle = id(self)

    def close(self):
        pass


class StagingBackend(FakeBase):
    """Device memory is host memory; copies can be told to fail at their n-th call."""

    staged_copies = True

    def __init__(self):
        self.device = DeviceInfo("fake", 0, "Fake GPU", 1 << 30, 1, 32, 1024, 48 * KiB)
        self.auto = True
        self.recorded: list[FakeEvent] = []
        self.fail_at: int | None = None  # fail the n-th copy (0-based), of either direction
        self.copies = 0
        self.host_allocs = 0
        self.fail_host_alloc_at: int | None = None
        self.lock = threading.Lock()

    def _count(self):
        with self.lock:
            n, self.copies = self.copies, self.copies + 1
        if n == self.fail_at:
            raise DriverError("injected copy failure", code=999, code_name="FAKE", call="copy")

    def alloc(self, nbytes, stream=None):
        return Memory(nbytes)

    def copy_from_host(self, dst, dst_offset, src, stream=None):
        self._count()
        dst.data[dst_offset : dst_offset + src.nbytes] = src

    def copy_to_host(self, dst, src, src_offset, stream=None):
        self._count()
        dst[:] = src.data[src_offset : src_offset + dst.nbytes]

    def alloc_host(self, nbytes):
        n, self.host_allocs = self.host_allocs, self.host_allocs + 1
        if n == self.fail_host_alloc_at:
            raise MemoryError("injected: no pinned memory left")
        return np.empty(nbytes, np.uint8)

    def create_event(self, timing=False):
        return FakeEvent(self)

    def synchronize(self, blocking=None, spin=None):
        pass


class NativeStagingBackend(StagingBackend):
    """The same device, uploads through the C pipeline of ``ember.backends.cuda._fill``
    driven by its stand-in entry points (a transfer is a memcpy into host memory)."""

    def __init__(self):
        super().__init__()
        self.native = pytest.importorskip("ember.backends.cuda._fill", reason="C stub not built")
        if not hasattr(self.native, "upload_chunks"):
            pytest.skip("the C stub was built without threads")
        self.native_calls = 0

    def copy_chunks_from_host(self, dst, offset, host, stream, buffers, events, chunk, primed,
                              threads):  # fmt: skip
        n = -(-host.nbytes // chunk)
        fail = self.fail_at - self.copies + 1 if self.fail_at is not None else 0
        self.native.probe_fill_arm(fail if 0 < fail <= n else 0, 999)
        status, call, queued = self.native.upload_chunks(
            self.native.probe_fill_entries(), 0, dst.data.ctypes.data + offset,
            host.ctypes.data, host.nbytes, 0, tuple(b.ctypes.data for b in buffers),
            tuple(range(1, len(events) + 1)), chunk, threads, bytes(map(bool, primed)),
        )  # fmt: skip
        self.native_calls += 1
        self.copies += queued + (status != 0)
        if status:
            raise DriverError("injected copy failure", code=status, code_name="FAKE", call="copy")
        return True


BACKENDS = {"python": StagingBackend, "native": NativeStagingBackend}


@pytest.fixture(params=sorted(BACKENDS))
def make_backend(request):
    """Each test on the Python pipeline and on the C one."""
    return BACKENDS[request.param]


@pytest.fixture
def small_chunks(monkeypatch):
    """4 KiB chunks in 1 KiB steps, 3 workers: a few KiB cross several chunk boundaries."""
    monkeypatch.setattr(staging, "CHUNK_MIN", 1 * KiB)
    monkeypatch.setattr(staging, "CHUNK_MAX", 4 * KiB)
    monkeypatch.setattr(staging, "CHUNK_STEP", 1 * KiB)
    monkeypatch.setattr(staging, "_workers", staging.Workers(3))


def settled(pool: HostPool) -> bool:
    """Every pinned buffer is accounted for and none is held by a copy."""
    s = pool.stats()
    return s["host_in_flight"] == 0 and s["host_cached"] == s["host_reserved"] > 0


def test_chunk_size_keeps_workers_busy_within_bounds():
    MiB = 1 << 20
    assert staging.chunk_size(1 << 30, 8) == 8 * MiB  # capped
    assert staging.chunk_size(64 * MiB, 8) == 4 * MiB  # 16 chunks for 8 workers
    assert staging.chunk_size(40 * MiB, 4) == 5 * MiB  # whole MiB
    assert staging.chunk_size(16 * MiB, 8) == 2 * MiB  # at least the minimum
    assert staging.chunk_size(5, 4) == 2 * MiB


@pytest.mark.parametrize("n", [1, 4 * KiB, 4 * KiB + 1, 37 * KiB + 123, 200 * KiB])
def test_round_trip_with_partial_chunks(small_chunks, make_backend, n):
    be = make_backend()
    pool = HostPool(be)
    host = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    dev = Memory(n + 100)
    staging.upload(be, pool, dev, 100, host, be.default_stream, wait=True)
    np.testing.assert_array_equal(dev.data[100:], host)
    out = np.zeros(n, np.uint8)
    staging.download(be, pool, out, dev, 100, be.default_stream)
    np.testing.assert_array_equal(out, host)
    assert be.copies == 2 * -(-n // staging.chunk_size(n, 3))
    assert getattr(be, "native_calls", 1) == 1  # the C pipeline did the upload
    assert settled(pool)
    ring = pool.stats()["host_reserved"]
    staging.upload(be, pool, dev, 100, host, be.default_stream, wait=True)
    assert pool.stats()["host_reserved"] == ring  # the ring's buffers are reused


def test_async_upload_holds_buffers_until_the_device_is_done(small_chunks, make_backend):
    be = make_backend()
    be.auto = False  # the stream is busy: nothing completes until told
    pool = HostPool(be)
    host = np.arange(40 * KiB, dtype=np.uint8)
    dev = Memory(host.nbytes)
    staging.upload(be, pool, dev, 0, host, be.default_stream, wait=False)  # never waits
    s = pool.stats()
    assert s["host_in_flight"] == s["host_reserved"] >= host.nbytes  # a buffer per chunk
    host[:] = 0  # allowed: the data was copied out already
    assert dev.data[:5].tolist() == [0, 1, 2, 3, 4]
    for event in be.recorded:
        event.done = True
    assert settled(pool)


@pytest.mark.parametrize("fail_at", [0, 2, 9])
def test_upload_failing_midway_leaks_no_pinned_buffer(small_chunks, make_backend, fail_at):
    be = make_backend()
    be.fail_at = fail_at
    pool = HostPool(be)
    host = np.ones(40 * KiB, np.uint8)  # 10 chunks
    with pytest.raises(DriverError, match="injected copy failure"):
        staging.upload(be, pool, Memory(host.nbytes), 0, host, be.default_stream, wait=True)
    assert settled(pool)


@pytest.mark.parametrize("fail_at", [0, 3, 9])
def test_download_failing_midway_leaks_no_pinned_buffer(small_chunks, fail_at):
    be = StagingBackend()
    be.fail_at = fail_at
    pool = HostPool(be)
    dev = Memory(40 * KiB)
    with pytest.raises(DriverError, match="injected copy failure"):
        staging.download(be, pool, np.empty(dev.nbytes, np.uint8), dev, 0, be.default_stream)
    assert settled(pool)


def test_a_failed_host_copy_is_raised_and_its_ring_returned(small_chunks, monkeypatch):
    be = StagingBackend()
    pool = HostPool(be)
    real, calls = staging._fill, []

    def flaky(wait_for, buf, host, start, size):
        calls.append(start)
        if len(calls) == 3:
            raise KeyboardInterrupt  # even an interrupt: the buffers come back
        real(wait_for, buf, host, start, size)

    monkeypatch.setattr(staging, "_fill", flaky)
    host = np.ones(40 * KiB, np.uint8)
    with pytest.raises(KeyboardInterrupt):
        staging.upload(be, pool, Memory(host.nbytes), 0, host, be.default_stream, wait=True)
    assert settled(pool)


def test_a_failed_async_upload_returns_buffers_after_the_queued_copies(small_chunks, make_backend):
    be = make_backend()
    be.auto, be.fail_at = False, 4
    pool = HostPool(be)
    host = np.ones(40 * KiB, np.uint8)
    with pytest.raises(DriverError):
        staging.upload(be, pool, Memory(host.nbytes), 0, host, be.default_stream, wait=False)
    s = pool.stats()  # 4 copies were queued before the failure: their buffers wait for them
    assert s["host_in_flight"] == s["host_reserved"] > 0
    for event in be.recorded:
        event.done = True
    assert settled(pool)


def test_running_out_of_pinned_memory_returns_what_was_taken(small_chunks):
    be = StagingBackend()
    be.fail_host_alloc_at = 2  # the third staging buffer cannot be had
    pool = HostPool(be)
    host = np.ones(40 * KiB, np.uint8)
    with pytest.raises(MemoryError, match="no pinned memory"):
        staging.upload(be, pool, Memory(host.nbytes), 0, host, be.default_stream, wait=True)
    s = pool.stats()
    assert s["host_reserved"] == s["host_cached"] == 2 * 4 * KiB


def test_concurrent_copies_share_the_workers(small_chunks, make_backend):
    be = make_backend()
    pool = HostPool(be)
    rng = np.random.default_rng(0)
    hosts = [rng.integers(0, 256, 30 * KiB + i, dtype=np.uint8) for i in range(6)]
    devs = [Memory(h.nbytes) for h in hosts]

    def copy(i):
        staging.upload(be, pool, devs[i], 0, hosts[i], be.default_stream, wait=True)
        out = np.empty(hosts[i].nbytes, np.uint8)
        staging.download(be, pool, out, devs[i], 0, be.default_stream)
        np.testing.assert_array_equal(out, hosts[i])

    errors = run_threads(copy, 6)
    assert not errors
    assert settled(pool)


def test_fake_stream_is_the_contract_stream():
    assert isinstance(StagingBackend().default_stream, FakeStreamBase)


def test_a_burst_of_jobs_runs_on_every_worker():
    """Jobs submitted at once start at once, one per thread: each waits for all the others."""
    workers = staging.Workers(4)
    barrier = threading.Barrier(4, timeout=10)
    threads = []

    def meet():
        threads.append(threading.get_ident())
        barrier.wait()

    jobs = [workers.submit(meet) for _ in range(4)]
    for job in jobs:
        job.wait()
    assert len(set(threads)) == 4
