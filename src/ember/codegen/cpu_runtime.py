"""The C runtime every CPU kernel starts with: a freestanding header, no libc.

Generated kernels (the ``cpu`` dialect) and raw C kernels of the cpu backend begin with
:data:`HEADER`.  Kernels are compiled with ``-nostdlib`` and include no system header, so a
first compile never makes the toolchain look for (or build) a C library: the types come
from the compiler's predefined macros, math from ``libm``'s symbols (already in the Python
process, resolved when the kernel is loaded: ``backends/cpu/module.py``), atomics from the
``__atomic`` builtins, float16 conversions from bit arithmetic written here (no
compiler-rt call).

``printf`` writes *records* into the module's print buffer (:data:`PRINT_SYMBOL`): the
address of the format string (in the kernel's read-only data) and each argument as one
64-bit word.  The host formats them with Python's ``%`` operator after the launch
(``backends/cpu/printing.py``), so the kernel needs no float-to-text code.
"""

from __future__ import annotations

PRINT_SYMBOL = "em_print_buffer"  # int64 words: [used, capacity, records...]

HEADER = r"""
// ---- Ember's C runtime for the cpu backend (freestanding: no libc headers) ----
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef _Bool bool;
#define true 1
#define false 0
#define EM_EXPORT __attribute__((visibility("default")))
#define EM_INLINE static inline __attribute__((always_inline))

// A launch: grid (groups per axis) and block (work-items per axis).
typedef struct { int64_t n[3]; int64_t b[3]; int64_t shm; } em_dims;  // shm: dynamic shared bytes
// The work-item a device function runs for (kernels keep these in locals).
typedef struct { int64_t l[3]; int64_t g[3]; int64_t wi; const em_dims* d; } em_item_t;
// One 8-byte argument slot of a launch record.
typedef union { int64_t i; uint64_t u; double f64; float f32; int32_t i32; uint32_t u32;
                int16_t i16; uint16_t u16; int8_t i8; uint8_t u8; void* p; } em_word;

// ---- math: libm's functions, known to the compiler as builtins (-fno-math-errno)
#define EM_MATH1(name) float name##f(float); double name(double);
#define EM_MATH2(name) float name##f(float, float); double name(double, double);
EM_MATH1(sqrt) EM_MATH1(cbrt) EM_MATH1(exp) EM_MATH1(exp2) EM_MATH1(expm1) EM_MATH1(log)
EM_MATH1(log2) EM_MATH1(log10) EM_MATH1(log1p) EM_MATH1(sin) EM_MATH1(cos) EM_MATH1(tan)
EM_MATH1(asin) EM_MATH1(acos) EM_MATH1(atan) EM_MATH1(sinh) EM_MATH1(cosh) EM_MATH1(tanh)
EM_MATH1(asinh) EM_MATH1(acosh) EM_MATH1(atanh) EM_MATH1(erf) EM_MATH1(erfc)
EM_MATH1(lgamma) EM_MATH1(tgamma) EM_MATH1(floor) EM_MATH1(ceil) EM_MATH1(trunc)
EM_MATH1(rint) EM_MATH1(fabs)
EM_MATH2(pow) EM_MATH2(atan2) EM_MATH2(hypot) EM_MATH2(copysign) EM_MATH2(fmod)
EM_MATH2(fmin) EM_MATH2(fmax)
float fmaf(float, float, float); double fma(double, double, double);
float frexpf(float, int*); double frexp(double, int*);
float ldexpf(float, int); double ldexp(double, int);
EM_INLINE float em_rsqrtf(float x) { return 1.0f / sqrtf(x); }
EM_INLINE double em_rsqrt(double x) { return 1.0 / sqrt(x); }

// ---- bit operations with CUDA's results (clz(0) is the width, not undefined)
EM_INLINE int32_t em_popc32(uint32_t x) { return __builtin_popcount(x); }
EM_INLINE int32_t em_popc64(uint64_t x) { return __builtin_popcountll(x); }
EM_INLINE int32_t em_clz32(uint32_t x) { return x ? __builtin_clz(x) : 32; }
EM_INLINE int32_t em_clz64(uint64_t x) { return x ? __builtin_clzll(x) : 64; }
EM_INLINE int32_t em_mulhi_i32(int32_t a, int32_t b) { return (int32_t)(((int64_t)a * b) >> 32); }
EM_INLINE int64_t em_mulhi_i64(int64_t a, int64_t b) {
    return (int64_t)(((__int128)a * b) >> 64); }
EM_INLINE uint32_t em_mulhi_u32(uint32_t a, uint32_t b) {
    return (uint32_t)(((uint64_t)a * b) >> 32); }
EM_INLINE uint64_t em_mulhi_u64(uint64_t a, uint64_t b) {
    return (uint64_t)(((unsigned __int128)a * b) >> 64); }
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")

// ---- bit patterns
EM_INLINE uint32_t em_f32_bits(float x) { union { float f; uint32_t u; } v; v.f = x; return v.u; }
EM_INLINE float em_f32_from(uint32_t x) { union { float f; uint32_t u; } v; v.u = x; return v.f; }
EM_INLINE uint64_t em_f64_bits(double x) { union { double f; uint64_t u; } v; v.f = x; return v.u; }
EM_INLINE double em_f64_from(uint64_t x) { union { double f; uint64_t u; } v; v.u = x; return v.f; }

// ---- float16 storage: IEEE binary16 bits <-> float, round to nearest even
EM_INLINE float em_f16_load(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return em_f32_from(sign | 0x7f800000u | (m << 13));  // inf, nan
    if (e != 0) return em_f32_from(sign | ((e + 112u) << 23) | (m << 13));
    float v = (float)m * 0x1p-24f;  // zero or subnormal: exact
    return sign ? -v : v;
}
// Round the magnitude `frac >> shift` to nearest even (shift in 1..62).
EM_INLINE uint64_t em_round_shift(uint64_t frac, int shift) {
    uint64_t q = frac >> shift, rest = frac & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    return q + (rest > half || (rest == half && (q & 1)));
}
// A finite or infinite binary value (mantissa with its implicit bit, unbiased exponent
// of the mantissa's lowest bit) as half bits; `bits` is the mantissa width.
EM_INLINE uint16_t em_f16_pack(uint32_t sign, uint64_t mant, int exp2) {
    // value = mant * 2^exp2; halves are q * 2^-24 (subnormal) or 1.m * 2^(e-15)
    int top = 63 - __builtin_clzll(mant);  // position of the leading bit
    int e = top + exp2;  // value in [2^e, 2^(e+1))
    if (e > 15) return (uint16_t)(sign | 0x7c00u);
    int shift = (e < -14 ? -24 : e - 10) - exp2;  // keep 11 bits (normal) / fewer (subnormal)
    uint64_t q = shift > 0 ? (shift > 62 ? 0 : em_round_shift(mant, shift)) : mant << -shift;
    // q counts units of 2^(exp2 + shift); for normals q is in [2^10, 2^11], carry included
    if (e < -14) return (uint16_t)(sign | q);  // subnormal (q == 2^10 rounds up to normal)
    uint64_t he = (uint64_t)(e + 15);
    if (q >> 11) { q >>= 1; he++; }  // the rounding carried into the next binade
    if (he > 30) return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | (he << 10) | (q & 0x3ffu));
}
EM_INLINE uint16_t em_f16_store(float x) {
    uint32_t u = em_f32_bits(x), sign = (u >> 16) & 0x8000u, e = (u >> 23) & 0xffu;
    uint32_t m = u & 0x7fffffu;
    if (e == 0xffu) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0));
    if (e == 0 && m == 0) return (uint16_t)sign;
    if (e == 0) return em_f16_pack(sign, m, -149);  // float subnormal: far below half's range
    return em_f16_pack(sign, m | 0x800000u, (int)e - 150);
}
EM_INLINE uint16_t em_f16_store_d(double x) {
    uint64_t u = em_f64_bits(x), m = u & 0xfffffffffffffull;
    uint32_t sign = (uint32_t)(u >> 48) & 0x8000u, e = (uint32_t)(u >> 52) & 0x7ffu;
    if (e == 0x7ffu) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u | (uint32_t)(m >> 42) : 0));
    if (e == 0 && m == 0) return (uint16_t)sign;
    if (e == 0) return (uint16_t)sign;  // double subnormals round to zero in half
    return em_f16_pack(sign, m | 0x10000000000000ull, (int)e - 1075);
}

// ---- compare-and-swap returning the old value (float atomics loop on it)
EM_INLINE uint32_t em_cas_u32(uint32_t* p, uint32_t expected, uint32_t v) {
    __atomic_compare_exchange_n(p, &expected, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;
}
EM_INLINE uint64_t em_cas_u64(uint64_t* p, uint64_t expected, uint64_t v) {
    __atomic_compare_exchange_n(p, &expected, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;
}

// ---- the error claim (codegen/runtime_checks.py): first failing work-item wins
EM_INLINE uint32_t em_claim_cas(uint32_t* p) {
    uint32_t expected = 0u;
    __atomic_compare_exchange_n(p, &expected, 1u, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
}

// ---- printf: records for the host to format (backends/cpu/printing.py)
EM_EXPORT int64_t* em_print_buffer = 0;
static void em_printf(const char* fmt, ...) {
    int64_t words[34];
    int n = 0;
    __builtin_va_list ap;
    __builtin_va_start(ap, fmt);
    for (const char* c = fmt; *c && n < 32; c++) {
        if (*c != '%') continue;
        c++;
        if (*c == '%') continue;
        while (*c == 'l' || *c == 'h') c++;
        if (*c == 'g' || *c == 'f' || *c == 'e') {
            double d = __builtin_va_arg(ap, double);
            words[2 + n++] = (int64_t)em_f64_bits(d);
        } else if (*c == 's') {
            words[2 + n++] = (int64_t)__builtin_va_arg(ap, const char*);
        } else {
            words[2 + n++] = __builtin_va_arg(ap, long long);
        }
    }
    __builtin_va_end(ap);
    int64_t* buf = em_print_buffer;
    if (!buf) return;
    words[0] = n + 2;
    words[1] = (int64_t)fmt;
    int64_t at = __atomic_fetch_add(&buf[0], n + 2, __ATOMIC_RELAXED);
    if (at + n + 2 > buf[1]) return;  // full: the host says how much was lost
    for (int k = 0; k < n + 2; k++) buf[2 + at + k] = words[k];
}
#define printf em_printf
// ---- end of the runtime ----
"""

