"""The OpenCL backend: ``pyopencl`` on any OpenCL device (PoCL's CPU device where no GPU is).

Light on purpose, like :mod:`ember.backends.cuda`: :class:`OpenCLBackend` lives in
:mod:`.backend` and is imported on first use; here are only the start-up hooks the
background warmup (:mod:`ember.startup`) asks.  Setting up pyopencl is Python work (it holds
the GIL), so ``import ember`` never starts it: only ``EMBER_WARMUP=force`` or
``ember.warmup(backend="opencl")`` do.
"""

from __future__ import annotations

import os
import sys
from typing import Any

LABEL = "OpenCL"
WARM_AT_IMPORT = False
WARMUP_IMPORTS = ("pyopencl", "ember.backends.opencl.backend")

_LAZY = {
    "OpenCLBackend": "backend", "OpenCLBuffer": "memory", "OpenCLEvent": "event",
    "OpenCLFunction": "module", "OpenCLModule": "module", "OpenCLStream": "stream",
}  # fmt: skip
__all__ = ["LABEL", "WARMUP_IMPORTS", "WARM_AT_IMPORT", "plausible", *_LAZY]


# Linux device files without one of which no OpenCL GPU driver works: the render nodes
# (Intel, AMD, Mesa's rusticl), ROCm's, NVIDIA's, WSL's, Arm Mali's.
_GPU_FILES = ("/dev/dri", "/dev/kfd", "/dev/nvidiactl", "/dev/dxg", "/dev/mali0")


def plausible(kind: str | None = None) -> bool:
    """Whether an OpenCL device (of ``kind``: "GPU", "CPU") may be here, by a stat or two.
    Any device: always worth a try (PoCL's CPU device needs no hardware).  A GPU: on Linux
    only where a GPU driver's device file exists; elsewhere, yes."""
    if kind != "GPU" or not sys.platform.startswith("linux"):
        return True
    try:
        if os.listdir("/dev/dri"):  # render or card nodes
            return True
    except OSError:
        pass
    return any(os.path.exists(p) for p in _GPU_FILES[1:])


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
