"""OpenCL platforms and devices: enumeration, choice (``EMBER_OPENCL_DEVICE``), description.

Devices are numbered across platforms in the order the ICD loader lists them; that flat
number is :attr:`DeviceInfo.index`, and ``"P:D"`` (platform index, device index within it)
is ``DeviceInfo.extra["id"]``.

Choice (:func:`choose`), from ``EMBER_OPENCL_DEVICE``:

* ``"P:D"`` — that device; a plain integer ``"N"`` — the device with flat index ``N``;
* any other text — the first device whose device or platform name contains it
  (case-insensitive), e.g. ``"pocl"``, ``"nvidia"``, ``"gfx1100"``;
* empty — the first GPU of any platform, else the first CPU device (PoCL), else any other
  device; among those, the first that can build a kernel.

Every chosen device must build a tiny *probe* kernel: it tells the preferred work-group
size multiple (Ember's ``warp_size``) and proves the OpenCL C compiler works.  A device
whose compiler is broken (PoCL's LLVM not knowing the host CPU says ``unknown target CPU
'generic'``) is skipped by the empty choice and refused by an explicit one, with the log.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ember.backends.opencl.check import build_log, cl, translated
from ember.errors import BackendUnavailableError
from ember.runtime.backend import INSTALL_HINT, DeviceInfo

PROBE_SOURCE = "__kernel void ember_probe(__global int* out) { out[get_global_id(0)] = 1; }"

NO_PLATFORM_HINT = (
    "install an OpenCL driver: on Linux x86-64 the PoCL CPU device comes as a wheel "
    f"({INSTALL_HINT['opencl']}, which pulls in pocl-binary-distribution); GPU vendors' "
    "drivers (NVIDIA, AMD ROCm, Intel compute-runtime) bring their own"
)
CPU_NAME_HINT = (
    "PoCL's LLVM does not know this CPU model (new CPUs, e.g. AMD Zen 5, are 'generic' to "
    "the LLVM 14 inside the pyopencl wheel's PoCL). Fixes: install the distribution's PoCL "
    "(Debian/Ubuntu: apt-get install pocl-opencl-icd), which Ember then picks by itself; or, "
    "with a PoCL that reads it (Debian's 3.1 does), set POCL_LLVM_CPU_NAME to a CPU its LLVM "
    "knows (e.g. x86-64-v3) before starting Python"
)


@dataclass(frozen=True)
class Found:
    """One enumerated device: flat ``index``, platform ``p`` and device ``d`` indices."""

    index: int
    p: int
    d: int
    device: cl.Device

    @property
    def id(self) -> str:
        return f"{self.p}:{self.d}"

    @property
    def kind(self) -> str:
        return device_type(self.device)

    def line(self) -> str:
        """One line for error messages and ``ember info``."""
        dev = self.device
        return (
            f"  [{self.index}] {self.id}  {dev.name.strip()}  ({self.kind}; "
            f"{dev.platform.name.strip()}; {dev.version.strip()})"
        )


def device_type(device: cl.Device) -> str:
    """``"GPU"``, ``"CPU"``, ``"ACCELERATOR"`` or ``"OTHER"`` (PoCL's type has extra bits)."""
    t = int(device.type)
    for bit, name in (
        (cl.device_type.GPU, "GPU"),
        (cl.device_type.CPU, "CPU"),
        (cl.device_type.ACCELERATOR, "ACCELERATOR"),
    ):
        if t & int(bit):
            return name
    return "OTHER"


def enumerate_devices() -> list[Found]:
    """Every device of every platform, numbered in ICD order; ``[]`` when there are none."""
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no driver
        return []
    found: list[Found] = []
    for p, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:  # CL_DEVICE_NOT_FOUND: a platform without devices
            continue
        for d, device in enumerate(devices):
            found.append(Found(len(found), p, d, device))
    return found


def listing(found: list[Found]) -> str:
    """The devices, one per line, for error messages."""
    return "\n".join(f.line() for f in found) if found else "  (none)"


def choose(spec: str, found: list[Found] | None = None) -> Found:
    """The device ``spec`` names (see the module docstring), probed to build kernels.

    Raises
    ------
    BackendUnavailableError
        No OpenCL platform or device; ``spec`` matches no device; or the device(s) cannot
        build OpenCL C (the message holds the build log and the fix).
    """
    found = enumerate_devices() if found is None else found
    if not found:
        raise BackendUnavailableError(f"no OpenCL platform or device was found; {NO_PLATFORM_HINT}")
    spec = spec.strip()
    if not spec:
        return _first_working(found)
    chosen = _match(spec, found)
    failure = probe(chosen.device).error
    if failure:
        raise BackendUnavailableError(
            f"EMBER_OPENCL_DEVICE={spec!r} chose {chosen.device.name.strip()!r}, which cannot "
            f"build OpenCL C programs:\n{failure}\nDevices found:\n{listing(found)}"
        )
    return chosen


def _match(spec: str, found: list[Found]) -> Found:
    pair = re.fullmatch(r"(\d+)\s*:\s*(\d+)", spec)
    for f in found:
        if pair and (f.p, f.d) == (int(pair[1]), int(pair[2])):
            return f
        if spec.isdigit() and f.index == int(spec):
            return f
        if not pair and not spec.isdigit():
            text = f"{f.device.name} {f.device.platform.name}".lower()
            if spec.lower() in text:
                return f
    raise BackendUnavailableError(
        f"EMBER_OPENCL_DEVICE={spec!r} matches no OpenCL device; give 'P:D' (platform:device "
        f"index), a flat index, or part of a device or platform name. Devices found:\n"
        f"{listing(found)}"
    )


def _first_working(found: list[Found]) -> Found:
    order = {"GPU": 0, "CPU": 1}
    candidates = sorted(found, key=lambda f: (order.get(f.kind, 2), f.index))
    failures = []
    for f in candidates:
        error = probe(f.device).error
        if not error:
            return f
        failures.append(f"{f.line().strip()}:\n{_indent(error)}")
    first = probe(candidates[0].device).error
    summary = next((ln for ln in first.splitlines() if "error" in ln.lower()), first)
    raise BackendUnavailableError(
        f"no OpenCL device can build OpenCL C programs ({len(candidates)} tried; "
        f"{summary.strip()}):\n" + "\n".join(failures)
    )


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines())


