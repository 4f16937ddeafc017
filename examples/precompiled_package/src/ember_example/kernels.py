"""The package's kernels: plain ``@ember.kernel`` functions, nothing bundle-specific."""

import ember


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@ember.kernel
def clip(x, low, high):
    i = ember.global_id()
    if i < x.shape[0]:
        x[i] = min(max(x[i], low), high)
