"""The pass kernel specialized for one pass shape (GPUs): radix, butterfly stages, lines per
block and flags are compile-time constants.

Same pass as :func:`.kernels.fft_pass` (same arithmetic in the same order, so the same
results), cheaper per element:

* no run-time radix dispatch, no ``uint32`` division or remainder by a stage's ``Ns`` (a
  constant: a mask or a multiplication), no flag tests, every loop unrolled;
* the first stage is done in registers on the points as they arrive from global memory
  (thread ``r`` of a line loads points ``r + i * TL``, ``TL`` threads per line, which are
  exactly the inputs of its first-stage butterflies), and the last stage (unless ``R2C``
  needs the whole line) in registers right before the global store: two trips through
  shared memory and two barriers fewer than the generic kernel's ``load``, stages, ``store``.

Usable when every stage's butterflies per line (``R / rho``) are a multiple of ``TL`` (one
or more whole butterflies per thread); :func:`usable` says so, the engine falls back to the
generic kernel otherwise.
"""

from __future__ import annotations

import functools
import math

import ember
from ember import dtypes
from ember.array.fft import kernels as k
from ember.dtypes import DType


def usable(radices: tuple[int, ...], lj: int, block: int, flags: int) -> bool:
    """Whether the pass of butterfly stages ``radices`` with ``2**lj`` lines per block of
    ``block`` threads fits the specialized kernel (a first stage of radix 2, 4 or 8, whole
    butterflies per thread in every stage), whatever the pass flags."""
    r = math.prod(radices)
    tl = block >> lj
    if not radices or radices[0] not in (2, 4, 8) or tl == 0:
        return False
    return all((r // rho) % tl == 0 for rho in radices)


def _register_dft(bf, RHO: int):
    """In-place ``RHO``-point DFT of ``v[i0 + m * st]`` (a per-thread array, constant
    indices: registers)."""
    d2, d4, d8 = bf.d2, bf.d4, bf.d8

    def dft(v, i0, st):
        if RHO == 8:
            y = d8(v[i0], v[i0 + st], v[i0 + 2 * st], v[i0 + 3 * st], v[i0 + 4 * st],
                   v[i0 + 5 * st], v[i0 + 6 * st], v[i0 + 7 * st])  # fmt: skip
        elif RHO == 4:
            y = d4(v[i0], v[i0 + st], v[i0 + 2 * st], v[i0 + 3 * st])
        else:
            y = d2(v[i0], v[i0 + st])
        for m in ember.static_range(RHO):
            v[i0 + m * st] = y[m]

    return dft


@functools.cache
def fft_pass_fixed(ct: DType, real_out: bool, cap: int, block: int, radices: tuple[int, ...],
                   lj: int, flags: int):  # fmt: skip
    """The pass kernel for butterfly stages ``radices`` (powers of two in the register
    stages; see :func:`usable`), ``2**lj`` lines per block and pass flags ``flags``; the
    other parameters as :func:`.kernels.fft_pass` (whose argument list it takes)."""
    CT, T, SH = ct, block, k.shared_size(cap, block)
    U = dtypes.uint32
    R = math.prod(radices)
    LT = T.bit_length() - 1
    TL = T >> lj  # threads per line
    E = R // TL  # points per thread
    LS = R + (R >> 4) + 1  # line stride in shared memory
    FL = flags
    io = k._io(CT, real_out, T)
    bf = k._butterflies(CT)
    line_of, mapping, fetch, twiddle, emit = io.line_of, io.mapping, io.fetch, io.twiddle, io.emit
    pad = k.pad
    RH1 = radices[0]
    NB1 = R // RH1
    RHL = radices[-1]
    FUSE_LAST = len(radices) > 1 and not FL & k.R2C and RHL in (2, 4, 8)
    NBL = R // RHL
    MID = radices[1:-1] if FUSE_LAST else radices[1:]
    assert usable(radices, lj, block, flags), (radices, lj, block, flags)
    first_dft = _register_dft(bf, RH1)
    last_dft = _register_dft(bf, RHL)
    NS_MID = tuple(math.prod(radices[: i + 1]) for i in range(len(MID)))  # Ns of each

    def mid_stage(rho: int, s: int):
        """A middle stage of radix ``rho`` after ``Ns = s`` points, through shared memory."""
        nb = R // rho
        bfly = {2: bf.r2, 3: bf.r3, 4: bf.r4, 5: bf.r5, 7: bf.r7, 8: bf.r8}[rho]

        def run(src, dst, t, tw, iw):
            lb = (t >> U(LT - lj)) * U(LS)
            u0 = t & U(TL - 1)
            for h in ember.static_range(nb // TL):
                u = u0 + U(h * TL)
                kk = u % U(s)
                tstep = kk * U(R // (s * rho))
                tb = iw if tstep > 0 else U(0)
                bfly(src, dst, lb, u, U(nb), (u - kk) * U(rho) + kk, U(s), tw, tb, tstep)

        return run

    MIDF = tuple(mid_stage(rho, s) for rho, s in zip(MID, NS_MID, strict=True))

    def fft_pass(x, xb, xs1, xs2, xsi, xn, y, yb, ys1, ys2, ysi, yn, b2n, tw, n, m, R_, ns,
                 code, lj_, nbatch, flags_, scl, gq, gc, gf, iw, pre, post):  # fmt: skip
        sa = ember.shared(SH, CT)
        sb = ember.shared(SH, CT)
        v = ember.local((E,), CT)
        t = U(ember.thread_idx.x)
        um, uns, unb = U(m), U(ns), U(nbatch)
        # load: point r + i * TL of line q into v[i], twiddled; the first stage in registers
        q, r = mapping(t, U(lj), FL & k.LOAD_Q)
        b, j = line_of(q, U(lj), um, unb, FL)
        if b < unb:
            off = xb + int(b // U(b2n)) * xs1 + int(b % U(b2n)) * xs2
            kk = j % uns
            for i in ember.static_range(E):
                v[i] = fetch(x, off, xsi, j + (r + U(i * TL)) * um, U(xn), U(n), FL, tw, U(pre))
            for i in ember.static_range(E):
                v[i] = twiddle(v[i], r + U(i * TL), kk, uns, tw, U(gq), U(gc), U(gf))
        else:
            for i in ember.static_range(E):
                v[i] = CT(0)
        lb = q * U(LS)
        for h in ember.static_range(NB1 // TL):
            first_dft(v, h, NB1 // TL)
            u = r + U(h * TL)
            for mm in ember.static_range(RH1):
                sa[lb + pad(u * U(RH1) + U(mm))] = v[h + mm * (NB1 // TL)]
        ember.barrier()
        for i in ember.static_range(len(MID)):
            if i % 2 == 0:
                MIDF[i](sa, sb, t, tw, U(iw))
            else:
                MIDF[i](sb, sa, t, tw, U(iw))
            ember.barrier()
        if len(MID) % 2 == 0:
            finish_pass(sa, y, yb, ys1, ys2, ysi, U(yn), U(b2n), tw, uns, um, unb, scl,
                        U(post), U(iw), t, v)  # fmt: skip
        else:
            finish_pass(sb, y, yb, ys1, ys2, ysi, U(yn), U(b2n), tw, uns, um, unb, scl,
                        U(post), U(iw), t, v)  # fmt: skip

    def finish_pass(s, y, yb, ys1, ys2, ysi, yn, b2n, tw, ns, m, nbatch, scl, post, iw, t, v):
        """The last stage in registers (``FUSE_LAST``), then the stores: point
        ``r + i * TL`` of line ``q``."""
        q, r = mapping(t, U(lj), FL & k.STORE_Q)
        b, j = line_of(q, U(lj), m, nbatch, FL)
        lb = q * U(LS)
        if FUSE_LAST:  # butterfly u = r + h TL: inputs u + m' NBL, outputs the same points
            for h in ember.static_range(NBL // TL):
                u = r + U(h * TL)
                for mm in ember.static_range(RHL):
                    w = s[lb + pad(u + U(mm * NBL))]
                    if mm > 0:
                        w = w * tw[iw + u * U(mm)]  # W_R^(m u): Ns = NBL, k = u
                    v[h + mm * (NBL // TL)] = w
                last_dft(v, h, NBL // TL)
        if b < nbatch:
            off = yb + int(b // b2n) * ys1 + int(b % b2n) * ys2
            jk = j % ns
            base = (j - jk) * U(R) + jk
            for i in ember.static_range(E):
                ri = r + U(i * TL)
                kk = base + ri * ns
                if FUSE_LAST:
                    w = v[i]
                else:
                    w = s[lb + pad(ri)]
                if FL & k.R2C:  # (one pass: kk == ri)
                    w, top = io.real_half(s, lb, ri, U(R), tw, post)
                    if ri == 0 and U(R) < yn:
                        io.put(y, off + int(R) * ysi, io.finish(top, FL, scl))
                elif FL & k.POST:
                    w = w * tw[post + kk]
                emit(y, off, ysi, yn, kk, w, FL, scl)

    suffix = "r" if real_out else "c"
    tag = "".join(str(r) for r in radices)
    return k._named(fft_pass, f"fft_pass_{ct.name}_{suffix}{cap}x{block}_{tag}_{lj}_{flags}")
