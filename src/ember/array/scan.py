"""Scans: ``cumulative_sum``, ``cumulative_prod`` (Array API 2024.12, ``include_initial``),
NumPy's ``cumsum``/``cumprod``, and :func:`accumulate` for any associative operator,
along any axis.

The primitive is :func:`inclusive_scan` of the rows of a 2-d view, run by the kernels of
:mod:`ember.array.scan_kernels`: on devices whose blocks make progress while others wait
(``Backend.forward_progress``: CUDA) a single pass with decoupled look-back (Merrill &
Garland 2016), which reads and writes each element once; elsewhere (OpenCL, the CPU)
reduce-then-scan: tile totals, a recursive scan of those, then the tiles again from their
carries.  Short rows are scanned one thread per row.  Stream compaction (``nonzero``,
``x[mask]``), ``unique`` and the radix sort build on it.

A scan along an axis moves that axis last: when the rows are then not unit-stride the
input is copied first (a tiled transpose for 2-d arrays), and the result is copied back
to C order.  Accumulation dtypes follow NumPy and the Array API: ``cumsum``/``cumprod`` of
bool and of integers narrower than 64 bits give int64 (uint64 for unsigned), floats keep
their dtype; float16 values are carried in float32 and rounded when stored.  Floats are
combined in a tree order, not NumPy's left-to-right loop, so float results can differ
from NumPy's in the last bits (they are usually closer to the exact sums).
"""

from __future__ import annotations

import functools
import math
import threading

from ember import dtypes
from ember.array import launch, lookback, manipulation, rules
from ember.array import scan_kernels as sk
from ember.array.ndarray import ndarray, not_on_device
from ember.dtypes import DType
from ember.runtime import memory

SERIAL_ROWS = 16  # rows this short (or shorter than a 16th of a tile) get a thread each


@functools.cache
def geometry(be, ct: DType, single_pass: bool = False) -> sk.Geometry:
    """Tile shape for ``be``'s device: GPUs 256 threads x 16 items (8 for 8-byte values),
    twice as many items for the single-pass scan, whose look-back costs per tile (H200,
    2**26 elements, kernel time: float32 184 us with 32 items, 205 with 16; int64 422 us
    with 16, 626 with 8), capped so that a tile uses at most a quarter of a block's shared
    memory (three quarters for the single pass: one block per tile, resident as long as its
    look-back lasts, and 6 of them still fit an H100 SM); CPU devices 64 x 8 (PoCL runs a
    work-group's threads as loops: smaller tiles, less idle work)."""
    from ember.compiler.driver import target_of

    dev = be.device
    if launch.is_cpu(be):
        block, items = min(64, dev.max_threads_per_block), 8
    else:
        block = min(256, dev.max_threads_per_block)
        items = (16 if ct.itemsize <= 4 else 8) * (2 if single_pass else 1)
        size = sk.storage(ct).itemsize
        budget = dev.shared_memory_per_block * (3 if single_pass else 1) // 4
        while items > 1 and block * items * size * 33 // 32 > budget:
            items //= 2
    target = target_of(be)
    shuffles = target.has("subgroup_shuffle") and target.warp_size == 32 and block % 32 == 0
    # real warps (ballot is their marker: the cpu backend's sub-groups, loops over a block,
    # run sub-group operations only where the whole block does)
    real_warps = shuffles and target.has("subgroup_ballot")
    ordered = single_pass and be.ordered_blocks
    segments = single_pass and real_warps
    return sk.Geometry(
        block, items, 32 if shuffles else 0, warp_lookback=real_warps, ordered=ordered,
        segments=segments,
    )  # fmt: skip


# --------------------------------------------------------------------- look-back state
_kept: dict = {}  # backend -> [its look-back state, the epoch of the next launch]
_kept_lock = threading.Lock()


