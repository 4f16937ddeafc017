"""Every ``EMBER_*`` setting, typed and documented, parsed once.

Read a setting as an attribute of :data:`settings` (``ember.config.settings.backend``).
Override it for a block with :func:`override`::

    with ember.config.override(boundscheck=True):
        ...

A bad value in the environment warns and falls back to the default; it never raises at
import.  Settings are read from the environment the first time :data:`settings` is used -
which ``import ember`` does when the background warmup looks at ``EMBER_WARMUP`` and
``EMBER_BACKEND``; :func:`reload` reads the environment again.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ember._records import record


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected 0/1/true/false, got {text!r}")


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        low = text.strip().lower()
        if low not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {text!r}")
        return low

    return parse


def _parse_name(text: str) -> str:
    """A backend name: checked against the registry when a backend is selected (this layer
    is below the registry), so a backend added there needs no line here."""
    low = text.strip().lower()
    if not re.fullmatch(r"[a-z][a-z0-9_]*", low):
        raise ValueError(f"expected 'auto' or a backend name (cuda, opencl...), got {text!r}")
    return low


def _parse_warmup(text: str) -> str:
    if text.strip().lower() == "force":
        return "force"
    return "on" if _parse_bool(text) else "off"


def _parse_index(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError("expected a device index (0, 1, ...) or nothing")
    return int(text)


def _parse_list(text: str) -> frozenset[str]:
    return frozenset(p.strip().lower() for p in text.split(",") if p.strip())


@record(frozen=True)
class Setting:
    """One ``EMBER_*`` environment setting."""

    env: str
    default: Any
    parse: Callable[[str], Any]
    doc: str


SETTINGS: dict[str, Setting] = {
    s.env[len("EMBER_") :].lower(): s
    for s in (
        Setting(
            "EMBER_BACKEND",
            "auto",
            _parse_name,
            "Backend to use: a registered backend's name ('cuda', 'opencl', 'cpu'...), or 'auto' "
            "(the first that works: CUDA when a device answers, else an OpenCL GPU, else the "
            "native CPU backend, else an OpenCL CPU device such as PoCL).",
        ),
        Setting(
            "EMBER_OPENCL_DEVICE",
            "",
            str,
            "OpenCL device to use: an index 'P:D' (platform:device) or a substring of the "
            "device or platform name.  Empty: the first GPU, else the first CPU device (PoCL).",
        ),
        Setting(
            "EMBER_DEVICE",
            None,
            _parse_index,
            "Index of the device Ember uses by default, in the backend's numbering "
            "(ember.devices()); wins over EMBER_OPENCL_DEVICE.  Empty: the backend's own "
            "choice (CUDA: device 0).  One Dask worker per device sets it per worker.",
        ),
        Setting(
            "EMBER_CPU_THREADS",
            0,
            int,
            "Threads a cpu-backend launch may use (0: every core this process may run on).",
        ),
        Setting(
            "EMBER_BOUNDSCHECK",
            False,
            _parse_bool,
            "Check array indices (and float -> integer conversions) in kernels and raise "
            "KernelError naming the line on a failure; read when a kernel is first compiled.",
        ),
        Setting(
            "EMBER_DIAGNOSTICS",
            "warn",
            _choice("off", "warn", "error"),
            "Slow-path report of each kernel specialization at its first launch (error "
            "checks, print, float64 on slow-FP64 devices, local memory, low occupancy): "
            "'warn' (EmberPerformanceWarning), 'error' (SlowPathError before the launch) "
            "or 'off'.",
        ),
        Setting(
            "EMBER_ALLOCATOR",
            "pool",
            _choice("pool", "driver"),
            "Device allocator: 'pool' (Ember's caching allocator) or 'driver' (every "
            "allocation straight from the driver: cuMemAllocAsync on CUDA).",
        ),
        Setting(
            "EMBER_MEMORY_LIMIT",
            "",
            str,
            "Most device memory Ember's pool may reserve: bytes ('8e9', '512MiB') or a "
            "percentage of the device ('80%').  Empty: no limit but the device's.",
        ),
        Setting(
            "EMBER_MEMORY_IDLE_TRIM",
            60.0,
            float,
            "Cached blocks unused for this many seconds are released (0 disables).",
        ),
        Setting(
            "EMBER_SYNC",
            "fast",
            _choice("fast", "plain"),
            "'fast': skip the driver when a stream is known idle, spin briefly, then block; "
            "'plain': always call the driver's synchronize (the old behaviour).",
        ),
        Setting(
            "EMBER_SYNC_BLOCKING",
            False,
            _parse_bool,
            "After the spin phase, sleep in a blocking-sync driver wait instead of letting "
            "the driver spin (saves a CPU core on long waits, adds wake-up latency).",
        ),
        Setting(
            "EMBER_ASYNC_WAIT",
            "thread",
            _choice("thread", "poll"),
            "How `await stream` waits: 'thread' (waiter threads in GIL-free driver waits) or "
            "'poll' (query with exponential backoff on the event loop).",
        ),
        Setting(
            "EMBER_ALLOW_SCALAR",
            "warn",
            _choice("allow", "warn", "error"),
            "Scalar indexing of device arrays (x[3] reads one element over the bus): 'warn' "
            "once per process, 'allow' silently, or 'error' (see ember.allowscalar).",
        ),
        Setting(
            "EMBER_IMPLICIT_HOST_COPY",
            "error",
            _choice("error", "warn", "allow"),
            "NumPy reaching for an ember array's data: numpy.asarray(x) and NumPy functions "
            "Ember has no version of (numpy.X(x) runs ember.X on the device when it exists).  "
            "'error': a TypeError naming the explicit copy (x.to_numpy()); 'warn': copy to "
            "the host, warning once per function; 'allow': copy silently (NumPy results).",
        ),
        Setting(
            "EMBER_TRACEBACK",
            "filtered",
            _choice("filtered", "full"),
            "'filtered': tracebacks of user errors (KernelTypeError, ArgumentError...) show "
            "only your frames, not Ember's; 'full': every frame.  Internal errors always "
            "show every frame.",
        ),
        Setting(
            "EMBER_DUMP",
            frozenset(),
            _parse_list,
            "Comma-separated compiler stages to print as they are produced: ir, source, ptx.",
        ),
        Setting(
            "EMBER_CACHE",
            True,
            _parse_bool,
            "Keep compiled kernels in the on-disk cache and reuse them across processes "
            "(0 disables it; loaded bundles are still used).",
        ),
        Setting(
            "EMBER_CACHE_DIR",
            "",
            str,
            "Directory of the kernel cache.  Empty: $XDG_CACHE_HOME/ember or ~/.cache/ember "
            "(~/Library/Caches/ember on macOS, %LOCALAPPDATA%\\ember\\cache on Windows).  "
            "A read-only directory is used for lookups only.",
        ),
        Setting(
            "EMBER_CACHE_SIZE",
            "1GiB",
            str,
            "Most bytes the kernel cache may hold ('1GiB', '500MB', '2e9'); the least recently "
            "used entries are removed beyond it.  0: no limit.",
        ),
        Setting(
            "EMBER_WARMUP",
            "on",
            _parse_warmup,
            "Background warmup at import (driver init, context, NVRTC, cached modules): "
            "'1' when a CUDA driver is detected, 'force' always, '0' never.",
        ),
        Setting(
            "EMBER_CUDA_DRIVER",
            "ctypes",
            _choice("ctypes", "bindings"),
            "How the CUDA backend calls the driver: 'ctypes' (Ember's own ctypes table of "
            "the calls it makes: no cuda.bindings import before a first kernel) or "
            "'bindings' (NVIDIA's cuda.bindings.driver).  Read when the backend is imported.",
        ),
        Setting(
            "EMBER_BLAS",
            "auto",
            _choice("auto", "ember"),
            "Matrix products: 'auto' uses the device's vendor library (cuBLAS on CUDA) for "
            "float16/32/64, bfloat16 and complex where it is installed (2-d products of at "
            "most 64^3 multiply-adds excepted: Ember's kernel costs less host time), 'ember' "
            "always Ember's own tiled kernel.",
        ),
        Setting(
            "EMBER_FFT",
            "auto",
            _choice("auto", "ember"),
            "Fourier transforms (ember.fft): 'auto' uses the device's vendor library (cuFFT "
            "on CUDA) where it is installed, 'ember' always Ember's own kernels.",
        ),
        Setting(
            "EMBER_MATMUL_TF32",
            False,
            _parse_bool,
            "Let float32 matrix products on the vendor library use TF32 tensor cores "
            "(faster, ~1e-3 relative error); off: IEEE float32, as NumPy.",
        ),
    )
}


class _Settings:
    """Every setting as an attribute (``settings.backend``); the environment is read at the
    first use, not at import (a program may set ``EMBER_*`` after ``import ember``)."""

    @functools.cached_property
    def values(self) -> dict[str, Any]:  # cached: later reads are a plain attribute
        return _read_environment()

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(f"no Ember setting named {name!r}") from None


def _read_environment() -> dict[str, Any]:
    values = {}
    for name, setting in SETTINGS.items():
        raw = os.environ.get(setting.env)
        if raw is None:
            values[name] = setting.default
            continue
        try:
            values[name] = setting.parse(raw)
        except ValueError as exc:
            warnings.warn(
                f"ignoring {setting.env}={raw!r}: {exc}; using the default {setting.default!r}",
                stacklevel=2,
            )
            values[name] = setting.default
    return values


settings = _Settings()


def reload() -> None:
    """Read the environment again (for programs that change ``os.environ`` after import)."""
    settings.values.update(_read_environment())


@contextlib.contextmanager
def override(**changes: Any) -> Iterator[None]:
    """Change settings for the duration of a ``with`` block (not thread-local)."""
    unknown = set(changes) - set(SETTINGS)
    if unknown:
        raise TypeError(
            f"unknown Ember setting(s) {sorted(unknown)}; known: {', '.join(sorted(SETTINGS))}"
        )
    saved = {k: settings.values[k] for k in changes}
    settings.values.update(changes)
    try:
        yield
    finally:
        settings.values.update(saved)


def describe() -> str:
    """One line per setting: environment name, current value, and what it does."""
    return "\n".join(
        f"{s.env}={getattr(settings, name)!r}: {s.doc}" for name, s in SETTINGS.items()
    )
