"""The OpenCL backend: ``pyopencl`` on any OpenCL device (PoCL's CPU device where no GPU is).

Light on purpose, like :mod:`ember.backends.cuda`: :class:`OpenCLBackend` lives in
:mod:`.backend` and is imported on first use; here are only the start-up hooks the
background warmup (:mod:`ember.startup`) asks.  Setting up pyopencl is Python work (it holds
the GIL), so ``import ember`` never starts it: only ``EMBER_WARMUP=force`` or
``ember.warmup(backend="opencl")`` do.
"""

from __future__ import annotations

from typing import Any

LABEL = "OpenCL"
WARM_AT_IMPORT = False
WARMUP_IMPORTS = ("pyopencl", "ember.backends.opencl.backend")

_LAZY = {
    "OpenCLBackend": "backend", "OpenCLBuffer": "memory", "OpenCLEvent": "event",
    "OpenCLFunction": "module", "OpenCLModule": "module", "OpenCLStream": "stream",
}  # fmt: skip
__all__ = ["LABEL", "WARMUP_IMPORTS", "WARM_AT_IMPORT", "plausible", *_LAZY]


def plausible() -> bool:
    """Always worth a try: PoCL's CPU device needs no hardware."""
    return True


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
