"""The portable matrix multiply: a tiled, register-blocked GEMM written as an Ember kernel.

``C[z] = A[z] @ B[z]`` for a batch of ``z`` products, each ``(M, K) @ (K, N)``.  Every
operand is a flat 1-d view plus element strides, so transposed and broadcast operands
(``x.mT @ y``, a batch stride of 0) need no copy.

Blocking (the classic SIMT SGEMM structure; e.g. Volkov & Demmel 2008, and NVIDIA's
CUTLASS documentation of the "thread block tile / thread tile" hierarchy):

* a block of ``16 x 16`` threads computes a ``128 x 128`` tile of C (``8 x 8`` threads and
  64 x 64 tiles on CPU devices, where a work-group is a loop);
* per step it stages a ``128 x BK`` slice of A (stored k-major, so a thread's rows are
  contiguous) and a ``BK x 128`` slice of B in shared memory;
* each thread keeps an ``8 x 8`` tile of C in registers (eight tuples of eight: the
  kernel language has tuples, not local arrays) and per ``k`` reads 8 values of A and 8 of
  B from shared memory for 64 fused multiply-adds;
* the next slices are loaded from global memory into registers while the current ones are
  multiplied (software pipelining), so global latency hides behind the arithmetic, and
  stored into the second of two shared buffers (one barrier per slice);
* which thread loads which element depends on which axis of the operand is contiguous
  (``A_KFAST``/``B_NFAST``, compile-time), so global loads are coalesced for both
  row-major and transposed operands.

float16 computes in float32 (shared tiles too: OpenCL has no ``__local half`` without
``cl_khr_fp16``); integers accumulate in their own type and wrap, as NumPy's do; complex
numbers are values like any other (a complex multiply-add is four real ones).
What limits it on GPUs: one scalar shared-memory load per 4 multiply-adds (no vector
loads in the kernel language; the device compiler may fuse them), no tensor cores (the
kernel language has no MMA instructions), and no asynchronous copies.
"""

from __future__ import annotations

import functools

import ember
from ember.compiler.kernel import Kernel
from ember.dtypes import DType


@functools.cache
def geometry(
    gpu: bool, wide: bool = False, huge: bool = False, pair: bool = False
) -> tuple[int, int, int, int]:
    """``(threads per side, results per thread per side, tile edge, k per stage)``: 8 x 8
    results per thread on GPUs; 4 x 4 for 64-bit compute types there (64 accumulators of
    8 bytes spill past the 255-register limit) and on CPU devices (a quarter of the code
    for the OpenCL compiler to chew on; a work-group there is a loop).  ``huge`` (16-byte
    values: complex128) on GPUs: 8 x 8 threads and 32 x 32 tiles, whose two staged slices
    fit in 16 KiB of shared memory (64 x 64 tiles would need 64 KiB, past CUDA's 48 KiB
    of static shared memory).  ``pair`` (complex values) on CPU devices: 2 x 2 results
    per thread and 32 x 32 tiles (PoCL 3.1 miscompiles the 4 x 4 complex variant into NaN
    results; 2 x 2, 2 x 4 and 3 x 4 compute right)."""
    if pair and not gpu:
        return (16, 2, 32, 32)
    if gpu and huge:
        return (8, 4, 32, 8)
    return (16, 8, 128, 8) if gpu and not wide else (16, 4, 64, 16)


def zeros8(z):
    return z, z, z, z, z, z, z, z


def zeros4(z):
    return z, z, z, z


def fma8(c, a, b):
    """``c + a * b`` for the 8-tuples ``c``, ``b`` and the number ``a``."""
    return (c[0] + a * b[0], c[1] + a * b[1], c[2] + a * b[2], c[3] + a * b[3],
            c[4] + a * b[4], c[5] + a * b[5], c[6] + a * b[6], c[7] + a * b[7])  # fmt: skip


