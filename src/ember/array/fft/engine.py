"""Ember's own FFT along one axis: the plan's passes launched on the arrays as they lie.

:func:`transform` takes an input view and an output array of the same rank (lengths may
differ along ``axis`` only) and fills the output.  The batch axes (all but ``axis``) of each
must collapse to two strides, the axes before ``axis`` and those after it (a C-contiguous
array always does; an input that does not is copied first).  Lines are numbered so that
consecutive lines are neighbours in memory: batch entry first when the batch is the faster
axis (a transform along axis 0 of a C-contiguous array), else position first; the work
buffers between passes follow the same order, so every pass reads and writes whole rows.
"""

from __future__ import annotations

import collections
import math

from ember.array import launch
from ember.array.fft import fixed
from ember.array.fft import kernels as k
from ember.array.fft import plan as planning
from ember.array.ndarray import ndarray
from ember.dtypes import DType

_TABLES: collections.OrderedDict = collections.OrderedDict()  # (plan, backend, dtype) -> table
TABLES_KEPT = 32  # device tables kept (plans themselves are cached by plan.plan)


def _collapse(dims: list[tuple[int, int]]) -> int | None:
    """One element stride for ``(size, stride)`` axes read in order, or None."""
    dims = [(n, s) for n, s in dims if n != 1]
    for (_, s0), (n1, s1) in zip(dims, dims[1:], strict=False):
        if s0 != s1 * n1:
            return None
    return dims[-1][1] if dims else 0


def layout(x: ndarray, axis: int) -> tuple[ndarray, int, int, int, int] | None:
    """``(flat view, base, s1, s2, si)``: element ``(b1, i, b2)`` (the axes before
    ``axis``, ``axis``, the axes after) of ``x`` is ``view[base + b1*s1 + i*si + b2*s2]``;
    None when the batch axes do not collapse so."""
    view, base, strides = launch.flat(x)
    dims = list(zip(x.shape, strides, strict=True))
    s1, s2 = _collapse(dims[:axis]), _collapse(dims[axis + 1 :])
    if s1 is None or s2 is None:
        return None
    return view, base, s1, s2, strides[axis]


def device_table(p: planning.Plan, be, ct: DType) -> ndarray:
    """``p``'s twiddle table in ``ct`` on ``be`` (uploaded once, kept for the latest
    :data:`TABLES_KEPT` plans)."""
    key = (p, be, ct)
    table = _TABLES.get(key)
    if table is None:
        host = p.table.astype(ct.numpy)
        table = launch.new(be, host.shape, ct)
        be.copy_from_host(table.buffer, table.offset, host)
        _TABLES[key] = table
        while len(_TABLES) > TABLES_KEPT:
            _TABLES.popitem(last=False)
    else:
        _TABLES.move_to_end(key)
    return table


