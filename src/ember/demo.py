"""``ember demo``: compile and run real kernels on the default backend, check each against
NumPy, and say how long every step took.

Kernels: axpy, a 2-D five-point stencil, a tiled matrix multiply in shared memory, a
histogram with atomics and a block reduction in shared memory.  For each one the demo
prints the compile time (typing, C generation, backend build, module load), the first
launch (launch + wait) and the steady state (back-to-back launches, per launch), then the
largest difference from NumPy.  Exit status 0 when every result matches.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import ember
from ember.runtime import registry

TILE = 16
BLOCK = 256
BINS = 64


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@ember.kernel
def stencil(u, out):
    i, j = ember.grid(2)
    n, m = u.shape
    if 0 < i < n - 1 and 0 < j < m - 1:
        out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@ember.kernel
def matmul(a, b, c):
    ta = ember.shared((TILE, TILE), a.dtype)
    tb = ember.shared((TILE, TILE), a.dtype)
    tx, ty = ember.thread_idx.x, ember.thread_idx.y
    row = ember.block_idx.y * TILE + ty
    col = ember.block_idx.x * TILE + tx
    n, k = a.shape
    acc = 0.0
    for t in range(0, k, TILE):
        ta[ty, tx] = a[row, t + tx] if row < n and t + tx < k else 0
        tb[ty, tx] = b[t + ty, col] if t + ty < k and col < b.shape[1] else 0
        ember.barrier()
        for kk in range(TILE):
            acc += ta[ty, kk] * tb[kk, tx]
        ember.barrier()
    if row < n and col < b.shape[1]:
        c[row, col] = acc


@ember.kernel
def histogram(values, hist):
    local = ember.shared(BINS, ember.int32)
    t = ember.thread_idx.x
    for b in range(t, BINS, ember.block_dim.x):
        local[b] = 0
    ember.barrier()
    for i in range(ember.global_id(), values.shape[0], ember.global_size()):
        ember.atomic_add(local, values[i] % BINS, 1)
    ember.barrier()
    for b in range(t, BINS, ember.block_dim.x):
        ember.atomic_add(hist, b, local[b])


@ember.kernel
def block_sum(x, total):
    partial = ember.shared(BLOCK, total.dtype)
    t = ember.thread_idx.x
    acc = 0.0
    for i in range(ember.global_id(), x.shape[0], ember.global_size()):
        acc += x[i]
    partial[t] = acc
    ember.barrier()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            partial[t] += partial[t + step]
        ember.barrier()
        step //= 2
    if t == 0:
        ember.atomic_add(total, 0, partial[0])


@dataclass
class Case:
    """One demo step: what it computes, how to launch it, and the NumPy reference."""

    name: str
    what: str
    kernel: ember.Kernel
    prepare: Callable[[], tuple]  # -> (args, reset) ; reset() restores outputs before a run
    launch: Callable[[tuple], None]
    check: Callable[[tuple], float]  # -> max error (0 for exact)
    tolerance: float
    work: Callable[[], str] = lambda: ""


def _cases(scale: int, rng: np.random.Generator, grid_blocks: int) -> list[Case]:
    n = (1 << 16, 1 << 18, 1 << 24)[scale]  # elements of the 1-d cases
    side = (256, 512, 2048)[scale]  # of the stencil grid
    mm = (128, 256, 1024)[scale]  # of the matrices
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    u = rng.standard_normal((side, side)).astype(np.float64)
    a = rng.standard_normal((mm, mm), dtype=np.float32)
    b = rng.standard_normal((mm, mm), dtype=np.float32)
    values = rng.integers(0, 1 << 20, n).astype(np.int32)

    def axpy_case():
        dx, dy = ember.asarray(x), ember.asarray(y)
        return (2.0, dx, dy), lambda: None

    def stencil_case():
        return (ember.asarray(u), ember.zeros(u.shape, ember.float64)), lambda: None

    def stencil_ref(args):
        expected = np.zeros_like(u)
        expected[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return float(np.abs(args[1].to_numpy() - expected).max())

    def matmul_case():
        return (
            ember.asarray(a),
            ember.asarray(b),
            ember.zeros((mm, mm), ember.float32),
        ), lambda: None

    def hist_case():
        hist = ember.zeros(BINS, ember.int64)
        return (ember.asarray(values), hist), lambda: hist.backend.fill_zero(
            hist.buffer, 0, hist.nbytes
        )

    def sum_case():
        total = ember.zeros(1, ember.float64)
        return (ember.asarray(x.astype(np.float64)), total), lambda: total.backend.fill_zero(
            total.buffer, 0, 8
        )

    mm_grid = (-(-mm // TILE), -(-mm // TILE))
    return [
        Case("axpy", f"y = 2*x + y, {n:,} float32", axpy, axpy_case,
             lambda args: axpy.launch(n)(*args),
             lambda args: float(np.abs(args[2].to_numpy() - (np.float32(2) * x + y)).max()),
             1e-5, lambda: f"{3 * 4 * n / 1e9:.6f} GB"),
        Case("stencil", f"5-point stencil, {side}x{side} float64", stencil, stencil_case,
             lambda args: stencil.launch((side, side))(*args), stencil_ref, 1e-12,
             lambda: f"{2 * 8 * side * side / 1e9:.6f} GB"),
        Case("matmul", f"tiled matmul in shared memory, {mm}x{mm} float32", matmul,
             matmul_case, lambda args: matmul[mm_grid, (TILE, TILE)](*args),
             lambda args: float(np.abs(args[2].to_numpy() - a @ b).max()), 1e-3,
             lambda: f"{2 * mm**3 / 1e9:.6f} GFLOP"),
        Case("histogram", f"{BINS}-bin histogram of {n:,} int32, shared + global atomics",
             histogram, hist_case, lambda args: histogram[grid_blocks, BLOCK](*args),
             lambda args: float(np.abs(args[1].to_numpy()
                                       - np.bincount(values % BINS, minlength=BINS)).max()),
             0, lambda: f"{4 * n / 1e9:.6f} GB"),
        Case("reduction", f"block reduction of {n:,} float64 in shared memory", block_sum,
             sum_case, lambda args: block_sum[grid_blocks, BLOCK](*args),
             lambda args: abs(float(args[1].to_numpy()[0]) - float(x.astype(np.float64).sum())),
             1e-9 * n, lambda: f"{8 * n / 1e9:.6f} GB"),
    ]  # fmt: skip


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


def _run(case: Case, backend, repeat: int) -> bool:
    args, reset = case.prepare()
    t0 = time.perf_counter()
    spec = case.kernel.specialize(*args)
    compiled = time.perf_counter() - t0
    stages = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in spec.timings.items())
    print(f"  compile   {_ms(compiled)}   ({stages})")
    reset()
    backend.synchronize()
    t0 = time.perf_counter()
    case.launch(args)
    backend.synchronize()
    first = time.perf_counter() - t0
    error = case.check(args)
    print(f"  first     {_ms(first)}   (launch + wait)")
    samples = []
    for _ in range(3):
        backend.synchronize()
        t0 = time.perf_counter()
        for _ in range(repeat):
            case.launch(args)
        backend.synchronize()
        samples.append((time.perf_counter() - t0) / repeat)
    steady = statistics.median(samples)
    work = case.work()
    rate = ""
    if work.endswith("GB"):
        rate = f", {float(work.split()[0]) / steady:.1f} GB/s"
    elif work.endswith("GFLOP"):
        rate = f", {float(work.split()[0]) / steady:.1f} GFLOP/s"
    print(f"  steady    {_ms(steady)}   (per launch, {repeat} back to back{rate})")
    ok = error <= case.tolerance
    print(
        f"  check     max |ember - numpy| = {error:.3g} (tolerance {case.tolerance:.3g}): "
        f"{'OK' if ok else 'MISMATCH'}"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run the demo; the exit status is 0 when every kernel matches NumPy."""
    about = [" ".join(p.split()).replace("``", "") for p in __doc__.split("\n\n")]
    parser = argparse.ArgumentParser(prog="ember demo", description=about[0], epilog=about[1])
    parser.add_argument("--backend", choices=registry.REGISTRY, help="default: EMBER_BACKEND")
    parser.add_argument(
        "--size",
        choices=("small", "medium", "large"),
        default=None,
        help="problem size (default: large on a GPU, medium on a CPU)",
    )
    parser.add_argument("--repeat", type=int, default=None, help="launches per timing sample")
    parser.add_argument("--show-source", action="store_true", help="print each kernel's C")
    opts = parser.parse_args(argv)
    t_start = time.perf_counter()
    backend = ember.use_backend(opts.backend) if opts.backend else ember.get_backend()
    started = time.perf_counter() - t_start
    dev = backend.device
    size = opts.size or ("large" if backend.device.is_gpu else "medium")
    scale = {"small": 0, "medium": 1, "large": 2}[size]
    repeat = opts.repeat or (100 if backend.device.is_gpu else 10)
    print(
        f"ember {ember.__version__} demo on {backend.name}: {dev.name} "
        f"({dev.multiprocessors} SMs/CUs{', ' + dev.arch if dev.arch else ''}); "
        f"backend ready in {started * 1e3:.1f} ms; size {size}"
    )
    grid_blocks = max(1, dev.multiprocessors * 4)
    cases = _cases(scale, np.random.default_rng(0), grid_blocks)
    results = []
    for k, case in enumerate(cases, 1):
        print(f"\n[{k}/{len(cases)}] {case.name}: {case.what}")
        ok = _run(case, backend, repeat)
        results.append(ok)
        if opts.show_source:
            print(next(iter(case.kernel.specializations.values())).source)
    total = time.perf_counter() - t_start
    passed = sum(results)
    print(f"\n{passed}/{len(results)} kernels match NumPy; demo took {total:.2f} s")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
