"""Cache keys: everything that changes a binary changes the key; nothing else does.

Each test builds versions of a small module from source text and compares the keys of its
kernel (computed before typing, as a cache lookup does).
"""

from __future__ import annotations

import pytest
from cache_fakes import FakeBackend, load_module

import ember
from ember.cache import key as keymod
from ember.compiler import driver
from ember.frontend.types import WEAK_FLOAT, Array

F32 = [WEAK_FLOAT, Array(ember.float32, 1), Array(ember.float32, 1)]

BASE = """
import ember
SCALE = 3
UNUSED = 1

def helper(v):
    return v * SCALE

@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * helper(x[i]) + y[i]
"""


def key(module, types=F32, backend=None, options=(), name="axpy", launch_bounds=None):
    be = backend or FakeBackend()
    k = getattr(module, name)
    parts = driver.cache_parts(
        k.captured, types, driver.target_of(be), options, be, k._captures, False, launch_bounds
    )  # fmt: skip
    return keymod.digest(parts)


@pytest.fixture
def base_key(tmp_path):
    return key(load_module(tmp_path, BASE))


def variant(tmp_path, old, new):
    assert old in BASE
    return key(load_module(tmp_path, BASE.replace(old, new)))


def test_the_key_is_stable_across_kernel_objects_and_module_loads(tmp_path, base_key):
    assert len(base_key) == 64
    assert key(load_module(tmp_path, BASE)) == base_key


@pytest.mark.parametrize(
    "old, new",
    [
        ("return v * SCALE", "return v * SCALE + 1"),  # a called function's source
        ("SCALE = 3", "SCALE = 4"),  # a captured constant read by a device function
        ("SCALE = 3", "SCALE = 3.0"),  # same value, another type
        ("y[i] = a * helper", "y[i] = 2 * a * helper"),  # the kernel's own source
        ("def helper(v):", "def helper(v, k=2):"),  # a default value
    ],
)
def test_what_changes_the_binary_changes_the_key(tmp_path, base_key, old, new):
    assert variant(tmp_path, old, new) != base_key


@pytest.mark.parametrize(
    "old, new",
    [
        ("UNUSED = 1", "UNUSED = 2"),  # a global the kernel does not read
        ("UNUSED = 1", "UNUSED = 1\n\ndef other():\n    return 5\n"),  # a new function
        ("import ember\n", "import ember\n# a comment outside the kernel\n"),
        ("SCALE = 3\n", "\n\nSCALE = 3\n"),  # the kernel moved down the file
    ],
)
def test_unrelated_edits_keep_the_key(tmp_path, base_key, old, new):
    assert variant(tmp_path, old, new) == base_key


def test_argument_types_options_arch_and_versions_change_the_key(tmp_path):
    m = load_module(tmp_path, BASE)
    k0 = key(m)
    assert key(m, [WEAK_FLOAT, Array(ember.float64, 1), Array(ember.float64, 1)]) != k0
    assert key(m, [WEAK_FLOAT, Array(ember.float32, 1, "A"), Array(ember.float32, 1)]) != k0
    assert key(m, options=("-cl-fast-relaxed-math",)) != k0
    bounded = {key(m, launch_bounds=b) for b in ((256, 0), (256, 6), (128, 6))}
    assert len(bounded) == 3 and k0 not in bounded
    sm80, sm90 = FakeBackend(arch=(8, 0)), FakeBackend(arch=(9, 0))
    assert key(m, backend=sm80) != key(m, backend=sm90) != k0
    nvrtc13 = FakeBackend(arch=(9, 0), versions={"nvrtc": "13.0", "cuda-driver": "13.0"})
    nvrtc131 = FakeBackend(arch=(9, 0), versions={"nvrtc": "13.1", "cuda-driver": "13.0"})
    driver131 = FakeBackend(arch=(9, 0), versions={"nvrtc": "13.0", "cuda-driver": "13.1"})
    assert len({key(m, backend=b) for b in (nvrtc13, nvrtc131, driver131)}) == 3


