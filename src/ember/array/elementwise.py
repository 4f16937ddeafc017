"""Elementwise operations: :class:`Ufunc` objects, their dispatch and their launch.

A call ``ember.add(x, y)`` (or ``x + y``) goes:

1. **Key** - per operand its dtype (arrays) or Python/NumPy scalar type, plus the backend;
   a dict lookup finds the :class:`Dispatch` made the first time that key was seen, holding
   the type resolution (:mod:`ember.array.rules`), the scalar converters and the kernel
   for the contiguous case.  Promotion is never re-derived on the hot path.
2. **Layout** - operands of the result's shape that are all exactly C-strided run the
   contiguous kernel on flat 1-d views; anything else (broadcasting, strided views,
   negative strides, ``out=`` views) is broadcast, its axes coalesced, and runs the strided
   N-d kernel (which may turn out contiguous after all) - see :mod:`ember.array.kernels`.
3. **Launch** - the entry keeps the compiled specialization's ``run`` (its generated
   guard-and-launch function, :mod:`ember.compiler.args`), so a repeated small operation
   is a dict hit, an allocation and one call into the launch fast path.

:func:`binary` is the operators' entry point: it handles array-scalar and same-shape
contiguous array-array operations inline and passes everything else to the ufunc.
"""

from __future__ import annotations

import math
from typing import Any

from ember.array import broadcast, ops, rules
from ember.array.launch import flat1 as flat  # (x, n): x as a 1-d view of n elements
from ember.array.ndarray import check_writable, ndarray, not_on_device
from ember.frontend.types import scalar
from ember.runtime.memory import allocate
from ember.tracebacks import hide_internal_frames

# Launch shape of the 1-d kernels.  GPUs: blocks of 128 threads and one tile per thread (no
# grid-stride loop) measured fastest on an H200 (benchmarks/tune_elementwise.py, results in
# benchmarks/results/tune-elementwise-*: 2*x+y 4305 GB/s vs 3836 with 256 threads and a grid
# of 32 blocks per SM; PyTorch 4324).  CPU devices: fewer, larger work-groups.
BLOCK = 256  # threads per block on CPU devices
GPU_BLOCK = 128  # threads per block on GPUs
UNROLL = 4  # elements per thread per tile of the elementwise kernels (kernels.UNROLL)
WAVES = 32  # CPU devices: the grid is at most WAVES blocks per compute unit
MAX_GRID = (1 << 31) - 1  # GPUs: the grid is limited only by the driver
INT64_MAX = (1 << 63) - 1


