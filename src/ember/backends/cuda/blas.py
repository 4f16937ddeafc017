"""cuBLAS for Ember's matrix products: one handle per device, stream-ordered on Ember's
streams, workspace from Ember's allocator.

:class:`Blas` is what :meth:`CudaBackend.blas` returns: ``gemm`` runs a (strided, batched)
column-major product ``C = op(A) @ op(B)`` in float16 and bfloat16 (accumulated in float32,
tensor cores; bfloat16 tensor cores from compute capability 8.0), float32 (IEEE float32, or
TF32 tensor cores when asked), float64, complex64 and complex128.  The call is
``cublasLtMatmul`` with a plan made once per product shape (:mod:`.blas_lt`: the heuristics
do not run per call); where cuBLASLt has no algorithm for a shape, ``cublas{S,D,C,Z}gemm``
(float32 without TF32, float64, complex) or ``cublasGemmEx`` (16-bit floats, TF32), batched
through their ``StridedBatched`` forms.  Host time of a 64 x 64 float32 product on an H100
(2026-11-24): ~18 us through ``cublasGemmEx``, ~12 us through ``cublasSgemm``.  Statuses
become :class:`DriverError` here, and only here.
"""

from __future__ import annotations

import ctypes

from ember.backends.cuda import vendor
from ember.backends.cuda.vendor import I64, INT, VP, bind, library, raise_status

# cudaDataType_t and cublasComputeType_t (library_types.h, cublas_api.h)
R_32F, R_64F, R_16F, C_32F, C_64F, R_16BF = 0, 1, 2, 4, 5, 14
C_FLOAT, C_DOUBLE = ctypes.c_float * 2, ctypes.c_double * 2  # cuComplex, cuDoubleComplex
COMPUTE_32F, COMPUTE_64F, COMPUTE_32F_FAST_TF32 = 68, 70, 77
GEMM_DEFAULT = -1
NO_REDUCED_PRECISION = 16  # CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
# Ember dtype -> (cudaDataType of the matrices, compute type, ctypes type of alpha/beta:
# complex products take complex scalars).
TYPES = {
    "float16": (R_16F, COMPUTE_32F, ctypes.c_float),
    "bfloat16": (R_16BF, COMPUTE_32F, ctypes.c_float),
    "float32": (R_32F, COMPUTE_32F, ctypes.c_float),
    "float64": (R_64F, COMPUTE_64F, ctypes.c_double),
    "complex64": (C_32F, COMPUTE_32F, C_FLOAT),
    "complex128": (C_64F, COMPUTE_64F, C_DOUBLE),
}
# cudaDataType of alpha/beta by their ctypes type (cuBLASLt's scale type)
SCALE_TYPES = {ctypes.c_float: R_32F, ctypes.c_double: R_64F, C_FLOAT: C_32F, C_DOUBLE: C_64F}
TYPED = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
OP = {"N": 0, "T": 1}
WORKSPACE = 32 << 20  # bytes; cuBLAS's recommendation for Hopper
STATUS = {
    1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH",
    11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
    14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
    16: "CUBLAS_STATUS_LICENSE_ERROR",
}  # fmt: skip


def check(status: int, call: str) -> None:
    """Raise :class:`DriverError` for a failed cuBLAS status."""
    if status:
        hint = "; check the shapes and strides of the operands"
        raise_status(status, call, STATUS, "cuBLAS", hint)


class _Api:
    """The cuBLAS entry points Ember uses, with their ctypes signatures."""

    def __init__(self):
        lib = library("cublas")
        self.create = bind(lib, "cublasCreate_v2", ctypes.POINTER(VP))
        self.destroy = bind(lib, "cublasDestroy_v2", VP)
        self.set_stream = bind(lib, "cublasSetStream_v2", VP, VP)
        self.set_workspace = bind(lib, "cublasSetWorkspace_v2", VP, VP, ctypes.c_size_t)
        self.set_math_mode = bind(lib, "cublasSetMathMode", VP, INT)
        self.version = bind(lib, "cublasGetVersion_v2", VP, ctypes.POINTER(INT))
        self.gemm_ex = bind(
            lib, "cublasGemmEx", VP, INT, INT, INT, INT, INT, VP, VP, INT, INT, VP, INT, INT,
            VP, VP, INT, INT, INT, INT,
        )  # fmt: skip
        self.gemm_batched = bind(
            lib, "cublasGemmStridedBatchedEx", VP, INT, INT, INT, INT, INT, VP, VP, INT, INT,
            I64, VP, INT, INT, I64, VP, VP, INT, INT, I64, INT, INT, INT,
        )  # fmt: skip
        # the typed products: (handle, opa, opb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
        # and their strided batches (strides after each leading dimension, then the count)
        one = (VP, INT, INT, INT, INT, INT, VP, VP, INT, VP, INT, VP, VP, INT)
        many = (VP, INT, INT, INT, INT, INT, VP, VP, INT, I64, VP, INT, I64, VP, VP, INT, I64,
                INT)  # fmt: skip
        self.typed = {
            dtype: (bind(lib, f"cublas{p}gemm_v2", *one),
                    bind(lib, f"cublas{p}gemmStridedBatched", *many))
            for dtype, p in TYPED.items()
        }  # fmt: skip