@dataclass(frozen=True)
class Probe:
    """What building :data:`PROBE_SOURCE` told about a device."""

    preferred_multiple: int
    max_kernel_work_group: int
    error: str  # empty when the build worked


@functools.cache
def probe(device: cl.Device) -> Probe:
    """Build the probe kernel on ``device`` (once per process; PoCL caches it on disk too)."""
    context = cl.Context([device])
    try:
        program = cl.Program(context, PROBE_SOURCE).build(cache_dir=False)
        kernel = cl.Kernel(program, "ember_probe")
        info = cl.kernel_work_group_info
        multiple = kernel.get_work_group_info(info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, device)
        limit = kernel.get_work_group_info(info.WORK_GROUP_SIZE, device)
    except cl.Error as exc:
        text = build_log(exc)
        if "unknown target CPU" in text:
            text += f"\n{CPU_NAME_HINT}"
        return Probe(1, 1, text)
    return Probe(int(multiple), int(limit), "")


def describe(f: Found) -> DeviceInfo:
    """The :class:`DeviceInfo` of one enumerated device (builds the probe kernel)."""
    dev = f.device
    result = probe(dev)
    with translated(f"querying OpenCL device {f.id}"):
        extensions = dev.extensions.split()
        extra = {
            "id": f.id,
            "platform": dev.platform.name.strip(),
            "platform_version": dev.platform.version.strip(),
            "device_version": dev.version.strip(),
            "opencl_c_version": dev.opencl_c_version.strip(),
            "driver_version": dev.driver_version.strip(),
            "vendor": dev.vendor.strip(),
            "device_type": f.kind,
            "extensions": extensions,
            "fp64": "cl_khr_fp64" in extensions,
            "fp16": "cl_khr_fp16" in extensions,
            "int64_atomics": "cl_khr_int64_base_atomics" in extensions,
            "subgroups": "cl_khr_subgroups" in extensions or "cl_intel_subgroups" in extensions,
            "max_mem_alloc_size": int(dev.max_mem_alloc_size),
            "max_constant_buffer_size": int(dev.max_constant_buffer_size),
            "max_work_item_sizes": tuple(int(s) for s in dev.max_work_item_sizes),
            "max_kernel_work_group_size": result.max_kernel_work_group,
            "can_compile": not result.error,
        }
        return DeviceInfo(
            backend="opencl",
            index=f.index,
            name=dev.name.strip(),
            total_memory=int(dev.global_mem_size),
            multiprocessors=int(dev.max_compute_units),
            warp_size=result.preferred_multiple,
            max_threads_per_block=int(dev.max_work_group_size),
            shared_memory_per_block=int(dev.local_mem_size),
            kind=f.kind,
            features=features(extra, extensions),
            fp64_ratio=1.0 if f.kind == "CPU" else None,  # CPUs: about the float32 rate
            extra=extra,
        )


def features(extra: dict, extensions: list[str]) -> frozenset[str]:
    """The kernel features (``DeviceInfo.features``) a device's extensions give."""
    found = {name for name in ("fp64", "fp16", "int64_atomics", "subgroups") if extra.get(name)}
    if "cl_khr_subgroup_shuffle" in extensions:
        found.add("subgroup_shuffle")
    if "cl_khr_subgroup_shuffle_relative" in extensions:
        found.add("subgroup_shuffle_relative")
    if "cl_khr_subgroup_ballot" in extensions:
        found.add("subgroup_ballot")
    return frozenset(found)
