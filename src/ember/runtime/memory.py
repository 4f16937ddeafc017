"""Device memory: the front door for every Ember allocation, statistics, limits.

Every allocation (arrays, kernel scratch) goes through :func:`allocate`, which takes the
block from the innermost ``ember.cached`` scope if there is one, else from the backend's
caching allocator (:mod:`ember.runtime.allocator`).  Asynchronous uploads go through
:func:`upload`, which stages them in pooled pinned host memory (:mod:`ember.runtime.pinned`).
Public as ``ember.memory``.
"""

from __future__ import annotations

import math
import re
import warnings

from ember.runtime import backend as _backend
from ember.runtime import hostcache, staging
from ember.runtime.allocator import _CLASSES, Pool, lease, native, size_class
from ember.runtime.alloccache import _scope
from ember.runtime.backend import Backend, Buffer, Stream
from ember.runtime.pinned import HostPool

_pools: dict[Backend, Pool] = {}
_scope_get = _scope.get
_host_pools: dict[Backend, HostPool] = {}


def allocate(backend: Backend, nbytes: int, stream: Stream | None = None) -> Buffer:
    """``nbytes`` of device memory on ``backend``, usable in order on ``stream``.

    Zero-byte requests get a small real block, so every array owns a buffer.  Where the C
    allocator is built (``_pool.c``), its ``allocate`` replaces this function (below) and
    calls it for everything but the hit path.
    """
    pool = _pools.get(backend) or _make_pool(backend)
    cache = _scope_get()
    if cache is None and not pool.passthrough:
        # Pool.allocate's hit path, inlined: every array's allocation (each Python frame is
        # ~0.05 us of a ~0.5 us target, issue 19)
        size = _CLASSES.get(nbytes) or size_class(nbytes)
        stream = stream or pool._default
        try:
            block = pool._free[size][stream].pop()
        except (KeyError, IndexError):
            return pool.allocate_missed(nbytes, size, stream)
        next(pool._hits)
        return lease(block, nbytes, pool)
    if cache is not None:
        return cache.allocate(pool, nbytes, stream or pool._default)
    return backend.alloc(max(nbytes, 1), stream)


def allocate_kept(backend: Backend, nbytes: int) -> Buffer:
    """``nbytes`` of device memory for a buffer a library keeps across calls (a scan's
    look-back state): from the pool like any allocation, but never from the calling
    thread's :func:`ember.cached` scope, whose ``free()`` would otherwise find it busy."""
    found = pool(backend)
    if found.passthrough:
        return backend.alloc(max(nbytes, 1), None)
    return found.allocate(nbytes)


if native is not None:
    native.configure(Pool, _pools, _scope_get, _CLASSES, allocate)
    allocate = native.allocate  # noqa: F811 - the same function, its hit path in C


def upload(backend: Backend, dst: Buffer, offset: int, host, stream: Stream) -> None:
    """Copy the C-contiguous NumPy array ``host`` into ``dst`` at byte ``offset``,
    asynchronously on ``stream``, staged through pooled pinned host memory.

    Returns at once; ``host`` may be changed as soon as it does.
    """
    pool = _host_pools.get(backend) or _host_pools.setdefault(backend, HostPool(backend))
    pool.upload(dst, offset, host, stream)


def copy_in(backend: Backend, dst: Buffer, offset: int, host) -> None:
    """Copy the C-contiguous NumPy array ``host`` into ``dst`` at byte ``offset``, in order
    on the default stream; finished when this returns.

    Large pageable arrays go through the chunked pinned pipeline where the backend gains by
    it (``staged_copies``): several times the driver's own pageable rate
    (:mod:`ember.runtime.staging`).  Small ones, and page-locked memory, go straight to the
    driver; so does an array of :data:`~ember.runtime.hostcache.MIN_BYTES` or more uploaded
    again while alive, once its memory is page-locked
    (:func:`ember.runtime.hostcache.pin_source`).
    """
    if (
        backend.staged_copies
        and host.nbytes >= hostcache.MIN_BYTES
        and not backend.is_pinned(host)
        and not hostcache.pin_source(backend, host)  # notes the array, or pins it now
        and host.nbytes >= staging.STAGE_MIN
    ):
        flat = host.reshape(-1).view("uint8")
        pool = host_pool(backend)
        pool.staged += 1
        staging.upload(backend, pool, dst, offset, flat, backend.default_stream, wait=True)
    else:
        backend.copy_from_host(dst, offset, host)


