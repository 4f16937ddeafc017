/* ember.backends.cuda._ccall: call a driver entry point from Python for the price of a
 * builtin-function call.
 *
 * The kernel launch's driver call goes through ctypes where this module is not built.
 * A ctypes call converts each argument and prepares a libffi call frame every time: on the
 * H200 machine of issue 19 that was most of the gap between Ember's launch and the driver's
 * own cost (docs/design/cuda-backend.md has the measurements).  call4 takes the function and
 * its four pointer arguments as Python ints (None for NULL), releases the GIL around the call
 * (a launch can block while the driver's queue is full, and another thread may have to
 * drain it), and returns the function's int result (a CUresult).  launch packs a kernel's
 * arguments on the C stack (so threads never share a frame) and calls cuLaunchKernelEx.
 *
 * Optional: setup.py builds it where a C compiler and Python's headers exist, and Ember uses
 * ctypes where it is missing.  Written against the stable ABI (one build for Python 3.10+).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <math.h>
#include <string.h>

typedef int (*call4_fn)(void *, void *, void *, void *);

/* An address argument: a non-negative int, or None for NULL.  Returns 0, or -1 with an error set. */
static int
address(PyObject *value, void **out)
{
    if (value == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "an address must be an int or None, not %R",
                     (PyObject *)Py_TYPE(value));
        return -1;
    }
    *out = PyLong_AsVoidPtr(value);
    if (*out == NULL && PyErr_Occurred()) {
        return -1;
    }
    return 0;
}

static PyObject *
call4(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    void *p[5];
    int result;
    (void)self;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError,
                     "call4(function, a, b, c, d) takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < 5; i++) {
        if (address(args[i], &p[i]) < 0) {
            return NULL;
        }
    }
    if (p[0] == NULL) {
        PyErr_SetString(PyExc_ValueError, "call4: the function address is NULL");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    result = ((call4_fn)p[0])(p[1], p[2], p[3], p[4]);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(result);
}

/* ------------------------------------------------------------------ the kernel launch */

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

/* Three unsigned 32-bit launch dimensions from a 3-tuple of ints.  Anything else (an int, a
 * shorter tuple, a list) is a TypeError: the caller's slow path handles those forms. */
static int
dims(PyObject *value, unsigned int out[3])
{
    if (!PyTuple_Check(value) || PyTuple_Size(value) != 3) {
        PyErr_SetString(PyExc_TypeError, "launch dimensions must be a 3-tuple");
        return -1;
    }
    for (Py_ssize_t i = 0; i < 3; i++) {
        unsigned long long v = PyLong_AsUnsignedLongLong(PyTuple_GetItem(value, i));
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            return -1;
        }
        if (v > 0xffffffffULL) {
            PyErr_SetString(PyExc_OverflowError, "launch dimension above 2**32 - 1");
            return -1;
        }
        out[i] = (unsigned int)v;
    }
    return 0;
}

/* A signed integer argument of `bytes` bytes, range-checked as struct.pack does. */
static int
pack_signed(PyObject *value, int bytes, unsigned char *slot)
{
    long long v = PyLong_AsLongLong(value);
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
    memcpy(slot, &v, (size_t)bytes); /* little-endian: the low bytes first */
    return 0;
}

/* An unsigned integer argument of `bytes` bytes (a Python int: other objects go to the
 * caller's slow path, which converts them). */
static int
pack_unsigned(PyObject *value, int bytes, unsigned char *slot)
{
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (bytes < 8 && v >> (8 * bytes)) {
        PyErr_SetString(PyExc_OverflowError, "argument out of range for its type");
        return -1;
    }
    memcpy(slot, &v, (size_t)bytes);
    return 0;
}

/* One argument into its 8-byte slot, by its struct format character. */
static int
pack(char kind, PyObject *value, unsigned char *slot)
{
    switch (kind) {
    case '?': {
        int truth = PyObject_IsTrue(value);
        if (truth < 0) {
            return -1;
        }
        slot[0] = (unsigned char)truth;
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
        if (kind == 'd') {
            memcpy(slot, &d, 8);
            return 0;
        }
        float f = (float)d;
        if (isinf(f) && !isinf(d)) { /* as struct.pack('f'): no silent infinity */
            PyErr_SetString(PyExc_OverflowError, "float too large for float32");
            return -1;
        }
        memcpy(slot, &f, 4);
        return 0;
    }
    default: /* float16 ('e') and anything new: the slow path packs them */
        PyErr_Format(PyExc_TypeError, "no native packing for parameter kind %c", kind);
        return -1;
    }
}