class Blas:
    """cuBLAS on one device of Ember's CUDA backend.

    Parameters
    ----------
    backend : CudaBackend
        The backend whose context, streams and allocator it uses.

    Raises
    ------
    VendorUnavailable
        When libcublas cannot be found (install ``ember[cuda]``).
    """

    def __init__(self, backend):
        from ember.runtime.memory import allocate

        self.api = _Api()
        self.backend = backend
        backend.context.ensure_current()
        handle = VP()
        check(self.api.create(ctypes.byref(handle)), "cublasCreate")
        self.handle = handle.value
        self._stream = None
        self.workspace = allocate(backend, WORKSPACE)  # kept for the handle's life
        check(
            self.api.set_workspace(self.handle, backend.native_pointer(self.workspace), WORKSPACE),
            "cublasSetWorkspace",
        )
        # 16-bit products: no split-K partial sums rounded to 16 bits (cuBLAS allows them by
        # default: a 1000 x 520 x 777 bfloat16 product then erred by up to 0.49, past one
        # bfloat16 rounding plus float32 accumulation): every sum in float32, as Ember's own
        # kernel does
        check(self.api.set_math_mode(self.handle, NO_REDUCED_PRECISION), "cublasSetMathMode")
        # alpha = 1, beta = 0 as host scalars of the compute type (pointer mode host)
        self._scalars = {
            t: (t(1), t(0)) for t in (ctypes.c_float, ctypes.c_double, C_FLOAT, C_DOUBLE)
        }  # (a complex one is 1 + 0j: the array's first item is the real part)
        self._ptrs = {
            t: (ctypes.addressof(one), ctypes.addressof(zero))
            for t, (one, zero) in self._scalars.items()
        }
        self._calls: dict = {}  # (dtype, tf32) -> _call_types(...)
        self._raw_stream = 0
        try:  # cuBLASLt plans (libcublasLt ships with libcublas): the heuristics run once
            from ember.backends.cuda.blas_lt import Lt

            self.lt = Lt(check, (backend.native_pointer(self.workspace), WORKSPACE))
        except vendor.VendorUnavailable:
            self.lt = None

    def version(self) -> str:
        v = INT()
        check(self.api.version(self.handle, ctypes.byref(v)), "cublasGetVersion")
        major, rest = divmod(v.value, 10000)
        return f"{major}.{rest // 100}.{rest % 100}"

    def gemm(self, dtype: str, opa: str, opb: str, m: int, n: int, k: int, a: int, lda: int,
             sa: int, b: int, ldb: int, sb: int, c: int, ldc: int, sc: int, batch: int,
             stream, tf32: bool = False) -> None:  # fmt: skip
        """Column-major ``C[i] = op(A[i]) @ op(B[i])`` for ``i < batch`` on ``stream``
        (``a``, ``b``, ``c`` device addresses; ``s*`` element strides between products;
        ``op`` ``"N"`` or ``"T"``)."""
        try:
            dt, compute, one, zero, typed, scale = self._calls[dtype, tf32]
        except KeyError:
            dt, compute, one, zero, typed, scale = self._call_types(dtype, tf32)
        # _use(stream) inline (a frame less on every product)
        self.backend.context.ensure_current()
        if stream is not self._stream:
            raw = int(stream.handle)
            check(self.api.set_stream(self.handle, raw), "cublasSetStream")
            self._stream, self._raw_stream = stream, raw
        lt = self.lt
        if lt is not None:
            plan = lt.plan((dt, compute, scale, OP[opa], OP[opb], m, n, k, lda, ldb, ldc, sa, sb,
                            sc, batch))  # fmt: skip
            if plan is not None:
                status = lt.run(plan, one, a, b, zero, c, self._raw_stream)
                if status:
                    check(status, "cublasLtMatmul")
                stream.submitted += 1
                return
        if typed is not None:  # float32 (not TF32), float64, complex: cublas[SDCZ]gemm
            if batch == 1:
                status = typed[0](self.handle, OP[opa], OP[opb], m, n, k, one, a, lda, b, ldb,
                                  zero, c, ldc)  # fmt: skip
            else:
                status = typed[1](self.handle, OP[opa], OP[opb], m, n, k, one, a, lda, sa, b,
                                  ldb, sb, zero, c, ldc, sc, batch)  # fmt: skip
        elif batch == 1:
            status = self.api.gemm_ex(
                self.handle, OP[opa], OP[opb], m, n, k, one, a, dt, lda, b, dt, ldb, zero, c,
                dt, ldc, compute, GEMM_DEFAULT,
            )  # fmt: skip
        else:
            status = self.api.gemm_batched(
                self.handle, OP[opa], OP[opb], m, n, k, one, a, dt, lda, sa, b, dt, ldb, sb,
                zero, c, dt, ldc, sc, batch, compute, GEMM_DEFAULT,
            )  # fmt: skip
        if status:
            name = f"cublas{TYPED[dtype]}gemm" if typed is not None else "cublasGemm"
            check(status, name + ("StridedBatched" if batch > 1 else "") + ("Ex" * (not typed)))
        stream.submitted += 1

    def _call_types(self, dtype: str, tf32: bool) -> tuple:
        """``(data type, compute type, &alpha, &beta, typed calls or None, scale type)`` of a
        ``dtype`` product (kept in ``_calls``: one lookup per product)."""
        dt, compute, scalar = TYPES[dtype]
        fast = tf32 and dtype == "float32"
        if fast:
            compute = COMPUTE_32F_FAST_TF32
        typed = None if fast else self.api.typed.get(dtype)
        scale = SCALE_TYPES[scalar]
        found = self._calls[dtype, bool(tf32)] = (dt, compute, *self._ptrs[scalar], typed, scale)
        return found

    def close(self) -> None:
        handle, self.handle = self.handle, None
        if handle and self.backend.context.alive:
            if self.lt is not None:
                self.lt.close()
            self.api.destroy(handle)
