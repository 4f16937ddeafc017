"""``ember precompile``: Ember's own kernels compiled for this device into the cache, in
parallel processes.

The kernels are those of the array library (``ember.array.standard_kernels()``: pairs of a
kernel and example arguments, for the common dtypes) and of ``ember demo``.  Each example
is specialized (compiled, or found in the cache already); NumPy arrays in the examples are
copied to the device first (only their dtype, shape and layout matter).

Other sets work the same way: ``precompile("mypackage.kernels:examples")`` (and ``ember
precompile --examples mypackage.kernels:examples``) names a function returning ``(kernel,
example_args)`` pairs, which every compiler process can import (so a package can precompile
its own kernels in parallel and save them as a bundle).  A list of pairs is compiled in
this process only.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any


def standard_examples() -> Iterator[tuple[str, Any]]:
    """(source name, generator of (kernel, example arguments)): the array library's standard
    kernels, then the demo kernels."""
    import ember.array

    standard = getattr(ember.array, "standard_kernels", None)
    if standard is not None:
        yield "ember.array.standard_kernels()", standard
    yield "ember.demo", demo_examples


def demo_examples() -> Iterator[tuple[Any, tuple]]:
    import numpy as np

    from ember import demo

    f32, f64 = np.zeros(64, np.float32), np.zeros(64, np.float64)
    m32, m64 = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float64)
    yield demo.axpy, (2.0, f32, f32)
    yield demo.stencil, (m64, m64)
    yield demo.matmul, (m32, m32, m32)
    yield demo.histogram, (np.zeros(64, np.int32), np.zeros(demo.BINS, np.int64))
    yield demo.block_sum, (f64, np.zeros(1, np.float64))


def _each(examples, errors: list, echo) -> Iterator[tuple[Any, tuple]]:
    """The examples: the standard ones (None), those the function named by a
    ``"module:function"`` string returns, or the given pairs; a source that fails is
    reported and skipped."""
    if examples is not None and not isinstance(examples, str):
        yield from examples
        return
    sources = standard_examples() if examples is None else [(examples, named(examples))]
    for name, make in sources:
        try:
            yield from make()
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            echo(f"  failed: {errors[-1]}")


def named(spec: str) -> Callable[[], Any]:
    """The function a ``"module:function"`` string names (imported now)."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"examples must be named 'module:function', got {spec!r}")
    return getattr(importlib.import_module(module), attr)


