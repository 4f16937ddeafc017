"""CUDA code inspected without a device: PTX, cubin facts and ``ptxas -v`` resources from
NVRTC, SASS from the CUDA toolkit's disassembler.

:meth:`CudaBackend.inspect_offline` and :meth:`CudaBackend.disassemble` are the entry
points; ``kernel.inspect(..., dialect="cuda")`` reaches them through the registry
(:func:`ember.runtime.backend.toolchain`).  SASS needs ``nvdisasm`` or ``cuobjdump`` on PATH;
where neither is, the stage says so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

from ember.errors import EmberError

_PTXAS = {
    "registers": r"Used (\d+) registers",
    "stack_frame": r"(\d+) bytes stack frame",
    "spill_stores": r"(\d+) bytes spill stores",
    "spill_loads": r"(\d+) bytes spill loads",
    "shared_bytes": r"(\d+) bytes smem",
    "const_bytes": r"(\d+) bytes cmem\[0\]",
}


def offline(stage: str, source: str, arch: str, name: str, options: tuple[str, ...]) -> Any:
    """Stage ``stage`` (``ptx``, ``cubin-info``, ``sass``, ``resources``) of CUDA ``source``
    compiled by NVRTC for ``arch``."""
    from ember.backends.cuda.nvrtc import compile_program

    if stage == "ptx":
        return compile_program(source, arch, name, options, output="ptx").binary.decode()
    if stage == "sass":
        command = disassembler_or_raise()
        return disassemble(compile_program(source, arch, name, options).binary, command)
    if stage == "resources":
        out = compile_program(source, arch, name, (*options, "--ptxas-options=-v"))
        return parse_ptxas(out.log, name)
    if stage == "cubin-info":
        out = compile_program(source, arch, name, options)
        return {"bytes": len(out.binary), "arch": arch, "log": out.log}
    raise EmberError(f"NVRTC gives no stage {stage!r}")


def parse_ptxas(log: str, name: str) -> dict[str, Any]:
    """The numbers of ``ptxas -v`` for kernel ``name`` (its ``Function properties`` and
    ``Used ...`` lines)."""
    start = log.find(f"Compiling entry function '{name}'")
    text = log[start:] if start >= 0 else log
    out: dict[str, Any] = {}
    for key, pattern in _PTXAS.items():
        m = re.search(pattern, text)
        out[key] = int(m.group(1)) if m else 0
    out["local_bytes"] = out.pop("stack_frame")
    out["max_threads_per_block"] = 1024
    return out


def disassembler() -> list[str] | None:
    """The command that prints a cubin's SASS, or None when the toolkit is not on PATH."""
    for tool, flags in (("nvdisasm", ["-c", "-g"]), ("cuobjdump", ["-sass"])):
        path = shutil.which(tool)
        if path:
            return [path, *flags]
    return None


def disassembler_or_raise() -> list[str]:
    command = disassembler()
    if command is None:
        raise EmberError(
            "stage 'sass' needs NVIDIA's disassembler: neither nvdisasm nor cuobjdump is on "
            "PATH (both come with the CUDA toolkit); stage='ptx' shows the code without them"
        )
    return command


def sass(cubin: bytes) -> str:
    """The SASS of ``cubin``."""
    return disassemble(cubin, disassembler_or_raise())


def disassemble(cubin: bytes, command: list[str]) -> str:
    with tempfile.TemporaryDirectory(prefix="ember-sass-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        done = subprocess.run([*command, path], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise EmberError(f"{os.path.basename(command[0])} failed: {done.stderr.strip()}")
    return done.stdout