class Ufunc:
    """An elementwise array function (``ember.add``, ``ember.sqrt``...).

    Called with ember arrays (and Python or NumPy scalars) it runs on the device with
    NumPy's broadcasting and NEP 50 promotion; ``out=`` writes into an existing array
    (cast like NumPy's ``same_kind``).  With no ember array among its operands it computes
    with NumPy on the host, so code using it can be tested without a device.  Math
    functions carry ``__ember_intrinsic__``: inside a kernel, ``ember.sqrt(x)`` is the
    kernel intrinsic on a number.
    """

    def __init__(self, name: str, nin: int, rule: rules.Rule, host=None, intrinsic=None):
        self.__name__ = self.__qualname__ = name
        self.nin = nin
        self.rule = rule
        self.host = host
        self.cache: dict[tuple, Dispatch] = {}
        if intrinsic is not None:
            self.__ember_intrinsic__ = intrinsic
        self.__doc__ = (
            f"ember.{name}: NumPy's ``{host.__name__ if host else name}`` on ember arrays "
            f"({nin} operand{'s' if nin > 1 else ''}; ``out=`` optional).\n\n{rule.__doc__}"
        )

    def __call__(self, *args, out: ndarray | None = None):
        if out is None and len(args) == 2 == self.nin:
            return binary(self, *args)  # the fast path of ``x + y`` (falls back to apply)
        if len(args) == self.nin + 1 and out is None and isinstance(args[-1], ndarray):
            args, out = args[:-1], args[-1]  # NumPy's positional output: f(x, out)
        if len(args) != self.nin:
            raise TypeError(
                f"ember.{self.__name__} takes {self.nin} operand(s) (and an output array, "
                f"positionally or as out=), got {len(args)}"
            )
        try:  # costs nothing until it catches
            return apply(self, args, out)
        except Exception as exc:
            hide_internal_frames(exc)  # a user error shows the user's frames only
            raise

    def at(self, a: ndarray, indices, b=None, /) -> None:
        """``a[indices] = self(a[indices], b)`` in place, unbuffered: an element named
        several times by ``indices`` is updated that many times (NumPy's ``ufunc.at``;
        ``ember.add.at(hist, bins, 1)``).  Atomic device updates: ``add``, ``subtract``,
        ``minimum``, ``maximum`` and the bitwise ones (:mod:`ember.array.scatter`)."""
        from ember.array import scatter

        scatter.at(self, a, indices, b)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        """NumPy's ``ufunc.accumulate`` (:mod:`ember.array.ufunc_methods`)."""
        return self._method("accumulate", (array,), {"axis": axis, "dtype": dtype, "out": out})

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
        """NumPy's ``ufunc.reduce`` (``initial=``, ``where=`` too): the tuned reduction
        (``ember.sum`` for ``add``...) where there is one, else a generic one."""
        named = {"axis": axis, "dtype": dtype, "out": out, "keepdims": keepdims, **kwargs}
        return self._method("reduce", (array,), named)

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        """NumPy's ``ufunc.reduceat``."""
        return self._method(
            "reduceat", (array, indices), {"axis": axis, "dtype": dtype, "out": out}
        )

    def _method(self, method: str, inputs: tuple, kwargs: dict):
        from ember.array import protocols

        defaults = {"dtype": None, "out": None, "keepdims": False}  # (axis=None: all axes)
        kwargs = {k: v for k, v in kwargs.items() if k not in defaults or v is not defaults[k]}
        label = f"ember.{self.__name__}.{method}"
        return protocols.reduction_method(self.__name__, self, method, label, inputs, kwargs)

    def __repr__(self) -> str:
        return f"<ember ufunc {self.__name__}>"


class Dispatch:
    """What one operand-type key resolves to (see the module docstring)."""

    __slots__ = (
        "name", "res", "kinds", "conv", "out", "isz", "strides1", "block", "tile", "maxgrid",
        "fullgrid", "kernel", "run",
    )  # fmt: skip

    def __init__(self, uf: Ufunc, res: rules.Resolution, kinds, conv, backend):
        self.name = uf.__name__
        self.res = res
        self.kinds = kinds
        self.conv = conv
        self.out = res.out
        self.isz = res.out.itemsize
        self.strides1 = (self.isz,)
        gpu = backend.device.is_gpu
        threads = min(GPU_BLOCK if gpu else BLOCK, backend.device.max_threads_per_block)
        self.block = (threads, 1, 1)
        self.tile = threads * UNROLL
        self.maxgrid = MAX_GRID if gpu else max(1, backend.device.multiprocessors) * WAVES
        self.fullgrid = (self.maxgrid, 1, 1)
        self.kernel = None  # the contiguous kernel, made on first launch
        self.run = self.first_run

    def contiguous_kernel(self):
        if self.kernel is None:
            from ember.array import kernels

            self.kernel = kernels.contiguous(self.res.op, self.res.ct, self.kinds, self.res.c0)
        return self.kernel

    def first_run(self, grid, block, shared, stream, args) -> bool:
        """Compile (or find) the specialization, launch, and keep its fast path."""
        spec = self.contiguous_kernel().dispatch(args)
        spec.launch(args, grid, block, shared, stream)
        self.run = spec.run
        return True

    def launch(self, n: int, args: tuple) -> None:
        """Launch the contiguous kernel over ``n`` elements."""
        tiles = (n + self.tile - 1) // self.tile
        grid = (tiles, 1, 1) if tiles < self.maxgrid else self.fullgrid
        if not self.run(grid, self.block, 0, None, args):
            self.contiguous_kernel().dispatch(args).launch(args, grid, self.block)


