"""cuSOLVER's dense factorizations for ``ember.linalg``: one handle per device, on Ember's
stream, workspaces from Ember's allocator.

Every method works on one **column-major** matrix at a device address (``ember.linalg``
arranges the layouts and loops over batches) in float32 (``"S"``), float64 (``"D"``),
complex64 (``"C"``) or complex128 (``"Z"``; the complex versions of ``orgqr`` and
``syevd`` are cuSOLVER's ``ungqr`` and ``heevd``, with the same arguments), and returns
the device address of the ``int`` status (``devInfo``) the caller reads to detect singular
or non-positive-definite input.  Statuses of the calls themselves become
:class:`DriverError` here, and only here.
"""

from __future__ import annotations

import ctypes

from ember.backends.cuda.vendor import INT, VP, bind, library, raise_status

LOWER, UPPER = 0, 1  # cublasFillMode_t
NO_VECTORS, VECTORS = 0, 1  # cusolverEigMode_t
OP_N, OP_T = 0, 1
STATUS = {
    1: "CUSOLVER_STATUS_NOT_INITIALIZED", 2: "CUSOLVER_STATUS_ALLOC_FAILED",
    3: "CUSOLVER_STATUS_INVALID_VALUE", 4: "CUSOLVER_STATUS_ARCH_MISMATCH",
    6: "CUSOLVER_STATUS_EXECUTION_FAILED", 7: "CUSOLVER_STATUS_INTERNAL_ERROR",
    8: "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
}  # fmt: skip
P = VP
IP = ctypes.POINTER(INT)
# name -> argument types after the handle (the "S"/"D"/"C"/"Z" versions share them)
SIGNATURES = {
    "potrf_bufferSize": (INT, INT, P, INT, IP),
    "potrf": (INT, INT, P, INT, P, INT, P),
    "getrf_bufferSize": (INT, INT, P, INT, IP),
    "getrf": (INT, INT, P, INT, P, P, P),
    "getrs": (INT, INT, INT, P, INT, P, P, INT, P),
    "geqrf_bufferSize": (INT, INT, P, INT, IP),
    "geqrf": (INT, INT, P, INT, P, P, INT, P),
    "orgqr_bufferSize": (INT, INT, INT, P, INT, P, IP),
    "orgqr": (INT, INT, INT, P, INT, P, P, INT, P),
    "gesvd_bufferSize": (INT, INT, IP),
    "gesvd": (ctypes.c_char, ctypes.c_char, INT, INT, P, INT, P, P, INT, P, INT, P, INT, P, P),
    "syevd_bufferSize": (INT, INT, INT, P, INT, P, IP),
    "syevd": (INT, INT, INT, P, INT, P, P, INT, P),
}


ITEMSIZE = {"S": 4, "D": 8, "C": 8, "Z": 16}  # of a matrix element (and workspace item)
REAL_ITEMSIZE = {"S": 4, "D": 8, "C": 4, "Z": 8}  # of singular values, rwork
_COMPLEX_NAMES = {"orgqr": "ungqr", "syevd": "heevd"}


def _spelled(t: str, name: str) -> str:
    """cuSOLVER's name of ``name`` for type letter ``t`` (``Cungqr`` for ``Corgqr``)."""
    if t in "CZ":
        base, _, rest = name.partition("_")
        return _COMPLEX_NAMES.get(base, base) + ("_" + rest if rest else "")
    return name


def check(status: int, call: str) -> None:
    """Raise :class:`DriverError` for a failed cuSOLVER status."""
    if status:
        raise_status(status, call, STATUS, "cuSOLVER")


