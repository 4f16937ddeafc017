"""Ember's array library: :class:`ember.ndarray` and NumPy-style functions on it, written
as Ember kernels (GPUArrays.jl's design: a few generic kernels parametrized by operator).

Modules: ``ndarray`` (the class), ``creation``, ``elementwise`` (ufunc dispatch and
launch), ``kernels`` (the generic kernels), ``ops`` (their operators), ``rules`` (type
resolution), ``broadcast``, ``ufuncs`` (the functions), ``indexing``, ``manipulation``,
``interop`` (DLPack, CUDA Array Interface), ``display``, ``info``, ``standard`` (the
precompiled set).  The public names are exported from ``ember`` itself.
"""

from ember.array import ndarray as _ndarray  # first: the others import the class
from ember.runtime import argtypes as _argtypes

_argtypes.register_array(_ndarray.ndarray)  # kernels take it (the compiler never imports it)

__all__ = ["standard_kernels"]


def standard_kernels(*args, **kwargs):
    """The kernels (and example arguments) of Ember's standard precompiled set; see
    :func:`ember.array.standard.standard_kernels`."""
    from ember.array.standard import standard_kernels as make

    return make(*args, **kwargs)
