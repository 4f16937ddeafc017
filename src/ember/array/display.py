"""``repr`` and ``str`` of device arrays: NumPy's text, with the data copied to the host.

Small arrays are copied whole.  Above NumPy's print threshold only what NumPy would show is
copied - the ``edgeitems`` first and last entries along every axis - into an otherwise
untouched host array (``numpy.zeros`` maps zero pages lazily, so the host array costs no
memory where nothing is written), and NumPy summarizes it with ``...`` as it would the
real thing.
"""

from __future__ import annotations

import itertools
from typing import Any


def host_for_display(x) -> Any:
    """A NumPy array that prints like ``x`` (whole, or only its edges when large); a dtype
    NumPy lacks (bfloat16 without ml_dtypes) as its float32 values."""
    import numpy as np

    if not x.dtype.has_numpy:
        x = x.astype("float32")  # (exact: a 16-bit float's values are float32 values)
    options = np.get_printoptions()
    if x.size <= options["threshold"]:
        return x.to_numpy()
    edge = options["edgeitems"]
    host = np.zeros(x.shape, x.dtype.numpy)
    ranges = []
    for n in x.shape:
        if n > 2 * edge:
            ranges.append((slice(0, edge), slice(n - edge, n)))
        else:
            ranges.append((slice(0, n),))
    for corner in itertools.product(*ranges):
        host[corner] = x[corner].to_numpy()
    return host


def array_repr(x) -> str:
    """``ember.asarray([1., 2.], dtype=float32)``: NumPy's repr of the values (``ember.array``
    is the package, so the repr names the function that makes such an array)."""
    import numpy as np

    host = host_for_display(x)
    text = np.array_repr(host)
    if host.dtype != x.dtype:  # shown through float32: name the array's own dtype
        text = text.replace(f"dtype={host.dtype})", f"dtype={x.dtype})")
    body = text[len("array(") :] if text.startswith("array(") else text
    pad = " " * len("ember.as")
    body = body.replace("\n", "\n" + pad)
    return f"ember.asarray({body}"


def array_str(x) -> str:
    """NumPy's ``str`` of the values: ``[1. 2.]``."""
    import numpy as np

    return np.array_str(host_for_display(x))