def fma4(c, a, b):
    return c[0] + a * b[0], c[1] + a * b[1], c[2] + a * b[2], c[3] + a * b[3]


def fma2(c, a, b):
    return c[0] + a * b[0], c[1] + a * b[1]


@functools.cache
def gemm_kernel(ct: DType, gpu: bool, a_kfast: bool, b_nfast: bool) -> Kernel:
    """The GEMM kernel computing in ``ct`` for operands whose k (A) / n (B) axis is the
    contiguous one (or not)."""
    ts, tt, bmn, bk = geometry(gpu, ct.itemsize > 4, ct.itemsize > 8, ct.is_complex)
    shared = ember.float32 if ct.is_narrow else ct
    fn = _kernel(shared, ts, tt, bmn, bk, a_kfast, b_nfast)
    name = f"gemm_{ct.name}_{'n' if a_kfast else 't'}{'n' if b_nfast else 't'}_{bmn}"
    fn.__name__ = fn.__qualname__ = name
    return Kernel(fn)


def _steps(TS, TT):
    """The per-``k`` outer product of a thread's ``TT x TT`` results: rows ``r..r+TT-1`` of
    the k-major A tile (two distinct addresses per warp: broadcasts) times the columns
    ``q..q+3`` (and ``q+G..q+G+3``) of the B tile, ``q = 4 tx``: runs of four contiguous
    16-byte-aligned values, which the device compiler loads as single 128-bit loads (a warp
    reads 256 contiguous bytes: two shared-memory wavefronts)."""

    G = 4 * TS  # the thread's second group of four columns starts this far along

    def kstep8(ta, tb, kk, r, q, acc):
        b = (tb[kk, q], tb[kk, q + 1], tb[kk, q + 2], tb[kk, q + 3],
             tb[kk, q + G], tb[kk, q + G + 1], tb[kk, q + G + 2], tb[kk, q + G + 3])  # fmt: skip
        return (fma8(acc[0], ta[kk, r], b), fma8(acc[1], ta[kk, r + 1], b),
                fma8(acc[2], ta[kk, r + 2], b), fma8(acc[3], ta[kk, r + 3], b),
                fma8(acc[4], ta[kk, r + 4], b), fma8(acc[5], ta[kk, r + 5], b),
                fma8(acc[6], ta[kk, r + 6], b), fma8(acc[7], ta[kk, r + 7], b))  # fmt: skip

    def kstep4(ta, tb, kk, r, q, acc):
        b = (tb[kk, q], tb[kk, q + 1], tb[kk, q + 2], tb[kk, q + 3])
        return (fma4(acc[0], ta[kk, r], b), fma4(acc[1], ta[kk, r + 1], b),
                fma4(acc[2], ta[kk, r + 2], b), fma4(acc[3], ta[kk, r + 3], b))  # fmt: skip

    def put_c(c, base, col, N, j, v):
        if col + j < N:
            c[base + j] = c.dtype(v)

    def row4(c, cbase, row, col, M, N, v):
        """Row ``row`` of the thread's results: columns ``col .. col + 3``."""
        if row < M:
            base = cbase + row * N + col
            put_c(c, base, col, N, 0, v[0])
            put_c(c, base, col, N, 1, v[1])
            put_c(c, base, col, N, 2, v[2])
            put_c(c, base, col, N, 3, v[3])

    def row8(c, cbase, row, col, M, N, v):
        """Columns ``col .. col + 3`` and ``col + G .. col + G + 3``."""
        if row < M:
            base = cbase + row * N + col
            put_c(c, base, col, N, 0, v[0])
            put_c(c, base, col, N, 1, v[1])
            put_c(c, base, col, N, 2, v[2])
            put_c(c, base, col, N, 3, v[3])
            put_c(c, base, col, N, G, v[4])
            put_c(c, base, col, N, G + 1, v[5])
            put_c(c, base, col, N, G + 2, v[6])
            put_c(c, base, col, N, G + 3, v[7])

    def store4(c, cbase, row, col, M, N, acc):
        row4(c, cbase, row, col, M, N, acc[0])
        row4(c, cbase, row + 1, col, M, N, acc[1])
        row4(c, cbase, row + 2, col, M, N, acc[2])
        row4(c, cbase, row + 3, col, M, N, acc[3])

    def store8(c, cbase, row, col, M, N, acc):
        row8(c, cbase, row, col, M, N, acc[0])
        row8(c, cbase, row + 1, col, M, N, acc[1])
        row8(c, cbase, row + 2, col, M, N, acc[2])
        row8(c, cbase, row + 3, col, M, N, acc[3])
        row8(c, cbase, row + 4, col, M, N, acc[4])
        row8(c, cbase, row + 5, col, M, N, acc[5])
        row8(c, cbase, row + 6, col, M, N, acc[6])
        row8(c, cbase, row + 7, col, M, N, acc[7])

    def kstep2(ta, tb, kk, r, q, acc):
        b = (tb[kk, q], tb[kk, q + 1])
        return fma2(acc[0], ta[kk, r], b), fma2(acc[1], ta[kk, r + 1], b)

    def row2(c, cbase, row, col, M, N, v):
        if row < M:
            base = cbase + row * N + col
            put_c(c, base, col, N, 0, v[0])
            put_c(c, base, col, N, 1, v[1])

    def store2(c, cbase, row, col, M, N, acc):
        row2(c, cbase, row, col, M, N, acc[0])
        row2(c, cbase, row + 1, col, M, N, acc[1])

    def init2(z):
        return (z, z), (z, z)

    def init8(z):
        row = zeros8(z)
        return row, row, row, row, row, row, row, row

    def init4(z):
        row = zeros4(z)
        return row, row, row, row

    if TT == 8:
        return kstep8, store8, init8
    if TT == 2:
        return kstep2, store2, init2
    return kstep4, store4, init4


