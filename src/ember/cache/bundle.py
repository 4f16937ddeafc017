"""Bundles: compiled kernels a package ships, so nothing compiles on its users' machines.

::

    with ember.cache.record() as rec:      # at build time, on the target kind of machine
        run_representative_workload()
    rec.save("mypkg/kernels.ember")

    ember.cache.load_bundle(path)          # at the package's import: those kernels are hits

A bundle is a zip file (never a pickle: loading one runs no code) holding:

* ``manifest.json``: ``{"format": "ember-bundle", "version": 1, "created", "ember",
  "entries": [{"key", "parts", "meta", "binary", "source", "sha256"}]}``;
* ``binaries/<key>.bin``: each binary, whose SHA-256 the manifest records;
* ``sources/<key>.cu`` (``.cl``): the generated source, for debugging.

:func:`load_bundle` checks everything before using anything: the sizes before inflating
(:data:`MAX_MEMBER_BYTES`, :data:`MAX_TOTAL_BYTES`), the type of every manifest field, every
member against its SHA-256, every entry as the disk cache does (its key is the hash of its
description; its kernel's C name ends in its key, so a binary moved to another entry is
refused); a damaged bundle raises :class:`BundleError` naming the problem.  Entries made by
another Ember (another compiler fingerprint or cache format) are ignored at load; entries for
another architecture, driver or compiler simply never match a key here (their key differs),
and the warmup does not preload them.

None of that makes a bundle trustworthy: it is code.  ``load_bundle(path, sha256=...)`` and
``ember cache verify PATH --sha256 HEX`` check it is the very file that was published.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import field
from typing import Any

from ember._records import record as record_class  # this module has its own record()
from ember.cache import key as keymod
from ember.cache import lookup
from ember.cache.entry import CorruptEntry, Entry
from ember.codegen import dialects
from ember.errors import EmberError

BUNDLE_FORMAT = "ember-bundle"
BUNDLE_VERSION = 1


class BundleError(EmberError):
    """A bundle file that cannot be used: unreadable, damaged, or not a bundle."""


class Recorder:
    """The kernels specialized while a :func:`record` block runs (compiled or cache hits)."""

    def __init__(self):
        self.entries: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def add_entry(self, entry: Entry) -> None:
        with self._lock:
            self.entries.setdefault(entry.key, entry)

    def add(self, kernel) -> None:
        """Also record every specialization ``kernel`` already has (made before the block)."""
        for spec in list(kernel.specializations.values()):
            if getattr(spec, "entry", None) is not None and spec.entry.key not in self.entries:
                self.add_entry(lookup.for_bundles(spec.entry, spec.backend))

    def save(self, path: str | os.PathLike) -> str:
        """Write the recorded kernels as a bundle at ``path``; return the path.  Publish
        (or pin in your package) its SHA-256 (``ember cache verify PATH`` prints it)."""
        return write_bundle(path, self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"<ember.cache.Recorder: {len(self.entries)} kernels>"


@contextmanager
def record() -> Iterator[Recorder]:
    """Record every kernel specialization made inside the block (all threads).

    Run it in a fresh process, so that every kernel the workload needs is specialized inside
    the block (a kernel launched before it is not seen again; :meth:`Recorder.add` adds it).
    """
    rec = Recorder()
    lookup.recorders.add(rec)
    try:
        yield rec
    finally:
        lookup.recorders.discard(rec)


def write_bundle(path: str | os.PathLike, entries: Iterable[Entry]) -> str:
    """Write ``entries`` as a bundle, atomically (a temporary file, then a rename)."""
    import zipfile

    from ember.cache.disk import atomic_write

    items, files = [], {}
    for e in sorted(entries, key=lambda e: e.key):
        ext = dialects.source_suffix(e.meta.get("dialect", ""))[1:]
        binary, source = f"binaries/{e.key}.bin", f"sources/{e.key}.{ext}"
        items.append({
            "key": e.key, "parts": e.parts, "meta": e.meta, "binary": binary,
            "source": source, "sha256": hashlib.sha256(e.binary).hexdigest(),
            "source_sha256": hashlib.sha256(e.source.encode()).hexdigest(),
        })  # fmt: skip
        files[binary], files[source] = e.binary, e.source.encode()
    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "ember": keymod.fingerprint(),
        "entries": items,
    }
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest, indent=1, sort_keys=True))
        for name, data in files.items():
            z.writestr(name, data)
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    atomic_write(path, buf.getvalue())
    return path


@record_class
class Bundle:
    """A loaded bundle: the entries now served from it and those ignored (with why)."""

    path: str
    entries: list[Entry] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (key, reason)
    created: str = ""
    sha256: str = ""  # of the file: what a package pins (load_bundle(path, sha256=...))

    def __repr__(self) -> str:
        return (
            f"<ember.cache.Bundle {self.path}: {len(self.entries)} kernels, "
            f"{len(self.ignored)} ignored>"
        )


def load_bundle(path: Any, register: bool = True, sha256: str | None = None) -> Bundle:
    """Read and check a bundle; make its kernels cache hits in this process.

    ``path`` is a file path or anything with ``open("rb")`` (``importlib.resources``).

    A bundle is code: its binaries run on the device with the process's rights, so load
    only bundles you would import as Python.  Pin the one you ship: ``sha256`` (the hex
    SHA-256 of the file, as ``sha256sum`` prints it) refuses any other file, so that a
    bundle swapped on disk is never loaded (docs/precompiling.md, "Trust").

    Raises
    ------
    BundleError
        The file cannot be read, is not a bundle, is not the file ``sha256`` names, is too
        large, or is damaged (the message says which member and how).  Nothing from a
        damaged bundle is used.
    """
    name = os.fspath(path) if isinstance(path, str | os.PathLike) else str(path)
    data = _file_bytes(path, name)
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != str(sha256).strip().lower():
        raise BundleError(
            f"bundle {name} is not the expected file: its SHA-256 is {digest}, not {sha256}; "
            "it may have been replaced or damaged - do not load it"
        )
    manifest, members = _read(data, name)
    bundle = Bundle(name, created=str(manifest.get("created", "")), sha256=digest)
    fp = keymod.fingerprint()
    seen: set[str] = set()
    for item in manifest["entries"]:
        entry = _entry(item, members, name)
        if entry.key in seen:
            raise BundleError(f"bundle {name} is damaged: key {entry.key[:16]}... appears twice")
        seen.add(entry.key)
        if entry.parts.get("ember") != fp or entry.parts.get("format") != keymod.FORMAT:
            reason = f"made by Ember {entry.parts.get('ember')!r}, this is {fp!r}"
            bundle.ignored.append((entry.key, reason))
            continue
        bundle.entries.append(entry)
    if register:
        for entry in bundle.entries:  # a warmup still running preloads their modules
            lookup.bundled.setdefault(entry.key, entry)
    return bundle


def verify(path: Any, sha256: str | None = None) -> Bundle:
    """Check a bundle completely without using it (``ember cache verify``): the file's
    SHA-256 against ``sha256`` when given, the manifest, every member's checksum, every
    entry; and, where a backend of the bundle's kind is at hand, every binary's structure.

    Raises :class:`BundleError` naming the first problem; returns the unregistered bundle."""
    bundle = load_bundle(path, register=False, sha256=sha256)
    for entry in bundle.entries:
        backend = _backend_for(entry)
        if backend is None:
            continue
        try:
            backend.check_binary(entry.binary)
        except EmberError as exc:
            raise BundleError(f"bundle {bundle.path}: {entry.pyname}: {exc}") from None
    return bundle


def _backend_for(entry: Entry):
    """The current backend when it makes binaries of ``entry``'s kind, else None."""
    try:
        from ember.runtime import registry

        backend = registry.get()
    except EmberError:
        return None
    return backend if entry.meta.get("binary_kind") == backend.binary_kind else None