# --------------------------------------------------------------------- the hot path
def binary(uf: Ufunc, a, b):
    """``a <op> b``: inline fast paths, else ``uf(a, b)``."""
    ta, tb = type(a), type(b)
    if ta is ndarray:
        if tb is ndarray:
            e = uf.cache.get((a.dtype, b.dtype, a.backend))
            if e is None or a.shape != b.shape or not (a._c and b._c) or b.backend is not a.backend:
                return apply(uf, (a, b), None)
            return _contiguous(e, a, a, b)
        e = uf.cache.get((a.dtype, tb, a.backend))
        if e is None or not a._c:
            return apply(uf, (a, b), None)
        conv = e.conv[1]
        if conv is not None:
            try:
                b = conv(b)
            except (OverflowError, ValueError):
                return apply(uf, (a, b), None)
        return _contiguous(e, a, a, b)
    if tb is ndarray:
        e = uf.cache.get((ta, b.dtype, b.backend))
        if e is None or not b._c:
            return apply(uf, (a, b), None)
        conv = e.conv[0]
        if conv is not None:
            try:
                a = conv(a)
            except (OverflowError, ValueError):
                return apply(uf, (a, b), None)
        return _contiguous(e, b, a, b)
    return apply(uf, (a, b), None)


def inplace(uf: Ufunc, x: ndarray, b):
    """``x <op>= b``: the contiguous same-dtype case inline, else ``uf(x, b, out=x)``."""
    tb = type(b)
    if tb is ndarray:
        e = uf.cache.get((x.dtype, b.dtype, x.backend))
        fast = (
            e is not None and e.out is x.dtype and x._c and b._c and b.shape == x.shape
            and b.backend is x.backend and (b.buffer is not x.buffer or b.offset == x.offset)
        )  # fmt: skip
    else:
        e = uf.cache.get((x.dtype, tb, x.backend))
        fast = e is not None and e.out is x.dtype and x._c
        if fast and e.conv[1] is not None:
            try:
                b = e.conv[1](b)
            except (OverflowError, ValueError):
                fast = False
    if not fast:
        return apply(uf, (x, b), x)
    n = x.shape[0] if len(x.shape) == 1 else math.prod(x.shape)
    if n:
        if len(x.shape) == 1:
            e.launch(n, (n, x, x, b))
        else:
            f = flat(x, n)
            e.launch(n, (n, f, f, flat(b, n) if tb is ndarray else b))
    return x


def compare(uf: Ufunc, a, b):
    """``==`` and ``!=``: like :func:`binary`, but operands that are not numbers or arrays
    give ``NotImplemented`` (so ``x == None`` is False, as Python's default)."""
    other = b if type(a) is ndarray else a
    if type(other) is not ndarray and not isinstance(other, bool | int | float | complex):
        x = a if type(a) is ndarray else b
        if other is None:  # NumPy: elementwise, never equal
            from ember import dtypes
            from ember.array import creation

            return creation.full(x.shape, uf.__name__ == "not_equal", dtype=dtypes.bool_,
                                 device=x.backend)  # fmt: skip
        if isinstance(other, list | tuple):  # host data, refused as by < and + (Python's
            raise not_on_device(other, f"ember.{uf.__name__}")  # False was a silent answer)
        if getattr(other, "ndim", None) != 0 or not hasattr(other, "dtype"):
            return NotImplemented
    return binary(uf, a, b)


def _contiguous(e: Dispatch, x: ndarray, a, b) -> ndarray:
    """The result of a same-shape operation on C-strided ``a``/``b`` (shaped like ``x``)."""
    shape, be, isz = x.shape, x.backend, e.isz
    if len(shape) == 1:  # Dispatch.launch inlined: this is the small-operation hot path
        n = shape[0]
        out = ndarray(shape, e.out, allocate(be, n * isz), be, e.strides1)
        out._c = True
        if n:
            tiles = (n + e.tile - 1) // e.tile
            grid = (tiles, 1, 1) if tiles < e.maxgrid else e.fullgrid
            args = (n, out, a, b)
            if not e.run(grid, e.block, 0, None, args):
                e.contiguous_kernel().dispatch(args).launch(args, grid, e.block)
        return out
    n = math.prod(shape)
    out = ndarray(shape, e.res.out, allocate(be, n * isz), be)
    if n:
        fa = flat(a, n) if type(a) is ndarray else a
        fb = flat(b, n) if type(b) is ndarray else b
        e.launch(n, (n, flat(out, n), fa, fb))
    return out


# --------------------------------------------------------------------- the general path
def apply(uf: Ufunc, args: tuple, out: ndarray | None) -> Any:
    """Run ``uf`` on ``args`` with broadcasting, any layouts and optional ``out``."""
    try:  # the boundary of operators (x + y): their slow path comes here
        return _apply(uf, args, out)
    except Exception as exc:
        hide_internal_frames(exc)
        raise


