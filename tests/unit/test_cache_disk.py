"""The disk cache and bundles, on a fake backend: hits skip the compiler, damaged entries
are misses that get replaced, writes are atomic and bounded, read-only directories work."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
import zipfile

import pytest
from cache_fakes import FakeBackend, array, load_module

import ember
from ember import cache, config
from ember.cache import disk, lookup
from ember.cache.entry import MAGIC, CorruptEntry, Entry, entry_name

KERNEL = """
import ember

@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """The disk cache on, in a fresh directory; no bundles; counters from zero."""
    d = tmp_path / "cache"
    monkeypatch.setattr(lookup, "stats", lookup.Stats())
    monkeypatch.setattr(lookup, "bundled", {})
    monkeypatch.setattr(lookup, "_preloaded", {})
    with config.override(cache=True, cache_dir=str(d), cache_size="1GiB"):
        yield d


def specialize(tmp_path, backend):
    """A new kernel object (as in a new process) specialized on ``backend``."""
    m = load_module(tmp_path, KERNEL)
    x = array(backend, (8,))
    return m.axpy.specialize(2.0, x, x)


def entry_files(d):
    return sorted(p for p in d.rglob("*.ember"))


# ------------------------------------------------------------------ hits and misses


def test_a_new_kernel_object_hits_the_disk_without_compiling(tmp_path, cache_dir):
    be = FakeBackend()
    first = specialize(tmp_path, be)
    assert first.origin == "compiled" and be.compiles == 1
    [path] = entry_files(cache_dir)
    assert path.with_suffix(".cl").read_text() == first.source  # the source beside it
    second = specialize(tmp_path, be)
    assert second.origin == "disk" and be.compiles == 1 and second.program is None
    assert second.key == first.key and second.abi == first.abi and second.source == first.source
    assert cache.stats()["compiles"] == 1 and cache.stats()["disk_hits"] == 1
    x = array(be, (8,))
    second.launch((2.0, x, x), (1, 1, 1), (8, 1, 1))  # the ABI from the entry packs the args
    assert be.launches[-1][1] == (2.0, x.buffer.handle, 0, 8, x.buffer.handle, 0, 8)


def test_cache_disabled_compiles_every_time(tmp_path, cache_dir):
    be = FakeBackend()
    with config.override(cache=False):
        specialize(tmp_path, be)
        specialize(tmp_path, be)
    assert be.compiles == 2 and not entry_files(cache_dir)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:60] + bytes([data[60] ^ 1]) + data[61:],  # one bit flipped
        lambda data: b"",  # empty
        lambda data: b"garbage" * 10,  # not an entry
        lambda data: MAGIC + data[len(MAGIC) :][:-1],  # checksum no longer matches
    ],
)
def test_a_damaged_entry_is_a_warned_miss_that_gets_replaced(tmp_path, cache_dir, damage):
    be = FakeBackend()
    specialize(tmp_path, be)
    [path] = entry_files(cache_dir)
    good = path.read_bytes()
    path.write_bytes(damage(good))
    with pytest.warns(cache.CacheWarning, match="damaged cache entry"):
        again = specialize(tmp_path, be)
    assert again.origin == "compiled" and be.compiles == 2
    Entry.from_bytes(path.read_bytes(), again.key)  # replaced by a valid entry


def test_a_foreign_entry_under_the_wrong_name_is_refused(tmp_path, cache_dir):
    be = FakeBackend()
    a = specialize(tmp_path, be)
    x64 = array(be, (8,), ember.float64)
    b = load_module(tmp_path, KERNEL).axpy.specialize(2.0, x64, x64)
    pa, pb = (cache_dir / "v1" / "entries" / k[:2] / f"{k}.ember" for k in (a.key, b.key))
    pb.write_bytes(pa.read_bytes())  # the float32 binary where the float64 one belongs
    with pytest.warns(cache.CacheWarning, match="holds key"):
        again = load_module(tmp_path, KERNEL).axpy.specialize(2.0, x64, x64)
    assert again.origin == "compiled" and again.key == b.key


