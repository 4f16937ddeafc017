"""More of NumPy's ``Generator`` distributions for :mod:`ember.array.random`: device functions
and their kernels (the host side, parameter checks and launches, is
:mod:`ember.array.random_draws`).

Two kinds of draws, both on the module's one Philox stream (its docstring has the table):

* **fixed words** (inverse CDF): each value is a device function of the words of its Philox
  block, two float64 values per block, through :func:`ember.array.random_kernels._fill` like the
  uniform and normal draws.  Uniforms here are open, ``(k + 1/2) 2**-53`` for the 53-bit
  ``k`` of :func:`~ember.array.philox.to_float64`, so ``log(u)`` and ``log(1 - u)`` are finite
  and the two tails are mirror images.
* **one sub-stream per value** (rejection samplers and their compositions): value ``i`` of
  a draw owns the block ``b = c + i`` and, with it, every counter ``(b mod 2**32, b >> 32,
  j, s)``: ``j`` numbers the sub-blocks a value consumes (its attempts), ``s`` the stage of
  a composition (``beta``'s two gammas, ``negative_binomial``'s gamma and Poisson).  A retry
  takes the value's next sub-block, never a neighbour's numbers, so value ``i`` does not
  depend on the launch shape, the backend, or how many attempts other values needed.

Samplers (all exact; the rejection tests are the papers', in float64 unless noted):

* ``standard_gamma``: Marsaglia & Tsang, "A simple method for generating gamma variables"
  (ACM TOMS 2000); shape < 1 as ``Gamma(a + 1) U**(1/a)``.  Attempt ``j`` uses sub-blocks
  ``2j`` (a Box-Muller normal) and ``2j + 1`` (the uniform; words 2-3: the ``U`` of shape
  < 1), float32: sub-block ``j`` (words 0-1 the normal, 2 the uniform, 3 the ``U``).
  ``1 - v + log v`` is computed as ``log1p(t) - t`` (``t = v - 1``), which keeps float32
  exact enough for large shapes.
* ``poisson``: ``lam < 10``: inversion of one uniform (sub-block 0; a rounding restart takes
  the next); else PTRS, Hörmann, "The transformed rejection method for generating Poisson
  random variables" (Insurance: Math. & Econ. 1993), one sub-block per attempt.
* ``binomial``: ``p > 1/2`` samples ``n - X(n, 1 - p)``; ``n min(p, 1-p) < 30``: inversion
  (sub-block ``j`` for restart ``j``); else BTRD, Hörmann, "The generation of binomial random
  variates" (J. Stat. Comput. Simul. 1993), one sub-block per attempt (its 2 uniforms).
* beta, F, t, negative binomial and Dirichlet compose these in log space (so tiny shapes
  never give 0/0); the Dirichlet row ``r`` of ``k`` uses the blocks of values ``r k + j``.
"""

from __future__ import annotations

import functools
import math

import ember
from ember.array import philox as ph
from ember.compiler.kernel import Kernel

F64_UNIT = ph.F64_UNIT
HALF_LOG_2PI = 0.9189385332046727  # log(2 pi) / 2
INT64_CAP = 9.2e18  # counts are clamped below 2**63 before the conversion
POISSON_SMALL = 10.0  # inversion below, PTRS above (NumPy's switch too)
BINOMIAL_SMALL = 30.0  # n min(p, 1-p): inversion below, BTRD above
MAX_LAM = 9.2e18 - 64 * math.sqrt(9.2e18)  # the largest Poisson mean with int64 results


# --------------------------------------------------------------------- uniforms
def open64(a, b):
    """Two words as a float64 in (0, 1): ``(k + 1/2) 2**-53``, ``k`` the 53 bits that
    :func:`~ember.array.philox.to_float64` takes."""
    return (ember.float64(a >> 5) * 67108864.0 + ember.float64(b >> 6) + 0.5) * F64_UNIT


def open32(a):
    """A word as a float32 in (0, 1): ``(k + 1/2) 2**-24``."""
    return (ember.float32(a >> 8) + ember.float32(0.5)) * ember.float32(ph.F32_UNIT)


def sub_block(k0, k1, c0, c1, j, s):
    """The four words of sub-block ``j`` of stage ``s`` of the value owning block
    ``(c0, c1)``: Philox of the counter ``(c0, c1, j, s)``."""
    return ph.philox((k0, k1), (c0, c1, j, s))


