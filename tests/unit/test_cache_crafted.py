"""Crafted cache entries and bundles (issue 18): wrong JSON types, inconsistent sizes,
inflation bombs, binaries moved between entries with their checksums made to agree.

Every one is refused with Ember's own error (a damaged disk entry is a miss with a
:class:`CacheWarning`; a damaged bundle a :class:`BundleError`), never a raw Python
exception; the disk cache and ``ember cache`` keep working around them.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import warnings
import zipfile

import pytest
from cache_fakes import FakeBackend, array, load_module

from ember import cache, config
from ember.cache import bundle as bundlemod
from ember.cache import disk
from ember.cache import lookup as memory
from ember.cache.entry import MAGIC, CorruptEntry, Entry, entry_name
from ember.cache.key import digest

KERNELS = """
import ember

@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]

@ember.kernel
def scale(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i]
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setattr(memory, "stats", memory.Stats())
    monkeypatch.setattr(memory, "bundled", {})
    monkeypatch.setattr(memory, "_preloaded", {})
    with config.override(cache=True, cache_dir=str(d), cache_size="1GiB"):
        yield d


def good_entry() -> Entry:
    parts = {"format": 1, "kernel": "k", "target": "opencl"}
    key = digest(parts)
    meta = {"name": entry_name("k", key), "abi": [["x", "scalar", "float32", 0, [], 0, 0]]}
    return Entry(key, b"\x7fELF binary", "// source", parts, meta)


def raw_entry(header: object, binary: bytes = b"bin", source: bytes = b"src") -> bytes:
    """Entry file bytes around any ``header`` JSON value, with a correct checksum."""
    text = json.dumps(header).encode()
    payload = struct.pack("<I", len(text)) + text + binary + source
    return MAGIC + hashlib.sha256(payload).digest() + payload


def entry_header(entry: Entry, **changes) -> dict:
    header = {
        "key": entry.key, "parts": entry.parts, "meta": entry.meta,
        "binary_size": len(entry.binary), "source_size": len(entry.source.encode()),
    }  # fmt: skip
    header.update(changes)
    return header


E = good_entry()

CRAFTED_HEADERS = {
    "header is a list": [1, 2, 3],
    "parts is a list": entry_header(E, parts=[1, 2]),
    "meta is a list": entry_header(E, meta=["name", "abi"]),
    "meta name is a number": entry_header(E, meta={**E.meta, "name": 7}),
    "name of another key": entry_header(E, meta={**E.meta, "name": entry_name("k", "0" * 64)}),
    "abi is a dict": entry_header(E, meta={**E.meta, "abi": {"x": 1}}),
    "abi record is a dict": entry_header(E, meta={**E.meta, "abi": [{"a": 1}]}),
    "abi kind unknown": entry_header(
        E, meta={**E.meta, "abi": [["x", "evil", "float32", 0, [], 0, 0]]}
    ),
    "abi index is a string": entry_header(
        E, meta={**E.meta, "abi": [["x", "scalar", "float32", "0", [], 0, 0]]}
    ),
    "sites is a dict": entry_header(E, meta={**E.meta, "sites": {"a": 1}}),
    "key is a list": entry_header(E, key=[E.key]),
    "size is a float": entry_header(E, binary_size=float(len(E.binary))),
    "size is negative": entry_header(E, binary_size=-1, source_size=len(E.binary) + 11),
    "size is a bool": entry_header(E, binary_size=True),
}


@pytest.mark.parametrize("what", list(CRAFTED_HEADERS))
def test_a_crafted_entry_file_is_a_corrupt_entry(what):
    data = raw_entry(CRAFTED_HEADERS[what], E.binary, E.source.encode())
    with pytest.raises(CorruptEntry):
        Entry.from_bytes(data, E.key)


def test_a_deeply_nested_header_is_a_corrupt_entry():
    text = b"[" * 100_000 + b"]" * 100_000
    payload = struct.pack("<I", len(text)) + text
    with pytest.raises(CorruptEntry, match="cannot be read"):
        Entry.from_bytes(MAGIC + hashlib.sha256(payload).digest() + payload)


def test_the_good_entry_is_accepted():
    back = Entry.from_bytes(E.to_bytes(), E.key)
    assert back.abi()[0].name == "x" and back.parts == E.parts