# Limits checked before anything is inflated: a few KiB of zip can inflate to gigabytes.
MAX_BUNDLE_BYTES = 1 << 30  # the file itself
MAX_MEMBER_BYTES = 256 << 20  # one member, inflated
MAX_TOTAL_BYTES = 1 << 30  # all members, inflated
MAX_MEMBERS = 100_000


def _file_bytes(path: Any, name: str) -> bytes:
    try:
        if hasattr(path, "open") and not isinstance(path, str):
            f = path.open("rb")
        else:
            f = open(name, "rb")  # noqa: SIM115 - closed below
        with f:
            data = f.read(MAX_BUNDLE_BYTES + 1)
    except FileNotFoundError:
        raise BundleError(f"bundle {name} does not exist") from None
    except OSError as exc:
        raise BundleError(f"bundle {name} cannot be read ({exc})") from None
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError(f"bundle {name} is larger than {MAX_BUNDLE_BYTES >> 20} MiB: refused")
    return data


def _read(data: bytes, name: str) -> tuple[dict, dict[str, bytes]]:
    import io
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            _check_sizes(infos, name)
            members = {i.filename: z.read(i) for i in infos}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
            NotImplementedError, RuntimeError) as exc:  # fmt: skip
        raise BundleError(
            f"bundle {name} is damaged or not an Ember bundle ({type(exc).__name__}: {exc}); "
            "rebuild it with ember.cache.record() and rec.save(), or remove it"
        ) from None
    try:
        manifest = json.loads(members["manifest.json"])
    except KeyError:
        raise BundleError(f"bundle {name} has no manifest.json: not an Ember bundle") from None
    except (ValueError, RecursionError) as exc:
        raise BundleError(f"bundle {name}: manifest.json is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{name} is not an Ember bundle (manifest format is not ember-bundle)")
    if manifest.get("version") != BUNDLE_VERSION or not isinstance(manifest.get("entries"), list):
        raise BundleError(
            f"bundle {name} has layout version {manifest.get('version')!r}; this Ember reads "
            f"version {BUNDLE_VERSION}: rebuild the bundle with this Ember"
        )
    return manifest, members


