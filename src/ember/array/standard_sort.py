"""The standard precompiled set's scans, compactions (``x[mask]``, ``nonzero``) and sorts:
``(kernel, example_args)`` pairs with exactly the argument types that :mod:`.scan`,
:mod:`.compact` and :mod:`.sort` launch on the current device (which design a device runs -
single pass or not, warp matching or counters - and its tile shape are the device's, so
the examples are made for the backend that precompiles).

An example array is a NumPy array of the right dtype (1-d, contiguous: every one of these
kernels takes flat views); Python ints and bools stand for the size and flag arguments.
``tests/array/test_array_standard.py`` checks in a fresh process that, after
``ember precompile``, these operations compile nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from ember import dtypes
from ember.array import ops
from ember.array import scan_kernels as sk
from ember.array import sort_kernels as kern
from ember.array import sort_match as match
from ember.dtypes import DType

SORTED = ("int32", "int64", "float32", "float64")  # dtypes whose sorts are precompiled


def _a(dt: DType):
    import numpy as np

    return np.zeros(4, dt.numpy)


def _scan(be, op, ct: DType, x: DType, out: DType) -> Iterator:
    """What :func:`ember.array.scan.inclusive_scan` launches for input ``x``/output ``out``
    on short rows and long ones (with the scans of the tile totals, in storage dtype)."""
    from ember.array.scan import geometry

    g = geometry(be, ct)
    yield sk.rows_serial(op, ct), (1, 4, _a(x), 0, 4, 1, _a(out), 0, 4)
    head = (1, 4, 1, _a(x), 0, 4, 1, _a(out), 0, 4)
    st = sk.storage(ct)
    if be.forward_progress:
        one_pass = geometry(be, ct, single_pass=True)
        yield sk.scan_lookback(op, ct, one_pass), (*head, _a(dtypes.uint64), 1)
        yield sk.scan_carry(op, ct, g), (*head, _a(st))  # rows of one tile
        return
    yield sk.tile_reduce(op, ct, g), (1, 4, 1, _a(x), 0, 4, 1, _a(st))
    yield sk.scan_carry(op, ct, g), (*head, _a(st))
    if st is not x or st is not out:
        yield from _scan(be, op, ct, st, st)


def scans(be, dts) -> Iterator:
    """``cumsum``/``cumulative_sum`` and ``cumprod`` of 1-d arrays of ``dts``."""
    from ember.array import ufuncs
    from ember.array.scan import _accumulation_dtype, _resolve

    for name in dts:
        dt = dtypes.dtype(name)
        for uf in (ufuncs.add, ufuncs.multiply):
            op, ct, out = _resolve(uf, _accumulation_dtype(dt))
            yield from _scan(be, op, ct, dt, out)


def compact_select(be, what):
    """The compaction kernel of ``be`` that writes ``what`` (:mod:`ember.array.compact`)."""
    from ember.array import compact
    from ember.array import compact_kernels as ck
    from ember.array.scan import geometry

    warp_ops, block, *_ = compact.layout(be, 1)
    if warp_ops is not None:
        return ck.select_ballot(block, what, warp_ops)
    return sk.select(geometry(be, dtypes.int32), what)


def _flag_count(be, dt: DType):
    """The compaction's count of flags of dtype ``dt``, with its example."""
    from ember.array import compact
    from ember.array import compact_kernels as ck
    from ember.array.scan import geometry

    warp_ops, block, *_ = compact.layout(be, 1)
    if warp_ops is not None:
        return ck.flag_counts(block, warp_ops), (4, 1, 1, _a(dt), 0, 1, _a(dtypes.int32))
    k = sk.tile_reduce(ops.add, dtypes.int32, geometry(be, dtypes.int32), sk.flag)
    return k, (1, 4, 1, _a(dt), 0, 0, 1, _a(dtypes.int32))


def _head(be) -> tuple:
    """The compaction's leading arguments: ``(n, tiles[, per])``."""
    from ember.array import compact

    return (4, 1, 1) if compact.layout(be, 1)[0] is not None else (4, 1)


def compactions(be, dts) -> Iterator:
    """``x[mask]`` (a bool mask of ``x``'s shape) and ``nonzero``/``where`` of ``dts``."""
    i64 = dtypes.int64
    head = _head(be)
    yield from _scan(be, ops.add, i64, dtypes.int32, i64)  # the tile counts' scan
    for name in dict.fromkeys(("bool", *dts)):
        dt = dtypes.dtype(name)
        yield _flag_count(be, dt)
        flags = (*head, _a(dt), 0, 1)
        yield compact_select(be, sk.index_of), (*flags, _a(dt), 0, 0, _a(i64), _a(i64))
    for name in dts:
        dt = dtypes.dtype(name)
        args = (*head, _a(dtypes.bool_), 0, 1, _a(dt), 0, 1, _a(i64), _a(dt))
        yield compact_select(be, sk.value_at), args


def _payloads(passes: int) -> list[tuple[str, DType, DType, DType]]:
    """``(payload, PT, PO, pin dtype)`` of the passes of a sort (none) and an argsort."""
    i32, i64 = dtypes.int32, dtypes.int64
    found = [("none", i32, i32, i32)]
    if passes == 1:
        return [*found, ("iota", i32, i64, i32)]
    return [*found, ("iota", i32, i32, i32), ("load", i32, i32, i32), ("load", i32, i64, i32)]


