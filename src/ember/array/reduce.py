"""Reductions: from any layout and axis set to passes of the generic reduction kernels.

GPUArrays.jl's ``mapreduce.jl`` is the model: one design for every reduction, parametrized
by a :class:`~ember.array.reducers.Reducer`.  A call goes:

1. **Normalize** - the axes become a sorted tuple; length-1 axes are dropped; the kept
   axes are coalesced in their order (the output is written in it), the reduced axes are
   coalesced too - after sorting them by stride and flipping negative strides, except for
   ``argmin``/``argmax``, whose index is the position in the logical order.  A 2-d
   C-contiguous ``x.sum(axis=0)`` is then one kept axis of stride 1 and one reduced axis of
   stride ``n``: the canonical (outer, reduced, inner) shapes.
2. **Plan** (cached per reducer, shape, strides and axes) - pass after pass, the reduced
   axis of smallest stride is reduced: by ``reduce_rows`` when it is the fastest axis,
   else by ``reduce_cols``.  A pass with too few items to fill the device splits the axis
   into chunks (each thread still reads at least ``MIN_PER_THREAD`` elements) and writes
   states; so does a pass that leaves other reduced axes; the next pass reduces those.
   A full reduction of a large array is two passes: one block per chunk, then one block.
   Layouts with more than four item axes are copied to a C-contiguous array first.
3. **Launch** - each pass keeps its compiled specialization's ``run`` (the launch fast
   path), so a repeated reduction is two dict lookups, allocations and one call per pass.

Launch shapes come from the device: blocks of ``BLOCK_GPU`` threads on GPUs (at most the
device's limit), and enough chunks to give every multiprocessor
``max_threads_per_multiprocessor`` threads ``OVERSUBSCRIBE`` times.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

from ember.array.core import make as _make
from ember.array.ndarray import c_strides, ndarray
from ember.array.reducers import Reducer
from ember.runtime.memory import allocate

BLOCK_GPU = 256  # threads per block on GPUs (register-limited occupancy: finer steps than 512)
BLOCK_CPU = 256  # work-group size on CPU devices (PoCL builds one function per size)
MIN_PER_THREAD = 16  # elements per thread below which splitting an axis does not pay
ROW_LANES_MIN = 32  # threads per item of reduce_rows, at least (unless the row is shorter)
UNROLL = 8  # loads in flight per thread per step of the kernels' loop (a multiple of 4)
ROW_UNROLL = 16  # the same along rows (H200, 16k x 16k float32 sum(axis=1): +1.5 % over 8)
OVERSUBSCRIBE = 2  # chunks for this many device-fulls of threads (a smaller last wave)
FLAT_WAVES = 4  # the same for the flat kernel (one dense run of elements, split)
COLUMN_TILE = 32  # items (outputs) per thread row in reduce_cols: one 128-byte line of f32
MAX_ITEM_AXES = 4  # axes of the item decomposition (geo)
CPU_WAVES = 32  # CPU devices: at most this many blocks per compute unit
PLAN_CACHE = 4096


@dataclass(frozen=True)
class Device:
    """What the planner needs of a device (read once per backend)."""

    block: int  # threads per block (also the kernels' shared array length)
    threads: int  # threads the device runs at once
    max_grid: int
    shuffle: bool  # sub-group shuffles for the trees


_devices: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def device_of(backend) -> Device:
    found = _devices.get(backend)
    if found is None:
        found = _devices[backend] = _make_device(backend)
    return found


def _make_device(backend) -> Device:
    dev = backend.device
    extra = dev.extra or {}
    gpu = dev.is_gpu
    block = _pow2_floor(min(BLOCK_GPU if gpu else BLOCK_CPU, dev.max_threads_per_block))
    per_sm = extra.get("max_threads_per_multiprocessor") or 4 * block
    sms = max(1, dev.multiprocessors)
    target = backend.target
    # the shuffle tree reads the sub-group size and needs whole warps inside a block
    shuffle = (
        target.has("subgroup_shuffle") and target.has("subgroups")
        and block % max(target.warp_size, 1) == 0
    )  # fmt: skip
    max_grid = (1 << 31) - 1 if gpu else sms * CPU_WAVES
    return Device(block, sms * per_sm, max_grid, shuffle)


def _pow2_floor(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def _pow2_ceil(n: int) -> int:
    return 1 << (max(n, 1) - 1).bit_length()


# --------------------------------------------------------------------- plans
@dataclass
class Pass:
    """One launch: the kernel, its shape and its scalar arguments."""

    kernel: object
    grid: tuple
    block: tuple
    head: tuple  # (W, C, L, nr, geo, rs)
    lanes: int  # g (rows) or bx (cols)
    source: int  # -1: the elements of x; else an index into Plan.states
    sink: int  # -1: the outputs; else an index into Plan.states
    po: int
    pc: int
    run: object = None  # the specialization's fast launch, once known


@dataclass
class Plan:
    passes: list
    states: list  # item count of each intermediate state set
    low: int  # x's lowest element touched, relative to its offset (elements)
    extent: int  # elements of x between its lowest and highest touched
    fallback: bool = False  # the layout needs a C-contiguous copy first


_plans: dict = {}


def plan_for(R: Reducer, shape, strides, dtype, axes, ordered: bool, dev: Device) -> Plan:
    """The cached plan reducing ``axes`` of an array of ``shape`` and ``strides`` (in
    elements) with ``R`` (``ordered``: argmin/argmax)."""
    key = (R, shape, strides, dtype, axes, ordered, dev)
    found = _plans.get(key)
    if found is None:
        if len(_plans) >= PLAN_CACHE:
            _plans.clear()
        found = _plans[key] = make_plan(R, shape, strides, axes, ordered, dev)
    return found


def make_plan(R: Reducer, shape, strides, axes, ordered: bool, dev: Device) -> Plan:
    """Normalize the layout (module doc, step 1) and plan its passes (step 2)."""
    low = sum(s * (n - 1) for n, s in zip(shape, strides, strict=True) if s < 0)
    high = sum(s * (n - 1) for n, s in zip(shape, strides, strict=True) if s > 0)
    base = -low
    kept = [(n, s) for k, (n, s) in enumerate(zip(shape, strides, strict=True)) if k not in axes]
    red = [(n, s) for k, (n, s) in enumerate(zip(shape, strides, strict=True)) if k in axes]
    if 0 in shape:
        kept = [(n, 0) for n, _ in kept]
        red = [(math.prod(n for n, _ in red), 0)]
    if not ordered:
        for k, (n, s) in enumerate(red):
            if s < 0:  # walk the axis forwards: the order does not matter
                base += s * (n - 1)
                red[k] = (n, -s)
        red.sort(key=lambda d: -d[1])
    kept, red = _coalesce(kept), _coalesce(red) or [(1, 0)]
    extent = high - low + 1 if 0 not in shape else 1
    if (ordered and len(red) > 1) or len(kept) + len(red) - 1 > MAX_ITEM_AXES:
        return Plan([], [], low, extent, fallback=True)
    plan = Plan([], [], low, extent)
    _add_passes(plan, R, kept, red, base, dev)
    return plan


def _coalesce(dims):
    """Drop length-1 axes and merge neighbours that walk memory as one."""
    out: list = []
    for n, s in dims:
        if n == 1:
            continue
        if out and out[-1][1] == s * n:
            out[-1] = (out[-1][0] * n, s)
        else:
            out.append((n, s))
    return out


def _add_passes(plan: Plan, R: Reducer, kept, red, base: int, dev: Device) -> None:
    source = -1
    while True:
        j = min(range(len(red)), key=lambda k: abs(red[k][1]))
        nr, rs = red[j]
        rest = red[:j] + red[j + 1 :]
        items = kept + rest
        k = math.prod(n for n, _ in items)
        fastest = min((abs(s) for _, s in items), default=None)
        rows = fastest is None or abs(rs) <= fastest
        lanes, chunks = (_rows_shape if rows else _cols_shape)(k, nr, dev)
        # one dense run of elements, split: the flat kernel (constant offsets, no items)
        flat = rows and chunks > 1 and not items and rs == 1 and base == 0 and source < 0
        if flat:
            lanes = dev.block
            chunks = max(1, min(nr // (lanes * MIN_PER_THREAD), FLAT_WAVES * dev.threads // lanes))
        length = _chunk_length(nr, chunks, lanes * ROW_UNROLL if rows else 1)
        chunks = -(-nr // length) if nr else 1
        final = not rest and chunks == 1
        po, pc = (chunks, 1) if rows else (1, k)
        sink = -1 if final else len(plan.states)
        if not final:
            plan.states.append(k * chunks)
        work = k * chunks
        per_block = dev.block // lanes if rows else lanes
        grid = (min(-(-work // per_block), dev.max_grid), 1, 1)
        head = (work, chunks, length, nr, _geo(base, items), rs)
        kind = "flat" if flat and not final else "rows" if rows else "cols"
        kernel = _kernel(R, kind, source >= 0, final, dev)
        plan.passes.append(Pass(kernel, grid, (dev.block, 1, 1), head, lanes, source, sink, po, pc))
        if final:
            return
        strides = _c_strides([n for n, _ in items], po)
        kept = [(n, s) for (n, _), s in zip(kept, strides, strict=False)]
        red = [(n, s) for (n, _), s in zip(rest, strides[len(kept) :], strict=True)]
        if chunks > 1:
            red.append((chunks, pc))
        red = _coalesce(sorted(red, key=lambda d: -d[1]))  # the states' axes merge too
        base, source = 0, sink


def _kernel(R, kind: str, states: bool, final: bool, dev: Device):
    """The pass's kernel: ``kind`` is ``"rows"``, ``"cols"`` or ``"flat"`` (the first pass
    of a dense array: :func:`reduce_kernels.flat`, elements to states)."""
    from ember.array import reduce_kernels as rk

    if kind == "flat":
        return rk.flat(R, dev.shuffle, dev.block, UNROLL)
    if kind == "rows":
        return rk.rows(R, states, final, dev.shuffle, dev.block, ROW_UNROLL)
    return rk.cols(R, states, final, dev.block, UNROLL)


def _rows_shape(k: int, nr: int, dev: Device) -> tuple[int, int]:
    """``(g, chunks)``: threads per item, and the split of the axis.  Where the items
    alone fill the device (no split), each gets as few lanes as still fill it (at least a
    warp's 32): more elements per thread, no block-wide tree per item.  H100, float32 rows
    (GB/s, 256 lanes -> fewer): 16k x 16k sum 2825 -> 2990 with 32, std_mean 2603 -> 2900;
    65536 x 4096 sum 1715 -> 2980 with 32; 4096 x 65536 about even with 128."""
    g = _pow2_floor(min(dev.block, max(1, nr // MIN_PER_THREAD)))
    most = max(1, nr // (g * MIN_PER_THREAD))
    wanted = -(-dev.threads * OVERSUBSCRIBE // (k * g))
    chunks = max(1, min(most, wanted))
    if chunks == 1:
        fill = _pow2_floor(max(1, dev.threads * OVERSUBSCRIBE // k))
        g = min(g, max(fill, ROW_LANES_MIN))
    return g, chunks


def _cols_shape(k: int, nr: int, dev: Device) -> tuple[int, int]:
    """``(bx, chunks)``: items per block, and the split of the axis."""
    bx = min(_pow2_ceil(k), COLUMN_TILE, dev.block)
    by = dev.block // bx
    most = max(1, nr // (by * MIN_PER_THREAD))
    wanted = -(-dev.threads * OVERSUBSCRIBE // (-(-k // bx) * dev.block))
    return bx, max(1, min(most, wanted))


def _chunk_length(nr: int, chunks: int, align: int) -> int:
    """Elements per chunk: a multiple of ``align`` (rows: each thread's loads start where
    a whole number of unrolled steps ends, and blocks start on aligned elements)."""
    if not nr:
        return 0
    length = -(-nr // chunks)
    return length if chunks == 1 else -(-length // align) * align


def _geo(base: int, items) -> tuple:
    dims = [(1, 0)] * (MAX_ITEM_AXES - len(items)) + list(items)
    return (base, *(n for n, _ in dims[1:]), *(s for _, s in dims))


def _c_strides(sizes, unit: int) -> list[int]:
    out, step = [], unit
    for n in reversed(sizes):
        out.append(step)
        step *= n
    return out[::-1]


# --------------------------------------------------------------------- execution
class Call:
    """A prepared reduction: everything about one (reducer, dtype, shape, strides, axes,
    options) that does not depend on the data, so a repeated call only allocates its
    outputs and launches (the hot path of small reductions).

    ``shape``/``dtype``: the result (``mean_dtype``: the second result of ``var_mean``);
    ``n``: the number of elements reduced into each output; ``p1``, ``p2``: the scalars
    of the reducer's ``final`` (converted once)."""

    def __init__(self, R: Reducer, x: ndarray, axes, ordered, shape, dtype, mean_dtype, n, p1, p2):
        self.R, self.shape, self.dtype, self.mean_dtype = R, shape, dtype, mean_dtype
        self.size = math.prod(shape)
        self.nbytes = self.size * dtype.itemsize
        self.strides = c_strides(shape, dtype.itemsize)
        self.copy = None
        self.isz = x.dtype.itemsize
        self.fast = None  # the bound launches (Call._bind) after the first call; False: none
        if not self.size:
            return
        dev = device_of(x.backend)
        isz = x.dtype.itemsize
        strides = tuple(st // isz for st in x.strides)
        self.plan = plan_for(R, x.shape, strides, x.dtype, axes, ordered, dev)
        if self.plan.fallback:  # too many axes to index: a C-contiguous copy, reduced last
            kept = [k for k in range(x.ndim) if k not in axes]
            self.copy = ((*kept, *axes), (math.prod(x.shape[k] for k in kept), n))
            self.plan = plan_for(R, self.copy[1], (n, 1), x.dtype, (1,), ordered, dev)
        tail = (R.p1.numpy.type(p1), R.p2.numpy.type(p2))
        self.tails = [((p.po, p.pc, n, *tail), p.lanes) for p in self.plan.passes]
        # x itself is the kernels' element view when it is 1-d and dense
        self.direct = x.ndim == 1 and x.strides == (isz,) and self.copy is None

    def __call__(self, x: ndarray):
        be = x.backend
        # ndarray(...) without its __init__ frame
        buffer = allocate(be, self.nbytes)
        out = _make(ndarray, buffer, self.shape, self.strides, self.dtype, be, 0, True)
        aux = None if self.mean_dtype is None else _array(self.shape, self.mean_dtype, be)
        if self.size:
            fast = self.fast
            if fast and not x.offset % self.isz:  # the layout of the first call
                if self.plan.states:
                    self._launch_bound(x, out, aux)
                elif aux is None:
                    fast[0](x, out)
                else:
                    fast[0](x, out, aux)
            else:
                self._launch_checked(x, out, aux)
        return out if aux is None else (out, aux)

    def _launch_checked(self, x: ndarray, out: ndarray, aux) -> None:
        """The launches with every argument checked (the first call; a copied or
        misaligned input), then the bound launches for the next calls."""
        d0 = out if len(self.shape) == 1 else flat(out, self.size)
        d1 = d0 if aux is None else (aux if len(self.shape) == 1 else flat(aux, self.size))
        if self.copy is not None:
            from ember.array import manipulation as m

            x = m.reshape(m.ascontiguousarray(m.permute_dims(x, self.copy[0])), self.copy[1])
        aligned = not x.offset % self.isz
        used = self.launch(x if self.direct else element_view(x, self.plan), d0, d1)
        if self.fast is None and self.copy is None and aligned:
            self.fast = self._bind(used) or False

    def _launch_bound(self, x: ndarray, out: ndarray, aux) -> None:
        slots = [x, out, out if aux is None else aux]
        for count in self.plan.states:
            slots += _state_arrays(self.R, count, x.backend)
        for go in self.fast:
            go(*slots)

    def launch(self, view: ndarray, d0: ndarray, d1: ndarray) -> list:
        """Launch the passes, each argument checked; returns each pass's arguments."""
        plan = self.plan
        be = view.backend
        states = [_state_arrays(self.R, count, be) for count in plan.states] if plan.states else ()
        used = []
        for p, tail in zip(plan.passes, self.tails, strict=True):
            src = (view, view, view) if p.source < 0 else states[p.source]
            dst = (d0, d1, d0) if p.sink < 0 else states[p.sink]
            args = (*p.head, *src, *dst, *tail)
            if p.run is None or not p.run(p.grid, p.block, 0, None, args):
                spec = p.kernel.dispatch(args)
                spec.launch(args, p.grid, p.block)
                p.run = spec.run
            used.append(args)
        return used

    def _bind(self, used: list) -> tuple | None:
        """Per pass, the launch with everything fixed but the addresses of the input (slot
        0), the outputs (1, 2) and the state arrays (3 on, three per set): what a call with
        the first call's layout needs (:meth:`Specialization.bind`).  None when a kernel
        cannot be bound."""
        ns = len(self.R.state)
        low = self.plan.low * self.isz
        d1 = 1 if self.mean_dtype is None else 2

        def states(j):
            return tuple((3 + 3 * j + (c if c < ns else 0), 0) for c in range(3))

        bound = []
        for p, args in zip(self.plan.passes, used, strict=True):
            src = ((0, low),) * 3 if p.source < 0 else states(p.source)
            dst = ((1, 0), (d1, 0), (1, 0)) if p.sink < 0 else states(p.sink)
            varying = dict(enumerate((*src, *dst), start=6))
            slots = 3 + 3 * len(self.plan.states) if self.plan.states else d1 + 1
            go = p.kernel.dispatch(args).bind(args, p.grid, p.block, varying, slots)
            if go is None:
                return None
            bound.append(go)
        return tuple(bound)


def element_view(x: ndarray, plan: Plan) -> ndarray:
    """The 1-d view of ``x`` from the lowest element it touches (the kernels' ``a0``)."""
    isz = x.dtype.itemsize
    v = ndarray((plan.extent,), x.dtype, x.buffer, x.backend, (isz,), x.offset + plan.low * isz)
    v._c = True
    return v


def _array(shape, dt, be) -> ndarray:
    return ndarray(shape, dt, allocate(be, math.prod(shape) * dt.itemsize), be)


def _state_arrays(R: Reducer, count: int, be) -> tuple:
    arrays = [ndarray((count,), dt, allocate(be, count * dt.itemsize), be) for dt in R.state]
    while len(arrays) < 3:
        arrays.append(arrays[0])
    return tuple(arrays)


def flat(a: ndarray, count: int) -> ndarray:
    """A 1-d view of the C-contiguous ``a`` (``count`` elements)."""
    v = ndarray((count,), a.dtype, a.buffer, a.backend, (a.dtype.itemsize,), a.offset)
    v._c = True
    return v


# --------------------------------------------------------------------- examples
# (kernel kind, reads states, writes outputs): the passes of a reduction along the fast axis
# (one pass, or a split and its second pass) and along a slow one
COMMON_PASSES = (("rows", False, True), ("rows", False, False), ("rows", True, True),
                 ("cols", False, True), ("flat", False, False))  # fmt: skip


def examples(R: Reducer, dtype, out_dtype, mean_dtype=None, backend=None, dev=None, passes=None):
    """``(kernel, args)`` for the passes of ``R`` reading ``dtype`` and writing
    ``out_dtype``, with NumPy arrays standing for device arrays: the standard precompiled
    set (:mod:`ember.array.standard`) and the CUDA compile checks.  ``dev`` defaults to the
    device of ``backend`` (the current one)."""
    import numpy as np

    if dev is None:
        from ember.runtime import registry

        dev = device_of(backend or registry.get())
    n = 8
    states = tuple(np.zeros(n, dt.numpy) for dt in R.state)
    states += (states[0],) * (3 - len(states))
    out = np.zeros(n, out_dtype.numpy)
    aux = np.zeros(n, mean_dtype.numpy) if mean_dtype is not None else out
    sk = (1, 1, n, R.p1.numpy.type(0), R.p2.numpy.type(0))
    head = (n, 1, n, n, (0, 1, 1, 1, 0, 0, 0, 0), 1)
    for kind, from_states, final in passes or COMMON_PASSES:
        src = states if from_states else (np.zeros(n, dtype.numpy),) * 3
        dst = (out, aux, out) if final else states
        yield _kernel(R, kind, from_states, final, dev), (*head, *src, *dst, sk, 1)
