"""The C dialects Ember generates, one class each (tinygrad's ``renderer/cstyle.py`` shape:
classes that are mostly attributes, methods where a table is not enough).

:mod:`.base` says what a dialect is; :mod:`.cuda` and :mod:`.opencl` are the two shipped.
The registry below is explicit and lazy: a dialect module is imported on first use.
"""

from __future__ import annotations

import importlib

from ember.codegen.dialects.base import Dialect

__all__ = ["Dialect", "REGISTRY", "get", "names", "source_suffix"]

# name -> (module, instance): the one line a new dialect adds.
REGISTRY: dict[str, tuple[str, str]] = {
    "cuda": ("ember.codegen.dialects.cuda", "CUDA"),
    "opencl": ("ember.codegen.dialects.opencl", "OPENCL"),
    "cpu": ("ember.codegen.dialects.cpu", "CPU"),
}

_loaded: dict[str, Dialect] = {}


def get(name: str) -> Dialect:
    """The dialect registered as ``name``; ``KeyError`` naming the known ones otherwise."""
    found = _loaded.get(name)
    if found is not None:
        return found
    if name not in REGISTRY:
        raise KeyError(f"unknown C dialect {name!r}; known dialects: {', '.join(REGISTRY)}")
    module, attr = REGISTRY[name]
    found = _loaded[name] = getattr(importlib.import_module(module), attr)
    return found


def names() -> tuple[str, ...]:
    """Every registered dialect name."""
    return tuple(REGISTRY)


def source_suffix(name: str) -> str:
    """The suffix of a source file in dialect ``name`` (``.c`` for a name not registered,
    e.g. in a cache entry of another Ember version)."""
    return get(name).source_suffix if name in REGISTRY else ".c"