static PyObject *
launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    void *entry, *function, *stream;
    launch_config config;
    char *kinds;
    Py_ssize_t count, given;
    int err;
    (void)self;
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError,
                     "launch(entry, function, kinds, grid, block, args, shared_mem, stream) "
                     "takes 8 arguments (%zd given)", nargs);
        return NULL;
    }
    if (address(args[0], &entry) < 0 || address(args[1], &function) < 0) {
        return NULL;
    }
    if (entry == NULL) {
        PyErr_SetString(PyExc_ValueError, "launch: the entry point's address is NULL");
        return NULL;
    }
    if (PyBytes_AsStringAndSize(args[2], &kinds, &count) < 0) {
        return NULL;
    }
    if (dims(args[3], config.grid) < 0 || dims(args[4], config.block) < 0) {
        return NULL;
    }
    PyObject *values = args[5];
    int is_tuple = PyTuple_Check(values);
    if (!is_tuple && !PyList_Check(values)) {
        PyErr_SetString(PyExc_TypeError, "launch arguments must be a tuple or a list");
        return NULL;
    }
    given = is_tuple ? PyTuple_Size(values) : PyList_Size(values);
    if (given != count) {
        PyErr_Format(PyExc_TypeError, "%zd arguments for %zd parameters", given, count);
        return NULL;
    }
    unsigned long long shared = PyLong_AsUnsignedLongLong(args[6]);
    if (shared == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    if (shared > 0xffffffffULL) {
        PyErr_SetString(PyExc_OverflowError, "shared_mem above 2**32 - 1");
        return NULL;
    }
    if (args[7] == Py_None) { /* a closed stream: never the legacy NULL stream */
        PyErr_SetString(PyExc_ValueError, "launch: no stream");
        return NULL;
    }
    if (address(args[7], &stream) < 0) {
        return NULL;
    }
    config.shared_mem = (unsigned int)shared;
    config.stream = stream;
    config.attrs = NULL;
    config.num_attrs = 0;

    unsigned long long stack_slots[STACK_PARAMS];
    void *stack_params[STACK_PARAMS];
    unsigned long long *slots = stack_slots;
    void **params = stack_params;
    if (count > STACK_PARAMS) {
        slots = PyMem_Malloc((size_t)count * sizeof *slots);
        params = PyMem_Malloc((size_t)count * sizeof *params);
        if (slots == NULL || params == NULL) {
            PyMem_Free(slots);
            PyMem_Free(params);
            return PyErr_NoMemory();
        }
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = is_tuple ? PyTuple_GetItem(values, i) : PyList_GetItem(values, i);
        slots[i] = 0;
        params[i] = &slots[i];
        if (pack(kinds[i], value, (unsigned char *)&slots[i]) < 0) {
            if (slots != stack_slots) {
                PyMem_Free(slots);
                PyMem_Free(params);
            }
            return NULL;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    err = ((launch_ex_fn)entry)(&config, function, count ? params : NULL, NULL);
    Py_END_ALLOW_THREADS
    if (slots != stack_slots) {
        PyMem_Free(slots);
        PyMem_Free(params);
    }
    return PyLong_FromLong(err);
}

/* ------------------------------------------------------------------ test probes */

/* For the tests (no driver needed): stand-ins for the entry points that record what they
 * were given.  probe4 records its four arguments and returns the int its first points to;
 * probe_launch has cuLaunchKernelEx's signature, copies the configuration and the first
 * `probe_count` argument slots, and returns `probe_result`. */
static void *recorded[4];
static launch_config recorded_config;
static unsigned long long recorded_slots[16];
static int probe_count, probe_result;

static int
probe4(void *a, void *b, void *c, void *d)
{
    recorded[0] = a;
    recorded[1] = b;
    recorded[2] = c;
    recorded[3] = d;
    return a == NULL ? -1 : *(int *)a;
}

static int
probe_launch(const launch_config *config, void *function, void **params, void **extra)
{
    recorded_config = *config;
    recorded[0] = (void *)config;
    recorded[1] = function;
    recorded[2] = params;
    recorded[3] = extra;
    for (int i = 0; i < probe_count && i < 16; i++) {
        memcpy(&recorded_slots[i], params[i], 8);
    }
    return probe_result;
}

static PyObject *
probe_addresses(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("(NN)", PyLong_FromVoidPtr((void *)probe4),
                         PyLong_FromVoidPtr((void *)probe_launch));
}

static PyObject *
probe_arm(PyObject *self, PyObject *args)
{
    (void)self;
    if (!PyArg_ParseTuple(args, "ii", &probe_count, &probe_result)) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
probe_recorded(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *slots = PyBytes_FromStringAndSize((const char *)recorded_slots,
                                                (Py_ssize_t)(8 * (probe_count < 16 ? probe_count : 16)));
    if (slots == NULL) {
        return NULL;
    }
    const launch_config *c = &recorded_config;
    return Py_BuildValue("(NNNN(III)(III)INN)", PyLong_FromVoidPtr(recorded[0]),
                         PyLong_FromVoidPtr(recorded[1]), PyLong_FromVoidPtr(recorded[2]),
                         PyLong_FromVoidPtr(recorded[3]), c->grid[0], c->grid[1], c->grid[2],
                         c->block[0], c->block[1], c->block[2], c->shared_mem,
                         PyLong_FromVoidPtr(c->stream), slots);
}

static PyMethodDef methods[] = {
    {"call4", (PyCFunction)(void (*)(void))call4, METH_FASTCALL,
     "call4(function, a, b, c, d) -> int\n\n"
     "Call the C function at address ``function`` as int f(void*, void*, void*, void*) "
     "with the GIL released; addresses are ints, None is NULL."},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(entry, function, kinds, grid, block, args, shared_mem, stream) -> int\n\n"
     "Pack a kernel's arguments and call cuLaunchKernelEx at address ``entry`` with the GIL "
     "released; returns its CUresult.  ``kinds`` holds one struct format character per "
     "parameter; grid and block are 3-tuples.  A value that does not pack raises "
     "TypeError, OverflowError or ValueError (the caller's slow path then explains it)."},
    {"probe_addresses", probe_addresses, METH_NOARGS,
     "(call4 probe, launch probe) addresses of the test stand-ins for driver entry points."},
    {"probe_arm", probe_arm, METH_VARARGS,
     "probe_arm(slots, result): the launch probe copies that many argument slots and "
     "returns ``result``."},
    {"probe_recorded", probe_recorded, METH_NOARGS,
     "What the probes last saw: (a, b, c, d, grid, block, shared_mem, stream, slots)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ccall",
    "Calls of driver entry points without ctypes' per-call conversions (optional build).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__ccall(void)
{
    return PyModule_Create(&module);
}