def lookback_state(be, words: int, ordered: bool) -> tuple[ndarray, int]:
    """``(state, epoch)`` for one single-pass scan of ``words`` state words.

    Tiles by block index (``ordered``): one state per backend, zeroed when made, serves
    every scan with a new epoch (the tiles' words of other epochs count as unpublished,
    :func:`.lookback.state_words`), so no scan waits on a memset (H200, cumsum of 2**26
    float32: a 0.9 us memset and a launch per call).  Array operations run in order on the
    backend's default stream, so scans never share it at the same time; the lock makes
    each epoch unique when threads scan at once.  The state grows (doubling) for larger
    scans and is made anew when the epochs run out.  Tiles from a counter need the
    counter zero: a zeroed state of their own, epoch 1."""
    if not ordered:
        return launch.zeroed(be, (words,), dtypes.uint64), 1
    with _kept_lock:
        kept = _kept.get(be)
        if kept is None or kept[0].shape[0] < words or kept[1] >= lookback.EPOCHS:
            size = max(words, 2 * kept[0].shape[0] if kept is not None else 0)
            buf = memory.allocate_kept(be, size * 8)
            be.fill_zero(buf, 0, size * 8)
            kept = _kept[be] = [ndarray((size,), dtypes.uint64, buf, be), 1]
        epoch = kept[1]
        kept[1] = epoch + 1
    return kept[0], epoch


# --------------------------------------------------------------------- the primitive
def inclusive_scan(src: ndarray, dst: ndarray, op, ct: DType, serial: bool = False) -> None:
    """``dst[r, i] = op(...op(src[r, 0], src[r, 1])..., src[r, i])`` for 2-d views of one
    shape, computing in ``ct``.  ``dst`` must have unit stride along its rows (any row
    stride) and may be ``src`` itself; ``src`` may have any strides."""
    rows, n = src.shape
    if rows == 0 or n == 0:
        return
    x, xbase, (xrow, xstep) = launch.flat(src)
    out, obase, (orow, ostep) = launch.flat(dst)
    if ostep != 1 and n > 1:
        raise ValueError("inclusive_scan: dst must have unit stride along its rows")
    scan_rows(rows, n, (x, xbase, xrow, xstep, out, obase, orow), op, ct, serial)


