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

local = Intrinsic(
    "local",
    "local(shape, dtype): a per-thread array (registers, or the thread's private memory when "
    "indexed at run time); the shape and dtype must be compile-time constants; its contents "
    "start undefined.",
)
static_range = Intrinsic(
    "static_range",
    "static_range(stop) / static_range(start, stop[, step]): a range with constant bounds "
    "whose loop is unrolled at compile time: the loop variable is a constant in each copy "
    "of the body (it can index tuples and select compile-time values).",
    range,
)
grid_sync = Intrinsic(
    "grid_sync",
    "grid_sync(): wait for every thread of the whole grid (CUDA: a cooperative launch; the "
    "grid must fit on the device at once). Not available on devices without cooperative "
    "launch.",
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
atomic_exch = Intrinsic("atomic_exch", _ATOMIC_DOC.format("exch", "stores value (as exchange)"))
atomic_inc = Intrinsic(
    "atomic_inc",
    "atomic_inc(array, index, limit): atomically array[index] = 0 if it is >= limit, else "
    "array[index] + 1 (CUDA's atomicInc); returns the previous element.",
)
atomic_dec = Intrinsic(
    "atomic_dec",
    "atomic_dec(array, index, limit): atomically array[index] = limit if it is 0 or > limit, "
    "else array[index] - 1 (CUDA's atomicDec); returns the previous element.",
)
atomic_load = Intrinsic(
    "atomic_load",
    "atomic_load(array, index): read the element from memory every time it is called (not a "
    "copy a cache or register keeps): polling a flag another block or thread writes.",
)
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
_SYNC = " (CUDA order: the mask of participating lanes first)"
shfl_sync = Intrinsic("shfl_sync", "shfl_sync(mask, value, lane, width=32): shfl" + _SYNC)
shfl_up_sync = Intrinsic("shfl_up_sync", "shfl_up_sync(mask, value, delta, width=32)" + _SYNC)
shfl_down_sync = Intrinsic("shfl_down_sync", "shfl_down_sync(mask, value, delta, width=32)" + _SYNC)
shfl_xor_sync = Intrinsic("shfl_xor_sync", "shfl_xor_sync(mask, value, mask, width=32)" + _SYNC)
ballot = Intrinsic(
    "ballot",
    "ballot(predicate) or ballot(mask, predicate): a uint32 with bit k set when lane k's "
    "predicate is true.",
)
all_sync = Intrinsic(
    "all_sync", "all_sync(predicate) or all_sync(mask, predicate): True when every lane's is."
)
any_sync = Intrinsic(
    "any_sync", "any_sync(predicate) or any_sync(mask, predicate): True when any lane's is."
)
match_any_sync = Intrinsic(
    "match_any_sync",
    "match_any_sync(value) or match_any_sync(mask, value): a uint32 with bit k set when lane "
    "k holds the same bits as this lane (CUDA's __match_any_sync; floats compare as bits).",
)
syncwarp = Intrinsic("syncwarp", "syncwarp(mask=0xffffffff): wait for the lanes of the warp.")
activemask = Intrinsic("activemask", "activemask(): a uint32 of the lanes running this call.")
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


def _erfinv(x, complement: bool = False):
    """erfinv(x) (or erfcinv(x)) on the host: the normal quantile as the first guess, then
    Newton steps on whichever of erf/erfc has no cancellation (as codegen/mathlib.py)."""
    import math
    from statistics import NormalDist

    y = float(x)
    if y == (0.0 if complement else 1.0):
        return math.inf
    if y == (2.0 if complement else -1.0):
        return -math.inf
    if not (0.0 < y < 2.0 if complement else -1.0 < y < 1.0):
        return math.nan
    p = y / 2.0 if complement else (1.0 - y) / 2.0  # upper tail probability
    r = -NormalDist().inv_cdf(p) / math.sqrt(2.0) if 0.0 < p < 1.0 else 0.0
    for _ in range(3):
        slope = 2.0 / math.sqrt(math.pi) * math.exp(-r * r)
        if slope == 0.0:
            break
        if complement:
            e = (1.0 - y) - math.erf(r) if y > 0.5 else math.erfc(r) - y
            r += e / slope
        else:
            e = math.erf(r) - y
            if abs(y) > 0.5:
                e = ((1.0 - abs(y)) - math.erfc(abs(r))) * (1.0 if y > 0 else -1.0)
            r -= e / slope
    return r


def _unsigned_bits(x) -> tuple[int, int]:
    """(the integer's own bits as an unsigned int, 32 or 64: the width the functions use)."""
    import numpy as np

    size = np.asarray(x).dtype.itemsize
    return int(x) & ((1 << (8 * size)) - 1), (64 if size == 8 else 32)


def _host_popc(x):
    return _unsigned_bits(x)[0].bit_count()


def _host_clz(x):
    u, width = _unsigned_bits(x)
    return width - u.bit_length()


def _host_ffs(x):
    u, _ = _unsigned_bits(x)
    return (u & -u).bit_length()


def _host_brev(x):
    import numpy as np

    u, width = _unsigned_bits(x)
    return (np.uint64 if width == 64 else np.uint32)(int(f"{u:0{width}b}"[::-1], 2))


def _host_mulhi(a, b):
    import numpy as np

    bits = 64 if max(np.asarray(a).dtype.itemsize, np.asarray(b).dtype.itemsize) == 8 else 32
    return (int(a) * int(b)) >> bits


def _host_sincos(x):
    import numpy as np

    return np.sin(x), np.cos(x)


def _host_frexp(x):
    import numpy as np

    m, e = np.frexp(x)
    return m, np.int32(e)


_BIT_DOC = (
    " (CUDA's __{0}/__{0}ll; of the integer's own bits, narrower ones zero-extended to 32; "
    "an int32)"
)
erfinv = Intrinsic("erfinv", "erfinv(x): the inverse error function.", _erfinv)
erfcinv = Intrinsic(
    "erfcinv", "erfcinv(y): the inverse of erfc.", lambda y: _erfinv(y, complement=True)
)
popc = Intrinsic("popc", "popc(x): the number of bits set" + _BIT_DOC.format("popc"), _host_popc)
clz = Intrinsic(
    "clz", "clz(x): the number of leading zero bits" + _BIT_DOC.format("clz"), _host_clz
)
ffs = Intrinsic(
    "ffs",
    "ffs(x): the position (from 1) of the lowest bit set, 0 for 0" + _BIT_DOC.format("ffs"),
    _host_ffs,
)
brev = Intrinsic(
    "brev",
    "brev(x): the 32 (64) bits of x in reverse order, unsigned (CUDA's __brev).",
    _host_brev,
)
umulhi = Intrinsic(
    "umulhi", "umulhi(a, b): the high half of the full product of two unsigned 32- or 64-bit "
    "integers (CUDA's __umulhi/__umul64hi).", _host_mulhi,
)  # fmt: skip
mulhi = Intrinsic(
    "mulhi", "mulhi(a, b): the high half of the full product of two signed 32- or 64-bit "
    "integers (CUDA's __mulhi/__mul64hi).", _host_mulhi,
)  # fmt: skip
sincos = Intrinsic("sincos", "sincos(x): (sin(x), cos(x)).", _host_sincos)
frexp = Intrinsic(
    "frexp", "frexp(x): (mantissa, exponent) with x = mantissa * 2**exponent, the mantissa "
    "in [0.5, 1) (exponent an int32).", _host_frexp,
)  # fmt: skip
ldexp = Intrinsic("ldexp", "ldexp(x, e): x * 2**e (e an integer).", _numpy("ldexp"))


def _bitcast_host(x, dtype):
    import numpy as np

    from ember.dtypes import dtype as as_dtype

    if not isinstance(x, np.generic | np.ndarray):
        raise TypeError(
            f"ember.bitcast() on the host takes a NumPy scalar or array, whose dtype says "
            f"which bits to reinterpret; got {type(x).__name__} (write e.g. "
            "ember.bitcast(numpy.float32(x), ember.uint32))"
        )
    return np.asarray(x).view(as_dtype(dtype).numpy)[()]


bitcast = Intrinsic(
    "bitcast", "bitcast(x, dtype): the bits of x read as a value of dtype, which must have "
    "x's size (CUDA's __float_as_uint and friends; NumPy's view): "
    "bitcast(float32(1.0), uint32) == 0x3F800000.", _bitcast_host,
)  # fmt: skip

# added by the kernel-language work (issue 14); ember/__init__.py exports them too
NEW_NAMES = (
    "local", "static_range", "grid_sync", "atomic_exch", "atomic_inc", "atomic_dec",
    "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "ballot", "all_sync",
    "any_sync", "syncwarp", "activemask", "erfinv", "erfcinv", "popc", "clz", "ffs", "brev",
    "umulhi", "mulhi", "sincos", "frexp", "ldexp", "bitcast", "match_any_sync",
)  # fmt: skip

__all__ = [
    "thread_idx", "block_idx", "block_dim", "grid_dim", "global_id", "global_size", "grid",
    "lane_id", "warp_size", "barrier", "threadfence", "shared", "atomic_add", "atomic_sub",
    "atomic_min", "atomic_max", "atomic_exchange", "atomic_and", "atomic_or", "atomic_xor",
    "atomic_cas", "atomic_load",
    "shfl", "shfl_up", "shfl_down", "shfl_xor", "warp_sum", "warp_min", "warp_max",
    "unsafe_trunc", *_math, *NEW_NAMES,
]  # fmt: skip
