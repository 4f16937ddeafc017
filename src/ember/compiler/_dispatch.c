/* ember.compiler._dispatch: `kernel[grid, block]` as a C callable.
 *
 * The Python form (ember.compiler.kernel.make_launcher) is a closure:
 *
 *     def launch(*args, stream=stream0, shared_mem=shared0):
 *         try:
 *             if not kernel._last.run(grid, block, shared_mem, stream, args):
 *                 kernel._launch_slow(grid, block, shared_mem, stream, args)
 *         except Exception as exc:
 *             hide_internal_frames(exc)
 *             raise
 *
 * On the build machine its frame, the *args tuple and the two attribute reads cost ~230 ns
 * of a launch whose whole fast path (guards, packing, the driver's call) is ~540 ns.  The
 * callable made here does the same in C; nothing else changes (the specialization's `run`
 * and the kernel's `_launch_slow` are called as they are).
 *
 * Optional: setup.py builds it where a C compiler exists, and Ember keeps the closure where it
 * is missing.  Written against the stable ABI (one build for Python 3.10+).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject *kernel;     /* its `_last.run` and `_launch_slow` are called */
    PyObject *grid, *block;
    PyObject *stream;     /* the configuration's stream (None: the default one) */
    PyObject *shared_mem; /* the configuration's dynamic shared memory in bytes */
    PyObject *hide;       /* hide_internal_frames(exc) */
} config_state;

static PyObject *str_last, *str_run, *str_launch_slow, *str_stream, *str_shared_mem, *zero;
static PyObject *state_type;

static int
state_traverse(PyObject *self, visitproc visit, void *arg)
{
    config_state *st = (config_state *)self;
    Py_VISIT(st->kernel);
    Py_VISIT(st->grid);
    Py_VISIT(st->block);
    Py_VISIT(st->stream);
    Py_VISIT(st->shared_mem);
    Py_VISIT(st->hide);
    Py_VISIT((PyObject *)Py_TYPE(self)); /* a heap type: its instances keep it */
    return 0;
}

static int
state_clear(PyObject *self)
{
    config_state *st = (config_state *)self;
    Py_CLEAR(st->kernel);
    Py_CLEAR(st->grid);
    Py_CLEAR(st->block);
    Py_CLEAR(st->stream);
    Py_CLEAR(st->shared_mem);
    Py_CLEAR(st->hide);
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
    "ember.compiler._dispatch.LaunchConfig", sizeof(config_state), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, state_slots,
};

/* The launch: the specialization used last, else the kernel's slow path.  A new reference
 * (None), or NULL with an error set. */
static PyObject *
launch(config_state *st, PyObject *args, PyObject *stream, PyObject *shared_mem)
{
    PyObject *spec = PyObject_GetAttr(st->kernel, str_last);
    if (spec == NULL) {
        return NULL;
    }
    PyObject *run = PyObject_GetAttr(spec, str_run);
    Py_DECREF(spec);
    if (run == NULL) {
        return NULL;
    }
    PyObject *done = PyObject_CallFunctionObjArgs(run, st->grid, st->block, shared_mem, stream,
                                                  args, NULL);
    Py_DECREF(run);
    if (done == NULL) {
        return NULL;
    }
    int launched = PyObject_IsTrue(done);
    Py_DECREF(done);
    if (launched < 0) {
        return NULL;
    }
    if (launched) {
        Py_RETURN_NONE;
    }
    PyObject *slow = PyObject_GetAttr(st->kernel, str_launch_slow);
    if (slow == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_CallFunctionObjArgs(slow, st->grid, st->block, shared_mem,
                                                    stream, args, NULL);
    Py_DECREF(slow);
    return result;
}

/* A user error's traceback without Ember's frames (ember.tracebacks), as the closure's
 * `except` clause does; the error stays set. */
static void
hide_frames(PyObject *hide)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception)) {
        return; /* KeyboardInterrupt and the like pass as they are */
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL) {
        PyException_SetTraceback(value, tb);
    }
    if (value != NULL) {
        PyObject *r = PyObject_CallFunctionObjArgs(hide, value, NULL);
        if (r == NULL) {
            PyErr_Clear(); /* the original error matters more */
        }
        Py_XDECREF(r);
        Py_XDECREF(tb);
        tb = PyException_GetTraceback(value);
    }
    PyErr_Restore(type, value, tb);
}

static PyObject *
config_call(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
    config_state *st = (config_state *)self;
    PyObject *stream = st->stream, *shared_mem = st->shared_mem;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_Size(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GetItem(kwnames, k);
        if (PyUnicode_Compare(name, str_stream) == 0) {
            stream = argv[nargs + k];
        } else if (PyUnicode_Compare(name, str_shared_mem) == 0) {
            shared_mem = argv[nargs + k];
        } else {
            PyErr_Format(PyExc_TypeError, "a kernel launch takes the kernel's arguments and "
                         "the keywords stream= and shared_mem=, not %R", name);
            return NULL;
        }
    }
    PyObject *args = PyTuple_New(nargs);
    if (args == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(argv[i]);
        PyTuple_SetItem(args, i, argv[i]);
    }
    PyObject *result = launch(st, args, stream, shared_mem);
    Py_DECREF(args);
    if (result == NULL) {
        hide_frames(st->hide);
    }
    return result;
}

