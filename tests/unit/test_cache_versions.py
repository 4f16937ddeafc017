"""The cache's record of library versions: a process whose backend gives the same
version stamp, with the listed library files unchanged, reads the versions instead of
loading the libraries (CUDA: NVRTC); anything else asks the backend again."""

from __future__ import annotations

import json
import os
import sys

import pytest
from cache_fakes import FakeBackend

from ember import config
from ember.cache import key as keymod
from ember.cache import lookup


class StampedBackend(FakeBackend):
    """A fake whose versions come from a 'library' file, counted when asked."""

    def __init__(self, library: str, stamp: dict | None = None, versions=None):
        super().__init__(versions=versions)
        self.library, self.stamp, self.asked = library, stamp or {"lib": "v"}, 0

    def version_stamp(self):
        return self.stamp

    def library_versions(self):
        self.asked += 1
        return self.versions

    def library_files(self):
        return [self.library]


@pytest.fixture
def cache_dir(tmp_path):
    with config.override(cache=True, cache_dir=str(tmp_path / "c")):
        yield tmp_path / "c"


@pytest.fixture
def library(tmp_path):
    path = tmp_path / "libfake.so"
    path.write_bytes(b"version 1")
    return str(path)


def test_a_second_backend_with_the_same_stamp_reads_the_record(cache_dir, library):
    first = StampedBackend(library)
    assert keymod.versions(first) == first.versions and first.asked == 1
    second = StampedBackend(library)
    assert keymod.versions(second) == first.versions
    assert second.asked == 0  # not asked: read from the record
    saved = json.loads((cache_dir / "v1" / "versions.json").read_text())["records"]
    (record,) = saved.values()
    assert record["versions"] == first.versions and record["files"][0][0] == library


def test_another_stamp_asks_the_backend(cache_dir, library):
    keymod.versions(StampedBackend(library))
    other = StampedBackend(library, stamp={"lib": "w"}, versions={"fake-compiler": "9.0"})
    assert keymod.versions(other) == {"fake-compiler": "9.0"} and other.asked == 1
    again = StampedBackend(library, stamp={"lib": "w"})
    assert keymod.versions(again) == {"fake-compiler": "9.0"} and again.asked == 0


@pytest.mark.parametrize("change", ["rewritten", "removed"])
def test_a_changed_library_file_asks_the_backend(cache_dir, library, change):
    keymod.versions(StampedBackend(library))
    if change == "removed":
        os.remove(library)
    else:
        with open(library, "wb") as f:
            f.write(b"version 2, longer")
    later = StampedBackend(library, versions={"fake-compiler": "2.0"})
    assert keymod.versions(later) == {"fake-compiler": "2.0"} and later.asked == 1


def test_no_stamp_or_no_disk_cache_means_no_record(tmp_path, library):
    with config.override(cache=False, cache_dir=str(tmp_path / "c")):
        for _ in range(2):
            b = StampedBackend(library)
            keymod.versions(b)
            assert b.asked == 1
    assert not (tmp_path / "c").exists()
    with config.override(cache=True, cache_dir=str(tmp_path / "d")):
        plain = FakeBackend()  # the Backend default: no stamp
        assert plain.version_stamp() is None and plain.library_files() == []
        assert keymod.versions(plain) == plain.versions
        assert not (tmp_path / "d" / "v1" / "versions.json").exists()


@pytest.mark.parametrize("text", ["{", "[]", '{"records": []}', '{"records": {"x": 1}}'])
def test_a_damaged_record_is_no_record_and_is_rewritten(cache_dir, library, text):
    path = cache_dir / "v1" / "versions.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    b = StampedBackend(library)
    assert keymod.versions(b) == b.versions and b.asked == 1
    assert json.loads(path.read_text())["records"]


def test_a_wrong_record_is_corrected_at_the_first_compile_and_not_stored(cache_dir, library):
    """A record that no longer tells the truth (the stamp missed a change): the first
    store checks the versions against the loaded libraries, corrects the record, and
    keeps the entry made with the stale key out of the disk cache."""
    keymod.versions(StampedBackend(library))
    stale = StampedBackend(library, versions={"fake-compiler": "3.0"})
    assert keymod.versions(stale) == {"fake-compiler": "1.0", "fake-driver": "2.0"}
    assert keymod.confirm_versions(stale) is False
    assert keymod.versions(stale) == {"fake-compiler": "3.0"}
    assert keymod.confirm_versions(stale) is True  # checked once
    fresh = StampedBackend(library, versions={"fake-compiler": "3.0"})
    assert keymod.versions(fresh) == {"fake-compiler": "3.0"} and fresh.asked == 0
    assert keymod.confirm_versions(fresh) is True and fresh.asked == 1