def sorts(be, dts) -> Iterator:
    """``sort``/``argsort`` of 1-d arrays of ``dts``: row networks and radix passes."""
    from ember.array import sort

    i64, u32 = dtypes.int64, dtypes.uint32
    warp_ops = sort.ranking(be)
    for name in dts:
        dt = dtypes.dtype(name)
        U = kern.unsigned(dt.itemsize)
        kind = "f" if dt.is_float else "i" if dt.kind == "i" else "u"
        passes = max(1, U.itemsize * 8 // kern.RADIX_BITS)
        for merge in dict.fromkeys((False, kind == "f")):
            fns = kern.key_functions(kind, U, merge)
            for p in sort.NETWORKS:
                block = max(1, min(p // 2, 64 if sort.launch.is_cpu(be) else 256,
                                   be.device.max_threads_per_block))  # fmt: skip
                args = (1, 4, _a(U), 0, 4, 1, False, True, _a(U), 0, 4, True, _a(i64), 0, 4)
                yield kern.bitonic_rows(U, fns, p, block), args
            for payload, pt, po, pin in _payloads(passes):
                if (payload != "none") != merge and kind == "f":
                    continue  # sort: exact zeros; argsort: merged zeros
                g = sort.geometry(be, U, pt if payload != "none" else None, warp_ops)
                head = (4, 1, _a(U), 0, 1, _a(pin), 0, 1, 0, True, True, False)
                yield from _radix_pass(be, U, fns, g, payload, pt, po, head, passes, warp_ops)
    yield from _scan(be, ops.add, i64, u32, i64)  # digit counts / histograms


def _radix_pass(be, U, fns, g, payload, pt, po, head, passes, warp_ops) -> Iterator:
    i64, u32 = dtypes.int64, dtypes.uint32
    tail = (_a(U), _a(po if payload != "none" else pt))
    if warp_ops is not None and be.forward_progress:
        from ember.array.sort import histogram_geometry, onesweep_mode

        gh = histogram_geometry(be, g)
        yield match.histogram(U, fns, gh, passes), (4, 1, _a(U), 0, 1, False, _a(u32))
        yield match.trivial_passes(), (4, 4, _a(u32), _a(u32), 4)
        k = match.match_pass(U, fns, g, payload, pt, po, onesweep_mode(be), warp_ops)
        yield k, (*head, _a(i64), _a(u32), 3, *tail)
        yield match.copy_pass(U, fns, g, payload, pt, po), (*head, _a(u32), 2, *tail)
        return
    up_args = (4, 1, _a(U), 0, 1, 0, True, False, _a(u32))
    yield kern.upsweep(U, fns, g), up_args
    if warp_ops is not None:
        k = match.match_pass(U, fns, g, payload, pt, po, "classic", warp_ops)
        yield k, (*head, _a(i64), _a(u32), 0, *tail)
    else:
        yield kern.downsweep(U, fns, g, payload, pt, po), (*head, _a(i64), *tail)


def uniques(be, dts) -> Iterator:
    """The unique family of 1-d arrays of ``dts``: the table of integers and bools
    (``unique_values``/``unique_inverse``) and, for the sorted dtypes, the run starts, their
    compaction and the counts after the sort (:mod:`ember.array.sets`)."""
    from ember.array import reduce as red
    from ember.array import reducers, sets

    i32, i64, u8 = dtypes.int32, dtypes.int64, dtypes.uint8
    head, indices, values = (
        _head(be),
        compact_select(be, sk.index_of),
        compact_select(be, sk.value_at),
    )
    table = (*head, _a(u8), 0, 1, _a(u8), 0, 0, _a(i64))  # flags: a uint8 table
    yield _flag_count(be, u8)
    yield values, (*head, _a(u8), 0, 1, _a(i32), 0, 1, _a(i64), _a(i64))  # counts, firsts
    yield from _scan(be, ops.add, i32, u8, i32)  # the table's ranks
    yield from _scan(be, ops.add, i64, u8, i64)  # the sorted runs' numbers
    for name in dict.fromkeys(("bool", *dts)):
        dt = dtypes.dtype(name)
        if dt.kind in "iub":
            for check in (False, True):
                yield sets.mark_kernel(check), (4, _a(dt), 0, 1, 0, _a(u8))
            for first in (False, True):  # counts and first indices of a narrow range
                args = (4, _a(dt), 0, 1, 0, 4, _a(u8), _a(i32), _a(i32))
                yield sets.tally_kernel(first), args
            if dt.itemsize > 2:  # the range: one pass, both bounds
                yield from red.examples(reducers.bounds(dt), dt, dt, mean_dtype=dt)
            yield sets.rank_kernel(), (4, _a(dt), 0, 1, 0, _a(i32), _a(i64))
            yield indices, (*table, _a(dt))
        if name in SORTED:
            for merge in dict.fromkeys((False, dt.is_float)):
                yield sets.starts_kernel(merge), (4, _a(dt), _a(u8))
            yield indices, (*table, _a(i64))
            yield values, (*head, _a(u8), 0, 1, _a(dt), 0, 1, _a(i64), _a(dt))
    yield sets.counts_kernel(), (4, 4, _a(i64), _a(i64))
    yield sets.first_kernel(), (4, _a(i64), _a(i64), _a(i64))
    yield sets.scatter_kernel(), (4, _a(i64), _a(i64), _a(i64))


def examples(be, dts) -> Iterator:
    """Every example of this module for ``be`` and the dtypes ``dts``."""
    yield from scans(be, dts)
    yield from compactions(be, dts)
    yield from sorts(be, [d for d in dts if d in SORTED])
    yield from uniques(be, dts)