# --------------------------------------------------------------------- inverse CDFs
# ``_fill``'s device functions: four words and two parameters -> two float64 values.
def d_lognormal(w0, w1, w2, w3, mean, sigma):
    z0, z1 = ph.box_muller64(w0, w1, w2, w3)  # the normal draw's numbers, exponentiated
    a = ember.exp(mean + sigma * z0)
    b = ember.exp(mean + sigma * z1)
    return a, b, a, b


def laplace1(u, loc, scale):
    if u < 0.5:
        return loc + scale * ember.log(2.0 * u)
    return loc - scale * ember.log(2.0 * (1.0 - u))


def d_laplace(w0, w1, w2, w3, loc, scale):
    a = laplace1(open64(w0, w1), loc, scale)
    b = laplace1(open64(w2, w3), loc, scale)
    return a, b, a, b


def d_logistic(w0, w1, w2, w3, loc, scale):
    u = open64(w0, w1)
    v = open64(w2, w3)
    a = loc + scale * ember.log(u / (1.0 - u))
    b = loc + scale * ember.log(v / (1.0 - v))
    return a, b, a, b


def d_gumbel(w0, w1, w2, w3, loc, scale):
    a = loc - scale * ember.log(-ember.log(open64(w0, w1)))
    b = loc - scale * ember.log(-ember.log(open64(w2, w3)))
    return a, b, a, b


def weibull1(u, a, inv_a):
    if a == 0.0:
        return 0.0
    return ember.pow(-ember.log(u), inv_a)


def d_weibull(w0, w1, w2, w3, a, inv_a):
    x = weibull1(open64(w0, w1), a, inv_a)
    y = weibull1(open64(w2, w3), a, inv_a)
    return x, y, x, y


def d_pareto(w0, w1, w2, w3, inv_a, unused):
    a = ember.expm1(-ember.log(open64(w0, w1)) * inv_a)
    b = ember.expm1(-ember.log(open64(w2, w3)) * inv_a)
    return a, b, a, b


def d_power(w0, w1, w2, w3, inv_a, unused):
    a = ember.exp(ember.log(open64(w0, w1)) * inv_a)
    b = ember.exp(ember.log(open64(w2, w3)) * inv_a)
    return a, b, a, b


def d_rayleigh(w0, w1, w2, w3, scale, unused):
    a = scale * ember.sqrt(-2.0 * ember.log(open64(w0, w1)))
    b = scale * ember.sqrt(-2.0 * ember.log(open64(w2, w3)))
    return a, b, a, b


def d_cauchy(w0, w1, w2, w3, unused0, unused1):
    a = ember.tan(math.pi * (open64(w0, w1) - 0.5))
    b = ember.tan(math.pi * (open64(w2, w3) - 0.5))
    return a, b, a, b


def geometric1(u, log_q):
    """The number of trials to the first success: ``ceil(log u / log(1 - p))``, >= 1."""
    return ember.fmin(ember.fmax(ember.ceil(ember.log(u) / log_q), 1.0), INT64_CAP)


def d_geometric(w0, w1, w2, w3, log_q, unused):
    a = geometric1(open64(w0, w1), log_q)
    b = geometric1(open64(w2, w3), log_q)
    return a, b, a, b


_INVERSE = {
    "lognormal": d_lognormal, "laplace": d_laplace, "logistic": d_logistic,
    "gumbel": d_gumbel, "weibull": d_weibull, "pareto": d_pareto, "power": d_power,
    "rayleigh": d_rayleigh, "cauchy": d_cauchy, "geometric": d_geometric,
}  # fmt: skip


@functools.cache
def inverse_kernel(name: str) -> Kernel:
    """The fill kernel of an inverse-CDF draw (two values per Philox block)."""
    from ember.array.random_kernels import _fill

    k = _fill(_INVERSE[name], 2)
    k.__name__ = k.__qualname__ = f"rng_{name}"
    return Kernel(k)


# --------------------------------------------------------------------- gamma
def attempt64(k0, k1, c0, c1, j, s):
    """Attempt ``j``'s numbers of a float64 gamma: a normal, a uniform in [0, 1) and an
    open uniform (sub-blocks ``2j`` and ``2j + 1``)."""
    w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 2 * j, s)
    z, unused = ph.box_muller64(w0, w1, w2, w3)
    w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 2 * j + 1, s)
    return z, ph.to_float64(w0, w1), open64(w2, w3)


def attempt32(k0, k1, c0, c1, j, s):
    """Attempt ``j``'s numbers of a float32 gamma: one sub-block."""
    w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, s)
    z, unused = ph.box_muller32(w0, w1)
    return z, ph.to_float32(w2), open32(w3)