static PyMethodDef config_def = {
    "launch", (PyCFunction)(void (*)(void))config_call, METH_FASTCALL | METH_KEYWORDS,
    "launch(*args, stream=..., shared_mem=...)\n\nLaunch the kernel with this configuration.",
};

static PyObject *
configured(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "configured(kernel, grid, block, stream, shared_mem, "
                     "hide) takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)state_type, Py_tp_alloc);
    config_state *st = (config_state *)alloc((PyTypeObject *)state_type, 0);
    if (st == NULL) {
        return NULL;
    }
    PyObject **fields[6] = {&st->kernel, &st->grid, &st->block, &st->stream, &st->shared_mem,
                            &st->hide};
    for (int i = 0; i < 6; i++) {
        Py_INCREF(args[i]);
        *fields[i] = args[i];
    }
    PyObject *fn = PyCFunction_NewEx(&config_def, (PyObject *)st, NULL);
    Py_DECREF(st);
    return fn;
}

/* ------------------------------------------------------------------ kernel.launch(n) */

/* The launcher of kernel.launch(n) (ember.compiler.kernel.NDRangeLauncher) in C: the grid
 * and block of the backend last launched on are kept here; another backend asks the Python
 * launcher's _config(backend), and a launch the specialization's run refuses goes to its
 * _launch_slow(args, stream, shared_mem). */
typedef struct {
    PyObject_HEAD
    PyObject *launcher; /* the Python NDRangeLauncher */
    PyObject *kernel;
    PyObject *hide;
    PyObject *be, *grid, *block; /* the configuration kept (NULL: none yet) */
    int empty;          /* zero threads: nothing to launch */
} ndrange_state;

static PyObject *str_backend, *str_config, *ndrange_type;

static int
ndrange_traverse(PyObject *self, visitproc visit, void *arg)
{
    ndrange_state *st = (ndrange_state *)self;
    Py_VISIT(st->launcher);
    Py_VISIT(st->kernel);
    Py_VISIT(st->hide);
    Py_VISIT(st->be);
    Py_VISIT(st->grid);
    Py_VISIT(st->block);
    Py_VISIT((PyObject *)Py_TYPE(self));
    return 0;
}

static int
ndrange_clear(PyObject *self)
{
    ndrange_state *st = (ndrange_state *)self;
    Py_CLEAR(st->launcher);
    Py_CLEAR(st->kernel);
    Py_CLEAR(st->hide);
    Py_CLEAR(st->be);
    Py_CLEAR(st->grid);
    Py_CLEAR(st->block);
    return 0;
}

static void
ndrange_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    ndrange_clear(self);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type);
}

static PyType_Slot ndrange_slots[] = {
    {Py_tp_traverse, (void *)ndrange_traverse},
    {Py_tp_clear, (void *)ndrange_clear},
    {Py_tp_dealloc, (void *)ndrange_dealloc},
    {0, NULL},
};

static PyType_Spec ndrange_spec = {
    "ember.compiler._dispatch.NDRange", sizeof(ndrange_state), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, ndrange_slots,
};

/* *slot = value (a new reference), the old one released after. */
static void
replace(PyObject **slot, PyObject *value)
{
    PyObject *old = *slot;
    *slot = Py_NewRef(value);
    Py_XDECREF(old);
}

/* The grid and block for backend `be` (borrowed into *grid, *block: the state holds
 * them); 0, or -1 with an error set. */
static int
ndrange_config(ndrange_state *st, PyObject *be, PyObject **grid, PyObject **block)
{
    if (be != st->be) {
        PyObject *cfg = PyObject_CallMethodObjArgs(st->launcher, str_config, be, NULL);
        if (cfg == NULL) {
            return -1;
        }
        if (!PyTuple_Check(cfg) || PyTuple_Size(cfg) != 2) {
            Py_DECREF(cfg);
            PyErr_SetString(PyExc_TypeError, "_config must return (grid, block)");
            return -1;
        }
        replace(&st->grid, PyTuple_GetItem(cfg, 0));
        replace(&st->block, PyTuple_GetItem(cfg, 1));
        replace(&st->be, be);
        Py_DECREF(cfg);
    }
    *grid = st->grid;
    *block = st->block;
    return 0;
}

