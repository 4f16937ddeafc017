/* ember.runtime._waitable: the counters of streams and events (ember.runtime.sync.Waitable)
 * as C fields.
 *
 * Every launch adds 1 to its stream's `submitted`, and a compiled launcher (the CUDA stub,
 * backends/cuda/_ccall_launch.c) also reads the stream's handle, `_address`.  In a stream's
 * instance __dict__ that was two dictionary reads, a new int object and a dictionary store
 * on every launch: a quarter of the stub's own time in a launch on the build machine
 * (perf, 1-argument kernel, the driver's call replaced by the tests' probe).  Here they are
 * fields at fixed offsets, which the launcher finds through the capsule `API` (_waitable.h)
 * and reads and adds to directly; Python reads and writes them as before (descriptors:
 * `s.submitted += 1` keeps working, at about the cost of an instance attribute).
 *
 * Optional, like Ember's other C stubs: without it Waitable keeps the counters as class
 * defaults shadowed by instance attributes, and the launcher its __dict__ path.  Stable ABI
 * (one build for 3.10+).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <structmember.h>
#include <stddef.h>

#include "_waitable.h"

static int
core_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(((waitable_core *)self)->address);
    Py_VISIT((PyObject *)Py_TYPE(self)); /* a heap type: its instances keep it */
    return 0;
}

static int
core_clear(PyObject *self)
{
    Py_CLEAR(((waitable_core *)self)->address);
    return 0;
}

static void
core_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    core_clear(self);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type);
}

/* The counters' accessors (`closure`: the field's offset).  Not T_LONGLONG members: their
 * store writes -1 into the field before it checks the conversion, so a failed store (an
 * int out of range, a str) would corrupt the count. */
static PyObject *
get_count(PyObject *self, void *closure)
{
    return PyLong_FromLongLong(*(long long *)((char *)self + (size_t)closure));
}

static int
set_count(PyObject *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "a stream's counters cannot be deleted");
        return -1;
    }
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a stream's counters are ints, not %R",
                     (PyObject *)Py_TYPE(value));
        return -1;
    }
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred()) {
        return -1; /* OverflowError: the field keeps its count */
    }
    *(long long *)((char *)self + (size_t)closure) = v;
    return 0;
}

static PyGetSetDef core_getset[] = {
    {"submitted", get_count, set_count,
     "Pieces of work submitted so far (a launch, a copy, a fill, an event recorded).",
     (void *)offsetof(waitable_core, submitted)},
    {"completed", get_count, set_count,
     "Pieces of work known to be finished (set by a completed wait).",
     (void *)offsetof(waitable_core, completed)},
    {NULL},
};

static PyMemberDef core_members[] = {
    {"_address", T_OBJECT, offsetof(waitable_core, address), 0,
     "The native handle as an int, for compiled launchers; None: none, or closed."},
    {NULL},
};

static PyType_Slot core_slots[] = {
    {Py_tp_doc, (void *)"The counters of a stream or event (the base of "
                        "ember.runtime.sync.Waitable)."},
    {Py_tp_members, core_members},
    {Py_tp_getset, core_getset},
    {Py_tp_traverse, (void *)core_traverse},
    {Py_tp_clear, (void *)core_clear},
    {Py_tp_dealloc, (void *)core_dealloc},
    {0, NULL},
};

static PyType_Spec core_spec = {
    "ember.runtime._waitable.WaitableCore", sizeof(waitable_core), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, core_slots,
};

/* What the capsule points to: kept for the life of the process (the type too). */
static waitable_api api;

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_waitable",
    "The counters of streams and events as C fields (see ember/runtime/_waitable.c).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

/* module.<name> = value; the reference to value is given up, also on failure. */
static int
add(PyObject *m, const char *name, PyObject *value)
{
    if (value == NULL || PyModule_AddObject(m, name, value) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC
PyInit__waitable(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (api.type == NULL) {
        PyObject *type = PyType_FromSpec(&core_spec);
        if (type == NULL) {
            Py_DECREF(m);
            return NULL;
        }
        api.type = (PyTypeObject *)type;
        api.version = WAITABLE_API_VERSION;
    }
    int failed = add(m, "WaitableCore", Py_NewRef((PyObject *)api.type));
    failed |= add(m, "API", PyCapsule_New(&api, WAITABLE_API_NAME, NULL));
    if (failed) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
