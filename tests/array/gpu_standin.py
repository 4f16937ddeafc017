"""A stand-in for a CUDA GPU's backend (H100-like, sm_90) without a GPU: what the scan, sort
and launch-geometry code asks of a backend, so compile-only tests list the kernels and tile
shapes that device would run rather than the test machine's."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

import ember
from ember.compiler.driver import default_target

SHARED_LIMIT = 48 * 1024  # static shared memory per block


@dataclasses.dataclass(frozen=True)
class _Device:
    kind: str = "GPU"
    shared_memory_per_block: int = SHARED_LIMIT
    max_threads_per_block: int = 1024
    multiprocessors: int = 132
    extra: dict = dataclasses.field(default_factory=dict, hash=False, compare=False)


@dataclasses.dataclass(frozen=True)
class OfflineGPU:
    device: _Device = _Device()
    forward_progress: bool = True
    ordered_blocks: bool = True
    target: object = dataclasses.field(default_factory=lambda: default_target("cuda"))


H100 = OfflineGPU()


def to_ptx(kernel, args) -> str:
    """``kernel``'s PTX for sm_90 through NVRTC, for example arguments ``args``."""
    return kernel.inspect(*args, stage="ptx", dialect="cuda")


@functools.cache
def nvrtc_available() -> bool:
    """Whether NVRTC compiles here (the compile-only tests skip where it does not)."""
    from ember.array import kernels

    try:
        to_ptx(kernels.linear(ember.int64), (1, np.zeros(1, np.int64), 0, 1, -1, 0))
    except Exception:
        return False
    return True
