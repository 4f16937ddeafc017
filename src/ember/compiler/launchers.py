"""The launchers a kernel hands out: ``kernel[grid, block]`` (:func:`make_launcher`) and
``kernel.launch(n)`` (:class:`NDRangeLauncher`), with the compiled forms of their calls
(:mod:`ember.compiler._dispatch`, where it is built).  The launch path itself is described
in docs/design/compiler.md ("The launch path")."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ember.runtime import argtypes
from ember.runtime.checks import dim3 as _dims
from ember.tracebacks import hide_internal_frames

if TYPE_CHECKING:
    from ember.compiler.kernel import Kernel


def make_launcher(kernel: Kernel, grid, block, stream0, shared0):
    """``kernel[grid, block]``: a function that launches with the kernel's arguments.

    The compiled stub's (:mod:`ember.compiler._dispatch`, where it is built) does in C what
    the closure below does.  A closure rather than an object: the launch path reads its
    configuration from cells, which is measurably cheaper than attributes (see
    docs/design/compiler.md)."""
    native = _dispatch()
    if native is not None:
        return native.configured(kernel, grid, block, stream0, shared0, hide_internal_frames)

    def launch(*args, stream=stream0, shared_mem=shared0) -> None:
        try:  # costs nothing until it catches (tracebacks.py)
            if not kernel._last.run(grid, block, shared_mem, stream, args):
                kernel._launch_slow(grid, block, shared_mem, stream, args)
        except Exception as exc:
            hide_internal_frames(exc)
            raise

    launch.__qualname__ = launch.__name__ = f"{kernel.__name__}[{grid}, {block}]"
    launch.__doc__ = f"Launch {kernel.__name__} on a grid of {grid} blocks of {block} threads."
    return launch


@functools.cache
def _dispatch() -> Any:
    """The compiled ``kernel[grid, block]`` (``setup.py``), or None where it was not built
    (looked for once)."""
    try:
        from ember.compiler import _dispatch as native
    except ImportError:
        return None
    return native


def _configured() -> Any:
    """The compiled launcher factory (``_dispatch.configured``), or None where the stub is
    not built: what ``ember.RawKernel`` (a layer below) makes its launchers with, as a
    Kernel's (they take ``kernel._last.run`` and ``kernel._launch_slow`` alike)."""
    native = _dispatch()
    return None if native is None else native.configured


argtypes.register_launcher(_configured)


class NDRangeLauncher:
    """``kernel.launch(n)``: enough blocks of a device-chosen size to cover ``n`` threads.

    Where :mod:`ember.compiler._dispatch` is built, ``kernel.launch(n)`` returns its
    ``ndrange()`` around this object: ``__call__`` below in C, with :meth:`_config` and
    :meth:`_launch_slow` called from there."""

    __slots__ = ("kernel", "n", "block", "ndim", "_be", "_grid", "_blk")

    def __init__(self, kernel: Kernel, n, block=None):
        self.kernel = kernel
        self.ndim = len(n) if isinstance(n, tuple | list) else 1
        sizes = _dims(n, "launch size", smallest=0)
        self.n = None if 0 in sizes else sizes  # no threads: nothing to launch
        self.block = None if block is None else _dims(block, "block")
        if self.block is not None:
            kernel._within_bounds(self.block)
        self._be = self._grid = self._blk = None  # the configuration last computed, for _be

    def __call__(self, *args, stream=None, shared_mem=0) -> None:
        if self.n is None:
            return  # nothing to do for zero threads
        spec = self.kernel._last
        be = spec.backend
        try:  # costs nothing until it catches (tracebacks.py)
            if be is not None:
                if be is self._be:  # the grid and block of this device, computed before
                    grid, block = self._grid, self._blk
                else:
                    grid, block = self._config(be)
                if spec.run(grid, block, shared_mem, stream, args):
                    return
            self._launch_slow(args, stream, shared_mem)
        except Exception as exc:
            hide_internal_frames(exc)
            raise

    def _launch_slow(self, args: tuple, stream, shared_mem) -> None:
        """A launch whose arguments miss the inline cache: look up (or compile), launch."""
        k = self.kernel
        spec, args = k._resolve(args)
        grid, block = self._config(spec.backend)
        spec.launch(args, grid, block, shared_mem, stream)
        k._last = spec

    def _config(self, backend) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """Grid and block on ``backend``'s device (kept for the next launch there)."""
        block = self.block or default_block(backend, self.ndim, self.kernel.launch_bounds)
        grid = tuple(-(-n // b) for n, b in zip(self.n, block, strict=True))
        self._grid, self._blk, self._be = grid, block, backend
        return grid, block  # type: ignore[return-value]


@functools.cache
def _blocks(limit: int, ndim: int) -> tuple[int, int, int]:
    if ndim == 1:
        return (min(256, limit), 1, 1)
    if ndim == 2:
        return (16, 16, 1) if limit >= 256 else (8, 8, 1)
    return (8, 8, 4) if limit >= 256 else (4, 4, 4)


def default_block(backend, ndim: int, bounds=None) -> tuple[int, int, int]:
    """The block size ``kernel.launch(n)`` uses on ``backend``'s device (within the
    kernel's ``launch_bounds``, when given)."""
    limit = backend.device.max_threads_per_block
    return _blocks(limit if bounds is None else min(limit, bounds[0]), ndim)