def _check_sizes(infos: list, name: str) -> None:
    """Refuse a bundle whose members would inflate beyond the limits (their declared sizes:
    zipfile never inflates a member past its declared size, it fails its CRC instead)."""
    if len(infos) > MAX_MEMBERS:
        raise BundleError(f"bundle {name} has {len(infos)} members: refused")
    total = 0
    for info in infos:
        if info.file_size > MAX_MEMBER_BYTES:
            raise BundleError(
                f"bundle {name}: member {info.filename[:80]} would inflate to {info.file_size} "
                f"bytes (limit {MAX_MEMBER_BYTES >> 20} MiB): refused"
            )
        total += info.file_size
    if total > MAX_TOTAL_BYTES:
        raise BundleError(
            f"bundle {name} would inflate to {total} bytes (limit {MAX_TOTAL_BYTES >> 20} MiB): "
            "refused"
        )


_ITEM_FIELDS = {"key": str, "parts": dict, "meta": dict, "binary": str, "source": str,
                "sha256": str}  # fmt: skip


def _entry(item: Any, members: dict[str, bytes], name: str) -> Entry:
    try:
        if not isinstance(item, dict):
            raise CorruptEntry(f"a manifest entry is a {type(item).__name__}, not an object")
        for field_name, kind in _ITEM_FIELDS.items():
            if not isinstance(item.get(field_name), kind):
                raise CorruptEntry(f"a manifest entry's {field_name!r} is not a {kind.__name__}")
        key = item["key"]
        if item["binary"] != f"binaries/{key}.bin":  # each member belongs to its key
            raise CorruptEntry(f"the entry of key {key[:16]}... names member {item['binary']!r}")
        binary = members[item["binary"]]
        source = members.get(item["source"], b"").decode()
        if hashlib.sha256(binary).hexdigest() != item["sha256"]:
            raise CorruptEntry(f"member {item['binary']} does not match its SHA-256")
        entry = Entry(key, binary, source, item["parts"], item["meta"])
        entry.check()
    except CorruptEntry as exc:
        raise BundleError(f"bundle {name} is damaged: {exc}") from None
    except (KeyError, UnicodeDecodeError) as exc:
        raise BundleError(
            f"bundle {name} is damaged: a member is missing or unreadable "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return entry
