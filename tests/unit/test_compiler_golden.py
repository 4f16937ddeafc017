"""Golden tests of generated source, every dialect; every CUDA source is compiled by NVRTC
for sm_90, every OpenCL source built by an OpenCL device when one is here, and every cpu
source compiled by zig's clang when the ziglang wheel is installed.

Update the files after an intended change with ``EMBER_UPDATE_GOLDEN=1 pytest <this file>``
and review the diff.
"""

from __future__ import annotations

import os
import pathlib

import golden_kernels as gk
import numpy as np
import pytest

import ember

GOLDEN = pathlib.Path(__file__).parent / "golden"
F32 = np.zeros(8, np.float32)
CASES = {
    "axpy": (gk.axpy, (2.0, F32, F32)),
    "stencil": (gk.stencil, (np.zeros((4, 6))[:, ::2], np.zeros((4, 3)))),
    "matmul": (gk.matmul, (np.zeros((8, 8), np.float32),) * 3),
    "histogram": (gk.histogram, (np.zeros(8, np.int32), F32)),
    "mixed": (gk.mixed, (np.zeros(8, np.int32), np.zeros(8, np.float16), np.zeros(8, np.int64))),
    "warp_total": (gk.warp_total, (F32, F32)),
    "views": (gk.views, (np.zeros((8, 6), np.float32), F32, 1, 4)),
    "warps": (gk.warps, (F32, F32)),
    "peers": (gk.peers, (F32, np.zeros(8, np.int64), F32)),
    "atomics": (
        gk.atomics,
        (np.zeros(8, np.int8), np.zeros(8, np.float16), np.zeros(2, np.uint32)),
    ),  # fmt: skip
    "template": (gk.template, (F32, gk.pair, ember.float32, F32, np.zeros(8, np.int32))),
    "grid_steps": (gk.grid_steps, (F32, 3)),
}
DIALECT_EXT = {"cuda": "cu", "opencl": "cl", "cpu": "c"}
# no cooperative launch: refused (test below)
SKIP = {("grid_steps", "opencl"), ("grid_steps", "cpu")}


def generated(name: str, dialect: str) -> str:
    kernel, args = CASES[name]
    return kernel.inspect(*args, stage="source", dialect=dialect)


PARAMS = [(n, d) for n in CASES for d in DIALECT_EXT if (n, d) not in SKIP]


@pytest.mark.parametrize("name, dialect", PARAMS)
def test_generated_source_matches_golden(name, dialect):
    source = generated(name, dialect)
    path = GOLDEN / f"{name}.{DIALECT_EXT[dialect]}"
    if os.environ.get("EMBER_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
    assert source == path.read_text(), f"generated source changed; see {path}"


def test_sources_are_readable():
    source = generated("axpy", "cuda")
    assert "// golden_kernels.py:19  y[i] = a * x[i] + y[i]" in source
    assert "y.data[i] = (float)a * x.data[i] + y.data[i];" in source
    assert 'extern "C" __global__ void axpy(double a, float* x_data' in source


@pytest.mark.parametrize("name", [n for n, d in PARAMS if d == "cuda"])
def test_cuda_source_compiles_with_nvrtc_for_sm90(name):
    nvrtc = pytest.importorskip("ember.backends.cuda.nvrtc")
    try:
        out = nvrtc.compile_program(generated(name, "cuda"), "sm_90", name)
    except ember.BackendUnavailableError as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    assert out.binary[:4] == b"\x7fELF"


def _opencl_backend():
    from ember.runtime import backend as registry

    try:
        return registry.get("opencl")
    except ember.EmberError as exc:
        pytest.skip(f"no OpenCL device: {exc}")


@pytest.mark.parametrize("name", [n for n, d in PARAMS if d == "opencl"])
def test_opencl_source_builds(name):
    be = _opencl_backend()
    assert be.compile(generated(name, "opencl"), name)


@pytest.mark.parametrize("name", [n for n, d in PARAMS if d == "cpu"])
def test_cpu_source_compiles(name):
    try:
        from ember.backends.cpu import toolchain

        toolchain.zig_path()
    except ember.BackendUnavailableError as exc:
        pytest.skip(f"no C compiler: {exc}")
    binary, seconds = toolchain.compile_shared(generated(name, "cpu"), name)
    assert binary[:4] == b"\x7fELF" or binary[:2] == b"MZ" or len(binary) > 1000


def test_grid_sync_is_refused_without_cooperative_launch():
    with pytest.raises(ember.UnsupportedFeatureError, match=r"two launches"):
        generated("grid_steps", "opencl")


def test_warp_operations_are_emulated_without_subgroups():
    source = generated("warp_total", "opencl")  # the default OpenCL target has none
    assert "__local uchar* em_dyn" in source and "em_wxchg(em_wscratch" in source


def test_ir_and_ptx_stages():
    text = gk.axpy.inspect(2.0, F32, F32, stage="ir", dialect="cuda")
    assert "kernel axpy(a: Python float, x: array(float32, 1d, contiguous)" in text
    assert "y[i] = ((float32(a) * x[i]) + y[i])" in text
    try:
        ptx = gk.axpy.inspect(2.0, F32, F32, stage="ptx", dialect="cuda")
    except ember.BackendUnavailableError as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    assert ".visible .entry axpy(" in ptx and "sm_90" in ptx


def test_cubin_info_without_a_gpu():
    try:
        info = gk.matmul.inspect(*CASES["matmul"][1], stage="cubin-info", dialect="cuda")
    except ember.BackendUnavailableError as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    assert info["arch"] == "sm_90" and info["bytes"] > 1000


def test_generating_code_leaves_every_captured_ast_as_it_was():
    """Captures of one code object share its parsed AST (frontend/capture.py): typing and
    generating code for every golden kernel, in every dialect, must not change any of the
    trees it reads (the kernels' own from before their first typing, the device functions'
    from before a second one)."""
    import ast

    def dumps(trees):
        return {i: ast.dump(t, include_attributes=True) for i, t in trees.items()}

    def generate_all(kernels):
        for kernel, (_, args) in zip(kernels, CASES.values(), strict=True):
            for dialect in ("cuda", "opencl"):
                if (kernel.__name__, dialect) not in SKIP:
                    kernel.inspect(*args, stage="source", dialect=dialect)

    kernels = [ember.kernel(k.py_func) for k, _ in CASES.values()]
    own = {id(k.captured.tree): k.captured.tree for k in kernels}
    untyped = dumps(own)
    generate_all(kernels)
    assert dumps(own) == untyped
    trees = {id(c.tree): c.tree for k in kernels for c in (k.captured, *k._captures.values())}
    assert len(trees) > len(kernels)  # the device functions' trees are in it too
    before = dumps(trees)
    generate_all(kernels)
    assert dumps(trees) == before
