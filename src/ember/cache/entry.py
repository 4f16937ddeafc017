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

Reading checks the magic, the checksum, the sizes and that the header's key is both the
requested one and the hash of its parts; any mismatch is :class:`CorruptEntry`.
"""

from __future__ import annotations

import hashlib
import json
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from ember.cache import key as keymod

MAGIC = b"EMBERC1\n"
_HEAD = len(MAGIC) + 32


class CorruptEntry(Exception):
    """A cache entry or bundle member that cannot be trusted; the message says why."""


@dataclass(eq=False)
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
        """Raise :class:`CorruptEntry` unless the entry is consistent (and has ``key``)."""
        if key is not None and self.key != key:
            raise CorruptEntry(f"it holds key {self.key[:16]}..., not {key[:16]}...")
        if keymod.digest(self.parts) != self.key:
            raise CorruptEntry("its key is not the hash of its description")
        for required in ("name", "abi"):
            if required not in self.meta:
                raise CorruptEntry(f"its header has no {required!r}")

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
            nbin, nsrc = int(header["binary_size"]), int(header["source_size"])
            start = 4 + hlen
            if start + nbin + nsrc != len(payload):
                raise CorruptEntry("its sizes do not add up")
            binary = bytes(payload[start : start + nbin])
            source = bytes(payload[start + nbin :]).decode()
            entry = cls(header["key"], binary, source, header["parts"], header["meta"])
        except CorruptEntry:
            raise
        except Exception as exc:  # bad JSON, missing fields, bad UTF-8
            raise CorruptEntry(f"its header cannot be read ({type(exc).__name__}: {exc})") from None
        entry.check(key)
        return entry


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
        name, kind, dtype, arg, path, axis, itemsize = record
        return AbiParam(
            str(name), str(kind), None if dtype is None else dtypes.dtype(dtype), int(arg),
            tuple(int(i) for i in path), int(axis), int(itemsize),
        )  # fmt: skip
    except Exception as exc:
        raise CorruptEntry(f"its ABI record {record!r} is malformed ({exc})") from None
