"""Captured NumPy arrays as program-scope tables (a base class of
:class:`~ember.codegen.emitter.Emitter`; the typing rules are in ``frontend/tables.py``).

Each table is one initialized array at file scope, in constant memory (``space ==
"constant"``) or, past the constant limit on CUDA, in device memory (``__device__
const``).  Elements whose type a dialect cannot declare there (OpenCL's ``half`` without
``cl_khr_fp16``) and float tables holding NaN or infinities are stored as their bit
patterns in unsigned integers of the same size and read through a pointer cast (a
``#define`` of the table's name), so every value arrives exactly.
"""

from __future__ import annotations

import numpy as np

from ember import dtypes
from ember.frontend.types import Scalar, scalar

_PER_LINE = 8


class TableEmitter:
    """Needs ``self.d`` (dialect), ``self.h`` (helpers), ``self.program``, ``literal``."""

    def tables(self) -> str:
        return "\n\n".join(self._table(var, data) for var, data in self.program.tables)

    def _table(self, var, data: np.ndarray) -> str:
        t = var.type
        dt = t.dtype
        element = self.storage(dt)
        space = self.d.space(t.space)
        placement = getattr(var, "placement", "constant")
        decl = self.d.constant_decl if placement == "constant" else self.d.global_table_decl
        flat = data.reshape(-1)
        as_bits = dt.is_narrow or (dt.is_float and not np.all(np.isfinite(flat)))
        where = f"{placement} memory"
        head = f"// captured NumPy array '{var.pyname}': {dt.name} {tuple(data.shape)}, {where}"
        if as_bits:
            bits = dtypes.dtype(f"uint{dt.itemsize * 8}")
            raw = f"em_raw_{var.name}"
            values = self._values(flat.view(bits.numpy), bits)
            cast = f"(({space}{element}*){raw})"
            if element == self.h.c(bits):  # 16-bit floats: their bits anyway
                return f"{head}\n{decl}{element} {var.name}[{flat.size}] = {values};"
            return (
                f"{head}\n{decl}{self.h.c(bits)} {raw}[{flat.size}] = {values};\n"
                f"#define {var.name} {cast}"
            )
        return f"{head}\n{decl}{element} {var.name}[{flat.size}] = {self._values(flat, dt)};"

    def _values(self, flat: np.ndarray, dt) -> str:
        t: Scalar = scalar(dt)
        if dt.kind == "b":
            items = ["1" if v else "0" for v in flat]
        elif dt.kind == "c":  # a pair per element: brace-initialized structs / vectors
            part = scalar(dt.real)
            items = [
                f"{{{self.literal(v.real, part)[0]}, {self.literal(v.imag, part)[0]}}}"
                for v in flat.tolist()
            ]
        else:
            items = [self.literal(v.item(), t, typed=dt.is_integer)[0] for v in flat]
        lines = [
            "    " + ", ".join(items[k : k + _PER_LINE]) for k in range(0, len(items), _PER_LINE)
        ]
        return "{\n" + ",\n".join(lines) + "\n}"
