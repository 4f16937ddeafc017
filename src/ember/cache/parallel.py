"""``ember precompile -j N``: Ember's standard kernels compiled by N processes at once.

Processes, not threads: a device compiler build is CPU-bound and single-threaded (PoCL's
clang; NVRTC), and the typing and code generation around it are Python.  Every worker builds
the same, deterministic list of examples (Ember's standard set, or the function a
``"module:function"`` string names) and compiles the entries at the indices it is handed;
the results meet in the disk cache, whose entries are written atomically, so the parent and
every later process find them.
Work goes out in small chunks, so the processes finish together and progress can be shown
as chunks come back.

Device compilers may print diagnostics straight to the process's stderr (PoCL's clang:
``1 warning generated.``).  :func:`compiler_output` captures what reaches file descriptor 2
while kernels compile - Python's own ``sys.stderr`` stays on the terminal - and shows it only
when asked (``ember precompile -v``).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

CHUNK = 4  # examples per task: small enough to balance the processes and show progress


class WorkerFailure(Exception):
    """A worker process died (the caller compiles in its own process instead)."""


def run(examples: str | None, jobs: int, progress, verbose: bool, echo) -> dict[str, Any]:
    """Compile the examples (None: the standard set; or a ``"module:function"`` string) in
    ``jobs`` processes; counts like ``precompile``'s."""
    from ember.cache.precompile import examples_list
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
    from ember.cache.precompile import run_serial

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
