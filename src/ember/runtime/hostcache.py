"""Reused host memory for the NumPy arrays that large downloads return.

A download into a fresh NumPy array pays for the array's page faults: the kernel maps and
zeroes every page the copy first touches.  On the H200 machine's host (2026-12-02) threads
copying 16 MiB into fresh memory moved 11-16 GB/s however many there were, against 28 GB/s
into memory already touched, so a staged ``to_numpy()`` of 16 MiB could not reach the copy
engine's speed whatever the pipeline did.

So the arrays of large downloads come from here: memory of a freed result (all its views
gone) is kept, idle, in the device allocator's size classes, and the next result of that
class reuses it, its pages already mapped.  A block taken again is also page-locked where
the backend can (``Backend.pin_host``: ``cuMemHostRegister``, ~1 ms for 16 MiB, once per
block): the download then lands straight in it at the copy engine's rate (51.7 GB/s against
9.8 for the driver's pageable copy, 16 MiB, same host), with no staging.  Only reused blocks
are pinned, so a size downloaded once costs no registration.

The array is an ordinary writable, C-contiguous ``numpy.ndarray``; its ``base`` is a small
owner object (:class:`Block`) whose release hands the memory back.  At most
:data:`IDLE_MAX` bytes of unpinned blocks are kept idle, and at most :data:`PINNED_MAX`
bytes are ever pinned (pinned blocks are always kept: they are only unpinned by
:func:`empty_cache`, never in a release); larger blocks than :data:`BLOCK_MAX` are not
kept.  :func:`empty_cache` (and ``ember.memory.empty_cache()``) unpins and frees the idle ones.
"""

from __future__ import annotations

import threading
from typing import Any

from ember.runtime.allocator import size_class

IDLE_MAX = 512 << 20  # idle bytes of unpinned blocks kept for reuse at most
PINNED_MAX = 512 << 20  # bytes pinned at most, idle or in use
BLOCK_MAX = 256 << 20  # larger results are not kept once freed

_lock = threading.Lock()
_idle: dict[int, list[Any]] = {}  # size class -> idle uint8 arrays of that size
_pinned: dict[int, Any] = {}  # address -> the backend that pinned the block there
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
            _keep(memory)


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
    nbytes = dt.itemsize
    for n in shape:
        nbytes *= n
    size = size_class(max(nbytes, 1))
    pin = False
    with _lock:
        blocks = _idle.get(size)
        if blocks:
            memory = blocks.pop()
            _counts["idle"] -= size
            _counts["hits"] += 1
            address = memory.ctypes.data
            if address not in _pinned:
                _counts["idle_unpinned"] -= size
                pin = backend is not None and _counts["pinned"] + size <= PINNED_MAX
                if pin:  # claimed now, so two threads cannot pass the cap together
                    _pinned[address] = backend
                    _counts["pinned"] += size
        else:
            memory = None
            _counts["misses"] += 1
    if memory is None:
        memory = np.empty(size, np.uint8)
    elif pin:
        _pin(backend, memory)
    flat = np.asarray(Block(memory, nbytes))
    return flat.view(dt).reshape(shape)


def _pin(backend: Any, memory: Any) -> None:
    """Pin a block claimed in ``_pinned``; where the backend cannot, give the claim back."""
    done = False
    try:
        done = backend.pin_host(memory)
    finally:
        if not done:
            with _lock:
                del _pinned[memory.ctypes.data]
                _counts["pinned"] -= memory.nbytes


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
        owner = _pinned.get(memory.ctypes.data)
        if owner is None:
            continue
        try:
            owner.unpin_host(memory)  # before the memory is freed
        except Exception as exc:
            error = error or exc
            with _lock:
                _idle.setdefault(memory.nbytes, []).append(memory)
                _counts["idle"] += memory.nbytes
            released -= memory.nbytes
            continue
        with _lock:
            del _pinned[memory.ctypes.data]
            _counts["pinned"] -= memory.nbytes
    if error is not None:
        raise error
    return released


def stats() -> dict[str, int]:
    """``host_result_idle`` (bytes kept for reuse), ``host_result_pinned`` (bytes pinned,
    idle or in use), ``host_result_hits`` / ``_misses``."""
    with _lock:
        return {
            "host_result_idle": _counts["idle"],
            "host_result_pinned": _counts["pinned"],
            "host_result_hits": _counts["hits"],
            "host_result_misses": _counts["misses"],
        }
