"""Shared fixtures: the ``backend`` fixture runs a test once per available backend."""

from __future__ import annotations

import functools
import os
import tempfile

import pytest

# A hermetic kernel cache: the suite neither reads nor fills the user's cache (a hit would
# hide a compile a test expects).  The cache's own tests turn it on in their own directory.
os.environ.setdefault("EMBER_CACHE", "0")
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember-test-cache-"))
# Two PoCL CPU devices, so the multi-device paths run in CI (tests/backend/test_devices.py).
# Set before OpenCL starts, for the whole session: device 0, every other test's device, is
# the one it was; device 1 costs nothing until a test opens it.  A value of the user's wins.
os.environ.setdefault("POCL_DEVICES", "pthread pthread")

from ember.runtime import backend as registry  # noqa: E402 - after the environment

BACKENDS = tuple(registry.REGISTRY)


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


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason if reason is not None else (unavailable_reason("cuda") or "")
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"needs a CUDA device: {reason[:120]}"))
