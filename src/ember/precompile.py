"""``ember precompile``: Ember's own kernels compiled for this device into the cache.

The kernels are those of the array library (``ember.array.standard_kernels()``: pairs of a
kernel and example arguments, for the common dtypes) and of ``ember demo``.  Each example
is specialized (compiled, or found in the cache already); NumPy arrays in the examples are
copied to the device first (only their dtype, shape and layout matter).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
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
    """The examples, from ``examples`` or from every source of :func:`standard_examples`;
    a source that fails is reported and skipped."""
    if examples is not None:
        yield from examples
        return
    for name, make in standard_examples():
        try:
            yield from make()
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            echo(f"  failed: {errors[-1]}")


def _device_args(args: tuple) -> tuple:
    import numpy as np

    import ember

    return tuple(ember.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def precompile(examples=None, bundle: str | None = None, echo=print) -> dict[str, Any]:
    """Specialize every example on the current backend; optionally save them as a bundle.

    Returns counts: ``kernels`` (specializations), ``compiled`` (built now), ``cached``
    (already in a cache), ``failed`` (with the errors in ``errors``), ``seconds``."""
    from ember.cache import memory, record

    t0 = time.perf_counter()
    before = memory.stats.compiles
    done, errors = 0, []
    with record() as rec:
        for kernel, args in _each(examples, errors, echo):
            name = getattr(kernel, "__name__", repr(kernel))
            try:
                kernel.specialize(*_device_args(tuple(args)))
                done += 1
            except Exception as exc:  # one kernel failing must not stop the others
                errors.append(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                echo(f"  failed: {errors[-1]}")
    if bundle:
        rec.save(bundle)
    compiled = memory.stats.compiles - before
    return {
        "kernels": done, "compiled": compiled, "cached": done - compiled,
        "failed": len(errors), "errors": errors, "seconds": time.perf_counter() - t0,
    }  # fmt: skip