def _apply(uf: Ufunc, args: tuple, out: ndarray | None) -> Any:
    be = _backend_of(uf, args, out)
    if be is None:
        if uf.host is None:
            raise TypeError(f"ember.{uf.__name__} needs at least one ember array operand")
        return uf.host(*args)
    key = (*(x.dtype if type(x) is ndarray else type(x) for x in args), be)
    e = uf.cache.get(key) or _entry(uf, key, args, be)
    try:
        values = tuple(x if c is None else c(x) for x, c in zip(args, e.conv, strict=True))
    except OverflowError:
        if not isinstance(uf.rule, rules.Compare):
            raise
        return _beyond(uf, e, args, out)  # u8 < 300: exact (NumPy 2)
    return execute(e, values, out, be)


def _beyond(uf: Ufunc, e: Dispatch, args: tuple, out: ndarray | None) -> ndarray:
    """A comparison of an integer array with a Python int outside the range of their
    compute type (``int64_array == 2**63``, ``uint8_array < 300``): NumPy 2 compares
    exactly, so every element has the same answer.  (Converting the int to a wider type
    and comparing in float64 rounded ``2**63 - 1`` up to ``2**63``: ``==`` was True.)"""
    import numpy as np

    from ember import dtypes
    from ember.array import creation

    info = np.iinfo(e.res.ct.numpy)
    side = next(i for i, x in enumerate(args) if type(x) is int and not info.min <= x <= info.max)
    x = args[1 - side]
    if type(x) is not ndarray:  # no array operand to answer for: the general rule
        return _apply(uf, tuple(_widen(a) for a in args), out)
    name, above = uf.__name__, args[side] > info.max  # v is above (below) every element
    if name in ("equal", "not_equal"):
        answer = name == "not_equal"
    else:  # x < v (v on the right) holds when v is above; v < x when it is below
        answer = above if (name in ("less", "less_equal")) == (side == 1) else not above
    if out is None:
        return creation.full(x.shape, answer, dtype=dtypes.bool_, device=x.backend)
    _check_out(e, [x.shape], out)
    out[...] = answer
    return out


def _backend_of(uf: Ufunc, args: tuple, out):
    be = None
    for x in (*args, out):
        if type(x) is ndarray or isinstance(x, ndarray):
            if be is None:
                be = x.backend
            elif x.backend is not be:
                raise ValueError(
                    f"ember.{uf.__name__}: operands live on different devices "
                    f"({be.name}:{be.device.index} and {x.backend.name}:"
                    f"{x.backend.device.index}); move them to one device first: "
                    "x.to_device(y.device)"
                )
        elif x is not None and not _is_scalar(x):
            if be is not None or any(isinstance(y, ndarray) for y in (*args, out)):
                raise _operand_error(uf, x)
            if _on_a_device(x):
                raise _operand_error(uf, x)
    if out is not None and (be is None or not isinstance(out, ndarray)):  # (out=3)
        raise TypeError(
            f"ember.{uf.__name__}: out= must be an ember array, got {type(out).__name__}"
        )
    return be


def _is_scalar(x) -> bool:
    """Python numbers and NumPy scalars (of dtypes Ember supports)."""
    if isinstance(x, bool | int | float | complex):
        return True
    if type(x).__module__ != "numpy" or getattr(x, "shape", None) != ():
        return False
    rules.scalar_type(x)  # complex and other unsupported dtypes: TypeError
    return not hasattr(x, "__len__")


def _on_a_device(x) -> bool:
    """Another library's device array (those are not computed on the host silently)."""
    if hasattr(x, "__cuda_array_interface__"):
        return True
    device = getattr(x, "__dlpack_device__", None)
    try:
        return device is not None and int(device()[0]) != 1  # kDLCPU
    except Exception:
        return False


def _operand_error(uf: Ufunc, x) -> TypeError:
    if type(x).__module__ == "numpy" or isinstance(x, list | tuple):
        return not_on_device(x, f"ember.{uf.__name__}")
    return TypeError(
        f"ember.{uf.__name__} takes ember arrays and Python or NumPy scalars, got a "
        f"{type(x).__module__}.{type(x).__name__}; wrap arrays of other libraries with "
        "ember.asarray(x) (no copy on the same device)"
    )


