/* ember.backends.cuda._ccall's shared declarations: the launch configuration, the packed
 * values a guarded runner keeps (struct reuse), and what each of its C files gives the
 * others.  The files: _ccall.c (the module, its method table and the tests' probes),
 * _ccall_launch.c (the launcher), _ccall_runner.c (a specialization's guarded launch),
 * _ccall_scalars.c (the NumPy scalar types read in place); the packing is here. */
#ifndef EMBER_CCALL_H
#define EMBER_CCALL_H

#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#if defined(__GNUC__) && !defined(_WIN32)
#define CCALL_SHARED __attribute__((visibility("hidden"))) /* not exported by the module */
#else
#define CCALL_SHARED
#endif

/* CUDA's CUlaunchConfig (cuda.h, CUDA 12+), declared here so the build needs no CUDA headers. */
typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_mem;
    void *stream;
    void *attrs;
    unsigned int num_attrs;
} launch_config;

typedef int (*launch_ex_fn)(const launch_config *, void *, void **, void **);

#define STACK_PARAMS 64 /* more parameters than this take a heap buffer */


/* What a guarded runner keeps of its last packing, so that an argument passed again is not
 * packed again: a launch loop passes the same arrays and mostly the same scalars each time.
 * An argument's key is the object its values come from: a scalar itself (the runner's
 * scalar types are immutable: int, float, bool, complex and NumPy's scalars) or an array's
 * launch view (a tuple, made once per array).  The same key object means the same values:
 * the runner holds a reference to each key, so no other object can take its address.  On
 * the build machine packing an array's two values cost ~40 ns of the ~60 ns its argument
 * took; a reused one is 8 bytes copied per value. */
struct reuse {
    const unsigned char *sources; /* 2 per value: the argument it comes from, and its item */
    const unsigned char *hit;     /* per argument: 1 when its key is the one `slots` holds */
    PyObject *const *now;         /* per argument: this launch's key (borrowed) */
    PyObject **keys;              /* per argument: the key `slots` was packed from (owned) */
    unsigned long long *slots;    /* per value: the packed slot (a hit argument's values are
                                     NULL in the launch's `vals`) */
    Py_ssize_t nargs;
    PyObject *const *items;       /* for ccall_complete_values: the arguments and their */
    PyObject *const *views;       /* launch views */
    Py_ssize_t nvals;
};

/* _ccall_scalars.c */
CCALL_SHARED PyObject *ccall_numpy_scalars(PyObject *self, PyObject *entries);

/* ------------------------------------------------------------------ packing (inline: the
 * launcher packs every value through these) */

/* PyLong_As(Unsigned)LongLong convert an int above 2**30 (two CPython digits: every device
 * pointer) through a byte-by-byte loop, ~20 ns a pointer argument on the GPU hosts; the
 * (unsigned) long versions walk the digits.  Where long is 64 bits they are used. */
#if ULONG_MAX == 0xffffffffffffffffULL
#define AS_SIGNED_64(v) ((long long)PyLong_AsLong(v))
#define AS_UNSIGNED_64(v) ((unsigned long long)PyLong_AsUnsignedLong(v))
#else
#define AS_SIGNED_64(v) PyLong_AsLongLong(v)
#define AS_UNSIGNED_64(v) PyLong_AsUnsignedLongLong(v)
#endif

/* The low `bytes` bytes of `v` as a slot's 8-byte value, the rest zero (little-endian: the
 * driver reads a parameter's bytes from the start of its slot). */
static inline unsigned long long
low_bytes(unsigned long long v, int bytes)
{
    return bytes < 8 ? v & ((1ULL << (8 * bytes)) - 1) : v;
}

/* A signed integer argument of `bytes` bytes, range-checked as struct.pack does. */
static inline int
pack_signed(PyObject *value, int bytes, unsigned long long *slot)
{
    long long v = AS_SIGNED_64(value);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (bytes < 8) {
        long long limit = 1LL << (8 * bytes - 1);
        if (v < -limit || v >= limit) {
            PyErr_SetString(PyExc_OverflowError, "argument out of range for its type");
            return -1;
        }
    }
    *slot = low_bytes((unsigned long long)v, bytes);
    return 0;
}

/* An unsigned integer argument of `bytes` bytes (a Python int: other objects go to the
 * caller's slow path, which converts them). */