def scan_rows(rows: int, n: int, args: tuple, op, ct: DType, serial: bool = False) -> None:
    """:func:`inclusive_scan` of ``rows`` rows of ``n > 0`` elements given as flat views:
    ``args = (x, xbase, xrow, xstep, out, obase, orow)``, element ``(r, i)`` being
    ``x[xbase + r * xrow + i * xstep]`` and ``out[obase + r * orow + i]``.  ``serial``:
    one thread per row, left to right, for an ``op`` that is not associative."""
    x = args[0]
    be = x.backend
    g = geometry(be, ct)
    if serial or n <= max(SERIAL_ROWS, g.tile // 16):
        k = sk.rows_serial(op, ct)
        launch.run(k, min(-(-rows // g.block), launch.max_grid(be)), g.block, (rows, n, *args))
        return
    tiles = -(-n // g.tile)
    # the look-back publishes values through atomics: no 8/16-byte complex pair has them, so
    # complex scans take the two-pass path (reduce the tiles, then scan from their carries)
    if be.forward_progress and tiles > 1 and not ct.is_complex:
        g = geometry(be, ct, single_pass=True)
        tiles = -(-n // g.tile)
        words = lookback.state_size(sk.atomic_storage(ct), rows * tiles)
        state, epoch = lookback_state(be, words, g.ordered)
        head = (rows, n, tiles, *args)
        launch.run(sk.scan_lookback(op, ct, g), rows * tiles, g.block, (*head, state, epoch))
        return
    grid = min(rows * tiles, launch.max_grid(be))
    if tiles == 1:
        carry = launch.new(be, (1,), sk.storage(ct))
    else:
        carry = launch.new(be, (rows, tiles), sk.storage(ct))
        launch.run(sk.tile_reduce(op, ct, g), grid, g.block, (rows, n, tiles, *args[:4],
                                                              launch.flat1(carry)))  # fmt: skip
        inclusive_scan(carry, carry, op, ct)
    launch.run(sk.scan_carry(op, ct, g), grid, g.block, (rows, n, tiles, *args,
                                                         launch.flat1(carry)))  # fmt: skip


def scan_axis(
    x: ndarray, axis: int, op, ct: DType, out_dtype: DType, initial=None, serial: bool = False
) -> ndarray:
    """The inclusive scan of ``x`` along ``axis`` into a new C-contiguous array of
    ``out_dtype``; with ``initial`` (a number), a first element ``initial`` is added along
    the axis (``include_initial``); ``serial``: a left fold per row (see :func:`scan_rows`)."""
    k = manipulation._axis(axis, x.ndim)
    moved = manipulation.moveaxis(x, k, -1)
    n = moved.shape[-1]
    lead = moved.shape[:-1]
    rows = math.prod(lead)
    src = manipulation.reshape(moved, (rows, n))
    if n > 1 and abs(src.strides[1]) != src.dtype.itemsize:
        src = manipulation.astype(src, src.dtype)  # unit-stride rows: coalesced loads
    extra = 0 if initial is None else 1
    out = launch.new(x.backend, (rows, n + extra), out_dtype)
    if extra and rows:
        out[:, 0] = initial
    inclusive_scan(src, out[:, extra:], op, ct, serial)
    result = manipulation.reshape(out, (*lead, n + extra))
    if k == x.ndim - 1:
        return result
    return manipulation.ascontiguousarray(manipulation.moveaxis(result, -1, k))


def fold_axis(x: ndarray, axis: int, idx: ndarray, op, ct: DType, out_dtype: DType,
              initial=None) -> ndarray:  # fmt: skip
    """Left folds of segments along ``axis`` (:func:`.scan_kernels.fold_segments`): the
    axis becomes ``idx.shape[0]`` long, element ``i`` the fold of the segment that starts
    at ``idx[i]`` (an int64 vector of valid positions; ``ufunc.reduceat``).  With
    ``initial`` (a number) each fold starts from it, so ``idx = [0]`` over an empty axis
    gives ``initial``."""
    k = manipulation._axis(axis, x.ndim)
    moved = manipulation.moveaxis(x, k, -1)
    n, lead, m = moved.shape[-1], moved.shape[:-1], idx.shape[0]
    rows = math.prod(lead)
    out = launch.new(x.backend, (rows, m), out_dtype)
    if rows and m and not n and initial is not None:
        out[...] = initial
    elif rows and m and n:
        src, xbase, (xrow, xstep) = launch.flat(manipulation.reshape(moved, (rows, n)))
        count, block = rows * m, geometry(x.backend, ct).block
        p1 = ct.numpy.type(0 if initial is None else initial)
        head = (count, m, n, src, xbase, xrow, xstep, launch.flat1(idx))
        kernel = sk.fold_segments(op, ct, initial is not None)
        grid = launch.grid(x.backend, count, block)
        launch.run(kernel, grid, block, (*head, launch.flat1(out), 0, m, p1))
    result = manipulation.reshape(out, (*lead, m))
    if k == x.ndim - 1:
        return result
    return manipulation.ascontiguousarray(manipulation.moveaxis(result, -1, k))


# --------------------------------------------------------------------- public functions
def _accumulation_dtype(dt: DType) -> DType:
    """NumPy's and the Array API's dtype for sums and products: default-width integers."""
    if dt.kind == "b" or dt.kind == "i" and dt.itemsize < 8:
        return dtypes.int64
    if dt.kind == "u" and dt.itemsize < 8:
        return dtypes.uint64
    return dt


def _resolve(uf, dt: DType):
    """``(op, ct, out)`` of ufunc ``uf`` on two ``dt`` operands (bool + is or)."""
    from ember.frontend.types import scalar

    res = uf.rule((scalar(dt), scalar(dt)))
    return res.op, res.ct, res.out


def _check(x, what: str) -> ndarray:
    if not isinstance(x, ndarray):
        raise not_on_device(x, f"ember.{what}")
    return x


_resolved: dict = {}  # (ufunc, x's dtype, dtype=) -> (op, ct, out dtype)


def _cumulative(uf, what: str, x, axis, dtype, include_initial: bool, initial: int):
    x = _check(x, what)
    if x.ndim == 1 and axis in (None, 0, -1) and not include_initial:
        n, isz = x.shape[0], x.dtype.itemsize
        if n > 1 and x.strides[0] == isz:  # a dense vector: no views to make
            try:
                key = (uf, x.dtype, dtype)
                found = _resolved.get(key)
            except TypeError:  # an unhashable dtype= spelling
                found = key = None
            if found is None:
                dt = _accumulation_dtype(x.dtype) if dtype is None else dtypes.dtype(dtype)
                rules.refuse_complex_to_real(x.dtype, dt, what)
                found = _resolve(uf, dt)
                if key is not None:
                    _resolved[key] = found
            op, ct, out_dtype = found
            out = launch.new(x.backend, (n,), out_dtype)
            scan_rows(1, n, (x, 0, n, 1, out, 0, n), op, ct)
            return out
    if axis is None:
        if x.ndim > 1:
            raise ValueError(
                f"ember.{what}: for arrays of more than one dimension the axis argument is "
                "required (or use ember.cumsum/cumprod, which flatten)"
            )
        x = manipulation.reshape(x, (-1,))
        axis = 0
    dt = _accumulation_dtype(x.dtype) if dtype is None else dtypes.dtype(dtype)
    rules.refuse_complex_to_real(x.dtype, dt, what)
    op, ct, out = _resolve(uf, dt)
    return scan_axis(x, axis, op, ct, out, initial if include_initial else None)


def cumulative_sum(x, /, *, axis: int | None = None, dtype=None, out=None, include_initial=False):
    """Cumulative sum along ``axis`` (Array API 2024.12).

    Parameters
    ----------
    x : ndarray
        Input; ``axis`` may be omitted for 1-d (and 0-d) arrays only.
    axis : int, optional
        The axis to scan.
    dtype : dtype, optional
        Accumulation and result dtype; default: int64 for bool and signed integers
        narrower than 64 bits, uint64 for such unsigned integers, else ``x.dtype``.
    out : ndarray, optional
        Where the result goes (NumPy's ``out=``): its shape, cast to its dtype; returned.
    include_initial : bool
        Start each scan with the sum of no elements (0): the axis grows by one.

    Returns
    -------
    ndarray
        A new C-contiguous array, or ``out``.
    """
    from ember.array import ufuncs

    result = _cumulative(ufuncs.add, "cumulative_sum", x, axis, dtype, include_initial, 0)
    return manipulation.into(out, result, "cumulative_sum")


def cumulative_prod(x, /, *, axis: int | None = None, dtype=None, out=None, include_initial=False):
    """Cumulative product along ``axis`` (Array API 2024.12); as :func:`cumulative_sum`,
    with 1 as the initial element."""
    from ember.array import ufuncs

    result = _cumulative(ufuncs.multiply, "cumulative_prod", x, axis, dtype, include_initial, 1)
    return manipulation.into(out, result, "cumulative_prod")


def _numpy_cumulative(uf, what: str, a, axis, dtype, out):
    a = _check(a, what)
    if axis is None:
        a, axis = manipulation.reshape(a, (-1,)), 0
    elif a.ndim == 0:
        a = manipulation.reshape(a, (1,))
    return manipulation.into(out, _cumulative(uf, what, a, axis, dtype, False, 0), what)


def cumsum(a, axis: int | None = None, dtype=None, out=None):
    """NumPy's ``cumsum``: the cumulative sum along ``axis`` (of the flattened array by
    default); see :func:`cumulative_sum` for the dtype."""
    from ember.array import ufuncs

    return _numpy_cumulative(ufuncs.add, "cumsum", a, axis, dtype, out)


def cumprod(a, axis: int | None = None, dtype=None, out=None):
    """NumPy's ``cumprod``: the cumulative product along ``axis`` (flattened by default)."""
    from ember.array import ufuncs

    return _numpy_cumulative(ufuncs.multiply, "cumprod", a, axis, dtype, out)


def accumulate(op, x, /, axis: int = 0, *, dtype=None) -> ndarray:
    """The inclusive scan of ``x`` along ``axis`` with the associative operator ``op``:
    ``out[..., i] = op(...op(x[..., 0], x[..., 1])..., x[..., i])``.

    Parameters
    ----------
    op : ember ufunc of two operands, or a Python function of two values
        ``ember.add``, ``ember.maximum``... (typed like NumPy's ``ufunc.accumulate``:
        ``add``/``multiply`` of small integers in int64, ``maximum`` of int8 in int8),
        or a plain function compiled as a device function, e.g.
        ``def op(a, b): return a if abs(a) > abs(b) else b``.  It must be associative
        (the scan combines in a tree order); no identity element is needed.
    x : ndarray
    axis : int
        Default 0, like ``numpy.ufunc.accumulate``.
    dtype : dtype, optional
        The dtype values are computed in and returned as (default: ``x.dtype`` for plain
        functions, the ufunc's result dtype for ufuncs).

    Returns
    -------
    ndarray
    """
    from ember.array import ufuncs
    from ember.array.elementwise import Ufunc

    x = _check(x, "accumulate")
    if x.ndim == 0:
        raise ValueError("ember.accumulate: cannot accumulate a 0-d array")
    dt = x.dtype if dtype is None else dtypes.dtype(dtype)
    if dtype is None and (op is ufuncs.add or op is ufuncs.multiply):
        dt = _accumulation_dtype(dt)  # NumPy's add/multiply.accumulate: int8 sums in int64
    if isinstance(op, Ufunc):
        if op.nin != 2:
            raise TypeError(f"ember.accumulate needs an operator of two operands, not {op!r}")
        fn, ct, out = _resolve(op, dt)
        if dtype is not None:
            ct = out = dt
    elif callable(op) and hasattr(op, "__code__"):
        fn, ct, out = op, dt, dt
    else:
        raise TypeError(
            f"ember.accumulate takes an ember ufunc (ember.add...) or a Python function of "
            f"two values, got {op!r}"
        )
    return scan_axis(x, axis, fn, ct, out)


def cumulative_fractions(w: ndarray) -> ndarray:
    """Each row's cumulative sums of the non-negative float64 weights ``w`` (2-d) over the
    row's total, with a zero weight repeating the fraction before it exactly (0 before the
    first positive weight), as a sequential sum does: the scan combines in a tree order,
    where the same sum can round differently at two positions, so a later zero-weight
    position could otherwise sit an ulp above the last positive one, or the last positive
    one an ulp below 1 (a weighted quantile took such elements; an inverse-CDF draw could
    pick them).  The last positive weight's fraction is exactly 1."""
    from ember.array.gather import take_along_axis
    from ember.array.ranges import arange
    from ember.array.ufuncs import maximum, where

    n = w.shape[1]
    cdf = cumulative_sum(w, axis=-1)
    pos = where(w > 0, arange(n, dtype=dtypes.int64, device=w.backend), -1)
    last = accumulate(maximum, pos, axis=-1)  # the last positive weight so far
    cdf = where(last >= 0, take_along_axis(cdf, maximum(last, 0), axis=-1), 0)
    return cdf / cdf[:, -1:]


__all__ = ["cumulative_sum", "cumulative_prod", "cumsum", "cumprod", "accumulate"]
