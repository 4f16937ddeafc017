/* ember.runtime._pool: the caching allocator's hit path in C.
 *
 * ember.runtime.allocator keeps its design and its slow paths in Python; this module gives
 * it the three objects on the path of every allocation and every free:
 *
 *   Block         a pool block (the Python class's slots, as C members);
 *   PooledBuffer  the buffer an array holds; when it dies its block goes back to its pool's
 *                 free list from C (Python: a __del__ frame on every free);
 *   PoolCore      the base of allocator.Pool: the fields the hit path reads
 *                 (_free, _idle, misses, _default, passthrough, _hits);
 *
 * and `allocate`, which is ember.runtime.memory.allocate: the hit path (a block of the
 * request's class idle on the stream) in C, everything else (a miss, an `ember.cached`
 * scope, the driver allocator, keywords) through the Python function configure() gives.
 *
 * Issue 19's target is `ember.empty` + free at 0.65x the driver's cuMemAllocAsync + free;
 * the Python hit path and __del__ were 0.9x on an H100.
 *
 * Optional: setup.py builds it where a C compiler exists, and the allocator keeps its Python
 * classes where it is missing.  Stable ABI (one build for Python 3.10+).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <stddef.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *raw;       /* the backend's Buffer */
    PyObject *handle;    /* raw.handle, read by every allocation of the block */
    PyObject *size;      /* its size class (int) */
    PyObject *stream;    /* the stream it was last used on */
    PyObject *home;      /* where it was allocated */
    PyObject *pool;
    PyObject *last_used; /* the pool's miss count when it was last freed */
    PyObject *used;      /* None, or the other streams it was used on (note_uses) */
} block_object;

typedef struct {
    PyObject_HEAD
    PyObject *handle;
    PyObject *nbytes;
    PyObject *block; /* None once closed */
    PyObject *owner; /* the Pool, or the AllocCache it came from */
    PyObject *weakrefs;
} buffer_object;

typedef struct {
    PyObject_HEAD
    PyObject *free;        /* {size: {stream: [Block]}} */
    PyObject *idle;        /* the classes that may have idle blocks (a set) */
    PyObject *misses;      /* int: the pool's clock */
    PyObject *deflt;       /* the default stream */
    PyObject *passthrough; /* bool: EMBER_ALLOCATOR=driver */
    PyObject *hits;        /* an itertools.count */
} core_object;

static PyTypeObject *block_type, *buffer_type, *core_type;
/* Set by configure(): allocator.Pool (exactly: subclasses keep their own give_back). */
static PyObject *pool_class;
static PyObject *str_handle, *str_give_back;

/* *slot = value (a new reference), the old one released after. */
static void
replace(PyObject **slot, PyObject *value)
{
    PyObject *old = *slot;
    *slot = Py_NewRef(value);
    Py_XDECREF(old);
}

/* ------------------------------------------------------------------ Block */

static PyObject *
block_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *raw, *size, *stream, *pool;
    if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "Block(raw, size, stream, pool) takes no keywords");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "Block", 4, 4, &raw, &size, &stream, &pool)) {
        return NULL;
    }
    PyObject *handle = PyObject_GetAttr(raw, str_handle);
    if (handle == NULL) {
        return NULL;
    }
    PyObject *last_used = PyFloat_FromDouble(0.0);
    if (last_used == NULL) {
        Py_DECREF(handle);
        return NULL;
    }
    block_object *b = (block_object *)((allocfunc)PyType_GetSlot(type, Py_tp_alloc))(type, 0);
    if (b == NULL) {
        Py_DECREF(handle);
        Py_DECREF(last_used);
        return NULL;
    }
    b->raw = Py_NewRef(raw);
    b->handle = handle;
    b->size = Py_NewRef(size);
    b->stream = Py_NewRef(stream);
    b->home = Py_NewRef(stream);
    b->pool = Py_NewRef(pool);
    b->last_used = last_used;
    b->used = Py_NewRef(Py_None);
    return (PyObject *)b;
}

