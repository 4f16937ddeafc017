"""``numpy.linalg``'s functions beyond the Array API extension, in ``ember.linalg``:
``norm``, ``cond``, ``lstsq``, ``multi_dot``, ``eig``, ``eigvals``, ``tensorsolve`` and
``tensorinv``, with NumPy's arguments and results.

They are compositions of :mod:`ember.array.linalg` (the norms, ``svd``, ``inv``, ``solve``)
and ``matmul``, so they run where those run: on the device, or on the host where the
backend has no solver library (with that module's one warning per function).  ``eig`` and
``eigvals`` of general (non-symmetric) matrices have no device solver on any backend: they
always run on the host with NumPy, and say so once per process.
"""

from __future__ import annotations

import math
from collections import namedtuple

from ember import dtypes
from ember.array import linalg as la

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
LstsqResult = namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])


def _axes(axis, ndim: int) -> tuple[int, ...]:
    """``axis`` (an int or a sequence) as non-negative axes, in the order given."""
    from ember.array.manipulation import _axis

    items = axis if isinstance(axis, tuple | list) else (axis,)
    out = tuple(_axis(a, ndim, "ember.linalg.norm: axis") for a in items)
    if len(set(out)) != len(out):
        raise ValueError(f"ember.linalg.norm: duplicate axes given: {axis!r}")
    return out


def norm(x, ord=None, axis=None, keepdims: bool = False):  # noqa: A002 - NumPy's name
    """NumPy's ``linalg.norm``: a vector norm along one axis, a matrix norm over two.

    ``axis=None``: with ``ord=None`` the 2-norm of all elements (any dimension); with an
    ``ord``, ``x`` must be 1-d (a vector norm) or 2-d (a matrix norm).  ``ord``: as
    :func:`~ember.linalg.vector_norm` for vectors (``None`` is 2) and as
    :func:`~ember.linalg.matrix_norm` for matrices (``None`` is ``"fro"``).  Integer input
    is computed in float64; the result is real."""
    x = la._array(x, "norm", ndim=0)
    if axis is None:
        if ord is None:
            return la.vector_norm(x, axis=None, keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ValueError("ember.linalg.norm: improper number of dimensions to norm")
        axis = tuple(range(x.ndim))
    axes = _axes(axis, x.ndim)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"ember.linalg.norm: invalid norm order {ord!r} for vectors")
        return la.vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) != 2:
        raise ValueError("ember.linalg.norm: improper number of dimensions to norm")
    from ember.array.manipulation import expand_dims, moveaxis

    moved = moveaxis(x, axes, (-2, -1))
    out = la.matrix_norm(moved, ord="fro" if ord is None else ord)
    return expand_dims(out, tuple(sorted(axes))) if keepdims else out


def cond(x, p=None):
    """The condition number of the square matrices in ``x`` in norm ``p``: ``None``/2
    (largest over smallest singular value), -2 (the reverse) or a matrix norm order (then
    ``norm(x) * norm(inv(x))``; a singular matrix gives ``inf``, as NumPy)."""
    from ember.array import ufuncs

    x = la._floating(la._array(x, "cond"), "cond")
    if p is None or p in (2, -2):
        s = la.svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return ufuncs.divide(big, small) if p != -2 else ufuncs.divide(small, big)
    la._array(x, "cond", square=True)
    try:
        inverse = la.inv(x)
    except la.LinAlgError:
        from ember.array.creation import full

        return full(x.shape[:-2], math.inf, dtype=x.dtype.real)
    return ufuncs.multiply(la.matrix_norm(x, ord=p), la.matrix_norm(inverse, ord=p))


def lstsq(a, b, rcond=None) -> LstsqResult:
    """The least-squares solution ``x`` of ``a @ x = b`` (NumPy's ``linalg.lstsq``), by
    the singular value decomposition of ``a`` (``M x N``): singular values up to ``rcond *
    max(s)`` count as zero (default ``rcond``: ``eps * max(M, N)``).

    Returns ``(x, residuals, rank, s)``: ``residuals`` are the squared 2-norms of ``b -
    a @ x`` per column when ``rank == N < M``, else an empty array; ``rank`` is NumPy's
    ``int32`` (read from the device).  Single precision is computed in double and rounded
    back, as NumPy does (so its default ``rcond`` is double's ``eps * max(M, N)``)."""
    import numpy as np

    from ember.array import ufuncs
    from ember.array.creation import empty

    a = la._floating(la._array(a, "lstsq"), "lstsq")
    b = la._array(b, "lstsq", ndim=1)
    if a.ndim != 2 or b.ndim > 2:
        raise ValueError(
            f"ember.linalg.lstsq: a must be 2-d and b 1-d or 2-d, got {a.shape} and {b.shape}"
        )
    m, n = a.shape
    if b.shape[0] != m:
        raise ValueError(f"ember.linalg.lstsq: a is {a.shape} and b {b.shape}: rows differ")
    vector = b.ndim == 1
    bb = la._floating(b.reshape(m, 1) if vector else b, "lstsq")
    if bb.dtype != a.dtype:
        from ember.frontend.types import promote_strong

        dt = promote_strong(a.dtype, bb.dtype)
        a, bb = a.astype(dt), bb.astype(dt)
    single = a.dtype if a.dtype.real.itemsize == 4 else None
    if single is not None:  # NumPy computes single precision in double (and its eps)
        wide = dtypes.complex128 if single.is_complex else dtypes.float64
        a, bb = a.astype(wide), bb.astype(wide)
    u, s, vh = la.svd(a, full_matrices=False)
    if rcond is None:
        from ember.array.info import finfo

        rcond = finfo(a.dtype).eps * max(m, n)
    big = ufuncs.greater(s, la._tolerance(a, s, rcond)) if s.shape[-1] else s > 0
    rank = int(la._reduce("sum", big, dtype=dtypes.int64).item()) if s.shape[-1] else 0
    s_inv = ufuncs.where(big, ufuncs.divide(1, ufuncs.where(big, s, 1)), 0).astype(s.dtype)
    v, uh = vh.mT, u.mT
    if a.dtype.is_complex:
        v, uh = ufuncs.conj(v), ufuncs.conj(uh)
    x = la.matmul(v, ufuncs.multiply(s_inv[:, None], la.matmul(uh, bb)))
    real = a.dtype.real
    if rank == n and m > n:
        r = ufuncs.abs(ufuncs.subtract(bb, la.matmul(a, x)))
        residuals = la._reduce("sum", ufuncs.multiply(r, r), axis=0).astype(real)
    else:
        residuals = empty((0,), dtype=real)
    if single is not None:
        x, residuals, s = x.astype(single), residuals.astype(single.real), s.astype(single.real)
    return LstsqResult(x.reshape(n) if vector else x, residuals, np.int32(rank), s)


