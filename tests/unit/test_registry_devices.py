"""The registry's devices with a fake backend of three devices (no driver): one instance
per device, the default device (``EMBER_DEVICE``), each thread's device choice, and
``ember.Device`` on top of them."""

from __future__ import annotations

import threading

import pytest
from fake_backend import FakeBase

import ember
from ember import config
from ember.errors import BackendUnavailableError
from ember.runtime import registry
from ember.runtime.backend import DeviceInfo


def info(index: int) -> DeviceInfo:
    return DeviceInfo("fake_m", index, f"fake {index}", 1 << 30, 1, 1, 64, 0, kind="CPU")


class FakeMulti(FakeBase):
    name = "fake_m"

    def __init__(self, index: int = 0):
        self.device = info(index)

    @classmethod
    def open_device(cls, index: int):
        if not 0 <= index < 3:
            raise BackendUnavailableError(f"fake_m has no device {index}")
        return cls(index)

    def devices(self):
        return [info(i) for i in range(3)]


@pytest.fixture
def multi(monkeypatch):
    import fake_backend

    monkeypatch.setattr(fake_backend, "FakeMulti", FakeMulti, raising=False)
    monkeypatch.setitem(registry.REGISTRY, "fake_m", ("fake_backend", "FakeMulti", ""))
    monkeypatch.setattr(registry, "_current", None)
    yield registry
    registry.disable("fake_m", "test over")
    registry._failures.pop("fake_m", None)
    registry.choose(None)


def test_one_instance_per_device(multi):
    default = multi.use("fake_m")
    assert default.device.index == 0 and multi.device("fake_m", 0) is default
    two = multi.device("fake_m", 2)
    assert two.device.index == 2 and multi.device("fake_m", 2) is two
    assert multi.opened("fake_m") == [default, two]
    with pytest.raises(BackendUnavailableError, match="no device 7"):
        multi.device("fake_m", 7)
    multi.disable("fake_m", "gone")
    assert multi.opened("fake_m") == []
    with pytest.raises(BackendUnavailableError, match="gone"):
        multi.device("fake_m", 2)


def test_ember_device_picks_the_default_device(multi):
    with config.override(device=1):
        assert multi.use("fake_m").device.index == 1
    assert multi.get("fake_m") is multi.device("fake_m", 1)


def test_thread_choice_and_blocks(multi):
    default = multi.use("fake_m")
    one = multi.device("fake_m", 1)
    assert multi.choose(one) is None and multi.current() is one
    seen = []
    t = threading.Thread(target=lambda: seen.append(multi.current()))
    t.start()
    t.join()
    assert seen == [default]  # other threads keep the process's device
    with multi.use("fake_m"):  # a backend block: its default device, for the block
        assert multi.current() is default
    assert multi.current() is one
    with multi.device("fake_m", 2) as two:  # an instance's block: that device
        assert multi.current() is two
    assert multi.current() is one
    multi.use("fake_m")  # a plain use(): the thread's choice is dropped
    assert multi.current() is default
    with pytest.raises(BackendUnavailableError, match="not the registry's"):
        multi.choose(FakeMulti(2))


def test_device_objects(multi):
    multi.use("fake_m")
    found = ember.devices("fake_m")
    assert [d.index for d in found] == [0, 1, 2] and not found[2].is_open
    d2 = ember.Device("fake_m", 2)
    assert d2 is found[2] and d2.name == "fake 2" and d2.kind == "CPU"
    assert ember.Device(2) is d2 and ember.Device("fake_m:2") is d2
    with d2:
        assert ember.get_backend() is d2.get_backend() and d2.is_open
        assert ember.Device(ember.get_backend()) is d2
    assert ember.get_backend().device.index == 0
    with pytest.raises(ValueError, match="has no device 3"):
        ember.Device("fake_m", 3)
