"""NumPy's numerical helpers on the device: ``convolve``, ``correlate``, ``interp``,
``gradient``, ``trapezoid``, ``unwrap``, ``cross``, and (in :mod:`ember.array.polynomials`,
which shares this module's helpers) the polynomial functions ``polyval``, ``polyfit``,
``polyder``, ``polyint``, ``polyadd``, ``polysub``, ``polymul``, ``roots``; NumPy 2's
signatures, result dtypes and shapes.

Each function is one of the small Ember kernels below or a composition of Ember's array
operations, so it runs unchanged on every backend and never asks which one it is on.
The kernels are grid-stride loops, one thread per output element; N-d inputs are seen
as ``outer x n x inner`` lanes along the axis (:func:`_lanes`).

* ``convolve``/``correlate``: each output is one dot product (:func:`_conv_kernel`,
  strided and reversed views read in place); ``correlate`` convolves with ``conj(v)``
  reversed, in NumPy's output window.  Float inputs with ``n * m >= FFT_RATIO * (n + m)``
  use ``ember.fft`` instead (crossover measured on the cpu backend): rounding then
  differs from the direct sum by about ``eps * max|a| * sum|v|``; integers stay exact.
* ``interp``: ``ember.searchsorted``, then one kernel does NumPy's lerp (its NaN
  fallbacks; complex ``fp`` per part).  ``polyval``: Horner's rule per point.
* ``gradient``: one kernel per axis (NumPy's uniform formulas for scalar spacing, its
  non-uniform ones for coordinates).  ``trapezoid``: one kernel writes the terms, then
  ``ember.sum``.  ``unwrap``: a kernel computes the corrections, ``ember.cumsum`` sums
  them, a second kernel adds them.
* ``cross``, ``polyder``, ``polyint``, ``polyadd``/``polysub``/``polymul``: elementwise
  operations, ``concatenate`` and ``convolve``.  ``polyfit``: ``ember.linalg.lstsq`` on
  the column-scaled Vandermonde matrix (a kernel); reads the rank (an int) to warn.
* ``roots``: the companion matrix is built on the device, but ``ember.linalg.eigvals``
  runs on the **host** (one :class:`~ember.EmberPerformanceWarning`), and the
  coefficients are read back to strip leading and trailing zeros.

Array arguments must be ember arrays (NumPy arrays raise the usual "ember.asarray"
error); Python scalars and lists of numbers are accepted where NumPy takes them.
"""

from __future__ import annotations

import functools
import math
import warnings

import ember
from ember import dtypes
from ember.array import creation, kernels, launch, manipulation
from ember.array.ndarray import ndarray
from ember.compiler.kernel import Kernel

BLOCK = 256
MODES = ("full", "same", "valid")
# Direct vs FFT convolution, measured on the cpu backend (2-core AMD EPYC, float64 and
# float32 alike): the direct sum costs ~1 ns per multiply-add (n * m), the FFT path
# ~60-130 ns per output point (n + m).  Equal lengths L: direct 0.11 ms vs FFT 0.18 ms at
# L = 256, 0.33 vs 0.31 at 512, 18.5 vs 0.57 at 4096; n = 65536: direct 7.0 ms vs 8.5 at
# m = 128, 18.2 vs 10.7 at m = 256.  So FFT when n * m >= FFT_RATIO * (n + m).
FFT_RATIO = 150


# --------------------------------------------------------------------- helpers
_arr = creation.operand


def _vector(x, what: str, name: str) -> ndarray:
    x = _arr(x, what)
    if x.ndim == 0:
        x = x.reshape(1)
    if x.ndim != 1:
        raise ValueError(f"ember.{what}: {name} must be 1-d, got shape {x.shape}")
    return x


def _axis(axis, ndim: int, what: str) -> int:
    return manipulation._axis(axis, ndim, f"ember.{what}: axis")


def _run(kernel: Kernel, be, total: int, *args) -> None:
    """Launch a grid-stride ``kernel(total, *args)`` over ``total`` elements."""
    launch.run(kernel, launch.grid(be, total, BLOCK), BLOCK, (total, *args))


def _lanes(x: ndarray, ax: int) -> tuple[int, int, int]:
    """``(outer, n, inner)``: the C-contiguous ``x`` as ``outer`` x ``n`` x ``inner`` with
    ``ax`` in the middle; element ``(o, k, r)`` is at ``(o * n + k) * inner + r``."""
    return math.prod(x.shape[:ax]), x.shape[ax], math.prod(x.shape[ax + 1 :])


