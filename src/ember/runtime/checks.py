"""Launch and copy checks shared by the backends and the launch paths: launch dimensions
(:func:`dim3`), a device's launch limits (:class:`LaunchLimits`), host arrays for copies,
byte ranges and argument counts.  Each raises the error that says what to pass instead."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ember._records import record
from ember.errors import LaunchError

if TYPE_CHECKING:
    from ember.runtime.backend import Function

Dim3 = tuple[int, int, int]


def dim3(value: Any, what: str, smallest: int = 1) -> Dim3:
    """An int or a tuple/list of 1-3 ints (each ≥ ``smallest``) as an (x, y, z) triple.

    Raises :class:`LaunchError` naming ``what`` (``"grid"``, ``"block"``...) otherwise.
    """
    items = value if isinstance(value, tuple | list) else (value,)
    try:
        dims = tuple(operator.index(d) for d in items)
    except TypeError:
        dims = ()
    if not dims or len(dims) > 3 or min(dims) < smallest:
        kind = "positive" if smallest >= 1 else "non-negative"
        raise LaunchError(
            f"{what} must be a {kind} int or a tuple of 1-3 {kind} ints, got {value!r}"
        )
    return (*dims, 1, 1)[:3]  # type: ignore[return-value]


@record(frozen=True)
class LaunchLimits:
    """The largest launch a device takes: ``grid`` (blocks per dimension), ``blocks`` (in
    all), ``block`` (threads per dimension), ``threads`` (per block).  Backends check a
    launch against them where the driver would crash rather than refuse it (PoCL's CPU
    device counts work-groups in 32 bits: a larger grid was SIGILL or an assert, issue 18),
    and to say which limit a refused launch broke."""

    grid: Dim3
    blocks: int
    block: Dim3
    threads: int

    def problem(self, grid: Dim3, block: Dim3) -> str | None:
        """What ``grid``/``block`` exceed (in words), or None when the launch fits."""
        for what, dims, most in (("grid", grid, self.grid), ("block", block, self.block)):
            for axis, (n, m) in enumerate(zip(dims, most, strict=True)):
                if n > m:
                    return f"{what} dimension {'xyz'[axis]} is {n}, the device allows {m}"
        blocks, threads = grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2]
        if blocks > self.blocks:
            return f"the grid has {blocks} blocks, the device allows {self.blocks}"
        if threads > self.threads:
            return f"a block has {threads} threads, the device allows {self.threads}"
        return None

    def error(self, kernel: str, grid: Dim3, block: Dim3) -> LaunchError | None:
        """The :class:`LaunchError` for a launch that does not fit, else None."""
        problem = self.problem(grid, block)
        if problem is None:
            return None
        return LaunchError(
            f"cannot launch kernel {kernel!r} with grid={tuple(grid)}, block={tuple(block)}: "
            f"{problem}; split the work into several launches or loop inside the kernel"
        )


def host_array(value: Any, writable: bool):
    """``value`` as a C-contiguous NumPy array for a copy (a view; never a copy for a
    destination).  Raises ValueError saying what to pass instead."""
    import numpy as np

    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if not arr.flags.c_contiguous:
        raise ValueError(
            "host arrays must be C-contiguous for a copy; pass numpy.ascontiguousarray(x)"
        )
    if writable and (arr is not value or not arr.flags.writeable):
        raise ValueError("the host destination must be a writable NumPy array")
    return arr


def check_range(what: str, offset: int, nbytes: int, size: int) -> None:
    """Raise ValueError unless ``[offset, offset + nbytes)`` lies in a ``size``-byte buffer."""
    if offset < 0 or nbytes < 0 or offset + nbytes > size:
        raise ValueError(
            f"{what} range [{offset}, {offset + nbytes}) is outside the {size}-byte buffer"
        )


def check_arg_count(function: Function, args: Sequence[Any]) -> None:
    """Raise :class:`LaunchError` when ``args`` does not match ``function.params`` in length."""
    if len(args) != len(function.params):
        raise LaunchError(
            f"kernel {function.name!r} takes {len(function.params)} argument(s) "
            f"({', '.join(str(p) for p in function.params)}), got {len(args)}"
        )