def test_a_binary_the_driver_refuses_is_recompiled(tmp_path, cache_dir):
    specialize(tmp_path, FakeBackend())
    refusing = FakeBackend(refuse_binaries=True)
    with pytest.warns(cache.CacheWarning, match="cannot be loaded.*recompiling"):
        with pytest.raises(ember.DriverError):  # the fresh binary is refused too (fake)
            specialize(tmp_path, refusing)
    assert cache.stats()["load_failures"] == 1


def test_entry_checks(tmp_path):
    e = Entry("0" * 64, b"bin", "src", {"a": 1}, {"name": entry_name("k", "0" * 64), "abi": []})
    with pytest.raises(CorruptEntry, match="not the hash of its description"):
        Entry.from_bytes(e.to_bytes())
    from ember.cache.key import digest

    key = digest({"a": 1})
    meta = {"name": entry_name("k", key), "abi": []}
    good = Entry(key, b"\0bin", "src \u00e9", {"a": 1}, meta)
    back = Entry.from_bytes(good.to_bytes(), good.key)
    assert (back.binary, back.source, back.parts) == (good.binary, good.source, good.parts)
    with pytest.raises(CorruptEntry, match="holds key"):
        Entry.from_bytes(good.to_bytes(), "f" * 64)


# ------------------------------------------------------------------ writes


def test_read_only_cache_serves_hits_and_writes_nothing(tmp_path, cache_dir, monkeypatch):
    be = FakeBackend()
    specialize(tmp_path, be)
    before = {p: p.stat().st_mtime for p in cache_dir.rglob("*")}

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)
    monkeypatch.setattr(os, "utime", refuse)
    monkeypatch.setattr(os, "makedirs", refuse)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for a read-only cache
        hit = specialize(tmp_path, be)
        x64 = array(be, (8,), ember.float64)
        miss = load_module(tmp_path, KERNEL).axpy.specialize(2.0, x64, x64)
    assert hit.origin == "disk" and miss.origin == "compiled"
    assert {p: p.stat().st_mtime for p in cache_dir.rglob("*")} == before