def _compute(dt: dtypes.DType) -> dtypes.DType:
    """The dtype a kernel computes ``dt`` in: float16 in float32, bools as int64."""
    if dt.kind == "b":
        return dtypes.int64
    return dtypes.float32 if dt.kind == "f" and dt.itemsize < 4 else dt


# --------------------------------------------------------------------- convolution
@functools.cache
def _conv_kernel(ct: dtypes.DType) -> Kernel:
    """``out[i] = sum_j a[k - j] * w[j]`` for ``k = i + off`` (the full convolution's
    element ``k``), summed in ``ct``; ``a`` and ``w`` are strided 1-d views."""
    CT = ct

    def convolve(total, off, n, m, a, abase, astep, w, wbase, wstep, out):
        i = ember.global_id()
        while i < total:
            k = i + off
            j = max(k - n + 1, 0)
            hi = min(k, m - 1)
            acc = CT(0)
            while j <= hi:
                acc += CT(a[abase + (k - j) * astep]) * CT(w[wbase + j * wstep])
                j += 1
            out[i] = out.dtype(acc)
            i += ember.global_size()

    return kernels._named(convolve, f"convolve_{ct.name}")


def _fft_conv(a: ndarray, w: ndarray, off: int, length: int, dt) -> ndarray:
    size = 1 << (a.shape[0] + w.shape[0] - 2).bit_length()  # a power of 2 >= n + m - 1
    if dt.is_complex:
        spec = ember.fft.fft(a, n=size) * ember.fft.fft(w, n=size)
        full = ember.fft.ifft(spec, n=size)
    else:
        full = ember.fft.irfft(ember.fft.rfft(a, n=size) * ember.fft.rfft(w, n=size), n=size)
    return full[off : off + length].astype(dt)


def _convolve(a: ndarray, w: ndarray, mode: str, what: str, off_of) -> ndarray:
    """The window of the full convolution of ``a`` and ``w`` that ``mode`` keeps, from
    the offset ``off_of(short, length)``."""
    if mode not in MODES:
        raise ValueError(f"ember.{what}: mode must be 'full', 'same' or 'valid', not {mode!r}")
    n, m = a.shape[0], w.shape[0]
    if n == 0 or m == 0:
        raise ValueError(f"ember.{what}: {'a' if n == 0 else 'v'} cannot be empty")
    short, long = min(n, m), max(n, m)
    length = {"full": n + m - 1, "same": long, "valid": long - short + 1}[mode]
    off = 0 if mode == "full" else (short - 1 if mode == "valid" else off_of(short, length))
    dt = ember.result_type(a, w)
    if dt.kind in "fc" and dt.itemsize >= 4 and n * m >= FFT_RATIO * (n + m):
        return _fft_conv(a, w, off, length, dt)
    out = launch.new(a.backend, (length,), dt)
    av, abase, (astep,) = launch.flat(a)
    wv, wbase, (wstep,) = launch.flat(w)
    args = (off, n, m, av, abase, astep, wv, wbase, wstep, out)
    _run(_conv_kernel(_compute(dt)), a.backend, length, *args)
    return out


