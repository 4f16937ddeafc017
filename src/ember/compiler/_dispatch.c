/* ember.compiler._dispatch: `kernel[grid, block]` as a C callable.
 *
 * The Python form (ember.compiler.launchers.make_launcher) is a closure:
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
 * and the kernel's `_launch_slow` are called as they are).  `kernel.launch(n)`'s call
 * (NDRangeLauncher.__call__) is the same callable with the grid and block the launcher's
 * _config gives per backend.
 *
 * Optional: setup.py builds it where a C compiler exists, and Ember keeps the closure where it
 * is missing.  Written against the stable ABI (one build for Python 3.10+).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>

#include "../_slots.h"

/* A runner's C entry (a backend's compiled `run`: its `self`'s type has the capsule
 * `__ember_flat__` named "ember.flat_run"): run(grid, block, shared_mem, stream, args)
 * with cfg = those four and the arguments as the caller passed them, no tuple made.  1
 * launched, 0 the arguments do not fit, -1 an error is set. */
typedef int (*flat_fn)(PyObject *self, PyObject *const *cfg, PyObject *const *args,
                       Py_ssize_t n);

/* One launch configuration: kernel[grid, block] (`launcher` NULL: grid, block, stream and
 * shared_mem fixed) or kernel.launch(n) (`launcher` the Python NDRangeLauncher: the grid
 * and block kept for the backend `be`, stream None and shared_mem 0 by default). */
typedef struct {
    PyObject_HEAD
    PyObject *kernel;     /* its `_last.run` (and `_launch_slow`) are called */
    PyObject *hide;       /* hide_internal_frames(exc) */
    PyObject *grid, *block;
    PyObject *stream;     /* the default stream argument (None: the default stream) */
    PyObject *shared_mem; /* the default dynamic shared memory in bytes */
    PyObject *launcher;   /* kernel.launch(n): its _config(backend), _launch_slow(...) */
    PyObject *be;         /* kernel.launch(n): the backend `grid` and `block` are for */
    int empty;            /* kernel.launch(n) of zero threads: nothing to launch */
    int dict_last;        /* kernel._last is read from the instance's __dict__ (its class
                             has no attribute of that name) */
    PyObject *last_slot;  /* else, where the class's `_last` is a slot: its descriptor, */
    descrgetfunc last_get; /* whose __get__ reads it without the attribute lookup */
    Py_ssize_t last_offset; /* and its offset, read in place (ember/_slots.h; 0: none) */
    /* The specialization last seen at kernel._last, its `run` and what was read of it once
     * (a specialization's run and backend never change once it is built): */
    PyObject *spec, *run, *spec_be;
    flat_fn flat;         /* run's C entry, where its type exports one (else NULL) */
    PyObject *flat_self;  /* what `flat` takes as its first argument */
} launch_state;

static PyObject *str_last, *str_run, *str_launch_slow, *str_stream, *str_shared_mem;
static PyObject *str_backend, *str_config, *str_flat, *zero, *state_type;

static int
state_traverse(PyObject *self, visitproc visit, void *arg)
{
    launch_state *st = (launch_state *)self;
    Py_VISIT(st->kernel);
    Py_VISIT(st->hide);
    Py_VISIT(st->grid);
    Py_VISIT(st->block);
    Py_VISIT(st->stream);
    Py_VISIT(st->shared_mem);
    Py_VISIT(st->launcher);
    Py_VISIT(st->be);
    Py_VISIT(st->spec);
    Py_VISIT(st->run);
    Py_VISIT(st->spec_be);
    Py_VISIT(st->flat_self);
    Py_VISIT(st->last_slot);
    Py_VISIT((PyObject *)Py_TYPE(self)); /* a heap type: its instances keep it */
    return 0;
}

static int
state_clear(PyObject *self)
{
    launch_state *st = (launch_state *)self;
    Py_CLEAR(st->kernel);
    Py_CLEAR(st->hide);
    Py_CLEAR(st->grid);
    Py_CLEAR(st->block);
    Py_CLEAR(st->stream);
    Py_CLEAR(st->shared_mem);
    Py_CLEAR(st->launcher);
    Py_CLEAR(st->be);
    Py_CLEAR(st->spec);
    Py_CLEAR(st->run);
    Py_CLEAR(st->spec_be);
    Py_CLEAR(st->flat_self);
    Py_CLEAR(st->last_slot);
    st->flat = NULL;
    st->last_get = NULL;
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
    "ember.compiler._dispatch.LaunchConfig", sizeof(launch_state), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, state_slots,
};

/* *slot = value (a new reference), the old one released after. */
static void
replace(PyObject **slot, PyObject *value)
{
    PyObject *old = *slot;
    *slot = Py_NewRef(value);
    Py_XDECREF(old);
}

/* *slot = value (a reference the caller gives up), the old one released after. */
static void
steal(PyObject **slot, PyObject *value)
{
    PyObject *old = *slot;
    *slot = value;
    Py_XDECREF(old);
}

