"""The generic reduction kernels, written in Ember's kernel language.

Every reduction runs one or more *passes*; each pass reduces one axis of a strided array
(elements, or the states an earlier pass wrote) for ``W`` *items*.  An item is one output
(one position of the axes that are kept, and of any reduced axes a later pass reduces)
and one of ``C`` *chunks* of the reduced axis (``C > 1`` splits long axes over more
threads; a second pass merges the chunks).  The kernels take the same arguments:

``W, C, L, nr``
    items, chunks per output, chunk length, length of the reduced axis;
``geo``
    ``(base, n1, n2, n3, s0, s1, s2, s3)``: output ``o`` (row-major over up to four axes
    of sizes ``n0..n3``) starts at element ``base + i0*s0 + i1*s1 + i2*s2 + i3*s3``;
``rs``
    the reduced axis' stride in elements (any sign);
``a0, a1, a2``
    the source: an element view passed three times, or the state arrays of a pass before;
``d0, d1, d2``
    the sink: the outputs (``d1``: the mean of ``std_mean``) or the state arrays;
``sk``
    ``(po, pc, n, p1, p2)``: item ``(o, c)`` writes state ``o*po + c*pc``; ``n``, ``p1``,
    ``p2`` go to the reducer's ``final``.

``reduce_rows`` (the reduced axis is the fast one)
    groups of ``g`` threads (a power of two up to the block) reduce one item each, reading
    consecutive elements; the block merges each group's values as a tree.
``reduce_cols`` (a kept axis is the fast one)
    ``bx`` consecutive items per block, one per thread column, so that a warp reads
    consecutive elements of one row; the block's ``by = block // bx`` thread rows split the
    reduced axis and merge as a tree in shared memory.
``reduce_flat`` (the first pass of a whole dense array)
    ``reduce_rows`` with one item split into chunks, its first element and lanes' stride
    known to the compiler (no item decomposition; :func:`flat`).

Trees: in shared memory, with a barrier per level; where the device has sub-group
shuffles (a capability of the target, never a backend name) the levels inside a warp use
``shfl_xor`` and need no barrier.  The per-thread loop reads eight elements before it
combines them: the loop-carried state costs registers, so fewer threads fit on a
multiprocessor than in the elementwise kernels (four loads per thread), and each needs more
loads in flight to cover the memory latency.
"""

from __future__ import annotations

import functools

import ember
from ember.array.reducers import Reducer
from ember.compiler.kernel import Kernel


# --------------------------------------------------------------------- state access
@functools.cache
def state_io(ns: int):
    """``(load, store)`` of an ``ns``-component state in arrays ``a0, a1, a2``."""
    if ns == 1:

        def load(a0, a1, a2, i):
            return (a0[i],)

        def store(a0, a1, a2, i, s):
            a0[i] = s[0]
    elif ns == 2:

        def load(a0, a1, a2, i):
            return (a0[i], a1[i])

        def store(a0, a1, a2, i, s):
            a0[i] = s[0]
            a1[i] = s[1]
    else:

        def load(a0, a1, a2, i):
            return (a0[i], a1[i], a2[i])

        def store(a0, a1, a2, i, s):
            a0[i] = s[0]
            a1[i] = s[1]
            a2[i] = s[2]

    load.__name__ = load.__qualname__ = f"rd_load{ns}"
    store.__name__ = store.__qualname__ = f"rd_store{ns}"
    return load, store


@functools.cache
def shuffle_xor(ns: int):
    """``shfl_xor`` of every component of an ``ns``-component state."""
    if ns == 1:

        def shx(s, k):
            return (ember.shfl_xor(s[0], k),)
    elif ns == 2:

        def shx(s, k):
            return (ember.shfl_xor(s[0], k), ember.shfl_xor(s[1], k))
    else:

        def shx(s, k):
            return (ember.shfl_xor(s[0], k), ember.shfl_xor(s[1], k), ember.shfl_xor(s[2], k))

    shx.__name__ = shx.__qualname__ = f"rd_shfl_xor{ns}"
    return shx


def offset(geo, o):
    """The first element of item ``o`` (see the module doc for ``geo``).  Items along one
    axis (the common case) skip the three 64-bit divisions: each is a software routine of
    dozens of instructions on a GPU, run once per item by every thread."""
    if geo[1] == 1 and geo[2] == 1 and o < geo[3]:
        return geo[0] + o * geo[7]
    q3 = o // geo[3]
    q2 = q3 // geo[2]
    q1 = q2 // geo[1]
    return (
        geo[0] + (o - q3 * geo[3]) * geo[7] + (q3 - q2 * geo[2]) * geo[6]
        + (q2 - q1 * geo[1]) * geo[5] + q1 * geo[4]
    )  # fmt: skip


