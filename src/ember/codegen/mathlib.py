"""Math and bit functions some dialects lack, written once in portable C.

CUDA's math library has ``erfinvf``/``erfcinvf``, ``__brev``, ``__ffs``...; OpenCL C has
none of those.  A dialect lists the names it lacks (:attr:`~.Dialect.missing_math`) and the
emitter calls the helpers below instead, so a kernel reads the same on every device.

* ``erfinv``/``erfcinv``: Giles' single-precision approximation ("Approximating the erfinv
  function", GPU Computing Gems, 2011) as the first guess, then Newton steps (one for
  float32, two for float64) whose residual is computed with ``erf`` or ``erfc``, whichever
  has no cancellation there: within a few ulps of the true value, as CUDA's.  ``erfcinv``
  works from ``y`` directly for small ``y`` (no ``1 - y`` rounding).
* ``brev``: the classic five swap-and-mask steps (six for 64 bits).
* ``ffs``: ``bits - clz(x & -x)``, 0 for 0.
"""

from __future__ import annotations

from ember import dtypes
from ember.dtypes import DType

# Giles' polynomials: central region (w < 5) in w - 2.5, tails in sqrt(w) - 3.
_CENTRAL = (
    2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941,
)  # fmt: skip
_TAIL = (
    -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682,
)  # fmt: skip


def _horner(coefs: tuple[float, ...], var: str, lit) -> str:
    text = lit(coefs[0])
    for c in coefs[1:]:
        text = f"({text}) * {var} + {lit(c)}"
    return text


def erfinv(h, name: str, dt: DType, complement: bool) -> str:
    """``em_erfinv_<t>(x)`` or ``em_erfcinv_<t>(y)`` for float32/float64 ``dt``."""
    t = h.c(dt)
    wide = dt.name == "float64"
    suffix = "" if wide else h.d.suffix["float32"]

    def lit(v: float) -> str:
        return f"{v!r}{suffix}"

    def fn(f: str) -> str:
        return h.math(f, dt)

    two_over_sqrt_pi = lit(1.1283791670955126)
    if complement:
        head = (
            f"    // erfcinv(y) = erfinv(1 - y), with w from y itself (exact for small y)\n"
            f"    if (y <= {lit(0.0)}) return y == {lit(0.0)} ? {h.d.inf[_key(dt)]} : "
            f"{h.d.nan[_key(dt)]};\n"
            f"    if (y >= {lit(2.0)}) return y == {lit(2.0)} ? -{h.d.inf[_key(dt)]} : "
            f"{h.d.nan[_key(dt)]};\n"
            f"    {t} x = {lit(1.0)} - y;\n"
            f"    {t} w = -{fn('log')}(y * ({lit(2.0)} - y));\n"
        )
        # the residual erfc(r) - y, written without cancellation on either side of 1/2
        newton = (
            f"        {t} e = y > {lit(0.5)} ? (x - {fn('erf')}(r)) : ({fn('erfc')}(r) - y);\n"
            f"        r += e / ({two_over_sqrt_pi} * {fn('exp')}(-r * r));\n"
        )
        param = f"{t} y"
    else:
        head = (
            f"    if (x <= {lit(-1.0)} || x >= {lit(1.0)}) {{\n"
            f"        if (x == {lit(1.0)}) return {h.d.inf[_key(dt)]};\n"
            f"        if (x == {lit(-1.0)}) return -{h.d.inf[_key(dt)]};\n"
            f"        return {h.d.nan[_key(dt)]};\n"
            "    }\n"
            f"    {t} w = -{fn('log')}(({lit(1.0)} - x) * ({lit(1.0)} + x));\n"
        )
        # the residual erf(r) - x; near +-1 as (1 - |x|) - erfc(|r|), exact to the last bit
        a = fn("fabs")
        newton = (
            f"        {t} e = {fn('erf')}(r) - x;\n"
            f"        if ({a}(x) > {lit(0.5)}) {{\n"
            f"            e = ({lit(1.0)} - {a}(x)) - {fn('erfc')}({a}(r));\n"
            f"            if (x < {lit(0.0)}) e = -e;\n"
            "        }\n"
            f"        r -= e / ({two_over_sqrt_pi} * {fn('exp')}(-r * r));\n"
        )
        param = f"{t} x"
    body = (
        f"    // Giles' approximation, then Newton steps (codegen/mathlib.py)\n{head}"
        f"    {t} p;\n"
        f"    if (w < {lit(5.0)}) {{\n"
        f"        w = w - {lit(2.5)};\n"
        f"        p = {_horner(_CENTRAL, 'w', lit)};\n"
        "    } else {\n"
        f"        w = {fn('sqrt')}(w) - {lit(3.0)};\n"
        f"        p = {_horner(_TAIL, 'w', lit)};\n"
        "    }\n"
        f"    {t} r = p * x;\n"
        f"    for (int k = 0; k < {2 if wide else 1}; k++) {{\n"
        f"        if (r != r || {fn('fabs')}(r) > {lit(1e300 if wide else 1e30)}) break;\n"
        f"{newton}"
        "    }\n"
        "    return r;"
    )
    return h.fn(t, name, param, body)


def _key(dt: DType) -> str:
    return "float64" if dt.name == "float64" else "float32"


def brev(h, name: str, dt: DType) -> str:
    """``em_brev_u32/u64(x)``: the bits of ``x`` reversed."""
    u = h.d.unsigned[dt.itemsize]
    sfx = "u" if dt.itemsize == 4 else h.d.suffix["uint64"]
    steps = [
        (1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
        (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF),
    ]  # fmt: skip
    bits = dt.itemsize * 8
    lines = ["    // swap ever larger groups of bits"]
    for shift, mask in steps:
        if shift >= bits:
            break
        m = mask & ((1 << bits) - 1)
        lines.append(f"    x = ((x >> {shift}) & 0x{m:X}{sfx}) | ((x & 0x{m:X}{sfx}) << {shift});")
    lines.append("    return x;")
    return h.fn(u, name, f"{u} x", "\n".join(lines))


def ffs(h, name: str, dt: DType, clz: str) -> str:
    """``em_ffs_u32/u64(x)``: the position (from 1) of the lowest set bit, 0 for 0."""
    u = h.d.unsigned[dt.itemsize]
    i32 = h.c(dtypes.int32)
    bits = dt.itemsize * 8
    body = f"    return x == 0 ? 0 : {bits} - ({i32}){clz}(x & (~x + 1));  // isolate the bit"
    return h.fn(i32, name, f"{u} x", body)
