"""Ember's benchmark suite: ``python -m benchmarks`` from the repository root.

Each area is a module (``runtime``: launch, sync, allocation and copy overheads) whose
cases are registered with :func:`benchmarks.harness.case`; a new area is a new module
listed in :data:`AREAS`.  Every case runs Ember, the raw ``cuda.bindings`` floor and the
peers (CuPy, PyTorch) that are importable, side by side in one process.
"""

AREAS = (
    "runtime", "compiler", "sync", "memory", "startup", "diagnostics", "arrays", "numeric",
    "reductions", "arrays_sort", "scale", "fft", "cpu",
)  # fmt: skip
