"""Kernels ported from public peer examples into Ember's kernel language.

Each kernel says where it comes from; the ports follow the originals' structure (thread
indexing, shared memory, warp operations, atomics) as closely as the language allows, so
that they exercise what a user porting CUDA or Numba code meets.  The tests that run them
against NumPy on every backend are in ``test_real_kernels.py``.
"""

from __future__ import annotations

import math

import numpy as np

import ember

f32 = ember.float32


# ======================================================================= elementwise
# numba-cuda docs, doc_examples/test_vecadd.py (``f(a, b, c)``)
@ember.kernel
def vecadd(a, b, c):
    tid = ember.grid(1)
    size = len(c)
    if tid < size:
        c[tid] = a[tid] + b[tid]


# NVIDIA Developer Blog, "CUDA Pro Tip: Write Flexible Kernels with Grid-Stride Loops"
@ember.kernel
def saxpy(n, a, x, y):
    i = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    while i < n:
        y[i] = a * x[i] + y[i]
        i += ember.block_dim.x * ember.grid_dim.x


GELU_SCALING_FACTOR = math.sqrt(2.0 / math.pi)


# karpathy/llm.c, train_gpt2.cu: gelu_forward_kernel (tanh approximation)
@ember.kernel
def gelu_forward(out, inp, N):
    i = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    if i < N:
        xi = inp[i]
        cube = f32(0.044715) * xi * xi * xi
        out[i] = f32(0.5) * xi * (f32(1.0) + ember.tanh(f32(GELU_SCALING_FACTOR) * (xi + cube)))


# karpathy/llm.c, train_gpt2.cu: residual_forward_kernel
@ember.kernel
def residual_forward(out, inp1, inp2, N):
    idx = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    if idx < N:
        out[idx] = inp1[idx] + inp2[idx]


# karpathy/llm.c, dev/cuda/encoder_forward.cu: encoder_forward_kernel2 (one thread per
# (b, t, c)); the row pointers of the original are views here
@ember.kernel
def encoder_forward(out, inp, wte, wpe, B, T, C):
    idx = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    if idx < B * T * C:
        bt = idx // C
        b = bt // T
        t = bt % T
        c = idx % C
        ix = inp[b, t]
        out_bt = out[b, t, :]
        wte_ix = wte[ix, :]
        wpe_t = wpe[t, :]
        out_bt[c] = wte_ix[c] + wpe_t[c]


# karpathy/llm.c, train_gpt2.cu: adamw_kernel2 (with lerp as in the original)
def lerp(start, end, weight):
    return ember.fma(weight, end, ember.fma(-weight, start, start))


@ember.kernel
def adamw(params, grads, m, v, n, lr, beta1, beta2, b1c, b2c, eps, weight_decay):
    i = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    if i >= n:
        return
    grad = grads[i]
    mi = lerp(grad, m[i], beta1)
    m[i] = mi
    vi = lerp(grad * grad, v[i], beta2)
    v[i] = vi
    mi /= b1c
    vi /= b2c
    params[i] -= lr * (mi / (ember.sqrt(vi) + eps) + weight_decay * params[i])


# NVIDIA cuda-samples, 4_Finance/BlackScholes/BlackScholes_kernel.cuh (cndGPU,
# BlackScholesBodyGPU, BlackScholesGPU with its grid-stride loop)
def cnd(d):
    A1, A2, A3 = f32(0.31938153), f32(-0.356563782), f32(1.781477937)
    A4, A5 = f32(-1.821255978), f32(1.330274429)
    RSQRT2PI = f32(0.39894228040143267793994605993438)
    K = f32(1.0) / (f32(1.0) + f32(0.2316419) * ember.fabs(d))
    c = (
        RSQRT2PI
        * ember.exp(f32(-0.5) * d * d)
        * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    )
    if d > 0:
        c = f32(1.0) - c
    return c


@ember.kernel
def black_scholes(call, put, price, strike, years, r, vol, n):
    i = ember.block_dim.x * ember.block_idx.x + ember.thread_idx.x
    while i < n:
        s, x, t = price[i], strike[i], years[i]
        sqrt_t = ember.sqrt(t)
        d1 = (ember.log(s / x) + (r + f32(0.5) * vol * vol) * t) / (vol * sqrt_t)
        d2 = d1 - vol * sqrt_t
        cnd1, cnd2 = cnd(d1), cnd(d2)
        exp_rt = ember.exp(-r * t)
        call[i] = s * cnd1 - x * exp_rt * cnd2
        put[i] = x * exp_rt * (f32(1.0) - cnd2) - s * (f32(1.0) - cnd1)
        i += ember.block_dim.x * ember.grid_dim.x


# Mandelbrot: numba's CUDA example (examples/mandel.py, the "mandel" notebook): the escape
# count per pixel (the original uses complex numbers; here the real and imaginary parts)
def mandel(x, y, max_iters):
    z_re = f32(0.0)
    z_im = f32(0.0)
    for i in range(max_iters):
        z_re, z_im = z_re * z_re - z_im * z_im + x, f32(2.0) * z_re * z_im + y
        if z_re * z_re + z_im * z_im >= 4:
            return i
    return max_iters


@ember.kernel
def mandel_kernel(min_x, max_x, min_y, max_y, image, iters):
    height, width = image.shape
    pixel_size_x = f32((max_x - min_x) / width)
    pixel_size_y = f32((max_y - min_y) / height)
    start_x, start_y = ember.grid(2)
    grid_x = ember.grid_dim.x * ember.block_dim.x
    grid_y = ember.grid_dim.y * ember.block_dim.y
    for x in range(start_x, width, grid_x):
        real = f32(min_x + x * pixel_size_x)
        for y in range(start_y, height, grid_y):
            imag = f32(min_y + y * pixel_size_y)
            image[y, x] = mandel(real, imag, iters)


# ======================================================================= shared memory
TPB = 16


# numba-cuda docs, doc_examples/test_matmul.py: fast_matmul (shared-memory tiles)
@ember.kernel
def fast_matmul(A, B, C):
    sA = ember.shared((TPB, TPB), f32)
    sB = ember.shared((TPB, TPB), f32)
    x, y = ember.grid(2)
    tx = ember.thread_idx.x
    ty = ember.thread_idx.y
    bpg = ember.grid_dim.x
    tmp = f32(0.0)
    for i in range(bpg):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * TPB]
        if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, x]
        ember.barrier()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        ember.barrier()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


TILE_DIM = 32
BLOCK_ROWS = 8


# NVIDIA cuda-samples, 6_Performance/transpose: transposeNoBankConflicts (a padded tile)
@ember.kernel
def transpose_no_bank_conflicts(odata, idata, width, height):
    tile = ember.shared((TILE_DIM, TILE_DIM + 1), f32)
    x = ember.block_idx.x * TILE_DIM + ember.thread_idx.x
    y = ember.block_idx.y * TILE_DIM + ember.thread_idx.y
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        tile[ember.thread_idx.y + i, ember.thread_idx.x] = idata[(y + i) * width + x]
    ember.barrier()
    x = ember.block_idx.y * TILE_DIM + ember.thread_idx.x
    y = ember.block_idx.x * TILE_DIM + ember.thread_idx.y
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        odata[(y + i) * height + x] = tile[ember.thread_idx.x, ember.thread_idx.y + i]


