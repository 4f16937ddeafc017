"""``os.fork()`` and the background warmup (:mod:`ember.startup`).

A fork waits for the warmup's step in progress, so that the child inherits no half-done
import or half-made backend; in the child the warmup counts as finished, and a backend the
parent initialized (by the warmup, or by using it) raises a clear
:class:`~ember.errors.BackendUnavailableError` on use - CUDA cannot be used after a fork.

Why the fork waits in an *audit hook* (``sys.addaudithook``, event ``os.fork``) and not in
an ``os.register_at_fork`` hook: Python runs the ``before`` fork hooks newest first, so the
hooks of modules imported after Ember (``logging``, which the warmup's own imports pull in)
run before Ember's and hold their locks while Ember's hook waits - and the warmup's step,
importing ``pyopencl`` or ``asyncio``, waits for ``logging``'s lock: both hung (issue 18).
The audit event comes before any fork hook, when the forking thread holds no library lock.
A fork that raises no audit event (``subprocess`` with ``preexec_fn``) waits in the fork
hook, at most :data:`FORK_HOOK_WAIT_S`; every wait is bounded, so a fork never hangs.

The warmups are :mod:`ember.startup`'s, handed over by :func:`install_fork_hooks`; each
one's steps run inside its :class:`Gate`, which a fork closes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Any

from ember.runtime import registry

FORK_WAIT_S = 10.0  # longest wait of a fork (audit event) for the warmup's step in progress
FORK_HOOK_WAIT_S = 1.0  # the same in the fork hook, where other hooks may hold locks
_FORK_EVENTS = frozenset({"os.fork", "os.forkpty"})

FORK_MESSAGE = (
    "the {name} backend was initialized in the parent process before os.fork(){how}, and "
    "{name} cannot be used in a forked child.  Start worker processes with the 'spawn' "
    "method (multiprocessing.set_start_method('spawn') or a spawn context), or create them "
    "before importing ember, or set EMBER_WARMUP=0 when the parent never uses the device"
)

_warmups: dict[str, Any] = {}  # ember.startup's warmups, by backend (the same dict)
_hooks_installed = False
_audit_installed = False


class Gate:
    """Where a warmup's steps run: a fork closes it and waits for the steps inside.

    A condition variable, not a lock held across each step: the forking thread then never
    holds anything a step needs while it waits.  A gate closed by a fork that did not
    happen (an audit hook after Ember's refused it) lets steps in again after
    :data:`FORK_WAIT_S`."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self.inside: list[str] = []  # the steps running now
        self.closed_at = 0.0  # when a fork closed it (time.monotonic()); 0: open

    @contextlib.contextmanager
    def step(self, name: str):
        with self._cond:
            while self.closed_at and time.monotonic() - self.closed_at < FORK_WAIT_S:
                self._cond.wait(0.05)
            self.inside.append(name)
        try:
            yield
        finally:
            with self._cond:
                self.inside.remove(name)
                self._cond.notify_all()

    def close(self, timeout: float) -> list[str]:
        """Let no new step in; wait up to ``timeout`` s for those inside; return the steps
        still running (the fork goes on regardless: it must never hang)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self.closed_at = time.monotonic()
            while self.inside and deadline > time.monotonic():
                self._cond.wait(deadline - time.monotonic())
            return list(self.inside)

    def open(self) -> None:
        with self._cond:
            self.closed_at = 0.0
            self._cond.notify_all()


def install_fork_hooks(warmups: dict[str, Any]) -> None:
    """At ``import ember``: the fork hooks, over ``warmups`` (:mod:`ember.startup`'s dict,
    kept by reference: warmups started later are in it)."""
    global _hooks_installed, _warmups
    _warmups = warmups
    if not _hooks_installed and hasattr(os, "register_at_fork"):
        _hooks_installed = True
        os.register_at_fork(
            before=_before_fork,
            after_in_parent=_after_fork_parent,
            after_in_child=_after_fork_child,
        )


def install_audit_hook() -> None:
    """Once a warmup runs: wait for its step at ``os.fork``'s audit event (module docstring).

    Audit hooks cannot be removed; after the warmup this one costs a set lookup per audited
    event, and nothing Ember does per launch raises one."""
    global _audit_installed
    if not _audit_installed and hasattr(os, "register_at_fork"):
        _audit_installed = True
        sys.addaudithook(_audit)


def _audit(event: str, _args) -> None:
    if event in _FORK_EVENTS and _warmups:
        try:
            _quiesce(FORK_WAIT_S)
        except BaseException:  # an audit hook that raises would refuse the fork itself
            pass


def _quiesce(timeout: float) -> None:
    """Close every warmup's gate and wait for the steps in progress (at most ``timeout``)."""
    if getattr(threading.current_thread(), "_ember_warmup", False):
        return  # a step that forks would wait for itself
    for w in list(_warmups.values()):
        w.quiesce(timeout)


def _before_fork() -> None:
    _quiesce(FORK_HOOK_WAIT_S)  # a fork without the audit event (gates still open)


def _after_fork_parent() -> None:
    for w in list(_warmups.values()):
        w.resume()


def _after_fork_child() -> None:
    """The warmup threads do not exist here; devices the parent initialized are unusable."""
    interrupted = False
    for w in list(_warmups.values()):
        interrupted = w.reset_in_child() or interrupted
    _poison_parent_backends(interrupted)


def _poison_parent_backends(interrupted: bool = False) -> None:
    """Every backend whose driver the parent started (by using it, or by the warmup's driver
    step) refuses to work here, with the fork message."""
    from ember.config import settings

    if interrupted:  # a step may have held the registry's lock in a thread that is gone
        registry.repair_after_fork()
    for name in registry.REGISTRY:
        hooks = sys.modules.get(registry.REGISTRY[name][0])
        started = getattr(hooks, "driver_started", None)
        w = _warmups.get(name)
        by_warmup = w is not None and w.driver_started and registry.instance(name) is None
        used = registry.instance(name) is not None or (started is not None and started())
        if not (used or by_warmup):
            continue
        forget = getattr(hooks, "forget_after_fork", None)
        if forget is not None:
            forget()  # before the parent's objects are dropped: nothing may call the driver
        label = getattr(hooks, "LABEL", name)
        how = " (by Ember's background warmup at import)" if by_warmup else ""
        # the parent would have picked the backend it warmed: say so instead of falling back
        select = by_warmup and settings.backend in ("auto", name)
        registry.disable(name, FORK_MESSAGE.format(name=label, how=how), select=select)
