"""Kernels that keep a device busy for a known time, for the sync and memory suites.

CUDA kernels spin on ``%globaltimer`` (nanoseconds); OpenCL has no clock, so its kernels
spin a dependent floating-point loop whose speed :class:`Work` measures once per backend.
"""

from __future__ import annotations

import time

import numpy as np

import ember

SOURCES = {
    "cuda": r"""
__device__ void spin_ns(long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while ((long long)(now - start) < ns);
}
extern "C" __global__ void spin_then(long long amount, int* out, int value) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        spin_ns(amount);
        out[0] = value;
    }
}
extern "C" __global__ void spin_copy(long long amount, const int* src, int* dst, long long n) {
    if (threadIdx.x == 0) spin_ns(amount);
    __syncthreads();
    for (long long i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}
extern "C" __global__ void add(int* y, int v, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] += v;
}
""",
    "opencl": r"""
float spin_iterations(long n, float x) {
    for (long i = 0; i < n; i++) x = x * 0.999999f + 1.0f;
    return x;
}
__kernel void spin_then(long amount, __global int* out, int value) {
    if (get_global_id(0) == 0) {
        float x = spin_iterations(amount, (float)value);
        out[0] = (x > -1.0f) ? value : -value;
    }
}
__kernel void spin_copy(long amount, __global const int* src, __global int* dst, long n) {
    __local float x;
    if (get_local_id(0) == 0) x = spin_iterations(amount, 1.0f);
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    int bad = x < -1.0f;
    for (long i = get_local_id(0); i < n; i += get_local_size(0)) dst[i] = bad ? -1 : src[i];
}
__kernel void add(__global int* y, int v, long n) {
    long i = get_global_id(0);
    if (i < n) y[i] += v;
}
""",
}

_WORK: dict[object, Work] = {}


class Work:
    """The kernels of :data:`SOURCES` on one backend, with durations given in seconds."""

    def __init__(self, backend):
        self.backend = backend
        src = SOURCES[backend.dialect]
        self._spin = ember.RawKernel(src, "spin_then", backend=backend.name)
        self._copy = ember.RawKernel(src, "spin_copy", backend=backend.name)
        self._add = ember.RawKernel(src, "add", backend=backend.name)
        self.per_second = 1e9  # CUDA: nanoseconds
        if backend.dialect == "opencl":
            self.per_second = self._calibrate()

    @classmethod
    def on(cls, backend) -> Work:
        """The (cached) kernels of ``backend``."""
        if backend not in _WORK:
            _WORK[backend] = cls(backend)
        return _WORK[backend]

    def _calibrate(self) -> float:
        out = ember.zeros(1, ember.int32)
        stream = ember.Stream()
        self._spin[1, 1](1000, out, 1, stream=stream)  # builds the program
        stream.synchronize()
        n = 20_000_000
        t = time.perf_counter()
        self._spin[1, 1](n, out, 1, stream=stream)
        stream.synchronize()
        return n / (time.perf_counter() - t)

    def amount(self, seconds: float) -> int:
        return max(int(seconds * self.per_second), 1)

    def spin_then(self, seconds: float, out: ember.ndarray, value: int, stream) -> None:
        """Keep ``stream`` busy ``seconds``, then write ``value`` to ``out[0]``."""
        self._spin[1, 1](self.amount(seconds), out, value, stream=stream)

    def spin_copy(self, seconds: float, src: ember.ndarray, dst: ember.ndarray, stream) -> None:
        """Keep ``stream`` busy ``seconds``, then copy ``src`` into ``dst`` (int32 arrays)."""
        self._copy[1, 256](self.amount(seconds), src, dst, src.size, stream=stream)

    def add(self, y: ember.ndarray, value: int, stream) -> None:
        """``y += value`` (an int32 array)."""
        n = y.size
        self._add[(n + 255) // 256, 256](y, value, n, stream=stream)


def read_elsewhere(backend, array: ember.ndarray) -> np.ndarray:
    """``array``'s contents read through a fresh stream: not ordered after any other work,
    so a wait that returned early shows up as stale data."""
    out = np.empty(array.shape, array.dtype.numpy)
    stream = backend.create_stream()
    backend.copy_to_host(out, array.buffer, array.offset, stream)
    stream.synchronize()
    stream.close()
    return out


class Counted:
    """Counts the driver calls of one stream or event (installed with monkeypatch, so the
    runtime keeps no test hook): ``queries`` and ``blocks``."""

    def __init__(self, monkeypatch, obj):
        self.queries = self.blocks = 0
        query, block = obj._native_query, obj._native_block

        def counted_query():
            self.queries += 1
            return query()

        def counted_block(blocking):
            self.blocks += 1
            return block(blocking)

        monkeypatch.setattr(obj, "_native_query", counted_query)
        monkeypatch.setattr(obj, "_native_block", counted_block)

    @property
    def calls(self) -> int:
        return self.queries + self.blocks


def ready_zeros(n: int) -> ember.ndarray:
    """An int32 array of zeros whose contents are on the device when this returns.

    (``ember.zeros`` fills on the default stream asynchronously: a kernel on another stream
    is not ordered after that fill.)
    """
    return ember.asarray(np.zeros(n, np.int32))
