/* ember.backends.cuda._ccall: a kernel's whole launch as one C call.
 *
 * Where this module is not built, the launch is Python: struct.pack_into into a per-thread
 * frame and a ctypes call of cuLaunchKernelEx, which converts each argument and prepares a
 * libffi call frame every time.  On the GPU machines of issue 19 that bookkeeping was ~1 us
 * of a ~4.8 us launch whose driver call alone costs ~3.3 us (docs/design/cuda-backend.md has
 * the measurements).  launcher() makes, per kernel, a builtin function that packs the
 * configuration and the arguments on the C stack (threads never share a frame), calls
 * cuLaunchKernelEx with the GIL released (a launch can block while the driver's queue is
 * full, and a host callback may need the GIL meanwhile) and counts the launch on its stream.
 *
 * Optional: setup.py builds it where a C compiler and Python's headers exist, and Ember uses
 * ctypes where it is missing.  Written against the stable ABI (one build for Python 3.10+).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <limits.h>
#include <math.h>
#include <string.h>

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

/* A signed integer argument of `bytes` bytes, range-checked as struct.pack does. */
static int
pack_signed(PyObject *value, int bytes, unsigned char *slot)
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
    memcpy(slot, &v, (size_t)bytes); /* little-endian: the low bytes first */
    return 0;
}

/* An unsigned integer argument of `bytes` bytes (a Python int: other objects go to the
 * caller's slow path, which converts them). */
static int
pack_unsigned(PyObject *value, int bytes, unsigned char *slot)
{
    unsigned long long v = AS_UNSIGNED_64(value);
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

/* NumPy scalar types whose value is read in place, by parameter kind (registered by
 * numpy_scalars(): a NumPy scalar object is a PyObject header followed by its value, which
 * numpy_scalars checks on a sample of each type before trusting it).  Converting one
 * through __float__/__index__ made a Python object per argument: ~9 ns each on the H200
 * host.  Only the exact type of the parameter's kind: anything else converts as before. */
static PyObject *scalar_type[128];
static unsigned char scalar_size[128];

/* One argument into its 8-byte slot, by its struct format character. */
static int
pack(char kind, PyObject *value, unsigned char *slot)
{
    unsigned char k = (unsigned char)kind;
    if (k < 128 && scalar_type[k] != NULL && (PyObject *)Py_TYPE(value) == scalar_type[k]) {
        memcpy(slot, (const char *)value + sizeof(PyObject), scalar_size[k]);
        if (k == '?') {
            slot[0] = slot[0] != 0;
        }
        return 0;
    }
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
    unsigned long long *slots;    /* per value: the packed slot */
    Py_ssize_t nargs;
    /* fills in the values of hit arguments (left NULL in `vals`) where the Python path needs
     * every value: 0, or -1 with an error set */
    int (*complete)(const struct reuse *, PyObject **vals);
    PyObject *const *items;       /* for `complete`: the arguments and their launch views */
    PyObject *const *views;
    Py_ssize_t nvals;
};

/* After a packing (with the GIL still held, so that no other thread sees keys and slots
 * that disagree; the packing wrote the missed arguments' slots): their keys, or where it
 * failed (`ok` 0) no key, so that their slots are not reused. */
static void
remember(struct reuse *reuse, int ok)
{
    for (Py_ssize_t a = 0; a < reuse->nargs; a++) {
        if (!reuse->hit[a]) {
            PyObject *old = reuse->keys[a];
            reuse->keys[a] = ok ? Py_NewRef(reuse->now[a]) : NULL;
            Py_XDECREF(old); /* a tuple of ints or a scalar: no code runs */
        }
    }
}

/* Pack `vals` (`given` borrowed objects, one per character of `kinds`; with `reuse`, those
 * of hit arguments are NULL and their slots are copied) and the configuration, and call the
 * cuLaunchKernelEx at `entry` with the GIL released.  Returns 0 with the driver's status in
 * *err, or -1 with a Python error set (a value that does not pack). */
static int
pack_and_call(launch_ex_fn entry, void *function, PyObject *kinds_bytes,
              const unsigned int grid[3], const unsigned int block[3], PyObject *const *vals,
              Py_ssize_t given, PyObject *shared_mem, void *stream, struct reuse *reuse,
              int *err)
{
    launch_config config;
    char *kinds;
    Py_ssize_t count;
    if (PyBytes_AsStringAndSize(kinds_bytes, &kinds, &count) < 0) {
        return -1;
    }
    memcpy(config.grid, grid, sizeof config.grid);
    memcpy(config.block, block, sizeof config.block);
    if (given != count) {
        PyErr_Format(PyExc_TypeError, "%zd arguments for %zd parameters", given, count);
        return -1;
    }
    unsigned long long shared = PyLong_AsUnsignedLongLong(shared_mem);
    if (shared == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (shared > 0xffffffffULL) {
        PyErr_SetString(PyExc_OverflowError, "shared_mem above 2**32 - 1");
        return -1;
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
            PyErr_NoMemory();
            return -1;
        }
    }
    int status = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        params[i] = &slots[i];
        if (reuse != NULL && reuse->hit[reuse->sources[2 * i]]) {
            slots[i] = reuse->slots[i];
            continue;
        }
        slots[i] = 0;
        if (pack(kinds[i], vals[i], (unsigned char *)&slots[i]) < 0) {
            status = -1;
            break;
        }
        if (reuse != NULL) {
            reuse->slots[i] = slots[i];
        }
    }
    if (reuse != NULL) {
        remember(reuse, status == 0);
    }
    if (status == 0) {
        int result;
        Py_BEGIN_ALLOW_THREADS
        result = entry(&config, function, count ? params : NULL, NULL);
        Py_END_ALLOW_THREADS
        *err = result;
    }
    if (slots != stack_slots) {
        PyMem_Free(slots);
        PyMem_Free(params);
    }
    return status;
}