static int
block_traverse(PyObject *self, visitproc visit, void *arg)
{
    block_object *b = (block_object *)self;
    Py_VISIT(b->raw);
    Py_VISIT(b->handle);
    Py_VISIT(b->size);
    Py_VISIT(b->stream);
    Py_VISIT(b->home);
    Py_VISIT(b->pool);
    Py_VISIT(b->last_used);
    Py_VISIT(b->used);
    Py_VISIT((PyObject *)Py_TYPE(self)); /* a heap type: its instances keep it */
    return 0;
}

static int
block_clear(PyObject *self)
{
    block_object *b = (block_object *)self;
    Py_CLEAR(b->raw);
    Py_CLEAR(b->handle);
    Py_CLEAR(b->size);
    Py_CLEAR(b->stream);
    Py_CLEAR(b->home);
    Py_CLEAR(b->pool);
    Py_CLEAR(b->last_used);
    Py_CLEAR(b->used);
    return 0;
}

static void
gc_dealloc(PyObject *self, inquiry clear)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    clear(self);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type);
}

static void
block_dealloc(PyObject *self)
{
    gc_dealloc(self, block_clear);
}

#define MEMBER(name, type, field) {name, T_OBJECT_EX, offsetof(type, field), 0, NULL}

static PyMemberDef block_members[] = {
    MEMBER("raw", block_object, raw),
    MEMBER("handle", block_object, handle),
    MEMBER("size", block_object, size),
    MEMBER("stream", block_object, stream),
    MEMBER("home", block_object, home),
    MEMBER("pool", block_object, pool),
    MEMBER("last_used", block_object, last_used),
    MEMBER("used", block_object, used),
    {NULL},
};

static PyType_Slot block_slots[] = {
    {Py_tp_doc, "A raw backend buffer owned by the pool, with the stream it was last used on: "
                "Block(raw, size, stream, pool)."},
    {Py_tp_new, (void *)block_new},
    {Py_tp_traverse, (void *)block_traverse},
    {Py_tp_clear, (void *)block_clear},
    {Py_tp_dealloc, (void *)block_dealloc},
    {Py_tp_members, block_members},
    {0, NULL},
};

static PyType_Spec block_spec = {
    "ember.runtime.allocator.Block", sizeof(block_object), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, block_slots,
};

/* ------------------------------------------------------------------ PooledBuffer */

/* A new PooledBuffer of `block` (a new reference, stolen) for `nbytes`, owned by `owner`. */
static PyObject *
make_buffer(PyObject *block, PyObject *nbytes, PyObject *owner)
{
    PyObject *handle;
    if (Py_TYPE(block) == block_type && ((block_object *)block)->handle != NULL) {
        handle = Py_NewRef(((block_object *)block)->handle);
    } else if ((handle = PyObject_GetAttr(block, str_handle)) == NULL) {
        Py_DECREF(block);
        return NULL;
    }
    buffer_object *buf = PyObject_New(buffer_object, buffer_type);
    if (buf == NULL) {
        Py_DECREF(block);
        Py_DECREF(handle);
        return NULL;
    }
    buf->handle = handle;
    buf->nbytes = Py_NewRef(nbytes);
    buf->block = block;
    buf->owner = Py_NewRef(owner);
    buf->weakrefs = NULL;
    return (PyObject *)buf;
}

static PyObject *
buffer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *block, *nbytes, *owner;
    if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "PooledBuffer(block, nbytes, owner) takes no keywords");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "PooledBuffer", 3, 3, &block, &nbytes, &owner)) {
        return NULL;
    }
    return make_buffer(Py_NewRef(block), nbytes, owner);
}

/* Give `block` back to `owner`: to a Pool's free list here (Pool.give_back's common case:
 * no other stream used the block and its list exists), else through owner.give_back.
 * 0, or -1 with an error set. */
