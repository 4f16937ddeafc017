"""The standard precompiled set: its examples have exactly the signatures the array
functions launch, so after ``ember precompile`` a fresh process compiles nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np

import ember
from ember.array import kernels, ops, ufuncs
from ember.array.standard import _signature, standard_kernels

FLAGSHIP = {"map_copy_float64_s", "map_multiply_float64_as", "map_add_float64_as"}


def test_the_set_covers_the_common_dtypes_and_operations(backend):
    examples = list(standard_kernels())
    names = {k.__name__ for k, _ in examples}
    assert FLAGSHIP <= names
    for expected in ("map_add_int32_aa", "map_less_float32_as", "map_sqrt_float32_a",
                     "map_divide_float64_aa", "map_copy_int64_a", "smap_add_float32_aa_2d",
                     "transpose2_float64"):  # fmt: skip
        assert expected in names
    assert len(examples) > 200
    signatures = {(k, tuple(map(_signature, args))) for k, args in examples}
    assert len(signatures) == len(examples)  # no duplicates


def test_examples_are_the_kernels_the_arrays_run(backend):
    x = ember.ones(10)
    x * 2 + 1
    entry = ufuncs.multiply.cache[(x.dtype, int, x.backend)]
    assert entry.kernel is kernels.contiguous(ops.multiply, ember.float64, (True, False))
    examples = dict((k.__name__, (k, a)) for k, a in standard_kernels(("float64",)))
    assert examples["map_multiply_float64_as"][0] is entry.kernel


def test_a_sample_of_examples_specializes(backend):
    from ember.precompile import _device_args

    examples = list(standard_kernels(("int32", "float32")))
    for kernel, args in examples[:: max(1, len(examples) // 12)]:
        kernel.specialize(*_device_args(args))


SCRIPT = """
import json, sys
import ember
{body}
print(json.dumps(ember.cache.stats()))
"""


def _run(body: str, env: dict) -> dict:
    code = SCRIPT.format(body=textwrap.dedent(body))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _kernel_names(cache_dir, before) -> list[str]:
    """The kernels that entered the disk cache since ``before`` (what a run compiled)."""
    names = []
    for path in sorted(set(cache_dir.rglob("*.ember")) - before):
        source = next(path.parent.glob(path.stem + ".*[!r]"), None)  # the .cl/.cu beside it
        text = source.read_text(errors="replace") if source else ""
        names += re.findall(r"(?:__kernel|__global__) void (\w+)", text) or [path.stem[:16]]
    return names


def test_fresh_process_after_precompile_compiles_nothing(backend, tmp_path):
    env = {**os.environ, "EMBER_CACHE": "1", "EMBER_CACHE_DIR": str(tmp_path),
           "EMBER_BACKEND": backend.name}  # fmt: skip
    pre = _run(
        f"""
        from ember.precompile import precompile
        from ember.array.standard import _signature, standard_kernels
        wanted = {sorted(FLAGSHIP)!r}
        found = precompile([e for e in standard_kernels(("float64",))
                            if e[0].__name__ in wanted], echo=lambda *a: None)
        assert found["kernels"] == 3 and not found["failed"], found
        """,
        env,
    )
    assert pre["stores"] + pre["disk_hits"] >= 3
    user = _run(
        """
        x = ember.ones(1000)
        y = x * 2 + 1
        assert float(y[:1].reshape(())) == 3.0
        """,
        env,
    )
    assert user["compiles"] == 0, user
    assert user["disk_hits"] + user["preloaded_hits"] >= 3


def test_example_arrays_are_numpy_or_device_arrays(backend):
    for _, args in standard_kernels(("float32",)):
        for a in args:
            assert isinstance(a, np.ndarray | ember.ndarray | int | float | bool | tuple)


def test_scans_masks_and_sorts_after_precompile_compile_nothing(backend, tmp_path):
    """The scan, compaction, sort and unique examples have the signatures those operations
    launch on this device (short and long arrays, sort and argsort, the unique family's
    table and sort paths, float32 and int64).

    The examples are precompiled into the suite's shared cache (mostly hits: other tests
    compile the same kernels) and exactly their entries are copied into a fresh cache, which
    the user's run must then find complete."""
    from ember.cache.disk import DiskCache

    keys_file = tmp_path / "keys.json"
    shared = {**os.environ, "EMBER_CACHE": "1", "EMBER_BACKEND": backend.name}
    _run(
        f"""
        import numpy as np
        from ember.array import standard_sort, ufuncs
        from ember.array.standard import contiguous_example
        from ember.precompile import _device_args, precompile
        from ember.runtime import backend as registry
        examples = list(standard_sort.examples(registry.current(), ("float32", "int64")))
        examples += [contiguous_example(ufuncs.greater, (np.zeros(4, dt), 3))
                     for dt in ("float32", "int64")]  # the masks' x > 3
        from ember.array.standard import standard_kernels
        examples += [e for e in standard_kernels(("int32",))
                     if e[0].__name__ == "map_copy_int32_s"]  # unique's first-index fill
        found = precompile(examples, echo=lambda *a: None)
        assert not found["failed"], found
        keys = [k.specialize(*_device_args(a)).key for k, a in examples]
        open({str(keys_file)!r}, "w").write(json.dumps(keys))
        """,
        shared,
    )
    fresh = tmp_path / "cache"
    source, target = DiskCache(shared["EMBER_CACHE_DIR"], 0), DiskCache(str(fresh), 0)
    for key in json.loads(keys_file.read_text()):
        os.makedirs(os.path.dirname(target.path(key)), exist_ok=True)
        shutil.copyfile(source.path(key), target.path(key))
    env = {**shared, "EMBER_CACHE_DIR": str(fresh)}
    before = set(fresh.rglob("*.ember"))
    user = _run(
        """
        import numpy as np
        from ember.array import sets, sort
        for dt in ("float32", "int64"):
            for n in (10, sort.SEGMENT * 3 + 1):
                x = ember.asarray(np.arange(n, dtype=dt)[::-1].copy())
                ember.cumsum(x), ember.cumprod(x), x[x > 3], ember.nonzero(x)
                ember.sort(x), ember.argsort(x)
                ember.unique_values(x), ember.unique_counts(x), ember.unique_inverse(x > 3)
        # the table: booleans always, int64 of a narrow range past DENSE_MIN; int64's
        # inverse through the sort (a float's gathers its values: take_along_axis)
        x = ember.asarray(np.arange(sort.SEGMENT * 3 + 1) % 1000)
        ember.unique_values(x), ember.unique_inverse(x), ember.unique_all(x)
        x = ember.asarray(np.arange(sets.DENSE_MIN + 3) % 1000)
        assert sets._dense_range(x, True) is not None
        ember.unique_values(x), ember.unique_inverse(x), ember.unique_all(x)
        ember.unique_counts(x > 500)
        ember.synchronize()
        """,
        env,
    )
    assert user["compiles"] == 0, (user, _kernel_names(fresh, before))
