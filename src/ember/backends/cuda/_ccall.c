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
 *
 * The files: this one (the module, its method table and the tests' probes), _ccall_launch.c
 * (the launcher), _ccall_runner.c (a specialization's guarded launch), _ccall_scalars.c (the
 * NumPy scalar types read in place) and _ccall.h (what they share, and the packing).
 */
#include "_ccall.h"

/* ------------------------------------------------------------------ allocation calls */

/* cuMemAllocAsync and cuMemFreeAsync at a given address, for the driver table
 * (cdriver.py): the backend's own allocation path (the allocator's misses, the backend
 * API) calls them once per buffer, and through ctypes each cost ~0.4-0.8 us of argument
 * conversion on the build machine.  The GIL is released: growing a pool may take a while. */
typedef int (*alloc_async_fn)(unsigned long long *, size_t, void *);
typedef int (*free_async_fn)(unsigned long long, void *);

static int
handle_arg(PyObject *value, void **out)
{
    *out = value == Py_None ? NULL : PyLong_AsVoidPtr(value);
    return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
}

/* The entry point (args[0]) and the handle at args[handle] of a call of `expected`
 * arguments; -1 with an exception set when they are not that. */
static int
entry_and_handle(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t expected,
                 Py_ssize_t handle, const char *usage, void **fn, void **out)
{
    if (nargs != expected) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", usage, expected);
        return -1;
    }
    return (handle_arg(args[0], fn) < 0 || handle_arg(args[handle], out) < 0) ? -1 : 0;
}

/* The bindings' result: (status,), or (status, value) where value is not NULL (stolen). */
static PyObject *
status_result(int err, PyObject *value, int with_value)
{
    PyObject *status = PyLong_FromLong(err), *result = NULL;
    if (status != NULL && (!with_value || value != NULL)) {
        result = with_value ? PyTuple_Pack(2, status, value) : PyTuple_Pack(1, status);
    }
    Py_XDECREF(status);
    Py_XDECREF(value);
    return result;
}

static PyObject *
ccall_alloc_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    void *fn, *stream;
    if (entry_and_handle(args, nargs, 3, 2, "alloc_async(entry, nbytes, stream)", &fn,
                         &stream) < 0) {
        return NULL;
    }
    size_t nbytes = PyLong_AsSize_t(args[1]);
    if (nbytes == (size_t)-1 && PyErr_Occurred()) {
        return NULL;
    }
    unsigned long long ptr = 0;
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = ((alloc_async_fn)fn)(&ptr, nbytes, stream);
    Py_END_ALLOW_THREADS
    return status_result(err, PyLong_FromUnsignedLongLong(ptr), 1);
}

static PyObject *
ccall_free_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    void *fn, *stream;
    if (entry_and_handle(args, nargs, 3, 2, "free_async(entry, ptr, stream)", &fn,
                         &stream) < 0) {
        return NULL;
    }
    unsigned long long ptr = PyLong_AsUnsignedLongLong(args[1]);
    if (ptr == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = ((free_async_fn)fn)(ptr, stream);
    Py_END_ALLOW_THREADS
    return status_result(err, NULL, 0);
}

/* The driver's calls of one handle that return only a status (cuStreamSynchronize,
 * cuStreamQuery, cuEventSynchronize, cuEventQuery): what a synchronize costs beyond the
 * wait itself. */
typedef int (*handle_fn)(void *);

static PyObject *
ccall_handle_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    void *fn, *handle;
    if (entry_and_handle(args, nargs, 2, 1, "handle_call(entry, handle)", &fn, &handle) < 0) {
        return NULL;
    }
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = ((handle_fn)fn)(handle);
    Py_END_ALLOW_THREADS
    return status_result(err, NULL, 0);
}

/* ------------------------------------------------------------------ test probes */

/* For the tests (no driver needed): stand-ins for the entry points that record what they
 * were given.  probe_launch has cuLaunchKernelEx's signature, copies the configuration and
 * the first `probe_count` argument slots, and returns `probe_result`.  What it records is
 * the calling thread's (threads launching at once each read back their own launch). */
#if defined(_MSC_VER)
#define PROBE_LOCAL __declspec(thread)
#else
#define PROBE_LOCAL _Thread_local
#endif
static PROBE_LOCAL void *recorded[4];
static PROBE_LOCAL launch_config recorded_config;
static PROBE_LOCAL unsigned long long recorded_slots[16];
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
    {"launcher", (PyCFunction)(void (*)(void))ccall_make_launcher, METH_FASTCALL,
     "launcher(entry, function, kinds, default_stream, devices, slow, failed) -> launch\n\n"
     "A kernel's whole launch in C: launch(grid, block, args, shared_mem=0, stream=None) "
     "packs and calls as ``launch`` does, on ``stream`` (None: ``default_stream``), adds 1 "
     "to the stream's ``submitted``, calls ``failed(err, grid, block, shared_mem, stream, "
     "args)`` when the driver refuses, and hands anything it cannot pack (or a closed "
     "stream, or several devices in use: ``devices.opened > 1``) to ``slow(grid, block, "
     "args, shared_mem, stream)``."},
    {"runner", (PyCFunction)(void (*)(void))ccall_make_runner, METH_FASTCALL,
     "runner(launch, guards, sources, view, note) -> run\n\n"
     "A specialization's guarded launch in C: run(grid, block, shared_mem, stream, args) "
     "launches through ``launch`` (a launcher() of this module) when each argument passes its "
     "guard ((kind, type or constant, token), kinds 0: type, 1: array with a launch view "
     "whose first item is the token or in a frozenset of tokens, 2: compile-time constant) "
     "and returns True, else returns False.  ``sources``: two bytes per launch value, the "
     "argument and 0 (the argument itself) or 1 + the item of its view.  ``view(a)`` makes a "
     "missing view; ``note(args, stream)`` runs after a launch on a given stream."},
    {"alloc_async", (PyCFunction)(void (*)(void))ccall_alloc_async, METH_FASTCALL,
     "alloc_async(entry, nbytes, stream) -> (status, pointer)\n\n"
     "Call the cuMemAllocAsync at address ``entry`` (GIL released)."},
    {"free_async", (PyCFunction)(void (*)(void))ccall_free_async, METH_FASTCALL,
     "free_async(entry, pointer, stream) -> (status,)\n\n"
     "Call the cuMemFreeAsync at address ``entry`` (GIL released)."},
    {"handle_call", (PyCFunction)(void (*)(void))ccall_handle_call, METH_FASTCALL,
     "handle_call(entry, handle) -> (status,)\n\n"
     "Call the driver function ``int f(void *handle)`` at address ``entry`` (GIL released)."},
    {"numpy_scalars", ccall_numpy_scalars, METH_O,
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
    if (ccall_launch_init() < 0 || ccall_runner_init() < 0) {
        return NULL;
    }
    return PyModule_Create(&module);
}
