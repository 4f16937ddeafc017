"""Real kernels from peer projects' examples and tests (``real_kernels.py``, each citing
its origin), run on every available backend and checked against NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import real_kernels as rk

import ember

RNG = np.random.default_rng(14)


def _uniform(n, lo=-1.0, hi=1.0, dtype=np.float32):
    return RNG.uniform(lo, hi, n).astype(dtype)


def close32(actual, expected, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# ======================================================================= elementwise
def test_vecadd(backend):
    a, b = _uniform(1000), _uniform(1000)
    c = ember.zeros(1000, ember.float32)
    rk.vecadd[(1000 + 127) // 128, 128](ember.asarray(a), ember.asarray(b), c)
    np.testing.assert_array_equal(c.to_numpy(), a + b)


def test_saxpy_grid_stride(backend):
    x, y = _uniform(5000), _uniform(5000)
    dy = ember.asarray(y)
    rk.saxpy[4, 64](5000, np.float32(2.5), ember.asarray(x), dy)  # far fewer threads than n
    close32(dy.to_numpy(), np.float32(2.5) * x + y)


def test_llmc_gelu_and_residual(backend):
    x, r = _uniform(3000, -4, 4), _uniform(3000)
    out = ember.zeros(3000, ember.float32)
    rk.gelu_forward[24, 128](out, ember.asarray(x), 3000)
    x64 = x.astype(np.float64)
    gelu = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    close32(out.to_numpy(), gelu, rtol=1e-5, atol=1e-6)
    res = ember.zeros(3000, ember.float32)
    rk.residual_forward[24, 128](res, out, ember.asarray(r), 3000)
    close32(res.to_numpy(), out.to_numpy() + r)


def test_llmc_encoder_forward_with_row_views(backend):
    B, T, C, V = 2, 5, 24, 11
    inp = RNG.integers(0, V, (B, T)).astype(np.int32)
    wte, wpe = _uniform((V, C)), _uniform((T, C))
    out = ember.zeros((B, T, C), ember.float32)
    n = B * T * C
    rk.encoder_forward[(n + 63) // 64, 64](
        out, ember.asarray(inp), ember.asarray(wte), ember.asarray(wpe), B, T, C
    )
    np.testing.assert_array_equal(out.to_numpy(), wte[inp] + wpe[None, :, :])


def test_llmc_adamw(backend):
    n = 777
    p, g, m, v = _uniform(n), _uniform(n), _uniform(n, 0, 0.1), _uniform(n, 0, 0.1)
    lr, b1, b2, eps, wd, t = 1e-3, 0.9, 0.999, 1e-8, 0.01, 3
    b1c, b2c = 1 - b1**t, 1 - b2**t
    dp, dm, dv = ember.asarray(p), ember.asarray(m), ember.asarray(v)
    f = np.float32
    rk.adamw[7, 128](dp, ember.asarray(g), dm, dv, n, f(lr), f(b1), f(b2), f(b1c), f(b2c),
                     f(eps), f(wd))  # fmt: skip
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    p2 = p - lr * ((m2 / b1c) / (np.sqrt(v2 / b2c) + eps) + wd * p)
    close32(dm.to_numpy(), m2, rtol=1e-5)
    close32(dv.to_numpy(), v2, rtol=1e-5)
    close32(dp.to_numpy(), p2, rtol=1e-5, atol=1e-6)


def _cnd(d):
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    inner = 1.781477937 + k * (-1.821255978 + k * 1.330274429)
    poly = k * (0.31938153 + k * (-0.356563782 + k * inner))
    c = 0.39894228040143267793994605993438 * np.exp(-0.5 * d * d) * poly
    return np.where(d > 0, 1.0 - c, c)


def test_cuda_samples_black_scholes(backend):
    n = 4000
    s, x, t = _uniform(n, 5, 30), _uniform(n, 1, 100), _uniform(n, 0.25, 10)
    r, vol = 0.02, 0.30
    call, put = ember.zeros(n, ember.float32), ember.zeros(n, ember.float32)
    rk.black_scholes[8, 128](call, put, ember.asarray(s), ember.asarray(x), ember.asarray(t),
                             np.float32(r), np.float32(vol), n)  # fmt: skip
    s64, x64, t64 = (a.astype(np.float64) for a in (s, x, t))
    d1 = (np.log(s64 / x64) + (r + 0.5 * vol * vol) * t64) / (vol * np.sqrt(t64))
    d2 = d1 - vol * np.sqrt(t64)
    e = np.exp(-r * t64)
    np.testing.assert_allclose(call.to_numpy(), s64 * _cnd(d1) - x64 * e * _cnd(d2), atol=2e-3)
    np.testing.assert_allclose(
        put.to_numpy(), x64 * e * (1 - _cnd(d2)) - s64 * (1 - _cnd(d1)), atol=2e-3
    )


def test_numba_mandelbrot(backend):
    h, w, iters = 24, 40, 30
    image = ember.zeros((h, w), ember.uint8)
    rk.mandel_kernel[(2, 2), (8, 8)](-2.0, 1.0, -1.0, 1.0, image, iters)
    expected = np.zeros((h, w), np.uint8)
    px, py = np.float32(3.0 / w), np.float32(2.0 / h)
    for yy in range(h):
        for xx in range(w):
            c_re, c_im = np.float32(-2.0 + xx * px), np.float32(-1.0 + yy * py)
            z_re = z_im = np.float32(0.0)
            count = iters
            for i in range(iters):
                z_re, z_im = z_re * z_re - z_im * z_im + c_re, np.float32(2) * z_re * z_im + c_im
                if z_re * z_re + z_im * z_im >= 4:
                    count = i
                    break
            expected[yy, xx] = count
    got = image.to_numpy()
    assert (got != expected).mean() < 0.02  # chaotic pixels may differ by FMA contraction
    assert np.all(np.abs(got.astype(int) - expected) <= iters)


# ======================================================================= shared memory
def test_numba_fast_matmul(backend):
    # as in the original, the loop runs over gridDim.x tiles: K == gridDim.x * TPB
    a, b = _uniform((40, 48)), _uniform((48, 40))
    c = ember.zeros((40, 40), ember.float32)
    grid = (-(-40 // rk.TPB), -(-40 // rk.TPB))
    rk.fast_matmul[grid, (rk.TPB, rk.TPB)](ember.asarray(a), ember.asarray(b), c)
    close32(c.to_numpy(), a @ b, rtol=1e-4, atol=1e-5)


def test_cuda_samples_transpose_no_bank_conflicts(backend):
    h, w = 64, 96
    src = _uniform(h * w)
    dst = ember.zeros(h * w, ember.float32)
    rk.transpose_no_bank_conflicts[(w // 32, h // 32), (32, 8)](dst, ember.asarray(src), w, h)
    np.testing.assert_array_equal(dst.to_numpy().reshape(w, h), src.reshape(h, w).T)


def test_shared_atomics_histogram(backend):
    data = RNG.integers(0, 1000, 10_000).astype(np.int32)
    out = ember.zeros(rk.NUM_BINS, ember.uint32)
    rk.histogram_smem_atomics[6, 128](ember.asarray(data), 10_000, out)
    expected = np.bincount(data % rk.NUM_BINS, minlength=rk.NUM_BINS)
    np.testing.assert_array_equal(out.to_numpy(), expected)


@pytest.mark.parametrize("kernel", [rk.reduce3, rk.reduce_shfl], ids=["reduce3", "shfl"])
def test_cuda_samples_reductions_with_dynamic_shared_memory(backend, kernel):
    n, threads = 5000, 128
    x = RNG.integers(-50, 50, n).astype(np.int32)
    blocks = -(-n // (2 * threads))
    out = ember.zeros(blocks, ember.int32)
    kernel[blocks, threads](ember.asarray(x), out, n)  # the launch sizes the shared array
    padded = np.zeros(blocks * 2 * threads, np.int32)
    padded[:n] = x
    halves = padded.reshape(blocks, 2, threads).sum(axis=(1, 2))
    np.testing.assert_array_equal(out.to_numpy(), halves)


def test_cuda_samples_thread_fence_reduction(backend):
    n = 20_000
    x = _uniform(n, 0, 1)
    blocks = 12
    partial = ember.zeros(blocks, ember.float32)
    retirement = ember.zeros(1, ember.uint32)
    for _ in range(2):  # the last block resets the counter: a second launch works too
        rk.thread_fence_reduce[blocks, 256](ember.asarray(x), partial, n, retirement)
        np.testing.assert_allclose(partial.to_numpy()[0], x.astype(np.float64).sum(), rtol=1e-4)
        assert retirement.to_numpy()[0] == 0


def test_cuda_samples_bitonic_sort_shared(backend):
    batches = 3
    keys = RNG.integers(0, 1 << 20, batches * rk.SHARED_SIZE).astype(np.uint32)
    vals = np.arange(keys.size, dtype=np.uint32)
    dk, dv = ember.zeros(keys.size, ember.uint32), ember.zeros(keys.size, ember.uint32)
    for direction in (True, False):
        rk.bitonic_sort_shared[batches, rk.SHARED_SIZE // 2](
            dk, dv, ember.asarray(keys), ember.asarray(vals), direction
        )
        got_k, got_v = dk.to_numpy().reshape(batches, -1), dv.to_numpy().reshape(batches, -1)
        want = np.sort(keys.reshape(batches, -1), axis=1)
        np.testing.assert_array_equal(got_k, want if direction else want[:, ::-1])
        np.testing.assert_array_equal(keys[got_v], got_k)  # values moved with their keys


def test_cuda_samples_separable_convolution_rows_with_a_constant_table(backend):
    w, h = 2 * rk.ROWS_RESULT_STEPS * rk.ROWS_BLOCKDIM_X, 2 * rk.ROWS_BLOCKDIM_Y
    src = _uniform(w * h)
    dst = ember.zeros(w * h, ember.float32)
    grid = (w // (rk.ROWS_RESULT_STEPS * rk.ROWS_BLOCKDIM_X), h // rk.ROWS_BLOCKDIM_Y)
    rk.convolution_rows[grid, (rk.ROWS_BLOCKDIM_X, rk.ROWS_BLOCKDIM_Y)](
        dst, ember.asarray(src), w, h, w
    )
    img = src.reshape(h, w).astype(np.float64)
    padded = np.pad(img, ((0, 0), (rk.KERNEL_RADIUS, rk.KERNEL_RADIUS)))
    taps = rk.C_KERNEL.astype(np.float64)
    expected = sum(
        taps[rk.KERNEL_RADIUS - j] * padded[:, rk.KERNEL_RADIUS + j : rk.KERNEL_RADIUS + j + w]
        for j in range(-rk.KERNEL_RADIUS, rk.KERNEL_RADIUS + 1)
    )
    close32(dst.to_numpy().reshape(h, w), expected, rtol=1e-5, atol=1e-6)
    source = rk.convolution_rows.inspect(src, src, w, h, w, dialect="cuda")
    assert "__constant__ const float em_tbl_C_KERNEL[17]" in source


def test_nvidia_stencil_1d(backend):
    n = 4 * rk.BLOCK_SIZE
    inp = RNG.integers(-9, 9, n + 2 * rk.RADIUS).astype(np.int32)
    out = ember.zeros(n, ember.int32)
    rk.stencil_1d[n // rk.BLOCK_SIZE, rk.BLOCK_SIZE](ember.asarray(inp), out)
    expected = np.convolve(inp, np.ones(2 * rk.RADIUS + 1, np.int32), mode="valid")
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_cuda_samples_nbody_accelerations(backend):
    n = 200
    pos = np.concatenate([_uniform((n, 3), -2, 2), _uniform((n, 1), 0.5, 1.5)], axis=1)
    accel = ember.zeros((n, 3), ember.float32)
    rk.nbody_accel[2, 128](ember.asarray(pos), accel, n)
    p = pos.astype(np.float64)
    r = p[None, :, :3] - p[:, None, :3]
    inv = (np.sum(r * r, axis=2) + rk.SOFTENING_SQ) ** -1.5
    expected = np.sum(r * (p[None, :, 3] * inv)[:, :, None], axis=1)
    close32(accel.to_numpy(), expected, rtol=1e-4, atol=1e-4)


def test_numba_local_memory(backend):
    a = RNG.uniform(0, 1, 100)
    b = ember.zeros(100, ember.float64)
    rk.culocal[1, 1](ember.asarray(a), b)
    np.testing.assert_array_equal(b.to_numpy(), a)


def test_numba_dynamic_shared_memory_sized_by_the_launch(backend):
    x = _uniform(32)
    y = ember.zeros(32, ember.float32)
    rk.dynamic_shared_numba[1, 32, 0, 32 * 4](ember.asarray(x), y)  # Numba's [g, b, stream, bytes]
    np.testing.assert_array_equal(y.to_numpy(), x[::-1] + 32)
    rk.dynamic_shared_numba[1, 32, 64 * 4](ember.asarray(x), y)  # CUDA's order: [g, b, bytes]
    np.testing.assert_array_equal(y.to_numpy(), x[::-1] + 64)


def test_cuda_guide_several_dynamic_shared_arrays(backend):
    out = ember.zeros((128, 3), ember.float64)
    rk.carved[1, 128](128, 64, 100, out)  # three arrays carved from the launch's memory
    o = out.to_numpy()
    t = np.arange(128)
    np.testing.assert_array_equal(o[:, 0], 127 - t)
    np.testing.assert_array_equal(o[:64, 1], 0.5 * (63 - t[:64]))
    np.testing.assert_array_equal(o[:100, 2], -(99 - t[:100]))


# ======================================================================= warps
def test_cuda_samples_shfl_scan(backend):
    n, threads = 1024, 256
    x = RNG.integers(0, 10, n).astype(np.int32)
    data = ember.asarray(x)
    partial = ember.zeros(n // threads, ember.int32)
    rk.shfl_scan[n // threads, threads](data, 32, partial)
    per_block = np.cumsum(x.reshape(-1, threads), axis=1)
    np.testing.assert_array_equal(data.to_numpy(), per_block.reshape(-1))
    np.testing.assert_array_equal(partial.to_numpy(), per_block[:, -1])


def test_cuda_samples_vote_intrinsics(backend):
    n = 64  # two warps
    inp = np.zeros(n, np.int32)
    inp[5] = 1  # warp 0: one lane true; warp 1: none
    inp[32:] = 1
    inp[40] = 0  # warp 1: all but one
    any_out, all_out = ember.zeros(n, ember.int32), ember.zeros(n, ember.int32)
    rk.vote_any[1, n](ember.asarray(inp), any_out)
    rk.vote_all[1, n](ember.asarray(inp), all_out)
    warps = inp.reshape(2, 32) != 0
    np.testing.assert_array_equal(any_out.to_numpy(), np.repeat(warps.any(axis=1), 32))
    np.testing.assert_array_equal(all_out.to_numpy(), np.repeat(warps.all(axis=1), 32))
    info = ember.zeros(3 * n, ember.int32)
    rk.vote_any3[1, n](info, 32)
    got = info.to_numpy().reshape(n, 3)
    np.testing.assert_array_equal(got[:, 0], np.ones(n))  # half of each warp passes
    np.testing.assert_array_equal(got[:, 1], np.zeros(n))  # not all of it
    np.testing.assert_array_equal(got[:, 2], np.ones(n))  # lane 0 of each warp


def test_warp_aggregated_atomic_filter(backend):
    n = 1000
    src = RNG.integers(-5, 5, n).astype(np.int32)
    dst = ember.zeros(n, ember.int32)
    nres = ember.zeros(1, ember.int32)
    rk.filter_warp_aggregated[(n + 127) // 128, 128](dst, nres, ember.asarray(src), n)
    count = int(nres.to_numpy()[0])
    assert count == int((src > 0).sum())
    np.testing.assert_array_equal(np.sort(dst.to_numpy()[:count]), np.sort(src[src > 0]))


def test_llmc_layernorm_warp_per_row(backend):
    N, C, threads = 16, 70, 128  # 4 warps (rows) per block
    inp, w, b = _uniform((N, C), -3, 3), _uniform(C), _uniform(C)
    out = ember.zeros((N, C), ember.float32)
    mean, rstd = ember.zeros(N, ember.float32), ember.zeros(N, ember.float32)
    rk.layernorm_forward[N // 4, threads](
        out, mean, rstd, ember.asarray(inp), ember.asarray(w), ember.asarray(b), N, C
    )
    x = inp.astype(np.float64)
    m = x.mean(axis=1)
    s = 1 / np.sqrt(x.var(axis=1) + 1e-5)
    close32(mean.to_numpy(), m, atol=1e-5)
    close32(rstd.to_numpy(), s, rtol=1e-4)
    close32(out.to_numpy(), (x - m[:, None]) * s[:, None] * w + b, rtol=1e-4, atol=1e-4)


def test_llmc_online_softmax(backend):
    N, C = 8, 100
    inp = _uniform((N, C), -5, 5)
    out = ember.zeros((N, C), ember.float32)
    rk.softmax_online[N // 4, 128](out, ember.asarray(inp), N, C)
    e = np.exp(inp.astype(np.float64) - inp.max(axis=1, keepdims=True))
    close32(out.to_numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-7)


def test_llmc_crossentropy_with_views(backend):
    B, T, V = 3, 4, 10
    logits = _uniform((B, T, V), -2, 2).astype(np.float64)
    probs = (np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)).astype(np.float32)
    targets = RNG.integers(0, V, (B, T)).astype(np.int32)
    losses = ember.zeros((B, T), ember.float32)
    rk.crossentropy_forward[1, 32](losses, ember.asarray(probs), ember.asarray(targets), B, T, V)
    expected = -np.log(np.take_along_axis(probs, targets[..., None], axis=2)[..., 0])
    close32(losses.to_numpy(), expected)


# ======================================================================= atomics
def test_cuda_samples_simple_atomic_intrinsics(backend):
    threads, blocks = 64, 1
    n = threads * blocks
    start = np.zeros(11, np.int32)
    start[8] = start[10] = 0xFF
    start[4] = 1 << 30  # min starts large
    udata = np.zeros(11, np.uint32)
    d, du = ember.asarray(start), ember.asarray(udata)
    rk.simple_atomics[blocks, threads](d, du)
    got, gu = d.to_numpy(), du.to_numpy()
    tids = np.arange(n)
    assert got[0] == 10 * n and got[1] == -10 * n
    assert 0 <= got[2] < n  # some thread's id
    assert got[3] == n - 1 and got[4] == 0
    assert gu[5] == n % 18  # atomicInc wraps at 17: counts modulo 18
    assert gu[6] == (-n) % 138  # atomicDec from 0 wraps to 137
    assert 1 <= got[7] <= n - 1  # a CAS chain 0 -> 1 -> ... (how far depends on the order)
    expected_and = 0xFF
    for t in tids:
        expected_and &= 2 * t + 7
    assert got[8] == expected_and
    assert got[9] == np.bitwise_or.reduce((1 << (tids % 32)).astype(np.int64)).astype(np.int32)
    assert got[10] == np.bitwise_xor.reduce(tids) ^ 0xFF


@pytest.mark.parametrize("dec", [False, True], ids=["inc", "dec"])
def test_numba_atomic_inc_dec_wrap_in_shared_memory(backend, dec):
    ary = RNG.integers(0, 10, 32).astype(np.uint32)
    idx = RNG.integers(0, 64, 32).astype(np.uint32)
    op2 = 6
    d = ember.asarray(ary)
    rk.atomic_inc_dec_shared[1, 32](d, ember.asarray(idx), op2, dec)
    expected = ary.copy()
    for i in idx % 32:
        v = expected[i]
        if dec:
            expected[i] = op2 if v == 0 or v > op2 else v - 1
        else:
            expected[i] = 0 if v >= op2 else v + 1
    np.testing.assert_array_equal(d.to_numpy(), expected)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint64"])
def test_numba_compare_and_swap_on_a_view(backend, dtype):
    n = 100
    res = np.where(np.arange(n) % 3 == 0, 0, 9).astype(dtype)  # only zeros are replaced
    ary = np.arange(n).astype(dtype) + 1
    dres, old = ember.asarray(res), ember.zeros(n, dtype)
    rk.atomic_compare_and_swap[1, 128](dres, old, ember.asarray(ary), np.dtype(dtype).type(0))
    np.testing.assert_array_equal(old.to_numpy(), res)
    np.testing.assert_array_equal(dres.to_numpy(), np.where(res == 0, ary, res))


# ======================================================================= math
def test_numba_intrinsics(backend):
    n = 64
    c32 = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    c64 = RNG.integers(0, 2**63, n, dtype=np.uint64) * 2 + RNG.integers(0, 2, n, dtype=np.uint64)
    c32[0], c64[0] = 0, 0
    a = _uniform(n, -8, 8)
    out32, out64 = ember.zeros((n, 4), ember.uint32), ember.zeros((n, 4), ember.uint64)
    outf = ember.zeros((n, 2), ember.float32)
    rk.intrinsics[1, n](ember.asarray(c32), ember.asarray(c64), ember.asarray(a), out32, out64,
                        outf)  # fmt: skip
    for width, c, out in ((32, c32, out32.to_numpy()), (64, c64, out64.to_numpy())):
        ints = [int(v) for v in c]
        assert [int(v) for v in out[:, 0]] == [v.bit_count() for v in ints]
        assert [int(v) for v in out[:, 1]] == [int(f"{v:0{width}b}"[::-1], 2) for v in ints]
        assert [int(v) for v in out[:, 2]] == [width - v.bit_length() for v in ints]
        assert [int(v) for v in out[:, 3]] == [(v & -v).bit_length() for v in ints]
    close32(outf.to_numpy()[:, 0], a.astype(np.float64) ** 2 + 1.5, rtol=1e-6)
    close32(outf.to_numpy()[:, 1], np.cbrt(a.astype(np.float64)), rtol=1e-6)


def _splitmix64(x):
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(2**64 - 1)
    z = x
    z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(2**64 - 1)
    z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & np.uint64(2**64 - 1)
    return x, z ^ (z >> np.uint64(31))


def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


def test_numba_xoroshiro_monte_carlo_pi(backend):
    threads, iterations = 256, 50
    with np.errstate(over="ignore"):
        seed, s0 = _splitmix64(np.arange(threads, dtype=np.uint64) * np.uint64(7919))
        _, s1 = _splitmix64(seed)
        states = np.stack([s0, s1], axis=1)
        dstates, out = ember.asarray(states), ember.zeros(threads, ember.float32)
        rk.compute_pi[threads // 64, 64](dstates, iterations, out)
        a, b = states[:, 0].copy(), states[:, 1].copy()
        inside = np.zeros(threads)
        for _ in range(iterations):
            xy = []
            for _ in range(2):
                result = a + b
                b ^= a
                a = _rotl(a, 55) ^ b ^ (b << np.uint64(14))
                b = _rotl(b, 36)
                xy.append(
                    ((result >> np.uint64(11)).astype(np.float64) / 2.0**53).astype(np.float32)
                )
            inside += xy[0].astype(np.float64) ** 2 + xy[1].astype(np.float64) ** 2 <= 1.0
    np.testing.assert_array_equal(dstates.to_numpy(), np.stack([a, b], axis=1))
    np.testing.assert_allclose(out.to_numpy(), 4.0 * inside / iterations, atol=4.0 / iterations)


def test_cuda_samples_fast_walsh_transform(backend):
    for log2n in (6, 7):  # radix-4 stages only, and one radix-2 stage more
        n, batch = 1 << log2n, 3
        x = _uniform(batch * n)
        out = ember.zeros(batch * n, ember.float32)
        rk.fwt_batch1[batch, n // 4](out, ember.asarray(x), log2n)
        h = np.array([[1.0]])
        for _ in range(log2n):
            h = np.block([[h, h], [h, -h]])
        expected = (h @ x.reshape(batch, n).astype(np.float64).T).T
        close32(out.to_numpy().reshape(batch, n), expected, rtol=1e-5, atol=1e-5)


def test_gpu_gems_prescan(backend):
    n = 128
    x = RNG.integers(0, 10, n).astype(np.float32)
    out = ember.zeros(n, ember.float32)
    rk.prescan[1, n // 2](out, ember.asarray(x), n)
    np.testing.assert_array_equal(out.to_numpy(), np.concatenate([[0], np.cumsum(x)[:-1]]))


# ======================================================================= grid sync
def _grid_sync_supported(backend) -> bool:
    return backend.device.cooperative_launch


def test_numba_sequential_rows_with_grid_sync(backend):
    rows, cols = 5, 512
    M = ember.zeros((rows, cols), ember.int32)
    if not _grid_sync_supported(backend):
        with pytest.raises(ember.UnsupportedFeatureError, match=r"grid_sync\(\) needs a coop"):
            rk.sequential_rows[cols // 128, 128](M)
        return
    rk.sequential_rows[cols // 128, 128](M)
    expected = np.zeros((rows, cols), np.int32)
    for r in range(1, rows):
        expected[r] = expected[r - 1, ::-1] + 1
    np.testing.assert_array_equal(M.to_numpy(), expected)


def test_numba_heat_equation_with_grid_sync(backend):
    n, steps, k = 1024, 200, 0.25
    buf0 = np.zeros(n, np.float32)
    buf0[n // 2] = 10_000.0
    b0, b1 = ember.asarray(buf0), ember.zeros(n, ember.float32)
    if not _grid_sync_supported(backend):
        with pytest.raises(ember.UnsupportedFeatureError, match="two launches"):
            rk.solve_heat_equation[n // 256, 256](b0, b1, steps, np.float32(k))
        return
    rk.solve_heat_equation[n // 256, 256](b0, b1, steps, np.float32(k))
    data = buf0.astype(np.float64)
    for _ in range(steps):
        nxt = data.copy()
        nxt[1:-1] = data[1:-1] + k * (data[:-2] - 2 * data[1:-1] + data[2:])
        nxt[0] = data[0] + k * (data[1] - 2 * data[0])
        nxt[-1] = data[-1] + k * (data[-2] - 2 * data[-1])
        data = nxt
    close32((b0 if steps % 2 == 0 else b1).to_numpy(), data, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
def test_grid_sync_refuses_a_grid_that_does_not_fit(backend):
    if not _grid_sync_supported(backend):
        pytest.skip("grid_sync needs a cooperative launch")
    M = ember.zeros((2, 1 << 22), ember.int32)
    with pytest.raises(ember.LaunchError, match=r"at most \d+ fit on this device"):
        rk.sequential_rows[(1 << 22) // 128, 128](M)


# ======================================================================= more ports
def test_numba_docs_array_sum_with_shared_array_in_a_branch(backend):
    data = np.arange(rk.NELEM, dtype=np.int32)
    d = ember.asarray(data)
    rk.array_sum[1, rk.NELEM](d)
    assert d.to_numpy()[0] == data.sum()


def test_numba_docs_captured_globals(backend):
    q = np.array([1, 2, 3, 4, 5], np.float64)
    totals = ember.zeros(5, ember.float64)
    rk.compute_totals[1, 32](ember.asarray(q), totals)
    np.testing.assert_allclose(totals.to_numpy(), [10.8, 54.0, 16.2, 64.8, 162.0])


def test_numba_docs_monte_carlo_integrator(backend):
    n = 4096
    with np.errstate(over="ignore"):
        seed, s0 = _splitmix64(np.arange(n, dtype=np.uint64) * np.uint64(104729))
        _, s1 = _splitmix64(seed)
    states = ember.asarray(np.stack([s0, s1], axis=1))
    out = ember.zeros(n, ember.float32)
    rk.mc_integrator[n // 128, 128](out, states, np.float32(1.0), np.float32(2.0))
    got = out.to_numpy()
    assert ((got >= 0.5) & (got <= 1.0)).all()
    np.testing.assert_allclose(got.sum() / (n - 1), math.log(2.0), atol=0.02)


SESSION_IDS = np.repeat(np.arange(1, 5), [6, 3, 10, 9]).astype(np.int64)
SESSION_SECS = np.array([1, 2, 3, 5000, 5001, 5002, 1, 2, 3, 1, 2, 5000, 5001, 10000, 10001,
                         10002, 10003, 15000, 150001, 1, 5000, 50001, 15000, 20000, 25000,
                         25001, 25002, 25003], np.int64) * 10**9  # fmt: skip


def test_numba_docs_sessionize_with_grid_sync_in_a_branch(backend):
    if not _grid_sync_supported(backend):
        pytest.skip("grid_sync needs a cooperative launch")
    results = ember.zeros(len(SESSION_IDS), ember.float64)
    rk.sessionize[1, 32](ember.asarray(SESSION_IDS), ember.asarray(SESSION_SECS), results)
    expect = [0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9, 11, 11, 13, 13, 13, 13, 17, 18, 19, 20, 21, 21,
              23, 24, 24, 24, 24]  # fmt: skip
    np.testing.assert_array_equal(results.to_numpy(), expect)


def test_numba_docs_float_atomic_max(backend):
    values = RNG.uniform(-100, 100, 512)
    result = ember.asarray(np.array([-np.inf]))
    rk.max_example[4, 128](result, ember.asarray(values))
    assert result.to_numpy()[0] == values.max()


def test_numba_atomic_add_with_a_tuple_index_into_shared_memory(backend):
    ary = np.arange(32, dtype=np.uint32).reshape(4, 8)
    d = ember.asarray(ary)
    rk.atomic_add2[1, (4, 8)](d)
    np.testing.assert_array_equal(d.to_numpy(), ary + 1)


def _csr(rows, cols, density=0.3):
    dense = RNG.uniform(-1, 1, (rows, cols)).astype(np.float32)
    dense[RNG.uniform(size=(rows, cols)) > density] = 0
    dense[3] = 0  # an empty row
    ptr = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(np.int32)
    indices = np.nonzero(dense)[1].astype(np.int32)
    return dense, ptr, indices, dense[dense != 0]


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_bell_garland_csr_spmv(backend, vector):
    rows, cols = 37, 80
    dense, ptr, indices, data = _csr(rows, cols)
    x, y = _uniform(cols), _uniform(rows)
    dy = ember.asarray(y)
    args = (rows, ember.asarray(ptr), ember.asarray(indices), ember.asarray(data),
            ember.asarray(x), dy)  # fmt: skip
    if vector:
        rk.spmv_csr_vector[(rows * 32 + 127) // 128, 128](*args)
    else:
        rk.spmv_csr_scalar[1, 64](*args)
    close32(dy.to_numpy(), y + dense.astype(np.float64) @ x, rtol=1e-5, atol=1e-5)


def test_rodinia_bfs(backend):
    n = 300
    adj = [sorted(set(RNG.integers(0, n, RNG.integers(0, 4)).tolist())) for _ in range(n)]
    nodes = np.array([[sum(map(len, adj[:v])), len(adj[v])] for v in range(n)], np.int32)
    edges = np.array([e for a in adj for e in a], np.int32)
    mask, visited = np.zeros(n, bool), np.zeros(n, bool)
    mask[0] = visited[0] = True
    cost = np.full(n, -1, np.int32)
    cost[0] = 0
    dn, de, dm, du, dv, dc = (ember.asarray(a) for a in (nodes, edges, mask, np.zeros(n, bool),
                                                           visited, cost))  # fmt: skip
    blocks = (n + 127) // 128
    while True:
        over = ember.zeros(1, ember.bool_)
        rk.bfs_kernel[blocks, 128](dn, de, dm, du, dv, dc, n)
        rk.bfs_kernel2[blocks, 128](dm, du, dv, over, n)
        if not over.to_numpy()[0]:
            break
    expect = np.full(n, -1)
    expect[0], frontier = 0, [0]
    while frontier:
        nxt = []
        for v in frontier:
            for w in adj[v]:
                if expect[w] < 0:
                    expect[w] = expect[v] + 1
                    nxt.append(w)
        frontier = nxt
    np.testing.assert_array_equal(dc.to_numpy(), expect)


def test_rodinia_kmeans_point(backend):
    npoints, nfeatures, nclusters = 500, 5, 7
    pts, centres = _uniform((npoints, nfeatures)), _uniform((nclusters, nfeatures))
    membership = ember.zeros(npoints, ember.int32)
    rk.kmeans_point[(npoints + 127) // 128, 128](
        ember.asarray(np.ascontiguousarray(pts.T).ravel()),
        nfeatures,
        npoints,
        nclusters,
        membership,
        ember.asarray(centres.ravel()),
    )
    d = ((pts[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(membership.to_numpy(), d.argmin(axis=1))


def test_nvidia_blog_finite_difference_derivative_x(backend):
    mx, my, mz = rk.FD_MX, rk.FD_MY, rk.FD_MZ
    f = _uniform((mz, my, mx))
    df = ember.zeros((mz, my, mx), ember.float32)
    rk.derivative_x[(my // rk.S_PENCILS, mz), (mx, rk.S_PENCILS)](ember.asarray(f), df)
    s = np.concatenate([f[..., mx - 5 : mx - 1], f, f[..., 1:5]], axis=2).astype(np.float64)
    c = (rk.C_AX, rk.C_BX, rk.C_CX, rk.C_DX)
    expect = sum(c[m - 1] * (s[..., 4 + m : 4 + m + mx] - s[..., 4 - m : 4 - m + mx])
                 for m in range(1, 5))  # fmt: skip
    np.testing.assert_allclose(df.to_numpy(), expect, rtol=1e-4, atol=2e-3)


def test_cuda_samples_odd_even_merge_sort_shared(backend):
    n = rk.SHARED_SIZE * 2
    keys = RNG.integers(0, 1000, n).astype(np.uint32)
    vals = np.arange(n, dtype=np.uint32)
    for direction in (1, 0):
        dk, dv = ember.zeros(n, ember.uint32), ember.zeros(n, ember.uint32)
        rk.odd_even_merge_sort_shared[2, rk.SHARED_SIZE // 2](
            dk, dv, ember.asarray(keys), ember.asarray(vals), rk.SHARED_SIZE, direction
        )
        got_k, got_v = dk.to_numpy().reshape(2, -1), dv.to_numpy().reshape(2, -1)
        want = np.sort(keys.reshape(2, -1), axis=1)
        np.testing.assert_array_equal(got_k, want if direction else want[:, ::-1])
        np.testing.assert_array_equal(keys[got_v], got_k)  # values travel with their keys


def test_gpu_gems_naive_double_buffered_scan(backend):
    n = 128
    x = RNG.integers(0, 10, n).astype(np.float32)
    out = ember.zeros(n, ember.float32)
    rk.naive_scan[1, n](out, ember.asarray(x), n)
    np.testing.assert_array_equal(out.to_numpy(), np.concatenate([[0], np.cumsum(x)[:-1]]))


def test_llmc_causal_attention_scores_and_softmax(backend):
    B, T, C, NH = 2, 9, 16, 4
    inp = _uniform((B, T, 3 * C))
    preatt = ember.zeros((B, NH, T, T), ember.float32)
    att = ember.zeros((B, NH, T, T), ember.float32)
    rk.attention_query_key[(B * NH * T * T + 127) // 128, 128](preatt, ember.asarray(inp), B,
                                                                T, C, NH)  # fmt: skip
    rk.attention_softmax[1, 128](att, preatt, B, T, NH)
    hs = C // NH
    q = inp[:, :, :C].reshape(B, T, NH, hs).transpose(0, 2, 1, 3).astype(np.float64)
    k = inp[:, :, C : 2 * C].reshape(B, T, NH, hs).transpose(0, 2, 1, 3).astype(np.float64)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hs)
    causal = np.tril(np.ones((T, T), bool))
    got = preatt.to_numpy()
    assert np.isneginf(got[..., ~causal]).all()
    close32(got[..., causal], scores[..., causal], rtol=1e-5, atol=1e-6)
    e = np.where(
        causal, np.exp(scores - np.where(causal, scores, -np.inf).max(-1, keepdims=True)), 0
    )
    close32(att.to_numpy(), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_warp_example_wave_solve(backend):
    w, h = 20, 12
    prev, cur = _uniform(w * h), _uniform(w * h)
    dprev = ember.asarray(prev)
    args = (np.float32(2.0), np.float32(1.5), np.float32(0.1), np.float32(0.05))
    rk.wave_solve[(w * h + 63) // 64, 64](dprev, ember.asarray(cur), w, h, *args)
    inv_cell, k_speed, k_damp, dt = (float(a) for a in args)
    g = np.pad(cur.reshape(h, w).astype(np.float64), 1, mode="edge")
    lap = (g[1:-1, 2:] + g[1:-1, :-2] + g[2:, 1:-1] + g[:-2, 1:-1] - 4 * g[1:-1, 1:-1]).ravel()
    lap *= inv_cell * inv_cell
    expect = 2 * cur - prev + dt * dt * (k_speed * lap - k_damp * (cur.astype(np.float64) - prev))
    close32(dprev.to_numpy(), expect, rtol=1e-5, atol=1e-5)


def test_cuda_samples_matrix_mul(backend):
    hA, wA, wB = 16, 24, 32
    a, b = _uniform((hA, wA)), _uniform((wA, wB))
    c = ember.zeros(hA * wB, ember.float32)
    blk = rk.MM_BLOCK
    grid = (wB // blk, hA // blk)
    rk.matrix_mul_cuda[grid, (blk, blk)](
        c, ember.asarray(a.ravel()), ember.asarray(b.ravel()), wA, wB
    )
    close32(c.to_numpy().reshape(hA, wB), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_cuda_samples_scalar_prod(backend):
    vector_n, element_n = 7, 1000
    a, b = _uniform(vector_n * element_n), _uniform(vector_n * element_n)
    out = ember.zeros(vector_n, ember.float32)
    rk.scalar_prod[3, 64](out, ember.asarray(a), ember.asarray(b), vector_n, element_n)
    expect = (a.astype(np.float64) * b).reshape(vector_n, element_n).sum(axis=1)
    close32(out.to_numpy(), expect, rtol=1e-4, atol=1e-4)


def test_cuda_samples_quasirandom_inverse_cnd(backend):
    from statistics import NormalDist

    path_n = 1000
    out = ember.zeros(path_n, ember.float32)
    rk.inverse_cnd[4, 64](out, path_n)
    distance = (2**32 - 1) // (path_n + 1)
    d = (np.arange(1, path_n + 1) * distance).astype(np.float64)
    p = np.minimum(d, 2**32 - 1 - d) / (2**32 - 1) + 0.5 / (2**32 - 1)
    ref = np.array([NormalDist().inv_cdf(v) for v in p])
    ref = np.where(d >= 2**31, -ref, ref)
    np.testing.assert_allclose(out.to_numpy(), ref, atol=2e-4)


def test_every_real_kernel_compiles_for_cuda():
    """NVRTC compile check (sm_90) of every ported kernel, with no GPU needed."""
    f, i32 = np.zeros(64, np.float32), np.zeros(64, np.int32)
    u32 = np.zeros(512, np.uint32)
    cases = {
        rk.vecadd: (f, f, f), rk.reduce_shfl: (i32, i32, 64), rk.shfl_scan: (i32, 32, i32),
        rk.filter_warp_aggregated: (i32, i32, i32, 64),
        rk.layernorm_forward: (f.reshape(8, 8), f[:8], f[:8], f.reshape(8, 8), f[:8], f[:8], 8,
                               8),
        rk.sequential_rows: (i32.reshape(2, 32),),
        rk.solve_heat_equation: (f, f, 10, np.float32(0.25)),
        rk.simple_atomics: (i32, i32.view(np.uint32)),
        rk.intrinsics: (i32.view(np.uint32), np.zeros(64, np.uint64), f,
                        i32.view(np.uint32).reshape(16, 4), np.zeros((16, 4), np.uint64),
                        f.reshape(32, 2)),
        rk.fwt_batch1: (f, f, 6), rk.carved: (8, 8, 8, np.zeros((8, 3))),
        rk.sessionize: (SESSION_IDS, SESSION_SECS, np.zeros(28)),
        rk.spmv_csr_vector: (8, i32[:9], i32, f, f, f[:8]),
        rk.odd_even_merge_sort_shared: (u32, u32, u32, u32, 256, 1),
        rk.naive_scan: (f, f, 64), rk.inverse_cnd: (f, 64),
        rk.attention_query_key: (f.reshape(1, 2, 4, 8), f.reshape(1, 2, 32), 1, 2, 8, 4),
        rk.derivative_x: (np.zeros((4, 16, 32), np.float32), np.zeros((4, 16, 32), np.float32)),
        rk.matrix_mul_cuda: (f, f, f, 8, 8), rk.max_example: (np.zeros(1), np.zeros(64)),
    }  # fmt: skip
    try:
        for kernel, args in cases.items():
            ptx = kernel.inspect(*args, stage="ptx", dialect="cuda")
            assert ".visible .entry" in ptx
    except ember.BackendUnavailableError as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
