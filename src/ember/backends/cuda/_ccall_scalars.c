/* ember.backends.cuda._ccall: the NumPy scalar types whose value the packing reads in place
 * (registered by numpy_scalars; _ccall.h's ccall_pack reads them). */
#include "_ccall.h"

/* NumPy scalar types whose value is read in place, by parameter kind (registered by
 * numpy_scalars(): a NumPy scalar object is a PyObject header followed by its value, which
 * numpy_scalars checks on a sample of each type before trusting it).  Converting one
 * through __float__/__index__ made a Python object per argument: ~9 ns each on the H200
 * host.  Only the exact type of the parameter's kind: anything else converts as before. */
PyObject *ccall_scalar_type[128];
unsigned char ccall_scalar_size[128];

/* numpy_scalars(((type, kind, sample, value_bytes), ...)) -> the kinds registered.  A type
 * is taken only where `sample` (an instance) holds `value_bytes` right after its object
 * header, as the layout read in place needs. */
PyObject *
ccall_numpy_scalars(PyObject *self, PyObject *entries)
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
        PyObject *old = ccall_scalar_type[c];
        ccall_scalar_type[c] = Py_NewRef(type);
        Py_XDECREF(old);
        ccall_scalar_size[c] = (unsigned char)want;
        if (PyList_Append(taken, kind) < 0) {
            Py_CLEAR(taken);
        }
    }
    return taken;
}