def test_crafted_disk_entries_are_misses_and_cache_info_still_works(tmp_path):
    d = disk.DiskCache(str(tmp_path / "c"))
    for what, header in CRAFTED_HEADERS.items():
        key = hashlib.sha256(what.encode()).hexdigest()
        if isinstance(header, dict):
            header = {**header, "key": key}
        path = d.path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(raw_entry(header, E.binary, E.source.encode()))
        with pytest.warns(disk.CacheWarning, match="damaged cache entry"):
            assert d.load(key) is None
    with config.override(cache=True, cache_dir=str(tmp_path / "c")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            info = cache.info()
        assert info["entries"] == len(CRAFTED_HEADERS)
        assert info["targets"] == {"damaged": len(CRAFTED_HEADERS)}
        assert cache.export(tmp_path / "out.ember") == 0  # damaged entries are not exported
    out = _cli(tmp_path, "info")
    assert out.returncode == 0 and f"{len(CRAFTED_HEADERS)} entries" in out.stdout


# ------------------------------------------------------------------ bundles


def _kernels(tmp_path):
    return load_module(tmp_path, KERNELS)


def _record(tmp_path, path) -> tuple:
    be = FakeBackend()
    m = _kernels(tmp_path)
    x = array(be, (8,))
    with config.override(cache=False), cache.record() as rec:
        a = m.axpy.specialize(2.0, x, x)
        s = m.scale.specialize(2.0, x, x)
    rec.save(path)
    return a, s


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _write(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def _edit_manifest(path, edit) -> None:
    members = _members(path)
    manifest = json.loads(members["manifest.json"])
    edit(manifest)
    members["manifest.json"] = json.dumps(manifest).encode()
    _write(path, members)


def _set(item_field, value):
    def edit(m):
        m["entries"][0][item_field] = value

    return edit


MANIFEST_EDITS = {
    "entries is a dict": (lambda m: m.update(entries={"a": 1}), "layout version"),
    "an entry is a list": (lambda m: m["entries"].__setitem__(0, [1, 2]), "not an object"),
    "parts is a list": (_set("parts", [1, 2]), "'parts' is not a dict"),
    "meta is a list": (_set("meta", ["name"]), "'meta' is not a dict"),
    "key is a list": (_set("key", ["k"]), "'key' is not a str"),
    "binary is a number": (_set("binary", 3), "'binary' is not a str"),
    "sha256 is missing": (lambda m: m["entries"][0].pop("sha256"), "'sha256' is not a str"),
    "member of another key": (
        lambda m: m["entries"][0].update(binary=m["entries"][1]["binary"]),
        "names member",
    ),
    "duplicate entry": (lambda m: m["entries"].append(m["entries"][0]), "appears twice"),
    "meta name is a dict": (
        lambda m: m["entries"][0]["meta"].update(name={"x": 1}),
        "'name' is a dict",
    ),
}


@pytest.mark.parametrize("what", list(MANIFEST_EDITS))
def test_a_crafted_manifest_raises_a_bundle_error(tmp_path, cache_dir, what):
    path = tmp_path / "k.ember"
    _record(tmp_path, path)
    edit, message = MANIFEST_EDITS[what]
    _edit_manifest(path, edit)
    with pytest.raises(cache.BundleError, match=message):
        cache.load_bundle(path)
    with pytest.raises(cache.BundleError):
        cache.import_bundle(path)
    assert not memory.bundled
    out = _cli(tmp_path, "import", str(path))
    assert out.returncode == 1 and "ember cache import:" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_deeply_nested_manifest_raises_a_bundle_error(tmp_path, cache_dir):
    path = tmp_path / "k.ember"
    _write(path, {"manifest.json": b"[" * 100_000 + b"]" * 100_000})
    with pytest.raises(cache.BundleError, match="not valid JSON"):
        cache.load_bundle(path)


def test_members_that_would_inflate_too_far_are_refused_before_inflating(
    tmp_path, cache_dir, monkeypatch
):
    path = tmp_path / "bomb.ember"
    _record(tmp_path, path)
    members = _members(path)
    members["padding.bin"] = bytes(3 << 20)  # inflates 3 MiB from a few KiB of zip
    _write(path, members)
    assert os.path.getsize(path) < 64 << 10
    monkeypatch.setattr(bundlemod, "MAX_MEMBER_BYTES", 2 << 20)
    inflated = []
    real_read = zipfile.ZipFile.read
    monkeypatch.setattr(zipfile.ZipFile, "read", lambda z, i: inflated.append(i) or real_read(z, i))
    with pytest.raises(cache.BundleError, match="would inflate to 3145728 bytes"):
        cache.load_bundle(path)
    assert not inflated  # nothing was inflated
    monkeypatch.setattr(bundlemod, "MAX_MEMBER_BYTES", 4 << 20)
    monkeypatch.setattr(bundlemod, "MAX_TOTAL_BYTES", 2 << 20)
    with pytest.raises(cache.BundleError, match="would inflate to"):
        cache.load_bundle(path)


def test_a_binary_moved_to_another_entry_is_refused_and_recompiled(tmp_path, cache_dir):
    """One kernel's key with another's binary, every checksum recomputed: the binary lacks
    the function its key names, so it is never run (issue 18: it ran the other code)."""
    path = tmp_path / "k.ember"
    a, s = _record(tmp_path, path)
    members = _members(path)
    ka, ks = f"binaries/{a.key}.bin", f"binaries/{s.key}.bin"
    members[ka], members[ks] = members[ks], members[ka]
    manifest = json.loads(members["manifest.json"])
    for item in manifest["entries"]:
        item["sha256"] = hashlib.sha256(members[item["binary"]]).hexdigest()
    members["manifest.json"] = json.dumps(manifest).encode()
    _write(path, members)
    bundle = cache.load_bundle(path)  # consistent as a file...
    assert len(bundle.entries) == 2
    be = FakeBackend()
    m = _kernels(tmp_path)
    x = array(be, (8,))
    with config.override(cache=False):
        with pytest.warns(disk.CacheWarning, match="cannot be loaded"):
            spec = m.axpy.specialize(2.0, x, x)
    assert spec.origin == "compiled" and be.compiles == 1  # ...but the swap is never run
    assert spec.function.name == a.function.name


def test_a_binary_moved_with_its_name_is_refused_at_load(tmp_path, cache_dir):
    path = tmp_path / "k.ember"
    a, s = _record(tmp_path, path)

    def swap(m):
        first, second = m["entries"]
        first["meta"]["name"] = second["meta"]["name"]

    _edit_manifest(path, swap)
    with pytest.raises(cache.BundleError, match="not the one of its key"):
        cache.load_bundle(path)


def test_a_pinned_bundle_is_loaded_only_if_it_is_the_published_file(tmp_path, cache_dir):
    path = tmp_path / "k.ember"
    _record(tmp_path, path)
    published = hashlib.sha256(path.read_bytes()).hexdigest()
    assert cache.load_bundle(path, sha256=published).sha256 == published
    assert cache.load_bundle(path, sha256=published.upper()).entries
    memory.bundled.clear()
    _edit_manifest(path, lambda m: m.update(created="later"))  # a different, valid bundle
    with pytest.raises(cache.BundleError, match="not the expected file"):
        cache.load_bundle(path, sha256=published)
    assert not memory.bundled


def test_ember_cache_verify(tmp_path):
    path = tmp_path / "k.ember"
    with config.override(cache=False):
        _record(tmp_path, path)
    published = hashlib.sha256(path.read_bytes()).hexdigest()
    out = _cli(tmp_path, "verify", str(path), "--sha256", published)
    assert out.returncode == 0 and published in out.stdout and "intact, 2 kernels" in out.stdout
    out = _cli(tmp_path, "verify", str(path), "--sha256", "0" * 64)
    assert out.returncode == 1 and "not the expected file" in out.stderr
    out = _cli(tmp_path, "verify", str(path))
    assert out.returncode == 0 and "nothing pinned" in out.stdout
    _edit_manifest(path, _set("parts", [1]))
    out = _cli(tmp_path, "verify", str(path))
    assert out.returncode == 1 and "damaged" in out.stderr and "Traceback" not in out.stderr


def _cli(tmp_path, *args):
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "c"), EMBER_CACHE="1")
    return subprocess.run(
        [sys.executable, "-m", "ember", "cache", *args], capture_output=True, text=True, env=env
    )
