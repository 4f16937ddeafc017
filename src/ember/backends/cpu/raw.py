"""Raw C kernels on the CPU backend (``ember.RawKernel(source, name)``).

A raw CPU kernel is a C function run once per work-item, declared ``EMBER_KERNEL`` and
using OpenCL's work-item functions::

    EMBER_KERNEL void axpy(float a, const float* x, float* y, long long n) {
        long long i = get_global_id(0);
        if (i < n) y[i] = a * x[i] + y[i];
    }

:func:`wrap` makes it compilable: the runtime header first (:mod:`ember.codegen.cpu_runtime`:
fixed-width types, math, ``printf``), the kernel given a hidden first parameter (the
current work-item, which the work-item functions read), and an exported entry that runs
the work-items of each work-group one after another.  Ember cannot split C source at
barriers, so ``barrier()`` is refused: write such kernels with ``@ember.kernel``, whose
barriers the cpu backend supports.  Work-item functions are available in the kernel
function itself; pass their values to helper functions.
"""

from __future__ import annotations

import re

from ember.codegen import cpu_runtime
from ember.errors import CompileError, LaunchError
from ember.runtime.backend import PTR

WORK_ITEM_FUNCTIONS = r"""
#define EMBER_KERNEL static inline __attribute__((always_inline))
#define get_global_id(k) (em_it->g[(k)] * em_it->d->b[(k)] + em_it->l[(k)])
#define get_local_id(k) (em_it->l[(k)])
#define get_group_id(k) (em_it->g[(k)])
#define get_local_size(k) (em_it->d->b[(k)])
#define get_num_groups(k) (em_it->d->n[(k)])
#define get_global_size(k) (em_it->d->n[(k)] * em_it->d->b[(k)])
"""
_C_TYPES = {
    "bool": "bool", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t",
    "uint16": "uint16_t", "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t",
    "uint64": "uint64_t", "float32": "float", "float64": "double",
}  # fmt: skip
_BARRIER = re.compile(r"\b(barrier|__syncthreads|work_group_barrier)\s*\(")


def is_raw(source: str, name: str) -> bool:
    """Whether ``source`` is a raw kernel (Ember's generated code defines the entry)."""
    return f"em_run_{name}(" not in source


def wrap(source: str, name: str) -> str:
    """The compilable C of raw kernel ``name`` (see the module docstring).

    Raises
    ------
    CompileError
        The kernel uses a barrier, a parameter type the cpu backend cannot pass, or its
        definition cannot be found.
    """
    from ember.runtime.rawkernel import parse_params

    found = _BARRIER.search(source)
    if found:
        line = source.count("\n", 0, found.start()) + 1
        raise CompileError(
            f"raw kernel {name!r} calls {found.group(1)}() (line {line}): the cpu backend runs "
            "a raw C kernel's work-items one after another and cannot stop them at a barrier. "
            "Write the kernel with @ember.kernel (the cpu backend splits Ember kernels at "
            "barriers), or run it on another backend",
            source=source,
        )
    try:
        params, local_tail = parse_params(source, name)
    except LaunchError as exc:
        raise CompileError(str(exc), source=source) from exc
    if local_tail:
        raise CompileError(
            f"raw kernel {name!r} takes a __local pointer: the cpu backend has no dynamic "
            "shared memory",
            source=source,
        )
    body = _with_item_parameter(source, name)
    fields = []
    for k, p in enumerate(params):
        if p == PTR:
            fields.append(("void*", f"em_p{k}", "p"))
        elif p.name in _C_TYPES:
            fields.append((_C_TYPES[p.name], f"em_p{k}", cpu_runtime.WORD_FIELD[p.name]))
        else:
            raise CompileError(
                f"raw kernel {name!r}: parameter {k} is {p.name}, which a cpu kernel cannot "
                "take (pass float16 values as float, or a pointer)",
                source=source,
            )
    args = "".join(f", em_p{k}" for k in range(len(params)))
    call = (
        "em_item_t em_item = {{0, 0, 0}, {em_gx, em_gy, em_gz}, 0, &em_d};\n"
        "            for (em_item.l[2] = 0; em_item.l[2] < em_d.b[2]; em_item.l[2]++)\n"
        "            for (em_item.l[1] = 0; em_item.l[1] < em_d.b[1]; em_item.l[1]++)\n"
        "            for (em_item.l[0] = 0; em_item.l[0] < em_d.b[0]; em_item.l[0]++, "
        "em_item.wi++)\n"
        f"                {name}(&em_item{args});"
    )
    return "\n".join([
        cpu_runtime.HEADER, WORK_ITEM_FUNCTIONS, "#line 1", body,
        cpu_runtime.entry(name, fields, call), "",
    ])  # fmt: skip


def _with_item_parameter(source: str, name: str) -> str:
    """``source`` with ``const em_item_t* em_it`` first in the parameters of kernel
    ``name`` and of every other ``EMBER_KERNEL`` function."""
    found = re.search(rf"\b{re.escape(name)}\s*\(([^)]*)\)\s*\{{", source)
    if found is None:  # parse_params found it: cannot happen
        raise CompileError(f"no kernel named {name!r} found in the source", source=source)
    starts = {found.start(1)}
    for other in re.finditer(r"\bEMBER_KERNEL\s+void\s+\w+\s*\(([^)]*)\)", source):
        starts.add(other.start(1))
    out, last = [], 0
    for start in sorted(starts):
        end = source.index(")", start)
        inside = source[start:end].strip()
        out.append(source[last:start])
        out.append("const em_item_t* em_it" + ("" if inside in ("", "void") else ", "))
        last = end if inside in ("", "void") else start
    out.append(source[last:])
    return "".join(out)
