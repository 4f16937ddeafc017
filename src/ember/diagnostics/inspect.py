"""The stages of ``kernel.inspect`` after the C source: ``"ptx"``, ``"cubin-info"``,
``"sass"`` and ``"resources"``.

Which of them a backend gives is one of its capabilities: ``backend.inspect_stages`` on its
device, ``offline_stages`` without one (:meth:`~ember.runtime.backend.Backend.inspect_offline`,
e.g. NVRTC for ``dialect="cuda"`` or NumPy arguments).  Nothing here knows a backend by name.

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
"""

from __future__ import annotations

from typing import Any

from ember.errors import EmberError
from ember.runtime import backend as registry

STAGES = ("ptx", "cubin-info", "sass", "resources")


def on_device(args, backend) -> bool:
    """Whether ``args`` are real device arguments (not NumPy array stand-ins) on ``backend``."""
    import numpy as np

    return backend is not None and not any(isinstance(a, np.ndarray) for a in args)


def stage(name: str, target, backend, dispatch, generate, options=()) -> Any:
    """Stage ``name`` for ``target``.

    ``backend`` is the arguments' backend, or None for host stand-ins / ``dialect=``;
    ``dispatch()`` compiles (or finds) the specialization on it; ``generate()`` gives
    ``(source, kernel name)`` for the toolchain that works without a device."""
    if backend is not None:
        if name not in backend.inspect_stages:
            raise EmberError(
                f"stage {name!r} is not available on the {backend.label or backend.name} "
                f"backend (its stages: {_stages(backend.inspect_stages)})"
            )
        if name in _ON_DEVICE:
            return _ON_DEVICE[name](dispatch(), backend, target)
        return offline(type(backend), name, target, generate, options)
    tools = registry.toolchain(target.dialect)
    if tools is None or name not in tools.offline_stages:
        raise EmberError(
            f"stage {name!r} of {target.dialect} code needs the device: pass device arrays "
            f"(ember.asarray) instead of NumPy arrays{_offline_hint(name)}"
        )
    return offline(tools, name, target, generate, options)


def offline(tools, name: str, target, generate, options=()) -> Any:
    """Stage ``name`` from ``tools.inspect_offline`` (a backend class), no device needed."""
    source, kernel_name = generate()
    return tools.inspect_offline(name, source, target, kernel_name, tuple(options))


def function_resources(spec, backend=None) -> dict[str, Any]:
    """Resources of a compiled specialization, from the driver."""
    return dict(spec.function.resources())


def _resources(spec, backend, target) -> dict[str, Any]:
    return function_resources(spec, backend)


def _cubin_info(spec, backend, target) -> dict[str, Any]:
    info = {"bytes": len(spec.binary), "arch": target.arch, **spec.timings}
    return {**info, **spec.function.attributes()}


def _sass(spec, backend, target) -> str:
    return backend.disassemble(spec.binary)


_ON_DEVICE = {"resources": _resources, "cubin-info": _cubin_info, "sass": _sass}


def _stages(stages) -> str:
    return ", ".join(["ir", "source", *sorted(stages)])


def _offline_hint(name: str) -> str:
    from ember.codegen import dialects

    able = []
    for d in dialects.names():
        tools = registry.toolchain(d)
        if tools is not None and name in tools.offline_stages:
            able.append(f"dialect={d!r}")
    return f", or {' / '.join(able)} for its numbers without a device" if able else ""
