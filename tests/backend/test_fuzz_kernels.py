"""Fuzzed kernels (tests/backend/kernel_fuzz.py): every outcome is a correct result or an
Ember user error naming the right line - never an InternalError, a raw Python exception,
a crash or a hang (issue 18).

The kernels run in a child process with a time limit, so a crash or a hang fails this
test (naming the kernel) instead of the session.  Each kernel is also compiled to PTX for
CUDA (NVRTC needs no GPU) when the backend is not CUDA itself.

Seeded and small by default (``EMBER_FUZZ_KERNELS`` kernels, default 10, seed
``EMBER_FUZZ_SEED``, default 18); for a long run::

    EMBER_FUZZ_KERNELS=300 EMBER_FUZZ_SEED=7 pytest tests/backend/test_fuzz_kernels.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kernel_fuzz import Generator, inputs, module_source, reference

COUNT = int(os.environ.get("EMBER_FUZZ_KERNELS", "10"))
SEED = int(os.environ.get("EMBER_FUZZ_SEED", "18"))
HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = """
import importlib.util, json, sys, traceback
sys.path.insert(0, {here!r})
import numpy as np
import ember
from kernel_fuzz import inputs

spec = importlib.util.spec_from_file_location("fuzz_kernels", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
backend = ember.get_backend({backend!r})
args = inputs({seed})
ptx = {ptx!r}

def outcome(name):
    kernel = getattr(module, name)
    a = {{k: ember.asarray(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}}
    try:
        kernel[1, 64](a["x"], a["y"], a["out"], a["m"], a["r"], a["s"])
        got = {{k: a[k].to_numpy().tolist() for k in ("y", "out", "r")}}
    except ember.InternalError as exc:
        return {{"kind": "internal", "message": str(exc)[:3000]}}
    except ember.EmberError as exc:
        return {{"kind": "ember", "error": type(exc).__name__, "line": getattr(exc, "line", None),
                "message": str(exc)[:1500]}}
    except Exception as exc:
        return {{"kind": "raw", "error": type(exc).__name__,
                "message": traceback.format_exc()[-3000:]}}
    result = {{"kind": "ok", "got": got}}
    if ptx:
        try:
            kernel.inspect(*args.values(), stage="ptx", dialect="cuda")
        except Exception as exc:
            result = {{"kind": "internal" if isinstance(exc, ember.InternalError) else "raw",
                      "message": "CUDA: " + str(exc)[:3000]}}
    return result

for name in {names!r}:
    print("START", name, flush=True)
    print("RESULT", json.dumps({{"name": name, **outcome(name)}}), flush=True)
"""


def _nvrtc() -> bool:
    try:
        from ember.backends.cuda.nvrtc import _nvrtc

        _nvrtc()
    except Exception:
        return False
    return True


def test_fuzzed_kernels_compute_what_python_computes_or_fail_cleanly(backend, tmp_path):
    gen = Generator(SEED)
    cases = [gen.kernel() for _ in range(COUNT)]
    source, starts = module_source(cases)
    path = tmp_path / "fuzz_kernels.py"
    path.write_text(source)
    code = CHILD.format(
        here=HERE, path=str(path), backend=backend.name, seed=SEED,
        ptx=backend.name != "cuda" and _nvrtc(), names=[c.name for c in cases],
    )  # fmt: skip
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=120 + 60 * COUNT,
    )  # fmt: skip
    started = [ln.split()[1] for ln in child.stdout.splitlines() if ln.startswith("START")]
    results = {
        r["name"]: r
        for r in (json.loads(ln[7:]) for ln in child.stdout.splitlines() if ln.startswith("RESULT"))
    }
    assert child.returncode == 0, (
        f"the process died ({child.returncode}) in kernel {started[-1] if started else '?'} "
        f"(seed {SEED}; source in {path}):\n{child.stderr[-3000:]}"
    )
    args = inputs(SEED)
    failures = []
    for case in cases:
        problem = _judge(case, results[case.name], source, starts, args)
        if problem:
            failures.append(f"{case.name} (line {starts[case.name]} of {path}): {problem}")
    assert not failures, f"seed {SEED}:\n" + "\n\n".join(failures)


def _judge(case, result: dict, source: str, starts: dict, args: dict) -> str | None:
    """None when the outcome is right, else what is wrong."""
    kind = result["kind"]
    if kind in ("internal", "raw"):
        return f"{kind} error:\n{result['message']}"
    if case.invalid_line is not None:
        first = starts[case.name] + case.invalid_line - 1
        want = range(first, first + case.invalid_lines)  # any line of the construct
        if kind != "ember":
            return f"an unsupported construct (line {first}) compiled"
        if result["line"] not in want:
            return f"the error names line {result['line']}, not {first}:\n{result['message']}"
        return None
    if kind == "ember":
        return f"a valid kernel was refused:\n{result['message']}"
    return _compare(case.name, result["got"], source, args)


def _compare(name: str, got: dict, source: str, args: dict) -> str | None:
    ref = reference(source, name, args)
    r32, r64 = ref["float32"], ref["float64"]
    if got["r"] != r32["r"].tolist():
        return f"r (int32) differs: {got['r']} != {r32['r'].tolist()}"
    for key in ("y", "out"):
        mine = np.asarray(got[key], np.float64)
        exact, single = r64[key].astype(np.float64), r32[key].astype(np.float64)
        # float32 rounding (and fused multiply-adds) may differ from NumPy's order: allow a
        # few times what float32 itself loses against float64 here, plus a few ulps
        tol = 8 * np.abs(single - exact) + 1e-5 * (np.abs(exact) + 1)
        bad = ~(np.abs(mine - exact) <= tol)
        if bad.any():
            i = int(np.argmax(bad))
            return (
                f"{key}[{i}] = {mine[i]!r}, Python computes {single[i]!r} ({exact[i]!r} in float64)"
            )
    return None


@pytest.mark.parametrize("seed", range(40))
def test_the_generator_makes_valid_python(seed):
    """Every generated kernel is valid Python (what Python refuses never reaches Ember)."""
    gen = Generator(seed)
    source, _ = module_source([gen.kernel() for _ in range(5)])
    compile(source, "<fuzz>", "exec")
