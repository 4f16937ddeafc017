"""``ember.linalg``: the Python Array API's linear-algebra extension (2024.12).

::

    x = ember.asarray(numpy.random.rand(4, 4)) + 4 * ember.eye(4)
    L = ember.linalg.cholesky(x @ x.mT)
    q, r = ember.linalg.qr(x)
    y = ember.linalg.solve(x, ember.ones(4))
    n = ember.linalg.vector_norm(y)

NumPy's ``norm``, ``cond``, ``lstsq``, ``multi_dot``, ``eig``, ``eigvals``,
``tensorsolve`` and ``tensorinv`` are here too (:mod:`ember.array.linalg_numpy`).

Products (``matmul``, ``tensordot``, ``vecdot``, ``outer``), ``matrix_transpose``,
``diagonal``, ``cross``, ``trace``, the norms and ``matrix_power`` are Ember kernels or
compositions of array operations, on every device.  The factorizations (``cholesky``,
``qr``, ``svd``, ``svdvals``, ``eigh``, ``eigvalsh``, ``solve``, ``inv``, ``det``,
``slogdet``; ``pinv`` and ``matrix_rank`` build on ``svd``) run on the device's solver
library where the backend offers one (cuSOLVER on CUDA, :mod:`ember.array.linalg_device`)
and otherwise **on the host**: the operands are copied to NumPy, factored by
``numpy.linalg`` and copied back, with one :class:`~ember.EmberPerformanceWarning` per
function and process.  Inputs are float32 or float64 (integers and bools become float64;
float16 is refused, as NumPy does).  Singular or non-positive-definite input raises
:class:`LinAlgError` (a ``ValueError``), which waits for the device.
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple

from ember import dtypes
from ember.array.matmul import matmul, tensordot, vecdot
from ember.array.matmul import outer as _outer
from ember.array.ndarray import ndarray, not_on_device
from ember.errors import EmberError, EmberPerformanceWarning, axis_error

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


class LinAlgError(EmberError, ValueError):
    """A factorization failed: the matrix is singular or not positive definite."""


# --------------------------------------------------------------------- helpers
def _array(x, what: str, square: bool = False, ndim: int = 2) -> ndarray:
    if not isinstance(x, ndarray):
        raise not_on_device(x, f"ember.linalg.{what}")
    if x.ndim < ndim:
        raise ValueError(f"ember.linalg.{what}: needs at least {ndim} dimensions, got {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"ember.linalg.{what}: last 2 dimensions must be square, got {x.shape}")
    return x


def _floating(x: ndarray, what: str) -> ndarray:
    """``x`` in the float type its factorization computes in (NumPy's rules; complex
    arrays as they are)."""
    if x.dtype.kind in "biu":
        return x.astype(dtypes.float64)
    if x.dtype.is_narrow:
        raise TypeError(
            f"ember.linalg.{what}: {x.dtype} is not supported (NumPy's linalg has no 16-bit "
            "floats); use x.astype(ember.float32)"
        )
    return x


_warned: set[str] = set()


def _solver(x: ndarray, what: str):
    """The device solver, or None after warning once that ``what`` runs on the host."""
    solver = x.backend.solver()
    if solver is None and what not in _warned:
        reason = x.backend.vendor_missing.get("solver")
        _warn_host(what, reason or f"the {x.backend.name} backend has no device solver library")
    return solver


def _warn_host(what: str, why: str) -> None:
    """Warn once per process that ``ember.linalg.<what>`` runs on the host, and ``why``."""
    if what in _warned:
        return
    _warned.add(what)
    warnings.warn(
        f"ember.linalg.{what} runs on the host with NumPy ({why}): the operands and "
        "results cross the bus",
        EmberPerformanceWarning,
        stacklevel=4,
    )


def _host(fn, *arrays, **kwargs):
    """``fn`` (a ``numpy.linalg`` function) on host copies; results back on the device."""
    import numpy as np

    from ember.array.creation import asarray

    try:
        result = fn(*(a.to_numpy() for a in arrays), **kwargs)
    except np.linalg.LinAlgError as exc:
        raise LinAlgError(f"ember.linalg: {exc}") from None
    # asarray, not asarray(np.ascontiguousarray(...)): that makes a 0-d result (the
    # determinant of one matrix) 1-d
    if isinstance(result, tuple):
        return tuple(asarray(r) for r in result)
    return asarray(result)


def _check(infos, what: str, problem: str) -> None:
    """Raise :class:`LinAlgError` when a device status reports failure (waits)."""
    bad = infos.to_numpy()
    if (bad > 0).any():
        raise LinAlgError(f"ember.linalg.{what}: {problem}")


def _reduce(name: str, x, **kwargs):
    import ember

    return getattr(ember, name)(x, **kwargs)


# --------------------------------------------------------------------- products, views
def matrix_transpose(x: ndarray, /) -> ndarray:
    """The transpose of the last two axes (a view)."""
    return _array(x, "matrix_transpose").mT


def outer(x1: ndarray, x2: ndarray, /) -> ndarray:
    """The outer product of two 1-d arrays."""
    if getattr(x1, "ndim", 1) != 1 or getattr(x2, "ndim", 1) != 1:
        raise ValueError("ember.linalg.outer: both operands must be 1-d")
    return _outer(x1, x2)


def diagonal(x: ndarray, /, *, offset: int = 0) -> ndarray:
    """The ``offset`` diagonal of the last two axes (a view)."""
    x = _array(x, "diagonal")
    rows, cols = x.shape[-2], x.shape[-1]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    n = max(0, min(rows - r0, cols - c0))
    s_r, s_c = x.strides[-2], x.strides[-1]
    off = x.offset + (r0 * s_r + c0 * s_c if n else 0)
    return ndarray((*x.shape[:-2], n), x.dtype, x.buffer, x.backend,
                   (*x.strides[:-2], s_r + s_c), off)  # fmt: skip


def trace(x: ndarray, /, *, offset: int = 0, dtype=None) -> ndarray:
    """The sum of the ``offset`` diagonal of the last two axes; integer inputs sum in the
    default integer (int64, uint64 for unsigned), as the Array API and NumPy say."""
    d = diagonal(x, offset=offset)
    if dtype is None and d.dtype.kind in "biu" and d.dtype.itemsize < 8:
        dtype = dtypes.uint64 if d.dtype.kind == "u" else dtypes.int64
    return _reduce("sum", d, axis=-1, dtype=dtype)


def cross(x1: ndarray, x2: ndarray, /, *, axis: int = -1) -> ndarray:
    """The cross product of 3-vectors along ``axis`` (the other axes broadcast)."""
    from ember.array.manipulation import broadcast_arrays, moveaxis, stack
    from ember.array.ufuncs import multiply, subtract

    for x in (x1, x2):
        _array(x, "cross", ndim=1)
    a, b = broadcast_arrays(x1, x2)
    if not -a.ndim <= axis < a.ndim:
        raise axis_error(f"ember.linalg.cross: axis {axis} is out of bounds for {a.shape}")
    if a.shape[axis] != 3:
        raise ValueError(f"ember.linalg.cross: axis {axis} must have length 3, got {a.shape}")
    a, b = moveaxis(a, axis, -1), moveaxis(b, axis, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = [subtract(multiply(a1, b2), multiply(a2, b1)),
         subtract(multiply(a2, b0), multiply(a0, b2)),
         subtract(multiply(a0, b1), multiply(a1, b0))]  # fmt: skip
    return moveaxis(stack(c, axis=-1), -1, axis)


def matrix_power(x: ndarray, /, n: int) -> ndarray:
    """``x`` multiplied by itself ``n`` times (square matrices; ``n < 0``: of the inverse;
    ``n == 0``: the identity), by repeated squaring."""
    from ember.array.creation import eye
    from ember.array.manipulation import broadcast_to

    x = _array(x, "matrix_power", square=True)
    if not isinstance(n, int):
        raise TypeError("ember.linalg.matrix_power: the exponent must be an int")
    if n == 0:
        ident = eye(x.shape[-1], dtype=x.dtype)
        return broadcast_to(ident, x.shape).copy()
    original = x
    if n < 0:
        x, n = inv(x), -n
    result = None
    while n:
        if n & 1:
            result = x if result is None else matmul(result, x)
        n >>= 1
        if n:
            x = matmul(x, x)
    return result.copy() if result is original else result


# --------------------------------------------------------------------- norms
def _square(v):
    return v * v


def _abs_square(z):
    return z.real * z.real + z.imag * z.imag


def _magnitude(v):
    return abs(v)


def vector_norm(x: ndarray, /, *, axis=None, keepdims: bool = False, ord=2) -> ndarray:
    """The ``ord``-norm of the vectors along ``axis`` (all axes by default): 2
    (Euclidean), 1, ``inf`` (largest magnitude), ``-inf``, 0 (count of non-zeros), or
    any other real ``p`` (``sum(|x|**p) ** (1/p)``).  2 and 1 are one pass over ``x``
    (:func:`ember.mapreduce`: H200, 2**24 float32, 96 -> 27 us for the 2-norm)."""
    from ember.array import ufuncs
    from ember.array.mapreduce import mapreduce

    x = _floating(_array(x, "vector_norm", ndim=0), "vector_norm")
    kw = {"axis": axis, "keepdims": keepdims}
    real = x.dtype.real
    if ord == 2:
        f = _abs_square if x.dtype.is_complex else _square
        return ufuncs.sqrt(mapreduce(f, ufuncs.add, x, dtype=real, **kw))
    if ord == 1:
        return mapreduce(_magnitude, ufuncs.add, x, dtype=real, **kw)
    mag = ufuncs.abs(x)
    if ord == math.inf:  # (magnitudes: 0 is the identity, so an empty norm is 0, NumPy's)
        return _reduce("max", mag, initial=0, **kw)
    if ord == -math.inf:
        return _reduce("min", mag, **kw)
    if ord == 0:  # the count of nonzeros, in the real dtype (NumPy's)
        return _reduce("sum", ufuncs.not_equal(x, 0), **kw).astype(real)
    p = float(ord)
    return ufuncs.pow(_reduce("sum", ufuncs.pow(mag, p), **kw), 1.0 / p)


def matrix_norm(x: ndarray, /, *, keepdims: bool = False, ord="fro") -> ndarray:
    """The ``ord``-norm of the matrices in the last two axes: ``"fro"`` (Frobenius),
    ``"nuc"`` (sum of singular values), 2 / -2 (largest / smallest singular value), 1 /
    -1 (largest / smallest column sum of magnitudes), ``inf`` / ``-inf`` (rows)."""
    from ember.array import ufuncs
    from ember.array.manipulation import expand_dims

    x = _floating(_array(x, "matrix_norm"), "matrix_norm")
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        name = {"nuc": "sum", 2: "max", -2: "min"}[ord]
        out = _reduce(name, s, axis=-1, **({"initial": 0} if ord == 2 else {}))
    elif ord in (1, -1, math.inf, -math.inf):
        along = -2 if ord in (1, -1) else -1
        sums = _reduce("sum", ufuncs.abs(x), axis=along)
        top = {"initial": 0} if ord > 0 else {}  # (of magnitudes: an empty norm is 0)
        out = _reduce("max" if ord > 0 else "min", sums, axis=-1, **top)
    else:
        raise ValueError(f"ember.linalg.matrix_norm: invalid ord {ord!r}")
    return expand_dims(out, (-2, -1)) if keepdims else out


# --------------------------------------------------------------------- factorizations
def cholesky(x: ndarray, /, *, upper: bool = False) -> ndarray:
    """The Cholesky factor of the symmetric positive-definite ``x``: lower ``L`` with
    ``x = L @ L.mT`` (``upper=True``: ``U`` with ``x = U.mT @ U``)."""
    import numpy as np

    from ember.array import linalg_device as dev
    from ember.array.creation import tril, triu

    x = _floating(_array(x, "cholesky", square=True), "cholesky")
    solver = _solver(x, "cholesky")
    if solver is None:
        out = _host(np.linalg.cholesky, x, upper=upper)
        return out
    f, infos = dev.cholesky(solver, x, upper)
    _check(infos, "cholesky", "Matrix is not positive definite")
    return triu(f) if upper else tril(f)


def qr(x: ndarray, /, mode: str = "reduced"):
    """``x = Q @ R`` with orthonormal columns in ``Q`` and upper-triangular ``R``
    (``mode="reduced"``: ``K = min(M, N)`` columns; ``"complete"``: ``M``; NumPy's ``"r"``:
    the reduced ``R`` alone; ``"raw"``: ``(h, tau)``, LAPACK's Householder reflectors as
    NumPy returns them, ``h`` of shape ``(..., N, M)``; the deprecated ``"full"`` and
    ``"economic"`` with NumPy's ``DeprecationWarning``)."""
    import numpy as np

    from ember.array import linalg_device as dev

    mode = _qr_mode(mode)
    if mode == "r":
        return qr(x, mode="reduced").R
    x = _floating(_array(x, "qr"), "qr")
    solver = _solver(x, "qr")
    if mode in ("raw", "economic"):
        h, tau = _host(np.linalg.qr, x, mode="raw") if solver is None else dev.qr_raw(solver, x)
        return (h, tau) if mode == "raw" else h.mT.copy()
    if solver is None:
        return QRResult(*_host(np.linalg.qr, x, mode=mode))
    return QRResult(*dev.qr(solver, x, mode == "complete"))


def _qr_mode(mode: str) -> str:
    """NumPy's ``qr`` modes, its deprecated spellings warned of as NumPy does."""
    if mode in ("reduced", "complete", "r", "raw"):
        return mode
    if mode in ("f", "full"):
        message = ("The 'full' option is deprecated in favor of 'reduced'.\n"
                   "For backward compatibility let mode default.")  # fmt: skip
        warnings.warn(message, DeprecationWarning, stacklevel=3)
        return "reduced"
    if mode in ("e", "economic"):
        warnings.warn("The 'economic' option is deprecated.", DeprecationWarning, stacklevel=3)
        return "economic"
    raise ValueError(
        f"ember.linalg.qr: unrecognized mode {mode!r} ('reduced', 'complete', 'r' or 'raw')"
    )


def _uplo(UPLO: str, what: str) -> str:  # noqa: N803 - NumPy's name
    if UPLO not in ("L", "U"):
        raise ValueError(f"ember.linalg.{what}: UPLO must be 'L' or 'U', not {UPLO!r}")
    return UPLO


def eigh(x: ndarray, /, UPLO: str = "L") -> EighResult:  # noqa: N803 - NumPy's name
    """Eigenvalues (ascending) and eigenvectors (columns) of the symmetric (Hermitian) ``x``,
    of which only the lower triangle is read (``UPLO="U"``: the upper one), as in NumPy."""
    import numpy as np

    from ember.array import linalg_device as dev

    uplo = _uplo(UPLO, "eigh")
    x = _floating(_array(x, "eigh", square=True), "eigh")
    solver = _solver(x, "eigh")
    if solver is None:
        return EighResult(*_host(np.linalg.eigh, x, UPLO=uplo))
    w, v, infos = dev.eigh(solver, x, True, uplo)
    return EighResult(w, v)


def eigvalsh(x: ndarray, /, UPLO: str = "L") -> ndarray:  # noqa: N803 - NumPy's name
    """The eigenvalues (ascending) of the symmetric (Hermitian) ``x``, of which only the
    lower triangle is read (``UPLO="U"``: the upper one), as in NumPy."""
    import numpy as np

    from ember.array import linalg_device as dev

    uplo = _uplo(UPLO, "eigvalsh")
    x = _floating(_array(x, "eigvalsh", square=True), "eigvalsh")
    solver = _solver(x, "eigvalsh")
    if solver is None:
        return _host(np.linalg.eigvalsh, x, UPLO=uplo)
    return dev.eigh(solver, x, False, uplo)[0]


def svd(
    x: ndarray, /, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
):
    """``x = U @ diag(S) @ Vh``, singular values descending.

    NumPy's parameters in NumPy's order: ``compute_uv=False`` returns the singular values
    alone, as :func:`svdvals` does; ``hermitian=True`` computes them from :func:`eigh` of
    the Hermitian (symmetric) ``x``, reading its lower triangle only, as NumPy does (the
    absolute eigenvalues sorted descending, their signs moved into ``Vh``)."""
    import numpy as np

    from ember.array import linalg_device as dev

    if hermitian:
        return _svd_hermitian(x, compute_uv)
    if not compute_uv:
        return svdvals(x)
    x = _floating(_array(x, "svd"), "svd")
    solver = _solver(x, "svd")
    if solver is None:
        return SVDResult(*_host(np.linalg.svd, x, full_matrices=full_matrices))
    u, s, vh, _ = dev.svd(solver, x, True, full_matrices)
    return SVDResult(u, s, vh)


def _svd_hermitian(x: ndarray, compute_uv: bool):
    """NumPy's ``svd(hermitian=True)``: ``eigh``, then ``|w|`` descending."""
    from ember.array import ufuncs
    from ember.array.gather import take_along_axis
    from ember.array.manipulation import flip
    from ember.array.sort import argsort, sort

    x = _array(x, "svd", square=True)
    if not compute_uv:
        return flip(sort(ufuncs.abs(eigvalsh(x)), axis=-1), axis=-1)
    w, u = eigh(x)
    # NumPy's argsort(...)[..., ::-1]: ascending, reversed (ties: the later index first)
    order = flip(argsort(ufuncs.abs(w), axis=-1), axis=-1)
    sign = take_along_axis(ufuncs.sign(w), order, axis=-1)
    s = take_along_axis(ufuncs.abs(w), order, axis=-1)
    u = take_along_axis(u, order[..., None, :], axis=-1)
    vh = ufuncs.multiply(u, sign[..., None, :].astype(u.dtype)).mT
    return SVDResult(u, s, ufuncs.conj(vh) if vh.dtype.is_complex else vh.copy())


def svdvals(x: ndarray, /) -> ndarray:
    """The singular values of the matrices in ``x``, descending."""
    import numpy as np

    from ember.array import linalg_device as dev

    x = _floating(_array(x, "svdvals"), "svdvals")
    solver = _solver(x, "svdvals")
    if solver is None:
        return _host(np.linalg.svd, x, compute_uv=False)
    return dev.svd(solver, x, False, False)[1]


def solve(x1: ndarray, x2: ndarray, /) -> ndarray:
    """``X`` with ``x1 @ X == x2`` (``x2`` a 1-d vector, or ``(..., M, K)`` whose batch
    broadcasts against ``x1``'s)."""
    import numpy as np

    from ember.array import linalg_device as dev
    from ember.array.broadcast import broadcast_shapes
    from ember.array.manipulation import broadcast_to
    from ember.frontend.types import promote_strong

    a = _floating(_array(x1, "solve", square=True), "solve")
    b = _array(x2, "solve", ndim=1)
    dt = promote_strong(a.dtype, b.dtype)  # (complex with real: complex, NumPy's rule)
    if not dt.is_inexact:
        dt = dtypes.float64
    vector = b.ndim == 1
    if vector:
        b = b.reshape(b.shape[0], 1)
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"ember.linalg.solve: shapes {x1.shape} and {x2.shape} do not match")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a.astype(dt, copy=False), batch + a.shape[-2:])
    b = broadcast_to(_floating(b, "solve").astype(dt, copy=False), batch + b.shape[-2:])
    solver = _solver(a, "solve")
    if solver is None:
        out = _host(np.linalg.solve, a, b)
    else:
        out, infos = dev.solve(solver, a, b)
        _check(infos, "solve", "Singular matrix")
    return out.reshape(out.shape[:-1]) if vector else out


