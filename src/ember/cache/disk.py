"""The on-disk kernel cache: one checked file per key, shared by every process of a user.

Layout under the cache directory (``EMBER_CACHE_DIR``; default: the platform's user cache
directory)::

    v1/entries/ab/<key>.ember    the entry (ember.cache.entry: header, binary, source)
    v1/entries/ab/<key>.cu       the generated source again, as text (.cl for OpenCL),
                                 for people debugging; never read back
    v1/profiles/<hash>.json      keys a program used last time (the warmup preloads them)
    v1/loading/<key>             a binary being preloaded (its SHA-256 and the pid): left
                                 behind by a process that died in the driver, it stops
                                 that binary from ever being loaded again

Rules, each for a pitfall of simpler caches:

* Writes are atomic: a temporary file in the same directory, then ``os.replace``.  Readers
  see an old entry or a new one, never half of one; many processes compiling the same
  kernel at once each write a complete file and the last rename wins (all are valid).
* Every read is checked (:meth:`Entry.from_bytes`): a truncated, corrupt or foreign entry
  is a miss, with a :class:`CacheWarning`; the recompiled kernel replaces it.
* Size is bounded (``EMBER_CACHE_SIZE``): a hit sets the entry's modification time, and
  beyond the limit the least recently used entries go: checked when a process's own writes
  may have crossed the limit (the size it found last, plus what it wrote since), and at
  most every 10 minutes otherwise, by whichever process stores an entry then.
* A read-only directory works: lookups only, no writes, no error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Iterator

from ember._records import record
from ember.cache.entry import CorruptEntry, Entry
from ember.codegen import dialects

LAYOUT = "v1"
SUFFIX = ".ember"
_EVICT_EVERY = 32  # a process considers evicting at its 1st, 33rd... store
_EVICT_PERIOD_S = 600.0  # and evicts if no process did for this long
_STALE_TMP_S = 3600.0  # temporary files older than this are debris of a crashed writer
_LOAD_NOTE_S = 60.0  # a load note this old is a crashed load (where pids cannot be asked)


class CacheWarning(UserWarning):
    """Something in the kernel cache was skipped (a damaged entry, a failed write)."""


def default_dir() -> str:
    """The platform's user cache directory for Ember (no third-party dependency)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        return os.path.join(base, "ember", "cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/ember")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "ember")


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


def parse_size(text: str) -> int:
    """Bytes from ``'1GiB'``, ``'500MB'``, ``'2e9'``; 0 means no limit."""
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([a-zA-Z]*)\s*", str(text))
    unit = m and _UNITS.get(m.group(2).lower())
    if not m or unit is None:
        raise ValueError(f"bad size {text!r}: use bytes or a unit such as '512MiB', '2GB'")
    return int(float(m.group(1)) * unit)


@record
class Stored:
    """One entry file as a directory listing sees it."""

    key: str
    path: str
    size: int  # with its source file
    used: float  # last use (modification time)


