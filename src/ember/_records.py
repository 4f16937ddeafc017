"""Dataclasses that cost less to define: :func:`record`, for the classes a program's first
kernel imports.

``@dataclasses.dataclass`` compiles each method it generates from source, one ``exec`` per
method: six for a frozen class.  At import that was most of what defining such a class
costs (~0.3 ms each on the build machine, 2-3x that on a GPU host), and the modules a
first kernel imports define about twenty of them: ~10 ms of a first kernel's Python work
on an H200 host (issue 19).  :func:`record` lets ``dataclasses`` collect the fields, so
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` work as before, and
makes the methods itself: ``__init__`` in one ``exec`` (it needs a real signature), the
others as closures.  What they do is what ``dataclass`` generates: ``__init__`` with the
fields' defaults and factories (and ``__post_init__``), ``__repr__`` of the ``repr``
fields, ``__eq__`` between instances of the same class over the ``compare`` fields,
``__hash__`` by dataclass's rule, and for ``frozen`` classes the ``FrozenInstanceError``
on assignment.  A method the class defines itself is kept.  ``InitVar`` pseudo-fields,
``order`` and ``slots`` are not supported (none of these classes needs them).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar

T = TypeVar("T")

_MISSING = dataclasses.MISSING


class _Factory:
    """The default of a parameter whose field has a ``default_factory`` (its repr in the
    signature is dataclass's)."""

    def __repr__(self) -> str:
        return "<factory>"


_NO_ARGUMENT = _Factory()


def record(cls: type[T] | None = None, /, *, frozen: bool = False, eq: bool = True):
    """``@dataclasses.dataclass`` (with ``frozen`` and ``eq``; see the module docstring)
    at a fraction of its definition cost."""

    def wrap(c: type[T]) -> type[T]:
        return _make(c, frozen, eq)

    return wrap if cls is None else wrap(cls)


def _make(cls: type[T], frozen: bool, eq: bool) -> type[T]:
    own = dict(cls.__dict__)
    if frozen and ("__setattr__" in own or "__delattr__" in own):
        raise TypeError(f"cannot overwrite __setattr__ or __delattr__ of frozen {cls.__name__}")
    no_doc = own.get("__doc__") is None
    if no_doc:  # dataclass would describe the signature of an __init__ not made yet (and
        cls.__doc__ = "-"  # inspect.signature's tokenizing of it cost ~1.5 ms the first time)
    dataclasses.dataclass(cls, init=False, repr=False, eq=False)
    fields = dataclasses.fields(cls)
    params = cls.__dataclass_params__  # say what the class is, as dataclass(...) would
    for name, value in (("init", True), ("repr", True), ("eq", eq), ("frozen", frozen)):
        with contextlib.suppress(AttributeError):  # a Python whose params are read-only
            setattr(params, name, value)
    if "__init__" not in own:
        cls.__init__ = _init(cls, fields, frozen)
    if no_doc:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in fields if f.init)})"
    if "__repr__" not in own:
        cls.__repr__ = _method(cls, "__repr__", _repr(tuple(f.name for f in fields if f.repr)))
    if eq and "__eq__" not in own:
        cls.__eq__ = _method(cls, "__eq__", _eq(_key(f.name for f in fields if f.compare)))
    explicit_hash = own.get("__hash__", _MISSING) is not _MISSING and not (
        own.get("__hash__") is None and "__eq__" in own
    )
    if eq and not explicit_hash:
        if frozen:
            hashed = (f.name for f in fields if (f.compare if f.hash is None else f.hash))
            cls.__hash__ = _method(cls, "__hash__", _hash(_key(hashed)))
        else:
            cls.__hash__ = None  # type: ignore[assignment]  # mutable and compared: unhashable
    if frozen:
        cls.__setattr__, cls.__delattr__ = _frozen(cls, frozenset(f.name for f in fields))
    return cls


def _init(cls: type, fields: tuple, frozen: bool) -> Callable:
    """``__init__`` of ``fields``, compiled from source as dataclass's is (one ``exec``)."""
    scope: dict[str, Any] = {"__object_setattr": object.__setattr__, "__none": _NO_ARGUMENT}
    positional, keyword, body = [], [], []
    seen_default = False
    for f in fields:
        if f.name == "self":
            raise TypeError(f"{cls.__name__}: a field cannot be named 'self'")
        value = f.name
        if f.default is not _MISSING:
            if not f.init:
                continue  # the class attribute holds the default, as dataclass leaves it
            scope[f"__default_{f.name}"] = f.default
            param = f"{f.name}=__default_{f.name}"
        elif f.default_factory is not _MISSING:
            scope[f"__factory_{f.name}"] = f.default_factory
            made = f"__factory_{f.name}()"
            param = f"{f.name}=__none"
            value = f"{made} if {f.name} is __none else {f.name}" if f.init else made
        elif not f.init:
            continue  # no value to set: dataclass leaves it unset too
        else:
            param = f.name
            if seen_default and not f.kw_only:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        if f.init:
            seen_default |= "=" in param and not f.kw_only
            (keyword if f.kw_only else positional).append(param)
        body.append(
            f"__object_setattr(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}"
        )
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n    " + "\n    ".join(body or ["pass"])
    exec(compile(source, f"<ember record {cls.__qualname__}>", "exec"), scope)  # noqa: S102
    init = scope["__init__"]
    init.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    return _method(cls, "__init__", init)


def _key(names) -> Callable[[Any], tuple]:
    """The tuple of attributes ``names`` of an object (a 1-tuple for one name, as the
    tuples dataclass compares and hashes)."""
    names = tuple(names)
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _repr(names: tuple[str, ...]) -> Callable:
    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _eq(key: Callable) -> Callable:
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash(key: Callable) -> Callable:
    def __hash__(self) -> int:
        return hash(key(self))

    return __hash__


def _frozen(cls: type, names: frozenset[str]) -> tuple[Callable, Callable]:
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return _method(cls, "__setattr__", __setattr__), _method(cls, "__delattr__", __delattr__)


def _method(cls: type, name: str, fn: Callable) -> Callable:
    fn.__name__ = name
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    fn.__module__ = cls.__module__
    return fn
