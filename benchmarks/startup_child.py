"""One fresh-process start-up measurement (run by benchmarks/startup.py; prints RESULT json).

Usage: ``python benchmarks/startup_child.py IMPL SCENARIO``

IMPL: ``ember``, ``raw`` (cuda.bindings: cubin from $PEER_CACHE, else NVRTC), ``cupy``
(``x * 2 + 1``), ``cupy_raw`` (RawKernel axpy), ``torch`` (``x * 2 + 1``), ``triton`` (axpy).
SCENARIO: ``import``; ``first`` (the first kernel right after the import); ``op`` (the first
array operation, ``ones(n) * 2 + 1``, right after the import); ``setup`` (the first kernel
after $SETUP_S seconds of NumPy work); ``loop`` (a pure-Python loop for $LOOP_S seconds right
after the import: iterations); ``record`` (Ember: record the first kernel into the bundle
$STARTUP_BUNDLE).  $STARTUP_BUNDLE also makes Ember load that bundle
right after its import (counted in the first kernel's time, as a package would do it).

The method of shared/peers/peers.py: ``T0`` at the very top, ``import_s`` up to the end of
the imports, ``first_kernel_s`` from there to the kernel's completion (synchronized),
``total_s`` from ``T0``.  Every implementation has NumPy imported before its clocks start
(except in the ``import`` and ``loop`` scenarios); Ember's ``import_s`` is ``import ember``
alone, the floor's is ``from cuda.bindings import driver`` alone, so ``import_first_s``
(their sum) compares the two including the import of the driver binding.
"""

import time

T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

N = 1 << 20
AXPY_CU = r"""extern "C" __global__ void axpy(float a, const float* x, float* y, long long n){
  long long i = blockIdx.x*(long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a*x[i] + y[i]; }
"""


