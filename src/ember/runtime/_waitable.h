/* The layout of ember.runtime._waitable.WaitableCore, for compiled launchers (the CUDA
 * stub): a stream whose type is a subtype of `api->type` has these fields at these places,
 * whatever the subclass adds after them.  Found at run time through the capsule
 * "ember.runtime._waitable.API" (PyCapsule_Import), so that the modules stay separate
 * builds; `version` changes with this layout. */
#ifndef EMBER_WAITABLE_H
#define EMBER_WAITABLE_H

#define WAITABLE_API_NAME "ember.runtime._waitable.API"
#define WAITABLE_API_VERSION 1

typedef struct {
    PyObject_HEAD
    long long submitted; /* pieces of work submitted so far */
    long long completed; /* pieces known to be finished */
    PyObject *address;   /* `_address`: the native handle as an int; NULL or None: none */
} waitable_core;

typedef struct {
    int version;
    PyTypeObject *type; /* WaitableCore */
} waitable_api;

#endif
