"""cuBLASLt plans for Ember's matrix products: the descriptors and the algorithm of a product
shape chosen once, then one ``cublasLtMatmul`` per product.

``cublasGemmEx`` (and the typed ``cublas?gemm``) run cuBLAS's heuristics on every call: on
an H100 that is ~12-18 us of host time for a 64 x 64 product, more than the whole product
costs PyTorch.  cuBLASLt separates the choice from the call: :meth:`Lt.plan` builds the
matmul descriptor, the three matrix layouts and asks the heuristic for its best algorithm
(kept in :class:`Plan`, keyed by everything that describes the product), and
:meth:`Lt.run` passes them with the pointers.  The plans are the cache; a bounded one
(:data:`PLANS`, oldest dropped first).

Numerics match the cuBLAS path: float32 in IEEE float32 unless TF32 is asked for, 16-bit
floats accumulated in float32 with no split-K reduction rounded to 16 bits (the
preference's reduction-scheme mask keeps in-place and compute-type reductions only).
The workspace is the cuBLAS handle's (stream-ordered like every product on it).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ember.backends.cuda.vendor import I64, INT, VP, bind, library

U64 = ctypes.c_uint64
SIZE = ctypes.c_size_t
# cublasLtMatmulDescAttributes_t, cublasLtMatrixLayoutAttribute_t, preference attributes
DESC_TRANSA, DESC_TRANSB = 3, 4
LAYOUT_BATCH_COUNT, LAYOUT_STRIDED_BATCH_OFFSET = 5, 6
PREF_MAX_WORKSPACE_BYTES, PREF_REDUCTION_SCHEME_MASK = 1, 3
REDUCTION_IN_PLACE_OR_COMPUTE_TYPE = 0x3  # not CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE (4)
PLANS = 512  # product shapes kept


class HeuristicResult(ctypes.Structure):
    """``cublasLtMatmulHeuristicResult_t``: the algorithm is 64 opaque bytes."""

    _fields_ = [("algo", U64 * 8), ("workspace_size", SIZE), ("state", INT),
                ("waves", ctypes.c_float), ("reserved", INT * 4)]  # fmt: skip


@dataclass
class Plan:
    """One product shape: the descriptors (``desc``, ``a``, ``b``, ``c``: the output is both
    C and D) and the chosen algorithm, with the addresses the call passes."""

    desc: int
    a: int
    b: int
    c: int
    result: HeuristicResult
    algo: int  # the address of result.algo


class _Api:
    """The cuBLASLt entry points Ember uses, with their ctypes signatures."""

    def __init__(self):
        lib = library("cublasLt")
        self.create = bind(lib, "cublasLtCreate", ctypes.POINTER(VP))
        self.destroy = bind(lib, "cublasLtDestroy", VP)
        self.desc_create = bind(lib, "cublasLtMatmulDescCreate", ctypes.POINTER(VP), INT, INT)
        self.desc_set = bind(lib, "cublasLtMatmulDescSetAttribute", VP, INT, VP, SIZE)
        self.desc_destroy = bind(lib, "cublasLtMatmulDescDestroy", VP)
        self.layout_create = bind(lib, "cublasLtMatrixLayoutCreate", ctypes.POINTER(VP), INT,
                                  U64, U64, I64)  # fmt: skip
        self.layout_set = bind(lib, "cublasLtMatrixLayoutSetAttribute", VP, INT, VP, SIZE)
        self.layout_destroy = bind(lib, "cublasLtMatrixLayoutDestroy", VP)
        self.pref_create = bind(lib, "cublasLtMatmulPreferenceCreate", ctypes.POINTER(VP))
        self.pref_set = bind(lib, "cublasLtMatmulPreferenceSetAttribute", VP, INT, VP, SIZE)
        self.pref_destroy = bind(lib, "cublasLtMatmulPreferenceDestroy", VP)
        self.heuristic = bind(
            lib, "cublasLtMatmulAlgoGetHeuristic", VP, VP, VP, VP, VP, VP, VP, INT,
            ctypes.POINTER(HeuristicResult), ctypes.POINTER(INT),
        )  # fmt: skip
        self.matmul = bind(
            lib, "cublasLtMatmul", VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, VP, SIZE,
            VP,
        )  # fmt: skip


class Lt:
    """A cuBLASLt handle with its plans.  ``check(status, call)`` raises for a failed status
    (the cuBLAS binding's); ``workspace`` is ``(address, bytes)``."""

    def __init__(self, check, workspace: tuple[int, int]):
        self.api = _Api()
        self._check = check
        self.workspace, self.workspace_size = workspace
        handle = VP()
        check(self.api.create(ctypes.byref(handle)), "cublasLtCreate")
        self.handle = handle.value
        pref = VP()
        check(self.api.pref_create(ctypes.byref(pref)), "cublasLtMatmulPreferenceCreate")
        self.pref = pref.value
        self._set(self.api.pref_set, self.pref, PREF_MAX_WORKSPACE_BYTES, U64(self.workspace_size))
        self._set(self.api.pref_set, self.pref, PREF_REDUCTION_SCHEME_MASK,
                  ctypes.c_uint32(REDUCTION_IN_PLACE_OR_COMPUTE_TYPE))  # fmt: skip
        self.plans: dict[tuple, Plan | None] = {}

    def _set(self, setter, obj: int, attribute: int, value) -> None:
        self._check(setter(obj, attribute, ctypes.byref(value), ctypes.sizeof(value)),
                    "cublasLt...SetAttribute")  # fmt: skip

    def plan(self, key: tuple) -> Plan | None:
        """The plan of ``key`` = ``(data type, compute type, scale type, opa, opb, m, n, k,
        lda, ldb, ldc, sa, sb, sc, batch)`` (cuBLAS's column-major terms), made on first
        use; None when the heuristic has no algorithm for it (the caller falls back)."""
        try:
            return self.plans[key]
        except KeyError:
            pass
        if len(self.plans) >= PLANS:
            self._drop(next(iter(self.plans)))
        found = self.plans[key] = self._make(*key)
        return found

    def _make(self, dt, compute, scale, opa, opb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch):
        api, made = self.api, []
        try:
            desc = VP()
            self._check(api.desc_create(ctypes.byref(desc), compute, scale),
                        "cublasLtMatmulDescCreate")  # fmt: skip
            made.append((api.desc_destroy, desc.value))
            self._set(api.desc_set, desc.value, DESC_TRANSA, ctypes.c_int32(opa))
            self._set(api.desc_set, desc.value, DESC_TRANSB, ctypes.c_int32(opb))
            shapes = (
                (m, k, lda, sa) if opa == 0 else (k, m, lda, sa),
                (k, n, ldb, sb) if opb == 0 else (n, k, ldb, sb),
                (m, n, ldc, sc),
            )
            layouts = []
            for rows, cols, ld, stride in shapes:
                lay = VP()
                self._check(api.layout_create(ctypes.byref(lay), dt, rows, cols, ld),
                            "cublasLtMatrixLayoutCreate")  # fmt: skip
                made.append((api.layout_destroy, lay.value))
                if batch > 1:
                    self._set(api.layout_set, lay.value, LAYOUT_BATCH_COUNT, ctypes.c_int32(batch))
                    self._set(api.layout_set, lay.value, LAYOUT_STRIDED_BATCH_OFFSET,
                              ctypes.c_int64(stride))  # fmt: skip
                layouts.append(lay.value)
            result, count = HeuristicResult(), INT(0)
            a, b, c = layouts
            status = api.heuristic(self.handle, desc.value, a, b, c, c, self.pref, 1,
                                   ctypes.byref(result), ctypes.byref(count))  # fmt: skip
            if status or count.value < 1:
                raise LookupError
        except LookupError:
            for destroy, obj in reversed(made):
                destroy(obj)
            return None
        except BaseException:
            for destroy, obj in reversed(made):
                destroy(obj)
            raise
        return Plan(desc.value, a, b, c, result, ctypes.addressof(result.algo))

    def run(self, plan: Plan, one: int, a: int, b: int, zero: int, c: int, stream: int) -> int:
        """``C = op(A) @ op(B)`` by ``plan`` on ``stream`` (a raw handle); the status."""
        return self.api.matmul(self.handle, plan.desc, one, a, plan.a, b, plan.b, zero, c,
                               plan.c, c, plan.c, plan.algo, self.workspace,
                               self.workspace_size, stream)  # fmt: skip

    def _drop(self, key: tuple) -> None:
        plan = self.plans.pop(key)
        if plan is not None:
            self.api.desc_destroy(plan.desc)
            for lay in (plan.a, plan.b, plan.c):
                self.api.layout_destroy(lay)

    def close(self) -> None:
        """Destroy every plan, the preference and the handle (the context must be alive)."""
        for key in list(self.plans):
            self._drop(key)
        handle, self.handle = self.handle, None
        if handle:
            self.api.pref_destroy(self.pref)
            self.api.destroy(handle)
