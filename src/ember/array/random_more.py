"""The rest of NumPy's ``Generator`` distributions, as device functions and kernels: the
hypergeometric, logarithmic series, von Mises, Wald, Zipf and noncentral chi-square and F
draws, and the rows of ``multinomial`` and ``multivariate_hypergeometric`` (the host side,
checks and launches, is :mod:`ember.array.random_more_draws`).

Every draw here has one sub-stream per value, as :mod:`ember.array.random_dists`' rejection
samplers (its docstring has the layout): value ``i`` owns block ``b = c + i`` and every
counter ``(b mod 2**32, b >> 32, j, s)``, ``j`` the value's attempt (sub-block), ``s`` the
stage of a composition.  A row of ``k`` (multinomial, multivariate hypergeometric) uses the
blocks of values ``r k + j``, one per category, as ``dirichlet`` does.

Samplers (exact up to float64 rounding):

* ``hypergeometric``: ``m = min(nsample, total - nsample)`` draws of the rarer colour; below
  10 draws the urn itself (draw ``t`` takes sub-block ``t``), else Stadlober's ratio of
  uniforms "HRUA" ("The ratio of uniforms approach for generating discrete random
  variates", J. Comput. Appl. Math. 1990), one sub-block per attempt.
* ``logseries``: Kemp's "LK" ("Efficient generation of logarithmically distributed
  pseudo-random variables", Appl. Stat. 1981), one sub-block per attempt.
* ``vonmises``: Best & Fisher ("Efficient simulation of the von Mises distribution", Appl.
  Stat. 1979), attempts at stage 0, the sign at stage 1; ``kappa < 1e-8`` uniform on
  ``[-pi, pi)``, ``kappa > 1e6`` the wrapped normal (as NumPy).
* ``wald``: Michael, Schucany & Haas (Am. Stat. 1976): a normal (sub-block 0) and a uniform
  (sub-block 1); the root is taken in the form without cancellation.
* ``zipf``: Devroye's rejection ("Non-Uniform Random Variate Generation", 1986, X.6),
  truncated below 2**63 as NumPy's; ``a >= 1025`` gives 1.
* ``noncentral_chisquare``: ``chisquare(df - 1) + (z + sqrt(nonc))**2`` for ``df > 1``, else
  ``chisquare(df + 2 poisson(nonc / 2))`` (stages 0 the gamma, 1 the Poisson, 2 the normal);
  ``noncentral_f`` divides by a chi-square at stage 3.
* ``multinomial``: sequential binomials of the remaining count, ``p_j / (1 - sum p_<j)``;
  ``multivariate_hypergeometric``: sequential hypergeometrics ("marginals").
"""

from __future__ import annotations

import functools
import math

import ember
from ember.array import philox as ph
from ember.array.random_dists import (
    INT64_CAP,
    MAX_LAM,
    gamma64,
    open64,
    poisson1,
    s_binomial,
    sub_block,
)
from ember.compiler.kernel import Kernel

HYP_SMALL = 10.0  # draws: the urn below, HRUA from here
HRUA_D1 = 1.7155277699214135  # 2 sqrt(2 / e)
HRUA_D2 = 0.8989161620588988  # 3 - 2 sqrt(3 / e)
LN2 = 0.6931471805599453


# --------------------------------------------------------------------- hypergeometric
def logfact(x):
    return ember.lgamma(x + 1.0)


def hyp_urn(k0, k1, c0, c1, s, marked, total, m):
    """Marked items among ``m`` drawn one by one without replacement (``m < 10``)."""
    k = 0.0
    left = marked
    t = 0.0
    j = ember.uint32(0)
    while t < m:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, s)
        j += 1
        if ph.to_float64(w0, w1) * (total - t) < left:
            k += 1.0
            left -= 1.0
        t += 1.0
    return k


def hyp_hrua(k0, k1, c0, c1, s, marked, total, m):
    """Stadlober's HRUA: marked items among ``m >= 10`` drawn from ``total``."""
    other = total - marked
    p = marked / total
    a = m * p + 0.5
    var = (total - m) * m * p * (other / total) / (total - 1.0)
    c = ember.sqrt(var + 0.5)
    h = HRUA_D1 * c + HRUA_D2
    mode = ember.floor((m + 1.0) * (marked + 1.0) / (total + 2.0))
    g = logfact(mode) + logfact(marked - mode) + logfact(m - mode) + logfact(other - m + mode)
    b = ember.fmin(ember.fmin(m, marked) + 1.0, ember.floor(a + 16.0 * c))
    k = -1.0
    j = ember.uint32(0)
    while k < 0.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, s)
        j += 1
        u = open64(w0, w1)
        x = a + h * (ph.to_float64(w2, w3) - 0.5) / u
        if x >= 0.0 and x < b:
            kk = ember.floor(x)
            t = g - (logfact(kk) + logfact(marked - kk) + logfact(m - kk)
                     + logfact(other - m + kk))  # fmt: skip
            if u * (4.0 - u) - 3.0 <= t:  # the squeeze
                k = kk
            elif u * (u - t) < 1.0 and 2.0 * ember.log(u) <= t:
                k = kk
    return k


