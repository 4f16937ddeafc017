"""The kernel cache and bundles across real processes, on every available backend.

Each test runs fresh interpreters (``run``): what one process compiled, another finds, and
the compile counter (``ember.cache.stats()["compiles"]``) says whether a compiler ran.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

KMOD = """
import ember
OFFSET = {offset}

def shift(v):
    return v + OFFSET

@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + shift(y[i])
"""

RUN = """
import json, sys, time, numpy as np, ember
sys.path.insert(0, {folder!r})
{pre}
from kmod import axpy
dtype = np.{dtype}
x = ember.asarray(np.ones(4096, dtype)); y = ember.asarray(np.ones(4096, dtype))
axpy.launch(4096)(dtype(2), x, y)
spec = axpy.specialize(dtype(2), x, y)
print(json.dumps({{"origin": spec.origin, "stats": ember.cache.stats(), "key": spec.key,
                  "y": float(y.to_numpy()[7])}}))
"""


@pytest.fixture
def backend_name(backend):
    return backend.name


@pytest.fixture
def project(tmp_path, backend_name):
    """A folder with the kernel module, a cache directory, and the environment to use."""
    (tmp_path / "kmod.py").write_text(KMOD.format(offset=0))
    env = dict(os.environ, EMBER_BACKEND=backend_name, EMBER_CACHE="1",
               EMBER_CACHE_DIR=str(tmp_path / "cache"), EMBER_WARMUP="0")  # fmt: skip
    return tmp_path, env


def run(folder, env, pre="", dtype="float32", prefix=(), **extra) -> dict:
    code = RUN.format(folder=str(folder), pre=textwrap.dedent(pre), dtype=dtype)
    out = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(env, **extra), timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["stderr"] = out.stderr
    return result


def test_a_second_process_loads_the_binary_without_compiling(project):
    folder, env = project
    first, second = run(folder, env), run(folder, env)
    assert first["origin"] == "compiled" and first["stats"]["compiles"] == 1
    assert second["origin"] == "disk" and second["stats"]["compiles"] == 0
    assert first["y"] == second["y"] == 3.0 and first["key"] == second["key"]


def test_an_edited_device_function_is_recompiled_never_served_stale(project):
    folder, env = project
    assert run(folder, env)["y"] == 3.0
    (folder / "kmod.py").write_text(KMOD.format(offset=10))  # only shift()'s constant
    edited = run(folder, env)
    assert edited["origin"] == "compiled" and edited["y"] == 13.0


def test_a_bundle_makes_a_fresh_process_compile_nothing(project):
    folder, env = project
    bundle = str(folder / "k.ember")
    record = f"""
        import atexit
        rec_cm = ember.cache.record(); rec = rec_cm.__enter__()
        atexit.register(lambda: (rec_cm.__exit__(None, None, None), rec.save({bundle!r})))
    """
    recorded = run(folder, env, pre=record, EMBER_CACHE="0")
    assert recorded["stats"]["compiles"] == 1
    used = run(folder, env, pre=f"ember.cache.load_bundle({bundle!r})", EMBER_CACHE="0")
    assert used["origin"] == "bundle" and used["stats"]["compiles"] == 0
    assert used["stats"]["bundle_hits"] == 1 and used["y"] == 3.0
    other = run(folder, env, pre=f"ember.cache.load_bundle({bundle!r})", dtype="float64",
                EMBER_CACHE="0")  # fmt: skip
    assert other["origin"] == "compiled"  # not in the bundle: compiled as usual


def test_a_damaged_entry_is_replaced_across_processes(project):
    folder, env = project
    run(folder, env)
    [entry] = (folder / "cache").rglob("*.ember")
    entry.write_bytes(entry.read_bytes()[:100])
    again = run(folder, env)
    assert again["origin"] == "compiled" and "damaged cache entry" in again["stderr"]
    assert run(folder, env)["origin"] == "disk"


def test_eight_processes_compiling_the_same_kernel_at_once(project):
    folder, env = project
    code = RUN.format(folder=str(folder), pre="", dtype="float32")
    start = f"import time\nwhile time.time() < {time.time() + 2.0}: pass\n"
    procs = [
        subprocess.Popen([sys.executable, "-c", start + code], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(8)
    ]  # fmt: skip
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-800:] for o in outs]
    results = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    assert all(r["y"] == 3.0 for r in results)
    assert all("Warning" not in o[1] for o in outs), [o[1] for o in outs]
    assert len(list((folder / "cache").rglob("*.ember"))) == 1
    assert not list((folder / "cache").rglob(".tmp-*"))
    assert run(folder, env)["origin"] == "disk"


def _read_only_prefix(path) -> tuple[str, ...] | None:
    """A command prefix that runs the child with ``path`` mounted read-only (Linux mount
    namespaces), or None where that is not possible."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    script = f'mount --bind {path} {path} && mount -o remount,bind,ro {path} && exec "$@"'
    prefix = (unshare, "-m", "sh", "-c", script, "sh")
    probe = subprocess.run([*prefix, "touch", str(path / "probe")], capture_output=True)
    return prefix if probe.returncode != 0 and b"Read-only" in probe.stderr else None


def test_a_read_only_cache_directory(project):
    folder, env = project
    run(folder, env)
    cache = folder / "cache"
    prefix = _read_only_prefix(cache)
    if prefix is None:
        pytest.skip("cannot mount a read-only directory here")
    before = sorted(p.name for p in cache.rglob("*"))
    hit = run(folder, env, prefix=prefix)
    miss = run(folder, env, prefix=prefix, dtype="float64")
    assert hit["origin"] == "disk" and hit["stats"]["compiles"] == 0 and hit["y"] == 3.0
    assert miss["origin"] == "compiled" and miss["y"] == 3.0
    assert "Warning" not in hit["stderr"] + miss["stderr"]
    assert sorted(p.name for p in cache.rglob("*")) == before


EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "precompiled_package")


def test_the_example_package_ships_its_kernels(tmp_path, backend_name):
    """examples/precompiled_package: build its bundle, then use the package from a fresh
    process with the cache off - every kernel is a bundle hit."""
    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, pkg)
    env = dict(os.environ, EMBER_BACKEND=backend_name, EMBER_CACHE="0", EMBER_WARMUP="0")
    env["PYTHONPATH"] = os.pathsep.join([str(pkg / "src"), env.get("PYTHONPATH", "")])
    build = subprocess.run([sys.executable, str(pkg / "build_bundle.py")], env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert build.returncode == 0, build.stderr[-2000:]
    assert "recorded 4 kernels" in build.stdout
    use = (
        "import json, ember, ember_example\n"
        "r = ember_example.workload()\n"
        "print(json.dumps({'r': r, 'stats': ember.cache.stats()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", use], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["stats"]["compiles"] == 0 and got["stats"]["bundle_hits"] == 4
    assert got["r"][0] == pytest.approx(got["r"][1], rel=1e-5) and got["r"][0] > 0


def test_precompile_fills_the_cache_for_the_next_process(project, tmp_path):
    """``ember precompile``'s engine on the demo kernels: a second process finds them all."""
    _, env = project
    code = (
        "import json\nfrom ember.precompile import precompile, demo_examples\n"
        f"r = precompile(demo_examples(), bundle={str(tmp_path / 'demo.ember')!r})\n"
        "print(json.dumps(r))\n"
    )
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=600)  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[0]["failed"] == 0 and runs[0]["compiled"] == runs[0]["kernels"] == 5
    assert runs[1]["compiled"] == 0 and runs[1]["cached"] == 5
    assert (tmp_path / "demo.ember").stat().st_size > 0
