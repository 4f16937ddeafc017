"""CPU binaries: the container format, loading with ctypes, kernels and their launch.

Binaries
    :func:`pack` makes a small container: the marker :data:`MAGIC`, one JSON line (the
    builds it holds: ``march``, the CPU fingerprint of a native build, the family, sizes
    and digests, whether the code prints), then each build's shared library.  A build
    whose digest does not match is refused before ``dlopen`` sees it (:func:`unpack`).
    :func:`choose` picks the native build when it was made for this CPU, else the portable
    baseline build (a bundle made elsewhere), else refuses (the caller recompiles).

Loading
    Each library is loaded with ``dlopen`` (``RTLD_NOW``: a missing symbol fails at load,
    never in a kernel) from a private temporary file (in ``/dev/shm`` where there is one),
    removed once loaded.  Math symbols resolve against ``libm``, which is made global
    once (:func:`_math_library`).

Launch (:class:`CPUFunction`)
    A kernel ``k`` is the exported entry ``em_run_k(args, next, chunk)``: ``args`` a launch
    record of 8-byte words (grid x/y/z, block x/y/z, shared bytes, a spare, then one word
    per parameter: numbers as their C type, pointers as addresses); ``next`` the shared
    counter of work-groups taken; ``chunk`` how many to take at a time.  The record is
    packed with :mod:`struct` (one call), and the launch becomes a job on the stream
    (:mod:`.stream`): a large one shared with helper threads (:mod:`.pool`).

Faults
    Where the ``_guard`` stub is built (POSIX), the entry is called through it: a memory
    fault inside a kernel (a wild index: SIGSEGV, SIGBUS; SIGFPE, SIGILL) stops that
    thread's part of the launch and becomes a :class:`~ember.errors.DriverError` of the
    launch, raised at the next synchronize as a GPU's illegal address is, instead of ending
    the process.  Faults outside kernels go to the handler installed before.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import itertools
import json
import os
import re
import signal
import struct
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from ember.backends.binaries import ELF_MAGIC, check_elf
from ember.backends.cpu import toolchain
from ember.backends.cpu.device import SHARED_BYTES
from ember.backends.cpu.printing import PrintBuffer
from ember.backends.cpu.stream import INLINE_S, STEAL_S
from ember.codegen.cpu_runtime import PRINT_SYMBOL
from ember.dtypes import dtype as as_dtype
from ember.errors import BinaryError, DriverError, LaunchError
from ember.runtime.backend import PTR, Buffer, Function, Module
from ember.runtime.checks import LaunchLimits, check_arg_count, dim3

try:  # the fault guard (see the module docstring); without it, ctypes calls the entry
    from ember.backends.cpu import _guard

    _guard.install()
    _Fault: type[BaseException] = _guard.Fault
except (ImportError, OSError):
    _guard = None

    class _Fault(Exception):  # type: ignore[no-redef]
        """Never raised: there is no guard."""


# signal -> what a kernel that received it did
_FAULTS = {
    signal.SIGSEGV: "accessed memory outside its arrays",
    signal.SIGBUS: "accessed memory that is unmapped or misaligned",
    signal.SIGFPE: "trapped on an arithmetic error (an integer division by zero or overflow)",
    signal.SIGILL: "executed an illegal instruction (a trap, or code built for another CPU)",
}

MAGIC = b"ember-cpu-v1\n"
HEADER_WORDS = 8  # grid xyz, block xyz, shared bytes, spare
PARALLEL_S = 150e-6  # a launch expected to run longer than this is shared with helpers
PARALLEL_ITEMS = 1 << 16  # the guess before a kernel's first run
MAX_BLOCK = 1024
# CUDA's launch limits, so that a launch written for a GPU fits here too; a larger grid
# would run for hours (work-groups one after another) rather than fail
LIMITS = LaunchLimits((2**31 - 1, 65535, 65535), (2**31 - 1) * 65535**2, (1024, 1024, 64), 1024)

# One 8-byte slot per parameter: the struct code of its C type, padded.
_CODES = {
    "bool": "?7x", "int8": "b7x", "uint8": "B7x", "int16": "h6x", "uint16": "H6x",
    "int32": "i4x", "uint32": "I4x", "int64": "q", "uint64": "Q", "float16": "e6x",
    "float32": "f4x", "float64": "d",
}  # fmt: skip
_BAD_VALUE = (struct.error, TypeError, ValueError, OverflowError)


# --------------------------------------------------------------------------- binaries


def pack(builds: Sequence[tuple[dict, bytes]]) -> bytes:
    """The container of ``builds`` ((description, shared library) pairs)."""
    described = [dict(meta, size=len(blob), digest=_digest(blob)) for meta, blob in builds]
    header = json.dumps({"builds": described}).encode()
    return MAGIC + header + b"\n" + b"".join(blob for _, blob in builds)


def unpack(binary: bytes) -> list[tuple[dict, bytes]]:
    """The (description, library) pairs of a container made by :func:`pack`.

    Raises
    ------
    BinaryError
        ``binary`` is not such a container, or is damaged: its header does not parse, or
        the sizes it names do not add up to what follows it.
    """
    what = f"the {len(binary)}-byte cpu binary"
    if not binary.startswith(MAGIC):
        raise BinaryError(
            f"{what} is not a cpu backend binary (it was compiled for another backend, or "
            "is damaged); it was not loaded"
        )
    header, newline, rest = binary[len(MAGIC) :].partition(b"\n")
    try:
        described = json.loads(header)["builds"]
        sizes = [int(meta["size"]) for meta in described]
    except (ValueError, KeyError, TypeError) as exc:
        raise BinaryError(f"{what} is damaged: its header does not parse ({exc})") from None
    if not newline or any(n <= 0 for n in sizes) or sum(sizes) != len(rest):
        raise BinaryError(
            f"{what} is damaged: its builds ({sizes} bytes) do not fill the "
            f"{len(rest)} bytes after its header; it was not loaded"
        )
    builds, at = [], 0
    for meta, size in zip(described, sizes, strict=True):
        blob = rest[at : at + size]
        if meta.get("digest") != _digest(blob):
            raise BinaryError(
                f"{what} is damaged: its {meta.get('march')} build does not match the digest "
                "recorded when it was made; it was not loaded"
            )
        builds.append((meta, blob))
        at += size
    return builds


def _digest(blob: bytes) -> str:
    """A digest of one build: ``dlopen`` trusts the library it maps, and a checksum
    recomputed over a damaged cache entry proves nothing about what is inside it."""
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


def check(binary: bytes) -> None:
    """Raise :class:`BinaryError` where ``binary`` is damaged as far as its format shows:
    the container (:func:`unpack`), and each ELF library's tables inside it (``dlopen``
    of a damaged shared object can crash the process)."""
    for meta, blob in unpack(binary):
        if blob.startswith(ELF_MAGIC) or sys.platform.startswith("linux"):
            check_elf(blob, f"the {meta.get('march', '')} build of a cpu binary")


def choose(builds: list[tuple[dict, bytes]]) -> tuple[dict, bytes]:
    """The build to load here: native for this CPU, else the baseline of this family."""
    here = toolchain.cpu_fingerprint()
    for meta, blob in builds:
        if meta.get("cpu") == here:
            return meta, blob
    for meta, blob in builds:
        if meta.get("cpu") is None and meta.get("family") == toolchain.family():
            return meta, blob
    raise LaunchError(
        "this cpu binary was compiled for another CPU and holds no portable build for "
        f"{toolchain.family()}; it will be compiled again here"
    )


_math_loaded = False


def _math_library() -> None:
    """Make libm's symbols global once, so kernels' math calls resolve at load."""
    global _math_loaded
    if _math_loaded:
        return
    toolchain.veclib()  # glibc's vector math too, where kernels are compiled to use it
    names = {"linux": ["libm.so.6"], "darwin": ["/usr/lib/libSystem.B.dylib"]}
    for name in names.get(sys.platform, []):
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            break
        except OSError:
            continue
    else:
        from ctypes.util import find_library

        found = find_library("m")
        if found:
            ctypes.CDLL(found, mode=ctypes.RTLD_GLOBAL)
    _math_loaded = True


def load_library(blob: bytes) -> tuple[ctypes.CDLL, str | None]:
    """``dlopen`` a shared library from bytes; returns it and the file to remove later
    (None where the file is gone already: POSIX keeps the mapping of an unlinked file).

    Every load gets a new file name: ``dlopen`` returns an already loaded library when the
    name matches (which rules out reusing ``/proc/self/fd/N`` of a ``memfd``)."""
    _math_library()
    mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_LOCAL", 0)
    path = os.path.join(_load_dir(), f"k{next(_loads)}.so")
    with open(path, "wb") as f:
        f.write(blob)
    try:
        library = ctypes.CDLL(path, mode=mode)
    except OSError as exc:
        raise DriverError(f"cannot load a cpu kernel library: {exc}", call="dlopen") from exc
    if os.name == "nt":  # a loaded DLL cannot be removed
        return library, path
    os.remove(path)
    return library, None


_loads = itertools.count()


@functools.cache
def _load_dir() -> str:
    """A private directory for library files, in memory where possible (``/dev/shm``)."""
    import atexit
    import shutil

    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = tempfile.mkdtemp(prefix="ember-cpu-", dir=base)
    atexit.register(shutil.rmtree, path, True)
    return path


# --------------------------------------------------------------------------- modules


class CPUModule(Module):
    """A loaded kernel library.

    Parameters
    ----------
    binary : bytes
        A container made by :func:`pack`.
    backend : CPUBackend
        Supplies the default stream and the helper threads of launches.
    """

    def __init__(self, binary: bytes, backend):
        check(binary)  # before dlopen: a damaged library can crash the process
        self.meta, blob = choose(unpack(binary))
        self.library, self._path = load_library(blob)
        self.backend = backend
        self.printer = None
        if self.meta.get("prints"):
            pointer = ctypes.c_void_p.in_dll(self.library, PRINT_SYMBOL)
            self.printer = PrintBuffer(pointer)

    @property
    def handle(self) -> ctypes.CDLL:
        """The ``ctypes.CDLL``."""
        return self.library

    def function(self, name: str, params: Sequence[Any]) -> CPUFunction:
        """Kernel ``name`` taking ``params`` (one DType or ``"ptr"`` each).

        Raises
        ------
        LaunchError
            The library has no kernel of that name.
        """
        try:
            entry = self.library[f"em_run_{name}"]
        except AttributeError:
            known = ", ".join(self.meta.get("kernels", ())) or "(none)"
            raise LaunchError(
                f"the cpu module has no kernel named {name!r}; it has: {known}"
            ) from None
        entry.argtypes = (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64)
        entry.restype = ctypes.c_int64
        if _guard is not None:  # the same call, a fault inside it raised as _Fault
            entry = partial(_guard.run, ctypes.cast(entry, ctypes.c_void_p).value)
        fn = CPUFunction(self, entry, name, params)
        for key, symbol in (
            ("shared_bytes", "em_shared_bytes_"),
            ("work_item_bytes", "em_item_bytes_"),
        ):
            try:  # Ember's generated kernels say; raw kernels do not
                fn.figures[key] = ctypes.c_int64.in_dll(self.library, symbol + name).value
            except ValueError:
                pass
        try:
            fn.dynamic = bool(ctypes.c_int64.in_dll(self.library, "em_dynamic_" + name).value)
        except ValueError:
            pass
        return fn

    def close(self) -> None:
        """Forget the temporary file of the library (it stays mapped while in use)."""
        path, self._path = self._path, None
        if path:
            try:
                os.remove(path)
            except OSError:
                pass

    def __repr__(self) -> str:
        return f"<CPUModule {self.meta.get('march')} kernels={self.meta.get('kernels')}>"


# --------------------------------------------------------------------------- launch


class CPUFunction(Function):
    """A kernel ready to launch; see the module docstring for the launch record."""

    def __init__(self, module: CPUModule, entry, name: str, params: Sequence[Any]):
        self.name = name
        self.params = tuple(p if p == PTR else as_dtype(p) for p in params)
        self.module = module
        self.entry = entry
        self._backend = module.backend
        codes = "".join("Q" if p == PTR else _CODES[p.name] for p in self.params)
        self._record = struct.Struct(f"<{HEADER_WORDS}q{codes}")
        self._nargs = len(self.params)
        self.figures: dict[str, int] = {}  # what resources() reports
        self.dynamic = False  # it takes dynamic shared memory (the record's word 6)
        self._last = float("inf")  # seconds the last launch took (inline decisions)
        self._cost = 0.0  # seconds per work-item, measured (parallel decisions)

    def launch(self, grid, block, args, shared_mem=0, stream=None) -> None:
        """Queue one launch of ``grid`` work-groups of ``block`` work-items on ``stream``.

        Raises
        ------
        LaunchError
            Wrong argument count or a value that does not fit its parameter, a bad grid or
            block, or ``shared_mem`` (raw cpu kernels have no dynamic shared memory).
        """
        if len(args) != self._nargs:
            check_arg_count(self, args)
        try:
            groups = grid[0] * grid[1] * grid[2]
            size = block[0] * block[1] * block[2]
            record = self._record.pack(*grid, *block, shared_mem, 0, *args)
        except (*_BAD_VALUE, IndexError):
            groups, size, record = self._slow_record(grid, block, args, shared_mem)
        if not 0 < groups < 2**31 or not 0 < size <= MAX_BLOCK or (shared_mem and not self.dynamic):
            groups, size, record = self._slow_record(grid, block, args, shared_mem)
        s = stream or self._backend.default_stream
        job = partial(self._run, record, groups, groups * size)
        if 0 < self._last < INLINE_S and s.run_inline(job):
            return
        job.long = not 0 < self._last < STEAL_S  # (unknown before its first run)
        s.submit(job)

    def _slow_record(self, grid, block, args, shared_mem) -> tuple[int, int, bytes]:
        """Error path of :meth:`launch`: check the configuration, convert the arguments."""
        grid, block = dim3(grid, "grid"), dim3(block, "block")
        size = block[0] * block[1] * block[2]
        too_large = LIMITS.error(self.name, grid, block)
        if too_large is not None:
            raise too_large
        if size > MAX_BLOCK:
            raise LaunchError(
                f"kernel {self.name!r}: a block of {size} threads is larger than the cpu "
                f"backend allows ({MAX_BLOCK}); launch with a smaller block"
            )
        if not isinstance(shared_mem, int) or shared_mem < 0:
            raise LaunchError(f"shared_mem must be a non-negative int, got {shared_mem!r}")
        if shared_mem and not self.dynamic:
            raise LaunchError(
                f"kernel {self.name!r} was launched with shared_mem={shared_mem!r} but takes "
                "no dynamic shared memory (a raw cpu kernel never does: declare its arrays "
                "in the kernel)"
            )
        if shared_mem > SHARED_BYTES:
            raise LaunchError(
                f"kernel {self.name!r}: shared_mem={shared_mem} bytes is more than the cpu "
                f"backend gives a block ({SHARED_BYTES})"
            )
        values = self._convert(args)
        try:
            record = self._record.pack(*grid, *block, shared_mem, 0, *values)
        except _BAD_VALUE as exc:
            raise LaunchError(f"cannot launch kernel {self.name!r}: {exc}") from exc
        return grid[0] * grid[1] * grid[2], size, record

    def _convert(self, args: Sequence[Any]) -> list[Any]:
        """Each argument as its parameter's value, NumPy's way; LaunchError naming a bad one."""
        out = list(args)
        for i, (param, value) in enumerate(zip(self.params, args, strict=True)):
            if param == PTR:
                out[i] = _pointer(self.name, i, value)
                continue
            kind = param.numpy.type
            converted = None
            if not isinstance(value, str | bytes) and value is not None:
                try:
                    converted = kind(value)
                except _BAD_VALUE:
                    converted = None
            if type(converted) is not kind:
                raise LaunchError(
                    f"kernel {self.name!r}: argument {i} must be a {param.name} scalar; "
                    f"cannot convert {type(value).__name__} {_shown(value)}"
                )
            out[i] = converted
        return out

    def _run(self, record: bytes, groups: int, items: int) -> None:
        """The job: run every work-group, on helper threads too when it is worth it."""
        counter = ctypes.c_int64(0)
        where = ctypes.addressof(counter)
        threads = self._backend.threads
        if self._cost:
            expected = self._cost * items
        else:
            expected = PARALLEL_S if items >= PARALLEL_ITEMS else 0.0
        printer = self.module.printer
        t0 = time.perf_counter()
        if printer is not None:
            printer.lock.acquire()
        faults: list[tuple[int, int]] = []
        try:
            if threads > 1 and groups > 1 and expected >= PARALLEL_S:
                chunk = max(1, groups // (threads * 4))
                part = partial(self._part, faults, record, where, chunk)
                self._backend.helpers.run(part, threads - 1)
                used = threads
            else:
                try:
                    self.entry(record, where, groups)
                except _Fault as exc:
                    faults.append(exc.args)
                used = 1
            if printer is not None:
                printer.flush()
        finally:
            if printer is not None:
                printer.lock.release()
        if faults:
            raise self._fault_error(*faults[0])
        seconds = time.perf_counter() - t0
        self._last = seconds
        self._cost = seconds * used / max(items, 1)

    def _part(self, faults: list, record: bytes, where: int, chunk: int) -> None:
        """One thread's part of a launch shared with helpers: its fault kept in ``faults``
        (a helper's errors do not reach the launching thread otherwise)."""
        try:
            self.entry(record, where, chunk)
        except _Fault as exc:
            faults.append(exc.args)

    def _fault_error(self, signo: int, address: int) -> DriverError:
        """The launch's error for a fault (``_guard``) inside the kernel."""
        name = signal.Signals(signo).name
        what = _FAULTS.get(signo, "was stopped by a signal")
        kernel = re.sub(r"_[0-9a-f]{16}$", "", self.name)  # the specialization's digest
        return DriverError(
            f"kernel {kernel!r} {what} ({name} at address {address:#x}); the launch "
            "stopped part-way, so its outputs are incomplete, and the process goes on.  An "
            "index out of its array's bounds is the usual cause: @ember.kernel(boundscheck="
            "True) or EMBER_BOUNDSCHECK=1 names the index and the line",
            code=signo, code_name=name, call=f"em_run_{self.name}",
        )  # fmt: skip

    def resources(self) -> dict[str, int]:
        """Static shared bytes per work-group, bytes each work-item keeps across barriers
        (``work_item_bytes``: arrays on the stack, not a slow path on a CPU), and the
        largest block."""
        return {**self.figures, "max_threads_per_block": MAX_BLOCK}

    def __repr__(self) -> str:
        return f"<CPUFunction {self.name}({', '.join(str(p) for p in self.params)})>"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _pointer(kernel: str, index: int, value: Any) -> int:
    """A pointer argument's address: an int, or an Ember buffer's handle."""
    if type(value) is int:
        return value
    if isinstance(value, Buffer) and type(getattr(value, "handle", None)) is int:
        return value.handle
    if isinstance(value, np.ndarray):
        raise LaunchError(
            f"kernel {kernel!r}: argument {index} is a NumPy array but the parameter is a "
            "device pointer; copy it to the device first with ember.asarray(x)"
        )
    raise LaunchError(
        f"kernel {kernel!r}: argument {index} must be a cpu buffer address for a pointer "
        f"parameter (backend.native_pointer(buffer)), got {type(value).__name__} "
        f"{_shown(value)}"
    )
