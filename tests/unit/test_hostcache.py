"""Reused host memory for large downloads' arrays (ember.runtime.hostcache)."""

from __future__ import annotations

import gc
import os
import threading

import numpy as np
import pytest

from ember.runtime import hostcache, memory, staging

MiB = 1 << 20


@pytest.fixture(autouse=True)
def fresh_cache():
    hostcache.empty_cache()
    yield
    hostcache.empty_cache()


def test_an_array_is_ordinary_and_its_memory_is_reused_once_every_view_is_gone():
    a = hostcache.empty((256, 1024), np.float64)
    assert a.shape == (256, 1024) and a.dtype == np.float64
    assert a.flags.c_contiguous and a.flags.writeable
    a[:] = 3.0
    address, view = a.ctypes.data, a[10:20]
    del a
    gc.collect()
    assert hostcache.stats()["host_result_idle"] == 0  # the view still holds it
    b = hostcache.empty((2 * MiB,), np.uint8)
    assert b.ctypes.data != address
    assert (view == 3.0).all()
    del view
    gc.collect()
    hits = hostcache.stats()["host_result_hits"]
    c = hostcache.empty((MiB // 4,), np.complex64)  # the same size class, another dtype
    assert c.ctypes.data == address
    assert hostcache.stats()["host_result_hits"] == hits + 1
    assert b.ctypes.data != address  # b still holds its own


def test_the_idle_bytes_are_capped_and_big_blocks_not_kept(monkeypatch):
    monkeypatch.setattr(hostcache, "IDLE_MAX", 3 * MiB)
    monkeypatch.setattr(hostcache, "BLOCK_MAX", 2 * MiB)
    arrays = [hostcache.empty((MiB,), np.uint8) for _ in range(4)]
    big = hostcache.empty((4 * MiB,), np.uint8)
    del arrays, big
    gc.collect()
    assert hostcache.stats()["host_result_idle"] == 3 * MiB
    assert hostcache.empty_cache() == 3 * MiB
    assert hostcache.stats()["host_result_idle"] == 0


def test_threads_take_distinct_blocks():
    seen, lock = [], threading.Lock()
    before = hostcache.stats()

    def take():
        for _ in range(50):
            a = hostcache.empty((MiB,), np.uint8)
            a[:] = 1
            with lock:
                seen.append(a.ctypes.data)
            assert (a == 1).all()
            del a

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 200
    s = {k: v - before[k] for k, v in hostcache.stats().items()}
    assert s["host_result_hits"] + s["host_result_misses"] == 200
    assert s["host_result_misses"] <= 8  # freed blocks were reused


class _Backend:
    staged_copies = True


def test_host_result_reuses_memory_from_a_mib_where_the_backend_gains_by_pinning():
    n = hostcache.MIN_BYTES // 4
    a = memory.host_result(_Backend(), (n,), np.float32)
    assert isinstance(a.base, np.ndarray) and isinstance(a.base.base, hostcache.Block)
    big = memory.host_result(_Backend(), (staging.STAGE_MIN,), np.uint8)
    assert isinstance(big.base.base, hostcache.Block)
    small = memory.host_result(_Backend(), (n // 2,), np.float32)
    assert small.base is None  # below MIN_BYTES: numpy.empty
    on_stream = memory.host_result(_Backend(), (n,), np.float32, stream=object())
    assert on_stream.base is None  # an asynchronous download goes straight to the driver
    _Backend.staged_copies = False
    try:
        assert memory.host_result(_Backend(), (n,), np.float32).base is None
    finally:
        _Backend.staged_copies = True


class PinningBackend:
    """Records pin_host/unpin_host; refuses to pin when told."""

    def __init__(self, refuse=False):
        self.pinned, self.unpinned, self.refuse = [], [], refuse

    def pin_host(self, address, nbytes):
        if self.refuse:
            return False
        self.pinned.append(address)
        return True

    def unpin_host(self, address):
        assert address in self.pinned
        self.unpinned.append(address)


def test_a_block_is_pinned_when_reused_and_only_once():
    be = PinningBackend()
    a = hostcache.empty((MiB,), np.uint8, be)
    address = a.ctypes.data
    assert be.pinned == []  # a size seen once costs no registration
    del a
    gc.collect()
    for _ in range(3):
        b = hostcache.empty((MiB,), np.uint8, be)
        assert b.ctypes.data == address
        del b
        gc.collect()
    assert be.pinned == [address]
    assert hostcache.stats()["host_pinned"] == MiB
    assert hostcache.empty_cache() == MiB
    assert be.unpinned == [address]  # unpinned before being freed
    assert hostcache.stats()["host_pinned"] == 0


def test_pinning_is_capped_and_pinned_blocks_outlive_the_idle_cap(monkeypatch):
    monkeypatch.setattr(hostcache, "PINNED_MAX", 2 * MiB)
    monkeypatch.setattr(hostcache, "IDLE_MAX", 0)  # no unpinned block is kept
    be = PinningBackend()
    arrays = [hostcache.empty((MiB,), np.uint8, be) for _ in range(3)]
    del arrays
    gc.collect()
    assert hostcache.stats()["host_result_idle"] == 0  # unpinned: not kept
    monkeypatch.setattr(hostcache, "IDLE_MAX", 8 * MiB)
    arrays = [hostcache.empty((MiB,), np.uint8, be) for _ in range(3)]
    del arrays
    gc.collect()
    arrays = [hostcache.empty((MiB,), np.uint8, be) for _ in range(3)]  # 3 hits, 2 pinned
    assert len(be.pinned) == 2 and hostcache.stats()["host_pinned"] == 2 * MiB
    monkeypatch.setattr(hostcache, "IDLE_MAX", 0)
    del arrays
    gc.collect()
    assert hostcache.stats()["host_result_idle"] == 2 * MiB  # the pinned ones are kept
    hostcache.empty_cache()
    assert sorted(be.unpinned) == sorted(be.pinned)


def test_a_refused_pin_leaves_an_ordinary_reused_block():
    be = PinningBackend(refuse=True)
    a = hostcache.empty((MiB,), np.uint8, be)
    del a
    gc.collect()
    b = hostcache.empty((MiB,), np.uint8, be)
    b[:] = 7
    assert hostcache.stats()["host_pinned"] == 0
    del b
    gc.collect()
    assert hostcache.empty_cache() == MiB and be.unpinned == []


def test_an_upload_source_is_pinned_on_its_third_upload_until_it_is_freed():
    be = PinningBackend()
    host = np.ones(3 * MiB, np.float32)
    assert not hostcache.pin_source(be, host)  # the first upload: only noted
    view = host[MiB:]
    assert not hostcache.pin_source(be, view)  # the second, through a view: watched
    assert be.pinned == []
    assert hostcache.pin_source(be, host)  # the third: the owner is pinned
    assert be.pinned == [host.ctypes.data]
    assert hostcache.stats()["host_pinned"] == host.nbytes
    with pytest.raises(ValueError):
        host.resize(4 * MiB)  # NumPy refuses: pinned memory must not move
    del host, view
    gc.collect()
    assert be.unpinned == be.pinned  # unlocked before NumPy freed it
    assert hostcache.stats()["host_pinned"] == 0


def test_a_temporary_made_for_each_upload_is_never_pinned():
    be = PinningBackend()
    source = np.arange(MiB // 4, dtype=np.int32)
    for _ in range(12):  # each temporary is freed before the next, often at its place
        temporary = source.astype(np.float32)
        assert not hostcache.pin_source(be, temporary)
        del temporary
    assert be.pinned == []


def test_sources_that_cannot_be_pinned_safely_are_not(monkeypatch):
    be = PinningBackend()
    raw = bytearray(2 * MiB)
    borrowed = np.frombuffer(raw, np.uint8)  # memory a bytearray owns: left alone
    for _ in range(4):
        assert not hostcache.pin_source(be, borrowed)
    monkeypatch.setattr(hostcache, "PINNED_MAX", MiB)
    big = np.ones(2 * MiB, np.uint8)  # over the cap
    for _ in range(4):
        assert not hostcache.pin_source(be, big)
    assert be.pinned == []
    a, b = np.ones(MiB // 2, np.uint8), np.ones(MiB // 2, np.uint8)
    for _ in range(2):
        assert not hostcache.pin_source(be, a) and not hostcache.pin_source(be, b)
    assert hostcache.pin_source(be, a)  # another array in between does not reset a
    del a
    gc.collect()
    refusing = PinningBackend(refuse=True)
    c = np.ones(MiB // 2, np.uint8)
    for _ in range(4):
        assert not hostcache.pin_source(refusing, c)
    assert hostcache.stats()["host_pinned"] == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_keeps_none_of_the_parents_registrations():
    be = PinningBackend()
    a = hostcache.empty((MiB,), np.uint8, be)
    del a
    gc.collect()
    pinned = hostcache.empty((MiB,), np.uint8, be)  # reused: pinned in the parent
    source = np.ones(MiB, np.uint8)
    hostcache.pin_source(be, source)
    hostcache.pin_source(be, source)
    assert hostcache.pin_source(be, source)
    pid = os.fork()
    if pid == 0:  # the child: nothing is pinned; freeing unpins nothing
        code = 1
        try:
            s = hostcache.stats()
            del source, pinned
            gc.collect()
            code = 0 if s["host_pinned"] == 0 and len(be.unpinned) == 0 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert hostcache.stats()["host_pinned"] == 2 * MiB  # the parent's are untouched
    del source, pinned
    gc.collect()
    hostcache.empty_cache()
    assert hostcache.stats()["host_pinned"] == 0