def multi_dot(arrays, *, out=None):
    """The product of two or more arrays in the order of fewest scalar multiplications
    (NumPy's ``linalg.multi_dot``): the first may be 1-d (a row vector), the last 1-d (a
    column vector); the others are 2-d."""
    from ember.array.manipulation import copy_into

    arrays = [la._array(a, "multi_dot", ndim=1) for a in arrays]
    if len(arrays) < 2:
        raise ValueError("ember.linalg.multi_dot: expecting at least two arrays")
    first_vec, last_vec = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first_vec:
        arrays[0] = arrays[0].reshape(1, -1)
    if last_vec:
        arrays[-1] = arrays[-1].reshape(-1, 1)
    for a in arrays:
        if a.ndim != 2:
            raise ValueError(f"ember.linalg.multi_dot: an array is {a.ndim}-d; all but the "
                             "first and last must be 2-d")  # fmt: skip
    result = _chain(arrays, _order([a.shape[0] for a in arrays] + [arrays[-1].shape[1]]),
                    0, len(arrays) - 1)  # fmt: skip
    if first_vec and last_vec:
        result = result.reshape(())
    elif first_vec:
        result = result.reshape(-1)
    elif last_vec:
        result = result.reshape(-1)
    if out is not None:
        copy_into(out, result)
        return out
    return result


def _order(dims: list[int]) -> list[list[int]]:
    """The split points of the cheapest parenthesisation of a chain of matrices of shapes
    ``dims[i] x dims[i + 1]`` (the classic dynamic programme; chains are short)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays, split, i: int, j: int):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return la.matmul(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


def _general_eigen(x, what: str, vectors: bool):
    import numpy as np

    x = la._floating(la._array(x, what, square=True), what)
    la._warn_host(what, "no backend has a device solver for non-symmetric eigenproblems")
    if vectors:
        return EigResult(*la._host(np.linalg.eig, x))
    return la._host(np.linalg.eigvals, x)


def eig(x) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices (NumPy's
    ``linalg.eig``; complex where the spectrum is).  Runs on the host with NumPy (no device
    solver for non-symmetric matrices); symmetric/Hermitian matrices: use
    :func:`~ember.linalg.eigh`, which runs on the device."""
    return _general_eigen(x, "eig", True)


def eigvals(x):
    """The eigenvalues of general square matrices (see :func:`eig`: on the host)."""
    return _general_eigen(x, "eigvals", False)


def tensorsolve(a, b, axes=None):
    """``x`` with ``tensordot(a, x, x.ndim) == b`` (NumPy's ``linalg.tensorsolve``):
    ``a`` reshaped to a square matrix, then :func:`~ember.linalg.solve`."""
    from ember.array.manipulation import moveaxis

    a = la._array(a, "tensorsolve", ndim=1)
    b = la._array(b, "tensorsolve", ndim=0)
    if axes is not None:
        axes = [k % a.ndim for k in axes]
        a = moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    rest = a.shape[b.ndim :]
    n = math.prod(rest)
    if math.prod(a.shape[: b.ndim]) != n or a.shape[: b.ndim] != b.shape:
        raise la.LinAlgError(
            f"ember.linalg.tensorsolve: a {a.shape} does not reshape to a square matrix "
            f"against b {b.shape}"
        )
    return la.solve(a.reshape(n, n), b.reshape(n)).reshape(rest)


def tensorinv(a, ind: int = 2):
    """The inverse of ``a`` for :func:`tensordot` over its first ``ind`` axes (NumPy's
    ``linalg.tensorinv``)."""
    a = la._array(a, "tensorinv", ndim=1)
    if ind <= 0:
        raise ValueError("ember.linalg.tensorinv: ind must be a positive integer")
    head, tail = a.shape[:ind], a.shape[ind:]
    n = math.prod(head)
    if math.prod(tail) != n:
        raise la.LinAlgError(f"ember.linalg.tensorinv: {a.shape} is not square over ind={ind}")
    return la.inv(a.reshape(n, n)).reshape(*tail, *head)
