/* ember.backends.cpu._guard: a cpu kernel's memory fault as a Python exception.
 *
 * A GPU reports a kernel's out-of-bounds access as an error of the launch; on the cpu
 * backend the same kernel runs in this process, where a wild index would kill it with
 * SIGSEGV.  run() calls a kernel entry (em_run_<name>(record, next, chunk)) with the GIL
 * released and a recovery point set: the fault handler, process-wide for SIGSEGV, SIGBUS,
 * SIGFPE and SIGILL, jumps back there when the faulting thread is inside run(), and run()
 * raises Fault(signal, address).  A fault anywhere else goes to the handler that was
 * installed before (Python's faulthandler, another library's) or to the default action, as
 * if this module were not there.
 *
 * The handler runs on an alternate signal stack (one per thread, made on its first run()
 * and freed when the thread ends), so that a kernel that overflows its stack is caught too.
 * Kernels take no locks (work-groups are claimed with one atomic counter), so leaving one
 * part-way leaves nothing held.  POSIX only: where sigaction or sigsetjmp do not exist the
 * module is not built and launches call the entry through ctypes, unguarded.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t (*entry_fn)(const char *record, void *next, int64_t chunk);

/* The recovery point of a thread inside run(). */
struct guard {
    sigjmp_buf env;
    volatile sig_atomic_t armed;
    int signo;
    void *address;
};

/* initial-exec: the handler reads it in threads that never ran a kernel, where a lazily
 * allocated (general-dynamic) thread-local would call malloc inside the signal handler */
#if defined(__GNUC__)
static _Thread_local struct guard *current __attribute__((tls_model("initial-exec")));
#else
static _Thread_local struct guard *current;
#endif

static const int GUARDED[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define NGUARDED (sizeof GUARDED / sizeof GUARDED[0])
static struct sigaction previous[NGUARDED];
static int installed;

static PyObject *Fault;

#define ALT_STACK_BYTES (256 * 1024)
static pthread_key_t alt_key;

/* The thread's alternate stack, given back when the thread ends. */
static void
free_alt_stack(void *memory)
{
    stack_t off;
    memset(&off, 0, sizeof off);
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, NULL);
    free(memory);
}

/* An alternate signal stack for this thread where it has none (once per thread). */
static void
ensure_alt_stack(void)
{
    if (pthread_getspecific(alt_key) != NULL) {
        return;
    }
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE)) {
        return; /* the thread has one of its own (Python's faulthandler sets one) */
    }
    void *memory = malloc(ALT_STACK_BYTES);
    if (memory == NULL) {
        return; /* a fault that overflows the stack then is not caught; others are */
    }
    stack_t stack;
    stack.ss_sp = memory;
    stack.ss_size = ALT_STACK_BYTES;
    stack.ss_flags = 0;
    if (sigaltstack(&stack, NULL) != 0 || pthread_setspecific(alt_key, memory) != 0) {
        free_alt_stack(memory);
    }
}

static void
on_fault(int signo, siginfo_t *info, void *context)
{
    struct guard *g = current;
    if (g != NULL && g->armed && info != NULL && info->si_code > 0) { /* a fault, not kill() */
        g->armed = 0;
        g->signo = signo;
        g->address = info->si_addr;
        siglongjmp(g->env, 1);
    }
    size_t k = 0;
    while (k < NGUARDED && GUARDED[k] != signo) {
        k++;
    }
    if (k == NGUARDED) {
        return;
    }
    struct sigaction *before = &previous[k];
    if (before->sa_flags & SA_SIGINFO) {
        before->sa_sigaction(signo, info, context);
    } else if (before->sa_handler != SIG_DFL && before->sa_handler != SIG_IGN) {
        before->sa_handler(signo);
    } else {
        /* the default action: put it back; a fault then happens again on return and ends
         * the process as it would have, a signal sent by kill() is sent again */
        sigaction(signo, before, NULL);
        if (info == NULL || info->si_code <= 0) {
            raise(signo);
        }
    }
}

