"""Generated code has no self-comparison (``b != b``): C compilers warn about one in every
integer specialization ("1 warning generated." once per kernel of ``ember precompile``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ember.array import ufuncs
from ember.array.standard import contiguous_example

SELF = re.compile(r"\b([A-Za-z_]\w*)\s*(==|!=)\s*\1\b(?!\s*[\[.(])")


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32"])
@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_no_self_comparison(name, dtype, dialect):
    a = np.zeros(4, dtype)
    kernel, args = contiguous_example(getattr(ufuncs, name), (a, a))
    code = [ln for ln in kernel.inspect(*args, dialect=dialect).splitlines() if "//" not in ln]
    assert not [ln for ln in code if SELF.search(ln)]
