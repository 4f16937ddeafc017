"""``ember precompile``: Ember's own kernels compiled for this device into the cache.

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

import importlib
import time
from collections.abc import Callable, Iterator
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
            result = parallel.run(examples, jobs, progress, verbose, echo)
        except parallel.WorkerFailure as exc:  # a crashed worker: do it here instead
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
    from ember.cache import memory, record

    before = memory.stats.compiles
    errors: list[str] = []
    items = list(_each(examples, errors, echo))
    chosen = items if indices is None else [items[i] for i in indices]
    done = 0
    with record() as rec, parallel.compiler_output(verbose) as noise:
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
    compiled = memory.stats.compiles - before
    return {
        "kernels": done, "compiled": compiled, "cached": done - compiled,
        "failed": len(errors), "errors": errors, "jobs": 1, "compiler_output": noise.lines,
        "compiler_text": noise.text,
    }  # fmt: skip


def _disk_cache_usable() -> bool:
    from ember.cache import info

    state = info()
    return bool(state["enabled"] and state["writable"])


# the parallel driver (its own module: this one says what is precompiled)
from ember.cache import parallel  # noqa: E402
