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
EPOCHS = 1 << 30  # a word's high 32 bits are (epoch << 2) | flag, epochs 1 .. EPOCHS - 1


def packs(AT) -> bool:
    """Whether values ``AT`` fit beside their flag in one 64-bit state word per tile (at
    most 4 bytes); else (8 bytes) a tile has two words, each with one half of the value
    (see :func:`state_words`)."""
    return AT.itemsize <= 4


def state_size(AT, tiles: int) -> int:
    """The uint64 words of the look-back's state for ``tiles`` tiles of values ``AT``:
    the tile counter, then one word per tile (two for 8-byte values)."""
    return 1 + tiles * (1 if packs(AT) else 2)


def state_words(AT):
    """How tiles publish and read values ``AT`` in the state (uint64; ``state[0]`` is the
    tile counter).

    A word holds a flag and the launch's *epoch* in its high 32 bits, ``(epoch << 2) |
    flag``, and value bits in its low 32.  A word of another epoch (an earlier launch's,
    or zero) is nothing published yet: the state is zeroed once and then serves launch
    after launch, each with a new epoch, instead of a memset before every scan.

    Values of up to 4 bytes: tile ``t``'s word is ``state[1 + t]``, written with one
    atomic exchange and read with one load.  8-byte values: ``state[1 + 2 t]`` and
    ``state[2 + 2 t]`` hold the low and high halves, each beside the flag.  A reader loads
    both and takes them when their flags agree; a tile that is replacing its aggregate by
    its inclusive prefix can show one half of each, with different flags, and is read
    again.  Each (tile, flag) publishes one value, so equal flags mean one publication: no
    fence is needed (H200, float64 scan of 2**25 elements: 219 us with the value stored on
    its own and fenced before its flag, 179-184 us in this layout).

    Readers see a word pair ``(a, b)``: ``look`` loads it without waiting, ``ready`` says
    whether it holds a publication of this epoch, ``settle`` waits until it does (the
    tile's block has started: it will publish), ``flag_of``/``value_of`` read it;
    ``before(epoch)`` is the pair a reader takes for a tile before its row's first."""
    PACKED = packs(AT)
    U32, U64 = dtypes.uint32, dtypes.uint64
    LOW = U64(0xFFFFFFFF)

    def publish(state, t, v, flag, epoch):
        """Tile ``t`` publishes ``v`` with ``flag``."""
        high = ember.uint64(epoch * 4 + flag) << 32
        if PACKED:
            ember.atomic_exchange(state, t + 1, high | ember.uint64(ember.bitcast(v, U32)))
        else:
            bits = ember.bitcast(v, U64)
            ember.atomic_exchange(state, 2 * t + 1, high | (bits & LOW))
            ember.atomic_exchange(state, 2 * t + 2, high | (bits >> 32))

    def look_packed(state, j):
        w = ember.atomic_load(state, j + 1)
        return w, w

    def look_split(state, j):
        return ember.atomic_load(state, 2 * j + 1), ember.atomic_load(state, 2 * j + 2)

    look = look_packed if PACKED else look_split

    def ready(a, b, epoch):
        return (a >> 34) == ember.uint64(epoch) and (a >> 32) == (b >> 32)

    def settle(state, j, epoch):
        a, b = look(state, j)
        while not ready(a, b, epoch):
            a, b = look(state, j)
        return a, b

    def flag_of(a):
        return ember.int32((a >> 32) & U64(3))

    def before(epoch):
        return ember.uint64(epoch * 4 + BEFORE_ROW) << 32

    def value_packed(a, b):
        return ember.bitcast(U32(a & LOW), AT)

    def value_split(a, b):
        return ember.bitcast((a & LOW) | ((b & LOW) << 32), AT)

    return SimpleNamespace(
        publish=publish, look=look, ready=ready, settle=settle, flag_of=flag_of,
        value_of=value_packed if PACKED else value_split, before=before,
    )  # fmt: skip


def block_lookback(combine, CT, AT):
    """The look-back of tile ``t``, which is not the first of its row (``first`` is).
    Returns the tile's prefix to every thread, after publishing its inclusive prefix.
    ``wflag``/``wval`` hold one window's flags and values, ``ctl[1]`` says the look-back
    is done, ``cval[0]`` is the running prefix (shared memory)."""
    words = state_words(AT)
    publish, settle, flag_of, value_of = words.publish, words.settle, words.flag_of, words.value_of

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

    def lookback(state, wflag, wval, ctl, cval, t, first, tid, total, epoch):
        if tid == 0:
            publish(state, t, AT(total), AGGREGATE, epoch)
            ctl[1] = 0
        newest = t - 1
        ember.barrier()
        while ctl[1] == 0:
            if tid < WINDOW:
                j = newest - tid
                f = BEFORE_ROW
                v = AT(0)
                if j >= first:
                    a, b = settle(state, j, epoch)
                    f = flag_of(a)
                    v = value_of(a, b)
                wflag[tid] = f
                wval[tid] = v
            ember.barrier()
            if tid == 0:
                fold(wflag, wval, ctl, cval, newest == t - 1)
            ember.barrier()
            newest -= WINDOW
        prefix = CT(cval[0])
        if tid == 0:
            publish(state, t, AT(combine(prefix, total)), PREFIX, epoch)
        return prefix

    return lookback


def _lane_window(combine, CT, AT):
    """:func:`warp_lookback`'s per-lane step."""
    words = state_words(AT)
    look, ready, settle = words.look, words.ready, words.settle
    flag_of, value_of, before = words.flag_of, words.value_of, words.before

    def lane_window(state, newest, first, lane, epoch):
        """This lane's tiles, newest first: (stop, got, value): ``stop`` is 1 if one of them
        ends the look-back, ``value`` their combination up to it (``got``: any).  Every
        word is requested before any is waited on: one round trip to memory, not one per
        tile."""
        seen_a = ember.local((LANE_TILES,), ember.uint64)
        seen_b = ember.local((LANE_TILES,), ember.uint64)
        top = newest - lane * LANE_TILES
        BEFORE = before(epoch)  # the words of a tile before the row's first
        for i in range(LANE_TILES):
            a, b = BEFORE, BEFORE
            if top - i >= first:
                a, b = look(state, top - i)
            seen_a[i] = a
            seen_b[i] = b
        for i in range(LANE_TILES):
            if not ready(seen_a[i], seen_b[i], epoch):
                a, b = settle(state, top - i, epoch)
                seen_a[i] = a
                seen_b[i] = b
        stop = 0
        got = 0
        acc = CT(0)
        for i in range(LANE_TILES):
            f = flag_of(seen_a[i])
            if stop == 0:
                if f == BEFORE_ROW:
                    stop = 1
                else:
                    v = CT(value_of(seen_a[i], seen_b[i]))
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

    def lookback(state, wflag, wval, ctl, cval, t, first, tid, total, epoch):
        if tid == 0:
            publish(state, t, AT(total), AGGREGATE, epoch)
        if tid < WINDOW:
            lane = tid
            newest = t - 1
            run = CT(0)
            have = 0
            done = 0
            while done == 0:
                stop, got, acc = lane_window(state, newest, first, lane, epoch)
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
                publish(state, t, AT(combine(run, total)), PREFIX, epoch)
        ember.barrier()
        return CT(cval[0])

    return lookback