def _widen(x):
    """A Python int beyond its array's integer type as a strong type that holds it."""
    if type(x) is not int:
        return x
    import numpy as np

    if -(1 << 63) <= x <= INT64_MAX:
        return np.int64(x)
    if 0 <= x < (1 << 64):
        return np.uint64(x)
    return float(x)


def _entry(uf: Ufunc, key: tuple, args: tuple, be) -> Dispatch:
    kinds = tuple(type(x) is ndarray for x in args)
    types = tuple(
        scalar(x.dtype) if k else rules.scalar_type(x) for x, k in zip(args, kinds, strict=True)
    )
    res = uf.rule(types)
    fp64 = _has_fp64(be)
    conv = tuple(
        None if k else converter(res.c0 if (i == 0 and res.c0) else res.ct, type(x), uf, i, fp64)
        for i, (k, x) in enumerate(zip(kinds, args, strict=True))
    )
    e = Dispatch(uf, res, kinds, conv, be)
    uf.cache[key] = e
    return e


def _has_fp64(be) -> bool:
    return "fp64" in be.device.features


def converter(ct, t: type, uf: Ufunc, index: int, fp64: bool):
    """The function that turns a scalar operand into the kernel argument for ``ct``:
    Python ``float``/``int``/``bool`` (one specialization per compute dtype), range-checked
    like NumPy for Python ints (``int8_array + 300`` is an ``OverflowError``)."""
    if ct.kind == "b":
        return None if t is bool else bool
    if ct.is_inexact:
        if not fp64:  # no double parameters on this device
            return ct.numpy.type
        py = complex if ct.is_complex else float
        return None if t is py else py
    info = ct.numpy
    import numpy as np

    lo, hi = int(np.iinfo(info).min), int(np.iinfo(info).max)
    name = ct.name
    no_negative = uf.__name__ == "pow" and index == 1

    def to_int(v):
        v = int(v)
        if not lo <= v <= hi:
            raise OverflowError(f"Python integer {v} out of bounds for {name}")
        if no_negative and v < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
        return v if v <= INT64_MAX else np.uint64(v)

    return to_int


def execute(e: Dispatch, values: tuple, out: ndarray | None, be) -> ndarray:
    """Broadcast, allocate or check ``out``, pick the layout and launch."""
    arrays = [x for x in values if type(x) is ndarray]
    shapes = [x.shape for x in arrays]
    if out is not None:
        _check_out(e, shapes, out)
        shape = out.shape
        values = tuple(_unshare(x, out) if type(x) is ndarray else x for x in values)
    else:
        shape = broadcast.broadcast_shapes(*shapes) if len(shapes) > 1 else shapes[0]
        out = ndarray(shape, e.res.out, allocate(be, math.prod(shape) * e.isz), be)
    n = math.prod(shape)
    if n == 0:
        return out
    if out.c_strided and all(x.shape == shape and x.c_strided for x in arrays):
        flat_values = tuple(flat(x, n) if type(x) is ndarray else x for x in values)
        e.launch(n, (n, flat(out, n), *flat_values))
        return out
    launch_strided(e, values, out, shape, n)
    return out


def _check_cast(e: Dispatch, out: ndarray) -> None:
    if out.dtype is e.res.out:
        return
    import numpy as np

    if not np.can_cast(e.res.out.numpy, out.dtype.numpy, "same_kind"):
        raise TypeError(
            f"cannot cast the result of ember.{e.name} from {e.res.out} to the output's "
            f"{out.dtype} with casting rule 'same_kind' (NumPy's rule for out= and in-place "
            "operators); convert explicitly with .astype()"
        )


def _check_out(e: Dispatch, shapes: list, out: ndarray) -> None:
    """Refuse an ``out=`` the operands do not broadcast to, that the result does not cast
    to (``same_kind``), or that is a broadcast view."""
    shape = broadcast.broadcast_shapes(*shapes, out.shape)
    if shape != out.shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {out.shape} doesn't match the "
            f"broadcast shape {shape}"
        )
    _check_cast(e, out)
    check_writable(out)