def test_a_failing_write_warns_once_and_never_raises(tmp_path, cache_dir, monkeypatch):
    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(disk, "atomic_write", full)
    be = FakeBackend()
    with pytest.warns(cache.CacheWarning, match="cannot write"):
        specialize(tmp_path, be)
    x64 = array(be, (8,), ember.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_module(tmp_path, KERNEL).axpy.specialize(2.0, x64, x64)


def test_least_recently_used_entries_go_beyond_the_limit(tmp_path):
    d = disk.DiskCache(str(tmp_path / "c"), limit=0)
    entries = [_entry(i, 1000) for i in range(10)]
    for i, e in enumerate(entries):
        d.store(e, "opencl")
        t = time.time() - 1000 + i
        os.utime(d.path(e.key), (t, t))
    d.touch(entries[0].key)  # used now: the oldest entry becomes the newest
    size = sum(s.size for s in d.entries())
    removed = d.evict(limit=size // 2)
    left = {s.key for s in d.entries()}
    assert removed >= 5 and entries[0].key in left and entries[1].key not in left
    assert sum(s.size for s in d.entries()) <= size // 2 * 0.9


def test_sizes_parse():
    assert disk.parse_size("1GiB") == 2**30 and disk.parse_size("500MB") == 5 * 10**8
    assert disk.parse_size("2e9") == 2 * 10**9 and disk.parse_size("0") == 0
    with pytest.raises(ValueError, match="bad size"):
        disk.parse_size("lots")


def test_default_directory_follows_xdg(monkeypatch, tmp_path):
    if sys.platform != "linux":
        pytest.skip("XDG is Linux's")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk.default_dir() == str(tmp_path / "ember")


def _entry(i: int, size: int) -> Entry:
    from ember.cache.key import digest

    parts = {"i": i}
    meta = {"name": entry_name("k", digest(parts)), "abi": []}
    return Entry(digest(parts), os.urandom(size), f"// {i}", parts, meta)


WRITER = """
import sys, time
from ember.cache import disk
from ember.cache.entry import Entry, entry_name
from ember.cache.key import digest
root, me, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
parts = {"same": "kernel"}
d = disk.DiskCache(root)
while time.time() < start:
    pass
bad = 0
for i in range(200):
    # every process writes the same key with its own (valid) content, and reads it back
    meta = {"name": entry_name("k", digest(parts)), "abi": []}
    e = Entry(digest(parts), bytes([me]) * (1000 + 37 * me), "src", parts, meta)
    d.store(e, "opencl")
    got = d.load(e.key)
    bad += got is None or got.binary != bytes([got.binary[0]]) * len(got.binary)
print(bad)
"""


def test_many_processes_writing_the_same_entry(tmp_path):
    """16 processes store and load one key 200 times each: every read is a complete,
    valid entry written by one of them; no temporary file is left behind."""
    root = str(tmp_path / "c")
    start = time.time() + 1.0
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, root, str(i), str(start)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(16)
    ]  # fmt: skip
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    assert [int(o[0]) for o in outs] == [0] * 16
    d = disk.DiskCache(root)
    assert len(list(d.entries())) == 1
    assert not [p for p in (tmp_path / "c").rglob(".tmp-*")]


# ------------------------------------------------------------------ bundles


def test_record_save_and_load_a_bundle(tmp_path, cache_dir):
    be = FakeBackend()
    with config.override(cache=False), cache.record() as rec:
        spec = specialize(tmp_path, be)
    assert len(rec) == 1
    path = rec.save(tmp_path / "k.ember")
    with zipfile.ZipFile(path) as z:
        manifest = json.loads(z.read("manifest.json"))
        assert manifest["format"] == "ember-bundle"
        assert z.read(f"sources/{spec.key}.cl").decode() == spec.source
    bundle = cache.load_bundle(path)
    assert [e.key for e in bundle.entries] == [spec.key] and not bundle.ignored
    with config.override(cache=False):
        hit = specialize(tmp_path, be)
    assert hit.origin == "bundle" and be.compiles == 1


def test_bundle_entries_of_another_ember_are_ignored(tmp_path, cache_dir, monkeypatch):
    with cache.record() as rec:
        specialize(tmp_path, FakeBackend())
    path = rec.save(tmp_path / "k.ember")
    from ember.cache import key as keymod

    monkeypatch.setattr(keymod, "_fingerprint", "9.9.9+elsewhere")
    bundle = cache.load_bundle(path)
    assert not bundle.entries and "made by Ember" in bundle.ignored[0][1]


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: p.write_bytes(p.read_bytes()[:-100]), "damaged or not an Ember bundle"),
        (lambda p: p.write_bytes(b"hello"), "damaged or not an Ember bundle"),
        (lambda p: _rewrite(p, "manifest.json", b"{nope"), "not valid JSON"),
        (lambda p: _rewrite(p, "manifest.json", b'{"format": "x"}'), "not an Ember bundle"),
        (lambda p: _rewrite(p, "binaries/", b"other bytes"), "does not match its SHA-256"),
        (lambda p: _rewrite(p, "binaries/", None), "member is missing"),
        (lambda p: p.unlink(), "does not exist"),
    ],
)
def test_a_damaged_bundle_raises_a_clear_error(tmp_path, cache_dir, damage, message):
    with cache.record() as rec:
        specialize(tmp_path, FakeBackend())
    path = tmp_path / "k.ember"
    rec.save(path)
    damage(path)
    with pytest.raises(cache.BundleError, match=message):
        cache.load_bundle(path)
    assert not lookup.bundled