/* ------------------------------------------------------------------ the launcher */

/* What one kernel's launcher keeps: the entry point and function as C pointers, and the
 * Python objects it consults (garbage-collected: the callbacks are methods of the kernel
 * object that holds the launcher, a cycle the collector must be able to break). */
typedef struct {
    PyObject_HEAD
    launch_ex_fn entry;
    void *function;
    PyObject *kinds;          /* bytes: one struct character per parameter */
    PyObject *default_stream; /* stream=None launches here */
    PyObject *devices;        /* the __dict__ of a module whose `opened` counts open devices */
    PyObject *slow;           /* slow(grid, block, args, shared_mem, stream): the Python path */
    PyObject *failed;         /* failed(err, grid, block, shared_mem, stream, args) */
    PyObject *last_stream;    /* the stream of the last launch, and its __dict__ */
    PyObject *last_dict;
    PyObject *last_grid;      /* the grid and block tuples of the last launch (immutable: */
    PyObject *last_block;     /* the same objects have the same values), and their values */
    unsigned int grid_dims[3], block_dims[3];
} launcher_state;

static PyObject *str_submitted, *str_address, *str_opened, *one, *zero;

static int
state_traverse(PyObject *self, visitproc visit, void *arg)
{
    launcher_state *st = (launcher_state *)self;
    Py_VISIT(st->kinds);
    Py_VISIT(st->default_stream);
    Py_VISIT(st->devices);
    Py_VISIT(st->slow);
    Py_VISIT(st->failed);
    Py_VISIT(st->last_stream);
    Py_VISIT(st->last_dict);
    Py_VISIT(st->last_grid);
    Py_VISIT(st->last_block);
    Py_VISIT((PyObject *)Py_TYPE(self)); /* a heap type: its instances keep it */
    return 0;
}

static int
state_clear(PyObject *self)
{
    launcher_state *st = (launcher_state *)self;
    Py_CLEAR(st->kinds);
    Py_CLEAR(st->default_stream);
    Py_CLEAR(st->devices);
    Py_CLEAR(st->slow);
    Py_CLEAR(st->failed);
    Py_CLEAR(st->last_stream);
    Py_CLEAR(st->last_dict);
    Py_CLEAR(st->last_grid);
    Py_CLEAR(st->last_block);
    return 0;
}

static void
state_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    state_clear(self);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type);
}

static PyType_Slot state_slots[] = {
    {Py_tp_traverse, (void *)state_traverse},
    {Py_tp_clear, (void *)state_clear},
    {Py_tp_dealloc, (void *)state_dealloc},
    {0, NULL},
};

static PyType_Spec state_spec = {
    "ember.backends.cuda._ccall.LauncherState", sizeof(launcher_state), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, state_slots,
};

static PyObject *state_type;

/* Hand the launch to the Python path, after a value or stream the stub does not take. */
static PyObject *
go_slow(launcher_state *st, PyObject *grid, PyObject *block, PyObject *values,
        PyObject *shared_mem, PyObject *stream)
{
    return PyObject_CallFunctionObjArgs(st->slow, grid, block, values, shared_mem, stream, NULL);
}

/* The instance __dict__ of stream `s` (borrowed; kept with the stream it belongs to, so the
 * usual case, the same stream as the last launch, is a pointer comparison), or NULL without
 * an error where it has none.  Attribute reads and writes through it skip the generic
 * attribute machinery: on the H200 machine the stream counter's PyObject_GetAttr, add and
 * PyObject_SetAttr cost 0.13 us of a 0.58 us launch. */