def inv(x: ndarray, /) -> ndarray:
    """The inverse of the square matrices in ``x``."""
    from ember.array.creation import eye

    x = _floating(_array(x, "inv", square=True), "inv")
    if _solver(x, "inv") is None:
        import numpy as np

        return _host(np.linalg.inv, x)
    return solve(x, eye(x.shape[-1], dtype=x.dtype))


def slogdet(x: ndarray, /) -> SlogdetResult:
    """The sign and the natural log of the absolute value of the determinant."""
    import numpy as np

    from ember.array import linalg_device as dev
    from ember.array.creation import asarray

    x = _floating(_array(x, "slogdet", square=True), "slogdet")
    solver = _solver(x, "slogdet")
    if solver is None:
        return SlogdetResult(*_host(np.linalg.slogdet, x))
    f, piv, _ = dev.lu(solver, x)
    # the n diagonal entries and pivots per matrix are all that is left: finish on the host
    diag = diagonal(f).to_numpy()
    swaps = (piv.to_numpy() != np.arange(1, x.shape[-1] + 1)).sum(axis=-1)
    sign = np.where(swaps % 2, -1.0, 1.0) * np.prod(np.sign(diag), axis=-1)
    with np.errstate(divide="ignore"):
        logabs = np.sum(np.log(np.abs(diag)), axis=-1)
    logabs = np.where(sign == 0, -np.inf, logabs)
    dt = x.dtype.numpy  # the sign of a complex determinant is complex, the log is real
    return SlogdetResult(asarray(sign.astype(dt)), asarray(logabs.astype(x.dtype.real.numpy)))


