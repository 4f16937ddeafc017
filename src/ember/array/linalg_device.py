"""``ember.linalg``'s factorizations on a device solver (``backend.solver()``: cuSOLVER on
CUDA, :mod:`ember.backends.cuda.solver`).

The solver works on one column-major matrix at a time; Ember's arrays are row-major.  A
row-major ``(m, n)`` buffer read column-major is the transpose, so each function picks the
cheaper of the two readings (and copies where it must):

* symmetric input (cholesky, eigh): the buffer is its own transpose; the triangle the
  solver reads and writes flips (column-major upper = row-major lower).  A Hermitian
  buffer read column-major is the conjugate: its Cholesky factor read back row-major is
  still the right one (``conj(A) = U^H U`` gives ``A = L L^H`` for ``L = U^T``), its
  eigenvectors are conjugated back;
* solve/inv/det: LU of ``A^T`` (the buffer as it is), then ``getrs`` with ``op = T``
  solves ``A X = B`` for a column-major ``B`` (``B.mT`` made contiguous);
* qr: needs ``A`` itself column-major (a transposed copy);
* svd: the solver needs ``rows >= cols``; a wide matrix is factored as its transpose.

Batches loop over the matrices; each call's status (``devInfo``) is collected in one
int32 array that the caller reads once (which waits for the device).
"""

from __future__ import annotations

from ember import dtypes
from ember.array.ndarray import ndarray


def _letter(dt: dtypes.DType) -> str:
    return {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}[dt.name]


def _mats(x: ndarray):
    """``(count, addresses)`` of the matrices of the C-contiguous ``x`` (``..., r, c``)."""
    r, c = x.shape[-2], x.shape[-1]
    count = x.size // max(1, r * c)
    base = x.backend.native_pointer(x.buffer, x.offset)
    step = r * c * x.dtype.itemsize
    return count, [base + i * step for i in range(count)]


def _infos(be, count: int):
    from ember.array.creation import zeros

    infos = zeros(max(count, 1), dtypes.int32)
    base = be.native_pointer(infos.buffer, infos.offset)
    return infos, [base + 4 * i for i in range(count)]


def _vec(x: ndarray, i: int, n: int) -> int:
    """The address of the ``i``-th length-``n`` vector of the C-contiguous ``x``."""
    return x.backend.native_pointer(x.buffer, x.offset) + i * n * x.dtype.itemsize


def cholesky(solver, a: ndarray, upper: bool):
    """Returns ``(factor over a copy of a, infos)``; the other triangle is not cleared."""
    x = a.copy()
    n = x.shape[-1]
    t, stream = _letter(x.dtype), x.backend.default_stream
    solver.begin(stream)
    count, ptrs = _mats(x)
    infos, iptr = _infos(x.backend, count)
    keep = [solver.potrf(t, n, p, n, iptr[i], not upper, stream) for i, p in enumerate(ptrs)]
    del keep
    return x, infos


def lu(solver, a: ndarray):
    """LU of ``A^T`` (the buffer read column-major) over a copy: ``(lu, pivots, infos)``."""
    from ember.array.creation import empty

    x = a.copy()
    n = x.shape[-1]
    t, stream = _letter(x.dtype), x.backend.default_stream
    solver.begin(stream)
    count, ptrs = _mats(x)
    piv = empty((*x.shape[:-2], n), dtypes.int32)
    infos, iptr = _infos(x.backend, count)
    for i, p in enumerate(ptrs):
        solver.getrf(t, n, p, n, _vec(piv, i, n), iptr[i], stream)
    return x, piv, infos


def solve(solver, a: ndarray, b: ndarray):
    """``X`` with ``A X = B`` for ``A (..., n, n)`` and ``B (..., n, k)`` of one batch
    shape: ``(X, infos)``."""
    from ember.array.manipulation import ascontiguousarray, astype

    f, piv, infos = lu(solver, a)
    rhs = astype(b.mT, b.dtype)  # a new row-major (k, n) array: B column-major
    n, k = b.shape[-2], b.shape[-1]
    t, stream = _letter(f.dtype), f.backend.default_stream
    count, ptrs = _mats(f)
    _, bptrs = _mats(rhs)
    _, iptr = _infos(f.backend, count)
    for i in range(count):
        solver.getrs(t, n, k, ptrs[i], n, _vec(piv, i, n), bptrs[i], n, iptr[i], stream,
                     transpose=True)  # fmt: skip
    return ascontiguousarray(rhs.mT), infos


