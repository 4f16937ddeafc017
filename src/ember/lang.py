"""Functions for use inside kernels: thread indices, synchronization, shared memory, atomics,
warp shuffles and math.

These objects are recognized by the kernel compiler (through their ``__ember_intrinsic__``
name).  Outside a kernel, the math functions work on NumPy values (so device functions can be
tested on the host); the others raise an error that says so.

Thread indexing (all are Python ints in a kernel, i.e. ``int64``)::

    i = ember.global_id()          # block_idx.x * block_dim.x + thread_idx.x
    i, j = ember.grid(2)           # global ids along x and y
    ember.thread_idx.x, ember.block_idx.y, ember.block_dim.z, ember.grid_dim.x

Atomics return the element's previous value; the index may be an int or a tuple::

    old = ember.atomic_add(hist, bin, 1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.errors import EmberError


def _outside(name: str) -> EmberError:
    return EmberError(
        f"ember.{name} can only be used inside a kernel (a function decorated with "
        "@ember.kernel, or a function such a kernel calls)"
    )


class Intrinsic:
    """A function the kernel compiler knows; ``host`` (if any) runs it outside kernels."""

    def __init__(self, name: str, doc: str, host: Callable[..., Any] | None = None):
        self.__name__ = name
        self.__doc__ = doc
        self.__ember_intrinsic__ = name
        self._host = host

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._host is None:
            raise _outside(f"{self.__name__}()")
        return self._host(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<ember kernel function {self.__name__}>"


class Dim3:
    """``ember.thread_idx`` and friends: ``.x``, ``.y``, ``.z`` inside kernels."""

    __slots__ = ("__ember_intrinsic__",)

    def __init__(self, name: str):
        self.__ember_intrinsic__ = name

    def __getattr__(self, attr: str):
        if attr in ("x", "y", "z"):
            raise _outside(f"{self.__ember_intrinsic__}.{attr}")
        raise AttributeError(f"ember.{self.__ember_intrinsic__} has only .x, .y and .z")

    def __repr__(self) -> str:
        return f"<ember kernel index {self.__ember_intrinsic__}>"


def _numpy(name: str) -> Callable[..., Any]:
    def host(*args):
        import numpy as np

        return getattr(np, name)(*args)

    return host


thread_idx = Dim3("thread_idx")
block_idx = Dim3("block_idx")
block_dim = Dim3("block_dim")
grid_dim = Dim3("grid_dim")

global_id = Intrinsic("global_id", "global_id(axis=0): block_idx * block_dim + thread_idx.")
global_size = Intrinsic("global_size", "global_size(axis=0): grid_dim * block_dim.")
grid = Intrinsic("grid", "grid(ndim): the global ids along the first ndim axes (a tuple).")
lane_id = Intrinsic("lane_id", "lane_id(): this thread's index within its warp / sub-group.")
warp_size = Intrinsic("warp_size", "warp_size(): threads per warp (CUDA) or sub-group.")
barrier = Intrinsic(
    "barrier",
    "barrier(): wait for every thread of the block; shared and "
    "global memory writes before it are visible after it.",
)
threadfence = Intrinsic(
    "threadfence",
    "threadfence(): this thread's global memory writes before it are seen by every thread "
    "of the device before its writes after it (CUDA __threadfence); with an atomic flag, "
    "the way blocks of one launch hand values to each other (decoupled look-back).",
)
shared = Intrinsic(
    "shared",
    "shared(shape, dtype): a static per-block array (the shape and "
    "dtype must be compile-time constants); only in the kernel itself.",
)

_ATOMIC_DOC = "atomic_{0}(array, index, value): atomically {1}; returns the previous element."
atomic_add = Intrinsic("atomic_add", _ATOMIC_DOC.format("add", "array[index] += value"))
atomic_sub = Intrinsic("atomic_sub", _ATOMIC_DOC.format("sub", "array[index] -= value"))
atomic_min = Intrinsic("atomic_min", _ATOMIC_DOC.format("min", "keeps the minimum"))
atomic_max = Intrinsic("atomic_max", _ATOMIC_DOC.format("max", "keeps the maximum"))
atomic_exchange = Intrinsic("atomic_exchange", _ATOMIC_DOC.format("exchange", "stores value"))
atomic_and = Intrinsic("atomic_and", _ATOMIC_DOC.format("and", "array[index] &= value"))
atomic_or = Intrinsic("atomic_or", _ATOMIC_DOC.format("or", "array[index] |= value"))
atomic_xor = Intrinsic("atomic_xor", _ATOMIC_DOC.format("xor", "array[index] ^= value"))
atomic_cas = Intrinsic(
    "atomic_cas",
    "atomic_cas(array, index, expected, value): store value if the element equals expected "
    "(bit pattern for floats); returns the previous element.",
)


def _unsafe_trunc_host(x, dtype=None):
    import numpy as np

    if dtype is None:
        return int(x)
    from ember.dtypes import dtype as as_dtype

    with np.errstate(all="ignore"):
        return np.asarray(x).astype(as_dtype(dtype).numpy)[()]


unsafe_trunc = Intrinsic(
    "unsafe_trunc",
    "unsafe_trunc(x, dtype=None): x converted to an integer (a Python int, or dtype) by "
    "truncation, without the range check that boundscheck=True adds to int(x) and "
    "ember.int32(x): NaN, infinities and values out of range give an unspecified result.",
    _unsafe_trunc_host,
)

shfl = Intrinsic("shfl", "shfl(value, lane): value from another lane of the warp.")
shfl_up = Intrinsic("shfl_up", "shfl_up(value, delta): value from lane - delta.")
shfl_down = Intrinsic("shfl_down", "shfl_down(value, delta): value from lane + delta.")
shfl_xor = Intrinsic("shfl_xor", "shfl_xor(value, mask): value from lane ^ mask.")
warp_sum = Intrinsic("warp_sum", "warp_sum(value): sum over the warp, given to every lane.")
warp_min = Intrinsic("warp_min", "warp_min(value): minimum over the warp, to every lane.")
warp_max = Intrinsic("warp_max", "warp_max(value): maximum over the warp, to every lane.")

MATH1 = (
    "sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "erf", "erfc", "lgamma", "tgamma", "floor", "ceil", "trunc", "rint", "fabs",
)  # fmt: skip
MATH2 = ("pow", "atan2", "hypot", "copysign", "fmod", "fmin", "fmax")
PREDICATES = ("isnan", "isinf", "isfinite")
_NUMPY_NAME = {
    "rsqrt": None,
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "atan2": "arctan2",
    "erf": None,
    "erfc": None,
    "lgamma": None,
    "tgamma": None,
    "pow": "power",
}

_math: dict[str, Intrinsic] = {}
for _name in (*MATH1, *MATH2, *PREDICATES, "fma"):
    _np_name = _NUMPY_NAME.get(_name, _name)
    _host = _numpy(_np_name) if _np_name else None
    _math[_name] = Intrinsic(_name, f"{_name}: float math (float16 is computed in float32).", _host)
_math["fma"]._host = lambda a, b, c: a * b + c
globals().update(_math)

__all__ = [
    "thread_idx", "block_idx", "block_dim", "grid_dim", "global_id", "global_size", "grid",
    "lane_id", "warp_size", "barrier", "threadfence", "shared", "atomic_add", "atomic_sub",
    "atomic_min", "atomic_max", "atomic_exchange", "atomic_and", "atomic_or", "atomic_xor",
    "atomic_cas",
    "shfl", "shfl_up", "shfl_down", "shfl_xor", "warp_sum", "warp_min", "warp_max",
    "unsafe_trunc", *_math,
]  # fmt: skip
