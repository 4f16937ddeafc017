"""The backend contract is enforced, selection works, and ember imports no driver."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fake_backend import FakeBase

from ember.codegen import dialects
from ember.errors import BackendUnavailableError, InternalError
from ember.runtime import backend as registry
from ember.runtime.backend import Backend


def test_stub_backend_missing_methods_fails_loudly():
    class Stub(Backend):
        name = "stub"
        dialect = dialects.get("cuda")
        binary_kind = "none"

        def devices(self):
            return []

    with pytest.raises(InternalError, match=r"missing .*alloc.*compile") as info:
        registry.validate(Stub)
    assert "test_backend_contract" in str(info.value)


def test_stub_backend_missing_class_attributes_fails_loudly():
    class NoName(Backend):
        pass

    NoName.__abstractmethods__ = frozenset()
    with pytest.raises(InternalError, match="missing name, dialect, binary_kind"):
        registry.validate(NoName)


def test_non_backend_class_is_refused():
    with pytest.raises(InternalError, match="not a subclass"):
        registry.validate(dict)


def test_unknown_backend_name():
    with pytest.raises(BackendUnavailableError, match="unknown backend 'metal'.*cuda, opencl"):
        registry.get("metal")


def test_import_touches_no_driver():
    """With the warmup off nothing is imported at all; with it on, the warmup thread imports
    the driver bindings, never the main thread (tests/unit/test_warmup.py)."""
    import os

    code = (
        "import sys, ember; "
        "bad = [m for m in ('cuda.bindings', 'pyopencl', 'numpy') if m in sys.modules]; "
        "print(bad)"
    )
    env = dict(os.environ, EMBER_WARMUP="0")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "[]"


def test_auto_selection_error_names_the_extras(monkeypatch):
    code = (
        "import ember.runtime.registry as r\n"
        "r.REGISTRY = {'cuda': ('no_such_module_x', 'B', r.INSTALL_HINT['cuda']),\n"
        "              'opencl': ('no_such_module_y', 'B', r.INSTALL_HINT['opencl']),\n"
        "              'cpu': ('no_such_module_z', 'B', r.INSTALL_HINT['cpu'])}\n"
        "try:\n    r.get()\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "BackendUnavailableError" in out.stdout
    assert "ember[cuda]" in out.stdout and "ember[cpu]" in out.stdout


def test_env_selects_backend():
    code = "import ember; print(ember.get_backend().name)"
    env = {"EMBER_BACKEND": "opencl", "PATH": ""}
    import os

    env = dict(os.environ, EMBER_BACKEND="opencl")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        pytest.skip("opencl backend unavailable: " + out.stderr[-200:])
    assert out.stdout.strip() == "opencl"


def test_a_dialect_name_is_not_a_dialect():
    class Named(Backend):
        name, dialect, binary_kind = "named", "cuda", "none"

    Named.__abstractmethods__ = frozenset()
    with pytest.raises(InternalError, match=r"missing dialect \(an ember.codegen.dialects.Dialect"):
        registry.validate(Named)


@pytest.fixture
def fakes(monkeypatch):
    """Two fake backends in the registry (tests/unit/fake_backend.py), nothing selected."""
    from ember.runtime import registry as reg

    for name in ("fake_a", "fake_b"):
        monkeypatch.setitem(reg.REGISTRY, name, ("fake_backend", f"Fake{name[-1].upper()}", ""))
    monkeypatch.setattr(reg, "_current", None)
    yield reg
    for name in ("fake_a", "fake_b"):
        reg._instances.pop(name, None)


class FakeA(FakeBase):
    name = "fake_a"


class FakeB(FakeBase):
    name = "fake_b"


def test_use_backend_is_a_choice_and_a_context_manager(fakes, monkeypatch):
    import fake_backend

    import ember

    monkeypatch.setattr(fake_backend, "FakeA", FakeA, raising=False)
    monkeypatch.setattr(fake_backend, "FakeB", FakeB, raising=False)
    a = ember.use_backend("fake_a")  # from now on
    assert ember.get_backend() is a and isinstance(a, FakeA)
    with ember.use_backend("fake_b") as b:  # inside the block only
        assert ember.get_backend() is b
        with a:  # a registry backend is a context manager too
            assert ember.get_backend() is a
        assert ember.get_backend() is b
    assert ember.get_backend() is a
    with pytest.raises(ember.BackendUnavailableError, match="not the registry's fake_a"):
        with FakeA():
            pass


PASSED_OVER = """
import sys
sys.path.insert(0, {folder!r})
import ember.runtime.registry as r
r.REGISTRY = {{"gpuish": ("gpuish", "B", "pip install gpuish")}}
r.AUTO_ORDER = tuple(r.REGISTRY)
try:
    r.get()
except Exception as e:
    print(type(e).__name__, e)
print("class imported" if "gpuish" in sys.modules and sys.modules["gpuish"].asked else "")
"""

GPUISH = """
asked = []

def plausible(kind=None):
    return False

def __getattr__(name):
    asked.append(name)
    raise ImportError("the driver bindings were imported")
"""


@pytest.mark.parametrize("setting", ["auto", "gpuish"])
def test_auto_selection_passes_over_a_backend_whose_device_cannot_be_here(tmp_path, setting):
    """The package's plausible() says no (CUDA: no driver file): auto selection does not
    import the backend's class (its bindings); naming the backend still tries it."""
    import os

    (tmp_path / "gpuish.py").write_text(GPUISH)
    code = PASSED_OVER.format(folder=str(tmp_path))
    env = dict(os.environ, EMBER_BACKEND=setting, EMBER_WARMUP="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout  # fmt: skip
    assert out.startswith("BackendUnavailableError")
    if setting == "auto":
        assert "gpuish: no device of it can be here" in out and "class imported" not in out
        assert "EMBER_BACKEND=gpuish tries it anyway" in out
    else:
        assert "the driver bindings were imported" in out and "class imported" in out


def test_the_packages_device_tests(monkeypatch):
    import os

    from ember.backends import cuda, opencl

    present: set[str] = set()
    monkeypatch.setattr(os.path, "exists", lambda p: p in present)
    monkeypatch.setattr(os, "listdir", lambda p: sorted(x for x in present if x.startswith(p)))
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert not cuda.plausible() and not opencl.plausible("GPU")
    assert opencl.plausible() and opencl.plausible("CPU")  # PoCL needs no hardware
    present.add("/proc/driver/nvidia/version")  # the module is loaded, no /dev files yet
    assert cuda.plausible("GPU") and not opencl.plausible("GPU")
    present.add("/dev/dri/renderD128")
    assert opencl.plausible("GPU")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not cuda.plausible()
