"""The C compiler of the CPU backend: clang as shipped in the ``ziglang`` wheel.

``zig cc`` is clang with its own target handling and, with ``-nostdlib``, needs nothing
installed on the machine: no system compiler, no C library headers (the kernel's header,
:mod:`.crt`, is freestanding).  One compile is one ``zig cc -shared`` process
(:func:`compile_shared`): 0.06-0.11 s per kernel on a 2-core Zen 4, measured in
``benchmarks/cpu.py``.

Flags (:data:`FLAGS`): ``-O3``; ``-march=<target>`` (``native`` by default: the host's CPU,
or a baseline such as ``x86-64-v2`` / ``armv8-a`` for binaries that must run on other CPUs
of the family); ``-fno-math-errno`` (math functions are builtins clang may inline and
vectorize; errno is never read); ``-ffp-contract=fast`` (``a * b + c`` may become an FMA, as
on GPUs); not ``-ffast-math``: NaN, infinities, signed zeros and the order of floating-point
operations keep NumPy's results; ``-g0``: zig cc emits DWARF by default, which nothing in
Ember reads and which took 25-35% of a kernel's compile (build machine, 2026-12-02: a
float16 map kernel 0.44 -> 0.29 s, a row reduction 0.44 -> 0.33 s, best of three; the
binaries 3-4x smaller; the machine code is the same).

zig keeps a cache of its own (object files by hash of the inputs).  Ember points it at a
private directory (:func:`zig_cache_dir`) so that it never fills the user's ``~/.cache/zig``;
Ember's own kernel cache stores the binaries that matter.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
import tempfile
import time

from ember.errors import BackendUnavailableError, CompileError, numbered
from ember.runtime.backend import INSTALL_HINT

FLAGS = ("-O3", "-fno-math-errno", "-ffp-contract=fast", "-fPIC", "-shared", "-nostdlib",
         "-fvisibility=hidden", "-w", "-g0")  # fmt: skip
# zig spells -march values with underscores (x86_64_v2 is x86-64-v2: SSE4.2, POPCNT)
BASELINE = {"x86_64": "x86_64_v2", "aarch64": "generic", "arm64": "generic"}
TIMEOUT_S = 300


@functools.cache
def zig_path() -> str:
    """The ``zig`` executable of the ``ziglang`` wheel.

    Raises
    ------
    BackendUnavailableError
        The wheel is missing, or is the placeholder PyPI serves on platforms zig does not
        support (version 0.0.0, no executable).
    """
    try:
        import ziglang
    except ImportError as exc:
        raise BackendUnavailableError(
            f"the cpu backend needs the ziglang wheel (its C compiler), which cannot be "
            f"imported ({exc}); install it with: {INSTALL_HINT['cpu']}"
        ) from exc
    folder = os.path.dirname(ziglang.__file__)
    for name in ("zig", "zig.exe"):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise BackendUnavailableError(
        f"the installed ziglang wheel ({zig_version()}) has no zig executable in {folder}: "
        "zig publishes no build for this platform (Linux, macOS and Windows on x86-64 and "
        "arm64 are supported); use another backend (EMBER_BACKEND=opencl)"
    )


@functools.cache
def zig_version() -> str:
    """The ``ziglang`` wheel's version (which fixes zig's and its clang's versions).

    Read from the name of the wheel's ``.dist-info`` folder beside the package (one
    directory listing, ~0.1 ms): ``importlib.metadata`` took ~30 ms of the first kernel's
    time on the build machine, most of it importing ``email`` and scanning ``sys.path``.
    It is the fallback where that folder is not found exactly once."""
    import importlib.util

    spec = importlib.util.find_spec("ziglang")
    if spec is not None and spec.origin:
        site = os.path.dirname(os.path.dirname(spec.origin))
        try:
            names = os.listdir(site)
        except OSError:
            names = []
        infos = [n for n in names if n.startswith("ziglang-") and n.endswith(".dist-info")]
        if len(infos) == 1:
            return infos[0][len("ziglang-") : -len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version("ziglang")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def clang_version() -> str:
    """The version of the clang inside zig (``zig cc --version``; one process, ~20 ms)."""
    try:
        out = _run([zig_path(), "cc", "--version"], timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    first = out.splitlines()[0] if out else ""
    return first.split("version", 1)[-1].strip() or "unknown"


def family() -> str:
    """The instruction-set family: ``x86_64``, ``aarch64``..."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def baseline() -> str:
    """The portable ``-march`` of this family (a bundle's fallback build)."""
    return BASELINE.get(family(), "native")