def _device_args(args: tuple) -> tuple:
    import numpy as np

    import ember

    return tuple(ember.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def precompile(
    examples=None,
    bundle: str | None = None,
    echo=print,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    verbose: bool = False,
) -> dict[str, Any]:
    """Specialize every example on the current backend; optionally save them as a bundle.

    ``examples``: None (Ember's standard set), a ``"module:function"`` string, or a list of
    ``(kernel, args)`` pairs.  ``jobs`` > 1 compiles the first two in that many processes,
    which share their results through the disk cache (with the cache off, or for a list,
    the work stays in this process).  ``progress(done, total)`` is called as kernels finish.
    What the device compiler prints (PoCL's clang writes its warnings to the process's
    stderr) is shown only when ``verbose``.

    Returns counts: ``kernels`` (specializations), ``compiled`` (built now), ``cached``
    (already in a cache), ``failed`` (with the errors in ``errors``), ``seconds``,
    ``jobs`` (processes used) and ``compiler_output`` (lines the compiler printed)."""
    t0 = time.perf_counter()
    result = None
    if (examples is None or isinstance(examples, str)) and jobs > 1 and _disk_cache_usable():
        try:
            result = run_parallel(examples, jobs, progress, verbose, echo)
        except WorkerFailure as exc:  # a crashed worker: do it here instead
            echo(f"  parallel compile failed ({exc}); compiling in this process")
    if result is None or bundle:  # with a bundle: all disk-cache hits now, recorded here
        quiet = result is not None
        serial = run_serial(examples, (lambda *_: None) if quiet else echo,
                            None if quiet else progress, verbose, record_to=bundle)  # fmt: skip
        result = result or serial
    result.pop("compiler_text", None)
    result["seconds"] = time.perf_counter() - t0
    return result


def examples_list(examples, errors: list, echo) -> list[tuple[Any, tuple]]:
    """The examples of None or a ``"module:function"`` string, in their fixed order (every
    compiler process builds the same list)."""
    return list(_each(examples, errors, echo))


def run_serial(
    examples, echo, progress, verbose: bool, indices=None, record_to: str | None = None
) -> dict[str, Any]:
    """Specialize the examples (those at ``indices`` only, if given) in this process;
    ``record_to``: also save them as a bundle there."""
    from ember.cache import lookup, record

    before = lookup.stats.compiles
    errors: list[str] = []
    items = list(_each(examples, errors, echo))
    chosen = items if indices is None else [items[i] for i in indices]
    done = 0
    with record() as rec, compiler_output(verbose) as noise:
        for kernel, args in chosen:
            name = getattr(kernel, "__name__", repr(kernel))
            try:
                kernel.specialize(*_device_args(tuple(args)))
                done += 1
            except Exception as exc:  # one kernel failing must not stop the others
                errors.append(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                echo(f"  failed: {errors[-1]}")
            if progress is not None:
                progress(done + len(errors), len(chosen))
    if record_to:
        rec.save(record_to)
    compiled = lookup.stats.compiles - before
    return {
        "kernels": done, "compiled": compiled, "cached": done - compiled,
        "failed": len(errors), "errors": errors, "jobs": 1, "compiler_output": noise.lines,
        "compiler_text": noise.text,
    }  # fmt: skip


def _disk_cache_usable() -> bool:
    from ember.cache import info

    state = info()
    return bool(state["enabled"] and state["writable"])


# ------------------------------------------------------------------------- in parallel
#
# ``ember precompile -j N``: processes, not threads - a device compiler build is CPU-bound and
# single-threaded (PoCL's clang, NVRTC), and the typing and code generation around it are
# Python.  Every worker builds the same, deterministic list of examples (the standard set,
# or what a ``"module:function"`` string names) and compiles the entries at the indices it is
# handed; the results meet in the disk cache, whose entries are written atomically, so the
# parent and every later process find them.  Work goes out in small chunks, so the processes
# finish together and progress can be shown as chunks come back.
#
# Device compilers may print diagnostics straight to the process's stderr (PoCL's clang:
# "1 warning generated.").  compiler_output() captures what reaches file descriptor 2 while
# kernels compile - Python's own sys.stderr stays on the terminal - and shows it only when
# asked (``ember precompile -v``).

CHUNK = 4  # examples per task: small enough to balance the processes and show progress


class WorkerFailure(Exception):
    """A worker process died (the caller compiles in its own process instead)."""


def run_parallel(examples: str | None, jobs: int, progress, verbose: bool, echo) -> dict:
    """Compile the examples (None: the standard set; or a ``"module:function"`` string) in
    ``jobs`` processes; counts like ``precompile``'s."""
    from ember.config import settings
    from ember.runtime import backend as registry

    errors: list[str] = []
    total = len(examples_list(examples, errors, echo))
    chunks = [list(range(i, min(i + CHUNK, total))) for i in range(0, total, CHUNK)]
    workers = max(1, min(jobs, len(chunks)))
    result: dict[str, Any] = {
        "kernels": 0, "compiled": 0, "failed": 0, "errors": errors, "jobs": workers,
        "compiler_output": 0,
    }  # fmt: skip
    context = multiprocessing.get_context("spawn")  # no fork of a process with a driver
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start,
        initargs=(registry.get().name, dict(settings.values)),
    ) as pool:
        futures = [pool.submit(work, examples, chunk, verbose) for chunk in chunks]
        finished = 0
        for future in as_completed(futures):
            try:
                part = future.result()
            except BrokenProcessPool as exc:
                raise WorkerFailure(str(exc) or "a worker process died") from exc
            _merge(result, part, echo, verbose)
            finished += part["kernels"] + part["failed"]
            if progress is not None:
                progress(finished, total)
    result["failed"] = len(result["errors"])
    result["cached"] = result["kernels"] - result["compiled"]
    return result


def _merge(result: dict, part: dict, echo, verbose: bool) -> None:
    for key in ("kernels", "compiled", "compiler_output"):
        result[key] += part[key]
    for error in part["errors"]:
        result["errors"].append(error)
        echo(f"  failed: {error}")
    if verbose and part["output"]:
        sys.stderr.write(part["output"])


def _start(backend: str, values: dict) -> None:
    """Worker initializer: the parent's settings (its cache directory, overrides included)
    and backend."""
    from ember.config import settings
    from ember.runtime import backend as registry

    settings.values.update(values)
    registry.use(backend)


def work(examples: str | None, indices: list[int], verbose: bool) -> dict[str, Any]:
    """In a worker: compile the examples at ``indices``; counts, errors, compiler output."""
    part = run_serial(examples, lambda *_: None, None, False, indices)
    text = part.pop("compiler_text")
    part["output"] = text if verbose else ""
    return part


class _Captured:
    lines = 0
    text = ""


@contextlib.contextmanager
def compiler_output(verbose: bool) -> Iterator[_Captured]:
    """Capture what is written to file descriptor 2 (C code: the device compiler) in the
    block; ``sys.stderr`` (Python's warnings, errors) still reaches the real stderr.  The
    text is written out afterwards when ``verbose``; ``lines`` counts it either way."""
    captured = _Captured()
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real stderr (embedded, pythonw)
        yield captured
        return
    python_stderr = sys.stderr
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        stream = sys.stderr = _python_stream(saved, python_stderr)
        try:
            yield captured
        finally:
            sys.stderr = python_stderr
            if stream is not python_stderr:
                stream.close()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode(errors="replace")
    captured.lines = len(captured.text.splitlines())
    if verbose and captured.text:
        sys.stderr.write(captured.text)


def _python_stream(fd: int, like) -> Any:
    """A text stream on ``fd`` (the real stderr) for Python's writes during the capture."""
    if getattr(like, "fileno", None) is None:
        return like
    try:
        if like.fileno() != 2:  # already redirected in Python (pytest's capture): keep it
            return like
    except (OSError, ValueError):
        return like
    return os.fdopen(os.dup(fd), "w", buffering=1, encoding=getattr(like, "encoding", None))


def default_jobs() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
