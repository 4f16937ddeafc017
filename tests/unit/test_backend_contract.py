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
