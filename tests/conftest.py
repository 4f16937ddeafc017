"""Shared fixtures: the ``backend`` fixture runs a test once per available backend."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile

import pytest

# One kernel cache per test run, shared by every pytest-xdist worker and every child process
# a test starts: a kernel compiled once (by any test, in any process) is a disk hit for all
# the others - most of what the suite would compile again.  It is hermetic: the user's own
# cache is never read or written.  EMBER_TEST_CACHE_DIR=DIR keeps it across runs instead
# (a CI cache); EMBER_CACHE=0 turns it off.  A test that needs its compiles to happen marks
# itself @pytest.mark.cold_cache.  The cache's own tests use their own directories.
_OWN_CACHE = None
if not os.environ.get("EMBER_TEST_CACHE_DIR"):  # the xdist controller, or a plain run
    _OWN_CACHE = tempfile.mkdtemp(prefix="ember-test-cache-")
    os.environ["EMBER_TEST_CACHE_DIR"] = _OWN_CACHE  # inherited by the workers it starts
os.environ["EMBER_CACHE_DIR"] = os.environ["EMBER_TEST_CACHE_DIR"]
os.environ.setdefault("EMBER_CACHE", "1")
# Two PoCL CPU devices, so the multi-device paths run in CI (tests/backend/test_devices.py).
# Set before OpenCL starts, for the whole session: device 0, every other test's device, is
# the one it was; device 1 costs nothing until a test opens it.  A value of the user's wins.
os.environ.setdefault("POCL_DEVICES", "pthread pthread")
# A child process that a test starts and that dies of a signal prints every thread's Python
# stack (CI once saw a child end with SIGSEGV after its last line of output, and no trace).
os.environ.setdefault("PYTHONFAULTHANDLER", "1")

# EMBER_TEST_PURE_PYTHON=1 hides Ember's optional C modules (setup.py), so that the run tests
# the Python forms they replace: tests/unit/test_native_pool.py runs the allocator's tests so.
if os.environ.get("EMBER_TEST_PURE_PYTHON"):
    import sys

    for _name in ("ember.runtime._pool", "ember.compiler._dispatch", "ember.backends.cuda._ccall",
                  "ember.array._core", "ember.runtime._waitable"):  # fmt: skip
        sys.modules[_name] = None  # `import` raises ImportError

# Hypothesis: no deadline (a per-example time limit is a timing assertion, and fails on a
# loaded machine) and the same examples on every run; HYPOTHESIS_PROFILE=explore varies them.
try:
    from hypothesis import settings as _hypothesis
except ImportError:  # the tests that use it say so themselves
    pass
else:
    _hypothesis.register_profile("ember", deadline=None, derandomize=True)
    _hypothesis.register_profile("explore", deadline=None)
    _hypothesis.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ember"))

from ember import config  # noqa: E402 - after the environment
from ember.runtime import backend as registry  # noqa: E402

# EMBER_TEST_BACKENDS=cpu,opencl: run the backend-parametrized tests on those only (CI runs
# the whole suite on cpu and a chosen part on OpenCL); default: every registered backend.
_wanted = [b.strip() for b in os.environ.get("EMBER_TEST_BACKENDS", "").split(",") if b.strip()]
BACKENDS = tuple(b for b in registry.REGISTRY if not _wanted or b in _wanted)


@functools.cache
def unavailable_reason(name: str) -> str | None:
    """None when backend ``name`` works here, else why not."""
    try:
        registry.get(name)
    except Exception as exc:  # any failure means: skip, and say why
        return str(exc)
    return None


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each available backend in turn, made current for the test."""
    reason = unavailable_reason(request.param)
    if reason:
        pytest.skip(f"{request.param} backend unavailable: {reason.splitlines()[0]}")
    with registry.use(request.param) as be:
        yield be


@pytest.fixture
def two_devices(backend):
    """Devices 0 and 1 of the test's backend (skips where it has fewer that build kernels)."""
    import ember

    first = ember.Device(backend)
    others = [d for d in ember.devices() if d != first and d.info.extra.get("can_compile", True)]
    if not others:
        pytest.skip(f"the {backend.name} backend has fewer than 2 usable devices here")
    return first, others[0]


@pytest.fixture(autouse=True)
def _cold_cache(request):
    """``@pytest.mark.cold_cache``: the disk kernel cache is off for this test."""
    if request.node.get_closest_marker("cold_cache") is None:
        yield
        return
    with config.override(cache=False):
        yield


def pytest_unconfigure(config):
    if _OWN_CACHE is not None and not hasattr(config, "workerinput"):  # not an xdist worker
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason if reason is not None else (unavailable_reason("cuda") or "")
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"needs a CUDA device: {reason[:120]}"))
