/* ember.backends.cuda._fill: a staged upload's host copies and transfers as one C call.
 *
 * A staged upload (ember.runtime.staging) copies a pageable NumPy array chunk by chunk into
 * pinned buffers on worker threads and queues each chunk's transfer as soon as its buffer is
 * filled.  In Python every chunk is a job handed to a thread and back: on the H200 host of
 * issue 19, the first of eight 2 MiB fills of a 16 MiB upload started 63 us after the call
 * and each next one ~25 us later (the hand-offs go through the GIL), so a first upload of a
 * new array ran 12-16 GB/s where the host copies alone move ~27 GB/s.
 *
 * upload_chunks() does the same with the GIL released throughout: a pool of C threads takes
 * chunks from a shared counter and copies them (memcpy), the calling thread queues each
 * filled chunk's cuMemcpyHtoDAsync and an event record after it, and a thread about to reuse
 * a buffer waits for that event first (cuEventSynchronize).  No Python object is touched
 * between the call's start and its end.
 *
 * Optional: setup.py builds it where a C compiler and POSIX threads exist; without it (or
 * where a thread cannot be started) ember.runtime.staging's Python pipeline runs.  Written
 * against the stable ABI (one build for Python 3.10+).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <string.h>

#ifndef _WIN32
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The driver entry points, declared here so the build needs no CUDA headers. */
typedef int (*ctx_set_fn)(void *ctx);
typedef int (*htod_fn)(unsigned long long dst, const void *src, size_t nbytes, void *stream);
typedef int (*record_fn)(void *event, void *stream);
typedef int (*event_sync_fn)(void *event);

#define MAX_THREADS 32
#define MAX_SLOTS 4096

/* Which call failed, as upload_chunks() reports it. */
enum { CALL_CONTEXT = 0, CALL_COPY = 1, CALL_RECORD = 2, CALL_WAIT = 3 };

/* One upload, shared by the caller and the workers (it lives on the caller's stack: the
 * caller returns only after every worker has left it). */
struct job {
    ctx_set_fn set_context;
    void *context;
    event_sync_fn wait_event;
    const unsigned char *src;
    size_t nbytes, chunk;
    int count, slots, threads;
    unsigned char **buffers;
    void **events;
    const char *primed; /* per buffer: its event was recorded before this call */
    int *state;         /* per chunk: 0 pending, 1 filled, 2 transfer queued */
    int next;           /* the next chunk to take (atomic) */
    int stop;           /* a failure: take no more chunks (atomic) */
    int status, which;  /* the first failure (under the pool's lock) */
    int active;         /* workers not yet done with this job (under the pool's lock) */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a new job was published (generation changed) */
    pthread_cond_t idle; /* a job's last worker left it */
    pthread_mutex_t busy; /* one upload at a time */
    int started;
    unsigned long generation;
    struct job *job;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_MUTEX_INITIALIZER, 0, 0, NULL};

static void
fail(struct job *job, int status, int which)
{
    pthread_mutex_lock(&pool.lock);
    if (job->status == 0) {
        job->status = status;
        job->which = which;
    }
    pthread_mutex_unlock(&pool.lock);
    __atomic_store_n(&job->stop, 1, __ATOMIC_RELEASE);
}

static int
stopped(struct job *job)
{
    return __atomic_load_n(&job->stop, __ATOMIC_ACQUIRE);
}

/* A waiting loop's turn: spin a little, then give the core away. */
static void
relax(int *spins)
{
    if (++*spins > 64) {
        sched_yield();
    }
}

static size_t
chunk_bytes(const struct job *job, int j)
{
    size_t start = (size_t)j * job->chunk;
    size_t left = job->nbytes - start;
    return left < job->chunk ? left : job->chunk;
}

static int streaming = 1; /* copy with non-temporal stores where the CPU has them */

/* memcpy into a staging buffer.  Where SSE2 is there (every x86-64), with non-temporal
 * stores: the buffer is written whole and read next by the copy engine, not by this core,
 * so its lines need not be read into the cache first (a plain copy reads the destination
 * before writing it: a third more memory traffic, and the host copies' memory bandwidth is
 * what bounds a staged upload). */
static void
copy_out(unsigned char *dst, const unsigned char *src, size_t n)
{
#if defined(__SSE2__)
    if (streaming && n >= 4096) {
        while (((uintptr_t)dst & 15) != 0) { /* staging buffers are page-aligned: rarely */
            *dst++ = *src++;
            n--;
        }
        size_t blocks = n / 64;
        for (size_t i = 0; i < blocks; i++, src += 64, dst += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)src);
            __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
            _mm_stream_si128((__m128i *)dst, a);
            _mm_stream_si128((__m128i *)(dst + 16), b);
            _mm_stream_si128((__m128i *)(dst + 32), c);
            _mm_stream_si128((__m128i *)(dst + 48), d);
        }
        _mm_sfence(); /* the stores are visible before the chunk is marked filled */
        memcpy(dst, src, n % 64);
        return;
    }