class Solver:
    """cuSOLVER (dense) on one device of Ember's CUDA backend.

    Raises
    ------
    VendorUnavailable
        When libcusolver cannot be found (install ``ember[cuda]``).
    """

    def __init__(self, backend):
        lib = library("cusolver")
        self.backend = backend
        self.fn = {}
        for name, args in SIGNATURES.items():
            for t in "SDCZ":
                self.fn[t + name] = bind(lib, f"cusolverDn{t}{_spelled(t, name)}", VP, *args)
        create = bind(lib, "cusolverDnCreate", ctypes.POINTER(VP))
        self._destroy = bind(lib, "cusolverDnDestroy", VP)
        self._set_stream = bind(lib, "cusolverDnSetStream", VP, VP)
        backend.context.ensure_current()
        handle = VP()
        check(create(ctypes.byref(handle)), "cusolverDnCreate")
        self.handle = handle.value
        self._stream = None

    # ----------------------------------------------------------------- plumbing
    def _call(self, t: str, name: str, *args) -> None:
        check(self.fn[t + name](self.handle, *args), f"cusolverDn{t}{_spelled(t, name)}")

    def _lwork(self, t: str, name: str, *args) -> int:
        n = INT()
        self._call(t, name + "_bufferSize", *args, ctypes.byref(n))
        return max(n.value, 1)

    def _scratch(self, nbytes: int):
        from ember.runtime.memory import allocate

        buf = allocate(self.backend, nbytes)
        return buf, self.backend.native_pointer(buf)

    def begin(self, stream):
        """Bind the handle to ``stream``; returns ``(info buffer, its address)``."""
        self.backend.context.ensure_current()
        if stream is not self._stream:
            check(self._set_stream(self.handle, int(stream.handle)), "cusolverDnSetStream")
            self._stream = stream
        return self._scratch(4)

    # ----------------------------------------------------------------- factorizations
    def potrf(self, t, n, a, lda, info, upper: bool, stream) -> None:
        """Cholesky in place (``upper``: ``A = U^T U``, else ``A = L L^T``)."""
        uplo = UPPER if upper else LOWER
        isz = ITEMSIZE[t]
        lw = self._lwork(t, "potrf", uplo, n, a, lda)
        work, wp = self._scratch(lw * isz)
        self._call(t, "potrf", uplo, n, a, lda, wp, lw, info)
        stream.submitted += 1
        return work

    def getrf(self, t, n, a, lda, ipiv, info, stream):
        """LU with partial pivoting in place; ``ipiv`` receives ``n`` int pivots."""
        isz = ITEMSIZE[t]
        lw = self._lwork(t, "getrf", n, n, a, lda)
        work, wp = self._scratch(lw * isz)
        self._call(t, "getrf", n, n, a, lda, wp, ipiv, info)
        stream.submitted += 1
        return work

    def getrs(self, t, n, nrhs, a, lda, ipiv, b, ldb, info, stream, transpose=False) -> None:
        """Solve ``op(A) X = B`` from :meth:`getrf`'s factors, ``X`` over ``B``."""
        self._call(t, "getrs", OP_T if transpose else OP_N, n, nrhs, a, lda, ipiv, b, ldb, info)
        stream.submitted += 1

    def geqrf(self, t, m, n, a, lda, tau, info, stream):
        isz = ITEMSIZE[t]
        lw = self._lwork(t, "geqrf", m, n, a, lda)
        work, wp = self._scratch(lw * isz)
        self._call(t, "geqrf", m, n, a, lda, tau, wp, lw, info)
        stream.submitted += 1
        return work

    def orgqr(self, t, m, n, k, a, lda, tau, info, stream):
        isz = ITEMSIZE[t]
        lw = self._lwork(t, "orgqr", m, n, k, a, lda, tau)
        work, wp = self._scratch(lw * isz)
        self._call(t, "orgqr", m, n, k, a, lda, tau, wp, lw, info)
        stream.submitted += 1
        return work

    def gesvd(self, t, job, m, n, a, lda, s, u, ldu, vt, ldvt, info, stream):
        """SVD of the ``m x n`` (``m >= n``) matrix; ``job`` is ``b"A"``, ``b"S"`` or
        ``b"N"`` for both U and V^T."""
        isz = ITEMSIZE[t]
        lw = self._lwork(t, "gesvd", m, n)
        work, wp = self._scratch(lw * isz)
        rwork, rp = self._scratch(max(1, min(m, n) - 1) * REAL_ITEMSIZE[t])
        self._call(t, "gesvd", job, job, m, n, a, lda, s, u, ldu, vt, ldvt, wp, lw, rp, info)
        stream.submitted += 1
        return work, rwork

    def syevd(self, t, n, a, lda, w, info, vectors: bool, stream, upper: bool = False):
        """Eigenvalues (ascending, into ``w``) and, with ``vectors``, eigenvectors over
        ``a`` of the symmetric matrix whose lower (``upper``: upper) triangle the
        column-major ``a`` holds."""
        isz = ITEMSIZE[t]
        mode = VECTORS if vectors else NO_VECTORS
        uplo = UPPER if upper else LOWER
        lw = self._lwork(t, "syevd", mode, uplo, n, a, lda, w)
        work, wp = self._scratch(lw * isz)
        self._call(t, "syevd", mode, uplo, n, a, lda, w, wp, lw, info)
        stream.submitted += 1
        return work

    def close(self) -> None:
        handle, self.handle = self.handle, None
        if handle and self.backend.context.alive:
            self._destroy(handle)