def det(x: ndarray, /) -> ndarray:
    """The determinants of the square matrices in ``x``."""
    import numpy as np

    from ember.array import ufuncs

    x = _floating(_array(x, "det", square=True), "det")
    if _solver(x, "det") is None:
        return _host(np.linalg.det, x)
    sign, logabs = slogdet(x)
    return ufuncs.multiply(sign, ufuncs.exp(logabs))


def _tolerance(x: ndarray, s: ndarray, rtol):
    """``rtol * max(S)`` per matrix (default ``rtol``: ``max(M, N) * eps``; an array
    ``rtol``: one per matrix, broadcast over the stack, as NumPy's)."""
    from ember.array import ufuncs
    from ember.array.info import finfo

    if rtol is None:
        rtol = max(x.shape[-2:]) * finfo(x.dtype).eps
    top = _reduce("max", s, axis=-1, keepdims=True) if s.shape[-1] else s[..., :1]
    return ufuncs.multiply(top, _per_matrix(rtol, s))


def _per_matrix(v, s: ndarray):
    """A number as it is; an array (or list) of one value per matrix with a new last axis
    (NumPy's ``asarray(v)[..., newaxis]``)."""
    from ember.array.creation import asarray

    if isinstance(v, int | float) or getattr(v, "ndim", None) == 0 and not isinstance(v, ndarray):
        return v
    return asarray(v, device=s.backend)[..., None]


