"""Background warmup: on, off, failing, joined, preloading, and across os.fork().

Every test runs Ember in a fresh process (the warmup starts at import).  Without a CUDA
device, ``EMBER_WARMUP=force`` still runs the CUDA warmup: its imports work and its driver
step fails, which is the failure path; the OpenCL warmup (PoCL) is the success path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ember.runtime import backend as registry


def run(code: str, timeout: float = 120, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line, returned parsed."""
    full = dict(os.environ, **env)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=full, timeout=timeout,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def cuda_available() -> bool:
    try:
        registry.get("cuda")
    except Exception:
        return False
    return True


def opencl_available() -> bool:
    try:
        registry.get("opencl")
    except Exception:
        return False
    return True


needs_opencl = pytest.mark.skipif(not opencl_available(), reason="needs the OpenCL backend")

SPY = """
import json, sys, threading
main = threading.main_thread()
on_main = []

class Spy:
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is main:
            on_main.append(name)
        return None

sys.meta_path.insert(0, Spy())
import ember
# the backends' packages are light (their start-up hooks); their modules are not
heavy = ("numpy", "pyopencl", "cuda.bindings", "cuda.pathfinder", "ember.backends.cuda.",
         "ember.backends.opencl.")
bad = [m for m in on_main if m.startswith(heavy)]
w = ember._warmup.status().get("cuda")
print(json.dumps({"bad": bad, "running": w is not None and not w.done(),
                  "threads": sorted(t.name for t in threading.enumerate()),
                  "started": sorted(t.name for t in w._threads) if w else []}))
"""


def test_import_starts_the_warmup_and_does_no_driver_work_on_the_main_thread():
    got = run(SPY, EMBER_WARMUP="force", EMBER_BACKEND="auto")
    assert got["bad"] == []
    assert got["running"]  # import returned while the warmup runs
    assert got["started"] == ["ember-warmup", "ember-warmup-driver"]


def test_warmup_off():
    got = run(SPY, EMBER_WARMUP="0")
    assert got["bad"] == [] and not got["running"]
    assert not [t for t in got["threads"] if t.startswith("ember")]


def test_warmup_on_without_a_gpu_starts_nothing():
    if cuda_available() or os.path.exists("/dev/nvidiactl"):
        pytest.skip("a CUDA driver is present here")
    got = run(SPY, EMBER_WARMUP="1")
    assert not [t for t in got["threads"] if t.startswith("ember")]


FAILURE = """
import json, ember
w = ember._warmup.status()["cuda"]
w.wait(60)
errors = []
for use in (lambda: ember.warmup(backend="cuda"), lambda: ember.get_backend("cuda")):
    try:
        use()
        errors.append(None)
    except Exception as exc:
        errors.append([type(exc).__name__, str(exc)])
print(json.dumps({"errors": errors, "recorded": repr(w.error)}))
"""


def test_a_failed_warmup_raises_nothing_at_import_and_the_same_error_at_first_use():
    if cuda_available():
        pytest.skip("CUDA works here: the warmup does not fail")
    got = run(FAILURE, EMBER_WARMUP="force", EMBER_BACKEND="cuda")
    blocking, first_use = got["errors"]
    assert blocking == first_use and blocking[0] == "BackendUnavailableError"
    assert blocking[1] in got["recorded"]  # the warmup met the very same error


@pytest.mark.gpu
def test_a_successful_cuda_warmup():
    got = run(
        """
        import json, time, ember
        w = ember.warmup()
        print(json.dumps({"error": repr(w.error), "steps": list(w.timings)}))
        """,
        EMBER_WARMUP="1",
    )
    assert got["error"] == "None" and {"driver", "backend", "versions"} <= set(got["steps"])


def test_auto_selection_is_the_same_with_and_without_warmup():
    code = "import json, ember; print(json.dumps(ember.get_backend().name))"
    assert run(code, EMBER_WARMUP="force") == run(code, EMBER_WARMUP="0")


