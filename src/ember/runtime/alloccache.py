"""Scoped allocation caches: bound the memory of a loop exactly.

::

    cache = ember.AllocCache()
    for step in range(1000):
        with ember.cached(cache):
            loss = train_step(batch)      # temporaries come from the cache's free list

Inside ``with ember.cached(cache)``, every allocation of a given (device, memory kind, size)
first takes a block from ``cache``'s free list.  A buffer goes back to that free list when no
array refers to it any more — during the block or after it.  An array that escapes the block
(returned, stored) keeps its buffer for as long as it lives: the cache never hands out memory
that an array can still see (unlike a cache that reclaims everything at scope exit).

The scope lives in a :class:`contextvars.ContextVar`: each thread, and each asyncio task,
has its own.  ``with ember.uncached():`` turns the cache off inside a cached block.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref
from collections.abc import Iterator

from ember.errors import EmberError
from ember.runtime.allocator import (
    Block,
    Pool,
    PooledBuffer,
    _fmt,
    reorder,
    settle_uses,
    size_class,
)
from ember.runtime.backend import Stream

_scope: contextvars.ContextVar[AllocCache | None] = contextvars.ContextVar(
    "ember_alloc_cache", default=None
)


class AllocCache:
    """A free list of device blocks reused by exact size within ``ember.cached`` blocks."""

    def __init__(self) -> None:
        self._free: dict[tuple[Pool, int], list[Block]] = {}
        self._busy: weakref.WeakSet[PooledBuffer] = weakref.WeakSet()
        self._lock = threading.Lock()

    def allocate(self, pool: Pool, nbytes: int, stream: Stream) -> PooledBuffer:
        """A buffer of exactly ``nbytes`` (rounded to its class), from the free list if any."""
        size = size_class(nbytes)
        try:
            block = self._free[(pool, size)].pop()
        except (KeyError, IndexError):
            block = None
        if block is None:
            block = pool.take(size, stream)
        else:
            if block.used:
                settle_uses(pool.backend, block)
            reorder(pool.backend, block, stream)
        buf = PooledBuffer(block, nbytes, self)
        self._busy.add(buf)
        return buf

    def give_back(self, block: Block) -> None:
        """Called when a buffer from this cache dies (lock-free: ``__del__`` may run anywhere)."""
        self._free.setdefault((block.pool, block.size), []).append(block)

    @property
    def n_free(self) -> int:
        return sum(len(b) for b in list(self._free.values()))

    @property
    def n_busy(self) -> int:
        return len(self._busy)

    @property
    def nbytes(self) -> int:
        """Bytes held: free blocks plus blocks of live arrays."""
        free = sum(size * len(b) for (_, size), b in list(self._free.items()))
        return free + sum(buf.block.size for buf in list(self._busy) if buf.block is not None)

    def free(self) -> None:
        """Release every free block to the device pool.

        Raises
        ------
        EmberError
            If arrays allocated through this cache are still alive (their buffers are busy).
        """
        busy = self.n_busy
        if busy:
            raise EmberError(
                f"cannot free {self!r}: {busy} buffer(s) are still used by live arrays; "
                "delete those arrays first (or keep the cache)"
            )
        with self._lock:
            entries, self._free = self._free, {}
        for (pool, _), blocks in entries.items():
            for block in blocks:
                pool.give_back(block)

    def __repr__(self) -> str:
        return f"AllocCache(n_free={self.n_free}, n_busy={self.n_busy}, nbytes={_fmt(self.nbytes)})"


def current() -> AllocCache | None:
    """The cache of the innermost active ``ember.cached`` block in this context, if any."""
    return _scope.get()


@contextlib.contextmanager
def cached(cache: AllocCache) -> Iterator[AllocCache]:
    """Allocate from ``cache`` inside the ``with`` block (this thread / task only)."""
    if not isinstance(cache, AllocCache):
        raise TypeError(f"ember.cached() takes an ember.AllocCache, got {type(cache).__name__}")
    token = _scope.set(cache)
    try:
        yield cache
    finally:
        _scope.reset(token)


@contextlib.contextmanager
def uncached() -> Iterator[None]:
    """Inside a cached block: allocate from the ordinary pool for this ``with`` block."""
    token = _scope.set(None)
    try:
        yield
    finally:
        _scope.reset(token)