def user_setup(seconds: float) -> None:
    """Simulated start-up work of a program: NumPy (BLAS and sorting, which release the GIL
    in their inner loops, and the array glue around them, which does not)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((384, 384), dtype=np.float32)
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        a = np.tanh(a @ a.T / 384.0)
        np.sort(a, axis=1)
        a = a + rng.standard_normal(a.shape, dtype=np.float32) * 0.01


def python_loop(seconds: float) -> int:
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        for _ in range(1000):
            n += 1
    return n


# ------------------------------------------------------------------ Ember


def define_kernel(ember):
    @ember.kernel
    def axpy(a, x, y):
        i = ember.global_id()
        if i < x.shape[0]:
            y[i] = a * x[i] + y[i]

    return axpy


def ember_case(scenario: str) -> dict:
    t0 = T0
    if scenario not in ("import", "loop"):  # NumPy is imported before t1, as for the floor
        import numpy  # noqa: F401

        t0 = time.perf_counter()
    import ember

    t1 = time.perf_counter()
    out = {"import_s": t1 - t0}
    if scenario == "import":
        return out
    if scenario == "loop":
        n = python_loop(float(os.environ.get("LOOP_S", "0.3")))
        w = next(iter(ember._warmup.status().values()), None)
        out.update(iters=n, warmup_done=bool(w and w.done()))
        if w is not None:
            out["warmup_cpu_ms"] = w._cpu * 1e3
        return out
    if scenario == "op":
        t2 = time.perf_counter()
        y = ember.ones(N, ember.float32) * 2 + 1
        ember.synchronize()
        t3 = time.perf_counter()
        assert float(y.to_numpy()[0]) == 3.0
        out.update(first_kernel_s=t3 - t2, total_s=t3 - T0, import_first_s=t3 - t0)
        return out
    bundle = os.environ.get("STARTUP_BUNDLE")
    if scenario == "setup":  # a program defines its kernels as it imports, then sets up
        axpy = define_kernel(ember)
        user_setup(float(os.environ.get("SETUP_S", "0.2")))
        out["setup_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    if bundle and scenario != "record":
        ember.cache.load_bundle(bundle)
    import numpy as np

    if scenario != "setup":
        axpy = define_kernel(ember)
    x = ember.asarray(np.ones(N, np.float32))
    y = ember.asarray(np.ones(N, np.float32))
    if scenario == "record":
        with ember.cache.record() as rec:
            axpy.launch(N)(np.float32(2), x, y)
        rec.save(bundle)
    else:
        axpy.launch(N)(np.float32(2), x, y)
    ember.synchronize()
    t3 = time.perf_counter()
    assert float(y.to_numpy()[0]) == 3.0
    spec = axpy.specialize(np.float32(2), x, y)
    w = ember._warmup.status().get(ember.get_backend().name)
    out.update(first_kernel_s=t3 - t2, total_s=t3 - T0, origin=spec.origin)
    if scenario == "first":
        out["import_first_s"] = t3 - t0
    out.update(stats=ember.cache.stats(), warmup=None if w is None else dict(w.timings))
    return out


# ------------------------------------------------------------------ peers


def raw_case(scenario: str) -> dict:
    """The floor: driver API directly; the cubin from a disk cache when present, else NVRTC."""
    import numpy as np

    t0 = time.perf_counter() if scenario not in ("import", "loop") else T0
    from cuda.bindings import driver as cu

    t1 = time.perf_counter()
    out = {"import_s": t1 - t0}
    if scenario == "import":
        return out
    if scenario == "setup":
        user_setup(float(os.environ.get("SETUP_S", "0.2")))
    t2 = time.perf_counter()

    def ck(r):
        if r[0] != 0:
            raise RuntimeError(str(r[0]))
        return r[1] if len(r) == 2 else r[1:]

    path = os.path.join(os.environ["PEER_CACHE"], "axpy.cubin")
    ck(cu.cuInit(0))
    dev = ck(cu.cuDeviceGet(0))
    ctx = ck(cu.cuDevicePrimaryCtxRetain(dev))
    ck(cu.cuCtxSetCurrent(ctx) + (None,))
    if os.path.exists(path):
        with open(path, "rb") as f:
            cubin = f.read()
    else:
        from cuda.bindings import nvrtc

        prog = ck(nvrtc.nvrtcCreateProgram(AXPY_CU.encode(), b"k.cu", 0, [], []))
        opts = [f"--gpu-architecture={os.environ['STARTUP_ARCH']}".encode()]
        r = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        assert r[0] == 0, r
        n = ck(nvrtc.nvrtcGetCUBINSize(prog))
        cubin = b" " * n
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        with open(path, "wb") as f:
            f.write(cubin)
    mod = ck(cu.cuModuleLoadData(cubin))
    fn = ck(cu.cuModuleGetFunction(mod, b"axpy"))
    x, y = ck(cu.cuMemAlloc(N * 4)), ck(cu.cuMemAlloc(N * 4))
    ck(cu.cuMemsetD32(x, 0x3F800000, N) + (None,))
    ck(cu.cuMemsetD32(y, 0x3F800000, N) + (None,))
    a = np.array([2.0], np.float32)
    xp, yp = np.array([int(x)], np.uint64), np.array([int(y)], np.uint64)
    nn = np.array([N], np.int64)
    ptrs = np.array([a.ctypes.data, xp.ctypes.data, yp.ctypes.data, nn.ctypes.data], np.uint64)
    ck(cu.cuLaunchKernel(fn, N // 256, 1, 1, 256, 1, 1, 0, 0, ptrs.ctypes.data, 0) + (None,))
    ck(cu.cuCtxSynchronize() + (None,))
    t3 = time.perf_counter()
    h = np.empty(N, np.float32)
    ck(cu.cuMemcpyDtoH(h.ctypes.data, y, N * 4) + (None,))
    assert h[0] == 3.0
    out.update(first_kernel_s=t3 - t2, total_s=t3 - T0, import_first_s=t3 - t0)
    return out


def _peer(scenario: str, imports, first) -> dict:
    t0 = T0
    if scenario not in ("import", "loop"):
        import numpy  # noqa: F401 - before the clock, as for the others

        t0 = time.perf_counter()
    mods = imports()
    t1 = time.perf_counter()
    out = {"import_s": t1 - t0}
    if scenario == "import":
        return out
    if scenario == "setup":
        user_setup(float(os.environ.get("SETUP_S", "0.2")))
    t2 = time.perf_counter()
    first(*mods)
    t3 = time.perf_counter()
    out.update(first_kernel_s=t3 - t2, total_s=t3 - T0, import_first_s=t3 - t0)
    return out


def _cupy():
    import cupy as cp

    return (cp,)


def cupy_first(cp):
    y = cp.ones(N, dtype=cp.float32) * 2 + 1
    cp.cuda.Device().synchronize()
    assert float(y[0]) == 3.0


def cupy_raw_first(cp):
    k = cp.RawKernel(AXPY_CU, "axpy")
    x, y = cp.ones(N, dtype=cp.float32), cp.ones(N, dtype=cp.float32)
    k(((N + 255) // 256,), (256,), (cp.float32(2), x, y, cp.int64(N)))
    cp.cuda.Device().synchronize()
    assert float(y[0]) == 3.0


def _torch():
    import torch

    return (torch,)


def torch_first(torch):
    y = torch.ones(N, device="cuda") * 2 + 1
    torch.cuda.synchronize()
    assert y[0].item() == 3.0


def _triton():
    import torch
    import triton  # noqa: F401

    return (torch,)


def triton_first(torch):
    import importlib.util

    path = os.path.join(os.environ["PEER_CACHE"], "tk.py")
    with open(path, "w") as f:
        f.write(
            "import triton, triton.language as tl\n@triton.jit\n"
            "def axpy(a, x, y, n, B: tl.constexpr):\n"
            "    i = tl.program_id(0)*B + tl.arange(0, B)\n    m = i < n\n"
            "    tl.store(y+i, a*tl.load(x+i, mask=m) + tl.load(y+i, mask=m), mask=m)\n"
        )
    spec = importlib.util.spec_from_file_location("tk", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x, y = torch.ones(N, device="cuda"), torch.ones(N, device="cuda")
    mod.axpy[(N // 1024,)](2.0, x, y, N, B=1024)
    torch.cuda.synchronize()
    assert y[0].item() == 3.0


IMPLS = {
    "ember": ember_case,
    "raw": raw_case,
    "cupy": lambda s: _peer(s, _cupy, cupy_first),
    "cupy_raw": lambda s: _peer(s, _cupy, cupy_raw_first),
    "torch": lambda s: _peer(s, _torch, torch_first),
    "triton": lambda s: _peer(s, _triton, triton_first),
}

if __name__ == "__main__":
    result = IMPLS[sys.argv[1]](sys.argv[2])
    print("RESULT " + json.dumps(result), flush=True)