def _kernel(CT, TS, TT, BMN, BK, A_KFAST, B_NFAST):
    """The kernel: ``TS x TS`` threads, ``TT x TT`` results each, ``BMN x BMN`` tiles,
    ``BK`` per stage, 4 elements of A and of B staged per thread per stage."""
    NT = TS * TS
    QS = min(TT, 4)  # a thread's first column: its columns come in runs of (up to) four
    KSTEP, STORE, INIT = _steps(TS, TT)

    def load_a(a, abase, sam, sak, m0, k0, M, K, idx):
        if A_KFAST:
            m = m0 + idx // BK
            k = k0 + idx % BK
        else:
            m = m0 + idx % BMN
            k = k0 + idx // BMN
        v = CT(0)
        if m < M and k < K:
            v = CT(a[abase + m * sam + k * sak])
        return v

    def load_b(b, bbase, sbk, sbn, n0, k0, N, K, idx):
        if B_NFAST:
            k = k0 + idx // BMN
            n = n0 + idx % BMN
        else:
            k = k0 + idx % BK
            n = n0 + idx // BK
        v = CT(0)
        if n < N and k < K:
            v = CT(b[bbase + k * sbk + n * sbn])
        return v

    def put_a(ta, idx, v, buf):  # the staged element's place in the k-major tile
        if A_KFAST:
            ta[buf + idx % BK, idx // BK] = v
        else:
            ta[buf + idx // BMN, idx % BMN] = v

    def put_b(tb, idx, v, buf):
        if B_NFAST:
            tb[buf + idx // BMN, idx % BMN] = v
        else:
            tb[buf + idx % BK, idx // BK] = v

    def stage(ta, tb, i0, i1, i2, i3, pa0, pa1, pa2, pa3, pb0, pb1, pb2, pb3, buf):
        put_a(ta, i0, pa0, buf)
        put_a(ta, i1, pa1, buf)
        put_a(ta, i2, pa2, buf)
        put_a(ta, i3, pa3, buf)
        put_b(tb, i0, pb0, buf)
        put_b(tb, i1, pb1, buf)
        put_b(tb, i2, pb2, buf)
        put_b(tb, i3, pb3, buf)

    def gemm(c, a, b, M, N, K, sam, sak, sbk, sbn, nz, nb1, sa0, sa1, sb0, sb1):
        # two k-slices of A and B: one is multiplied while the next is stored into the
        # other (one barrier per slice instead of two)
        ta = ember.shared((2 * BK, BMN), CT)
        tb = ember.shared((2 * BK, BMN), CT)
        tx = ember.thread_idx.x
        ty = ember.thread_idx.y
        i0 = ty * TS + tx
        i1 = i0 + NT
        i2 = i1 + NT
        i3 = i2 + NT
        m0 = ember.block_idx.y * BMN
        n0 = ember.block_idx.x * BMN
        r = ty * TT
        q = tx * QS
        z = ember.block_idx.z
        while z < nz:
            z0 = z // nb1
            abase = z0 * sa0 + (z - z0 * nb1) * sa1
            bbase = z0 * sb0 + (z - z0 * nb1) * sb1
            pa0 = load_a(a, abase, sam, sak, m0, 0, M, K, i0)
            pa1 = load_a(a, abase, sam, sak, m0, 0, M, K, i1)
            pa2 = load_a(a, abase, sam, sak, m0, 0, M, K, i2)
            pa3 = load_a(a, abase, sam, sak, m0, 0, M, K, i3)
            pb0 = load_b(b, bbase, sbk, sbn, n0, 0, N, K, i0)
            pb1 = load_b(b, bbase, sbk, sbn, n0, 0, N, K, i1)
            pb2 = load_b(b, bbase, sbk, sbn, n0, 0, N, K, i2)
            pb3 = load_b(b, bbase, sbk, sbn, n0, 0, N, K, i3)
            stage(ta, tb, i0, i1, i2, i3, pa0, pa1, pa2, pa3, pb0, pb1, pb2, pb3, 0)
            ember.barrier()
            acc = INIT(CT(0))
            buf = 0
            for k0 in range(0, K, BK):
                k1 = k0 + BK
                if k1 < K:  # the next slices: in flight while this one is multiplied
                    pa0 = load_a(a, abase, sam, sak, m0, k1, M, K, i0)
                    pa1 = load_a(a, abase, sam, sak, m0, k1, M, K, i1)
                    pa2 = load_a(a, abase, sam, sak, m0, k1, M, K, i2)
                    pa3 = load_a(a, abase, sam, sak, m0, k1, M, K, i3)
                    pb0 = load_b(b, bbase, sbk, sbn, n0, k1, N, K, i0)
                    pb1 = load_b(b, bbase, sbk, sbn, n0, k1, N, K, i1)
                    pb2 = load_b(b, bbase, sbk, sbn, n0, k1, N, K, i2)
                    pb3 = load_b(b, bbase, sbk, sbn, n0, k1, N, K, i3)
                # unrolled by hand (the kernel language has no unroll pragma): the device
                # compiler then schedules the shared loads of one k under the previous
                for kk in range(buf, buf + BK, 4):
                    acc = KSTEP(ta, tb, kk, r, q, acc)
                    acc = KSTEP(ta, tb, kk + 1, r, q, acc)
                    acc = KSTEP(ta, tb, kk + 2, r, q, acc)
                    acc = KSTEP(ta, tb, kk + 3, r, q, acc)
                buf = BK - buf
                if k1 < K:  # the other slice was last read before the previous barrier
                    stage(ta, tb, i0, i1, i2, i3, pa0, pa1, pa2, pa3, pb0, pb1, pb2, pb3, buf)
                ember.barrier()
            STORE(c, z * M * N, m0 + r, n0 + q, M, N, acc)
            z += ember.grid_dim.z

    return gemm