class _Run:
    """The launches of one transform: what every pass shares."""

    def __init__(self, be, ct, g, n, batch, b2, bfast, table):
        self.be, self.ct, self.g, self.n = be, ct, g, n
        self.batch, self.b2, self.bfast, self.table = batch, b2, bfast, table

    def work(self, length: int) -> tuple:
        """A work buffer for ``batch`` rows of ``length`` and its layout."""
        buf = launch.new(self.be, (self.batch * length,), self.ct)
        if self.bfast:
            return buf, 0, self.b2, 1, self.batch
        return buf, 0, self.b2 * length, length, 1

    def launch(self, p: planning.Pass, length, src, xn, dst, yn, flags, scl, pre, post):
        g = self.g
        m = length // p.r
        lines = self.batch * m
        j = min(1 << ((g.cap // p.r).bit_length() - 1), g.block, 1 << (lines - 1).bit_length())
        flags |= k.BFAST if self.bfast else 0
        if self.bfast or m > 1:
            flags |= k.LOAD_Q
        if self.bfast or p.ns > 1:
            flags |= k.STORE_Q
        real_out = not dst[0].dtype.is_complex
        lj = j.bit_length() - 1
        radices = planning.unpack(p.code)
        if g.fixed and fixed.usable(radices, lj, g.block, flags):
            kern = fixed.fft_pass_fixed(self.ct, real_out, g.cap, g.block, radices, lj, flags)
        else:
            kern = k.fft_pass(self.ct, real_out, g.cap, g.block)
        x, xb, xs1, xs2, xsi = src
        y, yb, ys1, ys2, ysi = dst
        args = (
            x, xb, xs1, xs2, xsi, xn, y, yb, ys1, ys2, ysi, yn, self.b2, self.table,
            self.n, m, p.r, p.ns, p.code, lj, self.batch, flags, scl, p.gq,
            p.gc, p.gf, p.iw, pre, post,
        )  # fmt: skip
        launch.run(kern, -(-lines // j), g.block, args)

    def chain(self, passes, length, src, xn, dst, yn, first, last, scl, pre=0, post=0):
        """Every pass of one transform of ``length``: ``first`` flags on the first pass's
        loads, ``last`` on the last pass's stores; work buffers between."""
        _check_size(self.batch, length)
        cur, cur_n = src, xn
        spare = None
        for i, p in enumerate(passes):
            final = i == len(passes) - 1
            flags = first if i == 0 else 0
            if final:
                flags |= last
                out, out_n = dst, yn
            else:
                out = spare if spare is not None else self.work(length)
                out_n = length
            self.launch(p, length, cur, cur_n, out, out_n, flags, scl if final else 1.0,
                        pre if i == 0 else 0, post if final else 0)  # fmt: skip
            spare = cur if i > 0 else None  # the buffer just read is free for the next pass
            cur, cur_n = out, out_n


def transform(x: ndarray, y: ndarray, axis: int, n: int, *, kind: str, conj_in: bool,
              conj_out: bool, scale: float) -> None:  # fmt: skip
    """Fill ``y`` with the length-``n`` transform of ``x`` along ``axis``.

    ``kind``: ``"c2c"``, ``"r2c"`` (``y`` holds the first ``n // 2 + 1`` outputs) or
    ``"c2r"`` (``x`` holds a half-spectrum, ``y`` is real).  The transform is forward
    (``W = exp(-2 pi i / n)``); ``conj_in`` / ``conj_out`` conjugate its input / output
    (both: the inverse); ``scale`` multiplies the output.  Along ``axis``, ``x`` may be
    shorter than the transform (zero-padded) or longer (cropped).
    """
    be = x.backend
    if y.size == 0:
        return
    ct = _complex(y.dtype)
    g = planning.geometry(be, ct)
    src = layout(x, axis)
    if src is None:
        from ember.array.manipulation import ascontiguousarray

        x = ascontiguousarray(x)
        src = layout(x, axis)
    dst = layout(y, axis)
    if dst is None:  # (an ``out=`` view whose batch axes do not collapse)
        tmp = launch.new(be, y.shape, y.dtype)
        transform(x, tmp, axis, n, kind=kind, conj_in=conj_in, conj_out=conj_out,
                  scale=scale)  # fmt: skip
        y[...] = tmp
        return
    b1, b2 = math.prod(y.shape[:axis]), math.prod(y.shape[axis + 1 :])
    xn = min(x.shape[axis], n // 2 + 1 if kind == "c2r" else n)
    if x.size == 0:
        xn = 0
    yn = y.shape[axis]
    bstep = src[3] if b2 > 1 else src[2]
    bfast = b1 * b2 > 1 and abs(bstep) < abs(src[4])
    last = (k.CONJ_OUT if conj_out else 0) | (k.SCALE if scale != 1.0 else 0)
    if kind != "c2c" and planning.halvable(n, g, one_pass=kind == "r2c"):
        p = planning.half_plan(n, g)
        run = _Run(be, ct, g, n // 2, b1 * b2, b2, bfast, device_table(p, be, ct))
        if kind == "r2c":  # pairs in, FFT of n/2, the real input's spectrum out
            run.chain(p.passes, n // 2, src, xn, dst, yn, k.PAIRS, last | k.R2C, scale,
                      post=p.extra)  # fmt: skip
        else:  # the half-length spectrum in, FFT of n/2, pairs of real outputs out
            first = k.C2R | (k.CONJ_IN if conj_in else 0)
            run.chain(p.passes, n // 2, src, xn, dst, yn, first, last | k.PAIRS_OUT, scale,
                      pre=p.extra)  # fmt: skip
        return
    p = planning.plan(n, g)
    table = device_table(p, be, ct)
    first = (k.CONJ_IN if conj_in else 0) | (k.HERM if kind == "c2r" else 0)
    run = _Run(be, ct, g, n, b1 * b2, b2, bfast, table)
    if not p.bluestein:
        run.chain(p.passes, n, src, xn, dst, yn, first, last, scale)
        return
    # Bluestein: A = FFT_m(x * w); y = w * conj(FFT_m(conj(A) * conj(FFT(chirp)) / m))
    mid = run.work(p.m)
    run.chain(p.passes, p.m, src, xn, mid, p.m, first | k.PRE, 0, 1.0, pre=p.w)
    out_conj = 0 if conj_out else k.CONJ_OUT  # conj(conj(v) * w) = v * conj(w)
    last = out_conj | (k.SCALE if scale != 1.0 else 0) | k.POST
    run.chain(p.passes, p.m, mid, p.m, dst, yn, k.CONJ_IN | k.PRE, last, scale,
              pre=p.kernel, post=p.wconj)  # fmt: skip


def _check_size(batch: int, length: int) -> None:
    """The kernels number points and lines in 32 bits."""
    if batch * length >= 1 << 32:
        from ember.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(
            f"ember.fft: {batch} transforms of length {length} are more than 2**32 points "
            "for Ember's FFT kernels (32-bit indices); transform the batch in parts (e.g. a "
            "loop over the first axis)"
        )


def _complex(dt: DType) -> DType:
    """The complex dtype a transform producing ``dt`` computes in."""
    from ember import dtypes

    if dt.is_complex:
        return dt
    return dtypes.complex128 if dt.itemsize == 8 else dtypes.complex64
