"""Driver initialization, the device list and properties, and the primary context.

:func:`init` is the availability test of the CUDA backend: anything that keeps the driver
from answering (no ``libcuda``, ``cuInit`` failing, no device) becomes a
:class:`BackendUnavailableError` that says which of these happened.
"""

from __future__ import annotations

import threading
import weakref

from ember.backends.cuda.driver import INVALID_CONTEXT, check, cu, describe, result_name
from ember.errors import BackendUnavailableError
from ember.runtime.backend import DeviceInfo

A = cu.CUdevice_attribute

# DeviceInfo.extra key -> attribute name; a name this cuda-bindings lacks is skipped.
_EXTRA_ATTRIBUTES = {
    "clock_rate_khz": "CU_DEVICE_ATTRIBUTE_CLOCK_RATE",
    "memory_clock_rate_khz": "CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE",
    "memory_bus_width_bits": "CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH",
    "l2_cache_bytes": "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE",
    "single_to_double_perf_ratio": "CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO",
    "max_shared_memory_per_block_optin": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_threads_per_multiprocessor": "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR",
    "memory_pools_supported": "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED",
    "integrated": "CU_DEVICE_ATTRIBUTE_INTEGRATED",
    "pci_bus_id": "CU_DEVICE_ATTRIBUTE_PCI_BUS_ID",
    "cooperative_launch": "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH",
}

# What Ember's kernels may use on every CUDA device it supports (sm_50+): warps with
# shuffles, 64-bit atomics, double precision (at the device's rate), half conversions.
FEATURES = frozenset(
    {"fp64", "fp16", "int64_atomics", "subgroups", "subgroup_shuffle",
     "subgroup_shuffle_relative", "subgroup_ballot", "global_tables"}
)  # fmt: skip

_initialized = False
_init_lock = threading.Lock()


def init() -> int:
    """Initialize the driver once and return the number of devices.

    Raises
    ------
    BackendUnavailableError
        When the driver library is missing, ``cuInit`` fails, or there is no device.
    """
    global _initialized
    with _init_lock:
        if not _initialized:
            _call_init()
            _initialized = True
    try:
        count = check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
    except Exception as exc:
        raise BackendUnavailableError(f"the CUDA driver cannot count devices: {exc}") from exc
    if count == 0:
        raise BackendUnavailableError(
            "the CUDA driver found no device (check CUDA_VISIBLE_DEVICES and nvidia-smi)"
        )
    return count


def _call_init() -> None:
    try:
        result = cu.cuInit(0)
    except Exception as exc:  # cuda.pathfinder's DynamicLibNotFoundError, OSError...
        raise BackendUnavailableError(
            f"the NVIDIA driver library (libcuda) cannot be loaded, so there is no CUDA "
            f"device here ({type(exc).__name__}: {exc}).  Install the NVIDIA driver, or use "
            f"EMBER_BACKEND=opencl."
        ) from exc
    err = result[0]
    if err:
        text = describe(err)
        raise BackendUnavailableError(
            f"cuInit failed with {result_name(err)}{': ' + text if text else ''}; no CUDA "
            f"device can be used (check nvidia-smi and CUDA_VISIBLE_DEVICES, or use "
            f"EMBER_BACKEND=opencl)"
        )


def driver_version() -> tuple[int, int]:
    """The CUDA version the driver supports, e.g. ``(13, 0)``."""
    v = check(cu.cuDriverGetVersion(), "cuDriverGetVersion")
    return v // 1000, (v % 1000) // 10


def get_device(index: int) -> cu.CUdevice:
    """The ``CUdevice`` with ordinal ``index``; a bad index raises naming the count."""
    count = init()
    if not 0 <= index < count:
        raise BackendUnavailableError(
            f"CUDA device {index} does not exist: this machine has {count} device(s), "
            f"numbered 0..{count - 1}"
        )
    return check(cu.cuDeviceGet(index), "cuDeviceGet", f"getting device {index}")


