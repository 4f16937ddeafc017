"""The cpu backend: kernels the work-group lowering must get right (barriers in loops and
branches, values across barriers, early returns, sub-groups, several block shapes), its
runtime (helper threads, raw C kernels, bundles' portable builds, float16 by bits, printing,
deferred frees) - run and compared with NumPy.

Kernels valid on every backend run on each (the ``backend`` fixture); those only the cpu
backend runs (returns before a barrier are undefined on GPUs; sub-groups are missing on
PoCL) skip elsewhere.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

B = 64


@pytest.fixture
def cpu(backend):
    if backend.name != "cpu":
        pytest.skip("cpu backend only")
    return backend


def rand(n, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


# ---------------------------------------------------------------------- barriers


@ember.kernel
def tile_transpose(a, out):
    tile = ember.shared((16, 17), a.dtype)
    x, y = ember.thread_idx.x, ember.thread_idx.y
    r, c = ember.block_idx.y * 16 + y, ember.block_idx.x * 16 + x
    if r < a.shape[0] and c < a.shape[1]:
        tile[y, x] = a[r, c]
    ember.barrier()
    r2, c2 = ember.block_idx.x * 16 + y, ember.block_idx.y * 16 + x
    if r2 < out.shape[0] and c2 < out.shape[1]:
        out[r2, c2] = tile[x, y]


def test_two_dimensional_blocks_with_a_barrier(backend):
    a = rand(37 * 45).reshape(37, 45)
    out = ember.zeros((45, 37), ember.float32)
    tile_transpose[(3, 3), (16, 16)](ember.asarray(a), out)
    np.testing.assert_array_equal(out.to_numpy(), a.T)


@ember.kernel
def cube_sum(x, out):
    buf = ember.shared(64, ember.float32)
    t = (ember.thread_idx.z * 4 + ember.thread_idx.y) * 4 + ember.thread_idx.x
    buf[t] = x[ember.block_idx.x * 64 + t]
    ember.barrier()
    step = 32
    while step > 0:
        if t < step:
            buf[t] += buf[t + step]
        ember.barrier()
        step //= 2
    if t == 0:
        out[ember.block_idx.x] = buf[0]


def test_three_dimensional_blocks_reduce(backend):
    x = rand(5 * 64, 1)
    out = ember.zeros(5, ember.float32)
    cube_sum[5, (4, 4, 4)](ember.asarray(x), out)
    np.testing.assert_allclose(out.to_numpy(), x.reshape(5, 64).sum(1), rtol=1e-5)


@ember.kernel
def nested_loops(x, out, rounds):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    acc = x[t]
    for i in range(rounds):
        for j in range(2):
            buf[t] = acc
            ember.barrier()
            acc = buf[(t + 1 + i + j) % B] + 1.0
            ember.barrier()
        if i == 2:  # uniform: every work-item breaks together
            break
    out[t] = acc


def _nested_expected(x, rounds):
    acc = x.copy()
    for i in range(rounds):
        for j in range(2):
            acc = np.roll(acc, -(1 + i + j)) + 1
        if i == 2:
            break
    return acc


@pytest.mark.parametrize("rounds", [1, 5])
def test_barriers_in_nested_loops_with_a_uniform_break(backend, rounds):
    x = np.arange(B, dtype=np.float32)
    out = ember.zeros(B, ember.float32)
    nested_loops[1, B](ember.asarray(x), out, rounds)
    np.testing.assert_array_equal(out.to_numpy(), _nested_expected(x, rounds))


@ember.kernel
def odd_blocks_only(x, out):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    i = ember.global_id()
    v = x[i]
    if ember.block_idx.x % 2 == 1:  # uniform within a block
        buf[t] = v
        ember.barrier()
        v = buf[B - 1 - t]
    out[i] = v


def test_barrier_in_a_branch_uniform_per_block(backend):
    x = np.arange(4 * B, dtype=np.float32)
    out = ember.zeros(4 * B, ember.float32)
    odd_blocks_only[4, B](ember.asarray(x), out)
    want = x.reshape(4, B).copy()
    want[1::2] = want[1::2, ::-1]
    np.testing.assert_array_equal(out.to_numpy(), want.ravel())


@ember.kernel
def returns_early(x, out, n):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    if t >= n:
        return
    buf[t] = x[t]
    ember.barrier()
    out[t] = buf[n - 1 - t]


def test_work_items_that_returned_stay_out_of_later_regions(cpu):
    x = np.arange(B, dtype=np.float32) + 1
    out = ember.zeros(B, ember.float32)
    returns_early[1, B](ember.asarray(x), out, 10)
    want = np.zeros(B, np.float32)
    want[:10] = x[:10][::-1]
    np.testing.assert_array_equal(out.to_numpy(), want)


def index_of():
    return ember.global_id()


@ember.kernel
def via_function(x, scale):
    i = index_of()
    scale = scale + 1.0  # an assigned parameter
    if i < x.shape[0]:
        x[i] = i * scale


def test_device_functions_read_the_work_item(backend):
    x = ember.zeros(300, ember.float32)
    via_function[3, 128](x, np.float32(1))
    np.testing.assert_array_equal(x.to_numpy(), np.arange(300, dtype=np.float32) * 2)


def strided_pair_sum(x, i, n):
    """A looping device function with its own per-thread array (the cpu backend inlines
    looping functions: the array must come along, renamed apart per call)."""
    v = ember.local((2,), ember.float32)
    s = ember.float32(0)
    while i < n:
        for k in ember.static_range(2):
            v[k] = x[i] * (k + 1)
        s += v[0] + v[1]
        i += ember.block_dim.x
    return s


@ember.kernel
def reversed_pair_sums(x, out):
    sh = ember.shared((64,), ember.float32)
    t = ember.thread_idx.x
    a = ember.float32(0)
    if t < x.shape[0]:
        a = strided_pair_sum(x, t, x.shape[0])
    sh[t] = a + strided_pair_sum(x, t, x.shape[0] // 2)
    ember.barrier()
    out[t] = sh[ember.block_dim.x - 1 - t]


def test_looping_device_functions_with_local_arrays_across_a_barrier(backend):
    x = rand(200, 3)
    out = ember.zeros(64, ember.float32)
    reversed_pair_sums[1, 64](ember.asarray(x), out)
    t = np.arange(64)
    want = np.array([3 * x[k::64].sum() + 3 * x[:100][k::64].sum() for k in t], np.float32)
    np.testing.assert_allclose(out.to_numpy(), want[::-1], rtol=1e-5)


# ---------------------------------------------------------------------- sub-groups


@ember.kernel
def block_reduce_by_warps(x, out):
    partial = ember.shared(32, ember.float32)
    t = ember.thread_idx.x
    lane, warp = t % 32, t // 32
    s = ember.warp_sum(x[ember.global_id()])
    if lane == 0:
        partial[warp] = s
    ember.barrier()
    if warp == 0:  # uniform per warp: the cpu backend predicates it
        v = partial[lane] if lane < ember.block_dim.x // 32 else ember.float32(0)
        v = ember.warp_sum(v)
        if lane == 0:
            out[ember.block_idx.x] = v


def test_block_reduction_through_warp_sums(cpu):
    x = rand(3 * 256, 2)
    out = ember.zeros(3, ember.float32)
    block_reduce_by_warps[3, 256](ember.asarray(x), out)
    np.testing.assert_allclose(out.to_numpy(), x.reshape(3, 256).sum(1), rtol=1e-5)


@ember.kernel
def shuffles(x, down, up, xor, direct):
    i = ember.global_id()
    v = x[i]
    down[i] = ember.shfl_down(v, 3)
    up[i] = ember.shfl_up(v, 5)
    xor[i] = ember.shfl_xor(v, 6)
    direct[i] = ember.shfl(v, 7)


def test_shuffles_at_the_edges_of_a_partial_sub_group(cpu):
    n = 48  # one full sub-group of 32 and one of 16
    x = np.arange(n, dtype=np.int32)
    outs = [ember.zeros(n, ember.int32) for _ in range(4)]
    shuffles[1, n](ember.asarray(x), *outs)
    lane, base = x % 32, x - x % 32
    size = np.where(base == 0, 32, 16)
    down = np.where(lane + 3 < size, x + 3, x)
    up = np.where(lane - 5 >= 0, x - 5, x)
    xor = np.where((lane ^ 6) < size, base + (lane ^ 6), x)
    direct = np.where(7 < size, base + 7, x)
    for got, want in zip(outs, (down, up, xor, direct), strict=True):
        np.testing.assert_array_equal(got.to_numpy(), want)


@ember.kernel
def two_shuffles(x, y, out):
    i = ember.global_id()
    a = ember.shfl_xor(x[i], 1)
    b = ember.shfl_xor(y[i], 1)  # its operand is stored where a's lanes are being read
    out[i] = a - 2 * b


@ember.kernel
def first_warp_tree(x, out):
    t = ember.thread_idx.x
    v = x[ember.global_id()]
    k = 1
    while k < 32:  # every lane gets its sub-group's sum
        v += ember.shfl_xor(v, k)
        k *= 2
    if t < 32:  # k again, now only in the first sub-group: a variable of its own
        k = 16
        w = v * (t + 1)
        while k > 0:
            w += ember.shfl_down(w, k)
            k //= 2
        if t == 0:
            out[ember.block_idx.x] = w


def test_consecutive_shuffles_and_loops_in_a_sub_group_branch(cpu):
    x, y = np.arange(64, dtype=np.int32), np.arange(64, dtype=np.int32) * 7
    out = ember.zeros(64, ember.int32)
    two_shuffles[1, 64](ember.asarray(x), ember.asarray(y), out)
    pair = np.arange(64) ^ 1
    np.testing.assert_array_equal(out.to_numpy(), x[pair] - 2 * y[pair])
    out = ember.zeros(2, ember.int32)
    x = np.arange(128, dtype=np.int32)
    first_warp_tree[2, 64](ember.asarray(x), out)
    sums = x.reshape(2, 2, 32).sum(axis=2)[:, 0]
    np.testing.assert_array_equal(out.to_numpy(), sums * np.arange(1, 33).sum())


# ---------------------------------------------------------------------- runtime


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


def test_large_launches_share_work_groups_with_helper_threads(cpu):
    n = 1 << 21
    x, y = rand(n, 3), rand(n, 4)
    dx, dy = ember.asarray(x), ember.asarray(y)
    for _ in range(3):  # the first launch measures, the next ones use the helpers
        axpy[(n + 255) // 256, 256](np.float32(2), dx, dy)
        y = 2 * x + y
    np.testing.assert_allclose(dy.to_numpy(), y, rtol=1e-5)


@ember.kernel
def group_ids(out):
    g = (ember.block_idx.z * ember.grid_dim.y + ember.block_idx.y) * ember.grid_dim.x
    g += ember.block_idx.x
    out[g * ember.block_dim.x + ember.thread_idx.x] = (
        ember.block_idx.x + 100 * ember.block_idx.y + 10000 * ember.block_idx.z
    )


def test_chunks_of_a_three_dimensional_grid_start_anywhere(backend):
    # large enough to be shared with helper threads: their chunks of groups (here 315 //
    # (4 * threads)) start in the middle of rows and planes of the grid, and the entry
    # counts the group index on from there
    grid, block = (7, 5, 9), 256
    out = ember.zeros(7 * 5 * 9 * block, ember.int64)
    for _ in range(2):  # the first launch measures, the next one uses what it measured
        group_ids[grid, block](out)
        z, y, x = np.meshgrid(*(np.arange(n) for n in grid[::-1]), indexing="ij")
        want = np.repeat((x + 100 * y + 10000 * z).ravel(), block)
        np.testing.assert_array_equal(out.to_numpy(), want)


def test_raw_kernel_with_a_barrier_is_refused(cpu):
    src = "EMBER_KERNEL void k(float* y) {\n  y[0] = 1;\n  barrier(0);\n}"
    k = ember.RawKernel(src, "k")
    with pytest.raises(ember.CompileError, match=r"calls barrier\(\) \(line 3\)"):
        k[1, 1](ember.zeros(1, ember.float32))


def test_a_portable_baseline_build_loads_and_runs(cpu):
    """What a bundle carries for other CPUs: a -march=x86-64-v2 (armv8-a) build."""
    from ember.backends.cpu import module, toolchain

    x = ember.asarray(np.arange(100, dtype=np.float32))
    y = ember.zeros(100, ember.float32)
    source = axpy.inspect(np.float32(3), x, y, stage="source")
    binary = cpu.portable_binary(cpu.compile(source, "axpy"), source, "axpy")
    builds = module.unpack(binary)
    assert [m["march"] for m, _ in builds] == ["native", toolchain.baseline()]
    baseline = module.pack([b for b in builds if b[0]["cpu"] is None])  # as on another CPU
    fn = cpu.load_module(baseline).function("axpy", ("float32", "ptr", "int64", "ptr", "int64"))
    fn.launch((1, 1, 1), (128, 1, 1), (np.float32(3), x.buffer.handle, 100, y.buffer.handle, 100))
    np.testing.assert_array_equal(y.to_numpy(), 3 * np.arange(100, dtype=np.float32))


def test_bundles_record_the_portable_build(cpu):
    from ember.backends.cpu import module, toolchain

    k = ember.kernel(axpy.py_func)  # a new kernel: compiled inside the block
    x = ember.zeros(64, ember.float32)
    with ember.cache.record() as rec:
        k[1, 64](np.float32(1), x, x)
    (entry,) = rec.entries.values()
    marches = [m["march"] for m, _ in module.unpack(entry.binary)]
    assert marches == ["native", toolchain.baseline()]
    assert len(module.unpack(k.specialize(np.float32(1), x, x).binary)) == 1  # not locally


def test_a_native_build_for_another_cpu_is_not_loaded(cpu, monkeypatch):
    from ember.backends.cpu import module

    native = ({"march": "native", "cpu": "x86_64-elsewhere", "family": "x86_64"}, b"")
    with pytest.raises(ember.LaunchError, match="compiled for another CPU"):
        module.choose([native])
    baseline = ({"march": "x86-64-v2", "cpu": None, "family": module.toolchain.family()}, b"")
    assert module.choose([native, baseline]) == baseline


@ember.kernel
def to_half(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        out[i] = out.dtype(x[i])


def test_float16_conversions_round_like_numpy(cpu):
    bits = np.arange(1 << 16, dtype=np.uint16)
    halves = bits.view(np.float16)
    finite = halves[np.isfinite(halves)]
    # every half value (exact in float32), the midpoints between neighbours (ties go to
    # even), values just off them, and values far outside half's range
    mids = (finite[:-1].astype(np.float64) + finite[1:].astype(np.float64)) / 2
    extra = np.array([1e-10, 5.9604645e-08, 2.9802322e-08, 65504, 65519, 65520, 1e9, np.inf])
    x = np.concatenate([finite.astype(np.float32), mids.astype(np.float32),
                        np.nextafter(mids.astype(np.float32), np.float32(0)), extra, -extra,
                        [np.nan]]).astype(np.float32)  # fmt: skip
    out = ember.zeros(x.size, ember.float16)
    to_half.launch(x.size)(ember.asarray(x), out)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.to_numpy(), x.astype(np.float16))
    back = ember.zeros(finite.size, ember.float32)
    to_half.launch(finite.size)(ember.asarray(finite), back)
    np.testing.assert_array_equal(back.to_numpy(), finite.astype(np.float32))


@ember.kernel
def say(x):
    i = ember.global_id()
    if i < 2:
        print("item", i, "has", x[i], i == 1)


def test_print_from_a_cpu_kernel(cpu, capfd):
    with ember.config.override(diagnostics="off"):
        say[1, 4](ember.asarray(np.array([0.5, 1e-7], np.float32)))
        ember.synchronize()
    out = capfd.readouterr().out
    assert "item 0 has 0.5 False" in out and "item 1 has 1e-07 True" in out


def test_freed_memory_outlives_the_queued_work(cpu):
    from ember.backends.cpu.memory import Reclaimer

    class Busy:
        queued, done = 3, 1

    stream = Busy()
    reclaimer = Reclaimer([stream])
    owner = np.ones(16)
    reclaimer.release(owner)
    assert reclaimer._waiting and reclaimer._waiting[0][0] is owner  # still held
    stream.done = 3
    reclaimer.sweep()
    assert not reclaimer._waiting


def test_numpy_sees_cpu_arrays_without_a_copy(cpu):
    x = ember.asarray(np.arange(12, dtype=np.float32)).reshape(3, 4)
    view = np.from_dlpack(x[1])
    assert view.__array_interface__["data"][0] == x.buffer.handle + 4 * 4
    x[1] = ember.asarray(np.full(4, 7, np.float32))
    ember.synchronize()
    np.testing.assert_array_equal(view, np.full(4, 7, np.float32))


def test_resources_of_a_kernel_with_barriers(cpu):
    res = cube_sum.inspect(ember.zeros(64, ember.float32), ember.zeros(1, ember.float32),
                           stage="resources")  # fmt: skip
    assert res["shared_bytes"] == 64 * 4 and res["max_threads_per_block"] == 1024
    assert "local_bytes" not in res  # per-work-item arrays are not spills on a CPU


@ember.kernel
def grid_stride_sum(x, out):
    acc = ember.float32(0)
    i = ember.global_id()
    while i < x.shape[0]:  # a different trip count per work-item: run in sweeps
        acc += x[i]
        i += ember.global_size()
    ember.atomic_add(out, 0, acc)


def test_grid_stride_loops_in_lockstep(backend):
    x = np.arange(1000, dtype=np.float32)
    out = ember.zeros(1, ember.float32)
    grid_stride_sum[3, 64](ember.asarray(x), out)
    np.testing.assert_allclose(out.to_numpy()[0], x.sum(), rtol=1e-5)


def test_the_compiler_version_comes_from_the_wheel_folder(monkeypatch):
    """The cache keys' compiler version is read from the ziglang wheel's dist-info folder
    (no importlib.metadata on the first kernel's path); with no single such folder it
    falls back to importlib.metadata, which must agree."""
    pytest.importorskip("ziglang")
    import os
    from importlib import metadata

    from ember.backends.cpu import toolchain

    monkeypatch.setattr(toolchain, "zig_version", toolchain.zig_version.__wrapped__)
    installed = metadata.version("ziglang")

    def slow(name):
        raise AssertionError("importlib.metadata was asked")

    monkeypatch.setattr(metadata, "version", slow)
    assert toolchain.zig_version() == installed
    monkeypatch.undo()
    monkeypatch.setattr(toolchain, "zig_version", toolchain.zig_version.__wrapped__)
    listdir = os.listdir

    def twice(path):  # a stale dist-info folder left beside the real one
        names = listdir(path)
        return names + ["ziglang-0.0.1.dist-info"] if "ziglang" in names else names

    monkeypatch.setattr(os, "listdir", twice)
    assert toolchain.zig_version() == installed
    monkeypatch.setattr(metadata, "version", lambda name: "from-metadata")
    assert toolchain.zig_version() == "from-metadata"  # the fallback was taken