static PyObject *
stream_dict(launcher_state *st, PyObject *s)
{
    if (s == st->last_stream) {
        return st->last_dict;
    }
    PyObject *d = PyObject_GenericGetDict(s, NULL);
    if (d == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *old_stream = st->last_stream, *old_dict = st->last_dict;
    Py_INCREF(s);
    st->last_stream = s;
    st->last_dict = d;
    Py_XDECREF(old_stream);
    Py_XDECREF(old_dict);
    return d;
}

/* An attribute of stream `s`: from its __dict__ when it is there, else looked up (a class
 * default, a stream without a __dict__).  A new reference, or NULL with an error set. */
static PyObject *
stream_get(PyObject *dict, PyObject *s, PyObject *name)
{
    PyObject *v = dict == NULL ? NULL : PyDict_GetItemWithError(dict, name);
    if (v != NULL) {
        Py_INCREF(v);
        return v;
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyObject_GetAttr(s, name);
}

/* The values of launch dimensions `value` (a 3-tuple), read once for the tuple the last
 * launch had (`*last`, whose values `cached` holds): a kernel[grid, block] launch passes
 * the same tuples every time.  0, or -1 with an error set. */
static int
cached_dims(PyObject **last, unsigned int cached[3], PyObject *value)
{
    if (value == *last) {
        return 0;
    }
    unsigned int read[3];
    if (dims(value, read) < 0) {
        return -1;
    }
    memcpy(cached, read, sizeof read);
    PyObject *old = *last;
    *last = Py_NewRef(value);
    Py_XDECREF(old);
    return 0;
}

/* launch()'s five parameters (grid, block, args, shared_mem=0, stream=None) from a
 * vectorcall's positional and keyword arguments into `given`.  Returns 0, or -1 with a
 * TypeError set. */
static int
parse_call(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject *given[5])
{
    static const char *names[5] = {"grid", "block", "args", "shared_mem", "stream"};
    if (nargs > 5 || (nargs < 3 && kwnames == NULL)) {
        PyErr_Format(PyExc_TypeError,
                     "launch(grid, block, args, shared_mem=0, stream=None) takes 3 to 5 "
                     "positional arguments (%zd given)", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        given[i] = args[i];
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_Size(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GetItem(kwnames, k);
        int slot = -1;
        for (int j = 0; j < 5; j++) {
            if (PyUnicode_CompareWithASCIIString(name, names[j]) == 0) {
                slot = j;
            }
        }
        if (slot < 0 || slot < nargs) {
            PyErr_Format(PyExc_TypeError, "launch() got an unexpected or repeated keyword "
                         "argument %R", name);
            return -1;
        }
        given[slot] = args[nargs + k];
    }
    if (given[0] == NULL || given[1] == NULL || given[2] == NULL) {
        PyErr_SetString(PyExc_TypeError, "launch() needs grid, block and args");
        return -1;
    }
    return 0;
}

/* The CUstream of stream `s` (its `_address`): 0 with *handle set, 1 when the launch must
 * take the slow path (a closed stream, an object without one), -1 with an error set. */
static int
stream_handle(PyObject *dict, PyObject *s, void **handle)
{
    PyObject *where = stream_get(dict, s, str_address);
    if (where == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return -1;
        }
        PyErr_Clear();
        return 1;
    }
    int slow = where == Py_None || !PyLong_Check(where); /* closed: the slow path says so */
    if (!slow) {
        *handle = PyLong_AsVoidPtr(where);
        slow = *handle == NULL && PyErr_Occurred();
        PyErr_Clear();
    }
    Py_DECREF(where);
    return slow;
}

/* s.submitted += 1 (after the enqueue: ember.runtime.sync's idle-stream fast path). */
static int
count_launch(PyObject *dict, PyObject *s)
{
    PyObject *count = stream_get(dict, s, str_submitted);
    if (count == NULL) {
        return -1;
    }
    PyObject *next = PyNumber_Add(count, one);
    Py_DECREF(count);
    if (next == NULL) {
        return -1;
    }
    int set = dict != NULL ? PyDict_SetItem(dict, str_submitted, next)
                           : PyObject_SetAttr(s, str_submitted, next);
    Py_DECREF(next);
    return set;
}

/* The launch itself, after the call's parsing: the `n` values `vals` (borrowed), given to
 * the caller as `values` (a tuple or list; NULL: a tuple of `vals` is made where the Python
 * path needs one).  `reuse`: a guarded runner's packed slots (NULL: none; its hit values are
 * NULL in `vals` until the Python path needs them).  Returns None, the Python path's
 * result, or NULL with an error set. */
static PyObject *
launch_values(launcher_state *st, PyObject *grid, PyObject *block, PyObject **vals,
              Py_ssize_t n, PyObject *values, PyObject *shared_mem, PyObject *stream,
              struct reuse *reuse)
{
    PyObject *s = stream == Py_None ? st->default_stream : stream;
    PyObject *made = NULL, *result = NULL;
    int err = 0, slow = 0;

    /* several devices open: the Python path makes the function's context current (0 and 1
     * are small ints, one object each) */
    PyObject *opened = PyDict_GetItemWithError(st->devices, str_opened);
    if (opened == NULL && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *dict = NULL;
    void *handle = NULL;
    if (opened != zero && opened != one) {
        slow = 1;
    } else {
        dict = stream_dict(st, s);
        slow = stream_handle(dict, s, &handle);
        if (slow < 0) {
            return NULL;
        }
    }
    if (!slow && (cached_dims(&st->last_grid, st->grid_dims, grid) < 0 ||
                  cached_dims(&st->last_block, st->block_dims, block) < 0 ||
                  pack_and_call(st->entry, st->function, st->kinds, st->grid_dims,
                                st->block_dims, vals, n, shared_mem, handle, reuse, &err) < 0)) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL; /* KeyboardInterrupt and the like */
        }
        PyErr_Clear(); /* a value the stub does not pack: the ctypes path explains it */
        slow = 1;
    }
    if (slow || err) {
        if (reuse != NULL && reuse->complete(reuse, vals) < 0) {
            return NULL;
        }
        if (values == NULL) {
            values = made = PyTuple_New(n);
            if (made == NULL) {
                return NULL;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_INCREF(vals[i]);
                PyTuple_SetItem(made, i, vals[i]);
            }
        }
        if (slow) {
            result = go_slow(st, grid, block, values, shared_mem, stream);
        } else {
            PyObject *code = PyLong_FromLong(err);
            if (code != NULL) {
                result = PyObject_CallFunctionObjArgs(st->failed, code, grid, block,
                                                      shared_mem, stream, values, NULL);
                Py_DECREF(code);
            }
        }
        Py_XDECREF(made);
        return result;
    }
    if (count_launch(dict, s) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* launch(grid, block, args, shared_mem=0, stream=None): CudaFunction.launch's meaning, in C. */
static PyObject *
launcher_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    launcher_state *st = (launcher_state *)self;
    PyObject *given[5] = {NULL, NULL, NULL, zero, Py_None};
    if (parse_call(args, nargs, kwnames, given) < 0) {
        return NULL;
    }
    PyObject *values = given[2];
    int is_tuple = PyTuple_Check(values);
    if (!is_tuple && !PyList_Check(values)) {
        PyErr_SetString(PyExc_TypeError, "launch arguments must be a tuple or a list");
        return NULL;
    }
    /* a list is copied first: packing a value may run Python code that changes it */
    PyObject *items = is_tuple ? Py_NewRef(values) : PyList_AsTuple(values);
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(items);
    PyObject *stack[STACK_PARAMS];
    PyObject **vals = stack;
    if (n > STACK_PARAMS) {
        vals = PyMem_Malloc((size_t)n * sizeof *vals);
        if (vals == NULL) {
            Py_DECREF(items);
            return PyErr_NoMemory();
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* borrowed: `items` holds them */
        vals[i] = PyTuple_GetItem(items, i);
    }
    PyObject *result = launch_values(st, given[0], given[1], vals, n, values, given[3],
                                     given[4], NULL);
    if (vals != stack) {
        PyMem_Free(vals);
    }
    Py_DECREF(items);
    return result;
}

static PyMethodDef launcher_def = {
    "launch", (PyCFunction)(void (*)(void))launcher_call, METH_FASTCALL | METH_KEYWORDS,
    "launch(grid, block, args, shared_mem=0, stream=None)\n\n"
    "Enqueue one launch of this kernel (CudaFunction.launch, in the compiled stub).",
};

static PyObject *
make_launcher(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    void *entry, *function;
    (void)self;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError,
                     "launcher(entry, function, kinds, default_stream, devices, slow, failed) "
                     "takes 7 arguments (%zd given)", nargs);
        return NULL;
    }
    if (address(args[0], &entry) < 0 || address(args[1], &function) < 0) {
        return NULL;
    }
    if (entry == NULL) {
        PyErr_SetString(PyExc_ValueError, "launcher: the entry point's address is NULL");
        return NULL;
    }
    if (!PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "launcher: kinds must be bytes");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)state_type, Py_tp_alloc);
    launcher_state *st = (launcher_state *)alloc((PyTypeObject *)state_type, 0);
    if (st == NULL) {
        return NULL;
    }
    st->entry = (launch_ex_fn)entry;
    st->function = function;
    st->last_stream = st->last_dict = st->last_grid = st->last_block = NULL;
    PyObject **fields[5] = {&st->kinds, &st->default_stream, &st->devices, &st->slow,
                            &st->failed};
    for (int i = 0; i < 5; i++) {
        PyObject *field = i == 2 ? PyModule_GetDict(args[4]) : args[2 + i];
        if (field == NULL) {
            Py_DECREF(st);
            return NULL;
        }
        Py_INCREF(field);
        *fields[i] = field;
    }
    PyObject *fn = PyCFunction_NewEx(&launcher_def, (PyObject *)st, NULL);
    Py_DECREF(st);
    return fn;
}

