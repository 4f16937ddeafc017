"""CUDA C++ → cubin / PTX with NVRTC (``cuda.bindings.nvrtc``).

NVRTC needs no GPU: with the architecture given explicitly (``sm_90``), cubins are built on
any machine, which is how CI compile-checks CUDA code.  The library is loaded on the first
call, never on import.  Every NVRTC status is checked here and nowhere else; a failed
compile raises :class:`CompileError` carrying the full log and the numbered source.

Defaults: ``--gpu-architecture=sm_XX`` and ``-std=c++17``; no ``--use_fast_math`` (it
changes results: callers opt in through ``options``).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ember.errors import BackendUnavailableError, CompileError, numbered

_INSTALL = "pip install 'ember[cuda]' (it brings cuda-bindings and the nvidia-cuda-nvrtc wheel)"
_ARCH = re.compile(r"^(sm|compute)_\d+[a-z]?$")
DEFAULT_OPTIONS = ("-std=c++17",)


@dataclass(frozen=True)
class NvrtcOutput:
    """What one compile produced: the ``binary`` (cubin or PTX bytes) and NVRTC's ``log``."""

    binary: bytes
    log: str


@lru_cache(maxsize=1)
def _nvrtc():
    """The ``cuda.bindings.nvrtc`` module (imported on first use)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise BackendUnavailableError(
            f"compiling CUDA code needs cuda-bindings, which cannot be imported ({exc}); "
            f"install it with: {_INSTALL}"
        ) from exc
    return nvrtc


def _check(result: tuple, call: str, context: str = "") -> Any:
    """Value of an NVRTC call's result tuple; a non-success status raises CompileError."""
    err = result[0]
    if err:
        raise CompileError(_status_message(err, call, context))
    return result[1] if len(result) == 2 else (result[1:] or None)


def _status_message(err: Any, call: str, context: str) -> str:
    nvrtc = _nvrtc()
    name = getattr(err, "name", str(err))
    try:
        text = nvrtc.nvrtcGetErrorString(err)[1].decode()
    except Exception:
        text = ""
    doing = f" while {context}" if context else ""
    desc = f" ({text})" if text and text != name else ""
    return f"NVRTC call {call} failed with {name}{desc}{doing}"


def _call(fn_name: str, *args: Any) -> tuple:
    """Call an NVRTC function; a missing NVRTC library becomes BackendUnavailableError."""
    fn = getattr(_nvrtc(), fn_name)
    try:
        return fn(*args)
    except (RuntimeError, OSError) as exc:  # cuda.pathfinder's DynamicLibNotFoundError too
        raise BackendUnavailableError(
            f"the NVRTC library cannot be loaded ({type(exc).__name__}: {exc}); "
            f"install it with: {_INSTALL}"
        ) from exc


@lru_cache(maxsize=1)
def nvrtc_version() -> tuple[int, int]:
    """The NVRTC version, e.g. ``(13, 0)`` (asked once: the library loaded stays)."""
    major, minor = _check(_call("nvrtcVersion"), "nvrtcVersion")
    return int(major), int(minor)


# Where cuda.pathfinder looks for NVRTC besides the NVIDIA wheels on sys.path.
_SEARCH_ENV = ("CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")


def search_stamp() -> dict:
    """What decides which NVRTC library ``cuda.bindings`` would load, read without loading
    it: cuda.pathfinder's version, the variables of its search, and the modification times
    of the places it searches (each ``nvidia/*`` wheel folder on ``sys.path`` and its
    ``lib``/``bin``, conda's and the toolkit's library folders, the system loader's cache).
    Installing, removing or upgrading an NVRTC anywhere there changes one of them."""
    stamps: dict[str, int] = {}

    def note(path: str) -> None:
        try:
            stamps[path] = os.stat(path).st_mtime_ns
        except OSError:
            pass

    for site in dict.fromkeys(p for p in sys.path if p):
        root = os.path.join(site, "nvidia")
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        note(root)
        for name in names:
            for sub in ("", "lib", "bin"):
                note(os.path.join(root, name, sub))
    env = {k: os.environ.get(k) for k in _SEARCH_ENV}
    for var, sub in (("CONDA_PREFIX", "lib"), ("CUDA_HOME", "lib64"), ("CUDA_PATH", "lib64"),
                     ("CUDA_PATH", "bin")):  # fmt: skip
        if env[var]:
            note(os.path.join(env[var], sub))
    note("/etc/ld.so.cache")
    return {"pathfinder": package_stamp("cuda.pathfinder"), "env": env, "dirs": stamps}


def package_stamp(name: str) -> list:
    """Where package ``name`` is installed and when its files changed (its folder and
    ``_version.py``), found without importing it (``[]`` where it is not installed): the
    same in every process whether or not the package was imported there."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    folders = list(getattr(spec, "submodule_search_locations", None) or ()) if spec else []
    out: list = []
    for folder in folders:
        for path in (folder, os.path.join(folder, "_version.py")):
            try:
                out.append([path, os.stat(path).st_mtime_ns])
            except OSError:
                pass
    return out


def loaded_files() -> list[str]:
    """The NVRTC library files loaded in this process (none before the first NVRTC call):
    the mapped files on Linux, else cuda.pathfinder's record of the load."""
    if nvrtc_version.cache_info().currsize == 0:
        return []
    try:
        with open("/proc/self/maps") as f:
            found = {ln.split(None, 5)[5].strip() for ln in f if "libnvrtc" in ln}
        return sorted(p for p in found if os.path.basename(p).startswith("libnvrtc"))
    except (OSError, IndexError):
        pass
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        return [load_nvidia_dynamic_lib("nvrtc").abs_path]  # the loaded one: no second load
    except Exception:
        return []