offset.__name__ = offset.__qualname__ = "rd_offset"


# --------------------------------------------------------------------- per-thread loops
def _accumulate_elements(R: Reducer, unroll: int, counted: bool = False):
    PRE, STEP, STEP4, CT, U = R.pre, R.step, R.step4, R.ct, unroll
    BOUND = not counted

    def accumulate(a0, a1, a2, off, rs, r, end, g, s):
        """Elements ``r, r+g, r+2g, ... < end`` of the axis at ``off`` into ``s``: ``U``
        loads in flight per thread (a local array indexed by constants: registers), then
        four-element steps.  (Straight-line code with the loads inside the steps let NVCC
        interleave them: on an H100, std_mean along rows 2580 -> 2260 GB/s, var 2700 ->
        2460, max 2845 -> 2730.  The cpu backend inlines this looping function and
        declares the array in the kernel.)  ``counted`` (the rows kernel): the full steps
        are counted first and the loop runs on a 32-bit count instead of testing its 64-bit
        bound: H200, 16k x 16k float32 sum(axis=1), 4306-4328 -> 4370-4379 GB/s (CuPy 4571);
        the columns kernel lost a sixth of its speed that way (its items are short)."""
        i = off + r * rs
        d = g * rs
        v = ember.local((U,), CT)
        rest = end - r - (U - 1) * g
        steps = ember.int32(0)
        if not BOUND and rest > 0:
            steps = ember.int32((rest + U * g - 1) // (U * g))
        step = ember.int32(0)
        while step < steps or (BOUND and r + (U - 1) * g < end):
            for k in ember.static_range(U):
                v[k] = PRE(a0[i + k * d])
            for k in ember.static_range(0, U, 4):
                s = STEP4(s, v[k], v[k + 1], v[k + 2], v[k + 3], r + k * g, r + (k + 1) * g,
                          r + (k + 2) * g, r + (k + 3) * g)  # fmt: skip
            r += U * g
            i += U * d
            step += 1
        while r < end:
            s = STEP(s, PRE(a0[i]), r)
            r += g
            i += d
        return s

    name = f"rd_{R.name}_elements{U}" + ("_counted" if counted else "")
    accumulate.__name__ = accumulate.__qualname__ = name
    return accumulate


def _accumulate_states(R: Reducer):
    COMBINE = R.combine
    LOAD = state_io(len(R.state))[0]

    def accumulate(a0, a1, a2, off, rs, r, end, g, s):
        """States ``r, r+g, ... < end`` of the axis at ``off`` merged into ``s`` in their
        order, four loads in flight per step: a full reduction's last pass is one block
        reading every chunk's state (thousands), and one load at a time is the latency
        of memory per state."""
        i = off + r * rs
        d = g * rs
        while r + 3 * g < end:
            t0 = LOAD(a0, a1, a2, i)
            t1 = LOAD(a0, a1, a2, i + d)
            t2 = LOAD(a0, a1, a2, i + 2 * d)
            t3 = LOAD(a0, a1, a2, i + 3 * d)
            s = COMBINE(COMBINE(COMBINE(COMBINE(s, t0), t1), t2), t3)
            r += 4 * g
            i += 4 * d
        while r < end:
            s = COMBINE(s, LOAD(a0, a1, a2, i))
            r += g
            i += d
        return s

    accumulate.__name__ = accumulate.__qualname__ = f"rd_{R.name}_states"
    return accumulate


# --------------------------------------------------------------------- sinks
def _sink_final(R: Reducer):
    FINAL = R.final

    def sink(d0, d1, d2, sk, o, c, s):
        FINAL(d0, d1, o, s, sk[2], sk[3], sk[4])

    sink.__name__ = sink.__qualname__ = f"rd_{R.name}_final"
    return sink


def _sink_states(R: Reducer):
    STORE = state_io(len(R.state))[1]

    def sink(d0, d1, d2, sk, o, c, s):
        STORE(d0, d1, d2, o * sk[0] + c * sk[1], s)

    sink.__name__ = sink.__qualname__ = f"rd_{R.name}_partial"
    return sink


# --------------------------------------------------------------------- trees
def _tree_rows(R: Reducer, shuffle: bool):
    """Merge the states of each group of ``g`` consecutive threads; the group's first
    thread gets the result.  Every thread of the block calls it (it has barriers)."""
    COMBINE = R.combine
    LOAD, STORE = state_io(len(R.state))
    if shuffle:
        tree = _tree_rows_shuffle(COMBINE, LOAD, STORE, shuffle_xor(len(R.state)))
    else:
        tree = _tree_rows_shared(COMBINE, LOAD, STORE)
    tree.__name__ = tree.__qualname__ = f"rd_{R.name}_tree_rows" + ("_shfl" if shuffle else "")
    return tree


def _tree_rows_shuffle(COMBINE, LOAD, STORE, SHX):
    def tree(sh0, sh1, sh2, t, g, s):
        # a butterfly inside each warp (no barrier), then shared memory across warps
        ws = ember.warp_size()
        k = 1
        while k < g and k < ws:
            s = COMBINE(s, SHX(s, k))
            k = k << 1
        m = g // k  # values per group left to merge: one per warp
        if m > 1:
            if (t & (k - 1)) == 0:
                STORE(sh0, sh1, sh2, t // k, s)
            ember.barrier()
            nv = ember.block_dim.x // k
            h = m >> 1
            while h > 0:
                if t < nv and (t & (m - 1)) < h:
                    STORE(
                        sh0,
                        sh1,
                        sh2,
                        t,
                        COMBINE(LOAD(sh0, sh1, sh2, t), LOAD(sh0, sh1, sh2, t + h)),
                    )
                ember.barrier()
                h = h >> 1
            if (t & (g - 1)) == 0:
                s = LOAD(sh0, sh1, sh2, (t // g) * m)
            ember.barrier()  # the shared arrays are reused by the next items
        return s

    return tree


def _tree_rows_shared(COMBINE, LOAD, STORE):
    def tree(sh0, sh1, sh2, t, g, s):
        if g > 1:
            STORE(sh0, sh1, sh2, t, s)
            ember.barrier()
            h = g >> 1
            while h > 0:
                if (t & (g - 1)) < h:
                    STORE(
                        sh0,
                        sh1,
                        sh2,
                        t,
                        COMBINE(LOAD(sh0, sh1, sh2, t), LOAD(sh0, sh1, sh2, t + h)),
                    )
                ember.barrier()
                h = h >> 1
            if (t & (g - 1)) == 0:
                s = LOAD(sh0, sh1, sh2, t)
            ember.barrier()
        return s

    return tree


def _tree_cols(R: Reducer):
    """Merge the states of the threads of one column (stride ``bx``); row 0 gets it."""
    COMBINE = R.combine
    LOAD, STORE = state_io(len(R.state))

    def tree(sh0, sh1, sh2, t, bx, s):
        by = ember.block_dim.x // bx
        if by > 1:
            STORE(sh0, sh1, sh2, t, s)
            ember.barrier()
            ty = t // bx
            h = by >> 1
            while h > 0:
                if ty < h:
                    STORE(
                        sh0,
                        sh1,
                        sh2,
                        t,
                        COMBINE(LOAD(sh0, sh1, sh2, t), LOAD(sh0, sh1, sh2, t + h * bx)),
                    )
                ember.barrier()
                h = h >> 1
            if ty == 0:
                s = LOAD(sh0, sh1, sh2, t)
            ember.barrier()
        return s

    tree.__name__ = tree.__qualname__ = f"rd_{R.name}_tree_cols"
    return tree


# --------------------------------------------------------------------- kernels
def _shared_shapes(R: Reducer, block: int):
    sizes = [block if k < len(R.state) else 1 for k in range(3)]
    dts = [R.state[k] if k < len(R.state) else R.state[0] for k in range(3)]
    return sizes, dts


def _named(fn, name: str) -> Kernel:
    fn.__name__ = fn.__qualname__ = name
    return Kernel(fn)


@functools.cache
def rows(R: Reducer, states: bool, final: bool, shuffle: bool, block: int, unroll: int = 8
         ) -> Kernel:  # fmt: skip
    """The kernel reducing along the fast axis, for ``R`` reading elements (or ``states``)
    and writing outputs (``final``) or states; blocks of at most ``block`` threads, each
    with ``unroll`` loads in flight (a multiple of 4)."""
    ACCUM = _accumulate_states(R) if states else _accumulate_elements(R, unroll, True)
    SINK = (_sink_final if final else _sink_states)(R)
    TREE = _tree_rows(R, shuffle)
    INIT = R.init
    (S0, S1, S2), (D0, D1, D2) = _shared_shapes(R, block)

    def reduce_rows(W, C, L, nr, geo, rs, a0, a1, a2, d0, d1, d2, sk, g):
        sh0 = ember.shared((S0,), D0)
        sh1 = ember.shared((S1,), D1)
        sh2 = ember.shared((S2,), D2)
        t = ember.thread_idx.x
        lane = t & (g - 1)
        per = ember.block_dim.x // g
        tg = t // g
        wb = ember.block_idx.x * per
        while wb < W:  # the same trip count for every thread: the tree has barriers
            w = wb + tg
            # (skipping this division where C == 1, as cols does, made NVCC schedule the
            # loop worse: H200, 16k x 16k sum(axis=1) 4340 -> 3600 GB/s)
            o = w // C
            c = w - o * C
            s = INIT()
            if w < W:
                start = c * L
                end = min(start + L, nr)
                s = ACCUM(a0, a1, a2, offset(geo, o), rs, start + lane, end, g, s)
            s = TREE(sh0, sh1, sh2, t, g, s)
            if lane == 0 and w < W:
                SINK(d0, d1, d2, sk, o, c, s)
            wb += ember.grid_dim.x * per

    return _named(reduce_rows, _kernel_name("rows", R, states, final, shuffle, block, unroll))


@functools.cache
def cols(R: Reducer, states: bool, final: bool, block: int, unroll: int = 8) -> Kernel:
    """The kernel reducing along a slow axis (see the module doc)."""
    ACCUM = _accumulate_states(R) if states else _accumulate_elements(R, unroll)
    SINK = (_sink_final if final else _sink_states)(R)
    TREE = _tree_cols(R)
    INIT = R.init
    (S0, S1, S2), (D0, D1, D2) = _shared_shapes(R, block)

    def reduce_cols(W, C, L, nr, geo, rs, a0, a1, a2, d0, d1, d2, sk, bx):
        sh0 = ember.shared((S0,), D0)
        sh1 = ember.shared((S1,), D1)
        sh2 = ember.shared((S2,), D2)
        t = ember.thread_idx.x
        tx = t & (bx - 1)
        ty = t // bx
        by = ember.block_dim.x // bx
        k = W // C  # items are chunk-major: w = c * k + o
        wb = ember.block_idx.x * bx
        while wb < W:
            w = wb + tx
            c = 0
            o = w
            if C > 1:
                c = w // k
                o = w - c * k
            s = INIT()
            if w < W:
                start = c * L
                end = min(start + L, nr)
                s = ACCUM(a0, a1, a2, offset(geo, o), rs, start + ty, end, by, s)
            s = TREE(sh0, sh1, sh2, t, bx, s)
            if ty == 0 and w < W:
                SINK(d0, d1, d2, sk, o, c, s)
            wb += ember.grid_dim.x * bx

    return _named(reduce_cols, _kernel_name("cols", R, states, final, False, block, unroll))


@functools.cache
def flat(R: Reducer, shuffle: bool, block: int, unroll: int = 8) -> Kernel:
    """The first pass of a reduction of one dense run of elements (a whole C-contiguous
    array): block ``b`` reduces chunks ``b, b + grid, ...`` of ``L`` elements and writes
    each chunk's state.  The arguments are ``rows``' (``geo``, ``rs`` and ``g`` unused):
    the chunk's first element is ``c * L``, the lanes' stride is the block size, both
    known to the compiler, so the loop's addresses are constant offsets and no item
    decomposition (three 64-bit divisions per item) runs.  H200, 1 GiB float32 sum, the
    same kernel with the runtime offsets and strides of ``rows``: 3730 -> ~4100 GB/s
    (``docs/design/arrays.md``, Reductions)."""
    ACCUM = _accumulate_elements(R, unroll)
    SINK = _sink_states(R)
    TREE = _tree_rows(R, shuffle)
    INIT = R.init
    B = block
    (S0, S1, S2), (D0, D1, D2) = _shared_shapes(R, block)

    def reduce_flat(W, C, L, nr, geo, rs, a0, a1, a2, d0, d1, d2, sk, g):
        sh0 = ember.shared((S0,), D0)
        sh1 = ember.shared((S1,), D1)
        sh2 = ember.shared((S2,), D2)
        t = ember.thread_idx.x
        c = ember.block_idx.x
        while c < W:  # the same trip count for every thread: the tree has barriers
            start = c * L
            s = ACCUM(a0, a1, a2, 0, 1, start + t, min(start + L, nr), B, INIT())
            s = TREE(sh0, sh1, sh2, t, B, s)
            if t == 0:
                SINK(d0, d1, d2, sk, 0, c, s)
            c += ember.grid_dim.x

    return _named(reduce_flat, _kernel_name("flat", R, False, False, shuffle, block, unroll))


def _kernel_name(kind, R, states, final, shuffle, block, unroll) -> str:
    """``reduce_rows_sum_float32_es_512``: e/s = elements/states in, f/s = final/states out
    (``_u16``: 16 loads in flight, where not the default 8)."""
    io = ("s" if states else "e") + ("f" if final else "s")
    more = "" if unroll == 8 or states else f"_u{unroll}"
    return f"reduce_{kind}_{R.name}_{io}{'_shfl' if shuffle else ''}_{block}{more}"