def copy_out(backend: Backend, out, src: Buffer, offset: int, stream: Stream | None = None):
    """Copy ``out.nbytes`` bytes of ``src`` from byte ``offset`` into the C-contiguous NumPy
    array ``out``: after the work queued on the default stream, finished when this returns
    (``stream=None``); else asynchronously on ``stream``, straight from the driver.

    Large pageable destinations are staged as in :func:`copy_in` (a fresh array's page
    faults are then taken by several threads: 5-10x the driver's rate into fresh memory).
    """
    if (
        stream is None
        and backend.staged_copies
        and out.nbytes >= staging.STAGE_MIN
        and not backend.is_pinned(out)
    ):
        flat = out.reshape(-1).view("uint8")
        pool = host_pool(backend)
        pool.staged += 1
        staging.download(backend, pool, flat, src, offset, backend.default_stream)
    else:
        backend.copy_to_host(out, src, offset, stream)


def host_result(backend: Backend, shape: tuple[int, ...], dtype, stream: Stream | None = None):
    """A new C-contiguous NumPy array to download ``shape`` x ``dtype`` into: from
    :data:`~ember.runtime.hostcache.MIN_BYTES` on, where the backend gains by pinned memory
    (``staged_copies``), in reused host memory, pinned once reused
    (:mod:`~ember.runtime.hostcache`: a fresh array's page faults cost more than the copy),
    else ``numpy.empty``."""
    import numpy as np

    if stream is None and backend.staged_copies:  # (the cheap tests first)
        if np.dtype(dtype).itemsize * math.prod(shape) >= hostcache.MIN_BYTES:
            return hostcache.empty(shape, dtype, backend)
    return np.empty(shape, dtype)


def host_pool(backend: Backend | None = None) -> HostPool:
    """The pinned staging pool of ``backend`` (default: the current backend)."""
    be = backend or _backend.get()
    return _host_pools.get(be) or _host_pools.setdefault(be, HostPool(be))


def _make_pool(backend: Backend) -> Pool:
    from ember.config import settings

    try:
        limit = parse_limit(settings.memory_limit, backend.device.total_memory)
    except ValueError as exc:
        warnings.warn(f"{exc}; running with no limit", stacklevel=3)
        limit = None
    pool = _pools.setdefault(backend, Pool(backend, limit, settings.memory_idle_trim))
    pool.passthrough = settings.allocator == "driver"
    return pool


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20,
          "gib": 2**30}  # fmt: skip


def parse_limit(text: str, total: int) -> int | None:
    """``EMBER_MEMORY_LIMIT`` text (``"80%"``, ``"512MiB"``, ``"8e9"``) as bytes, or None."""
    text = text.strip().lower()
    if not text:
        return None
    found = re.fullmatch(r"([0-9.e+]+)\s*(%|[kmg]i?b|b)?", text)
    if found is None:
        raise ValueError(
            f"EMBER_MEMORY_LIMIT={text!r} is not a size: use bytes ('8e9', '512MiB') or '80%'"
        )
    number, unit = float(found.group(1)), found.group(2) or ""
    if unit == "%":
        return int(total * number / 100)
    return int(number * _UNITS[unit])


def pool(backend: Backend | None = None) -> Pool:
    """The caching allocator of ``backend`` (default: the current backend)."""
    be = backend or _backend.get()
    return _pools.get(be) or _make_pool(be)


def stats(backend: Backend | None = None) -> dict[str, int]:
    """Allocator statistics of the current (or given) backend.

    Device keys: ``in_use`` (bytes held by live arrays and scoped caches), ``cached`` (free
    blocks kept for reuse), ``reserved`` (their sum: what the pool holds from the device),
    ``peak_reserved`` (since start or :func:`reset_peak`), ``allocations``,
    ``cache_hits``, ``cache_misses``, ``cross_stream_reuses``, ``larger_block_reuses`` (a
    miss served by an idle block of a class up to 2x larger), ``oom_retries``, ``limit``
    (0: none).  Pinned staging memory: ``host_reserved`` = ``host_in_flight`` (uploads the
    device has not finished) + ``host_cached``, ``host_uploads``, ``host_cache_hits``.
    Host memory of large downloads' arrays: ``host_result_idle`` (freed, kept for reuse),
    ``host_result_hits``, ``host_result_misses``; ``host_pinned`` (bytes of those and of
    upload sources page-locked by :mod:`~ember.runtime.hostcache`).
    """
    be = backend or _backend.get()
    return {**pool(be).stats(), **host_pool(be).stats(), **hostcache.stats()}


def reset_peak(backend: Backend | None = None) -> None:
    """Restart ``peak_reserved`` from what is reserved now."""
    pool(backend).reset_peak()


def empty_cache(backend: Backend | None = None) -> int:
    """Give every cached (unused) device block, pinned staging buffer and idle download
    array's memory back; returns the device bytes released."""
    be = backend or _backend.get()
    host_pool(be).empty_cache()
    hostcache.empty_cache()
    return pool(be).empty_cache()


def set_limit(limit: int | str | None, backend: Backend | None = None) -> None:
    """Cap what the pool may reserve: bytes, a string like ``"80%"``, or None for no cap."""
    p = pool(backend)
    p.limit = parse_limit(limit, p.backend.device.total_memory) if isinstance(limit, str) else limit
