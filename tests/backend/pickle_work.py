"""Module-level kernel and worker for tests/backend/test_pickle.py: a spawned child process
imports this module to load them by reference."""

import ember


@ember.kernel
def scale(a, x):
    i = ember.global_id()
    if i < x.shape[0]:
        x[i] = a * x[i]


def scale_in_child(kernel, x, a):
    """Runs in the child: launch the unpickled kernel on the unpickled array, send it back."""
    kernel.launch(x.shape[0])(a, x)
    return x, ember.get_backend().name
