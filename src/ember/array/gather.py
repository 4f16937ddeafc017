"""Integer-array indexing on the device: the gather and scatter kernels, and ``take``,
``take_along_axis``, ``put`` on top of them.

An advanced index is reduced to *element offsets*: for index arrays ``I_1..I_k`` (broadcast
to a shape ``B``) addressing axes of strides ``s_1..s_k``, the int64 array
``L = sum_j wrap(I_j) * s_j`` of shape ``B`` (:func:`offsets`, one kernel launch per index
array).  ``wrap`` takes negative indices from the end and checks the range on the device:
an index outside ``[-n, n)`` raises :class:`IndexError` (an ``ember.KernelError``) at the
next synchronization, as ``boundscheck`` does, while the device stays usable.

The result of ``x[...]`` then has some axes walking ``x`` (the slices) and some walking
``L`` (the ``B`` axes).  :func:`gather` reads ``out[i] = x[p(i) + L[q(i)]]`` where ``p``
and ``q`` are linear combinations of ``i``'s multi-index (strides 0 where an axis does not
apply); :func:`scatter` writes ``x[p(i) + L[q(i)]] = values[r(i)]`` the same way.  The
index arithmetic is the strided elementwise kernels' (:mod:`ember.array.kernels`): axes
coalesced, magic-number division, 32-bit unless an operand spans 2**31 elements.
Repeated indices in a scatter write one of the values (NumPy: the last; here unspecified).
"""

from __future__ import annotations

import functools
import math

import ember
from ember import dtypes
from ember.array import broadcast, kernels, launch, manipulation
from ember.array.ndarray import check_writable, ndarray, not_on_device
from ember.compiler.kernel import Kernel

BLOCK = 256


# --------------------------------------------------------------------- kernels
def _index_math(ndim: int, wide: bool):
    """``(offsets device function, index dtype)`` for ``ndim`` axes (kernels._offsets)."""
    index = ember.uint64 if wide else ember.uint32
    return kernels._offsets(ndim, index, kernels.div_plain if wide else kernels.div_magic), index


BAD = -(1 << 63)  # the offset of an element whose index is out of range (none is valid)


@functools.cache
def offsets_kernel(ndim: int, wide: bool) -> Kernel:
    """``L[o] (+)= wrap(idx[p]) * stride`` over the index shape (``first``: assign).

    An index out of range makes its offset :data:`BAD`, which the gather and the scatter
    skip, and raises ``IndexError`` once the thread has written all of its offsets: a
    ``raise`` ends the thread, and the offsets it had not written (uninitialized memory)
    were read by the gather and written through by the scatter queued after it - a
    segmentation fault on the cpu backend, memory corrupted anywhere on a GPU."""
    OFF, U = _index_math(ndim, wide)

    def index_offsets(n, dims, lo, slo, idx, sidx, size, stride, first):
        offs = ember.local((2,), U)
        bad = False
        i = ember.global_id()
        while i < n:
            OFF(i, dims, (slo, sidx), offs)
            o, p = offs[0], offs[1]
            raw = idx[p]
            j = ember.int64(raw)
            if raw < 0:
                j += size
            if raw >= size or j < 0:
                lo[o] = BAD
                bad = True
            elif first:
                lo[o] = j * stride
            else:
                before = lo[o]
                if before != BAD:
                    lo[o] = before + j * stride
            i += ember.global_size()
        if bad:
            raise IndexError(
                "an index array holds an index out of bounds for the axis it indexes "
                "(valid: -n <= i < n for an axis of length n)"
            )

    return kernels._named(index_offsets, f"index_offsets_{ndim}d" + ("_wide" if wide else ""))


@functools.cache
def gather_kernel(ndim: int, wide: bool, backwards: bool) -> Kernel:
    """``w[o] = v[p + L[q]]`` (gather) or ``v[p + L[q]] = w[o]`` (scatter)."""
    OFF, U = _index_math(ndim, wide)

    def gather(n, dims, w, sw, v, sv, lo, slo):
        offs = ember.local((3,), U)
        i = ember.global_id()
        while i < n:
            OFF(i, dims, (sw, sv, slo), offs)
            o, p, q = offs[0], offs[1], offs[2]
            at = lo[q]
            if at != BAD:  # (an index out of range: IndexError at the next sync)
                w[o] = v[ember.int64(p) + at]
            i += ember.global_size()

    def scatter(n, dims, w, sw, v, sv, lo, slo):
        offs = ember.local((3,), U)
        i = ember.global_id()
        while i < n:
            OFF(i, dims, (sw, sv, slo), offs)
            o, p, q = offs[0], offs[1], offs[2]
            at = lo[q]
            if at != BAD:
                v[ember.int64(p) + at] = v.dtype(w[o])
            i += ember.global_size()

    fn = scatter if backwards else gather
    name = fn.__name__ + f"_{ndim}d" + ("_wide" if wide else "")
    return kernels._named(fn, name)