/* ------------------------------------------------------------------ the guarded runner */

/* A specialization's launch fast path (ember.compiler.args.make_runner), in C:
 * run(grid, block, shared_mem, stream, args) launches when every argument has exactly the
 * specialization's type and returns True, else returns False and launches nothing.  It does
 * what the generated Python function does, one check per argument:
 *   GUARD_TYPE      type(a) is T                      (a scalar's NumPy or Python type)
 *   GUARD_ARRAY     type(a) is T, and its launch view (a._lv, else view(a), a tuple) starts
 *                   with the token K (or one in the frozenset K: strided layouts)
 *   GUARD_CONSTANT  a is C or a == C                  (a compile-time argument)
 * then gives the launcher the values, each an argument itself or an item of its view. */
enum { GUARD_TYPE = 0, GUARD_ARRAY = 1, GUARD_CONSTANT = 2 };

#define MAX_RUNNER_ARGS 255

struct guard {
    int kind;
    PyObject *expected; /* the type, or the constant (borrowed: the guards tuple holds it) */
    PyObject *want;     /* an array's token or frozenset of tokens (borrowed), else NULL */
    PyObject *lv;       /* an array type's `_lv` slot descriptor (owned), else NULL */
    descrgetfunc get;   /* its __get__: a._lv without the attribute lookup */
};

typedef struct {
    PyObject_HEAD
    PyObject *launch;   /* the launcher builtin; its self is `ls` */
    launcher_state *ls; /* borrowed: `launch` holds it */
    PyObject *guards;   /* tuple of (kind, object, token-or-None), one per argument: it
                           holds the objects `checks` points to */
    PyObject *view;     /* view(a) -> a's launch view (stored as a._lv) */
    PyObject *note;     /* note(args, stream): stream ordering of a launch on a given stream */
    Py_ssize_t nargs, nvals;
    unsigned char *sources; /* 2 per value: the argument, and 0 (itself) or 1 + view item */
    struct guard *checks; /* `guards` decoded, one per argument */
    PyObject **keys;      /* struct reuse: per argument, the key of `slots` (owned) */
    unsigned long long *slots; /* per value */
} runner_state;