def _gamma(ATTEMPT):
    def gamma_mt(k0, k1, c0, c1, s, a):
        """``(x, e)`` with ``x exp(e)`` a Gamma(a) variate (``e = 0`` for ``a >= 1``)."""
        x = a  # 0, NaN and inf are their own results
        e = a - a
        if a > 0.0 and a < math.inf:
            x = -a
            e = x - x
        aa = a
        if a < 1.0:
            aa = a + 1.0
        d = aa - 1.0 / 3.0
        c = 1.0 / ember.sqrt(9.0 * d)
        j = ember.uint32(0)
        while x < 0.0:
            z, u, extra = ATTEMPT(k0, k1, c0, c1, j, s)
            j += 1
            cz = c * z
            if cz > -1.0:
                t = cz * (3.0 + cz * (3.0 + cz))  # v - 1 for v = (1 + cz)**3
                z2 = z * z
                ok = u < 1.0 - 0.0331 * (z2 * z2)
                if not ok:
                    ok = ember.log(u) < 0.5 * z2 + d * (ember.log1p(t) - t)
                if ok:
                    x = d + d * t
                    if a < 1.0:
                        e = ember.log(extra) / a
        return x, e

    gamma_mt.__name__ = gamma_mt.__qualname__ = (
        f"rng_{ATTEMPT.__name__.replace('attempt', 'gamma')}"
    )
    return gamma_mt


gamma64 = _gamma(attempt64)
gamma32 = _gamma(attempt32)


def log_gamma64(k0, k1, c0, c1, s, a):
    """``log`` of a Gamma(a) variate (-inf for ``a = 0``): no underflow for tiny ``a``."""
    x, e = gamma64(k0, k1, c0, c1, s, a)
    return ember.log(x) + e


def s_gamma64(k0, k1, c0, c1, shape, scale, unused0, unused1):
    x, e = gamma64(k0, k1, c0, c1, 0, shape)
    return scale * (x * ember.exp(e))


def s_gamma32(k0, k1, c0, c1, shape, scale, unused0, unused1):
    x, e = gamma32(k0, k1, c0, c1, 0, shape)
    return scale * (x * ember.exp(e))


def s_gamma_pair(k0, k1, c0, c1, a, b, mode, shift):
    """Two gammas (stages 0 and 1), in logs: ``mode`` 0 beta, 1 the ratio
    ``exp(la - lb + shift)`` (F), 2 Student's t ``z exp((shift - lb) / 2)`` with ``z`` a
    normal of stage 0 and ``shift = log(df / 2)``."""
    lb = log_gamma64(k0, k1, c0, c1, 1, b)
    if mode == 2.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 0, 0)
        z, unused = ph.box_muller64(w0, w1, w2, w3)
        return z * ember.exp(0.5 * (shift - lb))
    la = log_gamma64(k0, k1, c0, c1, 0, a)
    if mode == 1.0:
        return ember.exp(la - lb + shift)
    d = la - lb
    if d < 0.0:  # exp(d) / (1 + exp(d)): values below 2**-1022 stay subnormal, not 0
        t = ember.exp(d)
        return t / (1.0 + t)
    return 1.0 / (1.0 + ember.exp(-d))


# --------------------------------------------------------------------- Poisson
def poisson_inversion(k0, k1, c0, c1, s, lam):
    """The smallest ``k`` with ``u < F(k)``; a uniform the rounded CDF never passes
    (below 1e-15 of the time) is replaced by the next sub-block's."""
    k = -1.0
    j = ember.uint32(0)
    while k < 0.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, s)
        j += 1
        u = ph.to_float64(w0, w1)
        p = ember.exp(-lam)
        cdf = p
        i = 0.0
        while u >= cdf and p > 0.0:
            i += 1.0
            p = p * lam / i
            cdf += p
        if u < cdf:
            k = i
    return k


def poisson_ptrs(k0, k1, c0, c1, s, lam):
    """Hörmann's PTRS: ``k = floor((2a / us + b) U + lam + 0.43)``, accepted in the box
    ``us >= 0.07, V <= v_r`` at once, else by the exact log-pmf test."""
    slam = ember.sqrt(lam)
    loglam = ember.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = ember.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    k = -1.0
    j = ember.uint32(0)
    while k < 0.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, s)
        j += 1
        u = ph.to_float64(w0, w1) - 0.5
        v = ph.to_float64(w2, w3)
        us = 0.5 - ember.fabs(u)
        kk = ember.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            k = kk
        elif kk >= 0.0 and (us >= 0.013 or v <= us):
            lhs = ember.log(v) + log_inv_alpha - ember.log(a / (us * us) + b)
            if lhs <= -lam + kk * loglam - ember.lgamma(kk + 1.0):
                k = kk
    return k


