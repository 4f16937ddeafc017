"""The process's side of the cache: lookups in order, counters, recorders and the profile.

A lookup (:func:`lookup`) tries, in order:

1. modules the warmup already loaded for this backend (:func:`preload`);
2. entries of loaded bundles (:func:`ember.cache.load_bundle`);
3. the disk cache (``EMBER_CACHE_DIR``, unless ``EMBER_CACHE=0``).

Kernel objects keep their own specializations, so each key is looked up at most once per
kernel; these layers only decide where a new specialization's binary comes from.

The *profile* is the list of keys this program (``sys.argv[0]``) used; it is written to the
cache when the process exits, and the next run's warmup loads those modules in the
background before the program asks for them.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from dataclasses import fields
from typing import Any

from ember._records import record
from ember.cache import disk
from ember.cache.entry import Entry

PROFILE_KEYS = 256  # at most this many keys per program profile


@record
class Stats:
    """Counters of this process (``ember.cache.stats()``)."""

    compiles: int = 0  # binaries built by a backend compiler (NVRTC / OpenCL build)
    disk_hits: int = 0
    bundle_hits: int = 0
    preloaded_hits: int = 0  # modules the warmup had already loaded
    misses: int = 0
    stores: int = 0  # entries written to the disk cache
    load_failures: int = 0  # cached binaries the driver refused (recompiled)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@record
class Hit:
    entry: Entry
    module: Any  # the loaded module when the warmup preloaded it, else None
    origin: str  # "preloaded" | "bundle" | "disk"


stats = Stats()
bundled: dict[str, Entry] = {}
failed: set[str] = set()  # keys whose binary failed to load in this process
recorders: set = set()
_preloaded: dict[str, tuple[Any, Any, Entry]] = {}  # key -> (backend, module, entry)
_used: dict[str, None] = {}  # keys used by this process, in order
_lock = threading.Lock()
_profile_hooked = False


def lookup(key: str, backend) -> Hit | None:
    """Where to get the binary of ``key`` without compiling, or None.

    A binary that failed to load in this process, or crashed a process that loaded it
    (:meth:`DiskCache.failed_load`), is passed over: the kernel is compiled again."""
    found = _preloaded.get(key)
    if found is not None and found[0] is backend:
        stats.preloaded_hits += 1
        return Hit(found[2], found[1], "preloaded")
    cache = disk.current()
    entry = bundled.get(key)
    if entry is not None and not _failed(entry, cache):
        stats.bundle_hits += 1
        return Hit(entry, None, "bundle")
    entry = cache.load(key) if cache is not None else None
    if entry is not None and not _failed(entry, cache):
        stats.disk_hits += 1
        cache.touch(key)  # type: ignore[union-attr]
        return Hit(entry, None, "disk")
    stats.misses += 1
    return None


def _failed(entry: Entry, cache) -> bool:
    if entry.key in failed:
        return True
    return cache is not None and cache.failed_load(entry.key, entry.binary)


def store(entry: Entry, backend) -> None:
    """Keep a newly compiled entry: in the disk cache (when enabled) and active recorders."""
    from ember.cache import key as keymod

    cache = disk.current()
    if cache is None or not keymod.confirm_versions(backend):
        pass  # no disk cache, or the key was made with recorded versions found wrong
    elif cache.store(entry, backend.dialect.name):
        stats.stores += 1
    failed.discard(entry.key)  # the new binary replaces the one that failed
    note(entry, backend)


def note(entry: Entry, backend=None) -> None:
    """``entry`` was used by this process: recorders and the profile learn about it."""
    for rec in list(recorders):
        if entry.key not in rec.entries:
            rec.add_entry(for_bundles(entry, backend))
    if entry.key not in _used:
        _used[entry.key] = None
        _hook_profile()


def for_bundles(entry: Entry, backend) -> Entry:
    """``entry`` with the binary a bundle should carry: one every device of the backend's
    kind loads, where the backend makes one (``Backend.portable_binary``)."""
    if backend is None:
        return entry
    binary = backend.portable_binary(entry.binary, entry.source, entry.name)
    if binary is None:
        return entry
    return Entry(entry.key, binary, entry.source, entry.parts, entry.meta)


def discard(key: str) -> None:
    """Forget ``key`` in memory (its binary failed to load); the disk copy gets replaced,
    and until then neither lookups nor the preload take it again."""
    stats.load_failures += 1
    failed.add(key)
    _preloaded.pop(key, None)
    bundled.pop(key, None)


# ------------------------------------------------------------------------- compatibility


def environment(backend) -> dict:
    """The parts of a key that describe this process and device (not a kernel)."""
    from ember.cache import key as keymod

    probe = keymod.key_parts("", [], backend.target, (), keymod.versions(backend), {})
    return {k: probe[k] for k in ("format", "ember", "target", "versions")}


def incompatibility(parts: dict, env: dict) -> str | None:
    """Why an entry with ``parts`` cannot serve ``env`` (:func:`environment`), or None."""
    for name, what in (
        ("format", "cache format"), ("ember", "Ember version"), ("target", "device target"),
        ("versions", "compiler/driver versions"),
    ):  # fmt: skip
        if parts.get(name) != env.get(name):
            return f"another {what} ({parts.get(name)!r}, this process: {env.get(name)!r})"
    return None


# ------------------------------------------------------------------------- preloading


def preload(backend, keys: list[str], limit: int = 64) -> int:
    """Load the modules of ``keys`` (bundles first, then the disk) that fit ``backend``;
    return how many were loaded.  Used by the warmup thread: failures are skipped.

    A program that merely imports Ember runs this: a binary that crashes the driver must
    not crash it on every run.  Each load leaves a note in the cache while it runs
    (:meth:`DiskCache.begin_load`); a note left by a process that died there keeps that
    binary from being preloaded, or loaded at all, again (issue 18).  The backend's
    ``load_module`` checks the binary's structure first, which stops most such crashes."""
    env = environment(backend)
    cache = disk.current()
    loaded = 0
    for key in keys[:limit]:
        if key in _preloaded or key in failed:
            continue
        entry = bundled.get(key) or (cache.load(key) if cache is not None else None)
        if entry is None or incompatibility(entry.parts, env) is not None:
            continue
        if cache is not None and cache.failed_load(key, entry.binary):
            continue  # it crashed a process once
        noted = cache is not None and cache.begin_load(key, entry.binary)
        try:
            module = backend.load_module(entry.binary)
        except Exception:  # the kernel's own lookup meets it again: warns, recompiles
            continue
        finally:
            if noted:
                cache.end_load(key)  # type: ignore[union-attr]
        _preloaded[key] = (backend, module, entry)
        loaded += 1
    return loaded


def likely_keys() -> list[str]:
    """Keys this process probably needs: those of loaded bundles, then the program's
    profile (the keys its previous run used)."""
    keys = list(bundled)
    cache = disk.current()
    program = _program()
    if cache is not None and program:
        keys += [k for k in cache.read_profile(program) if k not in bundled]
    return keys


# ------------------------------------------------------------------------- profile


def _program() -> str | None:
    """The program's identity for its profile: the script's absolute path."""
    argv0 = sys.argv[0] if sys.argv else ""
    if not argv0 or argv0 in ("-c", "-m", "-") or not os.path.isfile(argv0):
        return None
    return os.path.abspath(argv0)


def _hook_profile() -> None:
    global _profile_hooked
    with _lock:
        if not _profile_hooked:
            _profile_hooked = True
            atexit.register(write_profile)


def write_profile() -> None:
    """Save the keys this process used as its program's profile (at exit)."""
    cache = disk.current()
    program = _program()
    if cache is None or program is None or not _used:
        return
    keys = list(_used)[-PROFILE_KEYS:]
    if keys != cache.read_profile(program):
        cache.write_profile(program, keys)