static PyObject *str_lv, *runner_type;

static int
runner_traverse(PyObject *self, visitproc visit, void *arg)
{
    runner_state *r = (runner_state *)self;
    Py_VISIT(r->launch);
    Py_VISIT(r->guards);
    Py_VISIT(r->view);
    Py_VISIT(r->note);
    for (Py_ssize_t i = 0; r->keys != NULL && i < r->nargs; i++) {
        Py_VISIT(r->keys[i]);
    }
    Py_VISIT((PyObject *)Py_TYPE(self));
    return 0;
}

static int
runner_clear(PyObject *self)
{
    runner_state *r = (runner_state *)self;
    Py_CLEAR(r->launch);
    Py_CLEAR(r->guards);
    Py_CLEAR(r->view);
    Py_CLEAR(r->note);
    for (Py_ssize_t i = 0; r->keys != NULL && i < r->nargs; i++) {
        Py_CLEAR(r->keys[i]);
    }
    return 0;
}

static void
runner_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    runner_state *r = (runner_state *)self;
    PyObject_GC_UnTrack(self);
    for (Py_ssize_t i = 0; r->checks != NULL && i < r->nargs; i++) {
        Py_XDECREF(r->checks[i].lv);
    }
    runner_clear(self);
    PyMem_Free(r->sources);
    PyMem_Free(r->checks);
    PyMem_Free(r->keys);
    PyMem_Free(r->slots);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type);
}

static PyType_Slot runner_slots[] = {
    {Py_tp_traverse, (void *)runner_traverse},
    {Py_tp_clear, (void *)runner_clear},
    {Py_tp_dealloc, (void *)runner_dealloc},
    {0, NULL},
};

static PyType_Spec runner_spec = {
    "ember.backends.cuda._ccall.RunnerState", sizeof(runner_state), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, runner_slots,
};

/* Argument `a`'s check against `guard`; 1: it passes (for an array, *view holds a new
 * reference to its launch view), 0: it does not, -1: an error is set.  `known`: the launch
 * view of this argument's last launch (it passed this guard then). */
static int
check_argument(runner_state *r, const struct guard *guard, PyObject *a, PyObject *known,
               PyObject **view)
{
    int kind = guard->kind;
    PyObject *expected = guard->expected;
    if (kind == GUARD_CONSTANT) {
        return a == expected ? 1 : PyObject_RichCompareBool(a, expected, Py_EQ);
    }
    if ((PyObject *)Py_TYPE(a) != expected) {
        return 0;
    }
    if (kind == GUARD_TYPE) {
        return 1;
    }
    PyObject *v = guard->get != NULL ? guard->get(guard->lv, a, expected)
                                     : PyObject_GetAttr(a, str_lv);
    if (v == NULL) {
        return -1;
    }
    if (v == known) {
        *view = v;
        return 1;
    }
    if (v == Py_None || !PyTuple_Check(v) || PyTuple_Size(v) == 0) {
        Py_DECREF(v);
        v = PyObject_CallFunctionObjArgs(r->view, a, NULL);
        if (v == NULL) {
            return -1;
        }
        if (!PyTuple_Check(v) || PyTuple_Size(v) == 0) {
            Py_DECREF(v);
            return 0;
        }
    }
    PyObject *token = PyTuple_GetItem(v, 0), *want = guard->want;
    int ok = token == want;
    if (!ok && want != NULL && PyFrozenSet_Check(want)) {
        ok = PySet_Contains(want, token);
    }
    if (ok <= 0) {
        Py_DECREF(v);
        return ok;
    }
    *view = v;
    return 1;
}

/* Value `j` of a runner's launch: an argument itself or an item of its view (borrowed), or
 * NULL (no error set) where the view has no such item. */
static PyObject *
value_of(const unsigned char *sources, Py_ssize_t j, PyObject *const *items,
         PyObject *const *views)
{
    unsigned char arg = sources[2 * j], item = sources[2 * j + 1];
    if (item == 0) {
        return items[arg];
    }
    if (views[arg] == NULL || item > PyTuple_Size(views[arg])) {
        return NULL;
    }
    return PyTuple_GetItem(views[arg], item - 1);
}

/* struct reuse's `complete`: the values of the hit arguments (their views were read for
 * the launch that packed them, so every item is there). */
static int
complete_values(const struct reuse *reuse, PyObject **vals)
{
    for (Py_ssize_t j = 0; j < reuse->nvals; j++) {
        if (vals[j] == NULL &&
            (vals[j] = value_of(reuse->sources, j, reuse->items, reuse->views)) == NULL) {
            PyErr_SetString(PyExc_SystemError, "a reused launch value has gone");
            return -1;
        }
    }
    return 0;
}

/* The guarded launch of the `n` arguments `items` (borrowed) with cfg = (grid, block,
 * shared_mem, stream): 1 launched, 0 the arguments do not fit (nothing launched), -1 an
 * error is set.  `given` is the arguments as the caller passed them (NULL: a tuple of
 * `items` is made where note() needs one).  An argument whose key is its last launch's
 * (struct reuse) is not read again: its packed slots are copied. */
