"""Philox4x32-10 and the conversions of its words to numbers: device functions that user
kernels and Ember's random kernels share, so both draw from one documented stream.

Philox4x32-R (Salmon, Moraes, Dror & Shaw, "Parallel random numbers: as easy as 1, 2, 3",
SC11, 2011) is a keyed bijection of a 128-bit counter (four 32-bit words) under a 64-bit
key (two words): R rounds of two 32x32->64 multiplications whose high and low halves are
mixed with the other words and the key (the "round" below); the key is bumped by the
Weyl constants between rounds.  Ten rounds pass BigCrush.  It needs no state: the output
for counter ``c`` is a pure function of ``(key, c)``, so every thread of any launch shape
computes exactly the words it needs, and every backend gives the same bits.

Inside a kernel::

    w0, w1, w2, w3 = ember.random.philox((k0, k1), (c0, c1, c2, c3))   # 4 x uint32
    u0, u1, u2, u3 = ember.random.uniform4((k0, k1), (c0, c1, c2, c3))  # float32 [0, 1)
    z0, z1, z2, z3 = ember.random.normal4((k0, k1), (c0, c1, c2, c3))   # float32 N(0, 1)
    a, b = ember.random.uniform2_f64(...), ember.random.normal2_f64(...)  # float64

The conversions (and which words make which value) are exactly those of
:class:`ember.random.Generator`; see :mod:`ember.array.random` for the stream layout.

* uniform float32: the top 24 bits of a word times 2**-24 (every value a multiple of
  2**-24 in [0, 1));
* uniform float64: the top 27 bits of one word and the top 26 of the next make 53 bits,
  times 2**-53 (NumPy's ``random_standard_uniform`` method);
* normal: Box-Muller, ``sqrt(-2 log u1) * (cos 2 pi u2, sin 2 pi u2)`` with ``u1`` in
  (0, 1] (so the logarithm is finite) and ``u2`` in [0, 1); one pair of uniforms gives two
  normals.  In float32 the sine and cosine are polynomials after an exact quarter-turn
  reduction (:func:`sincos_turn32`), and ``sqrt(t)`` is ``t * rsqrt(t)``.  The result is
  bit-identical on every backend up to the device's ``log`` and ``rsqrt`` (and ``sqrt``,
  ``sin``/``cos`` in float64): a few ulp between math libraries.
"""

from __future__ import annotations

import ember

# Salmon et al. 2011, table 2 (Philox4x32): multipliers and the Weyl key increments
# (the golden ratio and sqrt(3) - 1 in 32-bit fixed point).
M0 = 0xD2511F53
M1 = 0xCD9E8D57
W0 = 0x9E3779B9
W1 = 0xBB67AE85
ROUNDS = 10
TWO_PI = 6.283185307179586
F32_UNIT = 1.0 / 16777216.0  # 2**-24
F64_UNIT = 1.0 / 9007199254740992.0  # 2**-53
# Taylor coefficients of sin and cos, as float32 (sincos_turn32)
S3, S5, S7, S9 = (ember.float32(v) for v in (-1 / 6, 1 / 120, -1 / 5040, 1 / 362880))
C2, C4, C6, C8, C10 = (
    ember.float32(v) for v in (-1 / 2, 1 / 24, -1 / 720, 1 / 40320, -1 / 3628800)
)


def mulhilo(m, x):
    """The high and low 32-bit halves of the 64-bit product ``m * x``: the devices' own
    high-half multiply (CUDA ``mul.hi.u32``, OpenCL ``mul_hi``) and a 32-bit product.  (A
    widened 64-bit product cost a wide multiply, a shift and a conversion in PTX.)"""
    a = ember.uint32(m)
    return ember.umulhi(a, x), a * x


def philox(key, counter):
    """Philox4x32-10 of a 4-word ``counter`` under a 2-word ``key``: four ``uint32``."""
    c0 = ember.uint32(counter[0])
    c1 = ember.uint32(counter[1])
    c2 = ember.uint32(counter[2])
    c3 = ember.uint32(counter[3])
    k0 = ember.uint32(key[0])
    k1 = ember.uint32(key[1])
    for r in range(ROUNDS):
        if r > 0:  # bump the key before every round but the first (Random123's order)
            k0 = k0 + ember.uint32(W0)  # uint32 arithmetic wraps
            k1 = k1 + ember.uint32(W1)
        h0, l0 = mulhilo(M0, c0)
        h1, l1 = mulhilo(M1, c2)
        c0, c1, c2, c3 = h1 ^ c1 ^ k0, l1, h0 ^ c3 ^ k1, l0
    return c0, c1, c2, c3


def to_float32(w):
    """A ``uint32`` word as a float32 in [0, 1): its top 24 bits times 2**-24."""
    return ember.float32(w >> 8) * ember.float32(F32_UNIT)