/* A tuple of the `n` objects at `items`, or NULL with an error set. */
static PyObject *
tuple_of(PyObject *const *items, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++) {
        PyTuple_SetItem(t, i, Py_NewRef(items[i]));
    }
    return t;
}

/* kernel.launch(n): the grid and block for the specialization's backend `be` (kept until
 * another backend comes; _config computes them).  0, or -1 with an error set. */
static int
ndrange_config(launch_state *st, PyObject *be)
{
    if (be == st->be) {
        return 0;
    }
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
    return 0;
}

/* Read specialization `spec` (the kernel's new _last) into the state: its run, its backend
 * for kernel.launch(n), and run's C entry where it has one.  0, or -1 with an error set. */
static int
take_spec(launch_state *st, PyObject *spec)
{
    PyObject *run = PyObject_GetAttr(spec, str_run);
    PyObject *be = run == NULL || st->launcher == NULL ? NULL : PyObject_GetAttr(spec, str_backend);
    if (run == NULL || (st->launcher != NULL && be == NULL)) {
        Py_XDECREF(run);
        return -1;
    }
    flat_fn flat = NULL;
    PyObject *self = PyCFunction_Check(run) ? PyCFunction_GetSelf(run) : NULL;
    if (self != NULL) {
        PyObject *capsule = PyObject_GetAttr((PyObject *)Py_TYPE(self), str_flat);
        if (capsule != NULL && PyCapsule_IsValid(capsule, "ember.flat_run")) {
            flat = (flat_fn)PyCapsule_GetPointer(capsule, "ember.flat_run");
        }
        Py_XDECREF(capsule);
        PyErr_Clear(); /* no capsule: run is called as a Python callable */
    }
    replace(&st->spec, spec);
    steal(&st->run, run);
    steal(&st->spec_be, be);
    steal(&st->flat_self, flat == NULL ? NULL : Py_NewRef(self));
    st->flat = flat;
    return 0;
}

/* kernel._last (a new reference, or NULL with an error set): read in place where the
 * class's slot has a known offset (a Kernel), else through that slot's descriptor (also
 * where the slot is unset: it raises the AttributeError), from the instance's __dict__
 * where the class has no attribute of that name, else the generic lookup (all checked
 * when the state is made). */