static int
run_items(runner_state *r, PyObject *const *cfg, PyObject *const *items, Py_ssize_t n,
          PyObject *given)
{
    if (n != r->nargs) {
        return 0;
    }
    PyObject *views[MAX_RUNNER_ARGS + 1], *now[MAX_RUNNER_ARGS + 1];
    unsigned char hit[MAX_RUNNER_ARGS + 1];
    PyObject *vals[STACK_PARAMS];
    Py_ssize_t i, checked = 0;
    int pass = 1;
    for (i = 0; i < n; i++) {
        views[i] = NULL;
        pass = check_argument(r, &r->checks[i], items[i], r->keys[i], &views[i]);
        checked = i + 1;
        if (pass <= 0) {
            break;
        }
        now[i] = views[i] != NULL ? views[i] : items[i];
        hit[i] = now[i] == r->keys[i];
    }
    for (i = 0; pass > 0 && i < r->nvals; i++) {
        if (hit[r->sources[2 * i]]) {
            vals[i] = NULL; /* packed before: complete_values fetches it if it is needed */
        } else if ((vals[i] = value_of(r->sources, i, items, views)) == NULL) {
            pass = 0; /* a view without the item: the Python path */
        }
    }
    if (pass > 0) {
        struct reuse reuse = {r->sources, hit, now, r->keys, r->slots, n,
                              complete_values, items, views, r->nvals};
        PyObject *launched = launch_values(r->ls, cfg[0], cfg[1], vals, r->nvals, NULL, cfg[2],
                                           cfg[3], &reuse);
        Py_XDECREF(launched);
        pass = launched == NULL ? -1 : 1;
    }
    for (i = 0; i < checked; i++) {
        Py_XDECREF(views[i]);
    }
    if (pass > 0 && cfg[3] != Py_None) { /* stream ordering of a launch on a given stream */
        PyObject *made = NULL;
        if (given == NULL) {
            given = made = PyTuple_New(n);
            for (i = 0; made != NULL && i < n; i++) {
                PyTuple_SetItem(made, i, Py_NewRef(items[i]));
            }
        }
        PyObject *noted = given == NULL ? NULL
                                        : PyObject_CallFunctionObjArgs(r->note, given, cfg[3], NULL);
        Py_XDECREF(made);
        Py_XDECREF(noted);
        pass = noted == NULL ? -1 : 1;
    }
    return pass;
}

static PyObject *
runner_call(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
    runner_state *r = (runner_state *)self;
    if (nargs != 5 || (kwnames != NULL && PyTuple_Size(kwnames) > 0)) {
        PyErr_SetString(PyExc_TypeError, "run(grid, block, shared_mem, stream, args) takes 5 "
                        "positional arguments");
        return NULL;
    }
    PyObject *given = argv[4], *args;
    if (PyTuple_Check(given)) {
        args = Py_NewRef(given);
    } else if (PyList_Check(given)) { /* as the Python form unpacks it */
        args = PyList_AsTuple(given);
        if (args == NULL) {
            return NULL;
        }
    } else {
        Py_RETURN_FALSE; /* the caller's slow path explains anything else */
    }
    Py_ssize_t n = PyTuple_Size(args);
    PyObject *items[MAX_RUNNER_ARGS + 1];
    int done = 0;
    if (n == r->nargs) {
        for (Py_ssize_t i = 0; i < n; i++) {
            items[i] = PyTuple_GetItem(args, i);
        }
        done = run_items(r, argv, items, n, given);
    }
    Py_DECREF(args);
    if (done < 0) {
        return NULL;
    }
    return PyBool_FromLong(done);
}

/* run_items for callers in C (ember.compiler._dispatch), through the runner type's
 * `__ember_flat__` capsule: the kernel's arguments as they came, with no tuple. */
static int
flat_run(PyObject *self, PyObject *const *cfg, PyObject *const *args, Py_ssize_t n)
{
    return run_items((runner_state *)self, cfg, args, n, NULL);
}

static PyMethodDef runner_def = {
    "run", (PyCFunction)(void (*)(void))runner_call, METH_FASTCALL | METH_KEYWORDS,
    "run(grid, block, shared_mem, stream, args) -> bool\n\n"
    "Launch when every argument has this specialization's type (True), else nothing (False).",
};

/* An array guard's `_lv` slot descriptor and its __get__, where the array type has one
 * (a class with __slots__): the guard then reads a._lv without the attribute lookup.  The
 * descriptor is what the type's __dict__ holds, so a subclass's own `_lv` does not matter:
 * the guard accepts the exact type only.  0, or -1 with an error set. */
static int
array_slot(struct guard *g)
{
    PyObject *lv = PyObject_GetAttr(g->expected, str_lv); /* the class's: the descriptor */
    if (lv == NULL) {
        PyErr_Clear();
        return 0;
    }
    descrgetfunc get = (descrgetfunc)PyType_GetSlot(Py_TYPE(lv), Py_tp_descr_get);
    if (get == NULL || PyType_GetSlot(Py_TYPE(lv), Py_tp_descr_set) == NULL) {
        Py_DECREF(lv); /* not a data descriptor: an instance could shadow it */
        return 0;
    }
    g->lv = lv;
    g->get = get;
    return 0;
}

