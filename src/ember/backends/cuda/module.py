"""Loaded CUDA modules (``cuModuleLoadData`` of a cubin) and the lookup of their kernels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ember.backends.binaries import ELF_MAGIC, check_cuda_image
from ember.backends.cuda.driver import check, cu
from ember.backends.cuda.launch import CudaFunction
from ember.errors import ClosedError, LaunchError
from ember.runtime.backend import Module

if TYPE_CHECKING:
    from ember.backends.cuda.device import PrimaryContext
    from ember.backends.cuda.stream import CudaStream


class CudaModule(Module):
    """A cubin (or PTX / fatbin) loaded into the primary context.

    Parameters
    ----------
    binary : bytes
        The image, as made by :func:`ember.backends.cuda.nvrtc.compile_cubin`.
    context : PrimaryContext
        The context to load it into.
    default_stream : CudaStream
        Where its functions launch when no stream is given.
    """

    def __init__(self, binary: bytes, context: PrimaryContext, default_stream: CudaStream):
        if not isinstance(binary, (bytes, bytearray)):
            raise TypeError(f"a CUDA module is loaded from bytes, got {type(binary).__name__}")
        binary = bytes(binary)
        check_cuda_image(binary)  # a damaged image crashes the driver: BinaryError instead
        if not binary.startswith(ELF_MAGIC) and not binary.endswith(b"\0"):
            binary += b"\0"  # PTX text: the driver reads up to a NUL
        context.ensure_current()
        self.context = context
        self.default_stream = default_stream
        self._binary = binary  # kept for inspection; the driver reads it only to load
        self._handle = check(
            cu.cuModuleLoadData(self._binary),
            "cuModuleLoadData",
            f"loading a {len(binary)}-byte module",
        )

    @property
    def handle(self) -> cu.CUmodule:
        """The ``CUmodule``."""
        if self._handle is None:
            raise ClosedError("this module was unloaded (close()); load it again")
        return self._handle

    def function(self, name: str, params: Sequence[Any]) -> CudaFunction:
        """The kernel ``name`` (its ``extern "C"`` name) with parameter types ``params``.

        Raises :class:`LaunchError` naming the kernels the module does have when it has
        no kernel called ``name``.
        """
        self.context.ensure_current()
        err, handle = cu.cuModuleGetFunction(self.handle, name.encode())
        if err == cu.CUresult.CUDA_ERROR_NOT_FOUND:
            names = self.kernel_names()
            have = f"it has: {', '.join(names)}" if names else "it has no kernels"
            raise LaunchError(
                f"the module has no kernel named {name!r}; {have}.  Kernels need "
                f'extern "C" to keep their plain names.'
            )
        check((err, handle), "cuModuleGetFunction", f"looking up kernel {name!r}")
        return CudaFunction(handle, name, params, self)

    def kernel_names(self) -> list[str]:
        """Names of the kernels in the module ([] where the driver cannot enumerate them)."""
        try:
            count = check(cu.cuModuleGetFunctionCount(self.handle), "cuModuleGetFunctionCount")
            handles = check(
                cu.cuModuleEnumerateFunctions(count, self.handle), "cuModuleEnumerateFunctions"
            )
            names = [check(cu.cuFuncGetName(h), "cuFuncGetName") for h in handles]
        except Exception:  # older drivers/bindings lack these calls
            return []
        return sorted(n.decode() if isinstance(n, bytes) else str(n) for n in names)

    def close(self) -> None:
        """Unload the module; its functions must not be launched afterwards.  Idempotent."""
        handle, self._handle = self._handle, None
        if handle is not None and self.context.alive:
            check(cu.cuModuleUnload(handle), "cuModuleUnload")
