"""cuBLASLt plans (ember/backends/cuda/blas_lt.py) on a fake library: a product shape is
planned once (descriptors with its operations, layouts with its shape, batch and strides,
the preference's workspace and reduction mask), later products reuse the plan, a shape the
heuristic cannot serve gives None (and leaks nothing), the cache is bounded, and
``Blas.gemm`` calls ``cublasLtMatmul`` with the plan or falls back to cuBLAS."""

from __future__ import annotations

import ctypes
import itertools
from types import SimpleNamespace

import pytest

from ember.backends.cuda import blas, blas_lt
from ember.errors import DriverError


class FakeLtApi:
    def __init__(self):
        self.calls: list = []
        self.live: set = set()
        self.ids = itertools.count(100)
        self.algorithms = 1  # what the heuristic finds

        def creator(kind):
            def create(out, *args):
                out._obj.value = next(self.ids)
                self.live.add(out._obj.value)
                self.calls.append((kind, out._obj.value, *args))
                return 0

            return create

        def destroyer(kind):
            def destroy(obj):
                self.live.discard(obj)
                self.calls.append((kind, obj))
                return 0

            return destroy

        def setter(kind):
            def set_(obj, attribute, value, size):
                raw = ctypes.string_at(ctypes.addressof(value._obj), size)
                self.calls.append((kind, obj, attribute, int.from_bytes(raw, "little")))
                return 0

            return set_

        self.create, self.destroy = creator("handle"), destroyer("handle-")
        self.desc_create, self.desc_destroy = creator("desc"), destroyer("desc-")
        self.layout_create, self.layout_destroy = creator("layout"), destroyer("layout-")
        self.pref_create, self.pref_destroy = creator("pref"), destroyer("pref-")
        self.desc_set, self.layout_set = setter("desc="), setter("layout=")
        self.pref_set = setter("pref=")

    def heuristic(self, handle, desc, a, b, c, d, pref, wanted, result, count):
        self.calls.append(("heuristic", desc, a, b, c, d, pref, wanted))
        count._obj.value = self.algorithms
        result._obj.algo[0] = 77
        return 0

    def matmul(self, *args):
        self.calls.append(("matmul", *args))
        return 0


@pytest.fixture
def lt(monkeypatch):
    monkeypatch.setattr(blas_lt, "_Api", FakeLtApi)
    return blas_lt.Lt(lambda status, call: None, (5000, 1 << 20))


def _key(opa=0, opb=1, batch=1):
    # (type, compute, scale, opa, opb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch)
    return (0, 68, 0, opa, opb, 2, 3, 4, 2, 3, 2, 8, 12, 6, batch)


def _kinds(api, kind):
    return [c for c in api.calls if c[0] == kind]


def test_the_preference_bounds_the_workspace_and_keeps_float32_reductions(lt):
    sets = _kinds(lt.api, "pref=")
    assert [(c[2], c[3]) for c in sets] == [(blas_lt.PREF_MAX_WORKSPACE_BYTES, 1 << 20),
                                            (blas_lt.PREF_REDUCTION_SCHEME_MASK, 0x3)]  # fmt: skip


@pytest.mark.parametrize("opa, opb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_a_shape_is_planned_once(lt, opa, opb):
    plan = lt.plan(_key(opa, opb))
    assert plan is not None and plan.result.algo[0] == 77
    assert [(c[2], c[3]) for c in _kinds(lt.api, "desc=")] == [(3, opa), (4, opb)]
    layouts = [c[2:] for c in _kinds(lt.api, "layout")]
    a = (0, 2, 4, 2) if opa == 0 else (0, 4, 2, 2)  # (type, rows, cols, ld): op(A) is m x k
    b = (0, 4, 3, 3) if opb == 0 else (0, 3, 4, 3)
    assert layouts == [a, b, (0, 2, 3, 2)]
    assert not _kinds(lt.api, "layout=")  # one product: no batch attributes
    assert lt.plan(_key(opa, opb)) is plan and len(_kinds(lt.api, "heuristic")) == 1
    lt.run(plan, 11, 1000, 2000, 12, 3000, 99)
    call = _kinds(lt.api, "matmul")[-1]
    assert call == ("matmul", lt.handle, plan.desc, 11, 1000, plan.a, 2000, plan.b, 12, 3000,
                    plan.c, 3000, plan.c, plan.algo, 5000, 1 << 20, 99)  # fmt: skip


def test_batches_carry_their_count_and_strides(lt):
    lt.plan(_key(batch=5))
    sets = [(c[2], c[3]) for c in _kinds(lt.api, "layout=")]
    assert sets == [(5, 5), (6, 8), (5, 5), (6, 12), (5, 5), (6, 6)]


def test_a_shape_without_an_algorithm_falls_back_and_leaks_nothing(lt):
    lt.api.algorithms = 0
    assert lt.plan(_key()) is None
    assert lt.plan(_key()) is None and len(_kinds(lt.api, "heuristic")) == 1  # remembered
    assert lt.api.live == {lt.handle, lt.pref}


def test_the_plan_cache_is_bounded_and_close_destroys_everything(lt, monkeypatch):
    monkeypatch.setattr(blas_lt, "PLANS", 3)
    keys = [_key()[:5] + (m,) + _key()[6:] for m in range(2, 7)]
    for key in keys:
        lt.plan(key)
    assert list(lt.plans) == keys[2:]  # the oldest went first
    assert len(lt.api.live) == 2 + 3 * 4  # handle, preference, 3 plans of 4 objects
    lt.close()
    assert lt.api.live == set() and lt.handle is None


def test_gemm_runs_the_plan_on_its_stream_and_falls_back_without_one(lt):
    from test_blas_binding import _blas  # (tests/unit is on the path, as for every test)

    lib = _blas()
    lib.lt = lt
    s = SimpleNamespace(handle=7, submitted=0)
    lib.gemm("float32", "N", "T", 2, 3, 4, 1000, 2, 6, 2000, 3, 12, 3000, 2, 6, 1, s)
    dt, compute, scalar = blas.TYPES["float32"]
    one, zero = lib._ptrs[scalar]
    (call,) = _kinds(lt.api, "matmul")
    assert call[3:5] == (one, 1000) and call[8:10] == (zero, 3000) and call[-1] == 7
    assert s.submitted == 1 and not [c for c in lib.api.calls if c[0] != "stream"]
    lt.api.algorithms = 0  # a new shape the heuristic cannot serve: cuBLAS
    lib.gemm("float32", "N", "T", 5, 3, 4, 1000, 5, 6, 2000, 3, 12, 3000, 5, 6, 1, s)
    assert lib.api.calls[-1][0] == "Sgemm" and s.submitted == 2


def test_a_failed_matmul_raises(lt):
    from test_blas_binding import _blas  # (tests/unit is on the path, as for every test)

    lib = _blas()
    lib.lt = lt
    lt.api.matmul = lambda *args: 13
    s = SimpleNamespace(handle=7, submitted=0)
    with pytest.raises(DriverError, match="cublasLtMatmul.*CUBLAS_STATUS_EXECUTION_FAILED"):
        lib.gemm("float64", "N", "N", 2, 3, 4, 1000, 2, 6, 2000, 4, 12, 3000, 2, 6, 1, s)
    assert s.submitted == 0
