"""Complex numbers in generated C: the value type and its helper functions, for every dialect.

A ``complex64``/``complex128`` value is a pair of floats, real part first (C99's and NumPy's
layout, so arrays are shared with NumPy, DLPack and cuBLAS as they are).  Its C type
``em_c64``/``em_c128`` is declared by the dialect (:attr:`.Dialect.complex_struct`: a plain
struct by default, 8/16-byte aligned on CUDA, ``float2``/``double2`` on OpenCL) and read
through the dialect's field names; everything else is written once here, in C that every
dialect compiles: helpers ``em_c64_<op>`` taking and returning values, built from the
dialect's real math functions (:meth:`.Helpers.math`).

Semantics (tested against NumPy, ``tests/backend/test_kernels_complex.py``):

* ``*`` is the textbook formula (NumPy's, CUDA's ``cuCmul``); C99 Annex G differs only where
  it gives NaN+NaN·i from an infinite operand, which Annex G turns into an infinity.
* ``/`` is Smith's algorithm (1962): the divisor's larger part is divided out first, so no
  intermediate overflows or underflows where the quotient does not; a zero divisor gives
  each part divided by zero (inf or NaN), as NumPy does.
* ``exp``, ``log``, ``sqrt``, ``sinh``, ``cosh``, ``tanh`` (and ``sin``, ``cos``, ``tan``
  through them) follow C99 Annex G for infinities, NaN and signed zeros where NumPy (which
  calls the C library) does; ``sqrt`` scales to avoid overflow, ``log`` uses ``log1p`` near
  the unit circle, ``tanh`` is Kahan's formula (no overflow for large real parts).
* The inverse functions are Kahan's formulas ("Branch cuts for complex elementary
  functions", 1987), on NumPy's branch cuts, with C99 Annex G's special values for infinite
  and NaN parts (as NumPy: ``acos(inf + inf i) == pi/4 - inf i``; ``acosh``'s are ``acos``'s
  turned, ``asinh``'s ``asin``'s of ``i z``), NumPy's sign where the standard leaves one
  open; ``atan``/``atanh`` of a huge ``z`` keep the small part ``1/z``.  ``log1p`` and
  ``expm1`` are accurate near 0 (NumPy's ``log1p`` is not).
* ``z ** w``: 1 for ``w == 0``; for ``z == 0``, 0 when ``w``'s real part is positive, else
  NaN (NumPy 2); integer ``w`` with ``|w| < 100``: NumPy's ``z``, ``1 / z``, ``z * z`` and
  ``z * z * z`` for 1, -1, 2 and 3 (which keep infinite parts: ``z ** 1`` is ``z``), else
  repeated squaring (exact where NumPy is); ``sqrt(z)`` for 0.5 (NumPy's ``z ** 0.5``);
  otherwise ``exp(w * log(z))``.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.codegen.helpers import Helpers
from ember.dtypes import DType

NAMES = {"complex64": "em_c64", "complex128": "em_c128"}
HALF_PI = 1.5707963267948966


def ctype(h: Helpers, dt: DType) -> str:
    """The C type of a ``dt`` value (declared on first use, before every struct)."""
    name = NAMES[dt.name]
    if name not in h.typedefs:
        part = h.c(dt.real)
        h.typedefs[name] = h.d.complex_struct.format(name=name, t=part, align=dt.itemsize)
    return name


def helper(h: Helpers, op: str, dt: DType) -> str:
    """The name of helper ``op`` (a key of :data:`MAKERS`) for ``dt``, defined once."""
    name = f"{NAMES[dt.name]}_{op}"
    return h.use(name, lambda: MAKERS[op](_Code(h, dt, name)))


def convert(h: Helpers, src: DType, dst: DType) -> str:
    """The helper converting complex ``src`` to complex ``dst``."""
    name = f"{NAMES[dst.name]}_from_{NAMES[src.name][3:]}"

    def make() -> str:
        c = _Code(h, dst, name)
        return c.fn(f"{ctype(h, src)} z", f"    return {c.mk}(({c.t})z.{c.re}, ({c.t})z.{c.im});")

    return h.use(name, make)


class _Code:
    """What a helper's text is written with: the types, field names, literals, math names
    and other helpers of one complex dtype."""

    def __init__(self, h: Helpers, dt: DType, name: str):
        self.h, self.dt, self.name = h, dt, name
        self.part = dt.real
        self.c = ctype(h, dt)
        self.t = h.c(self.part)
        self.re, self.im = h.d.complex_fields

    @property
    def mk(self) -> str:
        return helper(self.h, "make", self.dt)

    def op(self, name: str) -> str:
        return helper(self.h, name, self.dt)

    def m(self, name: str) -> str:
        return self.h.math(name, self.part)

    def lit(self, v: float) -> str:
        key = "float64" if self.part.name == "float64" else "float32"
        if v != v:
            return self.h.d.nan[key]
        if v in (float("inf"), float("-inf")):
            return ("" if v > 0 else "-") + self.h.d.inf[key]
        text = repr(float(v))
        return text + (self.h.d.suffix["float32"] if key == "float32" else "")

    def pred(self, name: str, x: str) -> str:
        return self.h.d.predicate.format(f=name, x=x)

    def fn(self, params: str, body: str, ret: str | None = None) -> str:
        return self.h.fn(ret or self.c, self.name, params, body)

    def parts(self, z: str = "z", x: str = "x", y: str = "y") -> str:
        """Declarations of a value's two parts."""
        return f"    {self.t} {x} = {z}.{self.re}, {y} = {z}.{self.im};\n"

    @property
    def big(self) -> str:
        """A magnitude past which squares overflow (and sums of two of them)."""
        return self.lit(1e18 if self.part.itemsize == 4 else 1e150)


