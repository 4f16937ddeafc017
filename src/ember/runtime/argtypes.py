"""The device-array class that launches accept, registered by the layer that defines it,
and what a launch reads of such an array (its launch view, :func:`launch_view`).

Kernel launches (``ember/compiler/args.py``) and :class:`~ember.runtime.rawkernel.RawKernel`
take Ember's arrays, but the array library is a layer above both: ``ember.array``
registers :class:`ember.ndarray` here when it is imported, so no lower layer imports it
(the import graph points down; ``docs/design/backend.md``).

A registered class's instances have ``buffer`` (a :class:`~ember.runtime.backend.Buffer`),
``offset`` (bytes into it), ``shape``, ``strides`` (bytes), ``dtype`` and ``backend``.
"""

from __future__ import annotations

from collections import defaultdict

ARRAY: type | None = None  # the class launches key by identity (the hot path's test)
ARRAYS: tuple[type, ...] = ()  # every registered class, for isinstance


def register_array(cls: type) -> None:
    """Accept instances of ``cls`` as device arrays; the first one registered is
    :data:`ARRAY`, the class the launch fast paths test by identity."""
    global ARRAY, ARRAYS
    if cls not in ARRAYS:
        ARRAYS = (*ARRAYS, cls)
        ARRAY = ARRAY or cls


# The compiled `kernel[grid, block]` factory's getter, registered by the compiler layer
# (ember.compiler.launchers): RawKernel's launchers are made with it too.
_launcher_getter = None


def register_launcher(getter) -> None:
    """``getter()`` -> the compiled launcher factory ``configured(kernel, grid, block,
    stream0, shared0, hide)``, or None where it is not built."""
    global _launcher_getter
    _launcher_getter = getter


def compiled_launcher():
    """The compiled launcher factory, or None (not built, or the compiler layer not
    imported: a program with no Ember kernel and no ember array)."""
    return None if _launcher_getter is None else _launcher_getter()


def is_array(value) -> bool:
    """Whether ``value`` is a device array of a registered class."""
    return isinstance(value, ARRAYS)


def layout(a) -> str:
    """``"C"`` for a C-contiguous view, ``"A"`` for other strides, ``""`` when misaligned."""
    shape, strides, step = a.shape, a.strides, a.dtype.itemsize
    if a.offset % step:
        return ""
    for k in range(len(shape) - 1, -1, -1):
        n = shape[k]
        if n != 1 and strides[k] != step:
            break
        step *= n
    else:
        return "C"
    step = a.dtype.itemsize
    return "A" if all(s % step == 0 for s in strides) else ""


# ------------------------------------------------------------------ launch views
# What a launch reads of an array argument, computed once per array (its ``_lv`` slot) and
# not at every launch: the array's metadata never changes after it is made.  On the H200
# machine each array argument's guard and values cost ~0.3 us of a launch (issue 19:
# kernel_args16 took 10.55 us against CuPy's 9.12); a view is a slot read, a token compared
# by identity and constant-index reads.


class _Token:
    """One interned ``(dtype, backend, ndim, layout)`` (:func:`layout`: what the signature
    of an array argument holds, so the guard and the dispatch agree), compared by identity."""

    __slots__ = ("key",)

    def __init__(self, key: tuple):
        self.key = key


_tokens: dict[tuple, _Token] = {}


def token(key: tuple) -> _Token:
    """The interned token of ``key``, ``(dtype, backend, ndim, layout)``."""
    found = _tokens.get(key)
    return found if found is not None else _tokens.setdefault(key, _Token(key))


_vector_tokens: defaultdict = defaultdict(dict)  # backend -> {id(dtype): (dtype, 1-d C token)}


def launch_view(a) -> tuple:
    """``(token, data, start, *shape, *strides)`` of the Ember array ``a`` (strides and start
    in elements; ``data``: the buffer's address plus the offset where the backend's pointers
    take offsets, else the buffer handle itself), stored in ``a._lv`` for later launches.
    A 1-d C array at its buffer's start (a new result) skips the layout walk: 1.36 -> 0.30 us."""
    shape = a.shape
    if a._c and not a.offset and len(shape) == 1:
        dt, be = a.dtype, a.backend
        hit = _vector_tokens[be].get(id(dt))
        if hit is None or hit[0] is not dt:
            hit = _vector_tokens[be][id(dt)] = (dt, token((dt, be, 1, "C")))
        view = (hit[1], a.buffer.handle, 0, shape[0], 1)
        a._lv = view
        return view
    item = a.dtype.itemsize
    kind = token((a.dtype, a.backend, len(a.shape), layout(a)))
    handle = a.buffer.handle
    data = handle if a.backend.dialect.separate_offsets else handle + a.offset
    view = (kind, data, a.offset // item, *a.shape, *(st // item for st in a.strides))
    a._lv = view
    return view