static PyObject *
last_spec(launch_state *st)
{
    PyObject *kernel = st->kernel;
    PyObject *spec = st->last_offset > 0 ? slot_read(kernel, st->last_offset) : NULL;
    if (spec != NULL) {
        return Py_NewRef(spec);
    }
    if (st->last_get != NULL) {
        return st->last_get(st->last_slot, kernel, (PyObject *)Py_TYPE(kernel));
    }
    if (!st->dict_last) {
        return PyObject_GetAttr(kernel, str_last);
    }
    PyObject *dict = PyObject_GenericGetDict(kernel, NULL);
    if (dict == NULL) {
        PyErr_Clear();
        return PyObject_GetAttr(kernel, str_last);
    }
    spec = PyDict_GetItemWithError(dict, str_last);
    Py_DECREF(dict);
    if (spec != NULL) {
        return Py_NewRef(spec);
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyObject_GetAttr(kernel, str_last);
}

/* The specialization used last, if the arguments fit it: 1 launched, 0 not, -1 error.
 * `argv` are the kernel's `n` arguments; `*args` their tuple, made here when needed. */
static int
fast_launch(launch_state *st, PyObject *const *argv, Py_ssize_t n, PyObject **args,
            PyObject *stream, PyObject *shared_mem)
{
    PyObject *spec = last_spec(st);
    if (spec == NULL) {
        return -1;
    }
    int ok = spec == st->spec ? 0 : take_spec(st, spec);
    Py_DECREF(spec); /* the state holds it */
    if (ok < 0) {
        return -1;
    }
    if (st->launcher != NULL) { /* kernel.launch(n): no backend yet, or its configuration */
        PyObject *be = st->spec_be;
        if (be == Py_None) {
            return 0;
        }
        if (ndrange_config(st, be) < 0) {
            return -1;
        }
    }
    /* run may run Python code that replaces the state's grid, block and run */
    PyObject *grid = Py_NewRef(st->grid), *block = Py_NewRef(st->block);
    int launched = -1;
    if (st->flat != NULL) {
        PyObject *self = Py_NewRef(st->flat_self);
        PyObject *cfg[4] = {grid, block, shared_mem, stream};
        launched = st->flat(self, cfg, argv, n);
        Py_DECREF(self);
    } else if (*args != NULL || (*args = tuple_of(argv, n)) != NULL) {
        PyObject *run = Py_NewRef(st->run);
        PyObject *done = PyObject_CallFunctionObjArgs(run, grid, block, shared_mem, stream,
                                                      *args, NULL);
        Py_DECREF(run);
        if (done != NULL) {
            launched = PyObject_IsTrue(done);
            Py_DECREF(done);
        }
    }
    Py_DECREF(grid);
    Py_DECREF(block);
    return launched;
}

/* The launch, then the slow path where the fast one did not take the arguments.  A new
 * reference (None), or NULL with an error set. */
static PyObject *
launch(launch_state *st, PyObject *const *argv, Py_ssize_t n, PyObject *stream,
       PyObject *shared_mem)
{
    PyObject *args = NULL, *result = NULL;
    int launched = fast_launch(st, argv, n, &args, stream, shared_mem);
    if (launched != 0) {
        Py_XDECREF(args);
        return launched < 0 ? NULL : Py_NewRef(Py_None);
    }
    if (args == NULL && (args = tuple_of(argv, n)) == NULL) {
        return NULL;
    }
    if (st->launcher != NULL) {
        result = PyObject_CallMethodObjArgs(st->launcher, str_launch_slow, args, stream,
                                            shared_mem, NULL);
    } else {
        PyObject *slow = PyObject_GetAttr(st->kernel, str_launch_slow);
        if (slow != NULL) {
            result = PyObject_CallFunctionObjArgs(slow, st->grid, st->block, shared_mem,
                                                  stream, args, NULL);
            Py_DECREF(slow);
        }
    }
    Py_DECREF(args);
    return result;
}

/* A user error's traceback without Ember's frames (ember.tracebacks), as the Python
 * forms' `except` clauses do; the error stays set. */
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
state_call(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
    launch_state *st = (launch_state *)self;
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
    if (st->empty) {
        Py_RETURN_NONE; /* nothing to do for zero threads */
    }
    PyObject *result = launch(st, argv, nargs, stream, shared_mem);
    if (result == NULL) {
        hide_frames(st->hide);
    }
    return result;
}

static PyMethodDef configured_def = {
    "launch", (PyCFunction)(void (*)(void))state_call, METH_FASTCALL | METH_KEYWORDS,
    "launch(*args, stream=..., shared_mem=...)\n\nLaunch the kernel with this configuration.",
};

static PyMethodDef ndrange_def = {
    "launch", (PyCFunction)(void (*)(void))state_call, METH_FASTCALL | METH_KEYWORDS,
    "launch(*args, stream=None, shared_mem=0)\n\nLaunch the kernel over its threads.",
};

/* A launch callable over a new state: `fields` are its kernel, hide, grid, block, stream,
 * shared_mem and launcher (NULL: None for grid and block, no launcher). */
static PyObject *
make(PyMethodDef *def, PyObject *const fields[7], int empty)
{
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)state_type, Py_tp_alloc);
    launch_state *st = (launch_state *)alloc((PyTypeObject *)state_type, 0);
    if (st == NULL) {
        return NULL;
    }
    PyObject **slots[7] = {&st->kernel, &st->hide, &st->grid, &st->block, &st->stream,
                           &st->shared_mem, &st->launcher};
    for (int i = 0; i < 7; i++) {
        *slots[i] = fields[i] == NULL ? NULL : Py_NewRef(fields[i]);
    }
    st->be = st->spec = st->run = st->spec_be = st->flat_self = st->last_slot = NULL;
    st->flat = NULL;
    st->last_get = NULL;
    st->last_offset = 0;
    st->empty = empty;
    PyObject *on_class = PyObject_GetAttr((PyObject *)Py_TYPE(st->kernel), str_last);
    st->dict_last = on_class == NULL;
    PyErr_Clear();
    /* a data descriptor (Kernel's slot): no instance attribute can shadow it, so its
     * __get__ is what the attribute read would call */
    if (on_class != NULL && PyType_GetSlot(Py_TYPE(on_class), Py_tp_descr_set) != NULL) {
        st->last_get = (descrgetfunc)PyType_GetSlot(Py_TYPE(on_class), Py_tp_descr_get);
    }
    if (st->last_get != NULL) {
        st->last_slot = on_class;
        st->last_offset = slot_offset(on_class, "_last");
    } else {
        Py_XDECREF(on_class);
    }
    PyObject *fn = PyCFunction_NewEx(def, (PyObject *)st, NULL);
    Py_DECREF(st);
    return fn;
}

static PyObject *
configured(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "configured(kernel, grid, block, stream, shared_mem, "
                     "hide) takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *const fields[7] = {args[0], args[5], args[1], args[2], args[3], args[4], NULL};
    return make(&configured_def, fields, 0);
}

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
    PyObject *const fields[7] = {args[1], args[2], Py_None, Py_None, Py_None, zero, args[0]};
    return make(&ndrange_def, fields, empty);
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
    "kernel[grid, block] and kernel.launch(n) launches as one C call (optional build: "
    "setup.py).",
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
    str_flat = PyUnicode_InternFromString("__ember_flat__");
    zero = PyLong_FromLong(0);
    if (!str_last || !str_run || !str_launch_slow || !str_stream || !str_shared_mem ||
        !str_backend || !str_config || !str_flat || !zero) {
        return NULL;
    }
    state_type = PyType_FromSpec(&state_spec);
    if (state_type == NULL) {
        return NULL;
    }
    return PyModule_Create(&module);
}