def _geqrf(solver, a: ndarray):
    """geqrf of every matrix of ``a``: ``(f, tau, infos, iptr)``, ``f`` the factored ``A`` as
    LAPACK leaves it in column-major order (the row-major ``(..., N, M)`` array), ``tau`` the
    reflectors' scales (``max(k, 1)`` a matrix), ``infos`` the info words (the caller keeps
    them alive while later calls write through their addresses ``iptr``)."""
    from ember.array.creation import empty
    from ember.array.manipulation import astype

    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    f = astype(a.mT, a.dtype)  # a new row-major (n, m) array: A column-major, lda = m
    t, stream = _letter(f.dtype), f.backend.default_stream
    solver.begin(stream)
    count, ptrs = _mats(f)
    tau = empty((*f.shape[:-2], max(k, 1)), f.dtype)
    infos, iptr = _infos(f.backend, count)
    for i, p in enumerate(ptrs):
        solver.geqrf(t, m, n, p, m, _vec(tau, i, max(k, 1)), iptr[i], stream)
    return f, tau, infos, iptr


def qr(solver, a: ndarray, complete: bool):
    """``(Q, R)`` of ``A = Q R`` (reduced or complete)."""
    from ember.array.creation import triu, zeros
    from ember.array.manipulation import ascontiguousarray

    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    f, tau, infos, iptr = _geqrf(solver, a)  # (infos: orgqr writes them too)
    t, stream = _letter(f.dtype), f.backend.default_stream
    rows = m if complete else k
    r = triu(ascontiguousarray(f.mT[..., :rows, :]))  # R is the upper triangle of A's place
    cols = m if complete else k
    g = zeros((*f.shape[:-2], cols, m), f.dtype)  # Q column-major (m, cols)
    g[..., : min(n, cols), :] = f[..., : min(n, cols), :]
    _, gptrs = _mats(g)
    for i, p in enumerate(gptrs):
        solver.orgqr(t, m, cols, k, p, m, _vec(tau, i, max(k, 1)), iptr[i], stream)
    del infos  # freed after orgqr in stream order
    return ascontiguousarray(g.mT), r


def qr_raw(solver, a: ndarray):
    """NumPy's ``qr(mode="raw")``: ``(h, tau)``, ``h`` the factored ``A`` as LAPACK leaves it
    in column-major order, i.e. the row-major ``(..., N, M)`` array geqrf wrote."""
    f, tau, _, _ = _geqrf(solver, a)
    return f, tau[..., : min(a.shape[-2], a.shape[-1])].copy()


def eigh(solver, a: ndarray, vectors: bool, uplo: str = "L"):
    """``(eigenvalues ascending, eigenvectors or None)`` of the symmetric ``a`` whose lower
    (``uplo="U"``: upper) triangle is read, as NumPy's: the column-major reading's triangle
    is the other one (the module docstring)."""
    from ember.array.creation import empty
    from ember.array.manipulation import ascontiguousarray

    x = a.copy()
    n = x.shape[-1]
    t, stream = _letter(x.dtype), x.backend.default_stream
    solver.begin(stream)
    count, ptrs = _mats(x)
    w = empty(x.shape[:-1], x.dtype.real)  # (real for Hermitian matrices too)
    infos, iptr = _infos(x.backend, count)
    for i, p in enumerate(ptrs):
        solver.syevd(t, n, p, n, _vec(w, i, n), iptr[i], vectors, stream, uplo == "L")
    v = ascontiguousarray(x.mT) if vectors else None
    if v is not None and v.dtype.is_complex:  # the eigenvectors of conj(A) (module doc)
        from ember.array.ufuncs import conj

        v = conj(v)
    return w, v, infos


def svd(solver, a: ndarray, vectors: bool, full: bool):
    """``(U, S, Vh)`` (``U``, ``Vh`` None without ``vectors``) and the infos."""
    from ember.array.creation import empty
    from ember.array.manipulation import ascontiguousarray, astype

    m, n = a.shape[-2], a.shape[-1]
    tall = m >= n
    # column-major operand with rows >= cols: A itself (tall) or the buffer as is (A^T)
    x = astype(a.mT, a.dtype) if tall else a.copy()
    rows, cols = (m, n) if tall else (n, m)
    k = cols
    batch = a.shape[:-2]
    t, stream = _letter(x.dtype), x.backend.default_stream
    solver.begin(stream)
    count, ptrs = _mats(x)
    s = empty((*batch, k), x.dtype.real)
    ucols = rows if full else k
    u = empty((*batch, ucols, rows), x.dtype)  # column-major (rows, ucols)
    vt = empty((*batch, cols, cols), x.dtype)  # column-major (cols, cols)
    job = (b"A" if full else b"S") if vectors else b"N"
    infos, iptr = _infos(x.backend, count)
    _, uptr = _mats(u)
    _, vptr = _mats(vt)
    for i, p in enumerate(ptrs):
        solver.gesvd(t, job, rows, cols, p, rows, _vec(s, i, k), uptr[i], rows, vptr[i], cols,
                     iptr[i], stream)  # fmt: skip
    if not vectors:
        return None, s, None, infos
    if tall:  # A = U S V^T: U and V^T column-major, i.e. their transposes row-major
        return ascontiguousarray(u.mT), s, ascontiguousarray(vt.mT), infos
    # A^T = U' S V'^T, so A = V' S U'^T: U = V' and Vh = U'^T (the buffers read row-major)
    return vt.copy(), s, u.copy(), infos
