"""Host memory for large copies: reused memory for the arrays downloads return, and page
locking of memory that is copied again and again.

A download into a fresh NumPy array pays for the array's page faults: the kernel maps and
zeroes every page the copy first touches.  On the H200 machine's host (2026-12-02) threads
copying 16 MiB into fresh memory moved 11-16 GB/s however many there were, against 28 GB/s
into memory already touched; and any staged copy is bound by the host copies' memory
bandwidth (~20-28 GB/s there), while a copy of page-locked memory runs at the copy engine's
rate (16 MiB: 51.7 GB/s against 9.8 for the driver's pageable copy, same host).
Page-locking existing memory (``Backend.pin_host``: ``cuMemHostRegister``) costs ~1 ms for
16 MiB, once: it pays for itself from the second copy on.  So:

- **Download arrays** come from here: the memory of a freed result (all its views gone) is
  kept, idle, in the device allocator's size classes, and the next result of that class
  reuses it, its pages already mapped; a block taken again is also page-locked, so the
  download lands straight in it with no staging.  The array is an ordinary writable,
  C-contiguous ``numpy.ndarray`` whose ``base`` is a small owner (:class:`Block`) that hands
  the memory back on release (so, like any view, it does not own its data: an in-place
  ``ndarray.resize`` refuses it; ``numpy.resize`` and copies work).
- **Upload sources**: an array uploaded (synchronously) a third time while alive - a host
  buffer refilled each step - has the memory of the array that owns it page-locked
  (:func:`pin_source`), until that array is freed.  NumPy then refuses to resize it in
  place (it has a weak reference: the one that unlocks it; so does an array uploaded
  twice, until its next upload).

Only copies of :data:`MIN_BYTES` (1 MiB) or more: registering 1 MiB took 0.18 ms, about
what a pageable copy of it takes.  A size used once costs no registration.  At most
:data:`IDLE_MAX` bytes of unpinned blocks are kept idle, at most :data:`PINNED_MAX` bytes
are ever pinned (pinned result blocks are always kept: they are unpinned only by
:func:`empty_cache`, never in a release), and neither blocks nor sources larger than
:data:`BLOCK_MAX` are kept or pinned.  :func:`empty_cache` (and
``ember.memory.empty_cache()``) unpins and frees the idle blocks.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from typing import Any

from ember.runtime.allocator import size_class

MIN_BYTES = 1 << 20  # smaller copies: the driver's own (a registration costs ~0.2 ms)
IDLE_MAX = 512 << 20  # idle bytes of unpinned blocks kept for reuse at most
PINNED_MAX = 512 << 20  # bytes pinned at most, idle or in use
BLOCK_MAX = 256 << 20  # larger results are not kept once freed

# Reentrant: a release (Block.__del__) can run inside a garbage collection that an
# allocation made under the lock set off, on the same thread.
_lock = threading.RLock()
_idle: dict[int, list[Any]] = {}  # size class -> idle uint8 arrays of that size
_pinned: dict[int, Any] = {}  # address -> the backend that pinned the memory there
# address -> ((id, nbytes), None or a weak reference) of an array uploaded once or twice
_seen: dict[int, tuple[tuple[int, int], Any]] = {}
SEEN_MAX = 64
_counts = {"idle": 0, "idle_unpinned": 0, "pinned": 0, "hits": 0, "misses": 0}


class Block:
    """Owner of one result's memory: the array built on it keeps it alive through ``base``;
    when the last view goes, the memory returns to the idle set."""

    __slots__ = ("memory", "__array_interface__")

    def __init__(self, memory: Any, nbytes: int):
        self.memory = memory
        self.__array_interface__ = {
            "data": (memory.ctypes.data, False),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }

    def __del__(self) -> None:
        memory, self.memory = self.memory, None
        if memory is not None:
            try:
                _keep(memory)
            except Exception:  # the interpreter is shutting down: the memory just goes
                pass


def _keep(memory: Any) -> None:
    """A released block: kept if pinned (never unpinned here: no driver call in a
    release), else if small enough and the idle cap allows; else freed."""
    size = memory.nbytes
    with _lock:
        pinned = memory.ctypes.data in _pinned
        if not pinned and (size > BLOCK_MAX or _counts["idle_unpinned"] + size > IDLE_MAX):
            return
        _idle.setdefault(size, []).append(memory)
        _counts["idle"] += size
        if not pinned:
            _counts["idle_unpinned"] += size


def empty(shape: tuple[int, ...], dtype: Any, backend: Any = None) -> Any:
    """An uninitialized C-contiguous array of ``shape`` and NumPy ``dtype`` in reused
    memory where an idle block of its size class exists (else a new one); a reused block
    is pinned by ``backend`` where it can, within :data:`PINNED_MAX`."""
    import numpy as np

    dt = np.dtype(dtype)
    nbytes = dt.itemsize * math.prod(shape)
    size = size_class(max(nbytes, 1))
    pin = False
    with _lock:
        blocks = _idle.get(size)
        if blocks:
            memory = blocks.pop()
            _counts["idle"] -= size
            _counts["hits"] += 1
            if memory.ctypes.data not in _pinned:
                _counts["idle_unpinned"] -= size
                pin = backend is not None and _claim(backend, memory.ctypes.data, size)
        else:
            memory = None
            _counts["misses"] += 1
    if memory is None:
        memory = np.empty(size, np.uint8)
    elif pin:
        _pin(backend, memory.ctypes.data, size)
    flat = np.asarray(Block(memory, nbytes))
    return flat.view(dt).reshape(shape)


def pin_source(backend: Any, host: Any) -> bool:
    """Before a synchronous upload of the pageable NumPy array ``host``: page-lock the
    memory of the array that owns it on that array's third upload (alive all along), until
    it is freed.  True if the memory is now pinned (copy it directly).

    The first upload is only noted (address, ``id``, size: no reference).  The second keeps
    a weak reference, which the third must find alive: a temporary made and freed for each
    upload (``ember.asarray(x.astype(...))`` in a loop) often comes back at the same address
    with the same ``id``, and pinning it would cost a registration per upload."""
    import numpy as np

    root = host
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.owndata or root.nbytes > BLOCK_MAX:
        return False  # memory another object owns may go without the array knowing
    address, size, key = root.ctypes.data, root.nbytes, (id(root), root.nbytes)
    with _lock:
        seen = _seen.get(address)
        if seen is None or seen[0] != key or (seen[1] is not None and seen[1]() is not root):
            if len(_seen) >= SEEN_MAX:
                _seen.clear()
            _seen[address] = (key, None)  # the first upload
            return False
        if seen[1] is None:
            _seen[address] = (key, weakref.ref(root))  # the second: alive from here on?
            return False
        del _seen[address]
        if not _claim(backend, address, size):
            return False
    # the finalizer first: no moment where the memory is pinned and nothing will unpin it
    unpin = weakref.finalize(root, _unpin_source, backend, address, size)
    unpin.atexit = False
    if not _pin(backend, address, size):
        unpin.detach()
        return False
    return True


def _unpin_source(backend: Any, address: int, size: int) -> None:
    """The array owning pinned memory is being freed: unlock it first (unless this is a
    forked child, where the registration is not this process's)."""
    with _lock:
        if _pinned.get(address) is not backend:
            return
    try:
        backend.unpin_host(address)
    finally:
        _unclaim(address, size)


def _forget_after_fork() -> None:
    """In a forked child: the parent's registrations belong to the parent's driver
    context; the child keeps none of them (its blocks are ordinary memory)."""
    global _lock
    _lock = threading.RLock()
    _pinned.clear()
    _idle.clear()
    _seen.clear()
    _counts.update(idle=0, idle_unpinned=0, pinned=0)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _claim(backend: Any, address: int, size: int) -> bool:
    """Under the lock: count ``size`` pinned bytes at ``address`` if the cap allows (so two
    threads cannot pass it together)."""
    if address in _pinned or _counts["pinned"] + size > PINNED_MAX:
        return False
    _pinned[address] = backend
    _counts["pinned"] += size
    return True


def _unclaim(address: int, size: int) -> None:
    with _lock:
        if _pinned.pop(address, None) is not None:
            _counts["pinned"] -= size


def _pin(backend: Any, address: int, size: int) -> bool:
    """Pin claimed memory; where the backend cannot, give the claim back."""
    done = False
    try:
        done = backend.pin_host(address, size)
    finally:
        if not done:
            _unclaim(address, size)
    return done


def empty_cache() -> int:
    """Unpin and free the idle blocks; returns their bytes.  A block whose unpinning fails
    is kept (pinned memory must not be freed): the first such error is raised."""
    with _lock:
        blocks = [m for ms in _idle.values() for m in ms]
        _idle.clear()
        released = _counts["idle"]
        _counts["idle"] = _counts["idle_unpinned"] = 0
    error = None
    for memory in blocks:
        address = memory.ctypes.data
        owner = _pinned.get(address)
        if owner is None:
            continue
        try:
            owner.unpin_host(address)  # before the memory is freed
        except Exception as exc:
            error = error or exc
            with _lock:
                _idle.setdefault(memory.nbytes, []).append(memory)
                _counts["idle"] += memory.nbytes
            released -= memory.nbytes
            continue
        _unclaim(address, memory.nbytes)
    if error is not None:
        raise error
    return released


def stats() -> dict[str, int]:
    """``host_result_idle`` (bytes kept for reuse), ``host_pinned`` (bytes pinned here:
    result blocks idle or in use, and upload sources), ``host_result_hits`` / ``_misses``."""
    with _lock:
        return {
            "host_result_idle": _counts["idle"],
            "host_pinned": _counts["pinned"],
            "host_result_hits": _counts["hits"],
            "host_result_misses": _counts["misses"],
        }
