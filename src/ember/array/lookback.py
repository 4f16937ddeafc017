"""The decoupled look-back of :func:`ember.array.scan_kernels.scan_lookback` (Merrill &
Garland 2016): how a tile publishes its total and its inclusive prefix, and how the tiles
after it find them.  Device functions, built per combining function and value dtype; the
kernel and its geometry are in :mod:`.scan_kernels` (its docstring has the design)."""

from __future__ import annotations

from types import SimpleNamespace

import ember
from ember import dtypes

WINDOW = 32  # tiles inspected per step of the look-back (lanes of the warp doing it)
LANE_TILES = 4  # ... times this where one warp does it (warp_lookback)
AGGREGATE, PREFIX, BEFORE_ROW = 1, 2, 3  # look-back flags (0: nothing published yet)


def packs(AT) -> bool:
    """Whether values ``AT`` share their tile's state word with its flag (at most 4
    bytes: one 64-bit store and one load, no fences); else the word holds the flag and
    the value goes to ``aggs``/``incls`` first, ordered by fences."""
    return AT.itemsize <= 4


def state_words(AT):
    """The look-back's state words for values ``AT``: ``state[1 + t]`` is tile ``t``'s
    flag in the high 32 bits (0: nothing published yet), and where :func:`packs`, the
    value's bits in the low 32."""
    PACKED = packs(AT)
    U32 = dtypes.uint32

    def publish(state, values, t, v, flag):
        """Tile ``t`` publishes ``v`` with ``flag``: one store of the word, or the value
        first, a fence, then the flag (a reader that sees the flag sees the value)."""
        word = ember.uint64(flag) << 32
        if PACKED:
            word |= ember.uint64(ember.bitcast(v, U32))
        else:
            values[t] = v
            ember.threadfence()
        ember.atomic_exchange(state, t + 1, word)

    def wait(state, j):
        """Tile ``j``'s word once it has published something (that tile's block has
        started: it will)."""
        w = ember.atomic_load(state, j + 1)
        while (w >> 32) == 0:
            w = ember.atomic_load(state, j + 1)
        return w

    def flag_of(w):
        return ember.int32(w >> 32)

    def value_of(w, aggs, incls, j):
        """What tile ``j`` published with word ``w``; unpacked, read after its flag (and a
        fence, the caller's) and never a stale cached copy."""
        if PACKED:
            return ember.bitcast(U32(w & 0xFFFFFFFF), AT)
        if flag_of(w) == AGGREGATE:
            return ember.atomic_load(aggs, j)
        return ember.atomic_load(incls, j)

    return SimpleNamespace(
        packed=PACKED, publish=publish, wait=wait, flag_of=flag_of, value_of=value_of
    )


def block_lookback(combine, CT, AT):
    """The look-back of tile ``t``, which is not the first of its row (``first`` is).
    Returns the tile's prefix to every thread, after publishing its inclusive prefix.
    ``wflag``/``wval`` hold one window's flags and values, ``ctl[1]`` says the look-back
    is done, ``cval[0]`` is the running prefix (shared memory)."""
    words = state_words(AT)
    publish, wait, flag_of, value_of = words.publish, words.wait, words.flag_of, words.value_of
    PACKED = words.packed

    def fold(wflag, wval, ctl, cval, first_window):
        """Thread 0: combine one window, newest tile first, into the running prefix."""
        got = False
        stop = False
        acc = CT(wval[0])
        for lane in range(WINDOW):
            if not stop:
                f = wflag[lane]
                if f == BEFORE_ROW:
                    stop = True
                else:
                    acc = combine(wval[lane], acc) if got else CT(wval[lane])
                    got = True
                    stop = f == PREFIX
        if got:
            cval[0] = AT(acc if first_window else combine(acc, cval[0]))
        if stop:
            ctl[1] = 1

    def lookback(state, aggs, incls, wflag, wval, ctl, cval, t, first, tid, total):
        if tid == 0:
            publish(state, aggs, t, AT(total), AGGREGATE)
            ctl[1] = 0
        newest = t - 1
        ember.barrier()
        while ctl[1] == 0:
            if tid < WINDOW:
                j = newest - tid
                f = BEFORE_ROW
                v = AT(0)
                if j >= first:
                    w = wait(state, j)
                    f = flag_of(w)
                    if not PACKED:
                        ember.threadfence()
                    v = value_of(w, aggs, incls, j)
                wflag[tid] = f
                wval[tid] = v
            ember.barrier()
            if tid == 0:
                fold(wflag, wval, ctl, cval, newest == t - 1)
            ember.barrier()
            newest -= WINDOW
        prefix = CT(cval[0])
        if tid == 0:
            publish(state, incls, t, AT(combine(prefix, total)), PREFIX)
        return prefix

    return lookback


