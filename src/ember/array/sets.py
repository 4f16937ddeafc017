"""Set functions: ``unique_values``, ``unique_counts``, ``unique_inverse``, ``unique_all``
(Array API) and NumPy's ``unique`` with its ``return_*`` spellings.

Built from the other primitives: a stable sort of the flattened input (``argsort`` where
indices are needed), a kernel flagging the first element of each run of equal values, a
stream compaction of the values and of the run starts (one synchronization: the number of
unique values), their differences for the counts, the sort permutation at the starts for
the first occurrences, and a scan of the flags scattered through the permutation for the
inverse.

Integers of a narrow range skip the sort.  For the values and the inverse a table of one
byte per value of the range ``[lo, hi]`` is marked where a value occurs, and the compaction
of the table's marks *is* the sorted unique values (``lo`` + each marked position); the
inverse is the scan of the marks read at each element's value.  1- and 2-byte integers
always qualify (their table is the whole dtype's range: at most 64 KiB); wider ones when
the range, found by one pass computing both bounds (one more synchronization), has at most
:data:`DENSE_SPAN` values per element.  Marking needs no atomics: every writer of a slot
writes 1; where values repeat often, a slot already seen as 1 is not written again
(:data:`CHECK_DUPLICATES`).  Counts and first indices take the table where the range has at
most :data:`TALLY` values: each block counts in shared memory (:func:`tally_kernel`), and
the same compaction gathers the values, the counts and the first positions.

NaNs follow NumPy: the Array API functions count every NaN as distinct, ``unique`` gathers
them into one (``equal_nan=True``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import ember
from ember import dtypes
from ember.array import compact, kernels, launch, manipulation, ops
from ember.array.ndarray import ndarray, not_on_device
from ember.array.scan import inclusive_scan
from ember.compiler.kernel import Kernel

BLOCK = 256
# wider integers take the table when their range has at most DENSE_SPAN values per element
# (plus 2**16): the table's compaction reads a byte per value, the radix sort it replaces
# 16-32 bytes per element; below DENSE_MIN elements the sort is short and the range's
# synchronization is not worth it
DENSE_SPAN, DENSE_FLOOR, DENSE_MIN = 4, 1 << 16, 1 << 14
# with at least this many elements per value of the range, marking reads each slot before
# writing it: equal values then do not queue their stores at one address (H200, 2**24
# int32, marking alone: 10 distinct values 290 -> 65 us, one value 341 -> 67 us; but
# 2**24 distinct-ish values over 2**24 slots 220 -> 320 us, the read waiting on the load)
CHECK_DUPLICATES = 4
# ranges of at most TALLY values take the table for counts and first indices too: counted
# per block in shared memory (TALLY_BLOCKS_PER_SM blocks per multiprocessor, each adding
# its slots to the global counts once)
TALLY, TALLY_BLOCKS_PER_SM = 4096, 8
NO_INDEX = (1 << 31) - 1  # a first index before any element: atomic_min's start


class UniqueAllResult(NamedTuple):
    values: ndarray
    indices: ndarray
    inverse_indices: ndarray
    counts: ndarray


class UniqueCountsResult(NamedTuple):
    values: ndarray
    counts: ndarray


class UniqueInverseResult(NamedTuple):
    values: ndarray
    inverse_indices: ndarray


# --------------------------------------------------------------------- kernels
def _nan_equal(a, b):
    return a == b or (a != a and b != b)


def _plain_equal(a, b):
    return a == b


@functools.cache
def starts_kernel(merge_nans: bool) -> Kernel:
    """``flags[i] = 1`` where sorted element ``i`` starts a run of equal values."""
    SAME = _nan_equal if merge_nans else _plain_equal

    def run_starts(n, s, flags):
        i = ember.global_id()
        while i < n:
            flags[i] = 1 if i == 0 else (0 if SAME(s[i], s[i - 1]) else 1)
            i += ember.global_size()

    return kernels._named(run_starts, "run_starts" + ("_nan" if merge_nans else ""))


@functools.cache
def counts_kernel() -> Kernel:
    """``counts[k] = starts[k + 1] - starts[k]`` (the last run ends at ``n``)."""

    def run_lengths(m, n, starts, counts):
        k = ember.global_id()
        while k < m:
            end = starts[k + 1] if k + 1 < m else n
            counts[k] = end - starts[k]
            k += ember.global_size()

    return kernels._named(run_lengths, "run_lengths")


@functools.cache
def mark_kernel(check: bool) -> Kernel:
    """``table[x[i] - lo] = 1`` for every element; with ``check``, a slot read as 1 is not
    written again (see :data:`CHECK_DUPLICATES`)."""
    CHECK = check

    def mark_values(n, x, xbase, xstep, lo, table):
        i = ember.global_id()
        while i < n:
            k = ember.int64(x[xbase + i * xstep]) - lo
            if CHECK:
                if table[k] == 0:
                    table[k] = 1
            else:
                table[k] = 1
            i += ember.global_size()

    return kernels._named(mark_values, "unique_mark" + ("_checked" if check else ""))


@functools.cache
def tally_kernel(index: bool) -> Kernel:
    """Each block counts its elements' values (and, with ``index``, keeps the first
    position of each) in shared memory, then adds its counts to ``counts`` and its first
    positions to ``firsts`` (``atomic_min``) and marks the values it saw in ``table``: a
    histogram of at most :data:`TALLY` slots whose atomics meet in shared memory, not at one
    L2 address."""
    T, INDEX, B = TALLY, index, BLOCK

    def tally_values(n, x, xbase, xstep, lo, span, table, counts, firsts):
        h = ember.shared((T,), ember.int32)
        f = ember.shared((T if INDEX else 1,), ember.int32)
        t = ember.thread_idx.x
        for k in range(t, span, B):
            h[k] = 0
            if INDEX:
                f[k] = NO_INDEX
        ember.barrier()
        # a thread's runs of one value are counted in registers: an array of few values
        # (a constant, a mask) would otherwise queue every atomic at one slot
        i = ember.global_id()
        last = ember.int64(-1)
        run = ember.int32(0)
        start = ember.int32(0)  # the run's first position (a thread's positions rise)
        while i < n:
            k = ember.int64(x[xbase + i * xstep]) - lo
            if k != last:
                if run != 0:
                    ember.atomic_add(h, last, run)
                    if INDEX:
                        ember.atomic_min(f, last, start)
                last = k
                run = 0
                start = ember.int32(i)
            run += 1
            i += ember.global_size()
        if run != 0:
            ember.atomic_add(h, last, run)
            if INDEX:
                ember.atomic_min(f, last, start)
        ember.barrier()
        for k in range(t, span, B):
            c = h[k]
            if c != 0:
                table[k] = 1
                ember.atomic_add(counts, k, c)
                if INDEX:
                    ember.atomic_min(firsts, k, f[k])

    return kernels._named(tally_values, "unique_tally" + ("_first" if index else ""))


@functools.cache
def rank_kernel() -> Kernel:
    """``inverse[i] = ranks[x[i] - lo] - 1``: ``ranks``, the inclusive scan of the table's
    marks, numbers the unique values from 1."""

    def rank_values(n, x, xbase, xstep, lo, ranks, inverse):
        i = ember.global_id()
        while i < n:
            inverse[i] = ember.int64(ranks[ember.int64(x[xbase + i * xstep]) - lo]) - 1
            i += ember.global_size()

    return kernels._named(rank_values, "unique_rank")


@functools.cache
def first_kernel() -> Kernel:
    """``index[k] = perm[starts[k]]``: where each run of the sorted values came from."""

    def run_firsts(m, perm, starts, index):
        k = ember.global_id()
        while k < m:
            index[k] = ember.int64(perm[starts[k]])
            k += ember.global_size()

    return kernels._named(run_firsts, "run_firsts")


@functools.cache
def scatter_kernel() -> Kernel:
    """``inverse[perm[i]] = group[i] - 1``: the run number of sorted element ``i`` (the
    inclusive scan of the run starts, from 1) back at its original position."""

    def run_numbers(n, perm, group, inverse):
        i = ember.global_id()
        while i < n:
            inverse[perm[i]] = group[i] - 1
            i += ember.global_size()

    return kernels._named(run_numbers, "run_numbers")


# --------------------------------------------------------------------- the engine
def _dense_range(flat: ndarray, tally: bool) -> tuple[int, int] | None:
    """``(lo, span)``: the table's first value and length where the 1-d ``flat`` holds
    integers of a range narrow enough (see the module docstring; ``tally``: counts or
    first indices are wanted, so at most :data:`TALLY` values), else None."""
    dt, n = flat.dtype, flat.shape[0]
    if not (dt.kind in "iu" or dt is dtypes.bool_) or n == 0 or (tally and n >= 1 << 31):
        return None
    if dt is dtypes.bool_:
        return 0, 2
    whole = 1 << dt.bits
    if dt.itemsize <= 2 and (whole <= TALLY or not tally):  # the whole dtype's range
        return (-(whole >> 1) if dt.kind == "i" else 0), whole
    if n < DENSE_MIN or n >= 1 << 31:  # (the ranks of the inverse are int32)
        return None
    from ember.array import reductions

    lo_a, hi_a = reductions.bounds(flat)
    lo, hi = int(launch.read(lo_a, ())), int(launch.read(hi_a, ()))  # one synchronization
    span = hi - lo + 1
    if hi >= 1 << 63 or span > (TALLY if tally else DENSE_SPAN * n + DENSE_FLOOR):
        return None
    return lo, span


def _dense_unique(flat: ndarray, lo: int, span: int, index: bool, inverse: bool, counts: bool):
    """``(values, indices, inverse, counts)`` (None where not asked for) of the 1-d integer
    ``flat`` through a table of ``span`` slots from ``lo``: marked, or with ``index`` or
    ``counts`` tallied (``span`` <= :data:`TALLY`)."""
    be, n = flat.backend, flat.shape[0]
    x, xbase, (xstep,) = launch.flat(flat)
    table = launch.zeroed(be, (span,), dtypes.uint8)
    grid = launch.grid(be, n, BLOCK, whole=True)  # scattered stores: many in flight
    wanted = [(lo, flat.dtype)]
    if index or counts:
        tallies = launch.zeroed(be, (span,), dtypes.int32)
        firsts = launch.new(be, (span if index else 1,), dtypes.int32)  # (1: not read)
        if index:
            firsts.fill(NO_INDEX)
        blocks = min(grid, be.device.multiprocessors * TALLY_BLOCKS_PER_SM)
        args = (n, x, xbase, xstep, lo, span, table, tallies, firsts)
        launch.run(tally_kernel(index), blocks, BLOCK, args)
        wanted += [(tallies, dtypes.int64)] * counts + [(firsts, dtypes.int64)] * index
    else:
        mark = mark_kernel(n >= CHECK_DUPLICATES * span)
        launch.run(mark, grid, BLOCK, (n, x, xbase, xstep, lo, table))
    values, *found = compact.compact_each(table, wanted)
    out_counts = found.pop(0) if counts else None
    out_index = found.pop(0) if index else None
    out_inverse = None
    if inverse:
        ranks = launch.new(be, (1, span), dtypes.int32)
        inclusive_scan(manipulation.reshape(table, (1, span)), ranks, ops.add, dtypes.int32)
        out_inverse = launch.new(be, (n,), dtypes.int64)
        args = (n, x, xbase, xstep, lo, launch.flat1(ranks), out_inverse)
        launch.run(rank_kernel(), grid, BLOCK, args)
    return values, out_index, out_inverse, out_counts


def _unique(x, what: str, *, index=False, inverse=False, counts=False, merge_nans=False):
    """``(values, indices, inverse, counts)`` of the flattened ``x`` (None where not
    asked for)."""
    from ember.array.sort import sort_rows

    if not isinstance(x, ndarray):
        raise not_on_device(x, f"ember.{what}")
    from ember.array.rules import no_order

    no_order(x.dtype, what)  # (the values are found by sorting)
    be = x.backend
    flat = manipulation.reshape(x, (x.size,))
    n = flat.shape[0]
    merge = merge_nans and x.dtype.is_float
    need_perm = index or inverse
    dense = _dense_range(flat, index or counts)
    if dense is not None:
        values, out_index, out_inverse, out_counts = _dense_unique(
            flat, *dense, index, inverse, counts
        )
        if inverse:
            out_inverse = manipulation.reshape(out_inverse, x.shape)
        return values, out_index, out_inverse, out_counts
    svals, perm = sort_rows(manipulation.reshape(flat, (1, n)), True, need_perm, False)
    svals = manipulation.reshape(svals, (n,))
    flags = launch.new(be, (n,), dtypes.uint8)
    if n:
        grid = launch.grid(be, n, BLOCK)
        launch.run(starts_kernel(merge), grid, BLOCK, (n, svals, flags))
    wanted = [(svals, None), (None, None)] if (index or counts) else [(svals, None)]
    values, *rest = compact.compact_each(flags, wanted)  # one count, one synchronization
    m = values.shape[0]
    starts = rest[0] if rest else None
    out_counts = out_index = out_inverse = None
    if counts:
        out_counts = launch.new(be, (m,), dtypes.int64)
        if m:
            grid = launch.grid(be, m, BLOCK)
            launch.run(counts_kernel(), grid, BLOCK, (m, n, starts, out_counts))
    if need_perm:
        perm = manipulation.reshape(perm, (n,))
    if index:
        out_index = launch.new(be, (m,), dtypes.int64)
        if m:
            grid = launch.grid(be, m, BLOCK, whole=True)  # (gathers)
            launch.run(first_kernel(), grid, BLOCK, (m, launch.flat1(perm), starts, out_index))
    if inverse:
        group = launch.new(be, (1, n), dtypes.int64)
        inclusive_scan(manipulation.reshape(flags, (1, n)), group, ops.add, dtypes.int64)
        out_inverse = launch.new(be, (n,), dtypes.int64)
        if n:
            grid = launch.grid(be, n, BLOCK, whole=True)  # (scattered stores)
            args = (n, launch.flat1(perm), launch.flat1(group), out_inverse)
            launch.run(scatter_kernel(), grid, BLOCK, args)
        out_inverse = manipulation.reshape(out_inverse, x.shape)
    return values, out_index, out_inverse, out_counts


# --------------------------------------------------------------------- public functions
def unique_values(x, /) -> ndarray:
    """The sorted unique elements of ``x`` (flattened); every NaN counts as distinct
    (Array API)."""
    return _unique(x, "unique_values")[0]


def unique_counts(x, /) -> UniqueCountsResult:
    """``(values, counts)``: the unique elements and how often each occurs (int64)."""
    v, _, _, c = _unique(x, "unique_counts", counts=True)
    return UniqueCountsResult(v, c)


def unique_inverse(x, /) -> UniqueInverseResult:
    """``(values, inverse_indices)``: ``values[inverse_indices]`` rebuilds ``x`` (the
    indices have ``x``'s shape)."""
    v, _, inv, _ = _unique(x, "unique_inverse", inverse=True)
    return UniqueInverseResult(v, inv)


def unique_all(x, /) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``; ``indices`` are the first
    occurrences in the flattened ``x``."""
    v, i, inv, c = _unique(x, "unique_all", index=True, inverse=True, counts=True)
    return UniqueAllResult(v, i, inv, c)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):  # noqa: A002 - NumPy's name  # fmt: skip
    """NumPy's ``unique``: the sorted unique elements of the flattened ``ar``, and with the
    ``return_*`` flags the first indices, the inverse (of ``ar``'s shape, as NumPy 2) and
    the counts, in that order.  ``equal_nan=True`` gathers the NaNs into one element.
    ``axis``: the unique sub-arrays along that axis, in lexicographic order, with a 1-d
    inverse (:mod:`ember.array.unique_rows`; sub-arrays holding NaNs are never merged, as in
    NumPy).  A 1-d array with ``axis`` is the flat case, as in NumPy."""
    flat = axis is None or (isinstance(ar, ndarray) and ar.ndim == 1)
    if not flat:
        from ember.array.unique_rows import unique_rows

        v, i, inv, c = unique_rows(ar, axis, return_index, return_inverse, return_counts)
    else:
        if axis is not None:
            manipulation._axis(axis, 1)  # NumPy checks the axis, then treats it as flat
        v, i, inv, c = _unique(ar, "unique", index=return_index, inverse=return_inverse,
                               counts=return_counts, merge_nans=equal_nan)  # fmt: skip
    extra = [a for a, want in ((i, return_index), (inv, return_inverse), (c, return_counts))
             if want]  # fmt: skip
    return (v, *extra) if extra else v


__all__ = ["unique_values", "unique_counts", "unique_inverse", "unique_all", "unique"]
