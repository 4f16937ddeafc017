"""The CUDA backend: NVIDIA's driver API through ``cuda-bindings``, kernels built by NVRTC.

This module is light on purpose: ``import ember`` reads it (through the registry in
:mod:`ember.runtime.backend`) to decide whether to warm CUDA up, so it imports nothing of
the driver.  :class:`CudaBackend` lives in :mod:`.backend` and is imported on first use.

The start-up hooks the background warmup (:mod:`ember.startup`) asks every backend package:

``plausible()``
    whether a device is probably there, at the cost of a ``stat`` (no library load);
``WARM_AT_IMPORT``
    whether ``import ember`` may start the warmup (the driver work releases the GIL);
``WARMUP_IMPORTS``
    the imports to make in the background, one step each, before the backend is made;
``WARMUP_COMPILER``
    (optional) what a compile imports, made before the backend where a compile is likely
    (the program's profile names no cached kernels);
``start_driver()``
    the GIL-free driver start-up, run beside the imports once ``DRIVER_AFTER`` is
    imported (``""``: at once); returns a function releasing what it holds;
``prepare_keys()``
    (optional) load what the cache keys' library versions need and the driver does not,
    while the driver starts (CUDA: NVRTC, whose version is in every key);
``version_stamp()``
    (optional) the backend's :meth:`~ember.runtime.backend.Backend.version_stamp`, without
    a backend: where the cache holds the versions under it, ``prepare_keys`` is skipped;
``driver_started()``
    whether this process started the driver (a forked child then refuses the backend);
``forget_after_fork()``
    (in a forked child, before the parent's backend objects are dropped) mark every driver
    object inherited from the parent dead, so that releasing them calls no driver function
    (the child has no usable context: ``cuStreamDestroy`` there crashed the process);
``LABEL``
    the backend's name in messages.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

LABEL = "CUDA"
WARM_AT_IMPORT = True

# Imports in order, before the backend is made; the driver step needs none of them (it calls
# libcuda through .cdriver), so it starts at once and runs beside them.  None is of
# cuda.bindings: the driver calls go through .cdriver, and NVRTC (cuda.bindings.nvrtc,
# 25-35 ms with cuda.pathfinder under it) is needed only to compile, so the warmup imports
# it only where a compile is likely (WARMUP_COMPILER).
WARMUP_IMPORTS = (
    "typing", "dataclasses", "subprocess", "ember.runtime.sync", "ember.backends.cuda.backend",
)  # fmt: skip
WARMUP_COMPILER = ("cuda.bindings.nvrtc", "ember.backends.cuda.nvrtc")
DRIVER_AFTER = ""  # start_driver() needs no import: it starts with the warmup

_LAZY = {
    "CudaBackend": "backend", "CudaBuffer": "memory", "CudaEvent": "event",
    "CudaFunction": "launch", "CudaModule": "module", "CudaStream": "stream",
    "PinnedHostMemory": "memory",
}  # fmt: skip
__all__ = [
    "LABEL", "WARMUP_IMPORTS", "WARMUP_COMPILER", "WARM_AT_IMPORT", "driver_started",
    "forget_after_fork", "plausible", "prepare_keys", "start_driver", "version_stamp",
    *_LAZY,
]  # fmt: skip


def forget_after_fork() -> None:
    """In a forked child: the parent's contexts are unusable here; their objects' ``close``
    must not call the driver."""
    device = sys.modules.get("ember.backends.cuda.device")
    if device is not None:
        device.forget_contexts()


def plausible(kind: str | None = None) -> bool:
    """Whether a CUDA driver is probably installed and a device visible (a stat or two);
    every CUDA device is a GPU, so ``kind`` changes nothing.  On Linux the driver's control
    file, WSL's GPU file, or the loaded kernel module (whose files the driver creates on
    first use where no udev rule did)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    if sys.platform.startswith("linux"):
        return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/dxg",
                                               "/proc/driver/nvidia/version"))  # fmt: skip
    if sys.platform == "win32":
        root = os.environ.get("SystemRoot", r"C:\Windows")
        return os.path.exists(os.path.join(root, "System32", "nvcuda.dll"))
    return False


_early_start = False  # start_driver() called libcuda (cuInit) in this process


def start_driver():
    """``cuInit``, the default device (``EMBER_DEVICE``, else 0) and its primary context
    (every call releases the GIL), through :mod:`.cdriver` alone or, where that fails, the
    backend's own start-up; returns the function that releases the context reference taken
    here."""
    global _early_start
    _early_start = True  # from the first driver call on: a fork child must not use CUDA
    try:
        from ember.backends.cuda.cdriver import start
        from ember.config import settings

        return start(settings.device or 0)
    except Exception:  # the bindings' start-up says precisely what is wrong, or works
        from ember.backends.cuda.device import warm_start

        return warm_start()


def prepare_keys() -> None:
    """NVRTC's version (the library's load), asked while the driver step still runs."""
    from ember.backends.cuda.nvrtc import nvrtc_version

    nvrtc_version()


@functools.cache
def version_stamp() -> dict:
    """What decides the library versions (cuda-bindings', the driver's CUDA version, which
    NVRTC would load), with no library loaded: for the cache's record of them.  Computed
    once a process (the warmup's keys step and the versions step both ask)."""
    from ember.backends.cuda.device import driver_version
    from ember.backends.cuda.nvrtc import package_stamp, search_stamp

    return {"cuda-bindings": package_stamp("cuda.bindings"), "cuda-driver": list(driver_version()),
            "nvrtc-search": search_stamp()}  # fmt: skip


def driver_started() -> bool:
    """Whether ``cuInit`` ran in this process (by the backend or the warmup)."""
    device = sys.modules.get("ember.backends.cuda.device")
    return _early_start or bool(getattr(device, "_initialized", False))


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
