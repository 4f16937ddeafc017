"""NumPy's polynomial functions on the device (the ``numpy.poly*`` family, coefficients
highest power first): ``polyval``, ``polyfit``, ``polyder``, ``polyint``, ``polyadd``,
``polysub``, ``polymul``, ``roots``.  The design is in :mod:`ember.array.signal`'s
docstring, whose helpers and ``convolve`` these use."""

from __future__ import annotations

import functools
import operator
import warnings

import ember
from ember import dtypes
from ember.array import kernels, launch
from ember.array.creation import operand as _arr
from ember.array.ndarray import ndarray
from ember.array.signal import _run, _vector, convolve
from ember.compiler.kernel import Kernel


@functools.cache
def _horner_kernel(ct: dtypes.DType) -> Kernel:
    """``out[i] = (...(p[0] * x[i] + p[1]) * x[i] + ...) + p[n-1]`` in ``ct``."""
    CT = ct

    def polyval(total, n, p, pbase, pstep, x, out):
        i = ember.global_id()
        while i < total:
            xi = CT(x[i])
            y = CT(0)
            j = 0
            while j < n:
                y = y * xi + CT(p[pbase + j * pstep])
                j += 1
            out[i] = y
            i += ember.global_size()

    return kernels._named(polyval, f"polyval_{ct.name}")


def polyval(p, x) -> ndarray:
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by
    Horner's rule on the device (NumPy's ``polyval``).  The result has ``x``'s shape and
    the promoted dtype of ``p`` and ``x`` (a Python scalar ``x`` counts as a 0-d
    int64/float64/complex128 array, as in NumPy)."""
    p, x = _vector(p, "polyval", "p"), _arr(x, "polyval")
    if x.ndim and p.shape[0] == 0:
        return ember.zeros_like(x)
    dt = ember.result_type(p, x) if p.shape[0] else x.dtype
    flat = ember.ascontiguousarray(x).reshape(-1)
    out = launch.new(x.backend, flat.shape, dt)
    if flat.size:
        pv, pbase, (pstep,) = launch.flat(p)
        args = (p.shape[0], pv, pbase, pstep, launch.flat1(flat), out)
        _run(_horner_kernel(dt), x.backend, flat.size, *args)
    return out.reshape(x.shape)


@functools.cache
def _vander_kernel(ct: dtypes.DType) -> Kernel:
    """``out[i, j] = x[i] ** (order - 1 - j)`` as a running product (NumPy's ``vander``
    multiplies the same way, so the columns round alike)."""
    CT = ct

    def vander(total, order, x, xbase, xstep, out):
        i = ember.global_id()
        while i < total:
            xi = CT(x[xbase + (i // order) * xstep])
            v = CT(1)
            e = order - 1 - i % order
            while e > 0:
                v = v * xi
                e -= 1
            out[i] = v
            i += ember.global_size()

    return kernels._named(vander, f"vander_{ct.name}")


def _vander(x: ndarray, order: int) -> ndarray:
    """``[x**(order-1), ..., x, 1]``, the Vandermonde matrix of NumPy's ``polyfit``."""
    out = launch.new(x.backend, (x.shape[0], order), x.dtype)
    xv, xbase, (xstep,) = launch.flat(x)
    _run(_vander_kernel(x.dtype), x.backend, out.size, order, xv, xbase, xstep, launch.flat1(out))
    return out


def _inexact(x: ndarray) -> ndarray:
    """``x + 0.0`` without the pass: NumPy's way to make ``polyfit``'s inputs float."""
    return x.astype(ember.result_type(x, 0.0), copy=False)