def attribute(device: cu.CUdevice, name: str) -> int | None:
    """Device attribute ``name`` (``CU_DEVICE_ATTRIBUTE_...``); None if unknown here."""
    attr = getattr(A, name, None)
    if attr is None:
        return None
    err, value = cu.cuDeviceGetAttribute(attr, device)
    return None if err else value


def device_info(index: int) -> DeviceInfo:
    """Everything :class:`DeviceInfo` holds about CUDA device ``index``."""
    dev = get_device(index)
    name = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
    name = name.split(b"\0", 1)[0].decode(errors="replace")

    def attr(n: str) -> int:
        return attribute(dev, n) or 0

    extra = {key: attribute(dev, attr_name) for key, attr_name in _EXTRA_ATTRIBUTES.items()}
    extra = {k: v for k, v in extra.items() if v is not None}
    major, minor = driver_version()
    extra["driver_version"] = f"{major}.{minor}"
    return DeviceInfo(
        backend="cuda",
        index=index,
        name=name,
        total_memory=check(cu.cuDeviceTotalMem(dev), "cuDeviceTotalMem"),
        multiprocessors=attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        warp_size=attr("CU_DEVICE_ATTRIBUTE_WARP_SIZE"),
        max_threads_per_block=attr("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
        shared_memory_per_block=attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
        compute_capability=(
            attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
            attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"),
        ),
        kind="GPU",
        features=FEATURES,
        fp64_ratio=extra.get("single_to_double_perf_ratio"),
        cooperative_launch=bool(extra.get("cooperative_launch")),
        extra=extra,
    )


def warm_start():
    """The GIL-free part of CUDA start-up, for the background warmup: ``cuInit``, the
    default device (``EMBER_DEVICE``, else 0) and a reference to its primary context (every
    call releases the GIL).  Returns the function that releases that reference (the
    backend holds its own)."""
    from ember.config import settings

    index = settings.device or 0
    device = get_device(index)
    check(cu.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain", f"device {index}")

    def release() -> None:
        cu.cuDevicePrimaryCtxRelease(device)

    return release


# The context each thread made current last (one per thread for the whole process: with
# several devices open, a per-context flag would go stale when another context is set).
_current = threading.local()
_contexts: weakref.WeakSet = weakref.WeakSet()  # every PrimaryContext this process retained


def forget_contexts() -> None:
    """Mark every retained context dead (a forked child: the driver state is the parent's);
    objects on them then release nothing through the driver."""
    global opened
    for context in list(_contexts):
        context.alive = False
    _current.__dict__.clear()
    opened = 0


# How many primary contexts this process holds; beyond one, launches make theirs current
# first (the driver launches a CUfunction only in its own context).
opened = 0


class PrimaryContext:
    """A retained reference to a device's primary context, made current where needed.

    The driver's current context is per thread, so each thread that calls the driver needs
    :meth:`ensure_current` (a thread-local identity test when it already is).
    """

    def __init__(self, device: cu.CUdevice, index: int):
        global opened
        self.device = device
        self.index = index
        self.handle = check(
            cu.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain", f"device {index}"
        )
        self.alive = True
        _contexts.add(self)
        opened += 1
        self.ensure_current()

    def ensure_current(self) -> None:
        """Make this context current in the calling thread (cheap when it already is)."""
        if _current.__dict__.get("context") is self:
            return
        check(cu.cuCtxSetCurrent(self.handle), "cuCtxSetCurrent", f"device {self.index}")
        _current.context = self

    def make_current(self) -> None:
        """Set the context current again, e.g. after another library changed it."""
        _current.context = None
        self.ensure_current()

    def retry_on_invalid_context(self, err) -> bool:
        """After a call failed with ``err``: make the context current; True if worth retrying."""
        if err != INVALID_CONTEXT or not self.alive:
            return False
        self.make_current()
        return True

    def close(self) -> None:
        """Release the primary context reference.  Idempotent."""
        global opened
        if self.alive:
            self.alive = False
            opened -= 1
            if _current.__dict__.get("context") is self:
                _current.context = None
            cu.cuDevicePrimaryCtxRelease(self.device)