# --------------------------------------------------------------------- host primitives
def _launch(kernel_of, shape, operands: list[tuple], extra=(), scattered=False) -> None:
    """Coalesce ``shape`` with each operand's strides and launch ``kernel_of(ndim, wide)``
    on ``(n, dims, view, (base, *strides), ..., *extra)``.  An operand is ``(array,
    strides, origin)``: its element ``m`` is ``origin + sum(m * strides)`` elements from
    the array's first element (strides broadcast, in elements).  ``scattered``: the
    kernel reads or writes at data-dependent places, one thread per element (more loads
    in flight: H200, a gather of 2**24 random int32 took 279 us so, 306 in one wave)."""
    n = math.prod(shape)
    if n == 0:
        return
    dims, strides = broadcast.coalesce(shape, [op[1] for op in operands])
    args: list = [n, broadcast.divisors(dims)]
    wide = n >= 1 << 31
    for (x, _, origin), st in zip(operands, strides, strict=True):
        view, base, _ = launch.flat(x)
        wide = wide or view.shape[0] >= 1 << 31
        args += [view, (base + origin, *st)]
    k = kernel_of(len(dims), wide)
    be = operands[0][0].backend
    grid = launch.grid(be, n, BLOCK, whole=scattered)
    launch.run(k, grid, BLOCK, (*args, *extra))


def _estrides(x: ndarray) -> tuple[int, ...]:
    return tuple(s // x.dtype.itemsize for s in x.strides)


def offsets(be, indices: list[ndarray], sizes: list[int], strides: list[int], shape) -> ndarray:
    """The int64 element offsets ``sum_j wrap(indices[j]) * strides[j]`` broadcast to
    ``shape`` (indices checked against ``sizes`` on the device)."""
    lo = launch.new(be, tuple(shape), dtypes.int64)
    los = _estrides(lo)
    for j, (idx, size, stride) in enumerate(zip(indices, sizes, strides, strict=True)):
        ist = broadcast.stretch(idx.shape, _estrides(idx), tuple(shape))
        operands = [(lo, los, 0), (idx, ist, 0)]
        _launch(offsets_kernel, tuple(shape), operands, (size, stride, j == 0))
    return lo


def gather(out: ndarray, x: ndarray, origin: int, xstrides, lo: ndarray, lstrides) -> None:
    """``out[m] = x.flat_span[origin + sum(m * xstrides) + lo[sum(m * lstrides)]]`` for
    every multi-index ``m`` of ``out``: offsets in elements from ``x``'s first element,
    strides 0 where an axis does not apply."""
    operands = [(out, _estrides(out), 0), (x, tuple(xstrides), origin), (lo, tuple(lstrides), 0)]
    _launch(lambda nd, w: gather_kernel(nd, w, False), out.shape, operands, scattered=True)


def scatter(values: ndarray, x: ndarray, origin: int, xstrides, lo: ndarray, lstrides) -> None:
    """The reverse of :func:`gather`: ``x[...] = values[m]`` (``values`` of the index
    space's shape, any strides: broadcast values have zero strides).

    Values or positions that share ``x``'s memory are copied first, as NumPy does: the
    kernel writes at data-dependent places while other threads still read, so
    ``x[perm] = x`` or ``x[i] = x[::-1]`` read elements already overwritten."""
    check_writable(x)
    if values.buffer is x.buffer:
        values = values.copy()
    if lo.buffer is x.buffer:
        lo = lo.copy()
    operands = [(values, _estrides(values), 0), (x, tuple(xstrides), origin),
                (lo, tuple(lstrides), 0)]  # fmt: skip
    _launch(lambda nd, w: gather_kernel(nd, w, True), values.shape, operands, scattered=True)


# --------------------------------------------------------------------- public functions
def _int_indices(indices, what: str) -> ndarray:
    from ember.array.advanced import index_array

    idx = index_array(indices, what)
    if idx.dtype.kind == "b":
        raise IndexError(f"ember.{what}: indices must be integers, not booleans")
    return idx


def take(x, /, indices, axis: int | None = None, out=None, mode: str = "raise") -> ndarray:
    """Elements of ``x`` at ``indices`` along ``axis`` (of the flattened array if None).

    Parameters
    ----------
    x : ndarray
    indices : ndarray or list of int
        Any integer dtype; negative indices count from the end.
    axis : int, optional
    out : ndarray, optional
        NumPy's: the result is written there (cast to its dtype).
    mode : {"raise", "wrap", "clip"}
        NumPy's: ``"raise"``, an index out of range raises ``IndexError`` at the next
        synchronization (checked on the device); ``"wrap"``, indices are taken modulo the
        axis length; ``"clip"``, clamped to ``[0, length - 1]`` (a negative index is then
        0, not counted from the end, as in NumPy).

    Returns
    -------
    ndarray
        ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``.
    """
    if not isinstance(x, ndarray):
        raise not_on_device(x, "ember.take")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"ember.take: clipmode must be one of 'clip', 'raise', or 'wrap' "
                         f"(got {mode!r})")  # fmt: skip
    idx = _int_indices(indices, "take")
    if axis is None:
        x, axis = manipulation.reshape(x, (-1,)), 0
    k = manipulation._axis(axis, x.ndim)
    if mode != "raise":
        from ember.array import ufuncs

        n = x.shape[k]
        if n == 0 and idx.size:
            raise IndexError("ember.take: cannot do a non-empty take from an empty axis")
        if n:
            idx = ufuncs.remainder(idx, n) if mode == "wrap" else ufuncs.clip(idx, 0, n - 1)
    return manipulation.into(out, x[(slice(None),) * k + (idx,)], "take")


