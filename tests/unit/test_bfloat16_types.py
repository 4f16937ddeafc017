"""bfloat16 without a device: the dtype, its promotion table (PyTorch's and JAX's, which NumPy
lacks), casting rules, finfo, and NumPy interop through the optional ml_dtypes package."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
from ember import dtypes
from ember.frontend.types import WEAK_COMPLEX, WEAK_FLOAT, WEAK_INT, promote, promote_strong, scalar

BF = dtypes.bfloat16
F2, F4, F8, C8, C16 = (
    dtypes.float16,
    dtypes.float32,
    dtypes.float64,
    dtypes.complex64,
    dtypes.complex128,
)
INTEGERS = [d for d in dtypes.ALL if d.kind in "biu"]

# bfloat16 with every other dtype (both orders are tested): PyTorch's and JAX's results
TABLE = {
    BF: BF, F2: F4, F4: F4, F8: F8, C8: C8, C16: C16, **{d: BF for d in INTEGERS}
}  # fmt: skip


@pytest.mark.parametrize("other", list(TABLE), ids=str)
def test_promotion_table(other):
    assert promote_strong(BF, other) is TABLE[other]
    assert promote_strong(other, BF) is TABLE[other]
    assert ember.result_type(BF, other) is TABLE[other]
    assert ember.result_type(other, BF) is TABLE[other]


def test_python_scalars_are_weak():
    bf = scalar(BF)
    assert promote(bf, WEAK_FLOAT) == bf and promote(WEAK_INT, bf) == bf
    assert promote(bf, WEAK_COMPLEX) == scalar(C8)  # the Array API: the float's precision
    assert ember.result_type(BF, 2.5) is BF and ember.result_type(3, BF) is BF
    assert ember.result_type(BF, True) is BF and ember.result_type(BF, 1j) is C8


def test_result_type_of_many_operands():
    """The other dtypes promote together (NumPy), then bfloat16, then the Python scalars."""
    assert ember.result_type(dtypes.int8, dtypes.uint8, BF) is BF
    assert ember.result_type(dtypes.int16, BF, 2.5) is BF
    assert ember.result_type(F2, dtypes.int8, BF) is F4
    assert ember.result_type(BF, F8, 1j) is C16
    assert ember.result_type(BF, BF, 1) is BF


def test_can_cast():
    safe_from = [F4, F8, C8, C16, BF]
    for d in dtypes.ALL:
        assert ember.can_cast(BF, d) is (d in safe_from), d
        exact = d is BF or d.kind == "b" or (d.is_integer and d.itemsize == 1)
        assert ember.can_cast(d, BF) is exact, d
    assert ember.can_cast(F4, BF, casting="same_kind")
    assert ember.can_cast(dtypes.int64, BF, casting="same_kind")
    assert not ember.can_cast(BF, dtypes.int32, casting="same_kind")
    assert not ember.can_cast(BF, F4, casting="no") and ember.can_cast(BF, BF, casting="no")
    assert ember.can_cast(C16, BF, casting="unsafe")


def test_dtype_facts():
    assert BF.itemsize == 2 and BF.kind == "f" and BF.bits == 16 and BF.name == "bfloat16"
    assert BF.is_float and BF.is_narrow and F2.is_narrow and not F4.is_narrow
    assert ember.bfloat16 is BF and ember.dtype("bfloat16") is BF and str(BF) == "bfloat16"
    assert BF == "bfloat16" and BF != "float16" and BF != F2 and BF is not F2
    assert ember.isdtype(BF, "real floating") and ember.isdtype(BF, "numeric")
    assert not ember.isdtype(BF, "complex floating")
    assert dtypes.complex_of(BF) is C8 and BF.real is BF


def test_finfo():
    f = ember.finfo(BF)
    assert (f.bits, f.eps, f.smallest_normal, f.dtype) == (16, 2.0**-7, 2.0**-126, BF)
    assert f.max == float.fromhex("0x1.fep127") == -f.min
    ml = pytest.importorskip("ml_dtypes")
    ref = ml.finfo(ml.bfloat16)
    assert (f.eps, f.max, f.smallest_normal) == (float(ref.eps), float(ref.max), float(ref.tiny))


def test_numpy_interop_through_ml_dtypes():
    ml = pytest.importorskip("ml_dtypes")
    npd = np.dtype(ml.bfloat16)
    assert BF.numpy == npd and BF.has_numpy
    assert BF == npd and npd == BF and BF == ml.bfloat16
    assert ember.dtype(ml.bfloat16) is BF and ember.dtype(npd) is BF
    # hashed by name: hashing must not import ml_dtypes (dtypes' docstring), so a dict keyed
    # by ml_dtypes' dtype does not find it, as NumPy's dtypes do not find their names
    assert hash(BF) == hash("bfloat16") and ember.dtype(npd) in {BF: 1}
    assert type(BF(2.5)) is ml.bfloat16 and float(BF(2.5)) == 2.5
    assert np.zeros(2, BF).dtype == npd


def test_without_ml_dtypes_the_error_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # `import ml_dtypes` fails
    with pytest.raises(TypeError, match=r"ml_dtypes.*astype\(ember.float32\)"):
        dtypes._ml_dtypes_type(BF)
    fresh = dtypes.DType("bfloat16", 2, "f")  # (bfloat16 itself may have cached it)
    assert not fresh.has_numpy
    with pytest.raises(TypeError, match="pip install ml_dtypes"):
        _ = fresh.numpy
    assert hash(fresh) == hash("bfloat16")


def test_a_bfloat16_scalar_is_a_kernel_argument_once_ml_dtypes_is_imported(monkeypatch):
    # the argument table is made without importing ml_dtypes; a bfloat16 value appearing
    # later (its package imported by then) joins it
    ml = pytest.importorskip("ml_dtypes")
    from ember.compiler import args

    monkeypatch.setattr(
        args, "SCALARS", {k: v for k, v in args.SCALARS.items() if k is not ml.bfloat16}
    )
    assert args.arg_type(ml.bfloat16(1.5)) == scalar(BF)
    assert ml.bfloat16 in args.SCALARS
    with pytest.raises(args.ArgProblem, match="cannot be passed"):
        args.arg_type(object())