def hypergeometric1(k0, k1, c0, c1, s, good, bad, nsample):
    """Good items in a sample of ``nsample`` from ``good + bad`` (float64 counts)."""
    total = good + bad
    m = ember.fmin(nsample, total - nsample)
    marked = ember.fmin(good, bad)
    k = 0.0
    if m > 0.0 and marked > 0.0:
        if m < HYP_SMALL:
            k = hyp_urn(k0, k1, c0, c1, s, marked, total, m)
        else:
            k = hyp_hrua(k0, k1, c0, c1, s, marked, total, m)
    if good > bad:
        k = m - k
    if m < nsample:  # the complement was drawn
        k = good - k
    return k


def s_hypergeometric(k0, k1, c0, c1, good, bad, nsample, unused):
    return hypergeometric1(k0, k1, c0, c1, 0, good, bad, nsample)


# --------------------------------------------------------------------- logseries, zipf
def s_logseries(k0, k1, c0, c1, p, r, unused0, unused1):
    """Kemp's LK; ``r = log1p(-p)``."""
    k = -1.0
    j = ember.uint32(0)
    while k < 0.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, 0)
        j += 1
        v = ph.to_float64(w0, w1)
        if v >= p:
            k = 1.0
        else:
            q = -ember.expm1(r * ph.to_float64(w2, w3))
            if v <= q * q:
                x = ember.floor(1.0 + ember.log(v) / ember.log(q))
                if x >= 1.0 and v > 0.0:
                    k = ember.fmin(x, INT64_CAP)
            elif v >= q:
                k = 1.0
            else:
                k = 2.0
    return k


def s_zipf(k0, k1, c0, c1, a, unused0, unused1, unused2):
    """Devroye's rejection from ``floor(U**(-1 / (a - 1)))``, ``U`` in ``(Umin, 1]``
    (``Umin``: the ``U`` below which ``X`` passes 2**63); ``T - 1`` and ``b - 1`` by
    ``expm1``, exact for ``a`` near 1."""
    am1 = a - 1.0
    k = -1.0
    if a >= 1025.0:  # b overflows; P(X > 1) < 3e-309
        k = 1.0
    umin = ember.pow(INT64_CAP, -am1)
    bm1 = ember.expm1(am1 * LN2)
    j = ember.uint32(0)
    while k < 0.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, 0)
        j += 1
        u01 = ph.to_float64(w0, w1)
        x = ember.floor(ember.pow(u01 * umin + (1.0 - u01), -1.0 / am1))
        if x >= 1.0 and x <= INT64_CAP:
            tm1 = ember.expm1(am1 * ember.log1p(1.0 / x))
            if ph.to_float64(w2, w3) * x * tm1 / bm1 <= (1.0 + tm1) / (1.0 + bm1):
                k = x
    return k


# --------------------------------------------------------------------- vonmises, wald
def wrap_pi(x):
    """``x`` folded into ``[-pi, pi]`` (NumPy's fold, by the sign of ``x``)."""
    y = ember.fmod(ember.fabs(x) + math.pi, 2.0 * math.pi) - math.pi
    if x < 0.0:
        y = -y
    return y


def s_vonmises(k0, k1, c0, c1, mu, kappa, unused0, unused1):
    if ember.isnan(kappa):
        return kappa
    if kappa < 1e-8:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 0, 0)
        return math.pi * (2.0 * ph.to_float64(w0, w1) - 1.0)
    if kappa > 1e6:  # the wrapped normal
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 0, 0)
        z, unused = ph.box_muller64(w0, w1, w2, w3)
        x = mu + ember.sqrt(1.0 / kappa) * z
        if x < -math.pi:
            x += 2.0 * math.pi
        if x > math.pi:
            x -= 2.0 * math.pi
        return x
    s = 1.0 / kappa + kappa  # kappa < 1e-5: rho's second-order expansion
    if kappa >= 1e-5:
        r = 1.0 + ember.sqrt(1.0 + 4.0 * kappa * kappa)
        rho = (r - ember.sqrt(2.0 * r)) / (2.0 * kappa)
        s = (1.0 + rho * rho) / (2.0 * rho)
    w = 0.0
    done = False
    j = ember.uint32(0)
    while not done:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, j, 0)
        j += 1
        z = ember.cos(math.pi * ph.to_float64(w0, w1))
        w = (1.0 + s * z) / (s + z)
        y = kappa * (s - w)
        v = ph.to_float64(w2, w3)  # v = 0: y >= 0 accepts, y < 0 rejects
        done = y * (2.0 - y) - v >= 0.0
        if not done:
            done = ember.log(y / v) + 1.0 - y >= 0.0
    w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 0, 1)
    x = ember.acos(ember.fmin(ember.fmax(w, -1.0), 1.0))
    if ph.to_float64(w0, w1) < 0.5:
        x = -x
    return wrap_pi(x + mu)


