"""Ctrl-C during a wait: ``KeyboardInterrupt`` comes at once, the device work goes on.

A real child process waits on a long kernel; this process sends it SIGINT and times how
long the ``KeyboardInterrupt`` takes.  Before issue 18 the signal was seen only when the
driver wait returned, i.e. when the kernel ended (3-4 s late).  The bound below is generous
(the target is 0.1 s; this machine may be loaded): what the test really checks is that the
interrupt arrived while the kernel was still running, and that afterwards the same stream
and device work normally (the result is complete, new work runs).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

KERNEL_S = 1.8  # how long each waited-for kernel runs (7 rounds: 12.6 s of the CI run)
SIGNAL_AFTER_S = 0.3  # past the spin and yield phases: the wait blocks in the driver
BOUND_S = 1.2  # generous: the kernel still has 1.5 s to run at this point

CHILD = """
import sys, time
sys.path.insert(0, {here!r})
import numpy as np
import ember
from ember import config
from device_work import Work, ready_zeros

backend = ember.use_backend({backend!r})  # current for the rest: arrays are made on it too
work = Work.on(backend)
stream = backend.default_stream  # a blocking copy (stream=None) is ordered after the kernel
out = ready_zeros(4)

def wait_kind(kind):
    if kind == "stream":
        stream.synchronize()
    elif kind == "event":
        event = backend.create_event()
        event.record(stream)
        event.synchronize()
    elif kind == "device":
        ember.synchronize()
    else:  # a blocking copy to the host, ordered after the kernel
        backend.copy_to_host(np.empty(4, np.int32), out.buffer, 0)

for label, kind, settings in {rounds!r}:
    with config.override(**settings):
        value = len(label) + 7
        work.spin_then({kernel_s}, out, value, stream)
        print("WAIT", label, flush=True)
        try:
            wait_kind(kind)
            print("NOINTERRUPT", label, flush=True)
        except KeyboardInterrupt:
            print("INTERRUPTED", label, "busy" if not stream.query() else "idle", flush=True)
        stream.synchronize()  # the next wait works and sees the finished work
        got = np.empty(4, np.int32)
        backend.copy_to_host(got, out.buffer, 0, stream)
        stream.synchronize()
        work.add(out, 1, stream)  # and the device takes new work
        stream.synchronize()
        after = np.empty(4, np.int32)
        backend.copy_to_host(after, out.buffer, 0, stream)
        stream.synchronize()
        print("DONE", label, int(got[0]) == value, int(after[0]) == value + 1, flush=True)
"""

ROUNDS = [
    ("fast", "stream", {"sync": "fast", "sync_blocking": False}),
    ("fast-blocking", "stream", {"sync": "fast", "sync_blocking": True}),
    ("plain", "stream", {"sync": "plain", "sync_blocking": False}),
    ("plain-blocking", "stream", {"sync": "plain", "sync_blocking": True}),
    ("event", "event", {}),
    ("device", "device", {}),
    ("copy", "copy", {}),
]


def test_ctrl_c_interrupts_every_kind_of_wait_and_the_device_stays_usable(backend):
    here = os.path.dirname(os.path.abspath(__file__))
    code = CHILD.format(here=here, backend=backend.name, rounds=ROUNDS, kernel_s=KERNEL_S)
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    results, latencies = {}, {}
    try:
        sent = 0.0
        for line in iter(child.stdout.readline, ""):
            what, label, *rest = line.split()
            if what == "WAIT":
                time.sleep(SIGNAL_AFTER_S)
                sent = time.monotonic()
                child.send_signal(signal.SIGINT)
            elif what in ("INTERRUPTED", "NOINTERRUPT"):
                latencies[label] = (what, time.monotonic() - sent, rest)
            elif what == "DONE":
                results[label] = rest
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, (latencies, results, child.stderr.read()[-3000:])
    for label, _, _ in ROUNDS:
        what, latency, rest = latencies[label]
        assert what == "INTERRUPTED", f"{label}: the wait ended without KeyboardInterrupt"
        assert rest == ["busy"], f"{label}: KeyboardInterrupt only after the kernel ended"
        assert latency < BOUND_S, f"{label}: KeyboardInterrupt {latency:.2f} s after SIGINT"
        assert results[label] == ["True", "True"], f"{label}: wrong results after the interrupt"


@pytest.mark.parametrize("handler", ["ignore", "default"])
def test_without_a_python_sigint_handler_waits_block_in_the_driver(handler):
    """SIG_IGN / SIG_DFL: nothing to let through, so no hand-off to a waiter thread."""
    from ember.runtime import sync

    # (a process started in the background by a non-interactive shell, as under nohup,
    # begins with SIGINT ignored: Python then installs no handler of its own)
    had_handler = callable(signal.getsignal(signal.SIGINT))
    previous = signal.signal(
        signal.SIGINT, signal.SIG_IGN if handler == "ignore" else signal.SIG_DFL
    )
    try:
        assert not sync._signals_raise()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sync._signals_raise() == had_handler