def pinv(x: ndarray, /, rcond=None, hermitian: bool = False, *, rtol=None) -> ndarray:
    """The Moore-Penrose pseudo-inverse ``V S^-1 U^H`` (singular values below
    ``rtol * max(S)`` are treated as zero; default ``rtol``: the Array API's
    ``max(M, N) * eps``).  NumPy's ``rcond`` is ``rtol`` under its old name (both given:
    NumPy's ValueError); ``hermitian=True``: the SVD from ``eigh`` (:func:`svd`).  An empty
    stack of matrices gives an empty ``(..., N, M)`` result."""
    from ember.array import ufuncs
    from ember.array.creation import empty

    if rcond is not None:
        if rtol is not None:
            raise ValueError("`rtol` and `rcond` can't be both set.")
        rtol = rcond
    x = _floating(_array(x, "pinv"), "pinv")
    if x.size == 0:
        return empty((*x.shape[:-2], x.shape[-1], x.shape[-2]), x.dtype, device=x.backend)
    u, s, vh = svd(x, full_matrices=False, hermitian=hermitian)
    big = ufuncs.greater(s, _tolerance(x, s, rtol))
    s_inv = ufuncs.where(big, ufuncs.divide(1, ufuncs.where(big, s, 1)), 0).astype(s.dtype)
    v, uh = vh.mT, u.mT  # V S^-1 U^H: conjugate transposes for complex x
    if x.dtype.is_complex:
        v, uh = ufuncs.conj(v), ufuncs.conj(uh)
    return matmul(v, ufuncs.multiply(s_inv[..., None], uh))