# --------------------------------------------------------------------- basic operations
def _make(c: _Code) -> str:
    body = f"    {c.c} z;\n    z.{c.re} = re;\n    z.{c.im} = im;\n    return z;"
    return c.fn(f"{c.t} re, {c.t} im", body)


def _binary(formula: Callable[[_Code], str]) -> Callable[[_Code], str]:
    def make(c: _Code) -> str:
        decl = c.parts("a", "ar", "ai") + c.parts("b", "br", "bi")
        return c.fn(f"{c.c} a, {c.c} b", f"{decl}    return {formula(c)};")

    return make


_add = _binary(lambda c: f"{c.mk}(ar + br, ai + bi)")
_sub = _binary(lambda c: f"{c.mk}(ar - br, ai - bi)")
_mul = _binary(lambda c: f"{c.mk}(ar * br - ai * bi, ar * bi + ai * br)")


def _div(c: _Code) -> str:
    fabs = c.m("fabs")
    body = (
        c.parts("a", "ar", "ai") + c.parts("b", "br", "bi")
        + "    // Smith (1962): divide out the divisor's larger part first\n"
        f"    if ({fabs}(br) >= {fabs}(bi)) {{\n"
        f"        if (br == 0 && bi == 0) return {c.mk}(ar / {fabs}(br), ai / {fabs}(br));\n"
        f"        {c.t} r = bi / br, s = 1 / (br + bi * r);\n"
        f"        return {c.mk}((ar + ai * r) * s, (ai - ar * r) * s);\n"
        "    }\n"
        f"    {c.t} r = br / bi, s = 1 / (bi + br * r);\n"
        f"    return {c.mk}((ar * r + ai) * s, (ai * r - ar) * s);"
    )  # fmt: skip
    return c.fn(f"{c.c} a, {c.c} b", body)


def _neg(c: _Code) -> str:
    return c.fn(f"{c.c} z", f"    return {c.mk}(-z.{c.re}, -z.{c.im});")


def _conj(c: _Code) -> str:
    return c.fn(f"{c.c} z", f"    return {c.mk}(z.{c.re}, -z.{c.im});")


def _eq(c: _Code) -> str:
    body = f"    return a.{c.re} == b.{c.re} && a.{c.im} == b.{c.im};"
    return c.fn(f"{c.c} a, {c.c} b", body, "bool")


def _abs(c: _Code) -> str:
    return c.fn(f"{c.c} z", f"    return {c.m('hypot')}(z.{c.re}, z.{c.im});", c.t)


def _arg(c: _Code) -> str:
    return c.fn(f"{c.c} z", f"    return {c.m('atan2')}(z.{c.im}, z.{c.re});", c.t)


def _predicate(name: str, join: str) -> Callable[[_Code], str]:
    def make(c: _Code) -> str:
        test = f" {join} ".join(c.pred(name, f"z.{f}") for f in (c.re, c.im))
        return c.fn(f"{c.c} z", f"    return {test};", "bool")

    return make


