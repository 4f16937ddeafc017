"""Which engine runs a transform, and the n-dimensional transforms as 1-d steps.

A transform goes to the backend's vendor FFT (``Backend.fft()``, cuFFT on CUDA) unless
``EMBER_FFT=ember`` or the backend has none; :mod:`.vendor` may still decline a layout it
cannot describe to the library, and then Ember's kernels (:mod:`.engine`) run it.
"""

from __future__ import annotations

from ember.array import launch
from ember.array.fft import args as _args
from ember.array.fft import engine
from ember.array.ndarray import ndarray
from ember.dtypes import DType

_COMPUTE = ("float32", "float64", "complex64", "complex128")


def vendor_library(be):
    """The backend's vendor FFT when it should be used, else None."""
    from ember.config import settings

    if settings.fft == "ember":
        return None
    return be.fft()


def plan_cache(device=None):
    """The vendor library's plan cache on ``device`` (default: the current backend)."""
    from ember.runtime import api

    be = api.get_backend() if device is None else _backend_of(device)
    lib = be.fft()
    return None if lib is None else lib.cache


def _backend_of(device):
    from ember.array.devices import backend_of

    return backend_of(device)


def result(x: ndarray, axes: list[int], lengths: list[int], kind: str):
    """``(shape, dtype)`` of the transform's result."""
    shape = list(x.shape)
    for a, n in zip(axes, lengths, strict=True):
        shape[a] = n
    ct = _args.complex_of(x.dtype)
    if kind == "r2c":
        shape[axes[-1]] = lengths[-1] // 2 + 1
    if kind == "c2r":
        return tuple(shape), _args.real_of(x.dtype)
    return tuple(shape), ct


def _check_out(out, shape, dtype: DType, name: str) -> None:
    if out is None:
        return
    if not isinstance(out, ndarray):
        raise TypeError(f"ember.fft.{name}: out must be an ember array, got {type(out).__name__}")
    if out.shape != shape or out.dtype is not dtype:
        raise ValueError(
            f"ember.fft.{name}: out has shape {out.shape} and dtype {out.dtype.name}; the "
            f"result has shape {shape} and dtype {dtype.name}"
        )


def no_axes(x: ndarray, kind: str, out, name: str):
    """A transform over no axes: the input itself (NumPy's ``fftn(x, axes=())``)."""
    if kind != "c2c":
        raise IndexError(f"ember.fft.{name}: a real transform needs at least one axis")
    if out is not None:
        out[...] = x
        return out
    return x


def run(x: ndarray, axes: list[int], lengths: list[int], kind: str, inverse: bool,
        mode: str, out, name: str) -> tuple[ndarray, object]:  # fmt: skip
    """The transform of ``x`` over ``axes`` (the last one is the real axis of ``r2c`` /
    ``c2r``) to ``lengths``, forward or ``inverse``, normalized by ``mode``; and the vendor
    recipe that computed it (None: Ember's kernels)."""
    shape, dtype = result(x, axes, lengths, kind)
    _check_out(out, shape, dtype, name)
    be = x.backend
    scales = [_args.scale(mode, n, inverse) for n in lengths]
    lib = vendor_library(be)
    if lib is not None and x.size and 0 not in shape:
        recipe = _recipe(lib, x, axes, lengths, kind, inverse, scales, shape, dtype)
        if recipe:
            return recipe(x, out), recipe
    y = out if out is not None else launch.new(be, shape, dtype)
    if 0 in shape:
        return y, None
    if x.size == 0:  # every input point is padding: a zero result
        y[...] = 0
        return y, None
    _ember(x, y, axes, lengths, kind, inverse, scales)
    return y, None


_RECIPES: dict = {}  # call signature -> vendor.Recipe, or False (Ember's kernels run it)
RECIPES_KEPT = 256


def _recipe(lib, x, axes, lengths, kind, inverse, scales, shape, dtype):
    """The vendor recipe of this call's signature (made once; False when declined)."""
    key = (lib, x.shape, x.strides, x.dtype, x.offset % 16, tuple(axes), tuple(lengths), kind,
           inverse, tuple(scales))  # fmt: skip
    recipe = _RECIPES.get(key)
    if recipe is None:
        from ember.array.fft import vendor

        recipe = vendor.prepare(lib, x, axes, lengths, kind, inverse, scales, shape, dtype)
        if len(_RECIPES) >= RECIPES_KEPT:
            _RECIPES.clear()
        _RECIPES[key] = recipe or False
    return recipe


def _ember(x: ndarray, y: ndarray, axes, lengths, kind: str, inverse: bool, scales) -> None:
    """Ember's kernels, one axis at a time in NumPy's order (the real axis of ``r2c``
    first, that of ``c2r`` last), each step into a new array and the last into ``y``."""
    ct = _args.complex_of(x.dtype)
    if x.dtype.name not in _COMPUTE:
        x = x.astype(ct if kind == "c2c" else ct.real)
    order = list(range(len(axes)))
    if kind == "c2c":
        order.reverse()
        kinds = ["c2c"] * len(axes)
    elif kind == "r2c":
        order = order[-1:] + order[:-1]
        kinds = ["r2c"] + ["c2c"] * (len(axes) - 1)
    else:
        kinds = ["c2c"] * (len(axes) - 1) + ["c2r"]
    cur = x
    for step, (i, k) in enumerate(zip(order, kinds, strict=True)):
        a, n = axes[i], lengths[i]
        shape = list(cur.shape)
        shape[a] = n // 2 + 1 if k == "r2c" else n
        last = step == len(order) - 1
        dt = ct.real if k == "c2r" else ct
        nxt = y if last and y.dtype is dt else launch.new(cur.backend, tuple(shape), dt)
        engine.transform(cur, nxt, a, n, kind=k, conj_in=inverse,
                         conj_out=inverse and k != "c2r", scale=scales[i])  # fmt: skip
        cur = nxt
    if cur is not y:  # (a float16 result, computed in float32)
        y[...] = cur