def matrix_rank(x: ndarray, /, tol=None, hermitian: bool = False, *, rtol=None) -> ndarray:
    """The number of singular values above ``rtol * max(S)``, per matrix (int64).

    NumPy's parameters: ``tol``, an absolute threshold (a number, or one per matrix) in
    place of ``rtol * max(S)`` (both given: NumPy's ValueError); ``hermitian=True``: the
    singular values from :func:`eigvalsh`.  Below two dimensions the rank is 1 unless every
    element is zero (a 0-d array, where NumPy gives a Python int)."""
    from ember.array import ufuncs

    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    if isinstance(x, ndarray) and x.ndim < 2:
        return _reduce("any", ufuncs.not_equal(x, 0)).astype(dtypes.int64)
    x = _floating(_array(x, "matrix_rank"), "matrix_rank")
    s = svd(x, compute_uv=False, hermitian=hermitian)
    cut = _tolerance(x, s, rtol) if tol is None else _per_matrix(tol, s)
    return _reduce("sum", ufuncs.greater(s, cut), axis=-1, dtype=dtypes.int64)


# NumPy's linalg functions beyond the Array API (they build on the ones above)
from ember.array.linalg_numpy import (  # noqa: E402, I001
    EigResult, LstsqResult, cond, eig, eigvals, lstsq, multi_dot, norm, tensorinv, tensorsolve,
)  # fmt: skip

__all__ = [
    "LinAlgError", "EighResult", "QRResult", "SlogdetResult", "SVDResult", "cholesky",
    "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
    "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet",
    "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
    "EigResult", "LstsqResult", "cond", "eig", "eigvals", "lstsq", "multi_dot", "norm",
    "tensorinv", "tensorsolve",
]  # fmt: skip