NUM_BINS = 64


# NVIDIA Developer Blog, "GPU Pro Tip: Fast Histograms Using Shared Atomics on Maxwell":
# histogram_smem_atomics (a per-block histogram in shared memory, then global atomics)
@ember.kernel
def histogram_smem_atomics(inp, n, out):
    smem = ember.shared(NUM_BINS, ember.uint32)
    t = ember.thread_idx.x
    for i in range(t, NUM_BINS, ember.block_dim.x):
        smem[i] = 0
    ember.barrier()
    i = ember.global_id()
    while i < n:
        ember.atomic_add(smem, inp[i] % NUM_BINS, 1)
        i += ember.global_size()
    ember.barrier()
    for i in range(t, NUM_BINS, ember.block_dim.x):
        ember.atomic_add(out, i, smem[i])


# NVIDIA cuda-samples, 2_Concepts_and_Techniques/reduction: reduce3 (first add during
# load, sequential addressing; `extern __shared__ T sdata[]` sized by the launch)
@ember.kernel
def reduce3(g_idata, g_odata, n):
    sdata = ember.shared(ember.block_dim.x, g_idata.dtype)
    tid = ember.thread_idx.x
    i = ember.block_idx.x * (ember.block_dim.x * 2) + ember.thread_idx.x
    my_sum = g_idata[i] if i < n else 0
    if i + ember.block_dim.x < n:
        my_sum += g_idata[i + ember.block_dim.x]
    sdata[tid] = my_sum
    ember.barrier()
    s = ember.block_dim.x // 2
    while s > 0:
        if tid < s:
            my_sum = my_sum + sdata[tid + s]
            sdata[tid] = my_sum
        ember.barrier()
        s >>= 1
    if tid == 0:
        g_odata[ember.block_idx.x] = my_sum


# NVIDIA cuda-samples, reduction: reduce4's warp stage (the last 64 values folded with
# __shfl_down_sync), with the block's partial sums in dynamic shared memory
@ember.kernel
def reduce_shfl(g_idata, g_odata, n):
    sdata = ember.shared(ember.block_dim.x, g_idata.dtype)
    tid = ember.thread_idx.x
    block_size = ember.block_dim.x
    i = ember.block_idx.x * (block_size * 2) + tid
    my_sum = g_idata[i] if i < n else 0
    if i + block_size < n:
        my_sum += g_idata[i + block_size]
    sdata[tid] = my_sum
    ember.barrier()
    s = block_size // 2
    while s > 32:
        if tid < s:
            my_sum = my_sum + sdata[tid + s]
            sdata[tid] = my_sum
        ember.barrier()
        s >>= 1
    if tid < 32:  # the first warp: fold with shuffles
        if block_size >= 64:
            my_sum += sdata[tid + 32]
        offset = ember.warp_size() // 2
        while offset > 0:
            my_sum += ember.shfl_down_sync(0xFFFFFFFF, my_sum, offset)
            offset //= 2
    if tid == 0:
        g_odata[ember.block_idx.x] = my_sum


# NVIDIA cuda-samples, 2_Concepts_and_Techniques/threadFenceReduction: sumReduce's last
# block pattern (each block stores its partial sum, __threadfence(), atomicInc on a
# retirement counter; the block that sees gridDim.x - 1 sums the partials and resets it)
@ember.kernel
def thread_fence_reduce(g_idata, g_odata, n, retirement):
    sdata = ember.shared(256, f32)
    am_last = ember.shared(1, ember.int32)
    tid = ember.thread_idx.x
    acc = f32(0.0)
    i = ember.global_id()
    while i < n:
        acc += g_idata[i]
        i += ember.global_size()
    sdata[tid] = acc
    ember.barrier()
    s = ember.block_dim.x // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        ember.barrier()
        s //= 2
    if tid == 0:
        g_odata[ember.block_idx.x] = sdata[0]
        ember.threadfence()
        ticket = ember.atomic_inc(retirement, 0, ember.uint32(ember.grid_dim.x))
        am_last[0] = 1 if ticket == ember.grid_dim.x - 1 else 0
    ember.barrier()
    if am_last[0] == 1:  # the last block sums every block's result
        acc = f32(0.0)
        for k in range(tid, ember.grid_dim.x, ember.block_dim.x):
            acc += g_odata[k]
        sdata[tid] = acc
        ember.barrier()
        s = ember.block_dim.x // 2
        while s > 0:
            if tid < s:
                sdata[tid] += sdata[tid + s]
            ember.barrier()
            s //= 2
        if tid == 0:
            g_odata[0] = sdata[0]
            retirement[0] = 0


# NVIDIA cuda-samples, 2_Concepts_and_Techniques/sortingNetworks: bitonicSortShared (one
# block sorts SHARED_SIZE keys with their values, in shared memory, ascending if dir)
SHARED_SIZE = 256


def comparator(key_a, val_a, key_b, val_b, direction):
    if (key_a > key_b) == direction:
        return key_b, val_b, key_a, val_a
    return key_a, val_a, key_b, val_b