static PyObject *
make_runner(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError,
                     "runner(launch, guards, sources, view, note) takes 5 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    PyObject *launch = args[0], *guards = args[1], *sources = args[2];
    PyObject *owner = PyCFunction_Check(launch) ? PyCFunction_GetSelf(launch) : NULL;
    if (owner == NULL || (PyObject *)Py_TYPE(owner) != state_type) {
        PyErr_SetString(PyExc_TypeError, "runner: launch must be a launcher() of this module");
        return NULL;
    }
    if (!PyTuple_Check(guards) || PyTuple_Size(guards) > MAX_RUNNER_ARGS) {
        PyErr_SetString(PyExc_TypeError, "runner: guards must be a tuple of at most 255");
        return NULL;
    }
    Py_ssize_t nguards = PyTuple_Size(guards);
    for (Py_ssize_t i = 0; i < nguards; i++) {
        PyObject *g = PyTuple_GetItem(guards, i);
        long kind = -1;
        if (PyTuple_Check(g) && PyTuple_Size(g) == 3 && PyLong_Check(PyTuple_GetItem(g, 0))) {
            kind = PyLong_AsLong(PyTuple_GetItem(g, 0));
        }
        if (kind < GUARD_TYPE || kind > GUARD_CONSTANT ||
            (kind != GUARD_CONSTANT && !PyType_Check(PyTuple_GetItem(g, 1)))) {
            PyErr_Format(PyExc_ValueError, "runner: guard %zd is malformed", i);
            return NULL;
        }
    }
    char *src;
    Py_ssize_t nsrc;
    if (!PyBytes_Check(sources) || PyBytes_AsStringAndSize(sources, &src, &nsrc) < 0 ||
        nsrc % 2 || nsrc / 2 > STACK_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "runner: sources must be 2 bytes per value, at most "
                        "64 values");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nsrc; i += 2) {
        if ((unsigned char)src[i] >= nguards) {
            PyErr_Format(PyExc_ValueError, "runner: value %zd names argument %d of %zd", i / 2,
                         (unsigned char)src[i], nguards);
            return NULL;
        }
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)runner_type, Py_tp_alloc);
    runner_state *r = (runner_state *)alloc((PyTypeObject *)runner_type, 0);
    if (r == NULL) {
        return NULL;
    }
    r->sources = PyMem_Malloc(nsrc ? (size_t)nsrc : 1);
    r->checks = PyMem_Malloc((size_t)(nguards ? nguards : 1) * sizeof *r->checks);
    r->keys = PyMem_Calloc((size_t)(nguards ? nguards : 1), sizeof *r->keys);
    r->slots = PyMem_Calloc((size_t)(nsrc ? nsrc / 2 : 1), sizeof *r->slots);
    if (r->sources == NULL || r->checks == NULL || r->keys == NULL || r->slots == NULL) {
        Py_DECREF(r);
        return PyErr_NoMemory();
    }
    memcpy(r->sources, src, (size_t)nsrc);
    for (Py_ssize_t i = 0; i < nguards; i++) { /* checked above */
        PyObject *g = PyTuple_GetItem(guards, i), *want = PyTuple_GetItem(g, 2);
        r->checks[i].kind = (int)PyLong_AsLong(PyTuple_GetItem(g, 0));
        r->checks[i].expected = PyTuple_GetItem(g, 1);
        r->checks[i].want = want == Py_None ? NULL : want;
        r->checks[i].lv = NULL;
        r->checks[i].get = NULL;
    }
    r->nargs = nguards;
    for (Py_ssize_t i = 0; i < nguards; i++) {
        if (r->checks[i].kind == GUARD_ARRAY && array_slot(&r->checks[i]) < 0) {
            Py_DECREF(r);
            return NULL;
        }
    }
    r->nvals = nsrc / 2;
    r->launch = Py_NewRef(launch);
    r->ls = (launcher_state *)owner;
    r->guards = Py_NewRef(guards);
    r->view = Py_NewRef(args[3]);
    r->note = Py_NewRef(args[4]);
    PyObject *fn = PyCFunction_NewEx(&runner_def, (PyObject *)r, NULL);
    Py_DECREF(r);
    return fn;
}

/* numpy_scalars(((type, kind, sample, value_bytes), ...)) -> the kinds registered.  A type
 * is taken only where `sample` (an instance) holds `value_bytes` right after its object
 * header, as the layout read in place needs. */
