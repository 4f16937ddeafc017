"""Stale code in notebooks: a kernel notices that a device function it calls was redefined,
or a module-level value it reads was rebound, and recompiles with a one-line note.

A kernel reads its dependencies (the source of every function it can reach, the values of
the names and attribute chains they read: :func:`ember.cache.key.describe`) when it first
compiles, and keeps them for its life; in a script they do not change.  In a notebook they
do: a later cell redefines ``helper`` or sets ``N = 512`` and runs the kernel again.

**Recompile, not raise.**  Re-running a launch cell after redefining a helper means "use the
new helper": an error would only send the user back to re-run the ``@ember.kernel`` cell,
which Ember can do itself (Triton raises instead).  The note (:class:`~ember.RecompileWarning`)
names what changed, so the recompile is never silent; filter it to silence it, or turn it
into an error with ``warnings.simplefilter("error", ember.RecompileWarning)``.

**When.**  At the first launch of a kernel after an IPython cell started (IPython's
``pre_run_cell`` event, registered by the first kernel that compiles in an IPython
session).  The event empties the inline cache of every user kernel, so that launch takes the
slow path, which re-reads the dependencies (a fresh capture of every reachable function:
~0.1-1 ms, once per kernel and cell) and compares them with the compiled ones.  Launches that
hit the inline cache run exactly the code they ran before: the check costs them nothing
(``benchmarks/compiler.py``: ``kernel_stale_check``).  Outside IPython nothing is watched:
values captured at the first compile stay (docs/design/compiler.md); :func:`new_cell` is the
hook for other front ends (it is what the IPython event calls).
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from typing import Any

from ember.errors import EmberError, RecompileWarning

_kernels: weakref.WeakSet = weakref.WeakSet()  # user kernels compiled while watching
_lock = threading.Lock()
_watching = False  # an IPython shell's pre_run_cell event is registered


def watching() -> bool:
    """Whether kernels are re-checked at each new cell (true in IPython, or after
    :func:`new_cell` was called once)."""
    return _watching


def watch_ipython() -> None:
    """Register :func:`new_cell` with the running IPython shell (once; no-op elsewhere)."""
    global _watching
    if _watching:
        return
    ipython = sys.modules.get("IPython")  # never imported here: only if the user runs it
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    if shell is None:
        return
    with _lock:
        if not _watching:
            shell.events.register("pre_run_cell", new_cell)
            _watching = True


def new_cell(*_info: Any) -> None:
    """A new cell is about to run: every user kernel re-checks its dependencies at its next
    launch.  (IPython calls this; ``_info`` is its ExecutionInfo.)"""
    global _watching
    _watching = True
    for k in list(_kernels):
        k._stale_check()


def track(kernel) -> None:
    """Remember ``kernel`` (after a compile) for re-checks at the next cell."""
    if _watching:
        _kernels.add(kernel)


def baseline(cap, captures: dict) -> list | None:
    """The dependencies a compile used (names the typer froze win), for :func:`changes`."""
    from ember.cache.key import describe

    try:
        return describe(cap, captures)
    except EmberError:  # unreadable source: nothing to compare, the kernel is not watched
        return None


def current(func) -> list | None:
    """The dependencies of ``func`` as they are now: every function captured afresh."""
    from ember.cache.key import describe
    from ember.frontend.capture import capture

    try:
        return describe(capture(func), {})
    except EmberError:
        return None


def changes(old: list, new: list) -> list[str]:
    """What differs between two dependency descriptions, as short phrases naming names."""
    old_by = {r["function"]: r for r in old}
    found: list[str] = []
    for record in new:
        before = old_by.get(record["function"])
        short = record["function"].rsplit(".", 1)[-1]
        if before is None:
            found.append(f"'{short}' is now called")
            continue
        if before["source"] != record["source"]:
            found.append(f"'{short}' was redefined")
        for name, value in record["reads"].items():
            was = before["reads"].get(name)
            if was != value and not _both_functions(was, value):
                found.append(f"'{name}' changed{_values(was, value)}")
        if before["defaults"] != record["defaults"] or before["kwdefaults"] != record["kwdefaults"]:
            found.append(f"the defaults of '{short}' changed")
    return list(dict.fromkeys(found)) or ["its dependencies changed"]


def _both_functions(a, b) -> bool:
    """Two references to functions: their own records say whether they changed."""
    kinds = ("function", "kernel")
    return isinstance(a, list) and isinstance(b, list) and a[:1] == b[:1] and a[0] in kinds


def _values(was, now) -> str:
    if isinstance(was, list) and isinstance(now, list) and was[:1] == now[:1] == ["const"]:
        return f" ({was[2]} -> {now[2]})"
    return ""


def note(name: str, what: list[str]) -> None:
    """The one-line note of a recompile."""
    warnings.warn(
        f"kernel '{name}' recompiles: {', '.join(what[:4])} since it was compiled",
        RecompileWarning,
        stacklevel=4,
    )
