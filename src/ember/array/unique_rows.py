"""NumPy's ``unique(x, axis=k)``: the unique sub-arrays along an axis.

The axis is moved first and the rest flattened, so each sub-array is a row of ``m``
elements.  The rows are ordered lexicographically (the first element most significant, as
NumPy orders its structured view of them) by ``ember.lexsort``, which is stable: of equal
rows the first keeps its place, so the first indices are NumPy's.  A row starts a new
group where it differs from the row before it in any element; ``NaN != NaN``, so rows
holding NaNs are never merged, as in NumPy (whose ``equal_nan`` does not apply here), and
NaN sorts last in each column (NumPy's order of such rows is not defined: it compares them
through a structured view whose NaN comparison is inconsistent).  ``-0.0`` equals ``0.0``.
The inverse is 1-d (NumPy 2.1 and later).  A 1-d array never comes here: NumPy treats it
as the flat case (``sets.unique``).  Each column is one stable sort (``lexsort``), so wide
sub-arrays cost one sort per element.
"""

from __future__ import annotations

import math

import ember
from ember.array import manipulation
from ember.array.ndarray import ndarray, not_on_device


def unique_rows(x, axis, index: bool, inverse: bool, counts: bool) -> tuple:
    """``(values, indices, inverse, counts)`` of the unique sub-arrays of ``x`` along
    ``axis`` (None where not asked for)."""
    if not isinstance(x, ndarray):
        raise not_on_device(x, "ember.unique")
    if x.ndim == 0:
        raise ValueError("ember.unique: axis given for a 0-d array (it has no axis)")
    if x.dtype.kind == "c":
        raise TypeError("ember.unique(axis=...): complex sub-arrays have no order; pass the "
                        "real and imaginary parts as separate columns")  # fmt: skip
    k = manipulation._axis(axis, x.ndim)
    moved = manipulation.moveaxis(x, k, 0)
    n, rest = moved.shape[0], moved.shape[1:]
    rows = manipulation.reshape(manipulation.ascontiguousarray(moved), (n, math.prod(rest)))
    order, starts = _groups(rows)
    values = manipulation.moveaxis(
        manipulation.reshape(ember.take(rows, ember.take(order, starts), axis=0),
                             (starts.shape[0], *rest)), 0, k)  # fmt: skip
    first = ember.take(order, starts) if index else None
    where = _inverse(order, starts, n) if inverse else None
    sizes = ember.diff(starts, append=ember.asarray([n], device=x.backend)) if counts else None
    return values, first, where, sizes


def _groups(rows: ndarray) -> tuple[ndarray, ndarray]:
    """The stable lexicographic order of ``rows`` and the positions (in that order) where a
    new row value starts (int64)."""
    n, m = rows.shape
    be = rows.backend
    if n == 0:
        empty = ember.zeros(0, ember.int64, device=be)
        return empty, empty
    if m == 0:  # rows without elements are all equal
        return ember.arange(n, dtype=ember.int64, device=be), ember.zeros(1, ember.int64, device=be)
    order = ember.lexsort(tuple(rows[:, j] for j in range(m - 1, -1, -1)))
    ordered = ember.take(rows, order, axis=0)
    changed = ember.any(ordered[1:] != ordered[:-1], axis=1)
    starts = ember.nonzero(ember.concatenate([ember.ones(1, ember.bool, device=be), changed]))[0]
    return order, starts.astype(ember.int64, copy=False)


def _inverse(order: ndarray, starts: ndarray, n: int) -> ndarray:
    """For each original row, the index of its unique row."""
    be = order.backend
    marks = ember.zeros(n, ember.int64, device=be)
    if n:
        marks[starts] = 1
    group = ember.cumulative_sum(marks) - 1  # of each row in sorted order
    out = ember.empty(n, ember.int64, device=be)
    if n:
        out[order] = group
    return out


__all__ = ["unique_rows"]
