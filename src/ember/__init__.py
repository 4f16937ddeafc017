"""Ember: GPU programming from Python with no waiting.

Public API only.  Heavy pieces (NumPy, the drivers, the compiler) are imported on first use,
so ``import ember`` does no driver work and stays fast.
"""

from __future__ import annotations

import importlib

from ember import config
from ember import startup as _warmup
from ember._version import __version__
from ember.dtypes import (
    DType,
    bfloat16,
    bool_,
    complex64,
    complex128,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ember.errors import (
    ArgumentError,
    BackendUnavailableError,
    BinaryError,
    ClosedError,
    CompileError,
    DriverError,
    EmberError,
    EmberPerformanceWarning,
    InternalError,
    KernelError,
    KernelSyntaxError,
    KernelTypeError,
    KernelTypeWarning,
    LaunchError,
    OutOfMemoryError,
    RecompileWarning,
    SlowPathError,
    UnsupportedFeatureError,
)

# kernel-side functions (ember.lang): thread indices, barrier, shared memory, atomics, math
_LANG = (
    "thread_idx", "block_idx", "block_dim", "grid_dim", "global_id", "global_size", "grid",
    "lane_id", "warp_size", "barrier", "threadfence", "shared", "atomic_add", "atomic_sub",
    "atomic_min", "atomic_max", "atomic_exchange", "atomic_and", "atomic_or", "atomic_xor",
    "atomic_cas", "atomic_load", "ballot", "popc", "shfl", "shfl_up", "shfl_down", "shfl_xor",
    "warp_sum", "warp_min", "warp_max",
    "sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "erf", "erfc", "lgamma", "tgamma", "floor", "ceil", "trunc", "rint", "fabs", "pow",
    "atan2", "hypot", "copysign", "fmod", "fmin", "fmax", "isnan", "isinf", "isfinite", "fma",
    "unsafe_trunc",
    # issue 14 (ember.lang.NEW_NAMES)
    "local", "static_range", "grid_sync", "atomic_exch", "atomic_inc", "atomic_dec",
    "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync",
    "any_sync", "syncwarp", "activemask", "erfinv", "erfcinv", "clz", "ffs", "brev",
    "umulhi", "mulhi", "sincos", "frexp", "ldexp", "bitcast", "match_any_sync",
)  # fmt: skip

# name -> module that defines it; imported on first attribute access (PEP 562).
_LAZY = {
    "ndarray": "ember.array.ndarray",
    "asnumpy": "ember.array.ndarray",
    "empty": "ember.array.creation",
    "zeros": "ember.array.creation",
    "asarray": "ember.array.creation",
    "RawKernel": "ember.runtime.rawkernel",
    "get_backend": "ember.runtime.api",
    "use_backend": "ember.runtime.api",
    "devices": "ember.runtime.api",
    "Device": "ember.runtime.device",
    "synchronize": "ember.runtime.api",
    "synchronize_async": "ember.runtime.api",
    "default_stream": "ember.runtime.api",
    "Stream": "ember.runtime.api",
    "Event": "ember.runtime.api",
    "AllocCache": "ember.runtime.alloccache",
    "cached": "ember.runtime.alloccache",
    "uncached": "ember.runtime.alloccache",
    "kernel": "ember.compiler.kernel",
    "Kernel": "ember.compiler.kernel",
    "warmup": "ember.startup",
    **{name: "ember.lang" for name in _LANG},
}
# the array library (ember.array): these override the kernel-function names above with
# array functions that still compile to the same intrinsics inside kernels
_ARRAY = {
    "ember.array.creation": (
        "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like", "eye",
        "from_dlpack", "meshgrid", "tril", "triu",
    ),
    "ember.array.ranges": ("arange", "linspace"),
    "ember.array.manipulation": (
        "astype", "ascontiguousarray", "permute_dims", "transpose", "matrix_transpose",
        "swapaxes", "moveaxis", "squeeze", "expand_dims", "flip", "broadcast_to",
        "broadcast_arrays", "reshape", "concatenate", "concat", "stack", "unstack", "roll", "tile",
        "repeat",
    ),
    "ember.array.ufuncs": (
        "negative", "positive", "abs", "sign", "square", "reciprocal", "logical_not",
        "bitwise_invert", "sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2",
        "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
        "asinh", "acosh", "atanh", "erf", "erfc", "lgamma", "tgamma", "rint", "fabs", "floor",
        "ceil", "trunc", "isnan", "isinf", "isfinite", "signbit", "add", "subtract",
        "multiply", "divide", "floor_divide", "remainder", "pow", "fmod", "equal",
        "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
        "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
        "bitwise_left_shift", "bitwise_right_shift", "maximum", "minimum", "fmax", "fmin",
        "atan2", "hypot", "copysign", "logaddexp", "where", "clip", "round", "absolute",
        "power", "true_divide", "mod", "invert", "left_shift", "right_shift", "arcsin",
        "arccos", "arctan", "arctan2", "arcsinh", "arccosh", "arctanh", "conj", "conjugate",
        "vectorize", "real", "imag", "angle",
        "deg2rad", "rad2deg", "degrees", "radians", "heaviside", "gcd", "lcm", "float_power",
        "divmod", "modf", "frexp", "ldexp", "logaddexp2", "spacing", "bitwise_count",
        "isneginf", "isposinf", "sinc", "i0",
    ),
    "ember.array.reductions": (
        "sum", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "mean", "var", "std",
        "any", "all", "count_nonzero", "nansum", "nanprod", "nanmax", "nanmin", "nanargmax",
        "nanargmin", "nanmean", "nanvar", "nanstd", "var_mean", "std_mean",
    ),
    "ember.array.mapreduce": ("reduce", "mapreduce", "neutral_element", "register_neutral_element"),
    "ember.array.matmul": (
        "matmul", "tensordot", "vecdot", "vdot", "outer", "dot", "inner", "einsum", "matvec",
        "vecmat",
    ),
    "ember.array.extras": ("nextafter", "diff", "unravel_index", "ravel_multi_index"),
    "ember.array.indexing": ("allowscalar", "ScalarIndexingError", "ScalarIndexingWarning"),
    "ember.array.scan": (
        "cumulative_sum", "cumulative_prod", "cumsum", "cumprod", "accumulate",
    ),
    "ember.array.search": ("nonzero", "flatnonzero", "argwhere", "searchsorted"),
    "ember.array.gather": ("take", "take_along_axis", "put"),
    "ember.array.sort": ("sort", "argsort"),
    "ember.array.sets": (
        "unique_values", "unique_counts", "unique_inverse", "unique_all", "unique",
    ),
    "ember.array.stats": (
        "median", "nanmedian", "percentile", "nanpercentile", "quantile", "nanquantile",
        "average", "ptp", "bincount", "histogram", "histogram_bin_edges", "digitize",
        "nancumsum", "nancumprod",
    ),
    "ember.array.covariance": ("cov", "corrcoef"),
    "ember.array.setops": (
        "isin", "intersect1d", "union1d", "setdiff1d", "setxor1d", "partition",
        "argpartition", "lexsort", "compress", "extract", "place", "putmask", "copyto", "select",
        "choose", "put_along_axis",
    ),
    "ember.array.joining": (
        "hstack", "vstack", "dstack", "column_stack", "split", "array_split", "hsplit",
        "vsplit", "dsplit", "atleast_1d", "atleast_2d", "atleast_3d", "append", "ravel",
        "copy", "fliplr", "flipud", "rot90", "identity", "isclose", "allclose", "array_equal",
        "array_equiv", "nan_to_num", "around", "fix",
    ),
    "ember.array.grids": (
        "tri", "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from",
        "diag_indices", "diag_indices_from", "indices", "ix_", "fromfunction", "logspace",
        "geomspace", "vander", "kron", "insert", "delete", "resize", "trim_zeros",
        "ediff1d",
    ),
    "ember.array.padding": ("pad",),
    "ember.array.signal": (
        "convolve", "correlate", "interp", "gradient", "trapezoid", "unwrap", "cross",
    ),
    "ember.array.polynomials": (
        "polyval", "polyfit", "polyder", "polyint", "polyadd", "polysub", "polymul", "roots",
    ),
    "ember.array.windows": ("hamming", "hanning", "bartlett", "blackman", "kaiser"),
    "ember.array.histograms": ("histogram2d", "histogramdd"),
    "ember.array.bits": ("packbits", "unpackbits"),
    "ember.array.predicates": (
        "iscomplex", "isreal", "iscomplexobj", "isrealobj", "real_if_close", "promote_types",
        "common_type", "min_scalar_type", "ndim", "shape", "size", "shares_memory",
        "may_share_memory", "asanyarray", "asarray_chkfinite", "require",
    ),
    "ember.array.polyroots": ("sort_complex", "poly", "polydiv"),
    "ember.array.blocks": (
        "rollaxis", "fill_diagonal", "diagflat", "block", "diagonal", "diag", "trace",
    ),
    "ember.array.functional": ("piecewise", "apply_along_axis", "apply_over_axes"),
    "ember.array.broadcast": ("broadcast_shapes",),
    "ember.array.info": (
        "result_type", "can_cast", "finfo", "iinfo", "isdtype", "bool", "newaxis", "e",
        "pi", "inf", "nan", "__array_api_version__", "__array_namespace_info__",
    ),
}  # fmt: skip
_LAZY.update({name: module for module, names in _ARRAY.items() for name in names})
# public submodules, imported on first access
_MODULES = {
    "memory": "ember.runtime.memory",
    "cache": "ember.cache",
    "random": "ember.array.random",
    "linalg": "ember.array.linalg",
    "fft": "ember.array.fft",
}


def __getattr__(name: str):
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ember' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


# Background warmup of the device (ember/startup.py): returns at once, never raises.
try:
    _warmup.at_import()
except Exception:  # noqa: S110 - a warmup problem must never break the import
    pass


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_MODULES))


__all__ = [
    "__version__", "config", "DType", "dtype", "bool_", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64", "complex64",
    "complex128", "bfloat16",
    "EmberError", "BackendUnavailableError", "CompileError", "DriverError", "InternalError",
    "KernelError", "KernelSyntaxError", "KernelTypeError", "LaunchError", "OutOfMemoryError",
    "UnsupportedFeatureError", "ArgumentError", "EmberPerformanceWarning", "SlowPathError",
    "RecompileWarning", "BinaryError", "ClosedError", "KernelTypeWarning",
    *_LAZY, *_MODULES,
]  # fmt: skip
