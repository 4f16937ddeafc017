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

from ember.runtime import backend as registry  # noqa: E402 - after the environment

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


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason if reason is not None else (unavailable_reason("cuda") or "")
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"needs a CUDA device: {reason[:120]}"))
