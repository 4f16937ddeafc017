"""The FFT kernels, written in Ember's kernel language (the host side is :mod:`.plan` and
:mod:`.engine`).

One kernel does one *pass* of a Stockham FFT (the self-sorting formulation: every pass reads
one buffer and writes another, so no bit reversal is needed).  A transform of length ``n`` is
``n = R_1 * R_2 * ... * R_P``; pass ``p`` does ``n / R_p`` DFTs of length ``R_p`` on
*lines* (for each batch entry ``b`` and ``j < m = n / R_p``, the ``R_p`` elements
``i = j + r * m``), each line twiddled by ``W_L^(r * (j mod Ns))`` first (``Ns = R_1 ...
R_(p-1)``, ``L = Ns * R_p``, ``W_L = exp(-2 pi i / L)``) and written to
``(j - j mod Ns) * R + j mod Ns + r * Ns``.

A block holds ``J`` lines in shared memory (``J * R <= CAP``) and does their ``R``-point DFTs
there as a Stockham FFT of its own: stages of radix 2, 3, 4, 5, 7 or 8 (the radices of a pass
are packed 4 bits each in ``code``), reading one shared buffer and writing the other,
a barrier between stages.  Radix-8, 4 and 2 butterflies do powers of two; 3, 5 and 7 the
rest of the *smooth* lengths; other lengths go through Bluestein's algorithm (the host
chains two smooth transforms, :mod:`.plan`).

What a pass can also do on the way in and out (``flags``), so that nothing else touches the
data: read real input, zero-pad (``i >= xn`` reads 0), read a Hermitian half-spectrum as the
whole (``HERM``: ``c2r``), conjugate (the inverse transform is ``conj(F(conj(x)))``),
multiply by a table on load and on store (Bluestein's chirps), scale (``norm``), keep only
the first ``yn`` outputs (``r2c``), and store real parts (``c2r``).

Arrays are 1-d flat views with a base and element strides (:func:`ember.array.launch.flat`);
batch entry ``b`` is ``(b // B2, b % B2)``, at ``b1 * s1 + b2 * s2``: any layout whose batch
axes collapse to two strides is read and written in place, along any axis.

Threads: ``T`` per block; ``T / J`` threads per line.  Loads and stores map a thread either
to consecutive lines (``*_Q`` flags: lines adjacent in memory) or to consecutive elements of
one line, whichever is contiguous, so global accesses coalesce.  Index arithmetic is 32-bit
unsigned (``uint32`` division is a few instructions; 64-bit division is dozens); addresses
are 64-bit.  Twiddles come from tables the host computed in float64 (:mod:`.plan`).
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import ember
from ember import dtypes
from ember.compiler import kernel as compiled  # a module: ember.kernel may be importing us
from ember.dtypes import DType

# flags of a pass
BFAST = 1  # lines are numbered batch entry first (the batch is the fast axis in memory)
LOAD_Q = 2  # consecutive threads load consecutive lines (else consecutive elements)
STORE_Q = 4  # the same for stores
CONJ_IN = 8  # conjugate what is read (before PRE)
CONJ_OUT = 16  # conjugate what is stored (after POST)
HERM = 32  # element i > n/2 reads conj(x[n - i]): a Hermitian half-spectrum
PRE = 64  # multiply element i by tw[pre + i] after loading
POST = 128  # multiply output k by tw[post + k] before storing
SCALE = 256  # multiply what is stored by ``scale``
PAIRS = 512  # real input read as complex pairs x[2i] + 1j x[2i+1] (half-length r2c)
R2C = 1024  # store the real input's transform from the half-length one (one pass only)
C2R = 2048  # read a half-spectrum as the half-length transform of a real output
PAIRS_OUT = 4096  # store complex point k as real outputs 2k and 2k + 1
RADIX_BITS = 4  # bits per radix in ``code``
RADICES = (8, 7, 5, 4, 3, 2)  # what the butterflies below do


def _named(fn, name: str):
    fn.__name__ = fn.__qualname__ = name
    return compiled.Kernel(fn)


def pad(i):
    """Slot of element ``i`` of a line in shared memory: one spare slot per 16 elements,
    so the strided writes of a stage (stride 2..8 complex values) fall in different banks."""
    return i + (i >> 4)


def _butterflies(CT: DType):
    """The radix-2..8 stages for complex dtype ``CT`` (forward DFTs: ``W = exp(-2 pi i/r)``).

    ``rN(src, dst, lb, i0, step, o0, s, tw, tb, tstep)`` reads element ``i0 + m * step``
    of the line at ``lb`` for ``m < N``, multiplies element ``m`` by ``tw[tb + m * tstep]``
    (when ``tstep > 0``), does the ``N``-point DFT and writes output ``m`` to element
    ``o0 + m * s``.  Element ``i`` of a line is at ``lb + pad(i)``.
    """
    RT = CT.real
    H = 0.5**0.5  # cos(pi/4)
    S3 = math.sin(2 * math.pi / 3)
    C51, C52 = math.cos(2 * math.pi / 5), math.cos(4 * math.pi / 5)
    S51, S52 = math.sin(2 * math.pi / 5), math.sin(4 * math.pi / 5)
    C71, C72, C73 = (math.cos(2 * math.pi * k / 7) for k in (1, 2, 3))
    S71, S72, S73 = (math.sin(2 * math.pi * k / 7) for k in (1, 2, 3))

    def mul_mi(z):
        """``-1j * z``."""
        return CT(z.imag, -z.real)

    def scale(z, c):
        """``z * c`` for a real ``c`` (two products, not a complex multiplication)."""
        return CT(RT(z.real * c), RT(z.imag * c))

    def w8(z):
        """``z * exp(-i pi / 4)``."""
        return CT(RT((z.real + z.imag) * H), RT((z.imag - z.real) * H))

    def w83(z):
        """``z * exp(-3 i pi / 4)``."""
        return CT(RT((z.imag - z.real) * H), RT(-(z.real + z.imag) * H))

    def get(src, lb, i, tw, t):
        """Element ``i`` of the line at ``lb``, twiddled by ``tw[t]`` (``t`` 0: none)."""
        v = src[lb + pad(i)]
        if t > 0:
            v = v * tw[t]
        return v

    def put(dst, lb, i, v):
        dst[lb + pad(i)] = v

    def dft4(a0, a1, a2, a3):
        t0 = a0 + a2
        t1 = a0 - a2
        t2 = a1 + a3
        t3 = mul_mi(a1 - a3)
        return t0 + t2, t1 + t3, t0 - t2, t1 - t3

    def d2(a0, a1):
        return a0 + a1, a0 - a1

    def d8(a0, a1, a2, a3, a4, a5, a6, a7):
        e0, e1, e2, e3 = dft4(a0, a2, a4, a6)
        o0, o1, o2, o3 = dft4(a1, a3, a5, a7)
        o1 = w8(o1)
        o2 = mul_mi(o2)
        o3 = w83(o3)
        return e0 + o0, e1 + o1, e2 + o2, e3 + o3, e0 - o0, e1 - o1, e2 - o2, e3 - o3

    def r2(src, dst, lb, i0, step, o0, s, tw, tb, tstep):
        a0 = src[lb + pad(i0)]
        a1 = get(src, lb, i0 + step, tw, tb + tstep)
        put(dst, lb, o0, a0 + a1)
        put(dst, lb, o0 + s, a0 - a1)

    def r4(src, dst, lb, i0, step, o0, s, tw, tb, tstep):
        a0 = src[lb + pad(i0)]
        a1 = get(src, lb, i0 + step, tw, tb + tstep)
        a2 = get(src, lb, i0 + 2 * step, tw, tb + 2 * tstep)
        a3 = get(src, lb, i0 + 3 * step, tw, tb + 3 * tstep)
        y0, y1, y2, y3 = dft4(a0, a1, a2, a3)
        put(dst, lb, o0, y0)
        put(dst, lb, o0 + s, y1)
        put(dst, lb, o0 + 2 * s, y2)
        put(dst, lb, o0 + 3 * s, y3)

    def r8(src, dst, lb, i0, step, o0, s, tw, tb, tstep):
        a0 = src[lb + pad(i0)]
        a1 = get(src, lb, i0 + step, tw, tb + tstep)
        a2 = get(src, lb, i0 + 2 * step, tw, tb + 2 * tstep)
        a3 = get(src, lb, i0 + 3 * step, tw, tb + 3 * tstep)
        a4 = get(src, lb, i0 + 4 * step, tw, tb + 4 * tstep)
        a5 = get(src, lb, i0 + 5 * step, tw, tb + 5 * tstep)
        a6 = get(src, lb, i0 + 6 * step, tw, tb + 6 * tstep)
        a7 = get(src, lb, i0 + 7 * step, tw, tb + 7 * tstep)
        y0, y1, y2, y3, y4, y5, y6, y7 = d8(a0, a1, a2, a3, a4, a5, a6, a7)
        put(dst, lb, o0, y0)
        put(dst, lb, o0 + s, y1)
        put(dst, lb, o0 + 2 * s, y2)
        put(dst, lb, o0 + 3 * s, y3)
        put(dst, lb, o0 + 4 * s, y4)
        put(dst, lb, o0 + 5 * s, y5)
        put(dst, lb, o0 + 6 * s, y6)
        put(dst, lb, o0 + 7 * s, y7)

    def r3(src, dst, lb, i0, step, o0, s, tw, tb, tstep):
        a0 = src[lb + pad(i0)]
        a1 = get(src, lb, i0 + step, tw, tb + tstep)
        a2 = get(src, lb, i0 + 2 * step, tw, tb + 2 * tstep)
        t1 = a1 + a2
        t2 = a0 - scale(t1, 0.5)
        t3 = scale(mul_mi(a1 - a2), S3)
        put(dst, lb, o0, a0 + t1)
        put(dst, lb, o0 + s, t2 + t3)
        put(dst, lb, o0 + 2 * s, t2 - t3)

    def r5(src, dst, lb, i0, step, o0, s, tw, tb, tstep):
        a0 = src[lb + pad(i0)]
        a1 = get(src, lb, i0 + step, tw, tb + tstep)
        a2 = get(src, lb, i0 + 2 * step, tw, tb + 2 * tstep)
        a3 = get(src, lb, i0 + 3 * step, tw, tb + 3 * tstep)
        a4 = get(src, lb, i0 + 4 * step, tw, tb + 4 * tstep)
        t1 = a1 + a4
        t2 = a2 + a3
        t3 = mul_mi(a1 - a4)
        t4 = mul_mi(a2 - a3)
        b1 = a0 + scale(t1, C51) + scale(t2, C52)
        b2 = a0 + scale(t1, C52) + scale(t2, C51)
        d1 = scale(t3, S51) + scale(t4, S52)
        d2 = scale(t3, S52) - scale(t4, S51)
        put(dst, lb, o0, a0 + t1 + t2)
        put(dst, lb, o0 + s, b1 + d1)
        put(dst, lb, o0 + 2 * s, b2 + d2)
        put(dst, lb, o0 + 3 * s, b2 - d2)
        put(dst, lb, o0 + 4 * s, b1 - d1)

    def r7(src, dst, lb, i0, step, o0, s, tw, tb, tstep):
        a0 = src[lb + pad(i0)]
        a1 = get(src, lb, i0 + step, tw, tb + tstep)
        a2 = get(src, lb, i0 + 2 * step, tw, tb + 2 * tstep)
        a3 = get(src, lb, i0 + 3 * step, tw, tb + 3 * tstep)
        a4 = get(src, lb, i0 + 4 * step, tw, tb + 4 * tstep)
        a5 = get(src, lb, i0 + 5 * step, tw, tb + 5 * tstep)
        a6 = get(src, lb, i0 + 6 * step, tw, tb + 6 * tstep)
        t1 = a1 + a6
        t2 = a2 + a5
        t3 = a3 + a4
        u1 = mul_mi(a1 - a6)
        u2 = mul_mi(a2 - a5)
        u3 = mul_mi(a3 - a4)
        b1 = a0 + scale(t1, C71) + scale(t2, C72) + scale(t3, C73)
        b2 = a0 + scale(t1, C72) + scale(t2, C73) + scale(t3, C71)
        b3 = a0 + scale(t1, C73) + scale(t2, C71) + scale(t3, C72)
        d1 = scale(u1, S71) + scale(u2, S72) + scale(u3, S73)
        d2 = scale(u1, S72) - scale(u2, S73) - scale(u3, S71)
        d3 = scale(u1, S73) - scale(u2, S71) + scale(u3, S72)
        put(dst, lb, o0, a0 + t1 + t2 + t3)
        put(dst, lb, o0 + s, b1 + d1)
        put(dst, lb, o0 + 2 * s, b2 + d2)
        put(dst, lb, o0 + 3 * s, b3 + d3)
        put(dst, lb, o0 + 4 * s, b3 - d3)
        put(dst, lb, o0 + 5 * s, b2 - d2)
        put(dst, lb, o0 + 6 * s, b1 - d1)

    return SimpleNamespace(r2=r2, r3=r3, r4=r4, r5=r5, r7=r7, r8=r8, d2=d2, d4=dft4, d8=d8,
                           scale=scale, mul_mi=mul_mi)  # fmt: skip


def shared_size(cap: int, block: int) -> int:
    """Elements of each shared buffer: ``cap`` points, a pad slot per 16, a spare slot per
    line (at most ``block`` lines)."""
    return cap + (cap >> 4) + block


def _io(CT: DType, real_out: bool, T: int):
    """What both pass kernels (this one and :mod:`.fixed`) share: line numbering, the
    thread mappings, reading input points and storing outputs as the flags say."""
    LT = T.bit_length() - 1
    U = dtypes.uint32
    bf = _butterflies(CT)
    scale, mul_mi = bf.scale, bf.mul_mi

    def line_of(q, lj, m, nbatch, flags):
        """``(b, j)`` of the block's line ``q`` (b >= nbatch: past the end)."""
        ell = U(ember.block_idx.x) * (U(1) << lj) + q
        b = ell // m
        j = ell % m
        if flags & BFAST:
            b = ell % nbatch
            j = ell // nbatch
            if j >= m:
                b = nbatch  # past the end
        return b, j

    def mapping(t, lj, by_line):
        """``(line, first element)`` of thread ``t``: consecutive threads on consecutive
        lines (``by_line``) or on consecutive elements of one line."""
        q = t >> U(LT - lj)
        r = t & ((U(T) >> lj) - 1)
        if by_line:
            q = t & ((U(1) << lj) - 1)
            r = t >> lj
        return q, r

    def element(x, off, xsi, i, xn, n, flags):
        """Input point ``i`` (zero past ``xn``; ``HERM``: the conjugate of ``n - i`` past
        ``n / 2``), conjugated with ``CONJ_IN``."""
        e = i
        mirror = flags & HERM and i > n >> 1
        if mirror:
            e = n - i
        v = CT(0)
        if e < xn:
            v = CT(x[off + int(e) * xsi])
        if mirror:
            v = v.conjugate()
        if flags & CONJ_IN:
            v = v.conjugate()
        return v

    def pair(x, off, xsi, i, xn):
        """``x[2i] + 1j * x[2i + 1]`` of real input (zero past ``xn``)."""
        e = i + i
        v = CT(0)
        if e < xn:
            v = CT(x[off + int(e) * xsi])
        if e + 1 < xn:
            w = CT(x[off + int(e + 1) * xsi])
            v = v + CT(-w.imag, w.real)
        return v

    def half_spectrum(x, off, xsi, i, xn, nh, flags, tw, pre):
        """Point ``i`` of the half-length transform whose output interleaves the real
        ``FFT_N(H)`` of the Hermitian ``H`` given by ``x[0..nh]`` (``N = 2 nh``; the
        imaginary parts of ``x[0]`` and ``x[nh]`` are ignored, as NumPy does):
        ``(a + conj b) + 1j * W_N^i * (a - conj b)`` with ``a = x[i]``, ``b = x[nh - i]``."""
        a = CT(0)
        b = CT(0)
        if i < xn:
            a = CT(x[off + int(i) * xsi])
        if nh - i < xn:
            b = CT(x[off + int(nh - i) * xsi])
        if i == 0:
            a = CT(a.real)
            b = CT(b.real)
        if flags & CONJ_IN:
            a = a.conjugate()
            b = b.conjugate()
        b = b.conjugate()
        d = (a - b) * tw[pre + i]
        return a + b + CT(-d.imag, d.real)

    def fetch(x, off, xsi, i, xn, n, flags, tw, pre):
        """Input point ``i`` of the pass's transform, as the flags say to read it."""
        if flags & PAIRS:
            v = pair(x, off, xsi, i, xn)
        elif flags & C2R:
            v = half_spectrum(x, off, xsi, i, xn, n, flags, tw, pre)
        else:
            v = element(x, off, xsi, i, xn, n, flags)
        if flags & PRE:
            v = v * tw[pre + i]
        return v

    def keep(s, lb, r, v, k, ns, tw, gq, gc, gf):
        """Point ``r`` of the line at ``lb``, twiddled by ``W_L^(r k)``."""
        s[lb + pad(r)] = twiddle(v, r, k, ns, tw, gq, gc, gf)

    def finish(v, flags, scl):
        if flags & CONJ_OUT:
            v = v.conjugate()
        if flags & SCALE:
            v = scale(v, scl)
        return v

    def real_half(s, lb, r, R, tw, post):
        """Output ``r`` of a real input's transform from the half-length one in the line
        at ``lb`` (``Z``; ``X[r] = Fe + W_N^r Fo``, ``Fe``/``Fo`` the transforms of the
        even and odd points), and ``X[R]`` (used at ``r == 0``)."""
        a = s[lb + pad(r)]
        b = s[lb + pad((R - r) % R)].conjugate()
        fe = scale(a + b, 0.5)
        fo = mul_mi(scale(a - b, 0.5))
        return fe + fo * tw[post + r], fe - fo

    def put_real(y, i, v):
        y[i] = y.dtype(v.real)

    def put_complex(y, i, v):
        y[i] = v

    def pair_real(y, off, ysi, k, yn, v):
        """Real outputs ``2k`` and ``2k + 1``: the parts of ``v``."""
        y[off + int(k + k) * ysi] = y.dtype(v.real)
        if k + k + 1 < yn:
            y[off + int(k + k + 1) * ysi] = y.dtype(v.imag)

    def pair_complex(y, off, ysi, k, yn, v):
        y[off + int(k) * ysi] = v  # (never used: pairs are real outputs)

    put = put_real if real_out else put_complex
    put_pair = pair_real if real_out else pair_complex

    def twiddle(v, r, k, ns, tw, gq, gc, gf):
        """``v`` (point ``r`` of a line at ``j mod Ns = k``) times ``W_L^(r k)`` (two tables)."""
        if ns > 1:
            te = r * k
            if te > 0:
                v = v * (tw[gc + (te >> gq)] * tw[gf + (te & ((U(1) << gq) - 1))])
        return v

    def emit(y, off, ysi, yn, k, v, flags, scl):
        """Output point ``k`` (``v`` before conjugation and scaling) stored as the flags say."""
        v = finish(v, flags, scl)
        if flags & PAIRS_OUT:
            if k + k < yn:
                put_pair(y, off, ysi, k, yn, v)
        elif k < yn:
            put(y, off + int(k) * ysi, v)

    return SimpleNamespace(line_of=line_of, mapping=mapping, fetch=fetch, keep=keep,
                           finish=finish, real_half=real_half, put=put, twiddle=twiddle,
                           emit=emit)  # fmt: skip


