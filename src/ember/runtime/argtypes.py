"""The device-array class that launches accept, registered by the layer that defines it.

Kernel launches (``ember/compiler/args.py``) and :class:`~ember.runtime.rawkernel.RawKernel`
take Ember's arrays, but the array library is a layer above both: ``ember.array``
registers :class:`ember.ndarray` here when it is imported, so no lower layer imports it
(the import graph points down; ``docs/design/backend.md``).

A registered class's instances have ``buffer`` (a :class:`~ember.runtime.backend.Buffer`),
``offset`` (bytes into it), ``shape``, ``strides`` (bytes), ``dtype`` and ``backend``.
"""

from __future__ import annotations

ARRAY: type | None = None  # the class launches key by identity (the hot path's test)
ARRAYS: tuple[type, ...] = ()  # every registered class, for isinstance


def register_array(cls: type) -> None:
    """Accept instances of ``cls`` as device arrays; the first one registered is
    :data:`ARRAY`, the class the launch fast paths test by identity."""
    global ARRAY, ARRAYS
    if cls not in ARRAYS:
        ARRAYS = (*ARRAYS, cls)
        ARRAY = ARRAY or cls


def is_array(value) -> bool:
    """Whether ``value`` is a device array of a registered class."""
    return isinstance(value, ARRAYS)