def to_float64(a, b):
    """Two words as a float64 in [0, 1): 27 bits of ``a`` and 26 of ``b``, times 2**-53."""
    hi = ember.float64(a >> 5)
    lo = ember.float64(b >> 6)
    return (hi * 67108864.0 + lo) * F64_UNIT


def sincos_turn32(u):
    """``(sin 2 pi u, cos 2 pi u)`` in float32 for ``u`` in [0, 1) that is a multiple of
    2**-24 (what :func:`to_float32` gives).

    ``u = q / 4 + f`` with ``q`` the nearest quarter turn and ``|f| <= 1/8``, both exact, so
    the angle ``2 pi f`` lies in [-pi/4, pi/4] with no argument reduction error; Taylor
    polynomials there (the first omitted terms are below 2**-28 relative) and a swap and
    sign change by ``q`` give both values within a few ulp.  Cheaper than the math
    library's ``sin`` and ``cos`` (no general reduction, no branches) and the same
    arithmetic on every backend."""
    q = ember.int32(u * ember.float32(4.0) + ember.float32(0.5))
    x = (u - ember.float32(q) * ember.float32(0.25)) * ember.float32(TWO_PI)
    x2 = x * x
    # fma written out: compilers would contract a polynomial differently in each kernel
    s = ember.fma(x * x2, ember.fma(x2, ember.fma(x2, ember.fma(x2, S9, S7), S5), S3), x)
    c = ember.fma(x2, ember.fma(x2, ember.fma(x2, C10, C8), C6), C4)
    c = ember.fma(x2, ember.fma(x2, c, C2), ember.float32(1.0))
    if q & 1:  # a quarter turn more: (sin, cos) -> (cos, -sin)
        t = s
        s = c
        c = -t
    if q & 2:  # half a turn more: both change sign
        s = -s
        c = -c
    return s, c


def box_muller32(a, b):
    """Two standard normal float32 from two words (Box-Muller)."""
    u1 = ember.float32(1.0) - to_float32(a)  # (0, 1]: log(u1) is finite
    t = ember.float32(-2.0) * ember.log(u1)
    # sqrt(t) as t / sqrt(t): the reciprocal square root is one instruction on GPUs, the
    # rounded sqrt a dozen (H100: 1.77 -> 1.93 TB/s of normals); u1 = 1 gives t = 0, kept
    # finite by the floor (every other t is > 1e-7)
    r = t * ember.rsqrt(ember.fmax(t, ember.float32(1e-30)))
    s, c = sincos_turn32(to_float32(b))
    return r * c, r * s


def box_muller64(w0, w1, w2, w3):
    """Two standard normal float64 from four words (Box-Muller on two 53-bit uniforms)."""
    u1 = 1.0 - to_float64(w0, w1)
    u2 = to_float64(w2, w3)
    r = ember.sqrt(-2.0 * ember.log(u1))
    t = TWO_PI * u2
    return r * ember.cos(t), r * ember.sin(t)


def uniform4(key, counter):
    """Four float32 uniform in [0, 1) from one Philox block (word ``j`` gives value ``j``)."""
    w0, w1, w2, w3 = philox(key, counter)
    return to_float32(w0), to_float32(w1), to_float32(w2), to_float32(w3)


def normal4(key, counter):
    """Four float32 standard normals from one Philox block (words 0, 1 give values 0, 1;
    words 2, 3 give values 2, 3)."""
    w0, w1, w2, w3 = philox(key, counter)
    z0, z1 = box_muller32(w0, w1)
    z2, z3 = box_muller32(w2, w3)
    return z0, z1, z2, z3


def uniform2_f64(key, counter):
    """Two float64 uniform in [0, 1) from one Philox block (words 0, 1 and 2, 3)."""
    w0, w1, w2, w3 = philox(key, counter)
    return to_float64(w0, w1), to_float64(w2, w3)


def normal2_f64(key, counter):
    """Two float64 standard normals from one Philox block."""
    w0, w1, w2, w3 = philox(key, counter)
    return box_muller64(w0, w1, w2, w3)


def block_counter(base_lo, base_hi, b):
    """The counter of block ``b`` of a draw starting at the 64-bit block ``base``: the
    block number is added to words 0-1 (with carry); words 2-3 stay 0."""
    lo = ember.uint64(base_lo) + ember.uint64(b & 0xFFFFFFFF)
    hi = ember.uint64(base_hi) + ember.uint64(b >> 32) + (lo >> 32)
    return ember.uint32(lo & 0xFFFFFFFF), ember.uint32(hi & 0xFFFFFFFF), 0, 0


def _c_names() -> None:
    """OpenCL C has no ``philox`` built-in, but the short names could collide with user
    device functions of the same name in one program: prefix them."""
    for fn in (mulhilo, philox, to_float32, to_float64, sincos_turn32, box_muller32, box_muller64,
               uniform4, normal4, uniform2_f64, normal2_f64, block_counter):  # fmt: skip
        fn.__name__ = "rng_" + fn.__name__


_c_names()