@functools.cache
def fft_pass(ct: DType, real_out: bool, cap: int, block: int):
    """The pass kernel for complex dtype ``ct`` with ``cap`` points per block and ``block``
    threads (a power of two); ``real_out`` stores real parts (``c2r``)."""
    CT, T, SH = ct, block, shared_size(cap, block)
    LT = T.bit_length() - 1
    U = dtypes.uint32
    bf = _butterflies(CT)
    r2, r3, r4, r5, r7, r8 = bf.r2, bf.r3, bf.r4, bf.r5, bf.r7, bf.r8

    io = _io(CT, real_out, T)
    line_of, mapping, fetch, keep = io.line_of, io.mapping, io.fetch, io.keep
    finish, real_half, put, emit = io.finish, io.real_half, io.put, io.emit

    def stage(src, dst, rho, s, R, ls, lj, t, tw, iw):
        """One radix-``rho`` stage over every line of the block (``s``: the stage's Ns;
        ``ls``: the line stride in shared memory)."""
        nb = R // rho  # butterflies per line
        lb = (t >> U(LT - lj)) * ls
        u = t & ((U(T) >> lj) - 1)
        span = R // (s * rho)  # twiddle index step per unit of m * k
        while u < nb:
            k = u % s
            o0 = (u - k) * rho + k
            tstep = k * span
            tb = iw if tstep > 0 else U(0)
            if rho == 8:
                r8(src, dst, lb, u, nb, o0, s, tw, tb, tstep)
            elif rho == 4:
                r4(src, dst, lb, u, nb, o0, s, tw, tb, tstep)
            elif rho == 2:
                r2(src, dst, lb, u, nb, o0, s, tw, tb, tstep)
            elif rho == 3:
                r3(src, dst, lb, u, nb, o0, s, tw, tb, tstep)
            elif rho == 5:
                r5(src, dst, lb, u, nb, o0, s, tw, tb, tstep)
            else:
                r7(src, dst, lb, u, nb, o0, s, tw, tb, tstep)
            u += U(T) >> lj

    def load(s, x, xb, xs1, xs2, xsi, xn, b2n, tw, n, m, R, ns, ls, lj, nbatch, flags, gq,
             gc, gf, pre, t):  # fmt: skip
        """The block's lines into shared memory, four points per thread at a time (four
        global loads in flight before the first is used)."""
        q, r = mapping(t, lj, flags & LOAD_Q)
        b, j = line_of(q, lj, m, nbatch, flags)
        if b < nbatch:
            off = xb + int(b // b2n) * xs1 + int(b % b2n) * xs2
            k = j % ns
            lb = q * ls
            step = U(T) >> lj
            while r < R:
                v0 = fetch(x, off, xsi, j + r * m, xn, n, flags, tw, pre)
                r1 = r + step
                r2 = r1 + step
                r3 = r2 + step
                v1 = CT(0)
                v2 = CT(0)
                v3 = CT(0)
                if r3 < R:
                    v1 = fetch(x, off, xsi, j + r1 * m, xn, n, flags, tw, pre)
                    v2 = fetch(x, off, xsi, j + r2 * m, xn, n, flags, tw, pre)
                    v3 = fetch(x, off, xsi, j + r3 * m, xn, n, flags, tw, pre)
                elif r1 < R:
                    v1 = fetch(x, off, xsi, j + r1 * m, xn, n, flags, tw, pre)
                    if r2 < R:
                        v2 = fetch(x, off, xsi, j + r2 * m, xn, n, flags, tw, pre)
                keep(s, lb, r, v0, k, ns, tw, gq, gc, gf)
                if r1 < R:
                    keep(s, lb, r1, v1, k, ns, tw, gq, gc, gf)
                if r2 < R:
                    keep(s, lb, r2, v2, k, ns, tw, gq, gc, gf)
                if r3 < R:
                    keep(s, lb, r3, v3, k, ns, tw, gq, gc, gf)
                r = r3 + step

    def store(s, y, yb, ys1, ys2, ysi, yn, b2n, tw, R, ns, ls, lj, m, nbatch, flags, scl,
              post, t):  # fmt: skip
        q, r = mapping(t, lj, flags & STORE_Q)
        b, j = line_of(q, lj, m, nbatch, flags)
        if b < nbatch:
            off = yb + int(b // b2n) * ys1 + int(b % b2n) * ys2
            jk = j % ns
            base = (j - jk) * R + jk
            lb = q * ls
            while r < R:
                k = base + r * ns
                if flags & R2C:  # (one pass: k == r)
                    v, last = real_half(s, lb, r, R, tw, post)
                    if r == 0 and R < yn:
                        put(y, off + int(R) * ysi, finish(last, flags, scl))
                elif flags & POST:
                    v = s[lb + pad(r)] * tw[post + k]
                else:
                    v = s[lb + pad(r)]
                emit(y, off, ysi, yn, k, v, flags, scl)
                r += U(T) >> lj

    def fft_pass(x, xb, xs1, xs2, xsi, xn, y, yb, ys1, ys2, ysi, yn, b2n, tw, n, m, R, ns,
                 code, lj, nbatch, flags, scl, gq, gc, gf, iw, pre, post):  # fmt: skip
        sa = ember.shared(SH, CT)
        sb = ember.shared(SH, CT)
        t = U(ember.thread_idx.x)
        rr = U(R)
        ls = rr + (rr >> 4) + 1  # line stride: the padded line and one more slot
        load(sa, x, xb, xs1, xs2, xsi, U(xn), U(b2n), tw, U(n), U(m), rr, U(ns), ls, U(lj),
             U(nbatch), flags, U(gq), U(gc), U(gf), U(pre), t)  # fmt: skip
        ember.barrier()
        c = code
        s = U(1)
        p = 0
        while c != 0:
            rho = U(c & 15)
            if p == 0:
                stage(sa, sb, rho, s, rr, ls, U(lj), t, tw, U(iw))
            else:
                stage(sb, sa, rho, s, rr, ls, U(lj), t, tw, U(iw))
            ember.barrier()
            p = 1 - p
            s = s * rho
            c = c >> RADIX_BITS
        if p == 0:
            store(sa, y, yb, ys1, ys2, ysi, U(yn), U(b2n), tw, rr, U(ns), ls, U(lj), U(m),
                  U(nbatch), flags, scl, U(post), t)  # fmt: skip
        else:
            store(sb, y, yb, ys1, ys2, ysi, U(yn), U(b2n), tw, rr, U(ns), ls, U(lj), U(m),
                  U(nbatch), flags, scl, U(post), t)  # fmt: skip

    suffix = "r" if real_out else "c"
    return _named(fft_pass, f"fft_pass_{ct.name}_{suffix}{cap}x{block}")