def test_wrapper_library_versions_do_not_change_the_key(tmp_path):
    m = load_module(tmp_path, BASE)
    a = FakeBackend(versions={"nvrtc": "13.0", "cuda-bindings": "13.0.1"})
    b = FakeBackend(versions={"nvrtc": "13.0", "cuda-bindings": "13.0.2"})
    assert key(m, backend=a) == key(m, backend=b)


def test_embers_own_compiler_changes_the_key(tmp_path, monkeypatch):
    m = load_module(tmp_path, BASE)
    k0 = key(m)
    monkeypatch.setattr(keymod, "_fingerprint", "0.1.0+another-compiler")
    assert key(load_module(tmp_path, BASE)) != k0


def test_fingerprint_covers_the_compiler_sources():
    fp = keymod.fingerprint()
    assert fp.startswith(ember.__version__ + "+") and keymod.fingerprint() is fp


MODULE_ATTRIBUTE = """
import ember
import {cfg} as cfg

@ember.kernel
def fill(y):
    i = ember.global_id()
    if i < y.shape[0]:
        y[i] = cfg.Params.VALUE
"""


def test_constants_read_through_module_attributes_are_in_the_key(tmp_path):
    """A kernel reading ``cfg.Params.VALUE`` from another module: that value is part of the
    key, though the kernel's source does not change (keys built from IR constants alone
    served stale code here)."""
    keys = []
    for value in (1.5, 2.5, 1.5):
        load_module(tmp_path, f"class Params:\n    VALUE = {value}\n", name="kcfg")
        m = load_module(tmp_path, MODULE_ATTRIBUTE.format(cfg="kcfg"), name="kfill")
        keys.append(key(m, [Array(ember.float32, 1)], name="fill"))
    assert keys[0] != keys[1] and keys[0] == keys[2]


CLOSURE = """
import ember

def make(factor):
    def scale(v):
        return v * factor

    @ember.kernel
    def k(y):
        i = ember.global_id()
        if i < y.shape[0]:
            y[i] = scale(y[i])

    return k

k2, k3, k2b = make(2), make(3), make(2)
"""


def test_closure_constants_are_in_the_key(tmp_path):
    m = load_module(tmp_path, CLOSURE)
    types = [Array(ember.float32, 1)]
    assert key(m, types, name="k2") != key(m, types, name="k3")
    assert key(m, types, name="k2") == key(m, types, name="k2b")


KERNEL_CALLS_KERNEL = """
import ember
OFFSET = {offset}

@ember.kernel
def inner(y, i):
    y[i] = y[i] + OFFSET

@ember.kernel
def outer(y):
    i = ember.global_id()
    if i < y.shape[0]:
        inner(y, i)
"""


def test_a_kernel_called_as_a_device_function_is_followed(tmp_path):
    types = [Array(ember.float32, 1)]
    a = key(load_module(tmp_path, KERNEL_CALLS_KERNEL.format(offset=1)), types, name="outer")
    b = key(load_module(tmp_path, KERNEL_CALLS_KERNEL.format(offset=2)), types, name="outer")
    assert a != b


def test_the_key_uses_the_values_the_typer_froze(tmp_path):
    """After a first compile froze SCALE, changing the global does not change what this
    kernel object compiles, and so not its key either."""
    m = load_module(tmp_path, BASE)
    be = FakeBackend()
    x = m.axpy.inspect(2.0, *([__import__("numpy").zeros(4, "float32")] * 2), dialect="opencl")
    assert "axpy" in x
    k0 = key(m, backend=be)
    m.SCALE = 10
    assert key(m, backend=be) == k0


def test_a_value_changed_between_two_compiles_of_one_kernel_object_changes_the_key(tmp_path):
    """The typer reads ``cfg.Params.VALUE`` afresh at each compile: so does the key."""
    cfg = load_module(tmp_path, "class Params:\n    VALUE = 1.5\n", name="kcfg2")
    m = load_module(tmp_path, MODULE_ATTRIBUTE.format(cfg="kcfg2"), name="kfill2")
    types = [Array(ember.float32, 1)]
    k1 = key(m, types, name="fill")
    cfg.Params.VALUE = 2.5
    assert key(m, types, name="fill") != k1
