"""Compiled kernels kept across processes: the disk cache and shippable bundles.

::

    ember.cache.load_bundle(path)          # a package's precompiled kernels become hits
    with ember.cache.record() as rec:      # record what a workload compiles...
        workload()
    rec.save("kernels.ember")              # ...and ship it
    ember.cache.stats()                    # {"compiles": 0, "bundle_hits": 3, ...}
    ember.cache.info()                     # directory, entries, size, limit

Stages: :mod:`.key` (what a key covers), :mod:`.entry` (one checked entry), :mod:`.disk`
(the directory cache), :mod:`.memory` (the lookup order in a process, counters, profile),
:mod:`.bundle` (record, save, load).  ``docs/precompiling.md`` is the user's guide.
"""

from __future__ import annotations

import os
from typing import Any

from ember.cache import bundle as _bundle
from ember.cache import disk as _disk
from ember.cache import lookup as _memory
from ember.cache.bundle import Bundle, BundleError, Recorder, load_bundle, record, write_bundle
from ember.cache.disk import CacheWarning
from ember.cache.entry import Entry

__all__ = [
    "Bundle", "BundleError", "CacheWarning", "Entry", "Recorder", "clear", "directory",
    "export", "import_bundle", "info", "load_bundle", "record", "stats", "verify",
]  # fmt: skip


def stats() -> dict[str, int]:
    """This process's counters: ``compiles`` (backend compiler runs), ``disk_hits``,
    ``bundle_hits``, ``preloaded_hits``, ``misses``, ``stores``, ``load_failures``."""
    return _memory.stats.as_dict()


def directory() -> str:
    """The cache directory the settings select (whether or not the cache is enabled)."""
    from ember.config import settings

    return os.path.abspath(os.path.expanduser(settings.cache_dir or _disk.default_dir()))


def info() -> dict[str, Any]:
    """The disk cache: directory, enabled, writable, entries, bytes, limit, by dialect/arch."""
    from ember.config import settings

    root = directory()
    cache = _disk.current() or _disk.DiskCache(root)
    stored = list(cache.entries())
    kinds: dict[str, int] = {}
    for s in stored:
        kind = _describe(cache, s.key)
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "directory": root,
        "enabled": bool(settings.cache),
        "writable": _disk._writable(root),
        "entries": len(stored),
        "bytes": sum(s.size for s in stored),
        "limit": cache.limit,
        "targets": kinds,
    }


def _describe(cache: _disk.DiskCache, key: str) -> str:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        entry = cache.load(key)
    if entry is None:
        return "damaged"
    target = entry.parts.get("target")
    return target if isinstance(target, str) else "?"


def verify(path: str | os.PathLike, sha256: str | None = None) -> Bundle:
    """Check a bundle completely without loading it (see :func:`ember.cache.bundle.verify`);
    with ``sha256``, that it is the published file."""
    return _bundle.verify(path, sha256)


def clear() -> int:
    """Remove every entry of the disk cache; return how many there were."""
    return _disk.DiskCache(directory()).clear()


def export(path: str | os.PathLike, backend=None) -> int:
    """Write the disk cache's entries as a bundle at ``path``; return how many.

    With ``backend`` (e.g. ``ember.get_backend()``), only the entries that can run there."""
    cache = _disk.DiskCache(directory())
    entries = [e for e in (cache.load(s.key) for s in cache.entries()) if e is not None]
    if backend is not None:
        env = _memory.environment(backend)
        entries = [e for e in entries if _memory.incompatibility(e.parts, env) is None]
    write_bundle(path, entries)
    return len(entries)


def import_bundle(path: str | os.PathLike) -> int:
    """Copy a bundle's usable entries into the disk cache; return how many were written."""
    bundle = load_bundle(path, register=False)
    cache = _disk.current() or _disk.DiskCache(directory())
    written = 0
    for entry in bundle.entries:
        written += cache.store(entry, entry.meta.get("dialect", ""))
    return written