class DiskCache:
    """The kernel cache in directory ``root`` holding at most ``limit`` bytes (0: no limit)."""

    def __init__(self, root: str, limit: int = 0):
        self.root = os.path.abspath(os.path.expanduser(root))
        self.limit = limit
        self.base = os.path.join(self.root, LAYOUT)
        self.writable: bool | None = None  # None: not known until the first write
        self._stores = 0
        self._total: int | None = None  # the entries' size at this process's last eviction
        self._written = 0  # bytes this process stored since
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ paths
    def path(self, key: str) -> str:
        return os.path.join(self.base, "entries", key[:2], key + SUFFIX)

    def profile_path(self, program: str) -> str:
        name = hashlib.sha256(program.encode()).hexdigest()[:32]
        return os.path.join(self.base, "profiles", name + ".json")

    # ------------------------------------------------------------------ reading
    def load(self, key: str) -> Entry | None:
        """The entry for ``key``, or None (missing, or damaged: warned about)."""
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.warn_once(path, f"cannot read cache entry {path} ({exc}); recompiling")
            return None
        try:
            return Entry.from_bytes(data, key)
        except CorruptEntry as exc:
            self.warn_once(path, f"ignoring damaged cache entry {path}: {exc}; recompiling")
            return None

    def touch(self, key: str) -> None:
        """Mark ``key`` used now (the LRU order); silently nothing on a read-only cache."""
        if self.writable is False:
            return
        with contextlib.suppress(OSError):
            os.utime(self.path(key))

    # ------------------------------------------------------------------ writing
    def store(self, entry: Entry, dialect: str = "") -> bool:
        """Write ``entry`` atomically (and its source beside it); False if not written."""
        if self.writable is None:
            self.writable = _writable(self.root) or None  # None: try (and find out)
        if self.writable is False:
            return False
        path = self.path(entry.key)
        data, source = entry.to_bytes(), entry.source.encode()
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            atomic_write(path, data)
            atomic_write(path[: -len(SUFFIX)] + dialects.source_suffix(dialect), source)
        except OSError as exc:
            self._write_failed(exc)
            return False
        self.writable = True
        self._stores += 1
        self._written += len(data) + len(source)
        if self.limit:
            self._keep_bounded()
        return True

    def _keep_bounded(self) -> None:
        """Evict when this process's own writes may have crossed the limit - the size found
        at its last eviction plus what it wrote since (a burst of stores once took a cache
        to 2.5 times its limit: issue 18) - and now and then for the other processes."""
        if self._total is not None and self._total + self._written > self.limit:
            self.evict()
        elif self._total is None and self._written > self.limit * 0.1:
            self.evict()  # the size is unknown: look once this process wrote a tenth of it
        elif self._stores % _EVICT_EVERY == 1:
            self._evict_now_and_then()

    def _evict_now_and_then(self) -> None:
        """Evict when no process has for ``_EVICT_PERIOD_S`` (a marker file's age says), so
        that a process's first compile does not pay for listing a large cache every time."""
        marker = os.path.join(self.base, "evicted")
        with contextlib.suppress(OSError):
            if time.time() - os.stat(marker).st_mtime < _EVICT_PERIOD_S:
                return
        with contextlib.suppress(OSError):
            atomic_write(marker, b"")
        self.evict()

    def _write_failed(self, exc: OSError) -> None:
        self.writable = False
        if not isinstance(exc, PermissionError) and exc.errno not in (30,):  # 30: EROFS
            self.warn_once(
                "write", f"cannot write to the kernel cache {self.root} ({exc}); compiled "
                "kernels will not be cached by this process (EMBER_CACHE_DIR picks another "
                "directory)",
            )  # fmt: skip

    def warn_once(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            warnings.warn(message, CacheWarning, stacklevel=4)

    # ------------------------------------------------------------------ listing & eviction
    def entries(self) -> Iterator[Stored]:
        """Every entry file (any order)."""
        top = os.path.join(self.base, "entries")
        try:
            shards = list(os.scandir(top))
        except OSError:
            return
        for shard in shards:
            try:
                files = list(os.scandir(shard.path))
            except OSError:
                continue
            sizes: dict[str, int] = {}
            found: dict[str, os.DirEntry] = {}
            for f in files:
                stem, ext = os.path.splitext(f.name)
                with contextlib.suppress(OSError):
                    if ext == SUFFIX:
                        found[stem] = f
                    sizes[stem] = sizes.get(stem, 0) + f.stat().st_size
            for stem, f in found.items():
                with contextlib.suppress(OSError):
                    yield Stored(stem, f.path, sizes[stem], f.stat().st_mtime)

    def evict(self, limit: int | None = None) -> int:
        """Remove least recently used entries until at most 90% of ``limit`` is used (and
        stale temporary files); return how many entries went."""
        limit = self.limit if limit is None else limit
        with self._lock:
            self._remove_stale_temporaries()
            stored = sorted(self.entries(), key=lambda s: s.used)
            total = sum(s.size for s in stored)
            removed = 0
            for s in stored:
                if not limit or total <= limit * 0.9:
                    break
                self.remove(s.key)
                total -= s.size
                removed += 1
            self._total, self._written = total, 0
            return removed

    def remove(self, key: str) -> None:
        stem = self.path(key)[: -len(SUFFIX)]
        for suffix in {SUFFIX, ".c", *map(dialects.source_suffix, dialects.names())}:
            with contextlib.suppress(OSError):
                os.remove(stem + suffix)

    def _remove_stale_temporaries(self) -> None:
        now = time.time()
        top = os.path.join(self.base, "entries")
        for root, _, names in os.walk(top):
            for n in names:
                if n.startswith(".tmp-"):
                    p = os.path.join(root, n)
                    with contextlib.suppress(OSError):
                        if now - os.stat(p).st_mtime > _STALE_TMP_S:
                            os.remove(p)

    def clear(self) -> int:
        """Remove every entry and profile; return the number of entries removed."""
        import shutil

        count = sum(1 for _ in self.entries())
        if os.path.isdir(self.base):
            shutil.rmtree(self.base, ignore_errors=True)
        return count

    # ------------------------------------------------------------------ failed loads
    def _marker(self, key: str) -> str:
        return os.path.join(self.base, "loading", key)

    def begin_load(self, key: str, binary: bytes) -> bool:
        """Note that this process is about to hand ``binary`` to a driver (the warmup's
        preload): if the process dies in the driver, the note stays, and the next run
        neither preloads that binary nor loads it at all (:meth:`failed_load`)."""
        if self.writable is False:
            return False
        note = f"{hashlib.sha256(binary).hexdigest()} {os.getpid()}".encode()
        try:
            os.makedirs(os.path.dirname(self._marker(key)), exist_ok=True)
            atomic_write(self._marker(key), note)
        except OSError:
            return False
        return True

    def end_load(self, key: str) -> None:
        """The load noted by :meth:`begin_load` came back (loaded, or raised and was
        dealt with): remove the note."""
        with contextlib.suppress(OSError):
            os.remove(self._marker(key))

    def failed_load(self, key: str, binary: bytes) -> bool:
        """Whether ``binary`` (this very binary) was once handed to a driver by a process
        that never came back from it: a load that crashed.  A note by a process still
        running is a load in progress, not a failure."""
        try:
            with open(self._marker(key), "rb") as f:
                digest, _, pid = f.read(200).decode("ascii", "replace").partition(" ")
            age = time.time() - os.stat(self._marker(key)).st_mtime
        except OSError:
            return False
        if digest != hashlib.sha256(binary).hexdigest():
            return False  # another binary of that key (recompiled since) failed
        return not _alive(pid, age)

    # ------------------------------------------------------------------ profiles
    def read_profile(self, program: str) -> list[str]:
        try:
            with open(self.profile_path(program)) as f:
                keys = json.load(f).get("keys", [])
        except (OSError, ValueError, AttributeError):
            return []
        return [k for k in keys if isinstance(k, str) and re.fullmatch(r"[0-9a-f]{64}", k)]

    def write_profile(self, program: str, keys: list[str]) -> None:
        if self.writable is False:
            return
        path = self.profile_path(program)
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            atomic_write(path, json.dumps({"program": program, "keys": keys}).encode())


def _alive(pid: str, age: float) -> bool:
    """Whether process ``pid`` (the writer of a note ``age`` seconds old) still runs."""
    if not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return True
    if sys.platform == "win32":  # os.kill would terminate it: go by the note's age
        return age < _LOAD_NOTE_S
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, another user's
        return True
    return age < _LOAD_NOTE_S * 60  # a pid reused long after is not the loader


def _writable(path: str) -> bool:
    """Whether ``path`` (or, while it does not exist, its nearest ancestor) is writable."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return os.access(path, os.W_OK)


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or all of the new one.

    The temporary file is created with the umask's permissions (not mkstemp's 0600), so a
    cache directory shared by several users stays readable."""
    tmp = os.path.join(
        os.path.dirname(path), f".tmp-{os.getpid()}-{threading.get_ident()}-{os.urandom(4).hex()}"
    )
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


_caches: dict[tuple[str, str], DiskCache] = {}


def current() -> DiskCache | None:
    """The cache the settings select, or None when ``EMBER_CACHE=0``."""
    from ember.config import settings

    if not settings.cache:
        return None
    spec = (settings.cache_dir or default_dir(), settings.cache_size)
    found = _caches.get(spec)
    if found is None:
        try:
            limit = parse_size(spec[1])
        except ValueError as exc:
            warnings.warn(f"EMBER_CACHE_SIZE: {exc}; using no limit", CacheWarning, stacklevel=2)
            limit = 0
        found = _caches.setdefault(spec, DiskCache(spec[0], limit))
    return found
