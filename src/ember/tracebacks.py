"""Short tracebacks for user errors: Ember's own frames are hidden (JAX's traceback filtering
is the model).

A mistake in the user's code or call - :class:`~ember.KernelSyntaxError`,
:class:`~ember.KernelTypeError`, :class:`~ember.ArgumentError`, :class:`~ember.LaunchError`,
a :class:`~ember.KernelError` read at a sync, a ``TypeError`` Ember raises on purpose for a bad
operand - has a message that already says where and what (the kernel's ``file:line:col``,
the argument, the fix).  The 10-20 frames of Ember's compiler or runtime above it only push
that message off the screen.  So public entry points (kernel launches and inspection, array
functions, :func:`ember.synchronize`) remove Ember's frames from such an exception's
traceback as it leaves Ember (:func:`hide_internal_frames`), and add a one-line note saying
so.  The traceback object itself is changed, so every display shows the short form: plain
Python, IPython and Jupyter, pytest, logging.

``EMBER_TRACEBACK=full`` keeps every frame.  Internal errors always keep every frame: an
:class:`~ember.InternalError`, a :class:`~ember.DriverError` (other than out-of-memory), or
any exception Ember did not raise on purpose (an ``AttributeError`` from a bug) is what a bug
report needs whole.

An entry point hides frames with a ``try``/``except`` around its body, which costs nothing
until an exception is raised (Python 3.11's zero-cost exceptions), then re-raises with a bare
``raise``: that adds no frame of its own, so the user's frames are followed directly by the
message.
"""

from __future__ import annotations

import functools
import linecache
import os
import types
from collections.abc import Callable
from typing import Any, TypeVar

from ember.errors import DriverError, EmberError, InternalError, OutOfMemoryError

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
NOTE = "(Ember's internal frames are hidden from this traceback; EMBER_TRACEBACK=full shows them)"

F = TypeVar("F", bound=Callable[..., Any])


def is_ember_frame(frame) -> bool:
    """Whether ``frame`` runs Ember's code (its package, or code it generated)."""
    name = frame.f_code.co_filename
    return name.startswith(_PACKAGE) or name.startswith("<ember")


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` reports a user's mistake (frames hidden) rather than a bug."""
    if isinstance(exc, InternalError):
        return False
    if isinstance(exc, DriverError):
        return isinstance(exc, OutOfMemoryError)
    if isinstance(exc, EmberError):
        return True
    if not isinstance(exc, Exception):
        return False  # KeyboardInterrupt, SystemExit: not errors at all
    if NOTE in getattr(exc, "__notes__", ()):
        return True  # an inner entry point decided already (its frames are gone)
    return _raised_on_purpose(exc.__traceback__)


def _raised_on_purpose(tb) -> bool:
    """The innermost frame is Ember's and stopped at a ``raise`` statement (not at an
    operation that failed, as a bug would)."""
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    if not is_ember_frame(tb.tb_frame):
        return False
    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    return line.lstrip().startswith("raise ")


def hide_internal_frames(exc: BaseException) -> None:
    """Remove Ember's frames from a user error's traceback (in place; see the module doc).

    Called by public entry points in their ``except`` clause, before a bare ``raise``."""
    if not is_user_error(exc) or _full():
        return
    tb, kept = exc.__traceback__, []
    removed = False
    while tb is not None:
        if is_ember_frame(tb.tb_frame):
            removed = True
        else:
            kept.append(tb)
        tb = tb.tb_next
    if not removed:
        return
    exc.__traceback__ = _chain(kept)
    context = exc.__context__
    if exc.__cause__ is None and context is not None and _all_ember(context.__traceback__):
        exc.__suppress_context__ = True  # an internal step's exception: noise to the user
    if NOTE not in getattr(exc, "__notes__", ()):
        exc.add_note(NOTE)


def api(func: F) -> F:
    """Decorator: ``func`` is a public entry point whose user errors hide Ember's frames.
    (Hot paths inline the same ``try``/``except`` instead of paying for a wrapper call.)"""

    @functools.wraps(func)
    def entry(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            hide_internal_frames(exc)
            raise

    return entry  # type: ignore[return-value]


def _full() -> bool:
    from ember.config import settings

    return settings.traceback == "full"


def _chain(entries: list) -> types.TracebackType | None:
    tb = None
    for e in reversed(entries):
        tb = types.TracebackType(tb, e.tb_frame, e.tb_lasti, e.tb_lineno)
    return tb


def _all_ember(tb) -> bool:
    found = False
    while tb is not None:
        if not is_ember_frame(tb.tb_frame):
            return False
        found, tb = True, tb.tb_next
    return found
