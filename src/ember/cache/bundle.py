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

:func:`load_bundle` checks everything before using anything: a damaged bundle raises
:class:`BundleError` naming the problem.  Entries made by another Ember (another compiler
fingerprint or cache format) are ignored at load; entries for another architecture, driver
or compiler simply never match a key here (their key differs), and the warmup does not
preload them.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ember.cache import key as keymod
from ember.cache import memory
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
                self.add_entry(memory.for_bundles(spec.entry, spec.backend))

    def save(self, path: str | os.PathLike) -> str:
        """Write the recorded kernels as a bundle at ``path``; return the path."""
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
    memory.recorders.add(rec)
    try:
        yield rec
    finally:
        memory.recorders.discard(rec)


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


@dataclass
class Bundle:
    """A loaded bundle: the entries now served from it and those ignored (with why)."""

    path: str
    entries: list[Entry] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (key, reason)
    created: str = ""

    def __repr__(self) -> str:
        return (
            f"<ember.cache.Bundle {self.path}: {len(self.entries)} kernels, "
            f"{len(self.ignored)} ignored>"
        )


def load_bundle(path: Any, register: bool = True) -> Bundle:
    """Read and check a bundle; make its kernels cache hits in this process.

    ``path`` is a file path or anything with ``open("rb")`` (``importlib.resources``).

    Raises
    ------
    BundleError
        The file cannot be read, is not a bundle, or is damaged (the message says which
        member and how).  Nothing from a damaged bundle is used.
    """
    name = os.fspath(path) if isinstance(path, str | os.PathLike) else str(path)
    manifest, members = _read(path, name)
    bundle = Bundle(name, created=str(manifest.get("created", "")))
    fp = keymod.fingerprint()
    for item in manifest["entries"]:
        entry = _entry(item, members, name)
        if entry.parts.get("ember") != fp or entry.parts.get("format") != keymod.FORMAT:
            reason = f"made by Ember {entry.parts.get('ember')!r}, this is {fp!r}"
            bundle.ignored.append((entry.key, reason))
            continue
        bundle.entries.append(entry)
    if register:
        for entry in bundle.entries:  # a warmup still running preloads their modules
            memory.bundled.setdefault(entry.key, entry)
    return bundle


def _read(path: Any, name: str) -> tuple[dict, dict[str, bytes]]:
    import zipfile

    try:
        opened = path.open("rb") if hasattr(path, "open") and not isinstance(path, str) else None
        with zipfile.ZipFile(opened or name) as z:
            members = {i.filename: z.read(i) for i in z.infolist()}
    except FileNotFoundError:
        raise BundleError(f"bundle {name} does not exist") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise BundleError(
            f"bundle {name} is damaged or not an Ember bundle ({type(exc).__name__}: {exc}); "
            "rebuild it with ember.cache.record() and rec.save(), or remove it"
        ) from None
    try:
        manifest = json.loads(members["manifest.json"])
    except KeyError:
        raise BundleError(f"bundle {name} has no manifest.json: not an Ember bundle") from None
    except ValueError as exc:
        raise BundleError(f"bundle {name}: manifest.json is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{name} is not an Ember bundle (manifest format is not ember-bundle)")
    if manifest.get("version") != BUNDLE_VERSION or not isinstance(manifest.get("entries"), list):
        raise BundleError(
            f"bundle {name} has layout version {manifest.get('version')!r}; this Ember reads "
            f"version {BUNDLE_VERSION}: rebuild the bundle with this Ember"
        )
    return manifest, members


def _entry(item: Any, members: dict[str, bytes], name: str) -> Entry:
    try:
        binary = members[item["binary"]]
        source = members.get(item["source"], b"").decode()
        if hashlib.sha256(binary).hexdigest() != item["sha256"]:
            raise CorruptEntry(f"member {item['binary']} does not match its SHA-256")
        entry = Entry(item["key"], binary, source, item["parts"], item["meta"])
        entry.check()
    except CorruptEntry as exc:
        raise BundleError(f"bundle {name} is damaged: {exc}") from None
    except (KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise BundleError(
            f"bundle {name} is damaged: a manifest entry is malformed or a member is missing "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return entry
