"""An example package that ships its kernels precompiled.

At import it loads ``kernels.ember`` (made by ``build_bundle.py``) when it is there, so its
kernels are cache hits on a matching device: no compiler runs on the user's machine.  On
any other device, or without the file, the kernels compile on first use as usual.
"""

import warnings
from importlib import resources

import ember
from ember_example.kernels import axpy, clip

__all__ = ["axpy", "clip", "saxpy", "clipped", "workload"]

_BUNDLE = resources.files(__name__) / "kernels.ember"
if _BUNDLE.is_file():
    try:
        ember.cache.load_bundle(_BUNDLE)
    except ember.cache.BundleError as exc:  # a damaged file: compile instead, and say so
        warnings.warn(f"ember_example: ignoring its kernel bundle: {exc}", stacklevel=2)


def saxpy(a, x, y):
    """``y += a * x`` on the device (``a`` is cast to ``x``'s dtype)."""
    axpy.launch(x.shape[0])(x.dtype(a), x, y)
    return y


def clipped(x, low, high):
    """Clip ``x`` in place to ``[low, high]``."""
    clip.launch(x.shape[0])(x, x.dtype(low), x.dtype(high))
    return x


def workload():
    """A representative run: every kernel with every dtype the package supports.  The bundle
    is recorded from this (build_bundle.py); tests run it to check it hits."""
    import numpy as np

    results = []
    for dtype in (np.float32, np.float64):
        x = ember.asarray(np.linspace(-2, 2, 1000, dtype=dtype))
        y = ember.asarray(np.ones(1000, dtype=dtype))
        saxpy(2, x, y)
        clipped(y, 0, 3)
        results.append(float(y.to_numpy().sum()))
    return results
