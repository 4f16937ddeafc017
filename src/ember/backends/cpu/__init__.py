"""The cpu backend: Ember's kernels as C, compiled by the ``ziglang`` wheel's clang and run
with ctypes - nothing but pip (``pip install 'ember[cpu]'``).

Light on purpose, like :mod:`ember.backends.cuda`: :class:`CPUBackend` lives in
:mod:`.backend` and is imported on first use; here are only the start-up hooks the
background warmup (:mod:`ember.startup`) asks.  There is no driver to start: the backend is
made in microseconds, and the first compile pays for zig's process.
"""

from __future__ import annotations

import importlib.util
from typing import Any

LABEL = "CPU"
WARM_AT_IMPORT = False
WARMUP_IMPORTS = ("ember.backends.cpu.backend",)

_LAZY = {
    "CPUBackend": "backend", "CPUBuffer": "memory", "CPUEvent": "stream",
    "CPUFunction": "module", "CPUModule": "module", "CPUStream": "stream",
}  # fmt: skip
__all__ = ["LABEL", "WARMUP_IMPORTS", "WARM_AT_IMPORT", "plausible", *_LAZY]


def plausible() -> bool:
    """Whether zig's wheel is installed (the CPU is always there)."""
    return importlib.util.find_spec("ziglang") is not None


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