@functools.cache
def cpu_fingerprint() -> str:
    """What ``-march=native`` compiles for, as a short stable string (cache keys).

    From ``/proc/cpuinfo`` (vendor, family, model, feature flags) where there is one, else
    from :mod:`platform`: cheap, with no compiler process on the first-kernel path.
    """
    text = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            block = f.read().split("\n\n", 1)[0]
        keep = ("vendor_id", "cpu family", "model", "flags", "Features", "CPU implementer",
                "CPU architecture", "CPU variant", "CPU part")  # fmt: skip
        text = "\n".join(
            line for line in block.splitlines() if line.split(":", 1)[0].strip() in keep
        )
    except OSError:
        pass
    if not text:
        text = f"{platform.system()} {platform.machine()} {platform.processor()}"
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{family()}-{digest}"


@functools.cache
def native_cpu() -> str:
    """The CPU model clang compiles for with ``-march=native`` (``znver4``...), for
    ``ember info``; asks zig once (``-###``, ~70 ms)."""
    try:
        out = _run(
            [zig_path(), "cc", "-march=native", "-###", "-x", "c", "-c", os.devnull, "-o",
             os.devnull], timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    words = (out.stderr + out.stdout).replace('"', " ").split()
    cpus = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-target-cpu"]
    return cpus[-1] if cpus else "unknown"


@functools.cache
def veclib() -> str | None:
    """``"libmvec"`` when glibc's vector math library is here (x86-64 Linux), else None.

    With it, ``-fveclib=libmvec`` lets clang vectorize loops that call ``sinf``, ``expf``...
    (3.5x faster than NumPy's ``sin(x) + exp(x)`` on the 2-core test machine, within 3.5e-7
    relative); the library is made global before kernels load (``module.py``)."""
    import ctypes

    if family() != "x86_64" or not platform.system() == "Linux":
        return None
    try:
        ctypes.CDLL("libmvec.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None
    return "libmvec"


@functools.cache
def zig_cache_dir() -> str:
    """zig's private cache directory for this process (removed at exit)."""
    import atexit
    import shutil

    path = tempfile.mkdtemp(prefix="ember-zig-")
    atexit.register(shutil.rmtree, path, True)
    return path


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["ZIG_GLOBAL_CACHE_DIR"] = env["ZIG_LOCAL_CACHE_DIR"] = zig_cache_dir()
    return env


def _run(cmd: list[str], timeout: float, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=_environment(), cwd=cwd,
        check=False,
    )  # fmt: skip


def compile_shared(
    source: str,
    name: str,
    target: str = "native",
    options: tuple[str, ...] = (),
    shown: str | None = None,
) -> tuple[bytes, float]:
    """C ``source`` -> a shared library's bytes, and the seconds the compiler took.

    ``shown``: the source an error message numbers (a raw kernel's own text, whose line
    numbers the compiler reports thanks to a ``#line`` directive).

    Raises
    ------
    CompileError
        clang refused the source (the message has its log and the numbered source), or
        the compiler could not be run.
    """
    with tempfile.TemporaryDirectory(prefix="ember-cc-") as folder:
        src, out = os.path.join(folder, "kernel.c"), os.path.join(folder, "kernel.so")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        vectors = [f"-fveclib={veclib()}"] if veclib() else []
        cmd = [zig_path(), "cc", *FLAGS, *vectors, f"-march={target}", *options, "-o", out, src]
        t0 = time.perf_counter()
        try:
            done = _run(cmd, TIMEOUT_S, cwd=folder)
        except (OSError, subprocess.SubprocessError) as exc:
            raise CompileError(
                f"cannot run the C compiler ({cmd[0]}): {exc}", source=source
            ) from exc
        seconds = time.perf_counter() - t0
        if done.returncode != 0 or not os.path.exists(out):
            log = (done.stderr + done.stdout).strip()
            raise CompileError(
                f"C compile of kernel {name!r} for the cpu backend failed (zig cc, "
                f"-march={target}):\n{log}\n\nSource:\n{numbered(shown or source)}",
                log=log,
                source=shown or source,
            )
        with open(out, "rb") as f:
            return f.read(), seconds
