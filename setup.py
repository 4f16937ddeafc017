"""Ember's compiled pieces: seven optional C stubs (the hot paths of launch, allocation and
copies, the array's fields and the streams' counters).

Everything else is in pyproject.toml.  The stubs are built where a C compiler and Python's
headers exist; where the build fails, the install goes on and Ember uses its Python paths:

* ``ember.backends.cuda._ccall``: the driver call and the specializations' argument guards
  (without it: ``ctypes``, ~1 us slower a launch);
* ``ember.compiler._dispatch``: ``kernel[grid, block]`` (without it: a Python closure);
* ``ember.runtime._pool``: the caching allocator's hit path and its buffers (without it: the
  same classes in Python, with a ``__del__`` frame on every free);
* ``ember.array._core``: ``ember.ndarray``'s fields, fixed once set (without it: plain slots,
  which let ``a.shape = ...`` through with the array's cached launch data left stale);
* ``ember.runtime._waitable``: the counters of streams and events as C fields, which the
  launcher reads and adds to in place (without it: instance attributes, read through the
  stream's ``__dict__``);
* ``ember.backends.cuda._fill``: a staged upload's host copies on C threads (POSIX threads;
  without it: the same pipeline with Python threads, whose hand-offs go through the GIL);
* ``ember.backends.cpu._guard``: a cpu kernel's memory fault (SIGSEGV, SIGBUS, SIGFPE,
  SIGILL) raised as an error of its launch (POSIX; without it: the fault ends the process,
  as a native kernel's would).

They use the stable ABI, so one wheel serves Python 3.10 and later.
"""

import sys

from setuptools import Extension, setup

THREADS = [] if sys.platform == "win32" else ["-pthread"]
CUDA = "src/ember/backends/cuda/"
# _ccall: the module (and the tests' probes), the launcher, the guarded runner, NumPy scalars
WAITABLE = "src/ember/runtime/_waitable"  # its header: the layout the launcher reads
SLOTS = "src/ember/_slots.h"  # reading an object slot in place (_ccall and _dispatch)
CCALL = [f"{CUDA}_ccall{part}.c" for part in ("", "_launch", "_runner", "_scalars")]

setup(
    ext_modules=[
        Extension(
            name,
            sources,
            py_limited_api=True,
            define_macros=[("Py_LIMITED_API", "0x030A0000")],
            extra_compile_args=flags,
            extra_link_args=flags,
            depends=depends,
            optional=True,
        )
        for name, sources, depends, flags in (
            ("ember.backends.cuda._ccall", CCALL, [CUDA + "_ccall.h", WAITABLE + ".h", SLOTS], []),
            ("ember.compiler._dispatch", ["src/ember/compiler/_dispatch.c"], [SLOTS], []),
            ("ember.runtime._pool", ["src/ember/runtime/_pool.c"], [], []),
            ("ember.array._core", ["src/ember/array/_core.c"], [], []),
            ("ember.runtime._waitable", [WAITABLE + ".c"], [WAITABLE + ".h"], []),
            ("ember.backends.cuda._fill", [CUDA + "_fill.c"], [], THREADS),
            ("ember.backends.cpu._guard", ["src/ember/backends/cpu/_guard.c"], [], THREADS),
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
