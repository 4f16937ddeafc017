"""One cached kernel: binary, generated source and what a launch needs, in one checked file.

An :class:`Entry` holds everything needed to launch a kernel without typing it again: the
binary, the C name, the ABI (the parameter list :mod:`ember.compiler.args` packs arguments
into), and the generated source for debugging.  ``parts`` is the description its key is the
hash of (:func:`ember.cache.key.key_parts`), so an entry proves which key it belongs to.

File layout (``<key>.ember``)::

    b"EMBERC1\\n"                 magic and layout version
    32 bytes                      SHA-256 of everything after it
    4 bytes, little endian        length of the JSON header
    JSON header                   {"key", "parts", "meta", "binary_size", "source_size"}
    binary                        the compiled binary, as the backend made it
    source                        the generated C source (UTF-8)

Reading checks the magic, the checksum, the sizes, the type of every field, that the
header's key is both the requested one and the hash of its parts, and that the kernel's C
name ends in the key (:func:`entry_name`: the binary must define that function, which binds
it to the key); any mismatch is :class:`CorruptEntry`.  The binary's own structure is the
backend's to check when it loads it (``Backend.check_binary``).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import time
from dataclasses import field
from typing import Any

from ember._records import record
from ember.cache import key as keymod

MAGIC = b"EMBERC1\n"
_HEAD = len(MAGIC) + 32
_KEY = re.compile(r"[0-9a-f]{64}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,1023}")
_ABSENT = object()
# The header fields Ember reads back, with the JSON types they must have.
_META_FIELDS: dict[str, type | tuple[type, ...]] = {
    "name": str, "abi": list, "pyname": str, "dialect": str, "binary_kind": str,
    "device": str, "created": (int, float), "sites": list, "slow_paths": list,
    "kernel_loc": (list, type(None)), "launch": dict,
}  # fmt: skip


class CorruptEntry(Exception):
    """A cache entry or bundle member that cannot be trusted; the message says why."""


@record(eq=False)
class Entry:
    """A compiled kernel as the caches and bundles keep it."""

    key: str
    binary: bytes
    source: str
    parts: dict
    meta: dict = field(default_factory=dict)  # name, pyname, abi, binary_kind, dialect...

    @property
    def name(self) -> str:
        """The kernel's C name in the binary."""
        return self.meta["name"]

    @property
    def pyname(self) -> str:
        return self.meta.get("pyname", self.meta["name"])

    def abi(self) -> list:
        """The kernel's parameters as :class:`~ember.codegen.abi.AbiParam` objects."""
        return [abi_param(p) for p in self.meta["abi"]]

    def check(self, key: str | None = None) -> None:
        """Raise :class:`CorruptEntry` unless the entry is consistent (and has ``key``).

        Every field is checked for its type too, here and nowhere else: an entry comes from
        a file anyone may have crafted, and a list where a dict belongs must make a
        :class:`CorruptEntry`, never an ``AttributeError`` three modules later."""
        if not isinstance(self.key, str) or not _KEY.fullmatch(self.key):
            raise CorruptEntry("its key is not a SHA-256 in hex")
        if key is not None and self.key != key:
            raise CorruptEntry(f"it holds key {self.key[:16]}..., not {key[:16]}...")
        if not isinstance(self.binary, bytes) or not isinstance(self.source, str):
            raise CorruptEntry("its binary or source is not bytes/text")
        for name, value in (("description", self.parts), ("header", self.meta)):
            if not isinstance(value, dict):
                raise CorruptEntry(f"its {name} is a {type(value).__name__}, not a JSON object")
        try:
            digest = keymod.digest(self.parts)
        except (TypeError, ValueError, RecursionError) as exc:
            raise CorruptEntry(f"its description cannot be hashed ({exc})") from None
        if digest != self.key:
            raise CorruptEntry("its key is not the hash of its description")
        for field_name, kinds in _META_FIELDS.items():
            value = self.meta.get(field_name, _ABSENT)
            if value is _ABSENT and field_name in ("name", "abi"):
                raise CorruptEntry(f"its header has no {field_name!r}")
            if value is not _ABSENT and not isinstance(value, kinds):
                raise CorruptEntry(f"its header's {field_name!r} is a {type(value).__name__}")
        name = self.meta["name"]
        if not _IDENTIFIER.fullmatch(name) or not name.endswith(entry_name("", self.key)):
            raise CorruptEntry(f"its kernel name {name[:60]!r} is not the one of its key")
        self.abi()  # every parameter record parses

    def to_bytes(self) -> bytes:
        source = self.source.encode()
        header = json.dumps(
            {
                "key": self.key,
                "parts": self.parts,
                "meta": self.meta,
                "binary_size": len(self.binary),
                "source_size": len(source),
            },
            sort_keys=True,
        ).encode()
        payload = struct.pack("<I", len(header)) + header + self.binary + source
        return MAGIC + hashlib.sha256(payload).digest() + payload

    @classmethod
    def from_bytes(cls, data: bytes, key: str | None = None) -> Entry:
        """Parse and check an entry file's bytes; :class:`CorruptEntry` when damaged."""
        if len(data) < _HEAD + 4 or not data.startswith(MAGIC):
            what = "truncated" if MAGIC.startswith(data[: len(MAGIC)]) else "not an Ember entry"
            raise CorruptEntry(f"the file is {what} ({len(data)} bytes)")
        payload = memoryview(data)[_HEAD:]
        if hashlib.sha256(payload).digest() != data[len(MAGIC) : _HEAD]:
            raise CorruptEntry("its checksum does not match (truncated or modified)")
        (hlen,) = struct.unpack_from("<I", payload)
        try:
            header = json.loads(bytes(payload[4 : 4 + hlen]))
            if not isinstance(header, dict):
                raise CorruptEntry(f"its header is a {type(header).__name__}, not an object")
            nbin, nsrc = header["binary_size"], header["source_size"]
            start = 4 + hlen
            if not (_count(nbin) and _count(nsrc) and start + nbin + nsrc == len(payload)):
                raise CorruptEntry("its sizes do not add up")
            binary = bytes(payload[start : start + nbin])
            source = bytes(payload[start + nbin :]).decode()
            entry = cls(header["key"], binary, source, header["parts"], header["meta"])
        except CorruptEntry:
            raise
        except Exception as exc:  # bad JSON, missing fields, bad UTF-8, nesting too deep
            raise CorruptEntry(f"its header cannot be read ({type(exc).__name__}: {exc})") from None
        entry.check(key)
        return entry