static inline int
pack_unsigned(PyObject *value, int bytes, unsigned long long *slot)
{
    unsigned long long v = AS_UNSIGNED_64(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (bytes < 8 && v >> (8 * bytes)) {
        PyErr_SetString(PyExc_OverflowError, "argument out of range for its type");
        return -1;
    }
    *slot = v;
    return 0;
}

/* NumPy scalar types whose value is read in place, by parameter kind (registered by
 * numpy_scalars(): a NumPy scalar object is a PyObject header followed by its value, which
 * numpy_scalars checks on a sample of each type before trusting it).  Converting one
 * through __float__/__index__ made a Python object per argument: ~9 ns each on the H200
 * host.  Only the exact type of the parameter's kind: anything else converts as before. */
CCALL_SHARED extern PyObject *ccall_scalar_type[128];
CCALL_SHARED extern unsigned char ccall_scalar_size[128];

/* A NumPy scalar's value (`size` bytes right after its object header) as a slot's 8-byte
 * value.  Each size is a fixed-size copy into a register: a copy of `size` bytes compiled to
 * `rep movs`, whose stores the slot's next read could not forward from (on the build machine
 * that stall and the copy were 8% of an 8-argument launch with new scalars). */
static inline unsigned long long
scalar_bits(const char *src, unsigned char size)
{
    unsigned long long v = 0;
    switch (size) {
    case 1: memcpy(&v, src, 1); break;
    case 2: memcpy(&v, src, 2); break;
    case 4: memcpy(&v, src, 4); break;
    default: memcpy(&v, src, 8); break;
    }
    return v;
}

/* One argument into its 8-byte slot (written whole, once), by its struct format character. */
static inline int
ccall_pack(char kind, PyObject *value, unsigned long long *slot)
{
    unsigned char k = (unsigned char)kind;
    if (k < 128 && ccall_scalar_type[k] != NULL && (PyObject *)Py_TYPE(value) == ccall_scalar_type[k]) {
        unsigned long long v = scalar_bits((const char *)value + sizeof(PyObject),
                                           ccall_scalar_size[k]);
        *slot = k == '?' ? v != 0 : v;
        return 0;
    }
    switch (kind) {
    case '?': {
        int truth = PyObject_IsTrue(value);
        if (truth < 0) {
            return -1;
        }
        *slot = (unsigned long long)truth;
        return 0;
    }
    case 'b': return pack_signed(value, 1, slot);
    case 'h': return pack_signed(value, 2, slot);
    case 'i': return pack_signed(value, 4, slot);
    case 'q': return pack_signed(value, 8, slot);
    case 'B': return pack_unsigned(value, 1, slot);
    case 'H': return pack_unsigned(value, 2, slot);
    case 'I': return pack_unsigned(value, 4, slot);
    case 'Q': return pack_unsigned(value, 8, slot);
    case 'f':
    case 'd': {
        double d = PyFloat_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        unsigned long long v = 0;
        if (kind == 'd') {
            memcpy(&v, &d, 8);
        } else {
            float f = (float)d;
            if (isinf(f) && !isinf(d)) { /* as struct.pack('f'): no silent infinity */
                PyErr_SetString(PyExc_OverflowError, "float too large for float32");
                return -1;
            }
            memcpy(&v, &f, 4);
        }
        *slot = v;
        return 0;
    }
    default: /* float16 ('e') and anything new: the slow path packs them */
        PyErr_Format(PyExc_TypeError, "no native packing for parameter kind %c", kind);
        return -1;
    }
}

/* _ccall_launch.c */
typedef struct launcher_state launcher_state;
CCALL_SHARED extern PyObject *ccall_state_type; /* the launcher's state type */
CCALL_SHARED PyObject *ccall_launch_values(launcher_state *st, PyObject *grid, PyObject *block,
                                           PyObject **vals, Py_ssize_t n, PyObject *values,
                                           PyObject *shared_mem, PyObject *stream,
                                           struct reuse *reuse);
CCALL_SHARED PyObject *ccall_make_launcher(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs);
CCALL_SHARED int ccall_launch_init(void); /* 0, or -1 with an error set */

/* _ccall_runner.c */
/* The values of the hit arguments (NULL in `vals`), where the Python path needs every
 * value: 0, or -1 with an error set. */
CCALL_SHARED int ccall_complete_values(const struct reuse *reuse, PyObject **vals);
CCALL_SHARED PyObject *ccall_make_runner(PyObject *self, PyObject *const *args,
                                         Py_ssize_t nargs);
CCALL_SHARED int ccall_runner_init(void); /* 0, or -1 with an error set */

#endif
