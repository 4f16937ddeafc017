"""Ember dtypes compare, hash and convert like NumPy's (no device)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import dtypes

ALL = tuple(d for d in dtypes.ALL if d is not dtypes.bfloat16)  # NumPy has none (ml_dtypes)
NAMES = {d: np.dtype(d.name) for d in ALL}


@pytest.mark.parametrize("d", ALL, ids=str)
def test_equal_to_every_numpy_spelling(d):
    npd = NAMES[d]
    for other in (npd, npd.type, npd.name, npd.str, npd.char):
        assert d == other and other == d, other
        assert not (d != other) and not (other != d), other
    assert np.dtype(d) == npd  # through the .dtype attribute
    assert np.zeros(2, d).dtype == npd


@pytest.mark.parametrize("d", ALL, ids=str)
def test_unequal_to_other_dtypes_and_non_dtypes(d):
    for e in ALL:
        assert (d == e) is (d is e)  # Array API: equal only to itself
        if e is not d:
            assert d != NAMES[e] and d != NAMES[e].type and d != e.name
    for other in (None, 3, 2.5, "no such type", object(), [d]):
        assert not (d == other) and d != other
    swapped = NAMES[d].newbyteorder()
    if swapped != NAMES[d]:  # 1-byte types have one byte order
        assert d != swapped and d != swapped.str


def test_python_types_compare_like_numpy():
    for py, npd in ((bool, np.dtype(bool)), (int, np.dtype(int)), (float, np.dtype(float))):
        for d in ALL:
            assert (d == py) is (npd == np.dtype(d.name)), (d, py)


@pytest.mark.parametrize("d", ALL, ids=str)
def test_hash_matches_numpy_and_dicts_mix(d):
    assert hash(d) == hash(NAMES[d])
    assert {NAMES[d]: "x"}[d] == "x"
    assert {d: "y"}[NAMES[d]] == "y"
    assert len({d, NAMES[d]}) == 1
    assert pickle.loads(pickle.dumps(d)) is d


def test_array_dtype_compares_like_numpy():
    x = np.zeros(3, np.float32)
    d = ember.dtype(x.dtype)
    assert d == x.dtype and x.dtype == d and d == np.float32 and d == "float32"


def test_other_byte_order_refused_with_reason():
    with pytest.raises(TypeError, match="native byte order only"):
        ember.dtype(np.dtype(">f4"))
    with pytest.raises(TypeError, match="native byte order only"):
        ember.dtype(">i8")


def test_numpy_spellings_accepted():
    assert ember.dtype("<f4") is ember.float32
    assert ember.dtype("d") is ember.float64
    assert ember.dtype(np.dtype("int16").str) is ember.int16


def test_comparing_names_does_not_import_numpy():
    code = (
        "import sys, ember\n"
        "assert ember.float32 == 'float32' and ember.float32 != 'f8' and ember.int8 != None\n"
        "assert 'numpy' not in sys.modules, 'numpy imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