def supported_archs() -> list[str]:
    """The ``sm_XX`` targets this NVRTC can compile for."""
    archs = _check(_call("nvrtcGetSupportedArchs"), "nvrtcGetSupportedArchs")
    return [f"sm_{a}" for a in archs]


def build_options(arch: str, options: Sequence[str] = ()) -> list[str]:
    """The NVRTC option list: Ember's defaults, then ``options`` (which may override them)."""
    if not _ARCH.match(arch):
        raise CompileError(
            f"bad CUDA architecture {arch!r}: expected 'sm_XX' such as 'sm_90' "
            f"(the device's compute capability; see DeviceInfo.arch)"
        )
    opts = list(options)
    names_arch = any(o.startswith(("-arch", "--gpu-architecture")) for o in opts)
    result = [] if names_arch else [f"--gpu-architecture={arch}"]
    for default in DEFAULT_OPTIONS:
        flag = default.split("=")[0]
        if not any(o.startswith(flag) for o in opts):
            result.append(default)
    return result + opts


def compile_program(
    source: str,
    arch: str,
    name: str = "kernel",
    options: Sequence[str] = (),
    output: str = "cubin",
) -> NvrtcOutput:
    """Compile CUDA C++ ``source`` and return the binary and the log.

    Parameters
    ----------
    source : str
        CUDA C++ source; kernels should be ``extern "C"`` to keep their plain names.
    arch : str
        Target, ``sm_XX`` (``compute_XX`` for PTX only).
    name : str
        Program name, shown in the log as ``<name>.cu``.
    options : sequence of str
        Extra NVRTC options, after the defaults.
    output : {"cubin", "ptx"}
        What to return.

    Raises
    ------
    CompileError
        The source does not compile (message with the full log and the numbered source)
        or NVRTC refused an option.
    """
    if output not in ("cubin", "ptx"):
        raise ValueError(f"output must be 'cubin' or 'ptx', got {output!r}")
    opts = build_options(arch, options)
    program = _check(
        _call("nvrtcCreateProgram", source.encode(), f"{name}.cu".encode(), 0, [], []),
        "nvrtcCreateProgram",
    )
    try:
        status = _call("nvrtcCompileProgram", program, len(opts), [o.encode() for o in opts])[0]
        log = _log(program)
        if status:
            raise _compile_error(status, name, arch, opts, log, source)
        return NvrtcOutput(_result(program, output), log)
    finally:
        _call("nvrtcDestroyProgram", program)


def _log(program: Any) -> str:
    size = _check(_call("nvrtcGetProgramLogSize", program), "nvrtcGetProgramLogSize")
    buf = bytearray(size)
    if size > 1:
        _check(_call("nvrtcGetProgramLog", program, buf), "nvrtcGetProgramLog")
    return bytes(buf).rstrip(b"\0").decode(errors="replace").strip()


def _result(program: Any, output: str) -> bytes:
    get_size, get = (
        ("nvrtcGetCUBINSize", "nvrtcGetCUBIN") if output == "cubin" else
        ("nvrtcGetPTXSize", "nvrtcGetPTX")
    )  # fmt: skip
    size = _check(_call(get_size, program), get_size)
    buf = bytearray(size)
    _check(_call(get, program, buf), get)
    if output == "ptx":
        return bytes(buf).rstrip(b"\0")
    if not size:
        raise CompileError(
            "NVRTC produced no cubin: the architecture is probably virtual (compute_XX); "
            "ask for sm_XX to get a cubin, or use compile_ptx"
        )
    return bytes(buf)


def _compile_error(status, name, arch, opts, log, source) -> CompileError:
    try:
        major, minor = nvrtc_version()
        version = f"NVRTC {major}.{minor}"
    except Exception:
        version = "NVRTC"
    header = _status_message(status, "nvrtcCompileProgram", f"compiling {name}.cu for {arch}")
    if getattr(status, "name", "") == "NVRTC_ERROR_COMPILATION":
        advice = "fix the error at the line the log names (line numbers above match it)."
    else:
        try:
            archs = ", ".join(supported_archs())
        except Exception:
            archs = "unknown"
        advice = f"check the options; this NVRTC compiles for: {archs}."
    message = (
        f"{header} ({version}, options: {' '.join(opts)}).\n\n"
        f"NVRTC log:\n{log or '(empty)'}\n\n"
        f"Source ({name}.cu):\n{numbered(source)}\n\n"
        f"What to do: {advice}"
    )
    return CompileError(message, log=log, source=source)


def compile_cubin(
    source: str, arch: str, name: str = "kernel", options: Sequence[str] = ()
) -> bytes:
    """Compile CUDA C++ to a cubin for ``arch`` (``sm_XX``); see :func:`compile_program`."""
    return compile_program(source, arch, name, options, "cubin").binary


def compile_ptx(source: str, arch: str, name: str = "kernel", options: Sequence[str] = ()) -> str:
    """Compile CUDA C++ to PTX text for ``arch`` (for inspection); see :func:`compile_program`."""
    return compile_program(source, arch, name, options, "ptx").binary.decode()
