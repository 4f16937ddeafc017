"""The implementations Ember is measured against: the raw ``cuda.bindings`` floor and peers.

:class:`RawCuda` is the floor: what a program written directly on the driver API does, with
no checks beyond the status, no object wrappers and precomputed argument arrays.  It shares
the device's primary context with Ember, CuPy and PyTorch, so all run in one process.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

try:
    from ember.backends.cuda.nvrtc import compile_cubin
except ImportError:  # an Ember from before issue 15 (NVRTC under compiler/): before/after runs
    from ember.compiler.nvrtc import compile_cubin


def load_peers(names: tuple[str, ...] = ("cupy", "torch")) -> dict[str, Any]:
    """The peer libraries importable here and able to see a CUDA device."""
    peers = {}
    for name in names:
        try:
            module = importlib.import_module(name)
            if name == "torch" and not module.cuda.is_available():
                continue
            if name == "cupy":
                module.cuda.runtime.getDeviceCount()
        except Exception:
            continue
        peers[name] = module
    return peers


def peer_empty_1mib(ctx, impls: dict) -> None:
    """Add CuPy's and PyTorch's 1 MiB ``empty`` (allocate + free through their pools)."""
    quarter = (1 << 20) // 4
    if "cupy" in ctx.peers:
        cp = ctx.peers["cupy"]
        impls["cupy"] = (lambda: cp.empty(quarter, cp.float32), None)
    if "torch" in ctx.peers:
        torch = ctx.peers["torch"]
        impls["torch"] = (lambda: torch.empty(quarter, device="cuda"), None)


def _ok(result: tuple) -> Any:
    """The value of a cuda.bindings result; a failure raises (the floor checks nothing else)."""
    if result[0]:
        raise RuntimeError(f"{result[0]!r}")
    return result[1] if len(result) == 2 else result[1:] or None


class RawCuda:
    """Plain ``cuda.bindings``: primary context, one non-blocking stream, NVRTC cubins."""

    def __init__(self, device: int, arch: str):
        from cuda.bindings import driver as cu

        self.cu = cu
        self.arch = arch
        _ok(cu.cuInit(0))
        self.device = _ok(cu.cuDeviceGet(device))
        self.context = _ok(cu.cuDevicePrimaryCtxRetain(self.device))
        _ok(cu.cuCtxSetCurrent(self.context))
        self.stream = _ok(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
        self._keep: list[Any] = []  # argument arrays that must outlive launches

    def function(self, source: str, name: str):
        """``CUfunction`` ``name`` of ``source`` compiled for this device."""
        module = _ok(self.cu.cuModuleLoadData(compile_cubin(source, self.arch, name)))
        self._keep.append(module)
        return _ok(self.cu.cuModuleGetFunction(module, name.encode()))

    def kernel_params(self, *values: np.generic) -> int:
        """Address of a ``void*[]`` pointing at each value (stable for the object's lifetime)."""
        holders = [np.array([v]) for v in values]
        pointers = np.array([h.ctypes.data for h in holders], np.uint64)
        self._keep += [holders, pointers]
        return pointers.ctypes.data

    def alloc(self, nbytes: int) -> int:
        return int(_ok(self.cu.cuMemAlloc(nbytes)))

    def free(self, ptr: int) -> None:
        _ok(self.cu.cuMemFree(ptr))

    def sync(self) -> None:
        self.cu.cuStreamSynchronize(self.stream)


class DriverLoop:
    """The driver's launch floor: ``times(n)`` makes ``n`` calls' ``cuLaunchKernel``s from a
    C loop (``benchmarks/launch_loop.c``, built with the C compiler on first use), with
    argument blocks built beforehand: ``params``, alternating with ``params2`` where that is
    given, ``launches`` a call (a case whose calls make two launches).  The harness
    (:func:`benchmarks.harness.interleaved_us`) times ``times(n)`` as ``n`` calls, so the row
    sits beside the Python launches in the same interleaved repeats."""

    _lib: Any = None

    def __init__(
        self, raw: RawCuda, function: Any, params: int, params2: int = 0, launches: int = 1
    ):
        lib = self.library()
        self._launches = launches
        entry = ctypes.cast(ctypes.CDLL("libcuda.so.1").cuLaunchKernel, ctypes.c_void_p).value
        self._call = lib.launch_loop
        self._args = (entry, int(function), 32, int(raw.stream), params or None, params2 or None)

    @classmethod
    def library(cls) -> Any:
        """The built ``launch_loop.c`` (once per process); OSError where it cannot be built."""
        if cls._lib is None:
            source = Path(__file__).with_name("launch_loop.c")
            out = Path(tempfile.mkdtemp(prefix="ember-bench-")) / "launch_loop.so"
            cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
            try:
                subprocess.run(
                    [*cc, "-O2", "-shared", "-fPIC", "-o", str(out), str(source)],
                    check=True,
                    capture_output=True,
                    timeout=60,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise OSError(f"cannot build {source.name}: {exc}") from exc
            lib = ctypes.CDLL(str(out))
            v, i = ctypes.c_void_p, ctypes.c_uint
            lib.launch_loop.argtypes = [v, v, i, v, v, v, ctypes.c_long]
            lib.launch_loop.restype = ctypes.c_int
            cls._lib = lib
        return cls._lib

    def times(self, n: int) -> None:
        err = self._call(*self._args, n * self._launches)
        if err:
            raise RuntimeError(f"cuLaunchKernel failed in the C loop: CUresult {err}")

    def __call__(self) -> None:
        self.times(1)


def raw_floor(ctx) -> RawCuda:
    """The context's :class:`RawCuda` (one per run, shared by every area)."""
    info = ctx.backend.device
    return ctx.once("raw", lambda: RawCuda(info.index, info.arch))
