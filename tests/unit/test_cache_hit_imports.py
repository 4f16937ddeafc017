"""A kernel from the cache imports none of the compiler: a fresh process's first array operation
with a warm cache loads the binary and launches it, and the IR, the passes, the emitter and the
slow-path analysis stay unimported (class creation in ``frontend/ir.py`` alone was ~12 ms of
a ~200 ms first operation, issue 19)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

# Modules that only a compile needs (the typer, the IR and its passes, the C emitter and its
# helpers, the slow-path analysis of the IR).
COMPILE_ONLY = (
    "ember.frontend.ir",
    "ember.frontend.passes",
    "ember.frontend.rewrite",
    "ember.frontend.operators",
    "ember.frontend.values",
    "ember.frontend.typer",
    "ember.codegen.emitter",
    "ember.codegen.helpers",
    "ember.codegen.atomics",
    "ember.codegen.runtime_checks",
    "ember.codegen.text",
    "ember.codegen.workgroup",
    "ember.diagnostics.findings",
)

FIRST_OP = f"""
import json, sys
import ember
from ember.cache import lookup
(ember.ones(1 << 20) * 2 + 1).to_numpy()
print(json.dumps({{"compiles": lookup.stats.compiles,
                  "imported": [m for m in {COMPILE_ONLY!r} if m in sys.modules]}}))
"""


def _run(code: str, **env) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env=dict(os.environ, **env),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_names_are_modules():
    assert all(importlib.util.find_spec(m) is not None for m in COMPILE_ONLY)


def test_a_first_op_from_a_warm_cache_imports_no_compiler(tmp_path):
    """The cpu backend: the first process compiles and fills the cache, the second only
    loads."""
    pytest.importorskip("ziglang", reason="the cpu backend needs the ziglang wheel")
    env = {"EMBER_BACKEND": "cpu", "EMBER_CACHE": "1", "EMBER_CACHE_DIR": str(tmp_path)}
    cold = _run(FIRST_OP, **env)
    assert cold["compiles"] >= 1 and "ember.frontend.ir" in cold["imported"]
    warm = _run(FIRST_OP, **env)
    assert warm["compiles"] == 0
    assert warm["imported"] == []


def test_the_launch_path_of_the_cuda_backend_imports_no_compiler():
    """The modules a CUDA cache hit runs, imported without a device (cuda-bindings imports
    without one)."""
    pytest.importorskip("cuda.bindings", reason="cuda-bindings is not installed")
    code = (
        "import json, sys\n"
        "import ember, ember.array, ember.compiler.kernel, ember.backends.cuda.backend\n"
        f"print(json.dumps({{'imported': [m for m in {COMPILE_ONLY!r} if m in sys.modules]}}))\n"
    )
    assert _run(code, EMBER_WARMUP="0")["imported"] == []