static int
give_back(PyObject *owner, PyObject *block)
{
    if (Py_TYPE(owner) == (PyTypeObject *)pool_class && Py_TYPE(block) == block_type) {
        core_object *pool = (core_object *)owner;
        block_object *b = (block_object *)block;
        int unused = b->used == Py_None ||
                     (b->used != NULL && PyList_Check(b->used) && PyList_Size(b->used) == 0);
        if (unused && pool->free != NULL && pool->idle != NULL && pool->misses != NULL &&
            b->size != NULL && b->stream != NULL) {
            PyObject *streams = PyDict_GetItemWithError(pool->free, b->size);
            PyObject *blocks = NULL;
            if (streams != NULL && PyDict_Check(streams)) {
                blocks = PyDict_GetItemWithError(streams, b->stream);
            }
            if (PyErr_Occurred()) {
                return -1;
            }
            if (blocks != NULL && PyList_Check(blocks)) {
                replace(&b->last_used, pool->misses);
                if (PyList_Append(blocks, block) < 0) {
                    return -1;
                }
                return PySet_Add(pool->idle, b->size);
            }
        }
    }
    PyObject *done = PyObject_CallMethodObjArgs(owner, str_give_back, block, NULL);
    if (done == NULL) {
        return -1;
    }
    Py_DECREF(done);
    return 0;
}

static PyObject *
buffer_close(PyObject *self, PyObject *unused)
{
    buffer_object *buf = (buffer_object *)self;
    PyObject *block = buf->block;
    buf->block = Py_NewRef(Py_None);
    if (block != NULL && block != Py_None) {
        int failed = give_back(buf->owner, block);
        Py_DECREF(block);
        if (failed) {
            return NULL;
        }
    } else {
        Py_XDECREF(block);
    }
    Py_RETURN_NONE;
}

static void
buffer_dealloc(PyObject *self)
{
    buffer_object *buf = (buffer_object *)self;
    PyTypeObject *type = Py_TYPE(self);
    if (buf->weakrefs != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    PyObject *block = buf->block;
    buf->block = NULL;
    if (block != NULL && block != Py_None && buf->owner != NULL) {
        /* A dealloc may run while an exception is being raised: keep it. */
        PyObject *type_, *value, *tb;
        PyErr_Fetch(&type_, &value, &tb);
        if (give_back(buf->owner, block) < 0) {
            PyErr_WriteUnraisable(buf->owner);
        }
        PyErr_Restore(type_, value, tb);
    }
    Py_XDECREF(block);
    Py_CLEAR(buf->handle);
    Py_CLEAR(buf->nbytes);
    Py_CLEAR(buf->owner);
    ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type);
}

static PyObject *
buffer_repr(PyObject *self)
{
    buffer_object *buf = (buffer_object *)self;
    int open = buf->block != NULL && buf->block != Py_None;
    return PyUnicode_FromFormat("<PooledBuffer %S bytes (%s)>", buf->nbytes,
                                open ? "open" : "closed");
}

static PyMethodDef buffer_methods[] = {
    {"close", buffer_close, METH_NOARGS,
     "Give the block back now (the memory is reused, not freed).  Idempotent."},
    {NULL},
};

/* Read-only: a buffer's block changes only through close() (or its death). */
#define READ_ONLY(name, type, field) {name, T_OBJECT_EX, offsetof(type, field), READONLY, NULL}

static PyMemberDef buffer_members[] = {
    READ_ONLY("handle", buffer_object, handle),
    READ_ONLY("nbytes", buffer_object, nbytes),
    READ_ONLY("block", buffer_object, block),
    READ_ONLY("owner", buffer_object, owner),
    {"__weaklistoffset__", T_PYSSIZET, offsetof(buffer_object, weakrefs), READONLY, NULL},
    {NULL},
};

/* Not a GC type: it refers to its block and owner only, and neither refers back to a live
 * buffer, so it is never part of a cycle.  An array dying in a garbage cycle then frees its
 * buffer by reference count, with the pool intact (tests/unit/test_allocator.py). */
static PyType_Slot buffer_slots[] = {
    {Py_tp_doc, "The Buffer arrays hold: PooledBuffer(block, nbytes, owner).  When it dies its "
                "block goes back to its owner (the pool, or the AllocCache it came from)."},
    {Py_tp_new, (void *)buffer_new},
    {Py_tp_dealloc, (void *)buffer_dealloc},
    {Py_tp_repr, (void *)buffer_repr},
    {Py_tp_methods, buffer_methods},
    {Py_tp_members, buffer_members},
    {0, NULL},
};