# The launch record (backends/cpu/module.py): HEADER_WORDS words of grid and block, then
# one word per kernel parameter.
HEADER_WORDS = 8
# The em_word member a parameter of each dtype is read from.
WORD_FIELD = {
    "bool": "u8", "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16",
    "int32": "i32", "uint32": "u32", "int64": "i", "uint64": "u", "float32": "f32",
    "float64": "f64",
}  # fmt: skip


def entry(name: str, params: list[tuple[str, str, str]], call: str) -> str:
    """The exported entry ``em_run_<name>`` of a kernel.

    It copies the launch record into locals (``params``: (C type, local name, em_word
    member or ``"p"`` for a pointer), in parameter order), then takes chunks of
    ``chunk`` work-groups from the shared counter ``*next`` until none is left, and runs
    the C statement ``call`` for each work-group with ``em_d`` (the launch's
    :c:type:`em_dims`) and ``em_gx``, ``em_gy``, ``em_gz`` (the group's index) in scope.
    Copying arguments into locals before the loops lets the compiler keep them in
    registers (a load from the record in the inner loop cost up to 3x on axpy).  The
    group's index is divided out of ``em_g`` once per chunk and then counted up (three
    64-bit divisions per work-group cost 3% of an axpy whose data sit in cache).
    """
    lines = [
        f"EM_EXPORT int64_t em_run_{name}(const em_word* em_a, int64_t* em_next, "
        "int64_t em_chunk) {",
        "    const em_dims em_d = {{em_a[0].i, em_a[1].i, em_a[2].i}, "
        "{em_a[3].i, em_a[4].i, em_a[5].i}, em_a[6].i};",
    ]
    for k, (ctype, local, field) in enumerate(params):
        cast = f"({ctype})" if field == "p" else ""
        lines.append(f"    {ctype} const {local} = {cast}em_a[{HEADER_WORDS + k}].{field};")
    lines += [
        "    const int64_t em_groups = em_d.n[0] * em_d.n[1] * em_d.n[2];",
        "    for (;;) {",
        "        const int64_t em_g0 = __atomic_fetch_add(em_next, em_chunk, __ATOMIC_RELAXED);",
        "        if (em_g0 >= em_groups) return 0;",
        "        const int64_t em_g1 = "
        "em_groups - em_g0 < em_chunk ? em_groups : em_g0 + em_chunk;",
        "        int64_t em_gx = em_g0 % em_d.n[0];",
        "        int64_t em_gy = (em_g0 / em_d.n[0]) % em_d.n[1];",
        "        int64_t em_gz = em_g0 / (em_d.n[0] * em_d.n[1]);",
        "        for (int64_t em_g = em_g0; em_g < em_g1; em_g++) {",
        f"            {call}",
        "            if (++em_gx == em_d.n[0]) {  // the next group: x, then y, then z",
        "                em_gx = 0;",
        "                if (++em_gy == em_d.n[1]) { em_gy = 0; em_gz++; }",
        "            }",
        "        }",
        "    }",
        "}",
    ]
    return "\n".join(lines)