def _unshare(x: ndarray, out: ndarray) -> ndarray:
    """``x``, or a copy of it when it overlaps ``out`` other than element for element."""
    if x.buffer is not out.buffer:
        return x
    if x.offset == out.offset and broadcast.stretch(x.shape, x.strides, out.shape) == out.strides:
        return x
    lo1, hi1 = x._extent()
    lo2, hi2 = out._extent()
    if x.offset + hi1 <= out.offset + lo2 or out.offset + hi2 <= x.offset + lo1:
        return x
    return x.copy()


def launch_strided(e: Dispatch, values: tuple, out: ndarray, shape, n: int) -> None:
    """Coalesce the axes and launch the strided kernel (or the contiguous one, or the
    transpose kernel for a copy between 2-d layouts)."""
    operands = [out, *(x for x in values if type(x) is ndarray)]
    dims, strides, spans = _geometry(operands, shape)
    if len(dims) == 1 and all(s == (1,) for s in strides):
        it = iter(operands[1:])
        flat_values = tuple(flat(next(it), n) if type(x) is ndarray else x for x in values)
        e.launch(n, (n, flat(out, n), *flat_values))
        return
    from ember.array import kernels

    res = e.res
    if res.op is ops.copy and len(dims) == 2 and _transposing(dims, strides):
        return launch_transpose(res, operands, dims, strides)
    args, wide = [n, broadcast.divisors(dims)], False
    it = iter(zip(operands, strides, spans, strict=True))
    for x in (out, *values):
        if type(x) is ndarray:
            view, st, extent = _strided_view(*next(it))
            wide = wide or extent >= 1 << 31
            args += (view, st)
        else:
            args += (x, (0,) * (len(dims) + 1))
    wide = wide or n >= 1 << 31
    k = kernels.strided(res.op, res.ct, e.kinds, len(dims), wide, res.c0)
    blocks = min((n + e.tile - 1) // e.tile, e.maxgrid)  # UNROLL elements per thread
    k.launch_args((blocks, 1, 1), e.block, tuple(args))  # the inline cache: no signature


def _strided_view(x: ndarray, strides, span):
    """A 1-d view from the lowest element ``x`` touches (``span``: the lowest and highest,
    in elements), and ``(base, *strides)``."""
    low, high = span
    extent = high - low + 1
    isz = x.dtype.itemsize
    view = ndarray((extent,), x.dtype, x.buffer, x.backend, (isz,), x.offset + low * isz)
    view._c = True
    return view, (-low, *strides), extent


# The strided path's layout arithmetic by geometry (the broadcast shape, and each operand's
# shape, strides and item size): a program's broadcasts repeat theirs.
_GEOMETRY: dict[tuple, tuple] = {}


def _geometry(operands: list[ndarray], shape) -> tuple:
    """The coalesced dims, each operand's element strides over them and its span."""
    key = (shape, *[(x.shape, x.strides, x.dtype.itemsize) for x in operands])
    found = _GEOMETRY.get(key)
    if found is None:
        strides = [
            tuple(s // x.dtype.itemsize for s in broadcast.stretch(x.shape, x.strides, shape))
            for x in operands
        ]
        dims, strides = broadcast.coalesce(shape, strides)
        found = dims, strides, [broadcast.span(dims, st) for st in strides]
        if len(_GEOMETRY) < 1024:
            _GEOMETRY[key] = found
    return found


def _transposing(dims, strides) -> bool:
    """Out's fast axis is 1 and the source's is 0: a tiled transpose pays off.  (A fill
    has no source array: ``strides`` then holds only the output's.)"""
    if len(strides) != 2:
        return False
    (o0, o1), (a0, a1) = strides
    return o1 == 1 and abs(a0) == 1 and abs(a1) > 1 and min(dims) >= 16


def launch_transpose(res, operands, dims, strides) -> None:
    from ember.array import kernels

    views = [
        ndarray(dims, x.dtype, x.buffer, x.backend, tuple(s * x.dtype.itemsize for s in st),
                x.offset)
        for x, st in zip(operands, strides, strict=True)
    ]  # fmt: skip
    tile = kernels.TILE
    grid = (-(-dims[0] // tile), min(-(-dims[1] // tile), 65535), 1)
    k = kernels.transpose2(res.ct)
    k.launch_args(grid, (tile, kernels.TILE_ROWS, 1), tuple(views))