def test_the_store_skips_an_entry_keyed_with_wrong_versions(cache_dir, library):
    from ember.cache.entry import Entry

    keymod.versions(StampedBackend(library))
    stale = StampedBackend(library, versions={"fake-compiler": "3.0"})
    keymod.versions(stale)
    before = lookup.stats.stores
    entry = Entry("ab" * 32, b"binary", "source", {"kernel": "k"}, {"name": "k"})
    lookup.store(entry, stale)
    assert lookup.stats.stores == before
    assert not list((cache_dir / "v1").glob("entries/*/*.ember"))
    lookup.store(entry, stale)  # confirmed now: stored
    assert lookup.stats.stores == before + 1


# ------------------------------------------------------------------ CUDA's stamp (NVRTC)


def test_nvrtc_search_stamp_sees_a_wheel_folder_appear(tmp_path, monkeypatch):
    from ember.backends.cuda import nvrtc

    site = tmp_path / "site"
    (site / "nvidia").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    before = nvrtc.search_stamp()
    assert str(site / "nvidia") in before["dirs"]
    (site / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    after = nvrtc.search_stamp()
    assert after != before and str(site / "nvidia" / "cu13" / "lib") in after["dirs"]
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert nvrtc.search_stamp()["env"]["CUDA_HOME"] == str(tmp_path)
    json.dumps(after)  # recordable


def test_nvrtc_loaded_files_name_the_library_once_loaded():
    from ember.backends.cuda import nvrtc

    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # no NVRTC here
        pytest.skip(f"NVRTC cannot be loaded: {exc}")
    files = nvrtc.loaded_files()
    assert files and all(os.path.basename(f).startswith("libnvrtc") for f in files)
    assert all(os.path.isfile(f) for f in files)


# ------------------------------------------------------------------ the compiler's fingerprint


@pytest.fixture
def package(tmp_path):
    """A stand-in for the ember package: the fingerprinted paths, a few files each."""
    root = tmp_path / "pkg"
    for rel in keymod.FINGERPRINT_PATHS:
        path = root / rel
        if rel.endswith(".py"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {rel}\n")
        else:
            (path / "sub").mkdir(parents=True)
            (path / "a.py").write_text(f"A = '{rel}'\n")
            (path / "sub" / "b.py").write_text("B = 1\n")
            (path / "notes.txt").write_text("not source\n")
    return str(root)


def test_the_fingerprint_is_read_from_the_record_while_the_sources_are_unchanged(
    cache_dir, package, monkeypatch
):
    first = keymod._recorded_fingerprint(package)
    assert first == keymod._hash_sources(package)
    (record,) = json.loads((cache_dir / "v1" / "fingerprint.json").read_text())["records"].values()
    dirs = [rel for rel in keymod.FINGERPRINT_PATHS if not rel.endswith(".py")]
    files = len(keymod.FINGERPRINT_PATHS) - len(dirs) + 2 * len(dirs)  # not notes.txt
    assert record["fingerprint"] == first and len(record["files"]) == files
    hashed = []
    monkeypatch.setattr(keymod, "_hash_sources", lambda *a: hashed.append(a) or "x")
    assert keymod._recorded_fingerprint(package) == first and hashed == []


@pytest.mark.parametrize("change", ["edit", "add", "remove", "version", "damage"])
def test_any_change_to_the_sources_hashes_them_again(cache_dir, package, monkeypatch, change):
    first = keymod._recorded_fingerprint(package)
    source = os.path.join(package, "codegen", "a.py")
    if change == "edit":  # same size, a new modification time
        with open(source, "w") as f:
            f.write("A = 'codegeN'\n")
        st = os.stat(source)
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    elif change == "add":
        with open(os.path.join(package, "frontend", "sub", "new.py"), "w") as f:
            f.write("C = 2\n")
    elif change == "remove":
        os.remove(source)
    elif change == "version":
        monkeypatch.setattr(keymod, "__version__", "9.9.9")
    else:
        (cache_dir / "v1" / "fingerprint.json").write_text("{not json")
    again = keymod._recorded_fingerprint(package)
    assert again == keymod._hash_sources(package)
    assert (again == first) is (change == "damage")
    assert keymod._recorded_fingerprint(package) == again  # and recorded


def test_without_the_disk_cache_the_fingerprint_is_hashed(tmp_path, package):
    with config.override(cache=False, cache_dir=str(tmp_path / "off")):
        assert keymod._recorded_fingerprint(package) == keymod._hash_sources(package)
    assert not (tmp_path / "off").exists()
