"""Helpers for the cache tests: a fake backend and kernels loaded from source text."""

from __future__ import annotations

import importlib.util
import itertools
import sys

from fake_backend import FakeBase, FakeBufferBase, FakeFunctionBase, FakeModuleBase

import ember
from ember.codegen import dialects
from ember.runtime.backend import DeviceInfo

_dirs = itertools.count()


class FakeFunction(FakeFunctionBase):
    def launch(self, grid, block, args, shared_mem=0, stream=None):
        self.log.append((self.name, tuple(args)))


class FakeModule(FakeModuleBase):
    def __init__(self, backend, binary):
        self.backend, self.binary = backend, binary

    def function(self, name, params):
        if name.encode() not in self.binary:
            raise ember.LaunchError(f"the module has no kernel named {name!r}")
        return FakeFunction(name, params, self.backend.launches)


class FakeBackend(FakeBase):
    """The compiler's view of a backend: the "binary" is the source's bytes; ``loads``
    counts module loads and ``compiles`` compiler runs.  ``arch`` makes it a CUDA-dialect
    device of that compute capability; ``versions`` are its library versions."""

    name = "fake"
    binary_kind = "fake-binary"

    def __init__(self, arch=None, versions=None, refuse_binaries=False):
        self.dialect = dialects.get("opencl" if arch is None else "cuda")
        features = frozenset({"fp64", "int64_atomics"})
        self.device = DeviceInfo("fake", 0, "fake device", 1 << 30, 4, 32 if arch else 8,
                                 1024, 65536, arch, features=features)  # fmt: skip
        self.versions = dict(versions or {"fake-compiler": "1.0", "fake-driver": "2.0"})
        self.refuse_binaries = refuse_binaries
        self.compiles, self.loads, self.launches = 0, 0, []

    def compile(self, source, name, options=()):
        self.compiles += 1
        return source.encode()

    def load_module(self, binary):
        self.loads += 1
        if self.refuse_binaries:
            raise ember.DriverError("cuModuleLoadData failed with CUDA_ERROR_INVALID_IMAGE")
        return FakeModule(self, bytes(binary))

    def library_versions(self):
        return self.versions

    def native_pointer(self, buffer, offset=0):
        return buffer.handle


class FakeBuffer(FakeBufferBase):
    pass


def array(backend, shape, dtype=ember.float32):
    n = 1
    for s in shape:
        n *= s
    buf = FakeBuffer(n * ember.dtype(dtype).itemsize)
    return ember.ndarray(tuple(shape), ember.dtype(dtype), buf, backend)


def load_module(tmp_path, source: str, name: str = "kmod"):
    """Import ``source`` as module ``name`` from a new file (a new version of the module)."""
    folder = tmp_path / f"v{next(_dirs)}"
    folder.mkdir()
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclass-free modules do not need it, inspect does
    spec.loader.exec_module(module)
    return module