@needs_opencl
def test_many_threads_joining_the_warmup_do_not_deadlock():
    got = run(
        """
        import json, threading, ember
        names = []
        def use():
            names.append(ember.get_backend().name)
        ts = [threading.Thread(target=use) for _ in range(8)]
        for t in ts: t.start()
        for t in ts: t.join(60)
        print(json.dumps(names))
        """,
        timeout=90,
        EMBER_WARMUP="force",
        EMBER_BACKEND="opencl",
    )
    assert got == ["opencl"] * 8


RECORD = """
import json, sys, numpy as np, ember
sys.path.insert(0, {folder!r})
from kmod import axpy
x = ember.asarray(np.ones(64, np.float32))
with ember.cache.record() as rec:
    axpy.launch(64)(np.float32(2), x, x)
rec.save({bundle!r})
print(json.dumps(ember.cache.stats()))
"""

USE = """
import json, sys, numpy as np, ember
sys.path.insert(0, {folder!r})
if {bundle!r}:
    ember.cache.load_bundle({bundle!r})
w = ember.warmup(backend="opencl")
from kmod import axpy
x = ember.asarray(np.ones(64, np.float32))
axpy.launch(64)(np.float32(2), x, x)
spec = axpy.specialize(np.float32(2), x, x)
print(json.dumps({{"origin": spec.origin, "stats": ember.cache.stats(),
                  "preloaded": w.preloaded, "y": float(x.to_numpy()[3])}}))
"""

KMOD = """
import ember

@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]
"""


@needs_opencl
def test_the_warmup_loads_the_modules_of_loaded_bundles(tmp_path):
    (tmp_path / "kmod.py").write_text(KMOD)
    bundle = str(tmp_path / "k.ember")
    env = {"EMBER_BACKEND": "opencl", "EMBER_CACHE": "0", "EMBER_WARMUP": "0"}
    run(RECORD.format(folder=str(tmp_path), bundle=bundle), **env)
    got = run(USE.format(folder=str(tmp_path), bundle=bundle), **env)
    assert got["origin"] == "preloaded" and got["preloaded"] == 1
    assert got["stats"]["compiles"] == 0 and got["y"] == 3.0


@needs_opencl
def test_the_warmup_preloads_what_the_program_used_last_time(tmp_path):
    """The profile: a program's second run finds its kernel's module already loaded."""
    (tmp_path / "kmod.py").write_text(KMOD)
    script = tmp_path / "prog.py"
    script.write_text(USE.format(folder=str(tmp_path), bundle=""))
    env = dict(os.environ, EMBER_BACKEND="opencl", EMBER_CACHE="1", EMBER_WARMUP="0",
               EMBER_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             env=env, timeout=120)  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[0]["origin"] == "compiled" and runs[0]["stats"]["compiles"] == 1
    assert runs[1]["origin"] == "preloaded" and runs[1]["stats"]["compiles"] == 0


# ------------------------------------------------------------------ fork

FORK = """
import json, os, signal, sys, time
import ember
{parent}
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    signal.alarm(30)  # a hang fails the test instead of blocking it
    try:
        {child}
        result = ["ok", ""]
    except Exception as exc:
        result = [type(exc).__name__, str(exc)]
    os.write(w, json.dumps(result).encode())
    os._exit(0)
os.close(w)
data = os.read(r, 100000)
_, status = os.waitpid(pid, 0)
{after}
print(json.dumps({{"child": json.loads(data or "null"), "status": status}}))
"""


def fork(parent="", child="pass", after="", **env) -> dict:
    code = FORK.format(parent=parent, child=child, after=after)
    return run(code, timeout=90, **env)


@needs_opencl
def test_a_forked_child_gets_a_clear_error_when_it_touches_a_device_of_the_parent():
    got = fork(
        parent="ember.zeros(4, ember.float32); import numpy",
        child="ember.zeros(4, ember.float32)",
        after="ember.zeros(4, ember.float32)",  # the parent keeps working
        EMBER_BACKEND="opencl",
        EMBER_WARMUP="0",
    )
    kind, message = got["child"]
    assert got["status"] == 0 and kind == "BackendUnavailableError"
    assert "fork" in message and "spawn" in message