def _lane_window(combine, CT, AT):
    """:func:`warp_lookback`'s per-lane step."""
    words = state_words(AT)
    wait, flag_of, value_of, PACKED = words.wait, words.flag_of, words.value_of, words.packed
    BEFORE = BEFORE_ROW << 32  # the word of a tile before the row's first

    def lane_window(state, aggs, incls, newest, first, lane):
        """This lane's tiles, newest first: (stop, got, value): ``stop`` is 1 if one of them
        ends the look-back, ``value`` their combination up to it (``got``: any).  Every
        word is requested before any is waited on (then, unpacked, every value): one round
        trip to memory (two), not one (two) per tile."""
        seen = ember.local((LANE_TILES,), ember.uint64)
        top = newest - lane * LANE_TILES
        for i in range(LANE_TILES):
            seen[i] = ember.atomic_load(state, top - i + 1) if top - i >= first else BEFORE
        for i in range(LANE_TILES):
            if (seen[i] >> 32) == 0:
                seen[i] = wait(state, top - i)
        if not PACKED:
            ember.threadfence()
        values = ember.local((LANE_TILES,), AT)
        for i in range(LANE_TILES):
            if flag_of(seen[i]) != BEFORE_ROW:
                values[i] = value_of(seen[i], aggs, incls, top - i)
        stop = 0
        got = 0
        acc = CT(0)
        for i in range(LANE_TILES):
            f = flag_of(seen[i])
            if stop == 0:
                if f == BEFORE_ROW:
                    stop = 1
                else:
                    v = CT(values[i])
                    acc = combine(v, acc) if got else v
                    got = 1
                    if f == PREFIX:
                        stop = 1
        return stop, got, acc

    return lane_window


def warp_lookback(combine, CT, AT):
    """The same look-back done by the first warp alone, without block barriers: lane ``l``
    inspects ``LANE_TILES`` consecutive tiles (a window of ``WINDOW * LANE_TILES``), folds
    them itself, and the warp combines the lanes up to the first that stopped (a tile with
    an inclusive prefix, or the row's start) with shuffles.  A window costs about one
    round trip to memory whatever its length, and the look-back's speed bounds the whole
    scan's (tiles per window / time per window), hence the long windows."""

    lane_window = _lane_window(combine, CT, AT)
    publish = state_words(AT).publish

    def lookback(state, aggs, incls, wflag, wval, ctl, cval, t, first, tid, total):
        if tid == 0:
            publish(state, aggs, t, AT(total), AGGREGATE)
        if tid < WINDOW:
            lane = tid
            newest = t - 1
            run = CT(0)
            have = 0
            done = 0
            while done == 0:
                stop, got, acc = lane_window(state, aggs, incls, newest, first, lane)
                last = ember.warp_min(lane if stop else WINDOW)  # the first lane that stops
                use = 1 if got and lane <= last else 0  # these lanes form a prefix 0..u
                for k in range(5):  # tree over the lanes, older (higher) lanes on the left
                    d = 1 << k
                    src = lane + d if lane + d < WINDOW else lane
                    older = CT(ember.shfl(acc, src))
                    older_used = ember.shfl(use, src)
                    if lane % (2 * d) == 0 and lane + d < WINDOW and older_used and use:
                        acc = combine(older, acc)
                window = CT(ember.shfl(acc, 0))
                if ember.shfl(use, 0):
                    run = combine(window, run) if have else window
                    have = 1
                done = 1 if last < WINDOW else 0
                newest -= WINDOW * LANE_TILES
            if tid == 0:
                cval[0] = AT(run)
                publish(state, incls, t, AT(combine(run, total)), PREFIX)
        ember.barrier()
        return CT(cval[0])

    return lookback
