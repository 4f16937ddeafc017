/* ember.backends.cuda._ccall: a specialization's guarded launch (see _ccall.c). */
#include "_ccall.h"
#include "../../_slots.h"

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
    Py_ssize_t offset;  /* the slot's offset (ember/_slots.h; 0: read through `get`) */
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
    PyObject *v = guard->offset > 0 ? slot_read(a, guard->offset) : NULL;
    if (v != NULL) {
        Py_INCREF(v);
    } else {
        v = guard->get != NULL ? guard->get(guard->lv, a, expected) : PyObject_GetAttr(a, str_lv);
    }
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

/* The values of the hit arguments (their views were read for the launch that packed them,
 * so every item is there). */
int
ccall_complete_values(const struct reuse *reuse, PyObject **vals)
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
            vals[i] = NULL; /* packed before: ccall_complete_values fetches it if needed */
        } else if ((vals[i] = value_of(r->sources, i, items, views)) == NULL) {
            pass = 0; /* a view without the item: the Python path */
        }
    }
    if (pass > 0) {
        struct reuse reuse = {r->sources, hit, now, r->keys, r->slots, n, items, views,
                              r->nvals};
        PyObject *launched = ccall_launch_values(r->ls, cfg[0], cfg[1], vals, r->nvals, NULL, cfg[2],
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

/* An array guard's `_lv` slot descriptor, its __get__ and the slot's offset, where the
 * array type has one (a class with __slots__, a C type's member): the guard then reads
 * a._lv in place (through __get__ where it is unset), without the attribute lookup.  The
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
    g->offset = slot_offset(lv, "_lv");
    return 0;
}

PyObject *
ccall_make_runner(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
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
    if (owner == NULL || (PyObject *)Py_TYPE(owner) != ccall_state_type) {
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
        r->checks[i].offset = 0;
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


int
ccall_runner_init(void)
{
    str_lv = PyUnicode_InternFromString("_lv");
    runner_type = str_lv == NULL ? NULL : PyType_FromSpec(&runner_spec);
    if (runner_type == NULL) {
        return -1;
    }
    /* C callers (ember.compiler._dispatch) find flat_run on the runner's type */
    PyObject *flat = PyCapsule_New((void *)flat_run, "ember.flat_run", NULL);
    if (flat == NULL || PyObject_SetAttrString(runner_type, "__ember_flat__", flat) < 0) {
        Py_XDECREF(flat);
        return -1;
    }
    Py_DECREF(flat);
    return 0;
}
