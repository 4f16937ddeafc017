/* ember.array._core: the fields of ember.ndarray, fixed once set.
 *
 * An array's shape, strides, dtype, offset, buffer and backend describe one view of device
 * memory, and what is derived from them is cached on the array (`_c`: C-strided or not;
 * `_lv`: what a kernel launch reads, which the launch runners also remember by identity).
 * With plain `__slots__`, `a.shape = (2, 5)` was accepted and changed none of those: a
 * later op could read the wrong elements, silently.  Here each of those six fields can be
 * set once (when the array is made, by its constructor or the fast paths that fill a bare
 * `object.__new__(ndarray)`), and setting or deleting it again raises AttributeError saying
 * what to do instead.  The caches `_c` and `_lv` stay writable.
 *
 * Reads cost what a slot's read costs: the fields are member descriptors, which CPython's
 * specializing interpreter reads inline.  Only stores come here (tp_setattro): the known
 * names are told apart by pointer (attribute names in code are interned) and stored
 * directly, which is about what the generic store of a slot costs.
 *
 * Optional, like Ember's other C stubs: without it, ember.array.ndarray defines the same
 * fields as plain slots (and the guard is missing).  Stable ABI (one build for 3.10+).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <structmember.h>
#include <stddef.h>

/* The fields, in the order FIELDS lists them and make()/fill() take them; the first N_FIXED
 * are set once. */
enum { BUFFER, SHAPE, STRIDES, DTYPE, BACKEND, OFFSET, C_STRIDED, LAUNCH_VIEW, N_FIELDS };
#define N_FIXED 6

typedef struct {
    PyObject_HEAD
    PyObject *field[N_FIELDS];
    PyObject *weaklist;
} core;

static const char *const names[N_FIELDS] = {
    "buffer", "shape", "strides", "dtype", "backend", "offset", "_c", "_lv",
};

/* What to do instead of setting the field again (the error's second half). */
#define ANOTHER "make another array instead (indexing makes views; a.copy() or ember.asarray copy)"
static const char *const instead[N_FIXED] = {
    ANOTHER,
    "use a.reshape(shape), which makes a view where the strides allow, or ember.reshape",
    "views with other strides come from indexing, a.T, ember.swapaxes or ember.broadcast_to",
    "use a.view(dtype) to reinterpret the bytes, or a.astype(dtype) to convert the values",
    "move it with a.to_device(device) or ember.asarray(a, device=device)",
    ANOTHER,
};
#undef ANOTHER

static PyObject *interned[N_FIELDS];

static int
core_traverse(PyObject *self, visitproc visit, void *arg)
{
    core *c = (core *)self;
    for (int i = 0; i < N_FIELDS; i++)
        Py_VISIT(c->field[i]);
    Py_VISIT((PyObject *)Py_TYPE(self)); /* a heap type: its instances keep it */
    return 0;
}

static int
core_clear(PyObject *self)
{
    core *c = (core *)self;
    for (int i = 0; i < N_FIELDS; i++)
        Py_CLEAR(c->field[i]);
    return 0;
}

static void
core_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (((core *)self)->weaklist != NULL)
        PyObject_ClearWeakRefs(self);
    core_clear(self);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type);
}

/* The field `name` is, or -1: by pointer first, then (a name made at run time) by value. */
static int
field_index(PyObject *name)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (name == interned[i])
            return i;
    if (!PyUnicode_Check(name))
        return -1;
    for (int i = 0; i < N_FIELDS; i++)
        if (PyUnicode_CompareWithASCIIString(name, names[i]) == 0)
            return i;
    return -1;
}

static int
core_setattro(PyObject *self, PyObject *name, PyObject *value)
{
    int i = field_index(name);
    if (i < 0)
        return PyObject_GenericSetAttr(self, name, value);
    PyObject **slot = &((core *)self)->field[i];
    if (i < N_FIXED && *slot != NULL) {
        PyErr_Format(PyExc_AttributeError,
                     "%s the %s of an ember.ndarray: it is fixed once the array is made, and "
                     "the array's cached launch data derive from it; %s",
                     value == NULL ? "cannot delete" : "cannot set", names[i], instead[i]);
        return -1;
    }
    if (value == NULL) {
        if (*slot == NULL) {
            PyErr_SetObject(PyExc_AttributeError, name);
            return -1;
        }
        Py_CLEAR(*slot);
        return 0;
    }
    PyObject *old = *slot;
    Py_INCREF(value);
    *slot = value;
    Py_XDECREF(old);
    return 0;
}

static PyMemberDef core_members[] = {
    {"shape", T_OBJECT_EX, offsetof(core, field) + SHAPE * sizeof(PyObject *), 0,
     "The length of each axis (a tuple of ints)."},
    {"strides", T_OBJECT_EX, offsetof(core, field) + STRIDES * sizeof(PyObject *), 0,
     "The step in bytes along each axis (a tuple of ints; may be negative or 0)."},
    {"dtype", T_OBJECT_EX, offsetof(core, field) + DTYPE * sizeof(PyObject *), 0,
     "The element type (an ember.DType)."},
    {"buffer", T_OBJECT_EX, offsetof(core, field) + BUFFER * sizeof(PyObject *), 0,
     "The device buffer holding the elements (kept alive by the array)."},
    {"offset", T_OBJECT_EX, offsetof(core, field) + OFFSET * sizeof(PyObject *), 0,
     "Where the first element starts in the buffer, in bytes."},
    {"backend", T_OBJECT_EX, offsetof(core, field) + BACKEND * sizeof(PyObject *), 0,
     "The backend whose device holds the buffer."},
    {"_c", T_OBJECT_EX, offsetof(core, field) + C_STRIDED * sizeof(PyObject *), 0, NULL},
    {"_lv", T_OBJECT_EX, offsetof(core, field) + LAUNCH_VIEW * sizeof(PyObject *), 0, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(core, weaklist), READONLY, NULL},
    {NULL},
};