def poisson1(k0, k1, c0, c1, s, lam):
    if lam < POISSON_SMALL:
        return poisson_inversion(k0, k1, c0, c1, s, lam)
    return ember.fmin(poisson_ptrs(k0, k1, c0, c1, s, lam), INT64_CAP)


def s_poisson(k0, k1, c0, c1, lam, unused0, unused1, unused2):
    return poisson1(k0, k1, c0, c1, 0, lam)


def s_negative_binomial(k0, k1, c0, c1, n, odds, unused0, unused1):
    """Poisson(Gamma(n) (1 - p) / p): the gamma at stage 0, the Poisson at stage 1."""
    x, e = gamma64(k0, k1, c0, c1, 0, n)
    return poisson1(k0, k1, c0, c1, 1, ember.fmin(x * ember.exp(e) * odds, MAX_LAM))


# --------------------------------------------------------------------- binomial
def binomial_inversion(k0, k1, c0, c1, n, p):
    """Walk the pmf (``f(k+1) = f(k) ((n+1) r / (k+1) - r)``, ``r = p / (1-p)``) down
    one uniform; rounding that leaves it unspent restarts with the next sub-block."""
    r = p / (1.0 - p)
    nr = (n + 1.0) * r
    f0 = ember.exp(n * ember.log1p(-p))
    k = -1.0
    j = ember.uint32(0)
    while k < 0.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, 0)
        j += 1
        u = ph.to_float64(w0, w1)
        f = f0
        i = 0.0
        while u >= f and i < n and f > 0.0:
            u -= f
            i += 1.0
            f = f * (nr / i - r)
        if u < f:
            k = i
    return k


def stirling_tail(k):
    """``log k! - ((k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2)``: lgamma below 10,
    the Stirling series (to ``(k + 1)**-5``) above."""
    if k < 10.0:
        return ember.lgamma(k + 1.0) - (k + 0.5) * ember.log(k + 1.0) + (k + 1.0) - HALF_LOG_2PI
    r = 1.0 / (k + 1.0)
    r2 = r * r
    return (1.0 / 12.0 - (1.0 / 360.0 - r2 / 1260.0) * r2) * r


def btrd_accept(k, v, n, p, m, r, nr, npq):
    """BTRD's step 3: does ``v`` (already scaled to the hat) lie below ``f(k) / f(m)``?"""
    km = ember.fabs(k - m)
    if km <= 15.0:  # the ratio by recursion
        f = 1.0
        i = ember.fmin(k, m)
        while i < ember.fmax(k, m):
            i += 1.0
            if m < k:
                f = f * (nr / i - r)
            else:
                v = v * (nr / i - r)
        return v <= f
    v = ember.log(v)  # squeeze of the normal approximation, then the Stirling form
    rho = (km / npq) * (((km / 3.0 + 0.625) * km + 1.0 / 6.0) / npq + 0.5)
    t = -km * km / (2.0 * npq)
    if v < t - rho:
        return True
    if v > t + rho:
        return False
    nm = n - m + 1.0
    h = (m + 0.5) * ember.log((m + 1.0) / (r * nm)) + stirling_tail(m) + stirling_tail(n - m)
    nk = n - k + 1.0
    bound = h + (n + 1.0) * ember.log(nm / nk) + (k + 0.5) * ember.log(nk * r / (k + 1.0))
    return v <= bound - stirling_tail(k) - stirling_tail(n - k)


def binomial_btrd(k0, k1, c0, c1, n, p):
    """Hörmann's BTRD for ``n p >= 10``, ``p <= 1/2``: one sub-block (two uniforms) per
    attempt."""
    m = ember.floor((n + 1.0) * p)
    r = p / (1.0 - p)
    nr = (n + 1.0) * r
    npq = n * p * (1.0 - p)
    sq = ember.sqrt(npq)
    b = 1.15 + 2.53 * sq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    alpha = (2.83 + 5.1 / b) * sq
    vr = 0.92 - 4.2 / b
    k = -1.0
    j = ember.uint32(0)
    while k < 0.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, 0)
        j += 1
        v = ph.to_float64(w0, w1)
        w = ph.to_float64(w2, w3)
        if v <= 0.86 * vr:  # the box: accepted without a test
            u = v / vr - 0.43
            k = ember.floor((2.0 * a / (0.5 - ember.fabs(u)) + b) * u + c)
        else:
            u = w - 0.5
            if v < vr:  # the side strips: u from v, v afresh
                u = v / vr - 0.93
                u = ember.copysign(0.5, u) - u
                v = w * vr
            us = 0.5 - ember.fabs(u)
            kk = ember.floor((2.0 * a / us + b) * u + c)
            if kk >= 0.0 and kk <= n:
                if btrd_accept(kk, v * alpha / (a / (us * us) + b), n, p, m, r, nr, npq):
                    k = kk
    return k