#endif
    memcpy(dst, src, n);
}

/* A worker's part: take chunks until none is left; before reusing a buffer, wait until the
 * transfer that last read it has finished. */
static void
work(struct job *job)
{
    int status = job->set_context(job->context);
    if (status) {
        fail(job, status, CALL_CONTEXT);
        return;
    }
    while (!stopped(job)) {
        int j = __atomic_fetch_add(&job->next, 1, __ATOMIC_ACQ_REL);
        if (j >= job->count) {
            return;
        }
        int k = j % job->slots;
        int reused = j >= job->slots;
        if (reused) { /* the caller queues chunk j - slots's transfer, then its event */
            int spins = 0;
            while (__atomic_load_n(&job->state[j - job->slots], __ATOMIC_ACQUIRE) != 2) {
                if (stopped(job)) {
                    return;
                }
                relax(&spins);
            }
        }
        if (reused || job->primed[k]) {
            status = job->wait_event(job->events[k]);
            if (status) {
                fail(job, status, CALL_WAIT);
                return;
            }
        }
        copy_out(job->buffers[k], job->src + (size_t)j * job->chunk, chunk_bytes(job, j));
        __atomic_store_n(&job->state[j], 1, __ATOMIC_RELEASE);
    }
}

/* A pool thread: run every job published after its start (`arg`: its index and the
 * generation it was started in, so a job published before it first takes the lock is
 * still seen). */
static void *
worker(void *arg)
{
    uintptr_t packed = (uintptr_t)arg;
    int index = (int)(packed & 0xff);
    unsigned long seen = (unsigned long)(packed >> 8);
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (pool.generation == seen) {
            pthread_cond_wait(&pool.wake, &pool.lock);
        }
        seen = pool.generation;
        struct job *job = pool.job;
        pthread_mutex_unlock(&pool.lock);
        if (job != NULL && index < job->threads) {
            work(job);
        }
        pthread_mutex_lock(&pool.lock);
        if (job != NULL && --job->active == 0) {
            pthread_cond_broadcast(&pool.idle);
        }
    }
    return NULL;
}

/* At least `want` pool threads (fewer if the system refuses more).  Under pool.lock. */
static void
grow(int want)
{
    while (pool.started < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        uintptr_t packed = ((uintptr_t)pool.generation << 8) | (uintptr_t)pool.started;
        int failed = pthread_create(&t, &attr, worker, (void *)packed);
        pthread_attr_destroy(&attr);
        if (failed) {
            return;
        }
        pool.started++;
    }
}

/* The caller's part: queue each filled chunk's transfer and event record, in the order the
 * fills finish (any chunk of the window that can be filled at once). */
static int
queue_transfers(struct job *job, htod_fn copy, record_fn record, unsigned long long dst,
                void *stream)
{
    int status = job->set_context(job->context);
    if (status) {
        fail(job, status, CALL_CONTEXT);
        return 0;
    }
    int queued = 0, low = 0, spins = 0;
    while (queued < job->count && !stopped(job)) {
        int high = low + job->slots < job->count ? low + job->slots : job->count;
        int j = low;
        while (j < high && __atomic_load_n(&job->state[j], __ATOMIC_ACQUIRE) != 1) {
            j++;
        }
        if (j == high) {
            relax(&spins);
            continue;
        }
        spins = 0;
        int k = j % job->slots;
        size_t start = (size_t)j * job->chunk;
        status = copy(dst + start, job->buffers[k], chunk_bytes(job, j), stream);
        if (status) {
            fail(job, status, CALL_COPY);
            break;
        }
        queued++;
        status = record(job->events[k], stream);
        if (status) {
            fail(job, status, CALL_RECORD);
            break;
        }
        __atomic_store_n(&job->state[j], 2, __ATOMIC_RELEASE);
        while (low < job->count && __atomic_load_n(&job->state[low], __ATOMIC_ACQUIRE) == 2) {
            low++;
        }
    }
    return queued;
}

static void
after_fork_in_child(void)
{
    /* the parent's threads do not exist here: start anew */
    pthread_mutex_init(&pool.lock, NULL);
    pthread_mutex_init(&pool.busy, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.idle, NULL);
    pool.started = 0;
    pool.job = NULL;
}

/* An int argument as a pointer-sized unsigned value; -1 with an error set. */
static int
as_address(PyObject *value, uintptr_t *out)
{
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "upload_chunks: an address must be an int, not %R",
                     (PyObject *)Py_TYPE(value));
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (uintptr_t)v;
    return 0;
}

