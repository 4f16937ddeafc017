"""Ember's one compiled piece: an optional C stub for the kernel launch's driver call.

Everything else is in pyproject.toml.  The stub (``ember.backends.cuda._ccall``) is built
where a C compiler and Python's headers exist; where the build fails, the install goes on
and Ember calls the driver through ``ctypes`` instead (the same calls, ~1 us slower each).
It uses the stable ABI, so one wheel serves Python 3.10 and later.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ember.backends.cuda._ccall",
            ["src/ember/backends/cuda/_ccall.c"],
            py_limited_api=True,
            define_macros=[("Py_LIMITED_API", "0x030A0000")],
            optional=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
