"""The kernel suite, part 2: parallel primitives - shared memory, barriers, atomics, block
and warp reductions, a tiled matrix multiply - checked against NumPy on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from kernels_common import device_view, sample, tolerance

import ember

TILE = 16
ATOMIC_DTYPES = ["int32", "uint32", "int64", "uint64", "float32", "float64"]


# ---------------------------------------------------------------- tiled matmul
@ember.kernel
def matmul(a, b, c):
    ta = ember.shared((TILE, TILE), a.dtype)
    tb = ember.shared((TILE, TILE), a.dtype)
    tx, ty = ember.thread_idx.x, ember.thread_idx.y
    row = ember.block_idx.y * TILE + ty
    col = ember.block_idx.x * TILE + tx
    n, k = a.shape
    m = b.shape[1]
    acc = 0.0
    for t in range((k + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        ta[ty, tx] = a[row, ka] if row < n and ka < k else 0
        tb[ty, tx] = b[kb, col] if kb < k and col < m else 0
        ember.barrier()
        for kk in range(TILE):
            acc += ta[ty, kk] * tb[kk, tx]
        ember.barrier()
    if row < n and col < m:
        c[row, col] = acc


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
def test_tiled_matmul_with_shared_memory_and_barriers(backend, dtype, transposed):
    n, k, m = 37, 45, 29
    b_host = sample(dtype, (k, m), 2)
    if transposed:  # b as a transposed (non-contiguous) view
        b_host, db = device_view(np.ascontiguousarray(b_host.T), lambda v: v.T)
    else:
        db = ember.asarray(b_host)
    a_host = sample(dtype, (n, k), 1)
    dc = ember.zeros((n, m), dtype)
    grid = (-(-m // TILE), -(-n // TILE))
    matmul[grid, (TILE, TILE)](ember.asarray(a_host), db, dc)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(dc.to_numpy(), a_host @ b_host, **tol)


# ---------------------------------------------------------------- histograms
@ember.kernel
def histogram(values, hist):
    i = ember.global_id()
    if i < values.shape[0]:
        ember.atomic_add(hist, values[i] % hist.shape[0], 1)


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES)
def test_histogram_with_global_atomics(backend, dtype):
    values = sample("int32", 5000, low=0, high=1000)
    hist = ember.zeros(17, dtype)
    histogram.launch(5000)(ember.asarray(values), hist)
    np.testing.assert_array_equal(hist.to_numpy(), np.bincount(values % 17, minlength=17))


BINS = 32


@ember.kernel
def shared_histogram(values, hist):
    local = ember.shared(BINS, ember.int32)
    t = ember.thread_idx.x
    for b in range(t, BINS, ember.block_dim.x):
        local[b] = 0
    ember.barrier()
    i = ember.global_id()
    if i < values.shape[0]:
        ember.atomic_add(local, values[i] % BINS, 1)
    ember.barrier()
    for b in range(t, BINS, ember.block_dim.x):
        ember.atomic_add(hist, b, local[b])


def test_histogram_in_shared_memory_then_merged(backend):
    values = sample("int32", 3000, 5, low=0, high=10_000)
    hist = ember.zeros(BINS, ember.int64)
    shared_histogram[-(-3000 // 128), 128](ember.asarray(values), hist)
    np.testing.assert_array_equal(hist.to_numpy(), np.bincount(values % BINS, minlength=BINS))


@ember.kernel
def shared_and_global_counts(counts, odd, reps):
    local = ember.shared(1, ember.int32)
    if ember.thread_idx.x == 0:
        local[0] = 0
    ember.barrier()
    seen = 0
    for _ in range(reps):  # each previous value is used: no compiler folds the adds
        ember.atomic_add(local, 0, 1)
        seen += ember.atomic_add(counts, 0, 1) & 1
    odd[ember.global_id()] = seen
    ember.barrier()
    if ember.thread_idx.x == 0:
        ember.atomic_add(counts, 1, local[0])


def test_one_atomic_on_shared_and_on_global_memory(backend):
    """The same atomic (operation and dtype) on a shared and on a global array in one
    kernel is atomic in each space: the cpu dialect once gave both one helper, the shared
    one's plain read-modify-write, and lost global updates between work-groups."""
    counts, odd = ember.zeros(2, ember.int32), ember.zeros(64 * 64, ember.int32)
    shared_and_global_counts[64, 64](counts, odd, 500)
    assert counts.to_numpy().tolist() == [64 * 64 * 500] * 2
    assert int(odd.to_numpy().sum()) == 64 * 64 * 500 // 2  # every previous value once
    source = shared_and_global_counts.inspect(counts, odd, 500, stage="source", dialect="cpu")
    assert "em_atomic_add_i32_shared" in source and "em_atomic_add_i32_global" in source