def test_a_fork_during_the_warmup_never_hangs_the_child():
    got = fork(
        child="ember.warmup(blocking=True, backend='cuda')",
        EMBER_BACKEND="cuda",
        EMBER_WARMUP="force",
    )
    assert got["status"] == 0
    kind, message = got["child"]
    if cuda_available():  # the parent's CUDA, if the warmup had started it, is refused
        assert kind == "ok" or (kind == "BackendUnavailableError" and "fork" in message), got
    else:
        assert kind == "BackendUnavailableError"


def test_a_forked_child_that_does_not_touch_the_device_is_fine():
    got = fork(child="import numpy; numpy.ones(3).sum()", EMBER_WARMUP="force")
    assert got == {"child": ["ok", ""], "status": 0}


@pytest.mark.gpu
def test_a_forked_child_using_an_array_of_the_parent_gets_an_error_not_a_hang():
    got = fork(
        parent="import numpy as np; x = ember.asarray(np.ones(4, np.float32)); (x * 2).to_numpy()",
        child="(x * 2).to_numpy()",
        EMBER_BACKEND="cuda",
    )
    assert got["status"] == 0 and got["child"][0] != "ok"


# A fork while a warmup step runs, with `logging` imported after Ember: Python runs the fork
# hooks of later imports first, so logging's hook held its lock while Ember's waited for
# the step, whose import (pyopencl, asyncio) waited for that lock - parent and child hung
# (issue 18).  The fork now waits at its audit event, before any fork hook.
FORK_DURING_STEP = """
import json, os, subprocess, sys, time
import ember
import logging  # after ember: its fork hook is newer than Ember's
w = ember._warmup.status()[{backend!r}]
while "pyopencl" not in sys.modules and not w.done():
    time.sleep(0.001)
during = [1]
{fork}
print(json.dumps({{"during": during, "child": child}}))
"""

FORK_AND_USE = """
r, wfd = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        ember.zeros(3, ember.float32)
        result = "ok"
    except Exception as exc:  # anything but an Ember error fails the test, named
        result = type(exc).__name__ if isinstance(exc, ember.EmberError) else repr(exc)
    os.write(wfd, result.encode())
    os._exit(0)
os.close(wfd)
child = os.read(r, 1000).decode()
os.waitpid(pid, 0)
"""

# subprocess with preexec_fn forks through the fork hooks only (no os.fork audit event)
FORK_BY_SUBPROCESS = """
child = subprocess.run(["true"], preexec_fn=lambda: None).returncode
"""


@pytest.mark.parametrize(
    "backend, module, fork",
    [  # module: one whose import needs logging's lock
        pytest.param("opencl", "pyopencl", FORK_AND_USE, marks=needs_opencl, id="opencl-fork"),
        pytest.param("cuda", "asyncio", FORK_AND_USE, id="cuda-fork"),
        pytest.param(
            "opencl", "pyopencl", FORK_BY_SUBPROCESS, marks=needs_opencl, id="opencl-preexec"
        ),
    ],
)
def test_a_fork_while_a_warmup_step_runs_finishes(backend, module, fork):
    code = FORK_DURING_STEP.format(backend=backend, module=module, fork=fork)
    got = run(code, timeout=60, EMBER_WARMUP="force", EMBER_BACKEND=backend)  # a hang: Timeout
    assert got["during"], "the fork was meant to happen during a warmup step"
    if fork is FORK_BY_SUBPROCESS:
        assert got["child"] == 0
    elif backend == "opencl":
        assert got["child"] in ("ok", "BackendUnavailableError")  # fresh, or the parent's
    else:
        assert got["child"] in ("ok", "BackendUnavailableError"), got  # fresh, or the parent's