# --------------------------------------------------------------------- exp, log, sqrt
def _exp(c: _Code) -> str:
    m = c.m
    body = (
        c.parts()
        + "    // C99 Annex G (cexp): exact for y == 0; +0 cis(y) for x = -inf; NaN for an\n"
        "    // infinite or NaN y, with an infinite real part when x = +inf\n"
        f"    if (y == 0) return {c.mk}({m('exp')}(x), y);\n"
        f"    if ({c.pred('isinf', 'x')}) {{\n"
        f"        if (x < 0) return {c.pred('isfinite', 'y')} ? "
        f"{c.mk}(0 * {m('cos')}(y), 0 * {m('sin')}(y)) : {c.mk}(0, 0);\n"
        f"        if (!{c.pred('isfinite', 'y')}) return {c.mk}(x, y - y);\n"
        "    }\n"
        f"    {c.t} e = {m('exp')}(x);\n"
        f"    if ({c.pred('isinf', 'e')} && {c.pred('isfinite', 'x')}) {{  "
        "// e**x overflows; e**x cos(y) may not\n"
        f"        {c.t} h = {m('exp')}(x * {c.lit(0.5)});\n"
        f"        return {c.mk}(h * {m('cos')}(y) * h, h * {m('sin')}(y) * h);\n"
        "    }\n"
        f"    return {c.mk}(e * {m('cos')}(y), e * {m('sin')}(y));"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


def _log(c: _Code) -> str:
    m = c.m
    body = (
        c.parts()
        + f"    {c.t} ax = {m('fabs')}(x), ay = {m('fabs')}(y);\n"
        f"    if (ax < ay) {{ {c.t} s = ax; ax = ay; ay = s; }}\n"
        f"    {c.t} re;\n"
        "    // near the unit circle log|z| is small: log1p of |z|**2 - 1 computed without\n"
        "    // the cancellation of log(hypot(x, y))\n"
        f"    if (ax > {c.lit(0.5)} && ax < {c.lit(1.5)}) "
        f"re = {c.lit(0.5)} * {m('log1p')}((ax - 1) * (ax + 1) + ay * ay);\n"
        f"    else re = {m('log')}({m('hypot')}(x, y));\n"
        f"    return {c.mk}(re, {m('atan2')}(y, x));"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


def _sqrt(c: _Code) -> str:
    m = c.m
    inf = c.lit(float("inf"))
    body = (
        c.parts()
        + "    // C99 Annex G (csqrt): the principal root, real part >= 0, the imaginary\n"
        "    // part with the sign of y (also of y = -0)\n"
        f"    if (x == 0 && y == 0) return {c.mk}(0, y);\n"
        f"    if ({c.pred('isinf', 'y')}) return {c.mk}({inf}, y);\n"
        f"    if ({c.pred('isnan', 'x')}) return {c.mk}(x, x);\n"
        f"    if ({c.pred('isinf', 'x')}) {{\n"
        f"        if (x > 0) return {c.mk}(x, {c.pred('isnan', 'y')} ? y : "
        f"{m('copysign')}({c.lit(0)}, y));\n"
        f"        return {c.mk}({m('fabs')}(y - y), {m('copysign')}({inf}, y));\n"
        "    }\n"
        f"    if ({c.pred('isnan', 'y')}) return {c.mk}(y, y);\n"
        f"    {c.t} k = 1;  // scaled so that |x| + |z| cannot overflow\n"
        f"    if ({m('fabs')}(x) > {c.big} || {m('fabs')}(y) > {c.big}) "
        f"{{ x *= {c.lit(0.25)}; y *= {c.lit(0.25)}; k = 2; }}\n"
        f"    {c.t} t = {m('sqrt')}(({m('fabs')}(x) + {m('hypot')}(x, y)) * {c.lit(0.5)});\n"
        f"    if (x >= 0) return {c.mk}(t * k, y / (2 * t) * k);\n"
        f"    return {c.mk}({m('fabs')}(y) / (2 * t) * k, {m('copysign')}(t, y) * k);"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


def _pow(c: _Code) -> str:
    mul, div, exp, log = c.op("mul"), c.op("div"), c.op("exp"), c.op("log")
    body = (
        c.parts("a", "ar", "ai") + c.parts("b", "br", "bi")
        + f"    if (br == 0 && bi == 0) return {c.mk}(1, 0);\n"
        f"    if (ar == 0 && ai == 0) {{  // NumPy 2: 0 for a positive real part, else NaN\n"
        f"        if (br > 0) return {c.mk}(0, 0);\n"
        f"        return {c.mk}({c.lit(float('nan'))}, {c.lit(float('nan'))});\n"
        "    }\n"
        f"    if (bi == 0 && br == {c.m('trunc')}(br) && {c.m('fabs')}(br) < 100) {{\n"
        "        // an integer power by squaring, as NumPy (exact for small Gaussian integers);\n"
        "        // NumPy's own cases first, which keep infinite parts (z ** 1 is z)\n"
        "        int n = (int)br, e = n < 0 ? -n : n;\n"
        "        if (n == 1) return a;\n"
        f"        if (n == -1) return {div}({c.mk}(1, 0), a);\n"
        f"        if (n == 2) return {mul}(a, a);\n"
        f"        if (n == 3) return {mul}({mul}(a, a), a);\n"
        f"        {c.c} r = {c.mk}(1, 0), p = a;\n"
        f"        while (e > 0) {{ if (e & 1) r = {mul}(r, p); p = {mul}(p, p); e >>= 1; }}\n"
        f"        return n < 0 ? {div}({c.mk}(1, 0), r) : r;\n"
        "    }\n"
        f"    if (bi == 0 && br == {c.lit(0.5)}) return {c.op('sqrt')}(a);  // NumPy's z ** 0.5\n"
        f"    return {exp}({mul}(b, {log}(a)));"
    )  # fmt: skip
    return c.fn(f"{c.c} a, {c.c} b", body)


def _scaled(fn: str, factor: float) -> Callable[[_Code], str]:
    """``fn(z)`` with both parts times ``factor`` after (log2, log10) or ``z`` before (exp2)."""

    def make(c: _Code) -> str:
        k = c.lit(factor)
        if fn == "exp":
            body = f"    return {c.op('exp')}({c.mk}(z.{c.re} * {k}, z.{c.im} * {k}));"
        else:
            body = (
                f"    {c.c} w = {c.op(fn)}(z);\n    return {c.mk}(w.{c.re} * {k}, w.{c.im} * {k});"
            )
        return c.fn(f"{c.c} z", body)

    return make


def _expm1(c: _Code) -> str:
    m = c.m
    body = (
        c.parts()
        + "    // e**x cos(y) - 1 = expm1(x) cos(y) - 2 sin(y/2)**2: no cancellation near 0\n"
        f"    if (!{c.pred('isfinite', 'x')} || {m('fabs')}(x) > {c.lit(1)}) {{\n"
        f"        {c.c} w = {c.op('exp')}(z);\n"
        f"        return {c.mk}(w.{c.re} - 1, w.{c.im});\n"
        "    }\n"
        f"    {c.t} s = {m('sin')}(y * {c.lit(0.5)});\n"
        f"    return {c.mk}({m('expm1')}(x) * {m('cos')}(y) - 2 * s * s, "
        f"{m('exp')}(x) * {m('sin')}(y));"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


def _log1p(c: _Code) -> str:
    m = c.m
    body = (
        c.parts()
        + "    // |1 + z|**2 - 1 = x (2 + x) + y**2: log1p of it keeps small z accurate\n"
        f"    if ({m('fabs')}(x) < {c.lit(0.5)} && {m('fabs')}(y) < {c.lit(0.5)})\n"
        f"        return {c.mk}({c.lit(0.5)} * {m('log1p')}(x * (2 + x) + y * y), "
        f"{m('atan2')}(y, 1 + x));\n"
        f"    return {c.op('log')}({c.mk}(1 + x, y));"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


# --------------------------------------------------------------------- hyperbolic, trigonometric
def _nonfinite_y(c: _Code, zero_re: str, zero_im: str) -> str:
    """C99 Annex G for sinh/cosh of ``x + i inf`` and ``x + i NaN``: NaN parts, except
    ``zero_re``/``zero_im`` for ``x = 0`` and ``|x|`` (an infinity) for an infinite ``x``."""
    return (
        f"    if (!{c.pred('isfinite', 'y')}) return {c.mk}(x == 0 ? {zero_re} : "
        f"{c.pred('isinf', 'x')} ? {c.m('fabs')}(x) : y - y, x == 0 ? {zero_im} : y - y);\n"
    )


def _sinh(c: _Code) -> str:
    m = c.m
    body = (
        c.parts()
        + _nonfinite_y(c, "x", "y - y")
        + f"    if (y == 0) return {c.mk}({m('sinh')}(x), y);\n"
        f"    if (x == 0) return {c.mk}(x, {m('sin')}(y));\n"
        f"    return {c.mk}({m('sinh')}(x) * {m('cos')}(y), {m('cosh')}(x) * {m('sin')}(y));"
    )
    return c.fn(f"{c.c} z", body)


def _cosh(c: _Code) -> str:
    m = c.m
    body = (
        c.parts()
        + _nonfinite_y(c, "y - y", "0")
        + f"    if (y == 0) return {c.mk}({m('cosh')}(x), {m('copysign')}({c.lit(1)}, x) * y);\n"
        f"    if (x == 0) return {c.mk}({m('cos')}(y), x * y);\n"
        f"    return {c.mk}({m('cosh')}(x) * {m('cos')}(y), {m('sinh')}(x) * {m('sin')}(y));"
    )
    return c.fn(f"{c.c} z", body)


def _tanh(c: _Code) -> str:
    m = c.m
    limit = c.lit(9.0 if c.part.itemsize == 4 else 22.0)  # tanh(limit) rounds to 1
    body = (
        c.parts()
        + f"    if ({c.pred('isnan', 'x')}) return {c.mk}(x, y == 0 ? y : x);\n"
        f"    if ({c.pred('isinf', 'x')}) return {c.mk}({m('copysign')}({c.lit(1)}, x), "
        f"{c.pred('isfinite', 'y')} ? {m('copysign')}({c.lit(0)}, {m('sin')}(y) * {m('cos')}(y)) : "
        f"{m('copysign')}({c.lit(0)}, y));\n"
        f"    if (!{c.pred('isfinite', 'y')}) return {c.mk}(x == 0 ? x : y - y, y - y);\n"
        f"    if ({m('fabs')}(x) > {limit}) {{  // tanh(x) is +-1; the imaginary part decays\n"
        f"        {c.t} e = {m('exp')}(-2 * {m('fabs')}(x));\n"
        f"        return {c.mk}({m('copysign')}({c.lit(1)}, x), "
        f"4 * {m('sin')}(y) * {m('cos')}(y) * e);\n"
        "    }\n"
        "    // Kahan: with t = tan(y), s = sinh(x): (beta rho s + i t) / (1 + beta s**2)\n"
        f"    {c.t} t = {m('tan')}(y), b = 1 + t * t, s = {m('sinh')}(x);\n"
        f"    {c.t} r = {m('sqrt')}(1 + s * s), d = 1 + b * s * s;\n"
        f"    return {c.mk}(b * r * s / d, t / d);"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


# sin(x + i inf) for an infinite or NaN x: NaN + i inf (the C library's choice of the
# infinity's sign, which -i sinh(iz) does not give)
_SIN_INF = "if ({isinf_y} && !{finite_x}) return {mk}(z.{re} - z.{re}, {fabs}(z.{im}));"


def _rotated(fn: str, then: str, special: str = "") -> Callable[[_Code], str]:
    """A function of ``i z`` (``(-y, x)``): ``then`` "-i" gives ``(b, -a)`` of its result
    ``(a, b)`` (``sin = -i sinh(iz)``), "" gives it as it is (``cos = cosh(iz)``);
    ``special`` is a first line (a template)."""

    def make(c: _Code) -> str:
        first = ""
        if special:
            first = "    " + special.format(
                isinf_y=c.pred("isinf", f"z.{c.im}"), finite_x=c.pred("isfinite", f"z.{c.re}"),
                mk=c.mk, re=c.re, im=c.im, fabs=c.m("fabs"),
            ) + "\n"  # fmt: skip
        inner = f"{c.op(fn)}({c.mk}(-z.{c.im}, z.{c.re}))"
        if not then:
            return c.fn(f"{c.c} z", f"{first}    return {inner};")
        body = f"{first}    {c.c} w = {inner};\n    return {c.mk}(w.{c.im}, -w.{c.re});"
        return c.fn(f"{c.c} z", body)

    return make


# --------------------------------------------------------------------- inverse functions
def _roots(c: _Code, first: str, second: str) -> str:
    """``s1 = sqrt(first)``, ``s2 = sqrt(second)`` (each ``(re, im)`` as C text)."""
    sq = c.op("sqrt")
    return f"    {c.c} s1 = {sq}({c.mk}({first})), s2 = {sq}({c.mk}({second}));\n"


def _nonfinite_inverse(c: _Code, cos: bool, result: str) -> str:
    """C99 Annex G for ``asin`` (``casin = -i casinh(iz)``, G.6.2.2) or, ``cos``, ``acos``
    (G.6.1.1) of a ``z`` with an infinite or NaN part: ``u + i v``, returned as ``result``."""
    m, inf = c.m, c.lit(float("inf"))
    s, zero = ("-", c.lit(HALF_PI)) if cos else ("", "x")
    angle = f"{m('atan2')}({m('fabs')}(y), x)" if cos else f"{m('atan2')}(x, {m('fabs')}(y))"
    return (
        f"    if (!{c.pred('isfinite', 'x')} || !{c.pred('isfinite', 'y')}) {{\n"
        "        // a NaN part: NaN + i NaN, but for x = +-0 the real part of asin(0) or acos(0)\n"
        f"        {c.t} u = x == 0 ? {zero} : x + y, v = x + y;\n"
        f"        if ({c.pred('isinf', 'x')} || {c.pred('isinf', 'y')}) {{\n"
        "            // an infinite part: the real part is the angle of (x, |y|) (NaN for a NaN\n"
        "            // part), the imaginary part an infinity of y's sign (unspecified for NaN y)\n"
        f"            u = {angle};\n"
        f"            v = {c.pred('isnan', 'y')} ? {s}{inf} : {s}{m('copysign')}({inf}, y);\n"
        "        }\n"
        f"        return {result};\n"
        "    }\n"
    )


def _asin(c: _Code) -> str:
    # Kahan: asin z = atan(x / Re(s1 s2)) + i asinh(Im(conj(s1) s2)), s1 = sqrt(1 - z),
    # s2 = sqrt(1 + z)
    m = c.m
    r, i = c.re, c.im
    body = (
        c.parts() + _nonfinite_inverse(c, False, f"{c.mk}(u, v)")
        + _roots(c, "1 - x, -y", "1 + x, y")
        + f"    {c.t} d = s1.{r} * s2.{r} - s1.{i} * s2.{i};\n"
        f"    return {c.mk}({m('atan2')}(x, d), {m('asinh')}(s1.{r} * s2.{i} - s1.{i} * s2.{r}));"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


def _acos(c: _Code) -> str:
    # Kahan: acos z = 2 atan(Re(s1) / Re(s2)) + i asinh(Im(conj(s2) s1)), s1 = sqrt(1 - z),
    # s2 = sqrt(1 + z)
    m = c.m
    r, i = c.re, c.im
    body = (
        c.parts() + _nonfinite_inverse(c, True, f"{c.mk}(u, v)")
        + _roots(c, "1 - x, -y", "1 + x, y")
        + f"    return {c.mk}(2 * {m('atan2')}(s1.{r}, s2.{r}), "
        f"{m('asinh')}(s2.{r} * s1.{i} - s2.{i} * s1.{r}));"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


def _acosh(c: _Code) -> str:
    # Kahan: acosh z = asinh(Re(conj(s1) s2)) + 2i atan(Im(s1) / Re(s2)), s1 = sqrt(z - 1),
    # s2 = sqrt(z + 1)
    m = c.m
    r, i = c.re, c.im
    # C99 Annex G (cacosh, G.6.2.1) is cacos turned: acosh z = +-i acos z, the real part >= 0
    # and the imaginary part of y's sign (+pi/2 for +-0 + i NaN, where it is unspecified)
    turned = f"{c.mk}({m('fabs')}(v), {c.pred('isnan', 'y')} ? u : {m('copysign')}(u, y))"
    body = (
        c.parts() + _nonfinite_inverse(c, True, turned)
        + _roots(c, "x - 1, y", "x + 1, y")
        + f"    return {c.mk}({m('asinh')}(s1.{r} * s2.{r} + s1.{i} * s2.{i}), "
        f"2 * {m('atan2')}(s1.{i}, s2.{r}));"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


def _atanh(c: _Code) -> str:
    m = c.m
    body = (
        c.parts()
        + "    // C99 Annex G (catanh, NumPy's): an infinite part gives +-0 + i pi/2 (NaN y: NaN)\n"
        f"    if ({c.pred('isinf', 'x')} || {c.pred('isinf', 'y')}) return {c.mk}("
        f"{m('copysign')}({c.lit(0)}, x), {c.pred('isnan', 'y')} ? y : "
        f"{m('copysign')}({c.lit(HALF_PI)}, y));\n"
        f"    if ({c.pred('isnan', 'x')} || {c.pred('isnan', 'y')}) "
        f"return {c.mk}(x == 0 ? x : x + y, x + y);\n"
        f"    if ({m('fabs')}(x) > {c.big} || {m('fabs')}(y) > {c.big}) {{\n"
        "        // |1-z|**2 would overflow: atanh z = 1/z +- i pi/2 + O(1/z**3)\n"
        f"        {c.t} h = {m('hypot')}(1 - x, y);\n"
        f"        return {c.mk}(x / h / h, {m('copysign')}({c.lit(HALF_PI)}, y));\n"
        "    }\n"
        + "    // atanh z = log((1 + z) / (1 - z)) / 2, its parts written without cancellation:\n"
        "    // log |1+z|**2/|1-z|**2 as log1p(4x / |1-z|**2), or as the log of the ratio near -1\n"
        f"    {c.t} d = (1 - x) * (1 - x) + y * y, q = 4 * x / d;\n"
        f"    {c.t} l = q > {c.lit(-0.5)} ? {m('log1p')}(q) "
        f": {m('log')}(((1 + x) * (1 + x) + y * y) / d);\n"
        f"    return {c.mk}({c.lit(0.25)} * l, "
        f"{c.lit(0.5)} * {m('atan2')}(2 * y, (1 - x) * (1 + x) - y * y));"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


def _atan(c: _Code) -> str:
    """``atan z = -i atanh(i z)`` with ``i z = (-b, a)`` written out on ``z = (a, b)``.  (As
    a call of the atanh helper and a swap of its parts, the CUDA build returned real parts
    of 0 on an H100 in both precisions, cause not found, while OpenCL's was right; this
    form computes the same values directly and is right on both.)"""
    m = c.m
    body = (
        c.parts(x="a", y="b")
        + "    // atanh's special values on i z = (-b, a), turned back (C99's catan)\n"
        f"    if ({c.pred('isinf', 'a')} || {c.pred('isinf', 'b')}) return {c.mk}("
        f"{c.pred('isnan', 'a')} ? a : {m('copysign')}({c.lit(HALF_PI)}, a), "
        f"{m('copysign')}({c.lit(0)}, b));\n"
        f"    if ({c.pred('isnan', 'a')} || {c.pred('isnan', 'b')}) "
        f"return {c.mk}(a + b, b == 0 ? b : a + b);\n"
        f"    if ({m('fabs')}(a) > {c.big} || {m('fabs')}(b) > {c.big}) {{  // as atanh's\n"
        f"        {c.t} h = {m('hypot')}(1 + b, a);\n"
        f"        return {c.mk}({m('copysign')}({c.lit(HALF_PI)}, a), b / h / h);\n"
        "    }\n"
        + f"    {c.t} d = (1 + b) * (1 + b) + a * a, q = -4 * b / d;\n"
        f"    {c.t} l = q > {c.lit(-0.5)} ? {m('log1p')}(q) "
        f": {m('log')}(((1 - b) * (1 - b) + a * a) / d);\n"
        f"    return {c.mk}({c.lit(0.5)} * {m('atan2')}(2 * a, (1 + b) * (1 - b) - a * a), "
        f"{c.lit(-0.25)} * l);"
    )  # fmt: skip
    return c.fn(f"{c.c} z", body)


MAKERS: dict[str, Callable[[_Code], str]] = {
    "make": _make, "add": _add, "sub": _sub, "mul": _mul, "div": _div, "neg": _neg,
    "conj": _conj, "eq": _eq, "abs": _abs, "arg": _arg,
    "isnan": _predicate("isnan", "||"), "isinf": _predicate("isinf", "||"),
    "isfinite": _predicate("isfinite", "&&"),
    "exp": _exp, "log": _log, "sqrt": _sqrt, "pow": _pow, "expm1": _expm1, "log1p": _log1p,
    "exp2": _scaled("exp", 0.6931471805599453), "log2": _scaled("log", 1.4426950408889634),
    "log10": _scaled("log", 0.4342944819032518),
    "sinh": _sinh, "cosh": _cosh, "tanh": _tanh, "sin": _rotated("sinh", "-i", _SIN_INF),
    "cos": _rotated("cosh", ""), "tan": _rotated("tanh", "-i"),
    "asin": _asin, "acos": _acos, "acosh": _acosh, "atanh": _atanh,
    "asinh": _rotated("asin", "-i*"), "atan": _atan,
}  # fmt: skip


# --------------------------------------------------------------------- expressions
PRIMARY, UNARY = 16, 15  # the precedences of codegen/expressions.py
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "pow": "pow"}
_INTRINSIC = {"abs": "abs", "angle": "arg", "conj": "conj"}
_PER_PART = ("shfl", "shfl_up", "shfl_down", "shfl_xor", "warp_sum")


class ComplexExpressions:
    """The emitter's complex cases (a mixin of the expression emitter: ``self.h``,
    ``self.expr``); each returns ``(text, precedence)``."""

    def complex_literal(self, value, dt: DType) -> tuple[str, int]:
        v = complex(value)
        re = self._float_literal(v.real, dt.real)[0]
        im = self._float_literal(v.imag, dt.real)[0]
        return f"{helper(self.h, 'make', dt)}({re}, {im})", PRIMARY

    def complex_binary(self, e) -> tuple[str, int]:
        fn = helper(self.h, _BINARY[e.op], e.type.dtype)
        return f"{fn}({self.expr(e.left)}, {self.expr(e.right)})", PRIMARY

    def complex_compare(self, e) -> tuple[str, int]:
        fn = helper(self.h, "eq", e.left.type.dtype)
        text = f"{fn}({self.expr(e.left)}, {self.expr(e.right)})"
        return (text, PRIMARY) if e.op == "==" else (f"!{text}", UNARY)

    def complex_negative(self, e) -> tuple[str, int]:
        return f"{helper(self.h, 'neg', e.type.dtype)}({self.expr(e.operand)})", PRIMARY

    def complex_cast(self, e) -> tuple[str, int]:
        src, dst = e.value.type.dtype, e.type.dtype
        if src.is_complex:  # (to a real type is refused by the typer)
            return f"{convert(self.h, src, dst)}({self.expr(e.value)})", PRIMARY
        part = f"({self.h.c(dst.real)}){self.expr(e.value, UNARY)}"
        return f"{helper(self.h, 'make', dst)}({part}, 0)", PRIMARY

    def _per_part(self, e, dt: DType) -> tuple[str, int]:
        """``op(z)`` as ``complex(op(z.real), op(z.imag))``: each part through the warp
        operation of its float type (native or emulated; the value is read twice)."""
        from ember.frontend import ir
        from ember.frontend.types import scalar

        part = scalar(dt.real)
        value, rest = e.args[0], list(e.args[1:])
        re, im = (
            self.expr(ir.Intrinsic(part, e.name, [ir.Intrinsic(part, which, [value]), *rest]))
            for which in ("real", "imag")
        )
        return f"{helper(self.h, 'make', dt)}({re}, {im})", PRIMARY

    def complex_parts(self, e) -> tuple[str, str]:
        """The C expressions of the two parts of ``e`` (``e`` printed in each)."""
        z = self.expr(e, PRIMARY)
        return tuple(f"{z}.{field}" for field in self.d.complex_fields)

    def complex_intrinsic(self, e) -> tuple[str, int]:
        name, args = e.name, e.args
        dt = (
            e.type.dtype
            if name == "complex"
            else next(a.type.dtype for a in args if a.type.dtype.is_complex)
        )
        if name in ("real", "imag"):
            field = self.d.complex_fields[name == "imag"]
            return f"{self.expr(args[0], PRIMARY)}.{field}", PRIMARY
        if name in _PER_PART:  # shuffles and sums work part by part: the warp code's own
            return self._per_part(e, dt)
        if name == "complex":
            name = "make"
        fn = helper(self.h, _INTRINSIC.get(name, name), dt)
        return f"{fn}({', '.join(self.expr(a) for a in args)})", PRIMARY
