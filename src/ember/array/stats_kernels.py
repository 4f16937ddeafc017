"""The kernels of :mod:`ember.array.stats` (its docstring has the design): the order
statistics of sorted rows (:func:`quantile_kernel`), counting with atomics
(:func:`count_kernel`), per-bin sums of sorted indices (:func:`segment_sum_kernel`) and
histogram bin indices (:func:`bin_kernel`)."""

from __future__ import annotations

import functools
import math

import ember
from ember import dtypes
from ember.array import kernels
from ember.compiler.kernel import Kernel

BLOCK = 256
F64, I64 = dtypes.float64, dtypes.int64
# name: (code in the kernel, keeps the input dtype, alpha, beta) - Hyndman & Fan (1996)
METHODS = {
    "linear": (0, False, 1.0, 1.0), "lower": (1, True, 0, 0), "higher": (2, True, 0, 0),
    "nearest": (3, True, 0, 0), "midpoint": (4, False, 0, 0), "inverted_cdf": (5, True, 0, 0),
    "averaged_inverted_cdf": (6, False, 0, 0), "closest_observation": (7, True, 0, 0),
    "interpolated_inverted_cdf": (8, False, 0.0, 1.0), "hazen": (8, False, 0.5, 0.5),
    "weibull": (8, False, 0.0, 0.0), "median_unbiased": (8, False, 1 / 3, 1 / 3),
    "normal_unbiased": (8, False, 3 / 8, 3 / 8),
}  # fmt: skip
MEDIAN = 9  # the mean of the middle one or two elements, as np.median