def _rewrite(path, prefix: str, data: bytes | None) -> None:
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    with zipfile.ZipFile(path, "w") as z:
        for name, old in members.items():
            if name.startswith(prefix):
                if data is None:
                    continue
                old = data
            z.writestr(name, old)


def test_export_and_import(tmp_path, cache_dir):
    specialize(tmp_path, FakeBackend())
    n = cache.export(tmp_path / "all.ember")
    assert n == 1
    with config.override(cache_dir=str(tmp_path / "other")):
        assert cache.import_bundle(tmp_path / "all.ember") == 1
        assert cache.info()["entries"] == 1
    assert cache.clear() == 1 and cache.info()["entries"] == 0


def test_cli_cache_info_and_clear(tmp_path):
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "c"), EMBER_CACHE="1")
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "ember", "cache", *a], capture_output=True, text=True, env=env
    )
    out = run("info")
    assert out.returncode == 0 and "0 entries" in out.stdout and str(tmp_path) in out.stdout
    assert "removed 0 entries" in run("clear").stdout
    bad = tmp_path / "bad.ember"
    bad.write_text("nope")
    out = run("import", str(bad))
    assert out.returncode == 1 and "not an Ember bundle" in out.stderr


def test_writer_script_is_valid_python():
    compile(textwrap.dedent(WRITER), "<writer>", "exec")


def test_stores_keep_the_cache_bounded_without_listing_it_every_time(tmp_path, monkeypatch):
    d = disk.DiskCache(str(tmp_path / "c"), limit=20_000)
    scans = []
    evict = d.evict
    monkeypatch.setattr(d, "evict", lambda limit=None: scans.append(1) or evict(limit))
    for i in range(40):  # a burst: twice the limit in one process (issue 18: 2.5x the limit)
        d.store(_entry(i, 1000), "opencl")
        assert sum(s.size for s in d.entries()) <= 20_000 + 1200  # at most one entry over
    assert 1 <= len(scans) <= 15  # listed when the writes may have crossed the limit only
    monkeypatch.undo()
    d2 = disk.DiskCache(str(tmp_path / "c"), limit=20_000)  # another process, ten minutes on
    os.utime(os.path.join(d2.base, "evicted"), (0, 0))
    d2.store(_entry(100, 1000), "opencl")
    assert sum(s.size for s in d2.entries()) <= 20_000


def test_a_process_that_finds_the_cache_recently_evicted_still_bounds_its_own_burst(tmp_path):
    d = disk.DiskCache(str(tmp_path / "c"), limit=20_000)
    os.makedirs(d.base, exist_ok=True)
    disk.atomic_write(os.path.join(d.base, "evicted"), b"")  # another process just evicted
    for i in range(60):
        d.store(_entry(i, 1000), "opencl")
    assert sum(s.size for s in d.entries()) <= 20_000 + 1200


class NvrtcBackend(FakeBackend):
    """A CUDA-dialect fake whose binaries are real sm_90 cubins from NVRTC (no GPU needed)."""

    def __init__(self):
        super().__init__(arch=(9, 0), versions={"nvrtc": "test", "cuda-driver": "test"})

    def compile(self, source, name, options=()):
        from ember.backends.cuda.nvrtc import compile_cubin

        self.compiles += 1
        return compile_cubin(source, "sm_90", name, options)


def test_cuda_dialect_cubins_round_trip(tmp_path, cache_dir):
    try:
        from ember.backends.cuda.nvrtc import nvrtc_version

        nvrtc_version()
    except Exception as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    be = NvrtcBackend()
    first = specialize(tmp_path, be)
    assert first.binary[:4] == b"\x7fELF" and first.origin == "compiled"
    second = specialize(tmp_path, be)
    assert second.origin == "disk" and second.binary == first.binary and be.compiles == 1
    assert [p.kind for p in second.abi] == ["scalar", "data", "shape", "data", "shape"]
    assert [p.name for p in cache_dir.rglob("*.cu")] == [f"{first.key}.cu"]
