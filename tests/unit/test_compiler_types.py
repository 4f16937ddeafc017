"""Kernel type rules against NumPy 2 (NEP 50): promotion, math result types, constant folding."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember import dtypes
from ember.frontend import ir
from ember.frontend.operators import OperatorError, binary, cast, compare, fold
from ember.frontend.types import (
    BOOL,
    FLOAT64,
    INT64,
    WEAK_FLOAT,
    WEAK_INT,
    Array,
    Scalar,
    Tuple,
    float_result,
    promote,
    promote_strong,
    scalar,
    unify,
)

ALL = [d for d in dtypes.ALL if d is not dtypes.bfloat16]  # NumPy has none: test_bfloat16_types
strong = st.sampled_from(ALL).map(scalar)
weak = st.sampled_from([WEAK_INT, WEAK_FLOAT])
any_scalar = st.one_of(strong, weak)


def numpy_operand(t: Scalar):
    """What stands for ``t`` in ``numpy.result_type``: a dtype, or a Python scalar (weak)."""
    if t.weak:
        return 1.0 if t.dtype.is_float else 1
    return t.dtype.numpy


@given(strong, strong)
def test_strong_promotion_is_numpys_table(a, b):
    assert promote_strong(a.dtype, b.dtype).numpy == np.promote_types(a.dtype.numpy, b.dtype.numpy)


@given(any_scalar, any_scalar)
def test_promotion_with_weak_python_scalars_follows_nep50(a, b):
    result = promote(a, b)
    if a.weak and b.weak:
        assert result.weak
        assert result.dtype.is_float == (a.dtype.is_float or b.dtype.is_float)
        return
    assert not result.weak
    assert result.dtype.numpy == np.result_type(numpy_operand(a), numpy_operand(b))


@given(any_scalar, any_scalar)
def test_promotion_is_commutative(a, b):
    assert promote(a, b) == promote(b, a)


@pytest.mark.parametrize("d", [d for d in ALL if d.kind != "f"] + [dtypes.float16])
def test_math_on_integers_gives_numpys_float(d):
    expected = np.sqrt(np.ones(1, d.numpy)).dtype
    assert float_result(scalar(d)).dtype.numpy == expected
    assert float_result(WEAK_INT) == WEAK_FLOAT


@given(strong, strong)
def test_true_division_type(a, b):
    if a.dtype.kind == "b" and b.dtype.kind == "b":
        return
    e = binary("truediv", ir.Const(a, 1), ir.Const(b, 1))
    assert (
        e.type.dtype.numpy
        == np.true_divide(np.ones(1, a.dtype.numpy), np.ones(1, b.dtype.numpy)).dtype
    )


def test_unify_promotes_numbers_and_refuses_other_mixes():
    assert unify(WEAK_INT, scalar(dtypes.float32)) == scalar(dtypes.float32)
    assert unify(WEAK_INT, WEAK_FLOAT) == WEAK_FLOAT
    assert unify(Tuple((WEAK_INT, INT64)), Tuple((FLOAT64, INT64))) == Tuple((FLOAT64, INT64))
    assert unify(scalar(dtypes.float32), Array(dtypes.float32, 1)) is None
    assert unify(Array(dtypes.float32, 1), Array(dtypes.float32, 1, "A")) is None
    assert unify(Tuple((INT64,)), Tuple((INT64, INT64))) is None


# ------------------------------------------------------------------------- constant folding

_OPS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "floordiv": np.floor_divide,
    "mod": np.remainder,
}
ints = st.sampled_from([d for d in ALL if d.is_integer])


@given(ints, st.sampled_from(sorted(_OPS)), st.integers(-300, 300), st.integers(-300, 300))
def test_folded_integer_arithmetic_wraps_and_floors_like_numpy(d, op, x, y):
    t = scalar(d)
    if not (d.kind == "i" or (x >= 0 and y >= 0)):
        x, y = abs(x), abs(y)
    a, b = np.array(x).astype(d.numpy)[()], np.array(y).astype(d.numpy)[()]
    folded = fold(ir.Binary(t, op, ir.Const(t, int(a)), ir.Const(t, int(b))))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _OPS[op](a, b)
    assert isinstance(folded, ir.Const) and folded.value == int(expected)


def test_python_int_literal_out_of_range_is_an_overflow_error():
    with pytest.raises(OperatorError, match="300 is out of bounds for uint8"):
        cast(ir.Const(WEAK_INT, 300), scalar(dtypes.uint8))
    assert cast(ir.Const(WEAK_INT, 255), scalar(dtypes.uint8)).value == 255


def test_comparison_of_python_int_with_small_unsigned_is_exact():
    e = compare(
        "<",
        ir.Ref(scalar(dtypes.uint8), ir.Variable("u", scalar(dtypes.uint8), "u")),
        ir.Const(WEAK_INT, 300),
    )
    assert e.left.type == INT64 and e.right.value == 300  # no wrap to 44


def test_bool_arithmetic_and_float_bit_operations_are_refused():
    flag = ir.Const(BOOL, True)
    with pytest.raises(OperatorError, match="two bools"):
        binary("add", flag, flag)
    assert binary("bitand", flag, flag).type == BOOL
    with pytest.raises(OperatorError, match="needs integers"):
        binary("bitxor", ir.Const(FLOAT64, 1.0), ir.Const(WEAK_INT, 1))
