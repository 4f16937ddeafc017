"""Kernels that keep a device busy for a known time, for the sync and memory suites.

CUDA kernels spin on ``%globaltimer`` (nanoseconds); OpenCL and cpu kernels have no clock,
so they spin a dependent floating-point loop whose speed :class:`Work` measures once per
backend.
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
    # The cpu backend runs a group's work-items in order: work-item 0 spins before the
    # others copy, with no barrier (raw cpu kernels cannot have one).
    "cpu": r"""
static float spin_iterations(int64_t n, float x) {
    for (int64_t i = 0; i < n; i++) x = x * 0.999999f + 1.0f;
    return x;
}
EMBER_KERNEL void spin_then(int64_t amount, int32_t* out, int32_t value) {
    if (get_global_id(0) == 0) {
        float x = spin_iterations(amount, (float)value);
        out[0] = (x > -1.0f) ? value : -value;
    }
}
EMBER_KERNEL void spin_copy(int64_t amount, const int32_t* src, int32_t* dst, int64_t n) {
    float x = get_local_id(0) == 0 ? spin_iterations(amount, 1.0f) : 1.0f;
    int bad = x < -1.0f;
    for (int64_t i = get_local_id(0); i < n; i += get_local_size(0)) dst[i] = bad ? -1 : src[i];
}
EMBER_KERNEL void add(int32_t* y, int32_t v, int64_t n) {
    int64_t i = get_global_id(0);
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
        if backend.dialect != "cuda":  # no clock to spin on: calibrate a loop
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
        n, rates = 5_000_000, []
        for _ in range(3):  # the fastest of three: a busy machine only makes kernels longer
            t = time.perf_counter()
            self._spin[1, 1](n, out, 1, stream=stream)
            stream.synchronize()
            rates.append(n / (time.perf_counter() - t))
        return max(rates)

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