def _count(value: Any) -> bool:
    """A JSON size: a non-negative int (not a bool, not a float)."""
    return type(value) is int and value >= 0


def entry_name(base: str, key: str) -> str:
    """The C name of a cached kernel: ``base`` and the start of its key.  An entry's binary
    must define it, so a binary swapped in from another entry (whose checksums were made
    to agree) is refused at load: it has no such function (issue 18)."""
    return f"{base}_{key[:16]}"


def base_name(name: str, key: str) -> str:
    """``name`` without the key :func:`entry_name` appended (for messages)."""
    suffix = entry_name("", key) if key else ""
    return name[: -len(suffix)] if suffix and name.endswith(suffix) else name


def make_meta(name: str, pyname: str, abi: list, backend) -> dict:
    """The metadata stored with a new entry."""
    return {
        "name": name,
        "pyname": pyname,
        "abi": [abi_record(p) for p in abi],
        "dialect": backend.dialect.name,
        "binary_kind": backend.binary_kind,
        "device": backend.device.name,
        "created": round(time.time(), 3),
    }


def abi_record(p) -> list:
    """An :class:`AbiParam` as a JSON list."""
    dtype = None if p.dtype is None else p.dtype.name
    return [p.name, p.kind, dtype, p.arg, list(p.path), p.axis, p.itemsize]


def abi_param(record: Any):
    """The :class:`AbiParam` of :func:`abi_record`'s list (CorruptEntry if malformed)."""
    from ember import dtypes
    from ember.codegen.abi import AbiParam

    try:
        if not isinstance(record, list) or len(record) != 7:
            raise TypeError("not a list of 7 items")
        name, kind, dtype, arg, path, axis, itemsize = record
        if kind not in _ABI_KINDS or not isinstance(name, str) or not isinstance(path, list):
            raise TypeError("a field has the wrong kind")
        numbers = (arg, axis, itemsize, *path)
        if not all(type(i) is int and -1 <= i < 2**31 for i in numbers):
            raise TypeError("an index is not a small int")
        return AbiParam(
            name, kind, None if dtype is None else dtypes.dtype(str(dtype)), arg, tuple(path),
            axis, itemsize,
        )  # fmt: skip
    except Exception as exc:
        shown = repr(record)[:80]
        raise CorruptEntry(f"its ABI record {shown} is malformed ({exc})") from None


_ABI_KINDS = frozenset(
    {
        "scalar",
        "re",
        "im",
        "data",
        "start",
        "shape",
        "stride",
        "claim",
        "record",
        "kid",
        "grid",
        "dynbytes",
    }
)
