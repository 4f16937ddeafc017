"""Set functions: ``unique_values``, ``unique_counts``, ``unique_inverse``, ``unique_all``
(Array API) and NumPy's ``unique`` with its ``return_*`` spellings.

Built from the other primitives: a stable sort of the flattened input (``argsort`` where
indices are needed), a kernel flagging the first element of each run of equal values, a
stream compaction of the values and of the run starts (one synchronization: the number of
unique values), their differences for the counts, the sort permutation at the starts for
the first occurrences, and a scan of the flags scattered through the permutation for the
inverse.

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


# --------------------------------------------------------------------- the engine
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
    svals, perm = sort_rows(manipulation.reshape(flat, (1, n)), True, need_perm, False)
    svals = manipulation.reshape(svals, (n,))
    flags = launch.new(be, (n,), dtypes.uint8)
    if n:
        grid = min(-(-n // BLOCK), launch.max_grid(be))
        launch.run(starts_kernel(merge), grid, BLOCK, (n, svals, flags))
    wanted = [(svals, None), (None, None)] if (index or counts) else [(svals, None)]
    values, *rest = compact.compact_each(flags, wanted)  # one count, one synchronization
    m = values.shape[0]
    starts = rest[0] if rest else None
    out_counts = out_index = out_inverse = None
    if counts:
        out_counts = launch.new(be, (m,), dtypes.int64)
        if m:
            grid = min(-(-m // BLOCK), launch.max_grid(be))
            launch.run(counts_kernel(), grid, BLOCK, (m, n, starts, out_counts))
    if need_perm:
        perm = manipulation.reshape(perm, (n,))
    if index:
        out_index = perm[starts]
    if inverse:
        group = launch.new(be, (1, n), dtypes.int64)
        inclusive_scan(manipulation.reshape(flags, (1, n)), group, ops.add, dtypes.int64)
        out_inverse = launch.new(be, (n,), dtypes.int64)
        if n:
            out_inverse[perm] = manipulation.reshape(group, (n,)) - 1
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
    ``axis`` (unique rows) is not supported."""
    if axis is not None:
        raise NotImplementedError("ember.unique(axis=...) (unique sub-arrays) is not supported")
    v, i, inv, c = _unique(ar, "unique", index=return_index, inverse=return_inverse,
                           counts=return_counts, merge_nans=equal_nan)  # fmt: skip
    extra = [a for a, want in ((i, return_index), (inv, return_inverse), (c, return_counts))
             if want]  # fmt: skip
    return (v, *extra) if extra else v


__all__ = ["unique_values", "unique_counts", "unique_inverse", "unique_all", "unique"]
