"""The CUDA backend's current-context tracking across several devices, with no GPU: the
driver calls are replaced by a recording fake."""

from __future__ import annotations

import threading
import types

import pytest

pytest.importorskip("cuda.bindings", reason="cuda-bindings is not installed")

from ember.backends.cuda import device as cuda_device  # noqa: E402


@pytest.fixture
def driver(monkeypatch):
    calls = []
    fake = types.SimpleNamespace(
        cuDevicePrimaryCtxRetain=lambda dev: (0, f"ctx{dev}"),
        cuDevicePrimaryCtxRelease=lambda dev: calls.append(("release", dev)),
        cuCtxSetCurrent=lambda handle: calls.append(("set", handle)) or (0,),
    )
    monkeypatch.setattr(cuda_device, "cu", fake)
    monkeypatch.setattr(cuda_device, "_current", threading.local())
    monkeypatch.setattr(cuda_device, "opened", 0)
    return calls


def test_switching_contexts_sets_the_current_one_each_time(driver):
    a = cuda_device.PrimaryContext(0, 0)
    b = cuda_device.PrimaryContext(1, 1)
    assert cuda_device.opened == 2
    driver.clear()
    a.ensure_current()  # b was made current last (at its creation): a switch
    a.ensure_current()  # already current: no driver call
    b.ensure_current()
    a.ensure_current()
    assert driver == [("set", "ctx0"), ("set", "ctx1"), ("set", "ctx0")]


def test_each_thread_tracks_its_own_current_context(driver):
    a = cuda_device.PrimaryContext(0, 0)
    driver.clear()
    t = threading.Thread(target=a.ensure_current)
    t.start()
    t.join()
    a.ensure_current()  # current here since its creation
    assert driver == [("set", "ctx0")]  # the other thread's switch only


def test_closing_forgets_the_context(driver):
    a = cuda_device.PrimaryContext(0, 0)
    b = cuda_device.PrimaryContext(1, 1)
    b.close()
    b.close()  # idempotent
    assert cuda_device.opened == 1 and ("release", 1) in driver
    driver.clear()
    a.ensure_current()
    assert driver == [("set", "ctx0")]