MEANWHILE = """
import json, sys, time
import ember.backends.cuda as pkg

def slow_driver():  # the driver step still runs when the program needs the backend
    time.sleep(0.5)
    raise RuntimeError("no driver in this test")

pkg.start_driver = slow_driver
from ember import startup
if {arrays}:
    import ember.array
w = startup.start("cuda")
before = [m for m in ("ember.compiler.kernel", "ember.array.kernels") if m in sys.modules]
startup.join("cuda")
after = [m for m in ("ember.compiler.kernel", "ember.array.kernels") if m in sys.modules]
from ember.frontend import capture
read = sorted(code.co_name for code in list(capture._sources))  # sources read meanwhile
print(json.dumps({{"before": before, "after": after, "ready": w.ready.is_set(), "read": read}}))
"""


@pytest.mark.parametrize("arrays", [True, False])
def test_a_thread_waiting_for_the_driver_imports_its_launch_path_meanwhile(arrays):
    got = run(MEANWHILE.format(arrays=arrays), EMBER_WARMUP="0", EMBER_BACKEND="cuda")
    assert got["before"] == [] and got["ready"]
    expected = (
        ["ember.compiler.kernel", "ember.array.kernels"] if arrays else ["ember.compiler.kernel"]
    )
    assert got["after"] == expected
    assert got["read"] == (["apply", "elem", "map_contiguous", "scal"] if arrays else [])


EXIT_DURING_DRIVER = """
import json, os, sys, time, types
sys.path.insert(0, sys.argv[1])
from ember import startup

marker = os.path.join(sys.argv[1], "driver-done")

def start_driver():  # the driver's start-up (cuInit...): longer than the step beside it
    time.sleep(1.0)
    open(marker, "w").close()

hooks = types.SimpleNamespace(start_driver=start_driver, DRIVER_AFTER="",
                              WARMUP_IMPORTS=("slow_import",))
startup.registry.package = lambda name: hooks
w = startup._warmups["fake"] = startup.Warmup("fake").start()
time.sleep(0.1)  # both steps under way
print(json.dumps({"driver_running": not w._driver_done.is_set()}))
sys.exit(1)  # exits at once, as `ember cache import` does on a bad bundle
"""


def test_an_exit_during_the_driver_step_waits_for_it(tmp_path):
    # the warmup's other thread finishes (stopped after its step) while the driver step still
    # runs: the driver must not be torn down under it (a SIGSEGV in a GPU-suite child)
    (tmp_path / "slow_import.py").write_text("import time\ntime.sleep(0.3)\n")
    out = subprocess.run(
        [sys.executable, "-c", EXIT_DURING_DRIVER, str(tmp_path)],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, EMBER_WARMUP="0"),
    )  # fmt: skip
    assert out.returncode == 1, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"driver_running": True}
    assert (tmp_path / "driver-done").exists()  # the step ran to its end before the exit


COMPILER_IMPORTS = """
import json, sys, types
from ember import startup
from ember.cache import lookup

hooks = types.SimpleNamespace(WARMUP_IMPORTS=("colorsys",), WARMUP_COMPILER=("wave",))
startup.registry.package = lambda name: hooks
lookup.likely_keys = lambda: json.loads(sys.argv[1])
w = startup.Warmup("fake").start()
w.hurry.set()
assert w.finished.wait(30)
print(json.dumps(sorted(k for k in w.timings if k.startswith("import"))))
"""


@pytest.mark.parametrize(
    ("keys", "imports"),
    [([], ["import colorsys", "import wave"]), (["a-cached-kernel"], ["import colorsys"])],
)
def test_the_compiler_is_imported_only_where_a_compile_is_likely(keys, imports):
    # a program whose profile names cached kernels leaves NVRTC's import (25-35 ms of Python
    # work beside its first steps) to a compile that may never come
    out = subprocess.run(
        [sys.executable, "-c", COMPILER_IMPORTS, json.dumps(keys)],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, EMBER_WARMUP="0"),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == imports