static PyObject *
numpy_scalars(PyObject *self, PyObject *entries)
{
    (void)self;
    if (!PyTuple_Check(entries)) {
        PyErr_SetString(PyExc_TypeError, "numpy_scalars takes a tuple");
        return NULL;
    }
    PyObject *taken = PyList_New(0);
    for (Py_ssize_t i = 0; taken != NULL && i < PyTuple_Size(entries); i++) {
        PyObject *e = PyTuple_GetItem(entries, i), *type, *kind, *sample, *raw;
        if (!PyTuple_Check(e) || PyTuple_Size(e) != 4) {
            PyErr_SetString(PyExc_TypeError, "numpy_scalars: (type, kind, sample, bytes) each");
            Py_CLEAR(taken);
            break;
        }
        type = PyTuple_GetItem(e, 0);
        kind = PyTuple_GetItem(e, 1);
        sample = PyTuple_GetItem(e, 2);
        raw = PyTuple_GetItem(e, 3);
        const char *k = PyUnicode_Check(kind) ? PyUnicode_AsUTF8AndSize(kind, NULL) : NULL;
        if (k == NULL || strlen(k) != 1 || strchr("?bhiqBHIQfd", k[0]) == NULL ||
            !PyType_Check(type) || !PyBytes_Check(raw)) {
            PyErr_Clear();
            continue;
        }
        Py_ssize_t n = PyBytes_Size(raw);
        size_t want = strchr("?bB", k[0]) ? 1 : strchr("hH", k[0]) ? 2 : strchr("iIf", k[0]) ? 4 : 8;
        if ((PyObject *)Py_TYPE(sample) != type || (size_t)n != want ||
            memcmp((const char *)sample + sizeof(PyObject), PyBytes_AsString(raw), want) != 0) {
            continue; /* not the layout this reads: converted as before */
        }
        unsigned char c = (unsigned char)k[0];
        PyObject *old = scalar_type[c];
        scalar_type[c] = Py_NewRef(type);
        Py_XDECREF(old);
        scalar_size[c] = (unsigned char)want;
        if (PyList_Append(taken, kind) < 0) {
            Py_CLEAR(taken);
        }
    }
    return taken;
}

/* ------------------------------------------------------------------ test probes */

/* For the tests (no driver needed): stand-ins for the entry points that record what they
 * were given.  probe_launch has cuLaunchKernelEx's signature, copies the configuration and
 * the first `probe_count` argument slots, and returns `probe_result`. */
static void *recorded[4];
static launch_config recorded_config;
static unsigned long long recorded_slots[16];
static int probe_count, probe_result;

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
probe_address(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromVoidPtr((void *)probe_launch);
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
    {"launcher", (PyCFunction)(void (*)(void))make_launcher, METH_FASTCALL,
     "launcher(entry, function, kinds, default_stream, devices, slow, failed) -> launch\n\n"
     "A kernel's whole launch in C: launch(grid, block, args, shared_mem=0, stream=None) "
     "packs and calls as ``launch`` does, on ``stream`` (None: ``default_stream``), adds 1 "
     "to the stream's ``submitted``, calls ``failed(err, grid, block, shared_mem, stream, "
     "args)`` when the driver refuses, and hands anything it cannot pack (or a closed "
     "stream, or several devices in use: ``devices.opened > 1``) to ``slow(grid, block, "
     "args, shared_mem, stream)``."},
    {"runner", (PyCFunction)(void (*)(void))make_runner, METH_FASTCALL,
     "runner(launch, guards, sources, view, note) -> run\n\n"
     "A specialization's guarded launch in C: run(grid, block, shared_mem, stream, args) "
     "launches through ``launch`` (a launcher() of this module) when each argument passes its "
     "guard ((kind, type or constant, token), kinds 0: type, 1: array with a launch view "
     "whose first item is the token or in a frozenset of tokens, 2: compile-time constant) "
     "and returns True, else returns False.  ``sources``: two bytes per launch value, the "
     "argument and 0 (the argument itself) or 1 + the item of its view.  ``view(a)`` makes a "
     "missing view; ``note(args, stream)`` runs after a launch on a given stream."},
    {"numpy_scalars", numpy_scalars, METH_O,
     "numpy_scalars(((type, kind, sample, value_bytes), ...)) -> kinds taken\n\n"
     "Read arguments of exactly these NumPy scalar types in place for parameters of the "
     "given struct kind, where ``sample`` (an instance) shows the layout: its value's bytes "
     "right after the object header."},
    {"probe_address", probe_address, METH_NOARGS,
     "The address of the tests' stand-in for cuLaunchKernelEx."},
    {"probe_arm", probe_arm, METH_VARARGS,
     "probe_arm(slots, result): the launch probe copies that many argument slots and "
     "returns ``result``."},
    {"probe_recorded", probe_recorded, METH_NOARGS,
     "What the probe last saw: (config, function, params, extra, grid, block, shared_mem, stream, slots)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ccall",
    "A kernel launch as one C call (optional build: setup.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__ccall(void)
{
    str_submitted = PyUnicode_InternFromString("submitted");
    str_address = PyUnicode_InternFromString("_address");
    str_opened = PyUnicode_InternFromString("opened");
    str_lv = PyUnicode_InternFromString("_lv");
    one = PyLong_FromLong(1);
    zero = PyLong_FromLong(0);
    if (!str_submitted || !str_address || !str_opened || !str_lv || !one || !zero) {
        return NULL;
    }
    state_type = PyType_FromSpec(&state_spec);
    runner_type = PyType_FromSpec(&runner_spec);
    if (state_type == NULL || runner_type == NULL) {
        return NULL;
    }
    /* C callers (ember.compiler._dispatch) find flat_run on the runner's type */
    PyObject *flat = PyCapsule_New((void *)flat_run, "ember.flat_run", NULL);
    if (flat == NULL || PyObject_SetAttrString(runner_type, "__ember_flat__", flat) < 0) {
        Py_XDECREF(flat);
        return NULL;
    }
    Py_DECREF(flat);
    return PyModule_Create(&module);
}
