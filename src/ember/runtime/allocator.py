"""The caching allocator behind every Ember device allocation.

Design (docs/design/memory.md has the measurements behind it):

- **Size classes.**  Requests round up to 512 B below 1 MiB and to a quarter of their power of
  two above (≤ 25 % waste); a block serves any request of its class and is never split, so a
  large block cannot be carved into unusable pieces.
- **Stream-ordered reuse.**  A freed block remembers the stream it was last used on.  Reuse on
  that stream is immediate (the stream orders the new work after the old).  Reuse on another
  stream records an event on the old stream and makes the new stream wait for it — on the
  device, never blocking the host.
- **Use on other streams.**  A launch or copy that uses an array on a stream other than its
  block's records that stream in ``block.used`` (:func:`note_uses`; ``RawKernel`` launches
  and the array copies call it).  When such a block is freed it is *deferred*: before it
  can be reused, the allocation slow path records an event on each of those streams and
  makes the block's stream wait for it, so the rule above holds again.
- **No lock on the hit path.**  A dead :class:`PooledBuffer` (its last array gone) appends
  its block to the free list of its (size, stream) and an allocation pops one: single list
  operations, atomic under the GIL, so ``__del__`` can run anywhere (even inside the
  allocator) without deadlock.  Misses, trims and statistics take a lock and iterate over
  copies of the free lists.
- **The hit path in C.**  Where setup.py built ``ember.runtime._pool``, :class:`Block`,
  :class:`PooledBuffer`, the fields of :class:`Pool` that the hit path reads
  (``PoolCore``) and ``ember.runtime.memory.allocate``'s hit path are C, doing the same
  steps (a dying buffer files its block without a ``__del__`` frame).  The Python classes
  below are the fallback; the tests run with both (tests/unit/test_native_pool.py).
- **Misses give idle memory back.**  A miss that must reserve first gives idle blocks of
  other classes back to the backend (stream-ordered frees; the driver's pool reuses the
  memory for any size), which keeps mixed-size programs' peak near PyTorch's.  While most
  recent misses are *regrets* (a class given back shortly before), a repeating working set
  is being churned: blocks freed during the last ``return_age`` misses are then kept
  (:meth:`Pool._keep_age`).
- **Out of memory** releases every cached block and retries once, then raises
  :class:`OutOfMemoryError` with the numbers and what to try.  ``EMBER_MEMORY_LIMIT`` caps
  what the pool reserves.  Blocks idle longer than ``EMBER_MEMORY_IDLE_TRIM`` seconds are
  released on the allocation slow path.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from ember.errors import OutOfMemoryError
from ember.runtime.backend import Backend, Buffer, Stream

SMALL = 1 << 20
SMALL_STEP = 512
# a miss gives back only idle blocks that were not taken during this many misses (see
# Pool._return_idle and docs/design/memory.md)
RETURN_AGE = 8
REGRET_WINDOW, REGRET_WEIGHT = 16, 0.125  # see Pool._keep_age


def size_class(nbytes: int) -> int:
    """The block size that serves a request of ``nbytes`` (≥ 1)."""
    if nbytes <= SMALL:
        size = max(SMALL_STEP, (nbytes + SMALL_STEP - 1) // SMALL_STEP * SMALL_STEP)
    else:
        quarter = 1 << (nbytes.bit_length() - 3)  # four classes per power of two
        size = (nbytes + quarter - 1) // quarter * quarter
    if len(_CLASSES) < 4096:
        _CLASSES[nbytes] = size
    return size


# size -> class for the sizes seen so far: one dict lookup on the hot path
_CLASSES: dict[int, int] = {}


class _Block:
    """A raw backend buffer owned by the pool, with the stream it was last used on (the
    Python form of ``Block``)."""

    __slots__ = ("raw", "handle", "size", "stream", "home", "pool", "last_used", "used")

    def __init__(self, raw: Buffer, size: int, stream: Stream, pool: Pool):
        self.raw = raw
        self.handle = raw.handle  # read by every allocation of the block
        self.size = size
        self.stream = stream
        self.home = stream  # where it was allocated: a stream-ordered free runs there
        self.pool = pool
        self.last_used = 0.0
        self.used: list[Stream] | None = None  # other streams it was used on (note_uses)


class _PooledBuffer(Buffer):
    """The :class:`Buffer` arrays hold (the Python form of ``PooledBuffer``).  When it dies
    its block goes back to its owner (the pool, or the
    :class:`~ember.runtime.alloccache.AllocCache` it came from).
    """

    __slots__ = ("handle", "nbytes", "block", "owner", "__weakref__")

    def __init__(self, block: Block, nbytes: int, owner: Any):
        self.block = block
        self.owner = owner
        self.nbytes = nbytes
        self.handle = block.handle

    def close(self) -> None:
        """Give the block back now (the memory is reused, not freed).  Idempotent."""
        block, self.block = self.block, None
        if block is not None:
            self.owner.give_back(block)

    def __del__(self):
        try:
            block = self.block
        except AttributeError:  # __init__ failed before setting it
            return
        if block is not None:
            self.block = None
            owner = self.owner
            if type(owner) is Pool and not block.used:  # Pool.give_back inlined: every free
                block.last_used = owner.misses
                try:
                    owner._free[block.size][block.stream].append(block)
                except KeyError:
                    pass
                else:
                    owner._idle_add(block.size)
                    return
            owner.give_back(block)

    def __repr__(self) -> str:
        return f"<PooledBuffer {self.nbytes} bytes ({'open' if self.block else 'closed'})>"


_new = object.__new__


def _lease(block: Block, nbytes: int, owner: Any) -> PooledBuffer:
    """``PooledBuffer(block, nbytes, owner)`` without the ``__init__`` call (a Python frame
    on the path of every allocation: ~0.1 µs of the ~0.5 µs target)."""
    buf = _new(_PooledBuffer)
    buf.block = block
    buf.owner = owner
    buf.nbytes = nbytes
    buf.handle = block.handle
    return buf


try:  # the same three classes in C, where setup.py built them (_pool.c)
    from ember.runtime import _pool as native
except ImportError:  # pragma: no cover - the build without a C compiler
    native = None
    Block, PooledBuffer, PoolCore, lease = _Block, _PooledBuffer, object, _lease
else:
    Block, PooledBuffer, PoolCore = native.Block, native.PooledBuffer, native.PoolCore
    lease = PooledBuffer  # its constructor is C: no __init__ frame to skip
    Buffer.register(PooledBuffer)


class Pool(PoolCore):
    """The caching allocator of one backend (one device).

    The hit path takes no lock: it relies on single list/deque/dict operations being atomic
    under the GIL (``list.pop``, ``deque.append``, ``dict.setdefault`` with identity-hashed
    keys) and counts hits with ``itertools.count``.  Misses, trims and statistics take the
    lock.  Bytes in use are derived (reserved minus cached), never counted per call.
    """

    def __init__(self, backend: Backend, limit: int | None = None, idle_trim: float = 0.0):
        self.backend = backend
        self.limit = limit
        self.idle_trim = idle_trim
        self._free: dict[int, dict[Stream, list[Block]]] = {}
        # The classes that may have idle blocks (a superset: a hit pops without removing
        # its class), so that misses scan those and not every class ever seen (thousands
        # in a mixed-size program: 512-byte steps below 1 MiB).
        self._idle: set[int] = set()
        self._idle_add = self._idle.add
        self._deferred: list[Block] = []  # freed blocks used on other streams (note_uses)
        # Every block, so that blocks and their raw buffers stay reachable from the pool:
        # when a PooledBuffer dies as part of a garbage cycle, the collector would otherwise
        # run the raw buffer's __del__ (closing it) although __del__ just filed its block.
        self._blocks: set[Block] = set()
        self._lock = threading.Lock()
        self._trimmed_at = 0  # the miss count at the previous idle-trim pass
        self._default = backend.default_stream
        self.passthrough = False
        self._last_trim = time.monotonic()
        self._hits = itertools.count()
        self.reserved = self.peak_reserved = 0
        # ``misses`` is also the pool's clock: a freed block remembers it (``last_used``),
        # so misses and idle trims can tell a repeating working set from long-idle blocks
        self.misses = self.oom_retries = self.cross_stream = self.larger = 0
        self.returned = 0  # blocks given back to the backend on misses (see _return_idle)
        # On a miss that must reserve memory: "all" idle blocks of other classes go back to
        # the backend first (its own pool can reuse the memory for this size), "enough" as
        # many as the request needs, "off" none (docs/design/memory.md: fragmentation).
        self.return_idle = "all"
        # ... of the idle blocks that no allocation took during the last ``return_age``
        # misses: younger ones are a working set that the next iterations reuse (giving
        # them back made every call of a repeating workload miss: see _return_idle)
        self.return_age = RETURN_AGE
        self._given_at: dict[int, int] = {}  # class -> the miss that last gave one back
        self._regret = 0.0  # moving share of recent misses that were regrets
        self.larger_factor = 2.0  # a miss may take an idle block up to this much larger

    # ------------------------------------------------------------------ hot path
    def allocate(self, nbytes: int, stream: Stream | None = None) -> PooledBuffer:
        """A buffer of at least ``nbytes`` usable in order on ``stream`` (default stream)."""
        size = _CLASSES.get(nbytes) or size_class(nbytes)
        stream = stream or self._default
        try:  # take()'s hit path, inlined: this is every allocation's path
            block = self._free[size][stream].pop()
        except (KeyError, IndexError):
            return self.allocate_missed(nbytes, size, stream)
        next(self._hits)
        return lease(block, nbytes, self)

    def allocate_missed(self, nbytes: int, size: int, stream: Stream) -> PooledBuffer:
        """:meth:`allocate` once its hit path found no idle block of class ``size`` for
        ``stream`` (``ember.memory.allocate`` calls it directly, without a second try)."""
        with self._lock:
            block = self._slow_take(size, stream, larger=True)
        return lease(block, nbytes, self)

    def take(self, size: int, stream: Stream) -> Block:
        """A block of class ``size`` ready for ``stream``: cached if possible, else new."""
        try:
            block = self._free[size][stream].pop()
        except (KeyError, IndexError):
            with self._lock:
                return self._slow_take(size, stream)
        next(self._hits)
        return block

    def give_back(self, block: Block) -> None:
        """File a free block (called from ``PooledBuffer.__del__``, so lock-free)."""
        block.last_used = self.misses
        if block.used:  # ordered on its stream only after the slow path settles it
            self._deferred.append(block)
            return
        try:
            self._free[block.size][block.stream].append(block)
        except KeyError:
            self._free.setdefault(block.size, {}).setdefault(block.stream, []).append(block)
        self._idle_add(block.size)

    # ------------------------------------------------------------------ slow path
    def _slow_take(self, size: int, stream: Stream, larger: bool = False) -> Block:
        """Under the lock: a cached block of class ``size`` (any stream), else with
        ``larger`` a cached block of a class up to twice as large, else a new block.

        Every miss of a mixed-size program comes here (random sizes miss almost every
        time), so the steps read the free lists once each (the pool's Python per miss on
        the unit tests' fake backend, H200 host: 7.4 -> 6.1 us, benchmarks/results/
        memory_s28-*)."""
        self.misses += 1
        free = self._free
        if self._deferred:
            self._settle_deferred()
            try:
                return free[size][stream].pop()
            except (KeyError, IndexError):
                pass
        per_stream = free.get(size)
        if per_stream:
            for blocks in list(per_stream.values()):
                if not blocks:
                    continue
                try:  # a block idle on another stream: order `stream` after its last use
                    block = blocks.pop()
                except IndexError:
                    continue
                self.cross_stream += 1
                reorder(self.backend, block, stream)
                return block
        idle = self._idle_classes()  # (once: both steps below read it, neither changes it
        if idle:  # until it succeeds)
            if larger:
                block = self._take_larger(size, stream, idle)
                if block is not None:
                    return block
        if self.idle_trim > 0:
            self._maybe_trim()
        if self.return_idle != "off":
            age = self._keep_age(size)  # (on every reserving miss: it keeps the regret share)
            if idle:
                self._return_idle(size, idle, age)
        block = Block(self._new_raw(size, stream), size, stream, self)
        self._blocks.add(block)
        return block

    def _take_larger(self, size: int, stream: Stream, idle: list[int]) -> Block | None:
        """The smallest cached block of a class in (size, 2 * size], for ``stream``
        (``idle``: :meth:`_idle_classes`).

        Serving a request from a somewhat larger idle block instead of reserving a new one
        keeps mixed-size workloads from filling the cache with blocks of every class (see
        docs/design/memory.md: fragmentation).  Scoped caches never get one (``take``).
        """
        most = size * self.larger_factor
        fits = [c for c in idle if size < c <= most]
        if not fits:
            return None
        fits.sort()
        free = self._free
        for cls in fits:
            per_stream = free[cls]
            own = per_stream.get(stream)
            found = [(stream, own), *per_stream.items()] if own else list(per_stream.items())
            for owner, blocks in found:
                if not blocks:
                    continue
                try:
                    block = blocks.pop()
                except IndexError:
                    continue
                self.larger += 1
                if owner is not stream:
                    self.cross_stream += 1
                    reorder(self.backend, block, stream)
                return block
        return None

    def _keep_age(self, size: int) -> int:
        """How many misses a block freed recently is kept through on this miss: 0 (every
        idle block of another class goes back) unless most recent misses are *regrets* -
        misses of a class that this pool gave back within the last ``REGRET_WINDOW``
        misses.  Regrets are what giving back does to a repeating working set (a miss
        early in one call gives back blocks the same call needs later, which then miss
        and give back the next ones: every call misses); random-size churn rarely asks
        again for a class it gave back, so it keeps giving everything back (its
        fragmentation is that of the driver's pool).  Then ``return_age`` applies."""
        gave = self._given_at.get(size)
        regret = gave is not None and self.misses - gave <= REGRET_WINDOW
        self._regret += ((1.0 if regret else 0.0) - self._regret) * REGRET_WEIGHT
        return self.return_age if self._regret >= 0.5 else 0

    def _return_idle(self, size: int, idle: list[int], age: int = 0) -> None:
        """Before reserving ``size`` bytes: give idle blocks of other classes that no
        allocation took during the last ``age`` misses (:meth:`_keep_age`) back to the
        backend (all of them, or the largest until ``size`` is covered), each freed in order
        on the stream it was allocated on after the work last queued with it, so no device
        synchronize is needed.  The backend's own pool (CUDA: ``cuMemAllocAsync``'s) then
        serves the new size from that memory instead of growing.  ``idle``: the classes
        with idle blocks (:meth:`_idle_classes`)."""
        victims: list[Block] = []
        freed = 0
        oldest = self.misses - age  # blocks freed at or before this miss
        every = self.return_idle == "all"
        free = self._free
        for cls in idle if every else sorted(idle, reverse=True):
            if cls == size:
                continue
            for blocks in list(free[cls].values()):
                # oldest first (a free appends, a hit pops the newest)
                while blocks and blocks[0].last_used <= oldest and (every or freed < size):
                    try:
                        block = blocks.pop(0)
                    except IndexError:
                        break
                    if block.last_used > oldest:  # a hit took the old one meanwhile
                        blocks.append(block)
                        break
                    victims.append(block)
                    freed += block.size
        if not victims:
            return
        given_at = self._given_at
        if len(given_at) > 4096:
            given_at.clear()
        misses, blocks_, backend = self.misses, self._blocks, self.backend
        for block in victims:
            given_at[block.size] = misses
            blocks_.discard(block)
            if block.stream is not block.home:
                reorder(backend, block, block.home)  # freed on home after its last use
            block.raw.close()
        self.reserved -= freed
        self.returned += len(victims)

    def _idle_classes(self) -> list[int]:
        """Under the lock: the classes with idle blocks now (others leave the idle set).

        A block given back between the test and the discard stays out of the set until its
        class is freed again: it is then found only by its own class's hits and by the full
        scans of ``_release`` (never lost), so the race costs reuse, not memory."""
        found = []
        free = self._free
        for cls in list(self._idle):
            for blocks in list(free[cls].values()):
                if blocks:
                    found.append(cls)
                    break
            else:
                self._idle.discard(cls)
        return found

    def _settle_deferred(self) -> None:
        """Order each deferred block after its uses on other streams, then file it."""
        while True:
            try:
                block = self._deferred.pop()
            except IndexError:
                return
            settle_uses(self.backend, block)
            self.give_back(block)

    def _cached_bytes(self) -> int:
        return sum(
            size * len(blocks)
            for size, per_stream in list(self._free.items())
            for blocks in list(per_stream.values())
        )

    def _new_raw(self, size: int, stream: Stream) -> Buffer:
        if self.limit is not None and self.reserved + size > self.limit:
            self._release_all()
            if self.reserved + size > self.limit:
                raise self._oom(size, f"it would exceed the memory limit of {_fmt(self.limit)}")
        try:
            raw = self.backend.alloc(size, stream)
        except OutOfMemoryError:
            self.oom_retries += 1
            self._release_all()
            try:
                raw = self.backend.alloc(size, stream)
            except OutOfMemoryError as exc:
                raise self._oom(size, "the device is out of memory") from exc
        self.reserved += size
        if self.reserved > self.peak_reserved:
            self.peak_reserved = self.reserved
        return raw

    def _maybe_trim(self) -> None:
        """On a miss, at most every ``idle_trim`` seconds: release the blocks that were not
        reused since the previous pass (so idle for at least ``idle_trim`` seconds)."""
        if self.idle_trim <= 0:
            return
        now = time.monotonic()
        if now - self._last_trim < self.idle_trim:
            return
        self._last_trim = now
        before, self._trimmed_at = self._trimmed_at, self.misses
        self._release(lambda b: b.last_used < before)

    def _release_all(self) -> int:
        return self._release(lambda b: True)

    def _release(self, doomed) -> int:
        """Free cached blocks for which ``doomed(block)``; returns bytes released."""
        self._settle_deferred()
        victims = []
        for per_stream in list(self._free.values()):
            for blocks in list(per_stream.values()):
                for block in list(blocks):
                    if doomed(block):
                        try:
                            blocks.remove(block)
                        except ValueError:  # taken by another thread meanwhile
                            continue
                        victims.append(block)
        if not victims:
            return 0
        # A cached block may have been reused across streams: wait for all work before freeing.
        self.backend.synchronize()
        released = 0
        for block in victims:
            self._blocks.discard(block)
            block.raw.close()
            released += block.size
        self.reserved -= released
        return released

    def _oom(self, size: int, why: str) -> OutOfMemoryError:
        cached = self._cached_bytes()
        total = self.backend.device.total_memory
        return OutOfMemoryError(
            f"cannot allocate {_fmt(size)} on {self.backend.device.name}: {why}. "
            f"In use by Ember arrays: {_fmt(self.reserved - cached)}; cached: {_fmt(cached)}; "
            f"device total: {_fmt(total)}"
            + (f"; limit (EMBER_MEMORY_LIMIT): {_fmt(self.limit)}" if self.limit else "")
            + ". Free arrays you no longer need (del x), call ember.memory.empty_cache(), "
            "use smaller batches, or raise EMBER_MEMORY_LIMIT.",
            code_name=self.backend.out_of_memory_code,
        )

    # ------------------------------------------------------------------ public
    def empty_cache(self) -> int:
        """Free every cached (unused) block; returns the bytes released."""
        with self._lock:
            return self._release_all()

    def reset_peak(self) -> None:
        """Restart ``peak_reserved`` from what is reserved now."""
        with self._lock:
            self.peak_reserved = self.reserved

    def stats(self) -> dict[str, int]:
        """Counters and byte totals; see :func:`ember.memory.stats`."""
        with self._lock:
            self._settle_deferred()
            cached = self._cached_bytes()
            hits = next(self._hits)
            self._hits = itertools.count(hits)  # reading the count consumed one
            return {
                "in_use": self.reserved - cached,
                "cached": cached,
                "reserved": self.reserved,
                "peak_reserved": self.peak_reserved,
                "allocations": hits + self.misses,
                "cache_hits": hits,
                "cache_misses": self.misses,
                "cross_stream_reuses": self.cross_stream,
                "larger_block_reuses": self.larger,
                "returned_blocks": self.returned,
                "oom_retries": self.oom_retries,
                "limit": self.limit or 0,
            }


def note_uses(args, stream: Stream | None) -> None:
    """Record that the Ember arrays among ``args`` are used by work just enqueued on
    ``stream``, so their blocks are not reused before that work is done.

    Every launch or copy path that takes a ``stream`` calls this after enqueueing (the
    default stream needs nothing: ``None`` returns at once).
    """
    if stream is None:
        return
    for arg in args:
        block = getattr(getattr(arg, "buffer", None), "block", None)
        if block is None or block.stream is stream:
            continue
        used = block.used
        if used is None:
            block.used = [stream]
        elif stream not in used:
            used.append(stream)


def settle_uses(backend: Backend, block: Block) -> None:
    """Make ``block.stream`` wait (on the device) for the work of the other streams that
    used the block, then forget them."""
    used, block.used = block.used, None
    for other in used or ():
        if other is block.stream:
            continue
        if not getattr(other, "alive", True):  # closed: its work is only reachable so
            backend.synchronize()
            continue
        event = backend.create_event()
        event.record(other)
        block.stream.wait_event(event)


def reorder(backend: Backend, block: Block, stream: Stream) -> None:
    """Make ``stream`` wait (on the device) for the work last submitted with ``block``."""
    if block.stream is not stream:
        event = backend.create_event()
        event.record(block.stream)
        stream.wait_event(event)
        block.stream = stream


def _fmt(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"