def s_binomial(k0, k1, c0, c1, n, p, unused0, unused1):
    """``n`` an int64, ``0 <= p <= 1``."""
    q = ember.fmin(p, 1.0 - p)
    nf = ember.float64(n)
    x = 0.0
    if n > 0 and q > 0.0:
        if nf * q < BINOMIAL_SMALL:
            x = binomial_inversion(k0, k1, c0, c1, nf, q)
        else:
            x = binomial_btrd(k0, k1, c0, c1, nf, q)
    if p > 0.5:
        return n - ember.int64(x)
    return ember.int64(x)


def s_triangular(k0, k1, c0, c1, left, mode, right, unused):
    w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 0, 0)
    u = open64(w0, w1)
    base = right - left
    if u <= (mode - left) / base:
        return left + ember.sqrt(u * base * (mode - left))
    return right - ember.sqrt((1.0 - u) * base * (right - mode))


# --------------------------------------------------------------------- kernels
def _each(SAMPLE):
    def each(out, n, k0, k1, base_lo, base_hi, p0, p1, p2, p3):
        i = ember.global_id()
        while i < n:
            c0, c1, unused0, unused1 = ph.block_counter(base_lo, base_hi, i)
            out[i] = out.dtype(SAMPLE(k0, k1, c0, c1, p0, p1, p2, p3))
            i += ember.global_size()

    return each


_EACH = {
    "gamma64": s_gamma64, "gamma32": s_gamma32, "gamma_pair": s_gamma_pair,
    "poisson": s_poisson, "negative_binomial": s_negative_binomial,
    "binomial": s_binomial, "triangular": s_triangular,
}  # fmt: skip


@functools.cache
def each_kernel(name: str, sample=None) -> Kernel:
    """The kernel of a draw with one sub-stream per value (one value per thread step);
    ``sample``: a sampler defined elsewhere (default ``_EACH[name]``)."""
    k = _each(sample or _EACH[name])
    k.__name__ = k.__qualname__ = f"rng_each_{name}"
    return Kernel(k)


def _each_arrays(SAMPLE):
    """:func:`_each` with each parameter an array: ``p[i * ps]`` for value ``i`` (a step
    of 0 for a parameter that is one number)."""

    def each(out, n, k0, k1, base_lo, base_hi, p0, s0, p1, s1, p2, s2, p3, s3):
        i = ember.global_id()
        while i < n:
            c0, c1, unused0, unused1 = ph.block_counter(base_lo, base_hi, i)
            v = SAMPLE(k0, k1, c0, c1, p0[i * s0], p1[i * s1], p2[i * s2], p3[i * s3])
            out[i] = out.dtype(v)
            i += ember.global_size()

    return each


@functools.cache
def each_arrays_kernel(name: str, sample=None) -> Kernel:
    """:func:`each_kernel` of a draw whose parameters are arrays (value ``i`` owns the same
    sub-stream as with scalar parameters: equal parameters, equal numbers); ``sample``: a
    sampler of :func:`_each`'s signature defined elsewhere (default ``_EACH[name]``)."""
    k = _each_arrays(sample or _EACH[name])
    k.__name__ = k.__qualname__ = f"rng_each_arrays_{name}"
    return Kernel(k)


def _dirichlet(out, rows, k, alpha, k0, k1, base_lo, base_hi):
    """Row ``r``: log-gammas of values ``r k + j``, then their softmax (in place)."""
    r = ember.global_id()
    while r < rows:
        top = -math.inf
        for j in range(k):
            i = r * k + j
            c0, c1, unused0, unused1 = ph.block_counter(base_lo, base_hi, i)
            g = log_gamma64(k0, k1, c0, c1, 0, alpha[j])
            out[i] = g
            top = ember.fmax(top, g)
        total = 0.0
        for j in range(k):
            v = ember.exp(out[r * k + j] - top)
            out[r * k + j] = v
            total += v
        for j in range(k):
            out[r * k + j] = out[r * k + j] / total
        r += ember.global_size()


_dirichlet.__name__ = _dirichlet.__qualname__ = "rng_dirichlet"
dirichlet_kernel = Kernel(_dirichlet)
