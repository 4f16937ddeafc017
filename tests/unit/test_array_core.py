"""ember.array.core: ndarray's fields, set once (the C stub) or plain slots (its fallback)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest

from ember.array import core
from ember.array.ndarray import ndarray

ARGS = ("buf", (2, 3), (24, 8), "dt", "be", 16, True)  # buffer ... c: stand-ins, no device

guarded = pytest.mark.skipif(not core.GUARDED, reason="ember.array._core was not built")


def fields(a) -> dict:
    return {f: getattr(a, f) for f in core.FIELDS}


ORDER = ("buffer", "shape", "strides", "dtype", "backend", "offset", "_c")  # make's, after cls
EXPECTED = {**dict(zip(ORDER, ARGS, strict=True)), "_lv": None}


def test_make_and_fill_set_every_field():
    assert fields(core.make(ndarray, *ARGS)) == EXPECTED
    a = object.__new__(ndarray)
    assert core.fill(a, *ARGS) is None
    assert fields(a) == EXPECTED


def test_fields_are_the_fixed_ones_then_the_caches():
    assert core.FIELDS[:6] == core.FIXED
    assert set(core.FIXED) == {"shape", "strides", "dtype", "buffer", "offset", "backend"}
    assert core.FIELDS[6:] == ("_c", "_lv")


@guarded
def test_a_fixed_field_is_set_once():
    a = object.__new__(ndarray)
    with pytest.raises(AttributeError):
        a.shape  # noqa: B018 - unset reads raise
    a.shape = (4,)  # the first store: how the fast paths fill a bare array
    for value in ((2, 2), (4,)):
        with pytest.raises(AttributeError, match="cannot set the shape of an ember.ndarray"):
            a.shape = value
    assert a.shape == (4,)
    with pytest.raises(AttributeError, match="already made"):
        core.fill(a, *ARGS)
    assert a.shape == (4,) and fields(core.make(ndarray, *ARGS)) == EXPECTED


@guarded
def test_deleting_an_unset_field_and_the_caches():
    a = core.make(ndarray, *ARGS)
    del a._lv
    with pytest.raises(AttributeError):
        del a._lv
    a._lv = (1, 2)
    assert a._lv == (1, 2)
    b = object.__new__(ndarray)
    with pytest.raises(AttributeError):
        del b.dtype


@guarded
def test_make_and_fill_check_their_arguments():
    with pytest.raises(TypeError, match="8 arguments"):
        core.make(ndarray, *ARGS[:-1])
    with pytest.raises(TypeError, match="8 arguments"):
        core.fill(object.__new__(ndarray), *ARGS, None)
    with pytest.raises(TypeError, match="ArrayCore"):
        core.make(dict, *ARGS)
    with pytest.raises(TypeError, match="ArrayCore"):
        core.fill(object(), *ARGS)


def test_an_array_is_freed_with_its_fields_and_weak_references():
    class Held:
        pass

    held = Held()
    watch = weakref.ref(held)
    a = core.make(ndarray, held, *ARGS[1:])
    ref = weakref.ref(a)
    a._lv = [a]  # a cycle through a cache: the collector must see the fields
    del a, held
    gc.collect()
    assert ref() is None and watch() is None


def test_the_fallback_without_the_stub_gives_the_same_fields():
    # an install without a C compiler: plain slots and Python make/fill
    code = (
        "import sys; sys.modules['ember.array._core'] = None\n"
        "from ember.array import core; from ember.array.ndarray import ndarray\n"
        f"args = {ARGS!r}\n"
        "assert not core.GUARDED and core.ArrayCore.__module__ == 'ember.array.core'\n"
        "a = core.make(ndarray, *args); b = object.__new__(ndarray); core.fill(b, *args)\n"
        "print(sorted((f, repr(getattr(x, f))) for x in (a, b) for f in core.FIELDS))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    expected = sorted((f, repr(v)) for f, v in EXPECTED.items() for _ in (0, 1))
    assert out.stdout.strip() == str(expected)
