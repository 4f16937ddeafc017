"""The last stages of ``kernel.inspect``: machine code (``"sass"``) and resource usage
(``"resources"``).

Resources, one dict shape on every path:

========================  ==========================================================
``registers``             registers per thread (CUDA)
``shared_bytes``          static shared (OpenCL: local) memory per block
``local_bytes``           local (OpenCL: private) memory per thread: spills, arrays
``const_bytes``           constant memory (CUDA)
``max_threads_per_block`` the largest block this kernel can be launched with
``spill_stores``          bytes of register spill stores (offline CUDA only)
``spill_loads``           bytes of spill loads (offline CUDA only)
========================  ==========================================================

On a device they come from the driver (``cuFuncGetAttribute``; OpenCL's work-group info);
without one (``dialect="cuda"`` or NumPy arguments) from NVRTC's ``ptxas -v`` report for
sm_90.  SASS needs NVIDIA's disassembler (``nvdisasm`` or ``cuobjdump`` from the CUDA
toolkit) on PATH; where neither is, the stage says so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

from ember.errors import EmberError

_ATTRIBUTES = {  # CudaFunction.attributes() -> resource names
    "num_regs": "registers",
    "shared_size_bytes": "shared_bytes",
    "local_size_bytes": "local_bytes",
    "const_size_bytes": "const_bytes",
    "max_threads_per_block": "max_threads_per_block",
}
_WORK_GROUP = {  # OpenCLFunction.work_group_info() -> resource names
    "local_size_bytes": "shared_bytes",
    "private_size_bytes": "local_bytes",
    "max_threads_per_block": "max_threads_per_block",
}


def on_device(kernel, args, backend) -> bool:
    """Whether ``args`` are real device arguments (not NumPy array stand-ins) on ``backend``."""
    import numpy as np

    return backend is not None and not any(isinstance(a, np.ndarray) for a in args)


def resources(kernel, args, types, target, backend) -> dict[str, Any]:
    """The ``"resources"`` stage (see the module docstring)."""
    if on_device(kernel, args, backend):
        return function_resources(kernel.dispatch(tuple(args)), backend)
    if target.dialect != "cuda":
        raise EmberError(
            "stage 'resources' of an OpenCL kernel needs the device: pass device arrays "
            "(ember.asarray) instead of NumPy arrays, or dialect='cuda' for NVRTC's numbers"
        )
    return offline_resources(kernel, types, target)


def function_resources(spec, backend) -> dict[str, Any]:
    """Resources of a compiled specialization, from the driver."""
    fn = spec.function
    if hasattr(fn, "attributes"):
        raw, names = fn.attributes(), _ATTRIBUTES
    elif hasattr(fn, "work_group_info"):
        raw, names = fn.work_group_info(backend.cl_device), _WORK_GROUP
    else:
        return {}
    return {names[k]: int(v) for k, v in raw.items() if k in names}


def offline_resources(kernel, types, target) -> dict[str, Any]:
    """Resources of the CUDA code for ``types``, from NVRTC's ``ptxas -v`` (no GPU)."""
    from ember.compiler import driver
    from ember.compiler.nvrtc import compile_program

    program = driver.typed_ir(kernel.captured, types, target, kernel._captures, kernel.checks)
    source = driver.source_of(program, target)
    options = (*kernel.options, "--ptxas-options=-v")
    out = compile_program(source, target.arch or "sm_90", program.kernel.name, options)
    return parse_ptxas(out.log, program.kernel.name)


_PTXAS = {
    "registers": r"Used (\d+) registers",
    "stack_frame": r"(\d+) bytes stack frame",
    "spill_stores": r"(\d+) bytes spill stores",
    "spill_loads": r"(\d+) bytes spill loads",
    "shared_bytes": r"(\d+) bytes smem",
    "const_bytes": r"(\d+) bytes cmem\[0\]",
}


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


def sass(kernel, args, types, target, backend) -> str:
    """The ``"sass"`` stage: the machine code of the cubin, disassembled."""
    if target.dialect != "cuda":
        raise EmberError("stage 'sass' needs the CUDA dialect (pass dialect='cuda')")
    command = disassembler()
    if command is None:
        raise EmberError(
            "stage 'sass' needs NVIDIA's disassembler: neither nvdisasm nor cuobjdump is on "
            "PATH (both come with the CUDA toolkit); stage='ptx' shows the code without them"
        )
    if on_device(kernel, args, backend):
        binary = kernel.dispatch(tuple(args)).binary
    else:
        from ember.compiler import driver
        from ember.compiler.nvrtc import compile_program

        program = driver.typed_ir(kernel.captured, types, target, kernel._captures, kernel.checks)
        source = driver.source_of(program, target)
        name = program.kernel.name
        binary = compile_program(source, target.arch or "sm_90", name, kernel.options).binary
    return disassemble(binary, command)


def disassemble(cubin: bytes, command: list[str]) -> str:
    with tempfile.TemporaryDirectory(prefix="ember-sass-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        done = subprocess.run([*command, path], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise EmberError(f"{os.path.basename(command[0])} failed: {done.stderr.strip()}")
    return done.stdout