/* install(): the handlers (idempotent).  Returns True where they are in place. */
static PyObject *
install(PyObject *self, PyObject *unused)
{
    if (!installed) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = on_fault;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        for (size_t k = 0; k < NGUARDED; k++) {
            if (sigaction(GUARDED[k], &action, &previous[k]) != 0) {
                for (size_t j = 0; j < k; j++) {
                    sigaction(GUARDED[j], &previous[j], NULL);
                }
                return PyErr_SetFromErrno(PyExc_OSError);
            }
        }
        installed = 1;
    }
    Py_RETURN_TRUE;
}

/* run(entry, record, next, chunk): entry(record, next, chunk) under the guard.  Returns the
 * entry's int result, or raises Fault(signal, address). */
static PyObject *
run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "run(entry, record, next, chunk) takes 4 arguments");
        return NULL;
    }
    entry_fn entry = (entry_fn)PyLong_AsVoidPtr(args[0]);
    if (entry == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "run(): the entry address is NULL");
        }
        return NULL;
    }
    char *record;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(args[1], &record, &size) < 0) {
        return NULL;
    }
    void *next = PyLong_AsVoidPtr(args[2]);
    if (next == NULL && PyErr_Occurred()) {
        return NULL;
    }
    long long chunk = PyLong_AsLongLong(args[3]);
    if (chunk == -1 && PyErr_Occurred()) {
        return NULL;
    }
    struct guard g;
    g.armed = 0;
    g.signo = 0;
    g.address = NULL;
    int64_t result = 0;
    int faulted = 0;
    Py_INCREF(args[1]); /* the record stays alive while the kernel reads it */
    Py_BEGIN_ALLOW_THREADS
    ensure_alt_stack();
    struct guard *outer = current;
    current = &g;
    /* the mask need not be saved: with SA_NODEFER the handler blocks nothing */
    if (sigsetjmp(g.env, 0) == 0) {
        g.armed = 1;
        result = entry(record, next, (int64_t)chunk);
        g.armed = 0;
    } else {
        faulted = 1;
    }
    current = outer;
    Py_END_ALLOW_THREADS
    Py_DECREF(args[1]);
    if (faulted) {
        PyObject *value = Py_BuildValue("(iK)", g.signo,
                                        (unsigned long long)(uintptr_t)g.address);
        if (value != NULL) {
            PyErr_SetObject(Fault, value);
            Py_DECREF(value);
        }
        return NULL;
    }
    return PyLong_FromLongLong((long long)result);
}

/* fault(signal): raise that signal's fault in this thread, inside the guard where called
 * through run() (the tests' probe of a fault outside any kernel). */
static PyObject *
probe_fault(PyObject *self, PyObject *arg)
{
    long which = PyLong_AsLong(arg);
    if (which == -1 && PyErr_Occurred()) {
        return NULL;
    }
    static volatile uintptr_t where = 16; /* an address no mapping starts at */
    if (which == SIGSEGV) {
        *(volatile int *)where = 1;
    }
    PyErr_SetString(PyExc_ValueError, "probe_fault() makes SIGSEGV only");
    return NULL;
}

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS,
     "install(): the fault handlers, process-wide (once; later calls do nothing)."},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
     "run(entry, record, next, chunk): call a cpu kernel entry (an address) with the GIL "
     "released; a memory fault inside it raises Fault(signal, address)."},
    {"probe_fault", probe_fault, METH_O,
     "probe_fault(signal.SIGSEGV): a fault outside any kernel (tests: it must end the "
     "process as without this module)."},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    if (Fault == NULL) { /* once per process: the handlers and the stacks are global */
        if (pthread_key_create(&alt_key, free_alt_stack) != 0) {
            PyErr_SetString(PyExc_OSError, "pthread_key_create failed");
            return -1;
        }
        Fault = PyErr_NewException("ember.backends.cpu._guard.Fault", PyExc_RuntimeError, NULL);
    }
    if (Fault == NULL || PyModule_AddObjectRef(module, "Fault", Fault) < 0) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)exec_module},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ember.backends.cpu._guard",
    "A cpu kernel's memory fault as a Python exception (see _guard.c).", 0, methods, slots,
};

PyMODINIT_FUNC
PyInit__guard(void)
{
    return PyModuleDef_Init(&module_def);
}
