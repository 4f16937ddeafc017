"""``ember precompile -j N``: compiler processes share their work through the disk cache; a
progress callback; the device compiler's own output only when asked."""

from __future__ import annotations

import os

import pytest

import ember
from ember import precompile as parallel
from ember.precompile import precompile

SET = "precompile_work:examples"  # tests/backend/precompile_work.py: 5 specializations


@pytest.fixture
def disk_cache(tmp_path):
    with ember.config.override(cache=True, cache_dir=str(tmp_path / "cache")):
        yield tmp_path


def test_processes_fill_the_cache(backend, disk_cache):
    seen = []
    first = precompile(SET, jobs=2, progress=lambda done, total: seen.append((done, total)))
    assert first["jobs"] == 2 and first["failed"] == 0, first["errors"]
    assert first["kernels"] == 5 and first["compiled"] == 5
    assert seen[-1] == (5, 5) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    again = precompile(SET, jobs=1, bundle=str(disk_cache / "set.bundle"))  # this process
    assert again["kernels"] == 5 and again["compiled"] == 0 and again["cached"] == 5
    assert len(ember.cache.load_bundle(str(disk_cache / "set.bundle"), register=False).entries) == 5


def test_without_a_disk_cache_the_work_stays_here(backend, tmp_path):
    with ember.config.override(cache=False, cache_dir=str(tmp_path)):
        result = precompile(SET, jobs=4)
    assert result["jobs"] == 1 and result["kernels"] == 5


def test_compiler_output_is_captured(capfd):
    with parallel.compiler_output(verbose=False) as quiet:
        os.write(2, b"1 warning generated.\n")
    with parallel.compiler_output(verbose=True) as loud:
        os.write(2, b"2 warnings generated.\n")
    err = capfd.readouterr().err
    assert quiet.lines == 1 and "1 warning generated." not in err
    assert loud.lines == 1 and "2 warnings generated." in err