def _fit_inputs(x, y, deg, w):
    x, y = _inexact(_arr(x, "polyfit")), _inexact(_arr(y, "polyfit"))
    if operator.index(deg) < 0:
        raise ValueError(f"ember.polyfit: deg must be >= 0, got {deg}")
    if x.ndim != 1 or x.shape[0] == 0:
        raise TypeError(f"ember.polyfit: x must be a non-empty 1-d array, got shape {x.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise TypeError(f"ember.polyfit: y must be 1-d or 2-d with x's length {x.shape[0]}, "
                        f"got shape {y.shape}")  # fmt: skip
    if w is not None:
        w = _inexact(_arr(w, "polyfit"))
        if w.shape != x.shape:
            raise TypeError(f"ember.polyfit: w must be 1-d with x's length, got {w.shape}")
    return x, y, w


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial of degree ``deg`` through ``(x, y)`` (NumPy's
    ``polyfit``): ``ember.linalg.lstsq`` on the Vandermonde matrix whose columns are
    scaled to unit norm (NumPy's conditioning), coefficients highest power first.

    ``y`` 2-d fits each column; ``w`` weights the residuals; ``rcond`` defaults to
    ``len(x) * eps``.  Returns ``p``; with ``full``, ``(p, residuals, rank, s, rcond)``;
    with ``cov`` (``True`` or ``"unscaled"``), ``(p, V)``.  Warns with NumPy's
    ``RankWarning`` when the fit is rank-deficient (reads the rank, an int)."""
    import numpy as np

    x, y, w = _fit_inputs(x, y, deg, w)
    order, m = operator.index(deg) + 1, x.shape[0]
    if rcond is None:
        rcond = m * ember.finfo(x.dtype).eps
    lhs, rhs = _vander(x, order), y
    if w is not None:
        lhs, rhs = lhs * w[:, None], rhs * (w[:, None] if y.ndim == 2 else w)
    scale = ember.sqrt(ember.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = ember.linalg.lstsq(lhs, rhs, rcond)
    c = c / (scale[:, None] if c.ndim == 2 else scale)
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                      stacklevel=2)  # fmt: skip
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    base = ember.linalg.inv(ember.matmul(lhs.T, lhs)) / ember.outer(scale, scale)
    if cov == "unscaled":
        fac = 1
    elif m <= order:
        raise ValueError("ember.polyfit: the number of data points must exceed order to "
                         "scale the covariance matrix (or pass cov='unscaled')")  # fmt: skip
    else:
        fac = resids / (m - order)
    return c, (base * fac if y.ndim == 1 else base[:, :, None] * fac)


def polyder(p, m: int = 1) -> ndarray:
    """The ``m``-th derivative of the polynomial ``p`` (NumPy's ``polyder``)."""
    p, m = _vector(p, "polyder", "p"), operator.index(m)
    if m < 0:
        raise ValueError(f"ember.polyder: order m must be >= 0, got {m} (use ember.polyint)")
    for _ in range(m):
        n = p.shape[0] - 1
        p = p[:-1] * ember.arange(n, 0, -1, device=p.backend)
    return p


def polyint(p, m: int = 1, k=None) -> ndarray:
    """The ``m``-th antiderivative of the polynomial ``p`` (NumPy's ``polyint``), with
    integration constants ``k`` (a scalar or ``m`` values, the first for the first
    integration; default zeros)."""
    p, m = _vector(p, "polyint", "p"), operator.index(m)
    if m < 0:
        raise ValueError(f"ember.polyint: order m must be >= 0, got {m} (use ember.polyder)")
    k = ember.zeros(m, dtype=dtypes.float64, device=p.backend) if k is None else k
    k = _vector(k, "polyint", "k")
    if k.shape[0] == 1 and m > 1:
        k = ember.broadcast_to(k, (m,)).astype(ember.result_type(k, dtypes.float64))
    if k.shape[0] < m:
        raise ValueError(f"ember.polyint: k must be a scalar or hold at least m = {m} "
                         f"constants, got {k.shape[0]}")  # fmt: skip
    for i in range(m):
        n = p.shape[0]
        p = ember.concatenate([p / ember.arange(n, 0, -1, device=p.backend), k[i : i + 1]])
    return p


def _padded(a1, a2, what: str):
    a1, a2 = _vector(a1, what, "a1"), _vector(a2, what, "a2")
    extra = a2.shape[0] - a1.shape[0]
    if extra > 0:
        a1 = ember.concatenate([ember.zeros(extra, dtype=a1.dtype, device=a1.backend), a1])
    elif extra < 0:
        a2 = ember.concatenate([ember.zeros(-extra, dtype=a2.dtype, device=a2.backend), a2])
    return a1, a2


def polyadd(a1, a2) -> ndarray:
    """The sum of two polynomials (highest power first; NumPy's ``polyadd``)."""
    a1, a2 = _padded(a1, a2, "polyadd")
    return a1 + a2


def polysub(a1, a2) -> ndarray:
    """The difference ``a1 - a2`` of two polynomials (NumPy's ``polysub``)."""
    a1, a2 = _padded(a1, a2, "polysub")
    return a1 - a2


def polymul(a1, a2) -> ndarray:
    """The product of two polynomials: their full convolution (NumPy's ``polymul``)."""
    return convolve(_vector(a1, "polymul", "a1"), _vector(a2, "polymul", "a2"))


def roots(p) -> ndarray:
    """The roots of the polynomial ``p`` (highest power first; NumPy's ``roots``): the
    eigenvalues of its companion matrix, complex where the roots are.  The matrix is
    built on the device, but ``ember.linalg.eigvals`` runs on the **host** (no device
    has a non-symmetric eigensolver; one EmberPerformanceWarning), and ``p`` is read
    back to strip its leading and trailing zeros (it is smaller than the matrix)."""
    p = _vector(p, "roots", "p")
    nz = p.to_numpy().nonzero()[0]  # small, and the companion matrix goes there anyway
    if nz.size == 0:
        return ember.zeros(0, dtype=dtypes.float64, device=p.backend)
    trailing = p.shape[0] - int(nz[-1]) - 1
    p = p[int(nz[0]) : int(nz[-1]) + 1]
    if p.dtype.kind not in "fc":
        p = p.astype(dtypes.float64)
    n = p.shape[0]
    if n > 1:
        top = (-p[1:] / p[:1])[None, :]
        sub = ember.eye(n - 2, n - 1, dtype=p.dtype, device=p.backend)
        found = ember.linalg.eigvals(ember.concatenate([top, sub], axis=0))
        if found.dtype.is_complex and not bool(ember.any(found.imag != 0)):
            found = found.real.copy()  # all real: a real array (NumPy's eig does it
            # before 2.5, its roots after)
    else:
        found = ember.zeros(0, dtype=dtypes.float64, device=p.backend)
    return ember.concatenate([found, ember.zeros(trailing, dtype=found.dtype, device=p.backend)])


__all__ = [
    "polyval", "polyfit", "polyder", "polyint", "polyadd", "polysub", "polymul", "roots",
]  # fmt: skip
