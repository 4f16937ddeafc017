"""NumPy's ``rollaxis``, ``fill_diagonal``, ``diagflat``, ``block``, ``diagonal``, ``diag``
and ``trace``: axis bookkeeping, diagonals and block assembly over Ember's views and copies.

- ``rollaxis`` is a permutation of the axes (a view), NumPy's rule for ``start``.
- ``fill_diagonal`` writes through a strided *view* of the diagonal: its elements are
  ``offset + k * sum(strides)`` for any layout, so one copy kernel fills them in place
  (values cycled to the diagonal's length as NumPy's ``a.flat[...] = val``).  NumPy's
  ``wrap=True`` on a tall matrix continues the diagonal every ``m + 1`` rows: for a
  C-contiguous array that is the same view, longer (flat position ``k (m + 1)``); for other
  layouts one view per block of ``m + 1`` rows (a host loop of ``n / (m + 1)`` copies).
- ``diagflat`` is :func:`ember.diag` of the flattened input (one zero matrix, one write).
- ``diagonal`` is a strided view (through ``ember.linalg.diagonal`` after moving the two
  axes last), ``diag`` of a 1-d array writes it into that view of a zero matrix, ``trace``
  sums the view.
- ``tril``/``triu`` (:func:`triangle`) are one kernel over the C-ordered elements: each
  keeps its value or takes a zero of the dtype by its row and column (NaN and infinities
  above the diagonal become zeros too, as with NumPy's ``where``): a block per row, or a
  thread per element for short rows.  H200, 4096 x 4096 float32: 37 us (torch.tril 46),
  against 156 for the five kernels of index arithmetic and ``where`` it replaced.
- ``block`` checks the nesting as NumPy does (lists only, equal depths, none empty), makes
  every leaf at least ``max(depth, ndim)``-d and concatenates from the innermost lists out,
  the innermost along the last axis: one :func:`ember.concatenate` per list.
"""

from __future__ import annotations

import functools
import operator

import numpy as np

import ember
from ember.array import kernels, launch, manipulation
from ember.array.creation import on_device
from ember.array.creation import operand as _arr
from ember.array.ndarray import ndarray, not_on_device


# --------------------------------------------------------------------- rollaxis
def rollaxis(a, axis, start=0) -> ndarray:
    """``a`` with ``axis`` moved to before position ``start`` (a view; NumPy's
    ``rollaxis``, kept for compatibility: :func:`ember.moveaxis` is the clearer spelling).
    ``start`` may be ``-ndim .. ndim``; out of range raises NumPy's ``AxisError``."""
    x = on_device(a, "rollaxis")
    n = x.ndim
    axis = manipulation._axis(axis, n, "ember.rollaxis: axis")
    start = int(start)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(
            f"ember.rollaxis: 'start' arg requires {-n} <= start < {n + 1}, but "
            f"{start if start >= 0 else start - n} was passed in"
        )
    if axis < start:
        start -= 1
    if axis == start:
        return x[...]
    axes = [k for k in range(n) if k != axis]
    axes.insert(start, axis)
    return manipulation.permute_dims(x, tuple(axes))


# --------------------------------------------------------------------- fill_diagonal
def _strided(x: ndarray, count: int, step: int, offset: int) -> ndarray:
    """``count`` elements of ``x``'s buffer from byte ``offset``, ``step`` bytes apart."""
    return ndarray((count,), x.dtype, x.buffer, x.backend, (step,), offset)


