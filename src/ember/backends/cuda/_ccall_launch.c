/* ember.backends.cuda._ccall: the launcher, a kernel's launch as one C call (see _ccall.c). */
#include "_ccall.h"
#include "../../runtime/_waitable.h"

/* The counters' layout (ember.runtime._waitable), or NULL where that stub is not built: a
 * stream of its type is read and counted in its C fields, any other through its __dict__. */
static const waitable_api *waitable;

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
        if (vals[i] == NULL && reuse != NULL) { /* a hit argument: packed before */
            slots[i] = reuse->slots[i];
            continue;
        }
        unsigned long long slot;
        if (ccall_pack(kinds[i], vals[i], &slot) < 0) {
            status = -1;
            break;
        }
        slots[i] = slot;
        if (reuse != NULL) {
            reuse->slots[i] = slot;
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

/* What one kernel's launcher keeps: the entry point and function as C pointers, and the
 * Python objects it consults (garbage-collected: the callbacks are methods of the kernel
 * object that holds the launcher, a cycle the collector must be able to break). */
struct launcher_state {
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
};

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

PyObject *ccall_state_type;

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

/* The CUstream a stream's `_address` value `where` gives (borrowed; NULL: none): 0 with
 * *handle set, or 1 when the launch must take the slow path (None: a closed stream; not
 * an int), never an error. */
static int
handle_of(PyObject *where, void **handle)
{
    if (where == NULL || where == Py_None || !PyLong_Check(where)) {
        return 1; /* closed, or not a stream of this backend: the slow path says so */
    }
    *handle = PyLong_AsVoidPtr(where);
    if (*handle == NULL && PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
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
    int slow = handle_of(where, handle);
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
PyObject *
ccall_launch_values(launcher_state *st, PyObject *grid, PyObject *block, PyObject **vals,
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
    waitable_core *counted = NULL; /* the stream's C counters, where it has them */
    void *handle = NULL;
    if (opened != zero && opened != one) {
        slow = 1;
    } else if (waitable != NULL && PyObject_TypeCheck(s, waitable->type)) {
        counted = (waitable_core *)s;
        slow = handle_of(counted->address, &handle);
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
        if (reuse != NULL && ccall_complete_values(reuse, vals) < 0) {
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
    if (counted != NULL) {
        counted->submitted++; /* s.submitted += 1, with the GIL held as for that */
    } else if (count_launch(dict, s) < 0) {
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
    PyObject *result = ccall_launch_values(st, given[0], given[1], vals, n, values, given[3],
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

PyObject *
ccall_make_launcher(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
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
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)ccall_state_type, Py_tp_alloc);
    launcher_state *st = (launcher_state *)alloc((PyTypeObject *)ccall_state_type, 0);
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


int
ccall_launch_init(void)
{
    str_submitted = PyUnicode_InternFromString("submitted");
    str_address = PyUnicode_InternFromString("_address");
    str_opened = PyUnicode_InternFromString("opened");
    one = PyLong_FromLong(1);
    zero = PyLong_FromLong(0);
    if (!str_submitted || !str_address || !str_opened || !one || !zero) {
        return -1;
    }
    ccall_state_type = PyType_FromSpec(&state_spec);
    if (ccall_state_type == NULL) {
        return -1;
    }
    /* the streams' C counters: where that stub is missing (or hidden, as the tests'
     * EMBER_TEST_PURE_PYTHON does) streams keep them in their __dict__ */
    const waitable_api *api = PyCapsule_Import(WAITABLE_API_NAME, 0);
    if (api == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ImportError) &&
            !PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
    }
    waitable = api != NULL && api->version == WAITABLE_API_VERSION ? api : NULL;
    return 0;
}