@functools.cache
def quantile_kernel(discrete: bool, nans: bool, ct: dtypes.DType, it: dtypes.DType) -> Kernel:
    """``out[k * rows + r]``: quantile ``qs[k]`` of sorted row ``r`` of ``s`` (``rows`` x
    ``n``).  ``nans``: the input can hold NaNs; ``skip_nan`` counts only the non-NaN prefix.
    Values interpolate in ``ct``, indices in ``it``; ``discrete`` copies an element."""
    DISCRETE, NANS, CT, IT = discrete, nans, ct, it

    def quantile_rows(total, rows, n, s, qs, out, method, alpha, beta, skip_nan):
        i = ember.global_id()
        while i < total:
            base = (i % rows) * n
            cnt = n
            bad = False
            if NANS:
                if skip_nan:
                    p = 0
                    h = n
                    while p < h:  # the first NaN: NaNs sort last
                        mid = (p + h) >> 1
                        if s[base + mid] == s[base + mid]:
                            p = mid + 1
                        else:
                            h = mid
                    cnt = p
                    bad = cnt == 0
                else:
                    bad = s[base + n - 1] != s[base + n - 1]
            if bad:
                out[i] = out.dtype(s[base + n - 1])  # NaN
            else:
                q = IT(qs[i // rows])
                last = cnt - 1
                # every product rounded by itself, as NumPy's separate array operations
                # round it: a contracted n * q - 1 (one FMA) misses exact boundaries
                # (10 * 0.1 - 1 is 5.6e-17, not 0: inverted_cdf took the next element)
                v = ember.fma(IT(last), q, IT(0))
                g = IT(0)
                lo = last >> 1  # the median's lower middle
                if method == 0 or method == 4:
                    lo = math.floor(v)
                    g = v - IT(lo)
                    if method == 4 and g != 0:
                        g = IT(0.5)
                elif method == 1:
                    lo = math.floor(v)
                elif method == 2:
                    lo = math.ceil(v)
                elif method == 3:
                    lo = round(v)  # half to even, as np.around
                elif method == 5 or method == 7:
                    v = ember.fma(IT(cnt), q, IT(0)) - IT(1) - (IT(0.5) if method == 7 else IT(0))
                    lo = math.floor(v)
                    odd = lo % 2 == 1 if method == 7 else True
                    if not (v == IT(lo) and odd):
                        lo += 1
                elif method == 6:
                    v = ember.fma(IT(cnt), q, IT(0)) - IT(1)
                    lo = math.floor(v)
                    g = IT(0.5) if v == IT(lo) else IT(1)
                elif method == 8:
                    v = IT(cnt) * q + (IT(alpha) + q * (IT(1) - IT(alpha) - IT(beta))) - IT(1)
                    lo = math.floor(v)
                    g = v - IT(lo)
                up = lo + 1
                if v >= IT(last):  # NumPy's _get_indexes: past either end, that end
                    lo = last
                    up = last
                    if method == 0 or method == 8:
                        g = v + IT(1)
                elif v < IT(0):
                    lo = 0
                    up = 0
                    if method == 0 or method == 8:
                        g = v
                lo = min(max(lo, 0), last)
                if DISCRETE:
                    out[i] = out.dtype(s[base + lo])
                elif method == MEDIAN:
                    a = CT(s[base + lo])
                    b = CT(s[base + (cnt >> 1)])
                    out[i] = out.dtype((a + b) / CT(2))
                else:
                    a = CT(s[base + lo])
                    b = CT(s[base + up])
                    t = CT(g)
                    d = b - a
                    if NANS:  # floats: the difference in their own dtype, as NumPy's
                        d = CT(s[base + up] - s[base + lo])
                    out[i] = out.dtype(b - d * (CT(1) - t) if t >= CT(0.5) else a + d * t)
            i += ember.global_size()

    name = f"quantile_{'discrete' if discrete else ct.name}_{it.name}" + ("_nan" if nans else "")
    return kernels._named(quantile_rows, name)


@functools.cache
def count_kernel(weighted: bool) -> Kernel:
    """``out[k] += 1`` (``weighted``: ``+= w[i]``) for every ``k = x[i]`` in ``[0, length)``."""
    WEIGHTED = weighted

    def count_values(n, x, xbase, xstep, w, wbase, wstep, out, length):
        i = ember.global_id()
        while i < n:
            k = ember.int64(x[xbase + i * xstep])
            if k >= 0 and k < length:
                if WEIGHTED:
                    ember.atomic_add(out, k, out.dtype(w[wbase + i * wstep]))
                else:
                    ember.atomic_add(out, k, 1)
            i += ember.global_size()

    return kernels._named(count_values, "bincount" + ("_weighted" if weighted else ""))


@functools.cache
def segment_sum_kernel() -> Kernel:
    """``out[b]``: the sum, in order, of ``w[starts[b]:starts[b + 1]]``."""

    def segment_sums(m, starts, w, out):
        b = ember.global_id()
        while b < m:
            acc = out.dtype(0)
            for j in range(starts[b], starts[b + 1]):
                acc += w[j]
            out[b] = acc
            b += ember.global_size()

    return kernels._named(segment_sums, "segment_sums")


@functools.cache
def _bin_of(et: dtypes.DType):
    """``bin_of(v, e, nb, scale, uniform)``: the bin of ``v`` among the ``nb + 1`` edges
    ``e`` (compared as ``et``), -1 outside them; the last bin includes its right edge.
    ``uniform``: NumPy's index ``(v - e[0]) * scale`` corrected by one against the edges,
    else a binary search."""
    ET = et

    def bin_of(v, e, nb, scale, uniform):
        k = -1
        if v >= ET(e[0]) and v <= ET(e[nb]):
            if uniform:
                k = min(max(ember.int64((ember.float64(v) - ember.float64(e[0])) * scale), 0),
                        nb - 1)  # fmt: skip
                if v < ET(e[k]):
                    k -= 1
                elif v >= ET(e[k + 1]) and k != nb - 1:
                    k += 1
            else:
                lo = 1
                hi = nb
                while lo < hi:  # the first edge after v, among e[1:nb]
                    mid = (lo + hi) >> 1
                    if ET(e[mid]) <= v:
                        lo = mid + 1
                    else:
                        hi = mid
                k = lo - 1
        return k

    bin_of.__name__ = bin_of.__qualname__ = f"bin_of_{et.name}"
    return bin_of


@functools.cache
def bin_kernel(et: dtypes.DType) -> Kernel:
    """``out[i]``: the bin of ``a[i]`` (:func:`_bin_of`), -1 outside the edges."""
    ET, bin_of = et, _bin_of(et)

    def bin_index(n, a, abase, astep, e, nb, scale, uniform, out):
        i = ember.global_id()
        while i < n:
            out[i] = bin_of(ET(a[abase + i * astep]), e, nb, scale, uniform)
            i += ember.global_size()

    return kernels._named(bin_index, f"histogram_bins_{et.name}")


def _index_bin(v, e, nb, scale, uniform):
    """:func:`bincount`'s bin: the value itself, -1 outside ``[0, nb)``."""
    return v if v >= 0 and v < nb else -1


@functools.cache
def shared_count_kernel(et: dtypes.DType, histogram: bool) -> Kernel:
    """``out[k] +=`` how many values of ``a`` fall in bin ``k`` (``histogram``: of
    :func:`_bin_of` among the edges ``e``; else the value itself, read as ``et`` =
    int64), for few bins: each block counts into its own ``nb`` bins in shared memory,
    then adds them to ``out`` (the many threads hitting one bin meet in their block's
    shared memory, not at one global address; one pass over ``a``)."""
    ET = et
    BIN = _bin_of(et) if histogram else _index_bin

    def shared_counts(n, a, abase, astep, e, nb, scale, uniform, out):
        counts = ember.shared(nb, ember.uint32)
        tid = ember.thread_idx.x
        for b in range(tid, nb, ember.block_dim.x):
            counts[b] = 0
        ember.barrier()
        i = ember.global_id()
        while i < n:
            k = BIN(ET(a[abase + i * astep]), e, nb, scale, uniform)
            if k >= 0:
                ember.atomic_add(counts, k, 1)
            i += ember.global_size()
        ember.barrier()
        for b in range(tid, nb, ember.block_dim.x):
            c = counts[b]
            if c != 0:
                ember.atomic_add(out, b, ember.int64(c))

    name = f"histogram_counts_{et.name}" if histogram else "bincount_shared"
    return kernels._named(shared_counts, name)
