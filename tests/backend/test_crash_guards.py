"""What used to kill the process (issue 18) is now an Ember error, on every backend.

* a damaged binary (truncated, sizes rewritten) handed to ``load_module``;
* a cache entry whose binary was truncated and its checksum recomputed, also when the
  warmup preloads it in a program that merely imports Ember;
* a binary that once crashed a process in the driver (a load note left behind);
* a grid larger than the device takes (SIGILL / an assert in PoCL).

Each runs in a child process: if a guard fails, the child dies, not the test session.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def child(code: str, timeout: float = 300, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line, returned parsed."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **env),
    )  # fmt: skip
    assert out.returncode == 0, f"the child died ({out.returncode}):\n{out.stderr[-3000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


DAMAGED_BINARIES = """
import json, struct, sys
sys.path.insert(0, {here!r})
import ember
from device_work import SOURCES
be = ember.get_backend({backend!r})
good = be.compile(SOURCES[be.dialect], "add")
n = len(good)
cuts = sorted({{0, 1, 7, 8, 16, 40, 64, 100, n // 4, n // 2, 3 * n // 4, n - 100, n - 8, n - 1}})
damaged = [good[:c] for c in cuts if 0 <= c < n]
for at in range(8, min(n - 8, 400), 8):  # one size field after another blown up
    bad = bytearray(good)
    struct.pack_into("<I", bad, at, 0x7FFFFFF0)
    damaged.append(bytes(bad))
refused = loaded = 0
for binary in damaged:
    try:
        module = be.load_module(binary)
        module.function("add", ["ptr", ember.int32, ember.int64])
        loaded += 1  # what a check cannot see may still load (and then works or raises)
    except ember.EmberError:
        refused += 1
be.load_module(good).function("add", ["ptr", ember.int32, ember.int64])
print(json.dumps({{"refused": refused, "loaded": loaded, "truncated": len(cuts)}}))
"""


def test_damaged_binaries_raise_instead_of_crashing(backend):
    got = child(DAMAGED_BINARIES.format(here=HERE, backend=backend.name))
    assert got["refused"] >= got["truncated"]  # every truncation at least


CACHE_RUN = """
import json, os, sys, time, warnings
import numpy as np
import ember
sys.path.insert(0, os.path.dirname(__file__))
from kernels_mod import inc

warnings.simplefilter("always")
caught = []
warnings.showwarning = lambda m, *a, **k: caught.append(str(m))
w = ember._warmup.status().get({backend!r})
if w is not None:
    w.wait(120)  # the preload is over (or was refused): the program then uses the kernel
x = ember.asarray(np.arange(8, dtype=np.float32))
inc[1, 8](x)
print(json.dumps({{"result": x.to_numpy().tolist(), "stats": ember.cache.stats(),
                  "warnings": caught, "preloaded": w.preloaded if w else None}}))
"""

KERNELS_MOD = """
import ember

@ember.kernel
def inc(x):
    i = ember.global_id()
    if i < x.shape[0]:
        x[i] = x[i] + 1.0
"""


@pytest.fixture
def program(tmp_path, backend):
    """A program file (the warmup preloads what a program used last time) and its env."""
    (tmp_path / "kernels_mod.py").write_text(KERNELS_MOD)
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(CACHE_RUN.format(backend=backend.name)))
    env = dict(
        os.environ, EMBER_CACHE="1", EMBER_CACHE_DIR=str(tmp_path / "cache"),
        EMBER_BACKEND=backend.name, EMBER_WARMUP="force",
    )  # fmt: skip

    def run() -> dict:
        out = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
        )
        assert out.returncode == 0, f"the program died ({out.returncode}):\n{out.stderr[-3000:]}"
        return json.loads(out.stdout.strip().splitlines()[-1])

    return run, tmp_path / "cache"


def _only_entry(cache_dir):
    from ember.cache.entry import Entry

    [path] = list(cache_dir.rglob("*.ember"))
    return path, Entry.from_bytes(path.read_bytes())


def test_a_truncated_cached_binary_with_a_good_checksum_is_recompiled_not_fatal(program):
    run, cache_dir = program
    first = run()
    assert first["result"] == [float(i + 1) for i in range(8)]
    assert first["stats"]["compiles"] == 1
    path, entry = _only_entry(cache_dir)
    entry.binary = entry.binary[: len(entry.binary) // 2]  # damaged...
    path.write_bytes(entry.to_bytes())  # ...with every checksum recomputed
    second = run()  # the warmup preloads it first: refused, not a crash
    assert second["result"] == [float(i + 1) for i in range(8)]
    assert second["stats"]["compiles"] == 1 and second["stats"]["load_failures"] == 1
    assert any("cannot be loaded" in w and "BinaryError" in w for w in second["warnings"])
    third = run()  # the recompiled binary replaced it
    assert third["stats"]["compiles"] == 0 and third["preloaded"] == 1


def test_a_binary_that_crashed_a_process_in_the_driver_is_never_loaded_again(program):
    run, cache_dir = program
    run()
    path, entry = _only_entry(cache_dir)
    crash = f"""
    import os
    from ember.cache import disk
    from ember.cache.entry import Entry
    d = disk.DiskCache({str(cache_dir)!r})
    entry = Entry.from_bytes(open({str(path)!r}, "rb").read())
    d.begin_load(entry.key, entry.binary)
    os._exit(139)  # as if the driver had crashed inside the load
    """
    died = subprocess.run([sys.executable, "-c", textwrap.dedent(crash)], timeout=120)
    assert died.returncode == 139
    after = run()  # neither preloaded nor loaded: compiled afresh
    assert after["preloaded"] in (0, None) and after["stats"]["compiles"] == 1
    assert after["result"] == [float(i + 1) for i in range(8)]


HUGE_GRID = """
import json, sys
sys.path.insert(0, {here!r})
import ember
from device_work import SOURCES
be = ember.use_backend({backend!r})  # current for the rest: y is made on it too
f = be.load_module(be.compile(SOURCES[be.dialect], "add")).function(
    "add", ["ptr", ember.int32, ember.int64])
y = ember.zeros(4, ember.int32)
ptr = be.native_pointer(y.buffer)
errors = []
for grid in [(2**32, 1, 1), (2**20, 2**20, 1), (1, 2**16, 2**16), (2**31, 2**31, 2**31)]:
    try:
        f.launch(grid, (1, 1, 1), [ptr, 1, 0])
        errors.append(None)
    except ember.LaunchError as exc:
        errors.append(str(exc))
be.synchronize()
f.launch((1, 1, 1), (4, 1, 1), [ptr, 1, 4])  # the device still works
print(json.dumps({{"errors": errors, "y": y.to_numpy().tolist()}}))
"""


def test_a_grid_larger_than_the_device_takes_is_a_launch_error(backend):
    got = child(HUGE_GRID.format(here=HERE, backend=backend.name))
    assert all(e is not None and "the device allows" in e for e in got["errors"]), got
    assert got["y"] == [1, 1, 1, 1]


def test_objects_used_after_close_raise_an_ember_error(backend):
    """Issue 18: recording an event on a closed stream was a bare ValueError."""
    import ember

    stream = backend.create_stream()
    stream.close()
    event = backend.create_event()
    with pytest.raises(ember.ClosedError, match="stream was closed"):
        event.record(stream)
    buffer = backend.alloc(16)
    buffer.close()
    with pytest.raises(ember.ClosedError) as info:
        backend.copy_from_host(buffer, 0, bytearray(16))
    assert isinstance(info.value, ember.EmberError) and isinstance(info.value, ValueError)


WILD_INDEX = """
import json, signal
import ember
be = ember.use_backend("cpu")

@ember.kernel
def wild(x, n, off):
    i = ember.global_id()
    if i < n:
        x[off + i % 1024] = 1.0

x = ember.zeros(1 << 20, ember.float32)
# indices that point into the first page of the address space, which is never mapped (the
# test writes nowhere else: a wild index into mapped memory corrupts it, caught or not)
nowhere = -(be.native_pointer(x.buffer) // 4)
seen = []
# one thread's launch, and a launch shared with the helper threads
for grid, n in ((1, 4), (4096, 1 << 20)):
    try:
        wild[grid, 256](x, n, nowhere)
        ember.synchronize()
        seen.append(None)
    except ember.DriverError as exc:
        seen.append([exc.code_name, exc.code == signal.SIGSEGV, str(exc)])
wild[1, 4](x, 4, 0)  # the process and the device go on
print(json.dumps({"seen": seen, "x": x[:5].to_numpy().tolist()}))
"""


def _guarded_cpu(backend):
    if backend.name != "cpu":
        pytest.skip("the fault guard is the cpu backend's (kernels run in the process)")
    pytest.importorskip("ember.backends.cpu._guard", reason="the _guard stub is not built")


def test_a_cpu_kernel_fault_is_an_error_of_its_launch_not_the_end_of_the_process(backend, tmp_path):
    _guarded_cpu(backend)
    script = tmp_path / "wild.py"  # kernels are read from their file
    script.write_text(WILD_INDEX)
    env = dict(os.environ, EMBER_CPU_THREADS="2", EMBER_DIAGNOSTICS="off")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env=env)  # fmt: skip
    assert out.returncode == 0, f"the child died ({out.returncode}):\n{out.stderr[-3000:]}"
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(got["seen"]) == 2 and all(s is not None for s in got["seen"]), got
    for name, is_segv, message in got["seen"]:
        assert name == "SIGSEGV" and is_segv
        assert "kernel 'wild' accessed memory outside its arrays" in message
        assert "boundscheck=True" in message and "outputs are incomplete" in message
    assert got["x"] == [1.0] * 4 + [0.0]


def test_a_fault_outside_kernels_still_ends_the_process(backend):
    """The guard hands faults it did not catch to the handler before it: the default action
    (the process ends with SIGSEGV), or Python's faulthandler, which prints the stack."""
    _guarded_cpu(backend)
    code = (
        "import signal, ember; ember.use_backend('cpu'); x = ember.ones(2) * 2;"
        "from ember.backends.cpu import _guard; _guard.probe_fault(signal.SIGSEGV)"
    )
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert plain.returncode == -signal.SIGSEGV, plain.stderr[-2000:]
    traced = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", code], capture_output=True, timeout=120
    )
    assert traced.returncode == -signal.SIGSEGV
    assert b"Segmentation fault" in traced.stderr and b"<string>" in traced.stderr