# ---------------------------------------------------------------- block reduction
BLOCK = 128


@ember.kernel
def block_sum(x, total):
    partial = ember.shared(BLOCK, total.dtype)
    t = ember.thread_idx.x
    i = ember.global_id()
    partial[t] = x[i] if i < x.shape[0] else 0
    ember.barrier()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            partial[t] += partial[t + step]
        ember.barrier()
        step //= 2
    if t == 0:
        ember.atomic_add(total, 0, partial[0])


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_block_reduction_in_shared_memory(backend, dtype):
    x = sample(dtype, 10_000, 3)
    total = ember.zeros(1, dtype)
    block_sum[-(-10_000 // BLOCK), BLOCK](ember.asarray(x), total)
    tol = {"rtol": 1e-4} if dtype == "float32" else tolerance(dtype)
    np.testing.assert_allclose(total.to_numpy()[0], x.sum(), **tol)


@ember.kernel
def block_reverse(x, out):
    buf = ember.shared(BLOCK, x.dtype)
    t = ember.thread_idx.x
    base = ember.block_idx.x * BLOCK
    buf[t] = x[base + t]
    ember.barrier()
    out[base + t] = buf[BLOCK - 1 - t]


def test_barrier_orders_shared_memory_writes(backend):
    x = sample("float64", 4 * BLOCK)
    out = ember.zeros(4 * BLOCK, ember.float64)
    block_reverse[4, BLOCK](ember.asarray(x), out)
    np.testing.assert_array_equal(out.to_numpy(), x.reshape(4, BLOCK)[:, ::-1].ravel())


# ---------------------------------------------------------------- every atomic operation
@ember.kernel
def atomics_all(values, acc, olds):
    i = ember.global_id()
    if i < values.shape[0]:
        v = values[i]
        ember.atomic_add(acc, 0, v)
        ember.atomic_sub(acc, 1, v)
        ember.atomic_min(acc, 2, v)
        ember.atomic_max(acc, 3, v)
        olds[i] = ember.atomic_exchange(acc, (4 + i % 2,), v)


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES)
def test_atomic_add_sub_min_max_exchange(backend, dtype):
    values = sample(dtype, 1000, 7, low=1, high=100)
    start = np.array([0, 1_000_000, 1000, 0, 0, 0], dtype)
    acc = ember.asarray(start)
    olds = ember.zeros(1000, dtype)
    atomics_all.launch(1000)(ember.asarray(values), acc, olds)
    got = acc.to_numpy()
    tol = tolerance(dtype)
    np.testing.assert_allclose(got[0], values.sum(dtype=dtype), **tol)
    np.testing.assert_allclose(got[1], start[1] - values.sum(dtype=dtype), **tol)
    assert got[2] == values.min() and got[3] == values.max()
    # exchange: the old values plus the final ones are exactly what was put in
    seen = np.sort(np.concatenate([olds.to_numpy(), got[4:6]]))
    np.testing.assert_array_equal(seen, np.sort(np.concatenate([values, [0, 0]])))


@ember.kernel
def atomics_bits(values, acc):
    i = ember.global_id()
    if i < values.shape[0]:
        ember.atomic_and(acc, 0, values[i])
        ember.atomic_or(acc, 1, values[i])
        ember.atomic_xor(acc, 2, values[i])


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
def test_atomic_and_or_xor(backend, dtype):
    values = sample(dtype, 512, 9, low=0, high=1 << 30)
    acc = ember.asarray(np.array([-1 if dtype[0] == "i" else np.iinfo(dtype).max, 0, 0], dtype))
    atomics_bits.launch(512)(ember.asarray(values), acc)
    expected = [
        np.bitwise_and.reduce(values),
        np.bitwise_or.reduce(values),
        np.bitwise_xor.reduce(values),
    ]
    np.testing.assert_array_equal(acc.to_numpy(), np.array(expected, dtype))


@ember.kernel
def cas_counter(counter, tickets):
    i = ember.global_id()
    if i < tickets.shape[0]:
        done = False
        while not done:
            old = counter[0]
            if ember.atomic_cas(counter, 0, old, old + 1) == old:
                tickets[i] = old
                done = True


@pytest.mark.parametrize("dtype", ["int32", "uint64", "float32", "float64"])
def test_compare_and_swap_hands_out_every_ticket_once(backend, dtype):
    counter = ember.zeros(1, dtype)
    tickets = ember.zeros(300, dtype)
    cas_counter.launch(300)(counter, tickets)
    assert counter.to_numpy()[0] == 300
    np.testing.assert_array_equal(np.sort(tickets.to_numpy()), np.arange(300, dtype=dtype))


@ember.kernel
def atomic_returns_old(counter, out):
    i = ember.global_id()
    if i < out.shape[0]:
        out[i] = ember.atomic_add(counter, 0, 1)


def test_atomic_add_returns_the_previous_value(backend):
    counter, out = ember.zeros(1, ember.int32), ember.zeros(500, ember.int32)
    atomic_returns_old.launch(500)(counter, out)
    np.testing.assert_array_equal(np.sort(out.to_numpy()), np.arange(500))


# ---------------------------------------------------------------- warp shuffles (CUDA)
@ember.kernel
def warp_reduce(x, sums, maxes, trees):
    i = ember.global_id()
    v = x[i]
    lane = ember.lane_id()
    s = ember.warp_sum(v)
    m = ember.warp_max(v)
    t = v
    offset = 16
    while offset > 0:
        t += ember.shfl_down(t, offset)
        offset //= 2
    t = ember.shfl(t, 0)
    t = ember.shfl_xor(t, 1)
    if lane == 0:
        w = i // 32
        sums[w] = s
        maxes[w] = m
        trees[w] = t


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_warp_shuffles_and_reductions(backend, dtype):
    x = sample(dtype, 256, 4)
    outs = [ember.zeros(8, dtype) for _ in range(3)]
    warp_reduce[8, 32](ember.asarray(x), *outs)  # emulated where there are no sub-groups
    per_warp = x.reshape(8, 32)
    tol = {"rtol": 1e-5} if dtype == "float32" else tolerance(dtype)
    np.testing.assert_allclose(outs[0].to_numpy(), per_warp.sum(axis=1), **tol)
    np.testing.assert_array_equal(outs[1].to_numpy(), per_warp.max(axis=1))
    np.testing.assert_allclose(outs[2].to_numpy(), per_warp.sum(axis=1), **tol)


# ---------------------------------------------------------------- match_any_sync
@ember.kernel
def peers_of(x, out):
    i = ember.global_id()
    out[i] = ember.match_any_sync(x[i])


def peer_masks(h: np.ndarray, block: int) -> np.ndarray:
    """CUDA's __match_any_sync: per lane, the lanes of its warp (32 consecutive threads of
    its block; the last warp of a block may be partial) holding the same bits."""
    bits = h.view(f"u{h.itemsize}") if h.dtype.kind == "f" else h
    out = np.zeros(h.size, np.uint32)
    for i in range(h.size):
        first = i - i % block + (i % block) // 32 * 32
        stop = min(first + 32, i - i % block + block)
        for j in range(first, stop):
            if bits[j] == bits[i]:
                out[i] |= np.uint32(1 << (j - first))
    return out


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64", "uint64", "float32", "float64"])
def test_match_any_sync_gives_the_lanes_with_equal_bits(backend, dtype):
    h = np.random.default_rng(3).integers(0, 4, 96).astype(dtype)
    if h.dtype.kind == "f":  # bits, not values: -0.0 is not 0.0, a NaN matches its twin
        h[[1, 2, 5, 6]] = [-0.0, 0.0, np.nan, np.nan]
    out = ember.zeros(96, ember.uint32)
    peers_of[2, 48](ember.asarray(h), out)  # a partial second warp in each block
    np.testing.assert_array_equal(out.to_numpy(), peer_masks(h, 48))


# NVIDIA Developer Blog, "Using CUDA Warp-Level Primitives": atomics aggregated per
# address, the lanes with the same target found by __match_any_sync and one of them adding
# for all
@ember.kernel
def aggregated_histogram(keys, bins, slots):
    i = ember.global_id()
    if i < keys.shape[0]:
        b = keys[i]
        peers = ember.match_any_sync(ember.activemask(), b)
        leader = ember.ffs(peers) - 1
        lane = ember.lane_id()
        first = 0
        if lane == leader:
            first = ember.atomic_add(bins, b, ember.popc(peers))
        first = ember.shfl_sync(peers, first, leader)
        slots[i] = first + ember.popc(peers & ((ember.uint32(1) << lane) - 1))


def test_match_any_sync_aggregates_atomics_per_bin(backend):
    keys = np.random.default_rng(4).integers(0, 7, 1000).astype(np.int32)
    bins = ember.zeros(7, ember.int32)
    slots = ember.zeros(1000, ember.int32)
    aggregated_histogram[8, 128](ember.asarray(keys), bins, slots)
    np.testing.assert_array_equal(bins.to_numpy(), np.bincount(keys, minlength=7))
    got = slots.to_numpy()
    for b in range(7):  # each key got its own slot 0..count-1 within its bin
        np.testing.assert_array_equal(np.sort(got[keys == b]), np.arange((keys == b).sum()))


@ember.kernel
def votes_in_a_branch(out):
    i = ember.global_id()
    lane = ember.lane_id()
    everyone = ember.ballot(True)  # (all lanes: their scratch entries were set before)
    if lane < 16:  # only half the warp: the others take no part, as on CUDA
        m = ember.activemask()
        out[i * 5] = ember.ballot(m, True)
        out[i * 5 + 1] = 1 if ember.all_sync(m, lane < 8) else 0
        out[i * 5 + 2] = 1 if ember.all_sync(m, lane < 16) else 0
        out[i * 5 + 3] = 1 if ember.any_sync(m, lane >= 16) else 0
        out[i * 5 + 4] = 1 if ember.any_sync(m, lane == 3) else 0
    elif everyone == 0:
        out[i * 5] = 7  # never: every lane voted


def test_votes_in_a_branch_count_only_the_lanes_that_take_it(backend):
    out = ember.zeros(64 * 5, ember.uint32)
    votes_in_a_branch[2, 32](out)
    got = out.to_numpy().reshape(64, 5)
    lanes = np.arange(64) % 32
    np.testing.assert_array_equal(got[lanes < 16], np.tile([0xFFFF, 0, 1, 0, 1], (32, 1)))
    np.testing.assert_array_equal(got[lanes >= 16], 0)


def test_match_any_sync_refuses_16_bit_floats(backend):
    @ember.kernel
    def bad(x, out):
        i = ember.global_id()
        out[i] = ember.match_any_sync(x[i])

    with pytest.raises(ember.KernelTypeError, match="32- or 64-bit"):
        bad[1, 32](ember.zeros(32, ember.float16), ember.zeros(32, ember.uint32))


# ---------------------------------------------------------------- float atomics in shared memory
@ember.kernel
def shared_float_sum(x, out):
    acc = ember.shared(1, x.dtype)
    t = ember.thread_idx.x
    if t == 0:
        acc[0] = 0
    ember.barrier()
    i = ember.global_id()
    if i < x.shape[0]:
        ember.atomic_add(acc, 0, x[i])
        ember.atomic_max(acc, 0, -1e30)  # keeps the larger current value
    ember.barrier()
    if t == 0:
        out[ember.block_idx.x] = acc[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_atomics_on_shared_memory(backend, dtype):
    x = sample(dtype, 4 * 64, 8, low=0, high=1)
    out = ember.zeros(4, dtype)
    shared_float_sum[4, 64](ember.asarray(x), out)
    np.testing.assert_allclose(out.to_numpy(), x.reshape(4, 64).sum(axis=1), rtol=1e-5)


def test_cubin_info_on_the_device(backend):
    if backend.dialect != "cuda":
        pytest.skip("cubin-info is for CUDA")
    x = ember.zeros((32, 32), ember.float32)
    info = matmul.inspect(x, x, x, stage="cubin-info")
    assert info["bytes"] > 1000 and info["num_regs"] > 0
    assert info["shared_size_bytes"] == 2 * TILE * TILE * 4


@ember.kernel
def load_every(src, out):
    i = ember.global_id()
    buf = ember.shared(64, src.dtype)
    t = ember.thread_idx.x
    if i < out.shape[0]:
        buf[t] = src[i]
    ember.barrier()
    if i < out.shape[0]:
        # from global memory, then from this block's shared copy (the neighbour's slot)
        out[i] = ember.atomic_load(src, i) + ember.atomic_load(buf, (t + 1) % 64)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "float32", "float64"])
def test_atomic_load_reads_global_and_shared_elements(backend, dtype):
    host = (np.arange(128) % 50).astype(dtype)
    out = ember.zeros(128, dtype)
    load_every[2, 64](ember.asarray(host), out)
    neighbour = host.reshape(2, 64)[:, (np.arange(64) + 1) % 64].ravel()
    np.testing.assert_array_equal(out.to_numpy(), host + neighbour)


def test_atomic_load_refuses_float16(backend):
    @ember.kernel
    def half_load(src, out):
        out[0] = ember.atomic_load(src, 0)

    x = ember.zeros(4, "float16")
    with pytest.raises(ember.KernelTypeError, match="atomic_load.*float16"):
        half_load[1, 1](x, x)