static PyType_Slot core_slots[] = {
    {Py_tp_doc, (void *)"The fields of an ember.ndarray (its base class); see ember.ndarray."},
    {Py_tp_members, core_members},
    {Py_tp_setattro, (void *)core_setattro},
    {Py_tp_traverse, (void *)core_traverse},
    {Py_tp_clear, (void *)core_clear},
    {Py_tp_dealloc, (void *)core_dealloc},
    {0, NULL},
};

static PyType_Spec core_spec = {
    "ember.array._core.ArrayCore", sizeof(core), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, core_slots,
};

static PyObject *core_type;

/* The fields from args (buffer, shape, strides, dtype, backend, offset, c: the fields'
 * order) and `_lv` None, into an array none of whose fixed fields is set yet (0), or -1 with
 * an error set. */
static int
set_fields(core *c, PyObject *const *args)
{
    for (int i = 0; i < N_FIXED; i++)
        if (c->field[i] != NULL) {
            PyErr_SetString(PyExc_AttributeError,
                            "ember.ndarray.__init__ on an array already made: its fields are "
                            "fixed once set; make a new array instead");
            return -1;
        }
    for (int i = 0; i < N_FIELDS; i++) {
        PyObject *old = c->field[i];
        c->field[i] = Py_NewRef(i == LAUNCH_VIEW ? Py_None : args[i]);
        Py_XDECREF(old);
    }
    return 0;
}

/* make()'s and fill()'s arguments: `n` of them (the array or its class, then the fields but
 * `_lv`), the first's class (`cls` itself for make) ember.ndarray's.  1, or 0 with an error. */
static int
arguments_fit(PyObject *const *args, Py_ssize_t n, const char *what, int is_class)
{
    if (n != LAUNCH_VIEW + 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d arguments (%zd given)", what,
                     LAUNCH_VIEW + 1, n);
        return 0;
    }
    PyObject *cls = is_class ? args[0] : (PyObject *)Py_TYPE(args[0]);
    if (PyType_Check(cls) && PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)core_type))
        return 1;
    PyErr_SetString(PyExc_TypeError, "expected ember.ndarray (a subclass of ArrayCore)");
    return 0;
}

/* make(cls, buffer, shape, strides, dtype, backend, offset, c): a new `cls` (ember.ndarray)
 * with those fields and `_lv` None, without its __init__ (whose checks the caller has made):
 * the fast paths' outputs, one call instead of eight stores. */
static PyObject *
make(PyObject *module, PyObject *const *args, Py_ssize_t n)
{
    (void)module;
    if (!arguments_fit(args, n, "make", 1))
        return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)args[0], Py_tp_alloc);
    PyObject *out = alloc((PyTypeObject *)args[0], 0);
    if (out != NULL && set_fields((core *)out, args + 1) < 0)
        Py_CLEAR(out);
    return out;
}

/* fill(array, buffer, shape, strides, dtype, backend, offset, c): ndarray.__init__'s stores
 * in one call; refused where the array's fields are set already. */
static PyObject *
fill(PyObject *module, PyObject *const *args, Py_ssize_t n)
{
    (void)module;
    if (!arguments_fit(args, n, "fill", 0) || set_fields((core *)args[0], args + 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef functions[] = {
    {"make", (PyCFunction)(void (*)(void))make, METH_FASTCALL,
     "make(cls, buffer, shape, strides, dtype, backend, offset, c): a new array of class "
     "cls with those fields, its __init__ skipped (the caller has checked them)."},
    {"fill", (PyCFunction)(void (*)(void))fill, METH_FASTCALL,
     "fill(array, buffer, shape, strides, dtype, backend, offset, c): set a new array's "
     "fields (ndarray.__init__); refused where they are set already."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_core",
    "The fields of ember.ndarray, fixed once set (see ember/array/_core.c).", -1, functions,
    NULL, NULL, NULL, NULL,
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
PyInit__core(void)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (interned[i] == NULL && (interned[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (core_type == NULL && (core_type = PyType_FromSpec(&core_spec)) == NULL)
        goto fail; /* core_type: kept for make()'s check for the life of the process */
    PyObject *fields = PyTuple_New(N_FIELDS);
    if (fields != NULL)
        for (int i = 0; i < N_FIELDS; i++)
            PyTuple_SetItem(fields, i, Py_NewRef(interned[i])); /* in range: cannot fail */
    PyObject *fixed = fields == NULL ? NULL : PyTuple_GetSlice(fields, 0, N_FIXED);
    int failed = add(m, "ArrayCore", Py_NewRef(core_type));
    failed |= add(m, "FIELDS", fields);
    failed |= add(m, "FIXED", fixed);
    if (!failed)
        return m;
fail:
    Py_DECREF(m);
    return NULL;
}