@ember.kernel
def bitonic_sort_shared(dst_key, dst_val, src_key, src_val, direction):
    s_key = ember.shared(SHARED_SIZE, ember.uint32)
    s_val = ember.shared(SHARED_SIZE, ember.uint32)
    t = ember.thread_idx.x
    base = ember.block_idx.x * SHARED_SIZE
    s_key[t] = src_key[base + t]
    s_val[t] = src_val[base + t]
    s_key[t + SHARED_SIZE // 2] = src_key[base + t + SHARED_SIZE // 2]
    s_val[t + SHARED_SIZE // 2] = src_val[base + t + SHARED_SIZE // 2]
    size = 2
    while size < SHARED_SIZE:
        ddd = direction ^ ((t & (size // 2)) != 0)  # the bitonic merge direction
        stride = size // 2
        while stride > 0:
            ember.barrier()
            pos = 2 * t - (t & (stride - 1))
            a, va, b, vb = comparator(s_key[pos], s_val[pos], s_key[pos + stride],
                                      s_val[pos + stride], ddd)  # fmt: skip
            s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride] = a, va, b, vb
            stride >>= 1
        size <<= 1
    stride = SHARED_SIZE // 2  # the final merge: one direction for the whole array
    while stride > 0:
        ember.barrier()
        pos = 2 * t - (t & (stride - 1))
        a, va, b, vb = comparator(s_key[pos], s_val[pos], s_key[pos + stride],
                                  s_val[pos + stride], direction)  # fmt: skip
        s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride] = a, va, b, vb
        stride >>= 1
    ember.barrier()
    dst_key[base + t] = s_key[t]
    dst_val[base + t] = s_val[t]
    dst_key[base + t + SHARED_SIZE // 2] = s_key[t + SHARED_SIZE // 2]
    dst_val[base + t + SHARED_SIZE // 2] = s_val[t + SHARED_SIZE // 2]


# NVIDIA cuda-samples, 3_CUDA_Features/../convolutionSeparable: convolutionRowsKernel with
# the filter in __constant__ memory (here: a captured NumPy array, compiled in as a
# constant table) and a shared tile with halos
KERNEL_RADIUS = 8
C_KERNEL = (np.exp(-(np.linspace(-2, 2, 2 * KERNEL_RADIUS + 1) ** 2)) / 4.0).astype(np.float32)
ROWS_BLOCKDIM_X = 16
ROWS_BLOCKDIM_Y = 4
ROWS_RESULT_STEPS = 4
ROWS_HALO_STEPS = 1


@ember.kernel
def convolution_rows(d_dst, d_src, image_w, image_h, pitch):
    s_data = ember.shared(
        (ROWS_BLOCKDIM_Y, (ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X), f32
    )
    base_x = (ember.block_idx.x * ROWS_RESULT_STEPS - ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X
    base_x += ember.thread_idx.x
    base_y = ember.block_idx.y * ROWS_BLOCKDIM_Y + ember.thread_idx.y
    tx, ty = ember.thread_idx.x, ember.thread_idx.y
    src = d_src[base_y * pitch :]  # the original moves its pointers; these are views
    dst = d_dst[base_y * pitch :]
    for i in range(ROWS_HALO_STEPS, ROWS_HALO_STEPS + ROWS_RESULT_STEPS):  # main data
        s_data[ty, tx + i * ROWS_BLOCKDIM_X] = src[base_x + i * ROWS_BLOCKDIM_X]
    for i in range(ROWS_HALO_STEPS):  # left halo
        inside = base_x >= -i * ROWS_BLOCKDIM_X
        s_data[ty, tx + i * ROWS_BLOCKDIM_X] = src[base_x + i * ROWS_BLOCKDIM_X] if inside else 0
    last = ROWS_HALO_STEPS + ROWS_RESULT_STEPS
    for i in range(last, last + ROWS_HALO_STEPS):  # right halo
        inside = image_w - base_x > i * ROWS_BLOCKDIM_X
        s_data[ty, tx + i * ROWS_BLOCKDIM_X] = src[base_x + i * ROWS_BLOCKDIM_X] if inside else 0
    ember.barrier()
    for i in range(ROWS_HALO_STEPS, ROWS_HALO_STEPS + ROWS_RESULT_STEPS):
        total = f32(0.0)
        for j in ember.static_range(-KERNEL_RADIUS, KERNEL_RADIUS + 1):
            total += C_KERNEL[KERNEL_RADIUS - j] * s_data[ty, tx + i * ROWS_BLOCKDIM_X + j]
        dst[base_x + i * ROWS_BLOCKDIM_X] = total


# NVIDIA, "CUDA C/C++ Basics" (Supercomputing 2011 tutorial, C. Zeller): stencil_1d with a
# shared-memory window and halos
RADIUS = 3
BLOCK_SIZE = 64


@ember.kernel
def stencil_1d(inp, out):
    temp = ember.shared(BLOCK_SIZE + 2 * RADIUS, ember.int32)
    gindex = ember.thread_idx.x + ember.block_idx.x * ember.block_dim.x
    lindex = ember.thread_idx.x + RADIUS
    temp[lindex] = inp[gindex + RADIUS]  # the input is padded by RADIUS on both sides
    if ember.thread_idx.x < RADIUS:
        temp[lindex - RADIUS] = inp[gindex]
        temp[lindex + BLOCK_SIZE] = inp[gindex + BLOCK_SIZE + RADIUS]
    ember.barrier()
    result = 0
    for offset in range(-RADIUS, RADIUS + 1):
        result += temp[lindex + offset]
    out[gindex] = result


# NVIDIA cuda-samples, 5_Domain_Specific/nbody (bodysystemcuda_kernel.cuh):
# bodyBodyInteraction and computeBodyAccel's shared tiles of positions
SOFTENING_SQ = 0.01


def body_body_interaction(ai, bi_x, bi_y, bi_z, bj):
    rx = bj[0] - bi_x
    ry = bj[1] - bi_y
    rz = bj[2] - bi_z
    dist_sqr = rx * rx + ry * ry + rz * rz + f32(SOFTENING_SQ)
    inv_dist = ember.rsqrt(dist_sqr)
    inv_dist_cube = inv_dist * inv_dist * inv_dist
    s = bj[3] * inv_dist_cube
    ai[0] += rx * s
    ai[1] += ry * s
    ai[2] += rz * s


@ember.kernel
def nbody_accel(pos, accel, n):
    tile = ember.shared((128, 4), f32)
    i = ember.global_id()
    me = pos[i % n]
    acc = ember.local(3, f32)
    acc[0], acc[1], acc[2] = f32(0.0), f32(0.0), f32(0.0)
    for start in range(0, n, ember.block_dim.x):
        j = start + ember.thread_idx.x
        for k in range(4):
            tile[ember.thread_idx.x, k] = pos[j, k] if j < n else f32(0.0)
        ember.barrier()
        for k in range(ember.block_dim.x):
            body_body_interaction(acc, me[0], me[1], me[2], tile[k])
        ember.barrier()
    if i < n:
        for k in range(3):
            accel[i, k] = acc[k]


# numba-cuda tests, cudapy/test_localmem.py: culocal (a per-thread array as scratch)
@ember.kernel
def culocal(A, B):
    C = ember.local(100, ember.float64)
    for i in range(C.shape[0]):
        C[i] = A[i]
    for i in range(C.shape[0]):
        B[i] = C[i]


# numba-cuda docs, "Memory management: dynamic shared memory" (``cuda.shared.array(0, ...)``
# sized by the launch: ``f[1, 32, 0, 128]``)
@ember.kernel
def dynamic_shared_numba(x, y):
    dynsmem = ember.shared(0, f32)
    i = ember.grid(1)
    dynsmem[i] = x[i]
    ember.barrier()
    y[i] = dynsmem[ember.block_dim.x - 1 - i] + len(dynsmem)


# CUDA C++ Programming Guide, "Shared memory" (__shared__ variable type qualifier): several
# dynamically sized arrays carved from one `extern __shared__` buffer
@ember.kernel
def carved(n_short, n_float, n_int, out):
    array0 = ember.shared(n_short, ember.int16)
    array1 = ember.shared(n_float, f32)
    array2 = ember.shared(n_int, ember.int32)
    t = ember.thread_idx.x
    if t < n_short:
        array0[t] = t
    if t < n_float:
        array1[t] = 0.5 * t
    if t < n_int:
        array2[t] = -t
    ember.barrier()
    if t < n_short:
        out[t, 0] = array0[n_short - 1 - t]
    if t < n_float:
        out[t, 1] = array1[n_float - 1 - t]
    if t < n_int:
        out[t, 2] = array2[n_int - 1 - t]


# ======================================================================= warps
# NVIDIA cuda-samples, 2_Concepts_and_Techniques/shfl_scan: shfl_scan_test (an inclusive
# scan per warp with __shfl_up_sync, the warps' totals scanned by the first warp through
# shared memory, then added back)
@ember.kernel
def shfl_scan(data, width, partial_sums):
    sums = ember.shared(ember.block_dim.x // 32, ember.int32)
    id_ = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    lane_id = id_ % ember.warp_size()
    warp_id = ember.thread_idx.x // ember.warp_size()
    value = data[id_]
    i = 1
    while i <= width:
        n = ember.shfl_up_sync(0xFFFFFFFF, value, i, width)
        if lane_id >= i:
            value += n
        i *= 2
    if ember.thread_idx.x % ember.warp_size() == ember.warp_size() - 1:
        sums[warp_id] = value
    ember.barrier()
    warps = ember.block_dim.x // ember.warp_size()
    if warp_id == 0 and lane_id < warps:
        warp_sum = sums[lane_id]
        mask = (1 << warps) - 1
        i = 1
        while i <= warps:
            n = ember.shfl_up_sync(mask, warp_sum, i, warps)
            if lane_id >= i:
                warp_sum += n
            i *= 2
        sums[lane_id] = warp_sum
    ember.barrier()
    block_sum = 0
    if warp_id > 0:
        block_sum = sums[warp_id - 1]
    value += block_sum
    data[id_] = value
    if ember.thread_idx.x == ember.block_dim.x - 1:
        partial_sums[ember.block_idx.x] = value


# NVIDIA cuda-samples, 0_Introduction/simpleVoteIntrinsics (simpleVote_kernel.cuh):
# VoteAnyKernel1, VoteAllKernel2 and VoteAnyKernel3
@ember.kernel
def vote_any(inp, out):
    tx = ember.thread_idx.x
    out[tx] = 1 if ember.any_sync(0xFFFFFFFF, inp[tx] != 0) else 0


@ember.kernel
def vote_all(inp, out):
    tx = ember.thread_idx.x
    out[tx] = 1 if ember.all_sync(0xFFFFFFFF, inp[tx] != 0) else 0


@ember.kernel
def vote_any3(info, warp_size):
    tx = ember.thread_idx.x
    mask = 0xFFFFFFFF
    offset = (tx // warp_size) * warp_size
    all_ = ember.all_sync(mask, tx >= offset + warp_size // 2)
    any_ = ember.any_sync(mask, tx >= offset + warp_size // 2)
    info[tx * 3] = 1 if any_ else 0
    info[tx * 3 + 1] = 1 if all_ else 0
    info[tx * 3 + 2] = 1 if (ember.any_sync(mask, tx % warp_size == 0)) else 0


# NVIDIA Developer Blog, "CUDA Pro Tip: Optimized Filtering with Warp-Aggregated Atomics":
# filter_k with atomicAggInc in its __ballot_sync form (the warp's leader reserves space
# for all its lanes with one atomic; each lane writes at its rank among them)
@ember.kernel
def filter_warp_aggregated(dst, nres, src, n):
    i = ember.thread_idx.x + ember.block_idx.x * ember.block_dim.x
    lane = ember.lane_id()
    keep = i < n and src[i] > 0
    mask = ember.ballot(keep)
    leader = ember.ffs(mask) - 1
    res = 0
    if mask != 0 and lane == leader:
        res = ember.atomic_add(nres, 0, ember.popc(mask))
    res = ember.shfl_sync(0xFFFFFFFF, res, leader)
    if keep:
        rank = ember.popc(mask & ((ember.uint32(1) << lane) - 1))
        dst[res + rank] = src[i]


# karpathy/llm.c, dev/cuda/layernorm_forward.cu: layernorm_forward_kernel3 (a warp per row,
# mean and variance reduced across the warp; cooperative groups' reduce is a butterfly of
# shuffles here)
def warp_reduce_sum(val):
    offset = 16
    while offset > 0:
        val += ember.shfl_xor_sync(0xFFFFFFFF, val, offset)
        offset //= 2
    return val


@ember.kernel
def layernorm_forward(out, mean, rstd, inp, weight, bias, N, C):
    lane_id = ember.thread_idx.x % 32
    warp_id = ember.thread_idx.x // 32
    num_warps = ember.block_dim.x // 32
    idx = ember.block_idx.x * num_warps + warp_id
    if idx >= N:
        return
    x = inp[idx, :]
    total = f32(0.0)
    for i in range(lane_id, C, 32):
        total += x[i]
    total = warp_reduce_sum(total)
    m = total / C
    if lane_id == 0:
        mean[idx] = m
    total = f32(0.0)
    for i in range(lane_id, C, 32):
        diff = x[i] - m
        total += diff * diff
    total = warp_reduce_sum(total)
    s = ember.rsqrt(total / C + f32(1e-5))
    if lane_id == 0:
        rstd[idx] = s
    o = out[idx, :]
    for c in range(lane_id, C, 32):
        n = s * (x[c] - m)
        o[c] = n * weight[c] + bias[c]


# karpathy/llm.c, dev/cuda/softmax_forward.cu: softmax_forward_online_kernel2 (a warp per
# row, one pass keeping a running maximum and the sum rescaled to it, then merged across
# the warp)
@ember.kernel
def softmax_online(out, inp, N, C):
    warp = ember.thread_idx.x // 32
    lane = ember.thread_idx.x % 32
    row = ember.block_idx.x * (ember.block_dim.x // 32) + warp
    if row >= N:
        return
    x = inp[row, :]
    maxval = f32(-math.inf)
    sumval = f32(0.0)
    for i in range(lane, C, 32):
        v = x[i]
        if v > maxval:
            sumval *= ember.exp(maxval - v)
            maxval = v
        sumval += ember.exp(v - maxval)
    offset = 16
    while offset > 0:
        other_max = ember.shfl_xor(maxval, offset)
        other_sum = ember.shfl_xor(sumval, offset)
        if other_max > maxval:
            sumval = sumval * ember.exp(maxval - other_max) + other_sum
            maxval = other_max
        else:
            sumval += other_sum * ember.exp(other_max - maxval)
        offset //= 2
    y = out[row, :]
    for i in range(lane, C, 32):
        y[i] = ember.exp(x[i] - maxval) / sumval


# karpathy/llm.c, train_gpt2.cu: crossentropy_forward_kernel1 (the row of probabilities a
# view, as the original's pointer arithmetic)
@ember.kernel
def crossentropy_forward(losses, probs, targets, B, T, V):
    i = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    if i < B * T:
        b = i // T
        t = i % T
        probs_bt = probs[b, t, :]
        ix = targets[b, t]
        losses[b, t] = -ember.log(probs_bt[ix])


# ======================================================================= atomics
# NVIDIA cuda-samples, 0_Introduction/simpleAtomicIntrinsics: testKernel (every atomic on
# one array; computeGold in simpleAtomicIntrinsics_cpu.cpp is the reference)
@ember.kernel
def simple_atomics(g_odata, g_udata):
    tid = ember.block_dim.x * ember.block_idx.x + ember.thread_idx.x
    ember.atomic_add(g_odata, 0, 10)
    ember.atomic_sub(g_odata, 1, 10)
    ember.atomic_exch(g_odata, 2, tid)
    ember.atomic_max(g_odata, 3, tid)
    ember.atomic_min(g_odata, 4, tid)
    ember.atomic_inc(g_udata, 5, 17)
    ember.atomic_dec(g_udata, 6, 137)
    ember.atomic_cas(g_odata, 7, tid - 1, tid)
    ember.atomic_and(g_odata, 8, 2 * tid + 7)
    ember.atomic_or(g_odata, 9, 1 << (tid % 32))
    ember.atomic_xor(g_odata, 10, tid)


# numba-cuda tests, cudapy/test_atomics.py: atomic_inc32 / atomic_dec32 style (a shared
# histogram whose bins wrap at op2 with CUDA's inc / dec semantics)
@ember.kernel
def atomic_inc_dec_shared(ary, idx, op2, dec):
    tid = ember.thread_idx.x
    sm = ember.shared(32, ember.uint32)
    sm[tid] = ary[tid]
    ember.barrier()
    bin_ = idx[tid] % 32
    if dec:
        ember.atomic_dec(sm, bin_, op2)
    else:
        ember.atomic_inc(sm, bin_, op2)
    ember.barrier()
    ary[tid] = sm[tid]


# numba-cuda tests, cudapy/test_atomics.py: atomic_compare_and_swap (on a view res[gid:])
@ember.kernel
def atomic_compare_and_swap(res, old, ary, fill_val):
    gid = ember.grid(1)
    if gid < res.size:
        out = ember.atomic_cas(res[gid:], 0, fill_val, ary[gid])
        old[gid] = out


# ======================================================================= math
# numba-cuda tests, cudapy/test_intrinsics.py: simple_popc, simple_brev, simple_clz,
# simple_ffs, simple_fma, simple_cbrt (here one kernel over arrays of inputs)
@ember.kernel
def intrinsics(c32, c64, a, out32, out64, outf):
    i = ember.grid(1)
    if i < c32.shape[0]:
        out32[i, 0] = ember.popc(c32[i])
        out32[i, 1] = ember.brev(c32[i])
        out32[i, 2] = ember.clz(c32[i])
        out32[i, 3] = ember.ffs(c32[i])
        out64[i, 0] = ember.popc(c64[i])
        out64[i, 1] = ember.brev(c64[i])
        out64[i, 2] = ember.clz(c64[i])
        out64[i, 3] = ember.ffs(c64[i])
        outf[i, 0] = ember.fma(a[i], a[i], 1.5)
        outf[i, 1] = ember.cbrt(a[i])


# numba-cuda, numba/cuda/random.py: xoroshiro128+ (rotl, xoroshiro128p_next,
# xoroshiro128p_uniform_float32) and the docs' Monte Carlo estimate of pi
# (doc_examples/test_montecarlo.py / docs "Random number generation": compute_pi)
def rotl(x, k):
    return (x << k) | (x >> ember.uint32(64 - k))


def xoroshiro128p_next(states, index):
    s0 = states[index, 0]
    s1 = states[index, 1]
    result = s0 + s1
    s1 ^= s0
    states[index, 0] = rotl(s0, ember.uint32(55)) ^ s1 ^ (s1 << ember.uint32(14))
    states[index, 1] = rotl(s1, ember.uint32(36))
    return result


def xoroshiro128p_uniform_float32(states, index):
    x = xoroshiro128p_next(states, index)
    return f32(ember.float64(x >> ember.uint32(11)) * (1.0 / (1 << 53)))


@ember.kernel
def compute_pi(rng_states, iterations, out):
    thread_id = ember.grid(1)
    inside = 0
    for _ in range(iterations):
        x = xoroshiro128p_uniform_float32(rng_states, thread_id)
        y = xoroshiro128p_uniform_float32(rng_states, thread_id)
        if x**2 + y**2 <= 1.0:
            inside += 1
    out[thread_id] = 4.0 * inside / iterations


# NVIDIA cuda-samples, 5_Domain_Specific/fastWalshTransform: fwtBatch1Kernel (radix-4
# butterflies in `extern __shared__` memory sized by the launch; the issue's
# `((pos - lo) << 2)`)
@ember.kernel
def fwt_batch1(d_output, d_input, log2n):
    n = 1 << log2n
    s_data = ember.shared(1 << log2n, f32)
    base = ember.block_idx.x << log2n
    d_src = d_input[base : base + n]
    d_dst = d_output[base : base + n]
    for pos in range(ember.thread_idx.x, n, ember.block_dim.x):
        s_data[pos] = d_src[pos]
    pos = ember.thread_idx.x
    stride = n >> 2
    while stride > 0:
        lo = pos & (stride - 1)
        i0 = ((pos - lo) << 2) + lo
        i1 = i0 + stride
        i2 = i1 + stride
        i3 = i2 + stride
        ember.barrier()
        d0, d1, d2, d3 = s_data[i0], s_data[i1], s_data[i2], s_data[i3]
        t = d0
        d0 = d0 + d2
        d2 = t - d2
        t = d1
        d1 = d1 + d3
        d3 = t - d3
        t = d0
        s_data[i0] = d0 + d1
        s_data[i1] = t - d1
        t = d2
        s_data[i2] = d2 + d3
        s_data[i3] = t - d3
        stride >>= 2
    if log2n & 1:  # a last radix-2 stage for an odd power of two
        ember.barrier()
        for p in range(ember.thread_idx.x, n // 2, ember.block_dim.x):
            j0 = p << 1
            j1 = j0 + 1
            e0, e1 = s_data[j0], s_data[j1]
            s_data[j0] = e0 + e1
            s_data[j1] = e0 - e1
    ember.barrier()
    for p in range(ember.thread_idx.x, n, ember.block_dim.x):
        d_dst[p] = s_data[p]


# NVIDIA GPU Gems 3, chapter 39 (Harris, Sengupta, Owens): the work-efficient exclusive scan
# `prescan` in `extern __shared__` memory of n values
@ember.kernel
def prescan(g_odata, g_idata, n):
    temp = ember.shared(n, f32)
    thid = ember.thread_idx.x
    offset = 1
    temp[2 * thid] = g_idata[2 * thid]
    temp[2 * thid + 1] = g_idata[2 * thid + 1]
    d = n >> 1
    while d > 0:  # build the sum in place up the tree
        ember.barrier()
        if thid < d:
            ai = offset * (2 * thid + 1) - 1
            bi = offset * (2 * thid + 2) - 1
            temp[bi] += temp[ai]
        offset *= 2
        d >>= 1
    if thid == 0:
        temp[n - 1] = 0
    d = 1
    while d < n:  # traverse down the tree, building the scan
        offset >>= 1
        ember.barrier()
        if thid < d:
            ai = offset * (2 * thid + 1) - 1
            bi = offset * (2 * thid + 2) - 1
            t = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += t
        d *= 2
    ember.barrier()
    g_odata[2 * thid] = temp[2 * thid]
    g_odata[2 * thid + 1] = temp[2 * thid + 1]


# ======================================================================= grid sync
# numba-cuda tests, cudapy/test_cooperative_groups.py: sequential_rows (each row reads the
# previous one, written by other blocks: a grid-wide barrier between rows)
@ember.kernel
def sequential_rows(M):
    col = ember.grid(1)
    rows = M.shape[0]
    cols = M.shape[1]
    for row in range(1, rows):
        opposite = cols - col - 1
        M[row, col] = M[row - 1, opposite] + 1
        ember.grid_sync()


# numba-cuda docs, doc_examples/test_laplace.py: solve_heat_equation (time steps separated
# by grid.sync())
@ember.kernel
def solve_heat_equation(buf_0, buf_1, timesteps, k):
    i = ember.grid(1)
    if i >= len(buf_0):
        return
    for step in range(timesteps):
        data = buf_0 if step % 2 == 0 else buf_1
        next_data = buf_1 if step % 2 == 0 else buf_0
        curr_temp = data[i]
        if i == 0:
            next_temp = curr_temp + k * (data[i + 1] - (2 * curr_temp))
        elif i == len(data) - 1:
            next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp))
        else:
            next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp) + data[i + 1])
        next_data[i] = next_temp
        ember.grid_sync()


# ======================================================================= more ports
# numba-cuda docs, doc_examples/test_reduction.py: array_sum (a shared array declared inside
# a branch, sized by a captured global; the interleaved tree of the docs)
NELEM = 256


@ember.kernel
def array_sum(data):
    tid = ember.thread_idx.x
    size = len(data)
    if tid < size:
        i = ember.grid(1)
        shr = ember.shared(NELEM, ember.int32)
        shr[tid] = data[i]
        ember.barrier()
        s = 1
        while s < ember.block_dim.x:
            if tid % (2 * s) == 0:
                shr[tid] += shr[tid + s]
            s *= 2
            ember.barrier()
        if tid == 0:
            data[tid] = shr[tid]


# numba-cuda docs, doc_examples/test_globals.py: compute_totals (a captured float and a
# captured NumPy table, frozen at the first compile)
TAX_RATE = 0.08
PRICES = np.array([10.0, 25.0, 5.0, 15.0, 30.0], dtype=np.float64)


@ember.kernel
def compute_totals(quantities, totals):
    i = ember.grid(1)
    if i < totals.size:
        totals[i] = quantities[i] * PRICES[i] * (1 + TAX_RATE)


# numba-cuda docs, doc_examples/test_montecarlo.py: mc_integrator_kernel (a sample from
# the xoroshiro stream above, rescaled, through a plain Python integrand)
def integrand(x):
    return 1.0 / x


@ember.kernel
def mc_integrator(out, rng_states, lower_lim, upper_lim):
    size = len(out)
    gid = ember.grid(1)
    if gid < size:
        samp = xoroshiro128p_uniform_float32(rng_states, gid)
        samp = samp * (upper_lim - lower_lim) + lower_lim
        y = integrand(samp)
        out[gid] = y


# numba-cuda docs, doc_examples/test_sessionize.py: sessionize (grid.sync() inside a branch,
# then a look-ahead while loop with a break)
SESSION_TIMEOUT = np.int64(3600 * 10**9)


@ember.kernel
def sessionize(user_id, timestamp, results):
    gid = ember.grid(1)
    size = len(user_id)
    if gid >= size:
        return
    is_first_datapoint = gid == 0
    if not is_first_datapoint:
        new_user = user_id[gid] != user_id[gid - 1]
        timed_out = timestamp[gid] - timestamp[gid - 1] > SESSION_TIMEOUT
        is_sess_boundary = new_user or timed_out
    else:
        is_sess_boundary = True
    if is_sess_boundary:
        results[gid] = gid
        ember.grid_sync()
        look_ahead = 1
        while results[gid + look_ahead] == 0:
            results[gid + look_ahead] = gid
            look_ahead += 1
            if gid + look_ahead == size - 1:
                results[gid + look_ahead] = gid
                break


# numba-cuda docs, cuda/intrinsics.rst: max_example (cuda.atomic.max on float64)
@ember.kernel
def max_example(result, values):
    tid = ember.thread_idx.x
    bid = ember.block_idx.x
    bdim = ember.block_dim.x
    i = (bid * bdim) + tid
    ember.atomic_max(result, 0, values[i])


# numba-cuda tests, cudapy/test_atomics.py: atomic_add2 (a tuple index into a 2-d shared
# array)
@ember.kernel
def atomic_add2(ary):
    tx = ember.thread_idx.x
    ty = ember.thread_idx.y
    sm = ember.shared((4, 8), ember.uint32)
    sm[tx, ty] = ary[tx, ty]
    ember.barrier()
    ember.atomic_add(sm, (tx, ty), 1)
    ember.barrier()
    ary[tx, ty] = sm[tx, ty]


# Bell & Garland, "Implementing Sparse Matrix-Vector Multiplication on Throughput-Oriented
# Processors" (SC'09): spmv_csr_scalar_kernel (a thread per row) and spmv_csr_vector_kernel
# (a warp per row; the warp-synchronous shared tree, with __syncwarp() as Volta needs)
@ember.kernel
def spmv_csr_scalar(num_rows, ptr, indices, data, x, y):
    row = ember.block_dim.x * ember.block_idx.x + ember.thread_idx.x
    if row < num_rows:
        dot = f32(0)
        row_start = ptr[row]
        row_end = ptr[row + 1]
        for jj in range(row_start, row_end):
            dot += data[jj] * x[indices[jj]]
        y[row] += dot


@ember.kernel
def spmv_csr_vector(num_rows, ptr, indices, data, x, y):
    vals = ember.shared(128, f32)
    thread_id = ember.block_dim.x * ember.block_idx.x + ember.thread_idx.x
    warp_id = thread_id // 32
    lane = thread_id & (32 - 1)
    row = warp_id
    if row < num_rows:
        row_start = ptr[row]
        row_end = ptr[row + 1]
        t = ember.thread_idx.x
        vals[t] = 0
        for jj in range(row_start + lane, row_end, 32):
            vals[t] += data[jj] * x[indices[jj]]
        ember.syncwarp()
        if lane < 16:
            vals[t] += vals[t + 16]
        ember.syncwarp()
        if lane < 8:
            vals[t] += vals[t + 8]
        ember.syncwarp()
        if lane < 4:
            vals[t] += vals[t + 4]
        ember.syncwarp()
        if lane < 2:
            vals[t] += vals[t + 2]
        ember.syncwarp()
        if lane < 1:
            vals[t] += vals[t + 1]
        if lane == 0:
            y[row] += vals[t]


# Rodinia 3.1, bfs/kernel.cu and kernel2.cu (Harish & Narayanan, HiPC 2007): one BFS level
# per launch pair over boolean frontier masks (the Node struct is a (n, 2) array here)
@ember.kernel
def bfs_kernel(g_graph_nodes, g_graph_edges, g_graph_mask, g_updating_graph_mask,
               g_graph_visited, g_cost, no_of_nodes):  # fmt: skip
    tid = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    if tid < no_of_nodes and g_graph_mask[tid]:
        g_graph_mask[tid] = False
        start = g_graph_nodes[tid, 0]
        for i in range(start, g_graph_nodes[tid, 1] + start):
            id = g_graph_edges[i]
            if not g_graph_visited[id]:
                g_cost[id] = g_cost[tid] + 1
                g_updating_graph_mask[id] = True


@ember.kernel
def bfs_kernel2(g_graph_mask, g_updating_graph_mask, g_graph_visited, g_over, no_of_nodes):
    tid = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    if tid < no_of_nodes and g_updating_graph_mask[tid]:
        g_graph_mask[tid] = True
        g_graph_visited[tid] = True
        g_over[0] = True
        g_updating_graph_mask[tid] = False


# Rodinia 3.1, kmeans/kmeans_cuda_kernel.cu: kmeansPoint (nearest centre per point; the
# features are stored feature-major, the centres, __constant__ there, an argument here)
FLT_MAX = 3.40282347e38


@ember.kernel
def kmeans_point(features, nfeatures, npoints, nclusters, membership, clusters):
    point_id = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    index = -1
    if point_id < npoints:
        min_dist = f32(FLT_MAX)
        for i in range(nclusters):
            cluster_base_index = i * nfeatures
            ans = f32(0.0)
            for j in range(nfeatures):
                addr = point_id + j * npoints
                diff = features[addr] - clusters[cluster_base_index + j]
                ans += diff * diff
            dist = ans
            if dist < min_dist:
                min_dist = dist
                index = i
        membership[point_id] = index


# NVIDIA Developer Blog, "Finite Difference Methods in CUDA C/C++, Part 1" (Harris):
# derivative_x, an eighth-order x derivative of sPencils pencils per block, with a periodic
# 4-point halo filled in shared memory (the c_ax... __constant__ scalars are captured here)
FD_MX, FD_MY, FD_MZ, S_PENCILS = 32, 16, 4, 4
FD_DX = 1.0 / (FD_MX - 1)
C_AX, C_BX = 4.0 / 5.0 / FD_DX, -1.0 / 5.0 / FD_DX
C_CX, C_DX = 4.0 / 105.0 / FD_DX, -1.0 / 280.0 / FD_DX


@ember.kernel
def derivative_x(f, df):
    s_f = ember.shared((S_PENCILS, FD_MX + 8), f32)
    i = ember.thread_idx.x
    j = ember.block_idx.x * ember.block_dim.y + ember.thread_idx.y
    k = ember.block_idx.y
    si = i + 4
    sj = ember.thread_idx.y
    s_f[sj, si] = f[k, j, i]
    ember.barrier()
    if i < 4:
        s_f[sj, si - 4] = s_f[sj, si + FD_MX - 5]
        s_f[sj, si + FD_MX] = s_f[sj, si + 1]
    ember.barrier()
    df[k, j, i] = (
        f32(C_AX) * (s_f[sj, si + 1] - s_f[sj, si - 1])
        + f32(C_BX) * (s_f[sj, si + 2] - s_f[sj, si - 2])
        + f32(C_CX) * (s_f[sj, si + 3] - s_f[sj, si - 3])
        + f32(C_DX) * (s_f[sj, si + 4] - s_f[sj, si - 4])
    )


# NVIDIA cuda-samples, 2_Concepts_and_Techniques/sortingNetworks/oddEvenMergeSort.cu:
# oddEvenMergeSortShared (Batcher's odd-even merge in shared memory; reuses `comparator`)
@ember.kernel
def odd_even_merge_sort_shared(dst_key, dst_val, src_key, src_val, array_length, direction):
    s_key = ember.shared(SHARED_SIZE, ember.uint32)
    s_val = ember.shared(SHARED_SIZE, ember.uint32)
    t = ember.thread_idx.x
    base = ember.block_idx.x * SHARED_SIZE + t
    half = SHARED_SIZE // 2
    s_key[t] = src_key[base]
    s_val[t] = src_val[base]
    s_key[t + half] = src_key[base + half]
    s_val[t + half] = src_val[base + half]
    size = 2
    while size <= array_length:
        stride = size // 2
        offset = t & (stride - 1)
        ember.barrier()
        pos = 2 * t - (t & (stride - 1))
        s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride] = comparator(
            s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride], direction
        )
        stride >>= 1
        while stride > 0:
            ember.barrier()
            pos = 2 * t - (t & (stride - 1))
            if offset >= stride:
                a, va, b, vb = comparator(s_key[pos - stride], s_val[pos - stride], s_key[pos],
                                          s_val[pos], direction)  # fmt: skip
                s_key[pos - stride], s_val[pos - stride], s_key[pos], s_val[pos] = a, va, b, vb
            stride >>= 1
        size <<= 1
    ember.barrier()
    dst_key[base] = s_key[t]
    dst_val[base] = s_val[t]
    dst_key[base + half] = s_key[t + half]
    dst_val[base + half] = s_val[t + half]


# NVIDIA GPU Gems 3, chapter 39, Example 39-1: the naive (Hillis-Steele) exclusive scan with
# a double buffer in shared memory sized by the launch (the book's `+=` read of the output
# buffer is the known erratum; this is the corrected sum of the input buffer)
@ember.kernel
def naive_scan(g_odata, g_idata, n):
    temp = ember.shared(2 * n, f32)
    thid = ember.thread_idx.x
    pout = 0
    pin = 1
    temp[pout * n + thid] = g_idata[thid - 1] if thid > 0 else f32(0)
    ember.barrier()
    offset = 1
    while offset < n:
        pout = 1 - pout
        pin = 1 - pout
        if thid >= offset:
            temp[pout * n + thid] = temp[pin * n + thid] + temp[pin * n + thid - offset]
        else:
            temp[pout * n + thid] = temp[pin * n + thid]
        ember.barrier()
        offset *= 2
    g_odata[thid] = temp[pout * n + thid]


# karpathy/llm.c, dev/cuda/attention_forward.cu: attention_query_key_kernel1 (causal
# scores, -INFINITY above the diagonal) and attention_softmax_kernel1; pointer offsets are
# views of the (B, T, 3C) activations and the (B, NH, T, T) scores
@ember.kernel
def attention_query_key(preatt, inp, B, T, C, NH):
    idx = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    total_threads = B * NH * T * T
    if idx < total_threads:
        t2 = idx % T
        t = (idx // T) % T
        h = (idx // (T * T)) % NH
        b = idx // (NH * T * T)
        if t2 > t:
            preatt[b, h, t, t2] = -math.inf
            return
        hs = C // NH
        scale = 1.0 / math.sqrt(hs)
        query_t = inp[b, t, h * hs : (h + 1) * hs]
        key_t2 = inp[b, t2, C + h * hs : C + (h + 1) * hs]
        val = f32(0.0)
        for i in range(hs):
            val += query_t[i] * key_t2[i]
        val *= scale
        preatt[b, h, t, t2] = val


@ember.kernel
def attention_softmax(att, preatt, B, T, NH):
    idx = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    total_threads = B * T * NH
    if idx < total_threads:
        h = idx % NH
        t = (idx // NH) % T
        b = idx // (NH * T)
        preatt_bth = preatt[b, h, t]
        att_bth = att[b, h, t]
        maxval = f32(-10000.0)
        for t2 in range(t + 1):
            if preatt_bth[t2] > maxval:
                maxval = preatt_bth[t2]
        expsum = f32(0.0)
        for t2 in range(t + 1):
            expv = ember.exp(preatt_bth[t2] - maxval)
            expsum += expv
            att_bth[t2] = expv
        expsum_inv = f32(0.0) if expsum == 0.0 else f32(1.0) / expsum
        for t2 in range(T):
            if t2 <= t:
                att_bth[t2] *= expsum_inv
            else:
                att_bth[t2] = 0.0


# NVIDIA Warp, warp/examples/core/example_wave.py: sample/laplacian/wave_solve (wp.tid()
# is the flat global id; sample reassigns its clamped coordinates, as the @wp.func does)
def wave_sample(f, x, y, width, height):
    x = min(max(x, 0), width - 1)
    y = min(max(y, 0), height - 1)
    s = f[y * width + x]
    return float(s)


def wave_laplacian(f, x, y, width, height):
    ddx = (
        wave_sample(f, x + 1, y, width, height)
        - 2.0 * wave_sample(f, x, y, width, height)
        + wave_sample(f, x - 1, y, width, height)
    )
    ddy = (
        wave_sample(f, x, y + 1, width, height)
        - 2.0 * wave_sample(f, x, y, width, height)
        + wave_sample(f, x, y - 1, width, height)
    )
    return ddx + ddy


@ember.kernel
def wave_solve(hprevious, hcurrent, width, height, inv_cell, k_speed, k_damp, dt):
    tid = ember.global_id()
    if tid >= width * height:
        return
    x = tid % width
    y = tid // width
    lap = wave_laplacian(hcurrent, x, y, width, height) * inv_cell * inv_cell
    h1 = hcurrent[tid]
    h0 = hprevious[tid]
    h = 2.0 * h1 - h0 + dt * dt * (k_speed * lap - k_damp * (h1 - h0))
    hprevious[tid] = h


# NVIDIA cuda-samples, 0_Introduction/matrixMul: matrixMulCUDA<BLOCK_SIZE> (flat row-major
# matrices, the tiles declared in the loop, the `#pragma unroll` loop a static_range)
MM_BLOCK = 8


@ember.kernel
def matrix_mul_cuda(C, A, B, wA, wB):
    bx = ember.block_idx.x
    by = ember.block_idx.y
    tx = ember.thread_idx.x
    ty = ember.thread_idx.y
    a_begin = wA * MM_BLOCK * by
    a_end = a_begin + wA - 1
    a_step = MM_BLOCK
    b = MM_BLOCK * bx
    b_step = MM_BLOCK * wB
    c_sub = f32(0)
    for a in range(a_begin, a_end + 1, a_step):
        As = ember.shared((MM_BLOCK, MM_BLOCK), f32)
        Bs = ember.shared((MM_BLOCK, MM_BLOCK), f32)
        As[ty, tx] = A[a + wA * ty + tx]
        Bs[ty, tx] = B[b + wB * ty + tx]
        ember.barrier()
        for k in ember.static_range(MM_BLOCK):
            c_sub += As[ty, k] * Bs[k, tx]
        ember.barrier()
        b += b_step
    c = wB * MM_BLOCK * by + MM_BLOCK * bx
    C[c + wB * ty + tx] = c_sub


# NVIDIA cuda-samples, 2_Concepts_and_Techniques/scalarProd: scalarProdGPU (ACCUM_N partial
# sums per vector, a tree with barriers in loops over vectors and accumulators)
ACCUM_N = 256


@ember.kernel
def scalar_prod(d_C, d_A, d_B, vector_n, element_n):
    accum_result = ember.shared(ACCUM_N, f32)
    for vec in range(ember.block_idx.x, vector_n, ember.grid_dim.x):
        vector_base = element_n * vec
        vector_end = vector_base + element_n
        for i_accum in range(ember.thread_idx.x, ACCUM_N, ember.block_dim.x):
            s = f32(0)
            for pos in range(vector_base + i_accum, vector_end, ACCUM_N):
                s += d_A[pos] * d_B[pos]
            accum_result[i_accum] = s
        stride = ACCUM_N // 2
        while stride > 0:
            ember.barrier()
            for i_accum in range(ember.thread_idx.x, stride, ember.block_dim.x):
                accum_result[i_accum] += accum_result[stride + i_accum]
            stride >>= 1
        ember.barrier()
        if ember.thread_idx.x == 0:
            d_C[vec] = accum_result[0]


# NVIDIA cuda-samples, 5_Domain_Specific/quasirandomGenerator (quasirandomGenerator_gpu.cuh):
# MoroInvCNDgpu and inverseCNDKernel without an input sequence (uint32 wrap-around, a
# reflected half range, Moro's rational and Chebyshev branches)
def moro_inv_cnd(x):
    a1, a2, a3, a4 = (
        f32(2.50662823884),
        f32(-18.61500062529),
        f32(41.39119773534),
        f32(-25.44106049637),
    )
    b1, b2, b3, b4 = (
        f32(-8.4735109309),
        f32(23.08336743743),
        f32(-21.06224101826),
        f32(3.13082909833),
    )
    c1, c2, c3 = f32(0.337475482272615), f32(0.976169019091719), f32(0.160797971491821)
    c4, c5, c6 = f32(2.76438810333863e-02), f32(3.8405729373609e-03), f32(3.951896511919e-04)
    c7, c8, c9 = f32(3.21767881768e-05), f32(2.888167364e-07), f32(3.960315187e-07)
    negate = False
    if x >= 0x80000000:
        x = 0xFFFFFFFF - x
        negate = True
    x1 = f32(1.0) / f32(0xFFFFFFFF)
    x2 = x1 / f32(2.0)
    p1 = f32(x) * x1 + x2
    p2 = p1 - f32(0.5)
    if p2 > f32(-0.42):
        z = p2 * p2
        z = (
            p2
            * (((a4 * z + a3) * z + a2) * z + a1)
            / ((((b4 * z + b3) * z + b2) * z + b1) * z + f32(1.0))
        )
    else:
        z = ember.log(-ember.log(p1))
        z = -(
            c1 + z * (c2 + z * (c3 + z * (c4 + z * (c5 + z * (c6 + z * (c7 + z * (c8 + z * c9)))))))
        )
    if negate:
        z = -z
    return z


@ember.kernel
def inverse_cnd(d_output, path_n):
    distance = ember.uint32(0xFFFFFFFF) // ember.uint32(path_n + 1)
    tid = ember.block_dim.x * ember.block_idx.x + ember.thread_idx.x
    thread_n = ember.block_dim.x * ember.grid_dim.x
    for pos in range(tid, path_n, thread_n):
        d = ember.uint32(pos + 1) * distance
        d_output[pos] = moro_inv_cnd(d)