def _values(val, a: ndarray, count: int):
    """``val`` as NumPy's flat assignment takes it: a scalar as it is, else its flattened
    elements cycled (or cut) to ``count``; None when it has no elements."""
    if not isinstance(val, ndarray):
        if type(val).__module__ == "numpy" and np.ndim(val):
            raise not_on_device(val, "ember.fill_diagonal")
        if np.ndim(val) == 0:
            return val
        val = ember.asarray(np.asarray(val), device=a.backend)
    flat = manipulation.reshape(val, (-1,))
    if flat.shape[0] == 0:
        return None
    if flat.shape[0] < count:
        flat = manipulation.tile(flat, -(-count // flat.shape[0]))
    return flat[:count]


def fill_diagonal(a, val, wrap=False) -> None:
    """Write ``val`` on the main diagonal of ``a`` in place (NumPy's ``fill_diagonal``):
    ``a[i, i, ..., i]`` for an array of 2 or more equal dimensions, ``a[i, i]`` for
    ``i < min(n, m)`` of a matrix.  ``val`` is a scalar or an array whose flattened
    elements are cycled along the diagonal.  ``wrap=True`` continues the diagonal of a
    tall matrix below every ``m + 1`` rows, as NumPy's.  Returns None."""
    x = on_device(a, "fill_diagonal")
    if x.ndim < 2:
        raise ValueError(f"ember.fill_diagonal: array must be at least 2-d, got {x.ndim}-d")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise ValueError(f"ember.fill_diagonal: all dimensions of input must be of equal "
                         f"length, got shape {x.shape}")  # fmt: skip
    n, m = x.shape[0], x.shape[-1]
    step = sum(x.strides)
    count = min(x.shape)
    blocks = [(0, count)]
    if x.ndim == 2 and wrap and n > m + 1 and m:
        count = -(-n * m // (m + 1))  # flat positions k (m + 1) below n * m
        if x.c_strided:  # then the flat position is the byte offset: one view
            blocks = [(0, count)]
        else:  # block j: the diagonal from row j (m + 1)
            blocks = [(j * (m + 1), min(m, n - j * (m + 1))) for j in range(-(-n // (m + 1)))]
    values = _values(val, x, count)
    if values is None or count == 0:
        return
    done = 0
    for row, length in blocks:
        view = _strided(x, length, step, x.offset + row * x.strides[0])
        part = values if not isinstance(values, ndarray) else values[done : done + length]
        manipulation.copy_into(view, part)
        done += length


# --------------------------------------------------------------------- diagflat
def diagflat(v, k=0) -> ndarray:
    """A 2-d array with the flattened ``v`` on its ``k``-th diagonal and zeros elsewhere
    (NumPy's ``diagflat``): :func:`ember.diag` of ``ravel(v)``."""
    return ember.diag(manipulation.reshape(_arr(v, "diagflat"), (-1,)), k)


# --------------------------------------------------------------------- block
def _leaves(arrays, index: str, out: list) -> None:
    """``(index, leaf)`` of every non-list in the nesting, checking NumPy's rules."""
    if isinstance(arrays, tuple):
        raise TypeError(f"ember.block: {index} is a tuple. Only lists can be used to arrange "
                        "blocks, and ember.block does not allow implicit conversion from "
                        "tuple to ndarray; use a list")  # fmt: skip
    if not isinstance(arrays, list):
        out.append((index, arrays))
        return
    if not arrays:
        raise ValueError(f"ember.block: List at {index} cannot be empty")
    for i, sub in enumerate(arrays):
        _leaves(sub, f"{index}[{i}]", out)


def _depth(index: str) -> int:
    return index.count("[")


def _assemble(arrays, depth: int, list_ndim: int, ndim: int, be) -> ndarray:
    if depth == list_ndim:
        x = arrays if isinstance(arrays, ndarray) else _arr(arrays, "block")
        x = x if be is None or x.backend is be else ember.asarray(x, device=be)
        return manipulation.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    parts = [_assemble(sub, depth + 1, list_ndim, ndim, be) for sub in arrays]
    try:
        return manipulation.concatenate(parts, axis=depth - list_ndim)
    except ValueError as exc:
        raise ValueError(f"ember.block: {exc}") from None


def block(arrays) -> ndarray:
    """An array assembled from nested lists of blocks (NumPy's ``block``): the innermost
    lists are joined along the last axis, the next ones out along the one before, and so
    on; every block is first made at least ``max(nesting depth, ndim)``-d by leading
    1-length axes.  Blocks are ember arrays or numbers; tuples, empty lists and uneven
    nesting raise NumPy's errors.  A fresh array (one concatenation per list)."""
    found: list = []
    _leaves(arrays, "arrays", found)
    first = _depth(found[0][0])
    for index, _ in found:
        if _depth(index) != first:
            raise ValueError(f"ember.block: List depths are mismatched. First element was at "
                             f"depth {first}, but there is an element at depth "
                             f"{_depth(index)} ({index})")  # fmt: skip
    for _, leaf in found:
        if type(leaf).__module__ == "numpy" and np.ndim(leaf):
            raise not_on_device(leaf, "ember.block")
    be = next((leaf.backend for _, leaf in found if isinstance(leaf, ndarray)), None)
    ndim = max([first] + [leaf.ndim if isinstance(leaf, ndarray) else np.ndim(leaf)
                          for _, leaf in found])  # fmt: skip
    out = _assemble(arrays, 0, first, ndim, be)
    return ember.copy(out) if first == 0 else out


# --------------------------------------------------------------------- diagonals
def diagonal(a, offset=0, axis1=0, axis2=1) -> ndarray:
    """The ``offset`` diagonal of the 2-d slices on ``axis1`` and ``axis2`` (NumPy's
    ``diagonal``): those axes are removed and the diagonal becomes the last one.

    A strided **view** of ``a`` (the two axes walked together, stride the sum of theirs),
    like NumPy's, but writable (NumPy's view is read-only).  ``ember.linalg.diagonal``
    is the Array API's form (last two axes, keyword ``offset``).
    """
    from ember.array import linalg

    x = on_device(a, "diagonal")
    if x.ndim < 2:
        raise ValueError(f"ember.diagonal: needs at least 2 dimensions, got shape {x.shape} "
                         "(ember.diag builds a matrix from a 1-d array)")  # fmt: skip
    i = manipulation._axis(axis1, x.ndim, "axis1")
    j = manipulation._axis(axis2, x.ndim, "axis2")
    if i == j:
        raise ValueError(f"ember.diagonal: axis1 and axis2 cannot be the same (both {i})")
    moved = manipulation.moveaxis(x, (i, j), (-2, -1))
    return linalg.diagonal(moved, offset=operator.index(offset))


def diag(v, k=0) -> ndarray:
    """A 1-d ``v``: a new square matrix with ``v`` on its ``k``-th diagonal (zeros
    elsewhere); a 2-d ``v``: its ``k``-th diagonal, a view (as :func:`diagonal`)."""
    x = on_device(v, "diag")
    k = operator.index(k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError(f"ember.diag: input must be 1- or 2-d, got shape {x.shape}")
    n = x.shape[0] + abs(k)
    out = ember.zeros((n, n), x.dtype, device=x.backend)
    manipulation.copy_into(diagonal(out, k), x)
    return out


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None) -> ndarray:
    """The sum of the ``offset`` diagonal of the 2-d slices on ``axis1`` and ``axis2``
    (NumPy's ``trace``): a scalar (0-d) for a 2-d ``a``.  The dtype is ``sum``'s: bools
    and integers narrower than 64 bits sum in int64 (unsigned: uint64) unless ``dtype``
    says otherwise.  ``out``, when given, receives the result and is returned."""
    d = diagonal(on_device(a, "trace"), offset, axis1, axis2)
    return manipulation.into(out, ember.sum(d, axis=-1, dtype=dtype), "trace")


__all__ = ["rollaxis", "fill_diagonal", "diagflat", "block", "diagonal", "diag", "trace"]


# --------------------------------------------------------------------- tril, triu
@functools.cache
def _triangle_kernel(wide: bool):
    """Rows shorter than :data:`ROW_MIN`: a thread per element, its row and column by a
    division.  ``wide``: 64-bit positions (past 2**31 elements); else 32-bit, whose
    division costs a fraction of a 64-bit one (H200, 4096 x 4096 float32 through this
    kernel: 110 us in 64-bit, 82 in 32-bit)."""
    IT = ember.int64 if wide else ember.int32

    def triangle_part(total, x, n, m, k, lower, out):
        i = ember.global_id()
        while i < total:
            j = IT(i)
            col = j % IT(m)
            row = (j // IT(m)) % IT(n)
            keep = col - row <= k if lower else col - row >= k
            out[i] = x[i] if keep else out.dtype(0)
            i += ember.global_size()

    return kernels._named(triangle_part, "triangle_part" + ("_wide" if wide else ""))


@functools.cache
def _triangle_rows_kernel():
    """Rows of at least :data:`ROW_MIN` elements: a block per row at a time, its threads
    along the row, no division per element (H200, 4096 x 4096 float32: 37 us, torch.tril
    46)."""

    def triangle_rows(rows, x, n, m, k, lower, out):
        r = ember.block_idx.x
        while r < rows:
            row = r % n
            base = r * m
            c = ember.thread_idx.x
            while c < m:
                keep = c - row <= k if lower else c - row >= k
                out[base + c] = x[base + c] if keep else out.dtype(0)
                c += ember.block_dim.x
            r += ember.grid_dim.x

    return kernels._named(triangle_rows, "triangle_rows")


ROW_MIN = 256  # rows this long: one block a row (shorter: one thread per element)


def triangle(x: ndarray, k: int, lower: bool) -> ndarray:
    """``x`` with the elements above (``lower``) or below diagonal ``k`` of its last two
    axes zeroed: a new C-contiguous array (see the module docstring); a 1-d ``x`` is each
    row of a square matrix first, as in NumPy."""
    if x.ndim == 1:  # NumPy's: the vector as every row of a square matrix
        x = manipulation.broadcast_to(x, (x.shape[0], x.shape[0]))
    if x.ndim < 2:
        raise ValueError("tril/triu need an array of at least 1 dimension")
    src = manipulation.ascontiguousarray(x)
    out = launch.new(x.backend, x.shape, x.dtype)
    total = out.size
    if total:
        n, m = x.shape[-2], x.shape[-1]
        args = (total, launch.flat1(src), n, m, int(k), bool(lower), launch.flat1(out))
        if m >= ROW_MIN:
            rows = total // m
            k_ = _triangle_rows_kernel()
            launch.run(k_, launch.grid(x.backend, rows * 256, 256), 256, (rows, *args[1:]))
        else:
            k_ = _triangle_kernel(total >= 1 << 31)
            launch.run(k_, launch.grid(x.backend, total, 256), 256, args)
    return out