def take_along_axis(x, /, indices, axis: int = -1) -> ndarray:
    """``out[..., j, ...] = x[..., indices[..., j, ...], ...]`` along ``axis`` (NumPy's
    and the Array API's ``take_along_axis``; ``indices`` broadcasts against ``x`` on the
    other axes).  Out-of-range indices raise ``IndexError`` at the next synchronization."""
    if not isinstance(x, ndarray):
        raise not_on_device(x, "ember.take_along_axis")
    idx = _int_indices(indices, "take_along_axis")
    if axis is None:
        x, axis = manipulation.reshape(x, (-1,)), 0
    if idx.ndim != x.ndim:
        raise ValueError(
            f"ember.take_along_axis: indices and x must have the same number of dimensions, "
            f"got {idx.ndim} and {x.ndim}"
        )
    k = manipulation._axis(axis, x.ndim)
    others = [n for d, n in enumerate(x.shape) if d != k]
    ishape = [n for d, n in enumerate(idx.shape) if d != k]
    shape = list(broadcast.broadcast_shapes(tuple(others), tuple(ishape)))
    shape.insert(k, idx.shape[k])
    shape = tuple(shape)
    xs = list(_estrides(x))
    lo = offsets(x.backend, [idx], [x.shape[k]], [xs[k]], shape)
    xs = list(broadcast.stretch(x.shape, tuple(xs), shape))
    xs[k] = 0
    out = launch.new(x.backend, shape, x.dtype)
    gather(out, x, 0, xs, lo, _estrides(lo))
    return out


def put(a, ind, v, mode: str = "raise") -> None:
    """NumPy's ``put``: ``a.flat[ind] = v`` in place, ``v`` repeated to the length of
    ``ind``.  Only ``mode="raise"`` (out-of-range indices raise ``IndexError`` at the next
    synchronization)."""
    from ember.array.advanced import index_array

    if not isinstance(a, ndarray):
        raise not_on_device(a, "ember.put")
    if mode != "raise":
        raise ValueError(f"ember.put supports mode='raise' only, got {mode!r}")
    idx = manipulation.reshape(_int_indices(ind, "put"), (-1,))
    if idx.size == 0:
        return
    vals = v if isinstance(v, ndarray) else index_array(v, "put", values=True)
    vals = manipulation.reshape(vals, (-1,))
    if vals.size == 0:
        raise ValueError("ember.put: cannot put an empty array of values")
    if vals.size < idx.size:
        reps = -(-idx.size // vals.size)
        vals = manipulation.reshape(manipulation.tile(vals, reps), (-1,))[: idx.size]
    elif vals.size > idx.size:
        vals = vals[: idx.size]
    if not a.is_c_contiguous:  # a.flat of a strided view: put into a copy, copy it back
        c = manipulation.astype(a, a.dtype)
        put(c, idx, vals)
        manipulation.copy_into(a, c)
        return
    flat_a = manipulation.reshape(a, (-1,))
    lo = offsets(a.backend, [idx], [a.size], [_estrides(flat_a)[0]], idx.shape)
    scatter(manipulation.astype(vals, a.dtype, copy=False), flat_a, 0, (0,), lo, (1,))


__all__ = ["take", "take_along_axis", "put"]
