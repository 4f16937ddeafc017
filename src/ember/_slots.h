/* ember/_slots.h: reading an object slot in place, for the compiled launch paths.
 *
 * A launch reads a few slots of the objects it is given: a kernel's `_last` (its last
 * specialization, ember.compiler._dispatch) and each array's `_lv` (its launch view,
 * ember.backends.cuda._ccall's runner).  Through the slot's descriptor each read is a
 * descriptor call, its type checks and the generic member reader; on the build machine the
 * reads of a launch with 4 arrays cost ~20 ns that way.  The slot's offset, taken once from
 * the member table of the type that defines it, makes each read a load.
 *
 * Limited API (3.10+): PyType_GetSlot(type, Py_tp_members) and PyMemberDef are stable.
 * Header-only: each stub that includes it gets its own copy of the two functions. */
#ifndef EMBER_SLOTS_H
#define EMBER_SLOTS_H

#include <Python.h>
#include <string.h>
#include <structmember.h>

/* The offset of object slot `name` whose descriptor (a class attribute) is `descr`, or 0
 * where `descr` is not such a slot: its defining class (`__objclass__`) has no object
 * member of that name in its member table.  Never leaves an error set. */
static Py_ssize_t
slot_offset(PyObject *descr, const char *name)
{
    PyObject *owner = PyObject_GetAttrString(descr, "__objclass__");
    if (owner == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t offset = 0;
    if (PyType_Check(owner)) {
        PyMemberDef *m = (PyMemberDef *)PyType_GetSlot((PyTypeObject *)owner, Py_tp_members);
        for (; m != NULL && m->name != NULL; m++) {
            if (strcmp(m->name, name) == 0 && m->type == T_OBJECT_EX && m->offset > 0) {
                offset = m->offset;
            }
        }
    }
    PyErr_Clear(); /* PyType_GetSlot of a type without the slot */
    Py_DECREF(owner);
    return offset;
}

/* The object in the slot at `offset` of `obj` (borrowed), or NULL where it is unset (the
 * caller then reads it through its descriptor, which raises the AttributeError). */
static inline PyObject *
slot_read(PyObject *obj, Py_ssize_t offset)
{
    return *(PyObject **)((char *)obj + offset);
}

#endif