def convolve(a, v, mode: str = "full") -> ndarray:
    """The discrete linear convolution of the 1-d arrays ``a`` and ``v`` (NumPy's
    ``convolve``; either may be the longer, scalars count as length 1).  ``mode``:
    ``"full"`` (``len(a) + len(v) - 1`` points), ``"same"`` (``max(len(a), len(v))``,
    centred) or ``"valid"`` (where they overlap completely).  Returns
    ``result_type(a, v)``; long float inputs go through ``ember.fft``."""
    a, v = _vector(a, "convolve", "a"), _vector(v, "convolve", "v")
    return _convolve(a, v, mode, "convolve", lambda short, length: (short - 1) // 2)


def correlate(a, v, mode: str = "valid") -> ndarray:
    """The cross-correlation ``c[k] = sum_n a[n + k] * conj(v[n])`` of two 1-d arrays
    (NumPy's ``correlate``: ``v`` conjugated when complex; when ``v`` is the longer the
    windows of ``same`` are NumPy's).  Default mode ``valid``; see :func:`convolve`."""
    a, v = _vector(a, "correlate", "a"), _vector(v, "correlate", "v")
    w = (ember.conj(v) if v.dtype.is_complex else v)[::-1]
    n, m = a.shape[0], v.shape[0]

    def same(short, length):  # NumPy computes the swapped pair and reverses it
        return (short - 1) // 2 if m <= n else n + m - 1 - length - (short - 1) // 2

    return _convolve(a, w, mode, "correlate", same)


# --------------------------------------------------------------------- interp
def _lerp(x, x0, x1, f0, f1):
    """NumPy's interpolation on one interval, with its NaN fallbacks (infinite values)."""
    slope = (f1 - f0) / (x1 - x0)
    r = slope * (x - x0) + f0
    if r != r:
        r = slope * (x - x1) + f1
        if r != r and f0 == f1:
            r = f0
    return r


@functools.cache
def _interp_kernel(cplx: bool) -> Kernel:
    """``out[i]``: ``fp`` at ``x[i]`` in the interval ``r[i] - 1`` (``r``: how many of
    ``xp`` are ``<= x[i]``), ``left``/``right`` outside."""
    CPLX = cplx

    def interp(total, n, x, r, xp, fp, out, left, right, has_left, has_right):
        i = ember.global_id()
        while i < total:
            xi = x[i]
            j = r[i] - 1
            if xi != xi:
                out[i] = out.dtype(xi)
            elif j < 0:
                out[i] = left if has_left else fp[0]
            elif j >= n - 1:
                out[i] = right if has_right and xi != xp[n - 1] else fp[n - 1]
            elif xi == xp[j]:
                out[i] = fp[j]
            elif CPLX:
                re = _lerp(xi, xp[j], xp[j + 1], fp[j].real, fp[j + 1].real)
                im = _lerp(xi, xp[j], xp[j + 1], fp[j].imag, fp[j + 1].imag)
                out[i] = complex(re, im)
            else:
                out[i] = _lerp(xi, xp[j], xp[j + 1], fp[j], fp[j + 1])
            i += ember.global_size()

    return kernels._named(interp, "interp_complex" if cplx else "interp")


def interp(x, xp, fp, left=None, right=None, period=None) -> ndarray:
    """Piecewise-linear interpolation of the samples ``(xp, fp)`` at ``x`` (NumPy's
    ``interp``): ``xp`` 1-d increasing (not checked, as NumPy; any order with
    ``period``), ``fp`` real or complex; ``left``/``right`` below ``xp[0]``/above
    ``xp[-1]`` (default ``fp[0]``/``fp[-1]``; ignored with ``period``, for periodic
    ``x``).  Returns float64 (complex128 for complex ``fp``) of ``x``'s shape."""
    x = _arr(x, "interp")
    xp, fp = _arr(xp, "interp"), _arr(fp, "interp")
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError(f"ember.interp: xp and fp must be 1-d, got {xp.shape} and {fp.shape}")
    if xp.shape != fp.shape:
        raise ValueError(f"ember.interp: fp and xp are not of the same length ({fp.shape[0]} "
                         f"and {xp.shape[0]})")  # fmt: skip
    if xp.shape[0] == 0:
        raise ValueError("ember.interp: the array of sample points xp is empty")
    if x.dtype.is_complex or xp.dtype.is_complex:
        raise TypeError("ember.interp: x and xp must be real (only fp may be complex)")
    cplx = fp.dtype.is_complex
    out_type = dtypes.complex128 if cplx else dtypes.float64
    x, xp = x.astype(dtypes.float64, copy=False), xp.astype(dtypes.float64, copy=False)
    fp = fp.astype(out_type, copy=False)
    if period is not None:
        if period == 0:
            raise ValueError("ember.interp: period must be a non-zero value")
        period, left, right = abs(period), None, None
        x, xp = x % period, xp % period
        order = ember.argsort(xp)
        xp, fp = ember.take(xp, order), ember.take(fp, order)
        xp = ember.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = ember.concatenate([fp[-1:], fp, fp[:1]])
    flat = ember.ascontiguousarray(x).reshape(-1)
    r = ember.searchsorted(xp, flat, side="right")
    out = launch.new(flat.backend, flat.shape, out_type)
    if flat.size:
        xp, fp = ember.ascontiguousarray(xp), ember.ascontiguousarray(fp)
        cast = complex if cplx else float
        lo, hi = (cast(0 if b is None else b) for b in (left, right))
        args = (xp.shape[0], launch.flat1(flat), r, xp, fp, out, lo, hi,
                left is not None, right is not None)  # fmt: skip
        _run(_interp_kernel(cplx), flat.backend, flat.size, *args)
    return out.reshape(x.shape)


# --------------------------------------------------------------------- calculus
def _step(xs, dx, mode, j):
    """The spacing after sample ``j``: the scalar ``dx`` (mode 0), the 0-d array ``xs``
    (mode 1), or the difference of the coordinates ``xs`` (mode 2)."""
    if mode == 0:
        return dx
    if mode == 1:
        return xs[0]
    return xs[j + 1] - xs[j]


@functools.cache
def _gradient_kernel(ct: dtypes.DType) -> Kernel:
    """NumPy's ``gradient`` along the middle axis of ``(outer, n, inner)`` in ``ct``:
    its uniform formulas for a scalar spacing (second-order ends: the non-uniform ones
    with equal steps, equal up to rounding), the non-uniform ones for coordinates."""
    CT = ct

    def gradient(total, n, s, f, out, xs, dx, mode, edge):
        i = ember.global_id()
        while i < total:
            k = (i // s) % n
            end = k == 0 or k == n - 1
            lo = min(max(k - 1, 0), n - 1 - edge)  # the first of the points used
            j = i + (lo - k) * s
            f0 = CT(f[j])
            f1 = CT(f[j + s])
            f2 = CT(0) if edge == 1 and end else CT(f[j + 2 * s])
            d1 = CT(_step(xs, dx, mode, lo))
            d2 = CT(_step(xs, dx, mode, lo + 1)) if mode == 2 and (edge == 2 or not end) else d1
            t = d1 + d2
            if edge == 1 and end:
                g = (f1 - f0) / d1
            elif mode != 2 and not end:
                g = (f2 - f0) / (CT(2.0) * d1)
            elif k == 0:
                g = (-(CT(2.0) * d1 + d2) / (d1 * t)) * f0 + (t / (d1 * d2)) * f1
                g += (-d1 / (d2 * t)) * f2
            elif k == n - 1:
                g = (d2 / (d1 * t)) * f0 + (-t / (d1 * d2)) * f1
                g += ((CT(2.0) * d2 + d1) / (d2 * t)) * f2
            else:
                g = (-d2 / (d1 * t)) * f0 + ((d2 - d1) / (d1 * d2)) * f1 + (d1 / (d2 * t)) * f2
            out[i] = out.dtype(g)
            i += ember.global_size()

    return kernels._named(gradient, f"gradient_{ct.name}")


def _spacings(f: ndarray, axes: tuple[int, ...], varargs) -> list:
    """One spacing per axis: a Python scalar, a 0-d ember array or 1-d coordinates."""

    def scalar(d):
        return isinstance(d, int | float) or getattr(d, "ndim", 1) == 0

    if len(varargs) <= 1:
        varargs = (varargs or (1.0,)) * len(axes) if not varargs or scalar(varargs[0]) else varargs
    if len(varargs) != len(axes):
        raise TypeError(f"ember.gradient: {len(varargs)} spacings for {len(axes)} axes; "
                        "give none, one scalar, or one per axis")  # fmt: skip
    out = []
    for d, ax in zip(varargs, axes, strict=True):
        d = d if scalar(d) and not isinstance(d, ndarray) else _arr(d, "gradient")
        if isinstance(d, ndarray) and d.ndim and (d.ndim != 1 or d.shape[0] != f.shape[ax]):
            n = f.shape[ax]
            raise ValueError(f"ember.gradient: coordinates of shape {d.shape} for axis {ax} "
                             f"of length {n}: give a scalar or {n} values")  # fmt: skip
        if isinstance(d, ndarray) and d.dtype.kind in "biu":
            d = d.astype(dtypes.float64)
        out.append(d)
    return out


def _grad_axis(f: ndarray, ax: int, dx, edge: int) -> ndarray:
    """One launch of :func:`_gradient_kernel` along ``ax`` of the C-contiguous ``f``."""
    _, n, inner = _lanes(f, ax)
    out = launch.new(f.backend, f.shape, f.dtype)
    if isinstance(dx, ndarray):
        mode, xs, step = (1 if dx.ndim == 0 else 2), ember.ascontiguousarray(dx), 0.0
        ct = _compute(ember.result_type(f, xs))
        xs = xs.reshape(-1)
    else:
        mode, xs, step, ct = 0, launch.flat1(f), float(dx), _compute(f.dtype)
    args = (n, inner, launch.flat1(f), launch.flat1(out), xs, step, mode, edge)
    _run(_gradient_kernel(ct), f.backend, f.size, *args)
    return out


def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """The gradient of ``f`` by central differences (NumPy's ``gradient``), second
    order inside, ``edge_order`` (1 or 2) at the ends, along ``axis`` (an int, a tuple,
    default all).  ``varargs``: no spacing (1.0), one scalar for every axis, or one per
    axis, each a scalar (Python number or 0-d array) or the 1-d sample coordinates.
    Returns one array per axis (a tuple for several) of ``f``'s shape and dtype
    (float64 for integers and bools)."""
    f = _arr(f, "gradient")
    axes = tuple(range(f.ndim)) if axis is None else axis
    axes = axes if isinstance(axes, tuple | list) else (axes,)
    axes = tuple(_axis(a, f.ndim, "gradient") for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"ember.gradient: repeated axis in {axis!r}")
    if edge_order not in (1, 2):
        raise ValueError(f"ember.gradient: edge_order must be 1 or 2, got {edge_order!r}")
    spacings = _spacings(f, axes, varargs)
    otype = f.dtype if f.dtype.kind in "fc" else dtypes.float64
    f = ember.ascontiguousarray(f.astype(otype, copy=False))
    for ax in axes:
        if f.shape[ax] < edge_order + 1:
            raise ValueError(f"ember.gradient: axis {ax} has {f.shape[ax]} elements; at least "
                             f"edge_order + 1 = {edge_order + 1} are required")  # fmt: skip
    out = [_grad_axis(f, ax, dx, edge_order) for ax, dx in zip(axes, spacings, strict=True)]
    return out[0] if len(out) == 1 else tuple(out)


@functools.cache
def _trapezoid_kernel(ct: dtypes.DType) -> Kernel:
    """``t[o, r, k] = d_k * (y[o, k + 1, r] + y[o, k, r]) / 2`` (the steps ``d_k`` as in
    :func:`_step`; mode 3: ``xs`` has ``y``'s layout)."""
    CT = ct

    def trapezoid_terms(total, m, s, y, t, xs, dx, mode):
        i = ember.global_id()
        while i < total:
            k = i % m
            r = (i // m) % s
            j = (i // (m * s) * (m + 1) + k) * s + r
            if mode == 3:
                d = CT(xs[j + s] - xs[j])
            else:
                d = CT(_step(xs, dx, mode, k))
            t[i] = d * CT(y[j + s] + y[j]) / CT(2.0)
            i += ember.global_size()

    return kernels._named(trapezoid_terms, f"trapezoid_{ct.name}")


def trapezoid(y, x=None, dx=1.0, axis: int = -1) -> ndarray:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule (NumPy's
    ``trapezoid``), with sample points ``x`` (1-d along ``axis``, or broadcastable to
    ``y``) or the uniform spacing ``dx``.  One kernel writes the terms with ``axis``
    last, then ``ember.sum`` adds them.  Returns ``y``'s shape without ``axis``."""
    y = ember.ascontiguousarray(_arr(y, "trapezoid"))
    ax = _axis(axis, y.ndim, "trapezoid")
    outer, n, inner = _lanes(y, ax)
    xs, mode = launch.flat1(y), 0
    if isinstance(dx, ndarray):
        xs, mode = ember.ascontiguousarray(dx).reshape(-1), 1
    if x is not None:
        x = _arr(x, "trapezoid")
        if x.ndim == 1 and x.shape[0] != n:
            raise ValueError(f"ember.trapezoid: x has {x.shape[0]} points, y has {n} along "
                             f"axis {axis}: they must match")  # fmt: skip
        mode = 2 if x.ndim == 1 else 3
        xs = x if mode == 2 else ember.broadcast_to(x, y.shape)
        xs = ember.ascontiguousarray(xs).reshape(-1)
    ct = ember.result_type(y, dx if x is None else xs, 2.0)
    m = max(n - 1, 0)
    terms = launch.new(y.backend, (outer, inner, m), ct)
    if terms.size:
        args = (m, inner, launch.flat1(y), launch.flat1(terms), xs, 0.0 if mode else float(dx))
        _run(_trapezoid_kernel(ct), y.backend, terms.size, *args, mode)
    shape = y.shape[:ax] + y.shape[ax + 1 :]
    return ember.sum(terms, axis=-1).reshape(shape)


@functools.cache
def _unwrap_kernel(ct: dtypes.DType, assemble: bool) -> Kernel:
    """Phase 1: ``c[o, k, r]``, NumPy's correction of the step ``p[k + 1] - p[k]``; phase
    2 (``assemble``): ``out = p`` plus the summed corrections ``c`` after the first."""
    CT, ASSEMBLE = ct, assemble

    def unwrap(total, n, s, p, c, out, period, discont, high, ambiguous):
        i = ember.global_id()
        while i < total:
            if ASSEMBLE:
                k = (i // s) % n
                if k == 0:
                    out[i] = out.dtype(p[i])
                else:
                    out[i] = out.dtype(p[i] + c[i - (i // (n * s) + 1) * s])
            else:
                j = i + i // ((n - 1) * s) * s
                d = p[j + s] - p[j]
                dd = CT(d)
                fix = (dd + CT(high)) % CT(period) - CT(high)
                if ambiguous and fix == -CT(high) and d > 0:
                    fix = CT(high)
                c[i] = CT(0) if abs(d) < discont else fix - dd
            i += ember.global_size()

    return kernels._named(unwrap, f"unwrap_{'sum' if assemble else 'fix'}_{ct.name}")


def unwrap(p, discont=None, axis: int = -1, *, period=2 * math.pi) -> ndarray:
    """``p`` with the jumps along ``axis`` larger than ``discont`` (default
    ``period / 2``) replaced by their complement modulo ``period`` (NumPy's ``unwrap``):
    one kernel computes the corrections, ``ember.cumsum`` sums them, a second adds
    them.  Float result for float ``p`` or ``period``, integer for integers."""
    p = ember.ascontiguousarray(_arr(p, "unwrap"))
    ax = _axis(axis, p.ndim, "unwrap")
    if p.dtype.kind not in "iuf":
        raise TypeError(f"ember.unwrap: p must be real, got {p.dtype.name}")
    _, n, inner = _lanes(p, ax)
    dt = ember.result_type(p, period)
    discont = period / 2 if discont is None else discont
    high, ambiguous = divmod(period, 2) if dt.kind in "iu" else (period / 2, True)
    if dt.kind in "iu":
        ambiguous = ambiguous == 0
    if n < 2 or p.size == 0:
        return p.astype(dt)
    out = launch.new(p.backend, p.shape, dt)
    fix = launch.new(p.backend, p.shape[:ax] + (n - 1,) + p.shape[ax + 1 :], dt)
    tail = (period, float(discont), high, ambiguous)

    def run(c: ndarray, phase: bool) -> None:
        args = (n, inner, launch.flat1(p), launch.flat1(c), launch.flat1(out), *tail)
        _run(_unwrap_kernel(dt, phase), p.backend, out.size if phase else c.size, *args)

    run(fix, False)
    run(ember.cumsum(fix, axis=ax), True)
    return out


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None) -> ndarray:
    """The cross product of 3-vectors (or 2-vectors) along ``axisa``/``axisb`` (NumPy's
    ``cross``; ``axis`` sets all three).  Two 2-vectors give the z component only (a
    scalar per pair, no vector axis); a 2-vector with a 3-vector takes z = 0.  2-vectors
    warn with DeprecationWarning, as NumPy 2 does."""
    a, b = _arr(a, "cross"), _arr(b, "cross")
    if axis is not None:
        axisa = axisb = axisc = axis
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("ember.cross: a and b must be arrays of vectors, not scalars")
    a = ember.moveaxis(a, _axis(axisa, a.ndim, "cross"), -1)
    b = ember.moveaxis(b, _axis(axisb, b.ndim, "cross"), -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"ember.cross: incompatible vector lengths {na} and {nb} "
                         "(each must be 2 or 3)")  # fmt: skip
    if na == 2 or nb == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=2)  # fmt: skip
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    if na == 3 and nb == 3:
        a2, b2 = a[..., 2], b[..., 2]
        x, y = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    elif na == 2:
        b2 = b[..., 2]
        x, y = a1 * b2, -(a0 * b2)
    else:
        a2 = a[..., 2]
        x, y = -(a2 * b1), a2 * b0
    x, y, z = ember.broadcast_arrays(x, y, z)
    c = ember.stack([x, y, z], axis=-1)
    return ember.moveaxis(c, -1, _axis(axisc, c.ndim, "cross"))


__all__ = [
    "convolve", "correlate", "interp", "gradient", "trapezoid", "unwrap", "cross",
]  # fmt: skip
