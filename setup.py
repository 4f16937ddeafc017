"""Ember's compiled pieces: three optional C stubs on the hot paths of launch and allocation.

Everything else is in pyproject.toml.  The stubs are built where a C compiler and Python's
headers exist; where the build fails, the install goes on and Ember uses its Python paths:

* ``ember.backends.cuda._ccall``: the driver call and the specializations' argument guards
  (without it: ``ctypes``, ~1 us slower a launch);
* ``ember.compiler._dispatch``: ``kernel[grid, block]`` (without it: a Python closure);
* ``ember.runtime._pool``: the caching allocator's hit path and its buffers (without it: the
  same classes in Python, with a ``__del__`` frame on every free).

They use the stable ABI, so one wheel serves Python 3.10 and later.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            name,
            [source],
            py_limited_api=True,
            define_macros=[("Py_LIMITED_API", "0x030A0000")],
            optional=True,
        )
        for name, source in (
            ("ember.backends.cuda._ccall", "src/ember/backends/cuda/_ccall.c"),
            ("ember.compiler._dispatch", "src/ember/compiler/_dispatch.c"),
            ("ember.runtime._pool", "src/ember/runtime/_pool.c"),
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
