"""The CPU as an Ember device: its name, cores, memory and limits.

The numbers follow what Ember's kernels expect of a device:

* ``multiprocessors``: the threads a launch may use (``EMBER_CPU_THREADS``, default the
  cores this process may run on);
* ``warp_size``: 32, the sub-group size of :func:`ember.warp_sum` & co. (they are emulated:
  ``codegen/workgroup.py``), as on NVIDIA GPUs, so code written for 32-wide warps works;
* ``max_threads_per_block``: 1024, as on CUDA; ``shared_memory_per_block``: 64 KiB of
  static ``ember.shared`` arrays (they live on the stack of the thread running the group).
"""

from __future__ import annotations

import os
import platform

from ember.backends.cpu import toolchain
from ember.runtime.backend import DeviceInfo

FEATURES = frozenset(
    {"fp64", "fp16", "int64_atomics", "subgroups", "subgroup_shuffle",
     "subgroup_shuffle_relative"}
)  # fmt: skip
WARP = 32
MAX_BLOCK = 1024
SHARED_BYTES = 64 << 10


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def model_name() -> str:
    """The CPU's marketing name (``/proc/cpuinfo`` on Linux), or what :mod:`platform` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def physical_memory() -> int:
    """Bytes of RAM (0 when the platform will not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0


def describe(threads: int) -> DeviceInfo:
    """The :class:`DeviceInfo` of this machine's CPU, running launches on ``threads``."""
    return DeviceInfo(
        backend="cpu",
        index=0,
        name=model_name(),
        total_memory=physical_memory(),
        multiprocessors=threads,
        warp_size=WARP,
        max_threads_per_block=MAX_BLOCK,
        shared_memory_per_block=SHARED_BYTES,
        kind="CPU",
        features=FEATURES,
        fp64_ratio=2.0,  # a SIMD register holds half as many doubles as floats
        extra={"device_type": "CPU", "family": toolchain.family(), "cores": usable_cores()},
    )
