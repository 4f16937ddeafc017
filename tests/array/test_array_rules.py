"""Type resolution of every elementwise function against NumPy 2 (no device needed):
every pair of dtypes, and every dtype with Python scalars (NEP 50: weak)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import DTYPES
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.array import ufuncs
from ember.array.rules import scalar_type
from ember.frontend.types import scalar

NUMPY_NAME = {
    "pow": "power", "abs": "absolute", "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift", "bitwise_invert": "invert", "atan2": "arctan2",
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
    "acosh": "arccosh", "atanh": "arctanh",
}  # fmt: skip
NO_NUMPY = {"rsqrt", "erf", "erfc", "lgamma", "tgamma"}
FLOAT_ONLY = {"reciprocal"}  # the Array API's (NumPy also has an integer reciprocal)


def numpy_result(name: str, *operands):
    """NumPy's result dtype, or the exception type it raises."""
    fn = getattr(np, NUMPY_NAME.get(name, name))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(fn(*operands)).dtype
        except TypeError:
            return TypeError


def ember_result(name: str, *types):
    try:
        return getattr(ufuncs, name).rule(types).out.numpy
    except TypeError:
        return TypeError


def operand(dtype):
    return np.ones(2, dtype)


@pytest.mark.parametrize("name", ufuncs.BINARY)
def test_binary_rules_match_numpy_for_every_dtype_pair(name):
    for a in DTYPES:
        for b in DTYPES:
            expected = numpy_result(name, operand(a), operand(b))
            got = ember_result(name, scalar(ember.dtype(a)), scalar(ember.dtype(b)))
            assert got == expected, f"{name}({a}, {b}): ember {got}, NumPy {expected}"


@pytest.mark.parametrize("name", ufuncs.BINARY)
@pytest.mark.parametrize("value", [True, 3, 2.5], ids=["bool", "int", "float"])
def test_binary_rules_with_python_scalars_are_weak(name, value):
    for a in DTYPES:
        for args in ((operand(a), value), (value, operand(a))):
            expected = numpy_result(name, *args)
            types = tuple(
                scalar(ember.dtype(x.dtype)) if isinstance(x, np.ndarray) else scalar_type(x)
                for x in args
            )
            got = ember_result(name, *types)
            assert got == expected, f"{name}{tuple(map(type, args))} on {a}: {got} vs {expected}"


@pytest.mark.parametrize("name", [n for n in ufuncs.UNARY if n not in NO_NUMPY])
def test_unary_rules_match_numpy(name):
    for a in DTYPES:
        if name in FLOAT_ONLY and np.dtype(a).kind != "f":
            continue
        expected = numpy_result(name, operand(a))
        got = ember_result(name, scalar(ember.dtype(a)))
        assert got == expected, f"{name}({a}): ember {got}, NumPy {expected}"


@given(
    st.lists(st.sampled_from(DTYPES), min_size=1, max_size=3),
    st.lists(st.sampled_from([1, -1, 2.5, True]), max_size=2),
)
def test_result_type_is_numpy_result_type(dtypes_, scalars):
    expected = np.result_type(*(np.dtype(d) for d in dtypes_), *scalars)
    got = ember.result_type(*(ember.dtype(d) for d in dtypes_), *scalars)
    assert got is ember.dtype(expected)


def test_where_and_clip_promote_like_numpy():
    for a in DTYPES:
        for b in ("int8", "float32", "uint64"):
            expected = np.where(True, operand(a), operand(b)).dtype
            t = (scalar(ember.bool_), scalar(ember.dtype(a)), scalar(ember.dtype(b)))
            assert ufuncs._where.rule(t).out.numpy == expected
        expected = np.clip(operand(a), 0, 1).dtype
        t = (scalar(ember.dtype(a)), scalar_type(0), scalar_type(1))
        assert ufuncs._clip.rule(t).out.numpy == expected


def test_unsupported_scalar_types_are_refused():
    assert scalar_type(1j).weak and scalar_type(1j).dtype is ember.complex128  # NEP 50
    with pytest.raises(TypeError, match="unsupported operand"):
        scalar_type("text")