def s_wald(k0, k1, c0, c1, mean, scale, unused0, unused1):
    """``y = mean z**2``, ``x = mean + mean / (2 scale) (y - sqrt(4 scale y + y**2))``,
    written ``mean t / (1 + sqrt(1 + t))**2`` with ``t = 4 scale / y``: positive, no
    cancellation; then ``x`` or ``mean**2 / x``."""
    w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 0, 0)
    z, unused = ph.box_muller64(w0, w1, w2, w3)
    y = mean * z * z
    x = mean
    t = 4.0 * scale / y
    if t < math.inf:
        d = 1.0 + ember.sqrt(1.0 + t)
        x = mean * (t / (d * d))
    w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 1, 0)
    if ph.to_float64(w0, w1) <= mean / (mean + x):
        return x
    return mean * (mean / x)


# --------------------------------------------------------------------- noncentral
def chisq(k0, k1, c0, c1, s, df):
    x, e = gamma64(k0, k1, c0, c1, s, 0.5 * df)
    return 2.0 * x * ember.exp(e)


def noncentral_chisq(k0, k1, c0, c1, df, nonc):
    if ember.isnan(nonc):
        return nonc
    if nonc == 0.0:
        return chisq(k0, k1, c0, c1, 0, df)
    if df > 1.0:
        w0, w1, w2, w3 = sub_block(k0, k1, c0, c1, 0, 2)
        z, unused = ph.box_muller64(w0, w1, w2, w3)
        n = z + ember.sqrt(nonc)
        return chisq(k0, k1, c0, c1, 0, df - 1.0) + n * n
    i = poisson1(k0, k1, c0, c1, 1, ember.fmin(0.5 * nonc, MAX_LAM))
    return chisq(k0, k1, c0, c1, 0, df + 2.0 * i)


def s_noncentral_chisquare(k0, k1, c0, c1, df, nonc, unused0, unused1):
    return noncentral_chisq(k0, k1, c0, c1, df, nonc)


def s_noncentral_f(k0, k1, c0, c1, dfnum, dfden, nonc, unused):
    """``(X / dfnum) / (Y / dfden)``, ``X`` noncentral (stages 0-2), ``Y`` at stage 3 (in
    logs: a tiny ``dfden`` underflows no gamma)."""
    x = noncentral_chisq(k0, k1, c0, c1, dfnum, nonc)
    g, e = gamma64(k0, k1, c0, c1, 3, 0.5 * dfden)
    return x / (2.0 * g) * ember.exp(-e) * (dfden / dfnum)


SAMPLERS = {
    "hypergeometric": s_hypergeometric, "logseries": s_logseries, "zipf": s_zipf,
    "vonmises": s_vonmises, "wald": s_wald, "noncentral_chisquare": s_noncentral_chisquare,
    "noncentral_f": s_noncentral_f,
}  # fmt: skip


# --------------------------------------------------------------------- rows
def _multinomial(out, rows, k, n, ns, pvals, ps, k0, k1, base_lo, base_hi):
    """Row ``r``: category ``j < k - 1`` is a binomial of what is left with probability
    ``p_j / (1 - sum p_<j)`` (block of value ``r k + j``); the last takes the rest."""
    r = ember.global_id()
    while r < rows:
        left = n[r * ns]
        rest = 1.0
        for j in range(k - 1):
            pj = pvals[r * ps + j]
            q = 1.0
            if pj < rest:
                q = pj / rest
            if pj <= 0.0:
                q = 0.0
            x = ember.int64(0)
            if left > 0:
                c0, c1, unused0, unused1 = ph.block_counter(base_lo, base_hi, r * k + j)
                x = s_binomial(k0, k1, c0, c1, left, q, 0.0, 0.0)
            out[r * k + j] = x
            left -= x
            rest -= pj
        out[r * k + k - 1] = left
        r += ember.global_size()


def _mvhypergeometric(out, rows, k, colors, total, nsample, k0, k1, base_lo, base_hi):
    """Row ``r``: colour ``j < k - 1`` is a hypergeometric draw of what is left of the
    sample from colour ``j`` and the colours after it (block of value ``r k + j``)."""
    r = ember.global_id()
    while r < rows:
        left = nsample
        rest = total
        for j in range(k - 1):
            cj = ember.float64(colors[j])
            rest -= cj
            x = 0.0
            if left > 0.0:
                c0, c1, unused0, unused1 = ph.block_counter(base_lo, base_hi, r * k + j)
                x = hypergeometric1(k0, k1, c0, c1, 0, cj, rest, left)
            out[r * k + j] = ember.int64(x)
            left -= x
        out[r * k + k - 1] = ember.int64(left)
        r += ember.global_size()


@functools.cache
def row_kernel(name: str) -> Kernel:
    """The kernel of ``multinomial`` or ``multivariate_hypergeometric`` rows."""
    fn = {"multinomial": _multinomial, "multivariate_hypergeometric": _mvhypergeometric}[name]
    fn.__name__ = fn.__qualname__ = f"rng_{name}"
    return Kernel(fn)