static PyObject *
ndrange_launch(ndrange_state *st, PyObject *args, PyObject *stream, PyObject *shared_mem)
{
    PyObject *spec = PyObject_GetAttr(st->kernel, str_last);
    if (spec == NULL) {
        return NULL;
    }
    PyObject *be = PyObject_GetAttr(spec, str_backend);
    if (be == NULL) {
        Py_DECREF(spec);
        return NULL;
    }
    int launched = 0;
    if (be != Py_None) {
        PyObject *grid, *block, *run = NULL, *done = NULL;
        if (ndrange_config(st, be, &grid, &block) < 0 ||
            (run = PyObject_GetAttr(spec, str_run)) == NULL) {
            Py_DECREF(be);
            Py_DECREF(spec);
            return NULL;
        }
        Py_INCREF(grid); /* the state's may be replaced while run runs Python code */
        Py_INCREF(block);
        done = PyObject_CallFunctionObjArgs(run, grid, block, shared_mem, stream, args, NULL);
        Py_DECREF(grid);
        Py_DECREF(block);
        Py_DECREF(run);
        launched = done == NULL ? -1 : PyObject_IsTrue(done);
        Py_XDECREF(done);
    }
    Py_DECREF(be);
    Py_DECREF(spec);
    if (launched < 0) {
        return NULL;
    }
    if (launched) {
        Py_RETURN_NONE;
    }
    return PyObject_CallMethodObjArgs(st->launcher, str_launch_slow, args, stream, shared_mem,
                                      NULL);
}

static PyObject *
ndrange_call(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
    ndrange_state *st = (ndrange_state *)self;
    PyObject *stream = Py_None, *shared_mem = zero;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_Size(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GetItem(kwnames, k);
        if (PyUnicode_Compare(name, str_stream) == 0) {
            stream = argv[nargs + k];
        } else if (PyUnicode_Compare(name, str_shared_mem) == 0) {
            shared_mem = argv[nargs + k];
        } else {
            PyErr_Format(PyExc_TypeError, "a kernel launch takes the kernel's arguments and "
                         "the keywords stream= and shared_mem=, not %R", name);
            return NULL;
        }
    }
    if (st->empty) {
        Py_RETURN_NONE; /* nothing to do for zero threads */
    }
    PyObject *args = PyTuple_New(nargs);
    if (args == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(argv[i]);
        PyTuple_SetItem(args, i, argv[i]);
    }
    PyObject *result = ndrange_launch(st, args, stream, shared_mem);
    Py_DECREF(args);
    if (result == NULL) {
        hide_frames(st->hide);
    }
    return result;
}

static PyMethodDef ndrange_def = {
    "launch", (PyCFunction)(void (*)(void))ndrange_call, METH_FASTCALL | METH_KEYWORDS,
    "launch(*args, stream=None, shared_mem=0)\n\nLaunch the kernel over its threads.",
};

static PyObject *
ndrange(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "ndrange(launcher, kernel, hide, empty) takes 4 "
                     "arguments (%zd given)", nargs);
        return NULL;
    }
    int empty = PyObject_IsTrue(args[3]);
    if (empty < 0) {
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)ndrange_type, Py_tp_alloc);
    ndrange_state *st = (ndrange_state *)alloc((PyTypeObject *)ndrange_type, 0);
    if (st == NULL) {
        return NULL;
    }
    st->launcher = Py_NewRef(args[0]);
    st->kernel = Py_NewRef(args[1]);
    st->hide = Py_NewRef(args[2]);
    st->be = st->grid = st->block = NULL;
    st->empty = empty;
    PyObject *fn = PyCFunction_NewEx(&ndrange_def, (PyObject *)st, NULL);
    Py_DECREF(st);
    return fn;
}

static PyMethodDef methods[] = {
    {"configured", (PyCFunction)(void (*)(void))configured, METH_FASTCALL,
     "configured(kernel, grid, block, stream, shared_mem, hide) -> launch\n\n"
     "``kernel[grid, block]`` in C: ``launch(*args, stream=stream, shared_mem=shared_mem)`` "
     "calls ``kernel._last.run(grid, block, shared_mem, stream, args)`` and, when that "
     "returns False, ``kernel._launch_slow`` with the same arguments; an error's traceback "
     "goes through ``hide(exc)`` first."},
    {"ndrange", (PyCFunction)(void (*)(void))ndrange, METH_FASTCALL,
     "ndrange(launcher, kernel, hide, empty) -> launch\n\n"
     "``kernel.launch(n)`` in C: ``launch(*args, stream=None, shared_mem=0)`` launches "
     "through ``kernel._last.run`` with the grid and block that ``launcher._config(backend)`` "
     "gave for the specialization's backend (kept until another backend comes), else "
     "``launcher._launch_slow(args, stream, shared_mem)``; nothing when ``empty``."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_dispatch",
    "kernel[grid, block] launches as one C call (optional build: setup.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__dispatch(void)
{
    str_last = PyUnicode_InternFromString("_last");
    str_run = PyUnicode_InternFromString("run");
    str_launch_slow = PyUnicode_InternFromString("_launch_slow");
    str_stream = PyUnicode_InternFromString("stream");
    str_shared_mem = PyUnicode_InternFromString("shared_mem");
    str_backend = PyUnicode_InternFromString("backend");
    str_config = PyUnicode_InternFromString("_config");
    zero = PyLong_FromLong(0);
    if (!str_last || !str_run || !str_launch_slow || !str_stream || !str_shared_mem ||
        !str_backend || !str_config || !zero) {
        return NULL;
    }
    state_type = PyType_FromSpec(&state_spec);
    ndrange_type = PyType_FromSpec(&ndrange_spec);
    if (state_type == NULL || ndrange_type == NULL) {
        return NULL;
    }
    return PyModule_Create(&module);
}