static PyType_Spec buffer_spec = {
    "ember.runtime.allocator.PooledBuffer", sizeof(buffer_object), 0, Py_TPFLAGS_DEFAULT,
    buffer_slots,
};

/* ------------------------------------------------------------------ PoolCore */

static int
core_traverse(PyObject *self, visitproc visit, void *arg)
{
    core_object *c = (core_object *)self;
    Py_VISIT(c->free);
    Py_VISIT(c->idle);
    Py_VISIT(c->misses);
    Py_VISIT(c->deflt);
    Py_VISIT(c->passthrough);
    Py_VISIT(c->hits);
    Py_VISIT((PyObject *)Py_TYPE(self));
    return 0;
}

static int
core_clear(PyObject *self)
{
    core_object *c = (core_object *)self;
    Py_CLEAR(c->free);
    Py_CLEAR(c->idle);
    Py_CLEAR(c->misses);
    Py_CLEAR(c->deflt);
    Py_CLEAR(c->passthrough);
    Py_CLEAR(c->hits);
    return 0;
}

static void
core_dealloc(PyObject *self)
{
    gc_dealloc(self, core_clear);
}

static PyMemberDef core_members[] = {
    MEMBER("_free", core_object, free),
    MEMBER("_idle", core_object, idle),
    MEMBER("misses", core_object, misses),
    MEMBER("_default", core_object, deflt),
    MEMBER("passthrough", core_object, passthrough),
    MEMBER("_hits", core_object, hits),
    {NULL},
};

static PyType_Slot core_slots[] = {
    {Py_tp_doc, "The fields of a Pool that its hit path reads (set by Pool.__init__)."},
    {Py_tp_traverse, (void *)core_traverse},
    {Py_tp_clear, (void *)core_clear},
    {Py_tp_dealloc, (void *)core_dealloc},
    {Py_tp_members, core_members},
    {0, NULL},
};

static PyType_Spec core_spec = {
    "ember.runtime.allocator.PoolCore", sizeof(core_object), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, core_slots,
};

/* ------------------------------------------------------------------ allocate */

/* Set by configure(): ember.runtime.memory's pools ({backend: Pool}), the `ember.cached`
 * scope's ContextVar.get, the size classes seen so far ({nbytes: class}) and the Python
 * allocate (everything but the hit path). */
static PyObject *pools, *scope_get, *classes, *slow;

/* The block popped from `pool`'s free list for `nbytes` on `stream`, or NULL: none (a new
 * reference; -1 in *error with an exception set where a lookup failed). */
static PyObject *
pop_idle(core_object *pool, PyObject *nbytes, PyObject *stream, int *error)
{
    *error = 0;
    if (pool->free == NULL || pool->deflt == NULL || pool->hits == NULL ||
        pool->passthrough != Py_False) {
        return NULL;
    }
    PyObject *cache = PyObject_CallNoArgs(scope_get);
    if (cache == NULL) {
        *error = -1;
        return NULL;
    }
    Py_DECREF(cache); /* the context variable still refers to it */
    if (cache != Py_None) {
        return NULL;
    }
    PyObject *size = PyDict_GetItemWithError(classes, nbytes);
    PyObject *streams = size == NULL ? NULL : PyDict_GetItemWithError(pool->free, size);
    PyObject *blocks = NULL;
    if (streams != NULL && PyDict_Check(streams)) {
        blocks = PyDict_GetItemWithError(streams, stream == Py_None ? pool->deflt : stream);
    }
    if (PyErr_Occurred()) {
        *error = -1;
        return NULL;
    }
    Py_ssize_t n = blocks != NULL && PyList_Check(blocks) ? PyList_Size(blocks) : 0;
    if (n <= 0) {
        return NULL;
    }
    PyObject *block = Py_NewRef(PyList_GetItem(blocks, n - 1));
    PyObject *hit = NULL;
    if (PyList_SetSlice(blocks, n - 1, n, NULL) < 0 ||
        ((hit = PyIter_Next(pool->hits)) == NULL && PyErr_Occurred())) {
        Py_DECREF(block);
        *error = -1;
        return NULL;
    }
    Py_XDECREF(hit);
    return block;
}

