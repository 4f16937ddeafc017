"""The backend contract's classes with every MUST member refusing, for test fakes: a fake
subclasses these and overrides what its test needs, so it has every optional member's
default (capabilities, ``resources()``, ``occupancy()``...) exactly as a real backend."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from ember.codegen import dialects
from ember.runtime.backend import Backend, Buffer, DeviceInfo, Function, Module, Stream
from ember.runtime.sync import Waitable


def _refuse(what: str):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not fake {what}")

    method.__name__ = what
    return method


# the compiler tests' device: a small OpenCL-dialect GPU with fp64 and 64-bit atomics
FAKE_DEVICE = DeviceInfo("fake", 0, "fake device", 1 << 30, 4, 8, 1024, 65536,
                         features=frozenset({"fp64", "int64_atomics"}))  # fmt: skip


class FakeBase(Backend):
    """A backend with an OpenCL-dialect device (set ``device`` per instance)."""

    name = "fake"
    dialect = dialects.get("opencl")
    binary_kind = "fake-binary"
    device = None  # a DeviceInfo

    @property
    def default_stream(self):
        if "_stream" not in self.__dict__:
            self._stream = FakeStreamBase()
        return self._stream

    def devices(self):
        return [self.device]

    def library_versions(self):
        return {}

    alloc = _refuse("alloc")
    native_pointer = _refuse("native_pointer")
    copy_from_host = _refuse("copy_from_host")
    copy_to_host = _refuse("copy_to_host")
    copy_device = _refuse("copy_device")
    create_stream = _refuse("create_stream")
    create_event = _refuse("create_event")
    synchronize = _refuse("synchronize")
    compile = _refuse("compile")
    load_module = _refuse("load_module")


class FakeStreamBase(Waitable, Stream):
    """An in-order stream whose work is always finished."""

    handle = None

    def _native_query(self) -> bool:
        return True

    def _native_block(self, blocking: bool) -> None:
        pass


class FakeBufferBase(Buffer):
    handle = None

    def __init__(self, nbytes: int):
        self.handle = ("buffer", id(self))
        self.nbytes = nbytes

    def close(self) -> None:
        pass


class FakeFunctionBase(Function):
    def __init__(self, name, params, log):
        self.name, self.params, self.log = name, tuple(params), log


class FakeModuleBase(Module):
    pass


def run_threads(work: Callable[[int], None], count: int = 4) -> list[BaseException]:
    """Run ``work(i)`` for ``i < count`` in as many threads at once, the interpreter
    switching between them as often as it can; return what they raised."""
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except BaseException as exc:  # returned to the test, which asserts on it
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    return errors