/* `n` addresses from the tuple `t` into `out`; -1 with an error set. */
static int
addresses(PyObject *t, Py_ssize_t n, void **out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        uintptr_t v;
        if (as_address(PyTuple_GetItem(t, i), &v) < 0) {
            return -1;
        }
        out[i] = (void *)v;
    }
    return 0;
}

static PyObject *
upload_chunks(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 11) {
        PyErr_Format(PyExc_TypeError,
                     "upload_chunks(entries, context, dst, src, nbytes, stream, buffers, events, "
                     "chunk, threads, primed) takes 11 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *entries = args[0], *buffers = args[6], *events = args[7], *primed = args[10];
    if (!PyTuple_Check(entries) || PyTuple_Size(entries) != 4 || !PyTuple_Check(buffers) ||
        !PyTuple_Check(events) || !PyBytes_Check(primed)) {
        PyErr_SetString(PyExc_TypeError, "upload_chunks: entries (4), buffers and events must "
                        "be tuples of ints, primed bytes");
        return NULL;
    }
    Py_ssize_t slots = PyTuple_Size(buffers);
    if (slots < 1 || slots > MAX_SLOTS || PyTuple_Size(events) != slots ||
        PyBytes_Size(primed) != slots) {
        PyErr_SetString(PyExc_ValueError, "upload_chunks: one event and one primed flag per "
                        "buffer, 1 to 4096 buffers");
        return NULL;
    }
    void *entry[4];
    uintptr_t context, dst, src, stream;
    if (addresses(entries, 4, entry) < 0 || as_address(args[1], &context) < 0 ||
        as_address(args[2], &dst) < 0 || as_address(args[3], &src) < 0 ||
        as_address(args[5], &stream) < 0) {
        return NULL;
    }
    Py_ssize_t nbytes = PyLong_AsSsize_t(args[4]), chunk = PyLong_AsSsize_t(args[8]);
    long threads = PyLong_AsLong(args[9]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (nbytes < 0 || chunk < 1 || threads < 1 || threads > MAX_THREADS ||
        (nbytes + chunk - 1) / chunk > 0x7fffffff) {
        PyErr_SetString(PyExc_ValueError, "upload_chunks: nbytes >= 0, chunk >= 1 and 1 to 32 "
                        "threads");
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        if (entry[i] == NULL) {
            PyErr_SetString(PyExc_ValueError, "upload_chunks: an entry point is NULL");
            return NULL;
        }
    }
    struct job job;
    memset(&job, 0, sizeof job);
    job.set_context = (ctx_set_fn)entry[0];
    job.wait_event = (event_sync_fn)entry[3];
    job.context = (void *)context;
    job.src = (const unsigned char *)src;
    job.nbytes = (size_t)nbytes;
    job.chunk = (size_t)chunk;
    job.count = (int)((nbytes + chunk - 1) / chunk);
    job.slots = (int)slots;
    job.threads = (int)threads;
    job.primed = PyBytes_AsString(primed);
    job.buffers = PyMem_Malloc((size_t)slots * sizeof *job.buffers);
    job.events = PyMem_Malloc((size_t)slots * sizeof *job.events);
    job.state = PyMem_Calloc((size_t)(job.count ? job.count : 1), sizeof *job.state);
    if (job.buffers == NULL || job.events == NULL || job.state == NULL) {
        PyMem_Free(job.buffers);
        PyMem_Free(job.events);
        PyMem_Free(job.state);
        return PyErr_NoMemory();
    }
    int queued = 0, ran = 1;
    if (addresses(buffers, slots, (void **)job.buffers) < 0 ||
        addresses(events, slots, job.events) < 0) {
        ran = -1;
    }
    if (ran > 0) {
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&pool.busy);
        pthread_mutex_lock(&pool.lock);
        grow(job.threads);
        ran = pool.started > 0;
        if (ran) {
            job.active = pool.started;
            pool.job = &job;
            pool.generation++;
            pthread_cond_broadcast(&pool.wake);
        }
        pthread_mutex_unlock(&pool.lock);
        if (ran) {
            queued = queue_transfers(&job, (htod_fn)entry[1], (record_fn)entry[2],
                                     (unsigned long long)dst, (void *)stream);
            pthread_mutex_lock(&pool.lock);
            while (job.active > 0) {
                pthread_cond_wait(&pool.idle, &pool.lock);
            }
            pool.job = NULL;
            pthread_mutex_unlock(&pool.lock);
        }
        pthread_mutex_unlock(&pool.busy);
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(job.buffers);
    PyMem_Free(job.events);
    PyMem_Free(job.state);
    if (ran < 0) {
        return NULL;
    }
    if (!ran) {
        Py_RETURN_NONE; /* no thread could be started: the caller's Python pipeline */
    }
    return Py_BuildValue("(iii)", job.status, job.status ? job.which : -1, queued);
}

/* ------------------------------------------------------------------ test probes */

/* Stand-ins for the four entry points, for the tests (no driver needed): the "device" is
 * host memory, a transfer is a memcpy, events are counted.  probe_fill_arm(fail_at, status)
 * makes the fail_at-th call of the copy (1-based; 0: never) return `status`. */
static int probe_calls[4], probe_fail_at, probe_status;
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

static int
probe_count(int which)
{
    pthread_mutex_lock(&probe_lock);
    int n = ++probe_calls[which];
    pthread_mutex_unlock(&probe_lock);
    return n;
}

static int
probe_context(void *ctx)
{
    (void)ctx;
    probe_count(CALL_CONTEXT);
    return 0;
}

static int
probe_copy(unsigned long long dst, const void *src, size_t nbytes, void *stream)
{
    (void)stream;
    if (probe_count(CALL_COPY) == probe_fail_at) {
        return probe_status;
    }
    memcpy((void *)(uintptr_t)dst, src, nbytes);
    return 0;
}

static int
probe_record(void *event, void *stream)
{
    (void)event;
    (void)stream;
    probe_count(CALL_RECORD);
    return 0;
}

static int
probe_wait(void *event)
{
    (void)event;
    probe_count(CALL_WAIT);
    return 0;
}

static PyObject *
probe_fill_entries(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("(NNNN)", PyLong_FromVoidPtr((void *)probe_context),
                         PyLong_FromVoidPtr((void *)probe_copy),
                         PyLong_FromVoidPtr((void *)probe_record),
                         PyLong_FromVoidPtr((void *)probe_wait));
}

static PyObject *
probe_fill_arm(PyObject *self, PyObject *args)
{
    (void)self;
    int fail_at, status;
    if (!PyArg_ParseTuple(args, "ii", &fail_at, &status)) {
        return NULL;
    }
    pthread_mutex_lock(&probe_lock);
    memset(probe_calls, 0, sizeof probe_calls);
    probe_fail_at = fail_at;
    probe_status = status;
    pthread_mutex_unlock(&probe_lock);
    Py_RETURN_NONE;
}

static PyObject *
set_streaming(PyObject *self, PyObject *arg)
{
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    int was = streaming;
    streaming = on;
    return PyBool_FromLong(was);
}

static PyObject *
probe_fill_calls(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    pthread_mutex_lock(&probe_lock);
    PyObject *calls = Py_BuildValue("(iiii)", probe_calls[0], probe_calls[1], probe_calls[2],
                                    probe_calls[3]);
    pthread_mutex_unlock(&probe_lock);
    return calls;
}
#endif /* !_WIN32 */

static PyMethodDef methods[] = {
#ifndef _WIN32
    {"upload_chunks", (PyCFunction)(void (*)(void))upload_chunks, METH_FASTCALL,
     "upload_chunks(entries, context, dst, src, nbytes, stream, buffers, events, chunk, "
     "threads, primed) -> (status, call, queued) or None\n\n"
     "Copy ``nbytes`` of host memory at ``src`` to the device address ``dst`` through the "
     "pinned ``buffers`` (each at least ``chunk`` bytes, reused in turn) with ``threads`` "
     "host threads: each chunk is copied into a buffer, then its cuMemcpyHtoDAsync and a "
     "record of the buffer's event are queued on ``stream``; a buffer is refilled after its "
     "event completed (at once where ``primed`` says it was recorded before).  ``entries``: "
     "the addresses of cuCtxSetCurrent, cuMemcpyHtoDAsync, cuEventRecord and "
     "cuEventSynchronize.  Returns the first failed status (0: none), the failed call "
     "(0 context, 1 copy, 2 record, 3 event wait; -1: none) and the transfers queued; None "
     "when no thread could be started (nothing was done)."},
    {"probe_fill_entries", probe_fill_entries, METH_NOARGS,
     "The tests' stand-ins for the four entry points (the device is host memory)."},
    {"probe_fill_arm", probe_fill_arm, METH_VARARGS,
     "probe_fill_arm(fail_at, status): reset the counts; the fail_at-th copy returns status."},
    {"set_streaming", set_streaming, METH_O,
     "set_streaming(on) -> the previous setting: copy into the buffers with non-temporal "
     "stores where the CPU has them (the default), or with memcpy (for tests and "
     "measurements)."},
    {"probe_fill_calls", probe_fill_calls, METH_NOARGS,
     "Calls of the stand-ins since probe_fill_arm: (context, copy, record, wait)."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fill",
    "A staged upload's host copies and transfers as one C call (optional build: setup.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fill(void)
{
#ifndef _WIN32
    static int registered;
    if (!registered) {
        if (pthread_atfork(NULL, NULL, after_fork_in_child) != 0) {
            PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
            return NULL;
        }
        registered = 1;
    }
#endif
    return PyModule_Create(&module);
}
