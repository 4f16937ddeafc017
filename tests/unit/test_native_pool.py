"""The allocator's hit path in C (``ember.runtime._pool``, built by setup.py): its objects
behave as the Python classes they replace, and the allocator's own tests pass with either
form (the Python one in a child process that hides the C module)."""

from __future__ import annotations

import os
import subprocess
import sys
import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest
from fake_backend import run_threads
from test_allocator import FakeBackend, FakeStream, MiB

import ember
from ember.runtime import allocator, memory
from ember.runtime.backend import Buffer

native = pytest.importorskip("ember.runtime._pool", reason="the C allocator is not built")


@pytest.fixture
def registered():
    """A fake backend whose pool ember.runtime.memory.allocate finds (removed after)."""
    be = FakeBackend()
    pool = memory._pools[be] = allocator.Pool(be)
    yield be, pool
    del memory._pools[be]


def test_the_allocator_uses_the_c_forms():
    assert allocator.Block is native.Block and allocator.PooledBuffer is native.PooledBuffer
    assert allocator.lease is native.PooledBuffer and memory.allocate is native.allocate
    assert issubclass(allocator.Pool, native.PoolCore)


def test_a_block_has_the_python_blocks_fields():
    raw = FakeBackend().alloc(MiB)
    stream = FakeStream()
    block = native.Block(raw, MiB, stream, "pool")
    assert (block.raw, block.handle, block.size) == (raw, raw.handle, MiB)
    assert block.stream is stream and block.home is stream and block.pool == "pool"
    assert block.last_used == 0.0 and block.used is None
    block.used = [stream]
    assert block.used == [stream]
    with pytest.raises(TypeError):
        native.Block(raw, MiB, stream)
    with pytest.raises(TypeError, match="no keywords"):
        native.Block(raw, MiB, stream, pool="pool")
    with pytest.raises(AttributeError):
        native.Block(object(), MiB, stream, None)  # a raw buffer has a handle


def test_a_buffer_is_a_buffer_with_a_weakref_a_repr_and_an_idempotent_close():
    pool = allocator.Pool(FakeBackend())
    buf = pool.allocate(1000)
    assert isinstance(buf, Buffer)
    assert buf.nbytes == 1000 and buf.handle == buf.block.handle and buf.owner is pool
    assert repr(buf) == "<PooledBuffer 1000 bytes (open)>"
    for name in ("block", "owner", "handle", "nbytes"):  # close() is the way to let go
        with pytest.raises(AttributeError):
            setattr(buf, name, None)
    died = []
    ref = weakref.ref(buf, died.append)
    buf.close()
    buf.close()
    assert repr(buf) == "<PooledBuffer 1000 bytes (closed)>" and buf.block is None
    assert pool.stats()["cached"] == 1024  # given back once
    del buf
    assert ref() is None and len(died) == 1
    assert pool.stats()["cached"] == 1024
    with pytest.raises(TypeError, match="no keywords"):
        native.PooledBuffer(None, 1, owner=pool)


def test_the_hit_path_in_c_reuses_the_block_and_counts_the_hit(registered):
    be, pool = registered
    first = memory.allocate(be, 3000)  # a miss: the Python path
    block = first.block
    del first  # filed from C
    assert pool._free[3072][be.default_stream] == [block]
    assert block.last_used == pool.misses and 3072 in pool._idle
    again = memory.allocate(be, 3000)
    assert again.block is block and again.owner is pool and again.nbytes == 3000
    assert pool._free[3072][be.default_stream] == []
    stats = pool.stats()
    assert (stats["cache_hits"], stats["cache_misses"]) == (1, 1)
    assert memory.allocate(be, 3000, FakeStream()).block is not block  # another stream


def test_scopes_keywords_and_the_driver_allocator_take_the_python_path(registered):
    be, pool = registered
    cache = ember.AllocCache()
    with ember.cached(cache):
        scoped = memory.allocate(be, MiB)
    assert scoped.owner is cache and cache.n_busy == 1
    del scoped
    assert cache.n_busy == 0 and cache.n_free == 1  # back to the cache, through give_back
    assert memory.allocate(be, nbytes=MiB, stream=None).owner is pool
    pool.passthrough = True
    raw = memory.allocate(be, 10)
    assert not isinstance(raw, native.PooledBuffer) and raw.nbytes == 10


def test_other_streams_uses_and_other_pool_classes_go_through_give_back(registered):
    be, pool = registered
    buf = memory.allocate(be, MiB)
    block = buf.block
    allocator.note_uses([SimpleNamespace(buffer=buf)], FakeStream())  # an array's use
    del buf
    assert pool._deferred == [block]  # ordered on the next miss, as in Python

    class Counting(allocator.Pool):
        given = 0

        def give_back(self, block):
            self.given += 1
            super().give_back(block)

    counting = Counting(FakeBackend())
    counting.allocate(MiB)  # dies at once
    assert counting.given == 1 and counting.stats()["cached"] == MiB


def test_a_failing_give_back_is_reported_and_keeps_the_exception_being_handled(monkeypatch):
    class Failing(allocator.Pool):
        def give_back(self, block):
            raise RuntimeError("cannot file it")

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    buf = Failing(FakeBackend()).allocate(MiB)
    try:
        raise KeyError("being handled")
    except KeyError:
        del buf
        assert sys.exc_info()[0] is KeyError
    assert len(reported) == 1 and "cannot file it" in str(reported[0].exc_value)


def test_the_allocator_tests_pass_with_the_python_forms():
    """The same tests, in a child process where the C module cannot be imported."""
    here = Path(__file__).parent
    env = {**os.environ, "EMBER_TEST_PURE_PYTHON": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         str(here / "test_allocator.py")],
        env=env, capture_output=True, text=True, timeout=300, cwd=here.parent.parent,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


def test_ember_info_says_which_paths_are_compiled(monkeypatch):
    from ember import cli

    assert "the allocator's hit path (ember.runtime._pool)" in cli.compiled_paths()
    monkeypatch.setitem(sys.modules, "ember.runtime._pool", None)  # as if not built
    line = cli.compiled_paths()
    assert "in Python: the allocator's hit path" in line and "C compiler" in line


def test_threads_sharing_the_c_hit_path_never_share_a_block(registered):
    """Four threads allocate and free through the C hit path at once (switching at the
    interpreter's will between the calls): no block is ever held by two live buffers,
    and every byte is accounted for at the end."""
    import random
    import threading

    be, pool = registered
    sizes = [512, 4096, 3000, MiB]
    live: dict[int, object] = {}  # id(block) -> the buffer holding it
    clash = []
    guard = threading.Lock()

    def work(seed):
        rng = random.Random(seed)
        mine = []
        for _ in range(3000):
            # at most 12 buffers a thread (12 MiB): four threads stay within the fake
            # device's memory however their peaks line up
            if mine and (len(mine) >= 12 or rng.random() < 0.5):
                buf = mine.pop(rng.randrange(len(mine)))
                with guard:
                    del live[id(buf.block)]
                del buf  # back to the pool from C
            else:
                buf = memory.allocate(be, rng.choice(sizes))
                with guard:
                    if id(buf.block) in live:
                        clash.append(buf.block)
                    live[id(buf.block)] = buf
                mine.append(buf)
        with guard:
            for buf in mine:
                del live[id(buf.block)]
        mine.clear()

    assert run_threads(work) == []
    assert clash == [] and live == {}
    stats = pool.stats()
    assert stats["in_use"] == 0 and stats["cached"] == stats["reserved"] > 0
    assert stats["cache_hits"] > stats["cache_misses"]