/* slow(*args, **kwargs) from a vectorcall-style argument list. */
static PyObject *
call_slow(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_Size(kwnames);
    PyObject *tuple = PyTuple_New(nargs), *kwargs = NULL, *result = NULL;
    if (tuple == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyTuple_SetItem(tuple, i, Py_NewRef(args[i]));
    }
    if (nkw > 0) {
        if ((kwargs = PyDict_New()) == NULL) {
            goto done;
        }
        for (Py_ssize_t i = 0; i < nkw; i++) {
            if (PyDict_SetItem(kwargs, PyTuple_GetItem(kwnames, i), args[nargs + i]) < 0) {
                goto done;
            }
        }
    }
    result = PyObject_Call(slow, tuple, kwargs);
done:
    Py_DECREF(tuple);
    Py_XDECREF(kwargs);
    return result;
}

static PyObject *
allocate(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (slow == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember.runtime._pool.configure() was not called");
        return NULL;
    }
    if (kwnames == NULL && (nargs == 2 || nargs == 3)) {
        PyObject *pool = PyDict_GetItemWithError(pools, args[0]);
        if (pool == NULL && PyErr_Occurred()) {
            return NULL;
        }
        if (pool != NULL && Py_TYPE(pool) == (PyTypeObject *)pool_class) {
            int error;
            PyObject *stream = nargs == 3 ? args[2] : Py_None;
            PyObject *block = pop_idle((core_object *)pool, args[1], stream, &error);
            if (block != NULL) {
                return make_buffer(block, args[1], pool);
            }
            if (error) {
                return NULL;
            }
        }
    }
    return call_slow(args, nargs, kwnames);
}

/* ------------------------------------------------------------------ module */

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *cls, *pools_, *scope_get_, *classes_, *slow_;
    if (!PyArg_UnpackTuple(args, "configure", 5, 5, &cls, &pools_, &scope_get_, &classes_,
                           &slow_)) {
        return NULL;
    }
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, core_type)) {
        PyErr_SetString(PyExc_TypeError, "configure(): Pool must be a subclass of PoolCore");
        return NULL;
    }
    if (!PyDict_Check(pools_) || !PyDict_Check(classes_)) {
        PyErr_SetString(PyExc_TypeError, "configure(): pools and classes must be dicts");
        return NULL;
    }
    replace(&pool_class, cls);
    replace(&pools, pools_);
    replace(&scope_get, scope_get_);
    replace(&classes, classes_);
    replace(&slow, slow_);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Pool, pools, scope_get, classes, slow): the pool class whose blocks a dying "
     "buffer files from C, and what allocate() reads (ember.runtime.memory sets them)."},
    {"allocate", (PyCFunction)(void (*)(void))allocate, METH_FASTCALL | METH_KEYWORDS,
     "allocate(backend, nbytes, stream=None): ember.runtime.memory.allocate, with the "
     "pool's hit path in C and the configured Python function for everything else."},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pool",
    "The caching allocator's hit path in C (optional build: setup.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__pool(void)
{
    str_handle = PyUnicode_InternFromString("handle");
    str_give_back = PyUnicode_InternFromString("give_back");
    if (!str_handle || !str_give_back) {
        return NULL;
    }
    block_type = (PyTypeObject *)PyType_FromSpec(&block_spec);
    buffer_type = (PyTypeObject *)PyType_FromSpec(&buffer_spec);
    core_type = (PyTypeObject *)PyType_FromSpec(&core_spec);
    if (!block_type || !buffer_type || !core_type) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObject(m, "Block", Py_NewRef((PyObject *)block_type)) < 0 ||
        PyModule_AddObject(m, "PooledBuffer", Py_NewRef((PyObject *)buffer_type)) < 0 ||
        PyModule_AddObject(m, "PoolCore", Py_NewRef((PyObject *)core_type)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
