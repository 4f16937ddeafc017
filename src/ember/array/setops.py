"""NumPy's set, partition and selection helpers, composed from Ember's array operations.

Every function is a short composition of operations that run on every backend: ``sort`` /
``argsort`` (stable), ``unique``, ``searchsorted``, stream compaction, the gathers and
scatters of ``take`` / ``take_along_axis`` / ``x[idx] = v``, ``cumsum`` and ``where``.
Three small kernels fuse what would otherwise be several passes (and several kernels to
compile): :func:`member_kernel`, :func:`lonely_kernel` and :func:`choice_kernel`.  Nothing
copies a whole array to the host; the only synchronizations size a data-dependent result
(a compaction's count) or are the rare checks noted below.

- **Membership** (``isin``): the test elements are sorted once, each element is looked up
  by binary search (``searchsorted``, in the promoted dtype) and compared with the element
  at its insertion point.  NaN is never a member (NaN != NaN), as in NumPy.
- **Set operations** (``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d``):
  ``unique`` (NaNs merged, as NumPy's), membership flags and one compaction; ``setxor1d``
  keeps the elements of the sorted concatenation that differ from both neighbours, NumPy's
  recipe, so its NaNs come out as NumPy's do.
- **Partitions** (``partition``, ``argpartition``): a full stable sort satisfies NumPy's
  contract (the ``kth`` element in its sorted place, none larger before it, none smaller
  after), so they *are* ``sort`` / ``argsort`` after ``kth`` is checked.  The order inside
  the two sides is therefore sorted, which NumPy does not promise either way.
- **lexsort**: one stable ``argsort`` per key, least significant first, each key gathered
  through the permutation so far.
- **Selections** (``compress``, ``extract``): stream compaction, or ``flatnonzero`` and
  ``take`` along an axis.  ``select`` is a chain of ``where``; ``choose`` stacks the
  broadcast choices and gathers along the new axis (``take_along_axis``).
- **In-place writes** (``place``, ``putmask``, ``put_along_axis``): ``place`` numbers the
  True positions by a ``cumsum`` of the mask and gathers ``vals`` cyclically by that rank,
  ``putmask`` by the flat index; both finish with ``where(mask, new, a, out=a)``.
  ``put_along_axis`` is ``a[i0, ..., indices, ..., in] = values`` with ``arange`` indices
  on the other axes (the device checks the range, as ``x[idx] = v`` does).

(``diagonal``, ``diag`` and ``trace`` are in :mod:`ember.array.blocks`.)
"""

from __future__ import annotations

import functools
import math
import operator

import ember
from ember import dtypes
from ember.array import kernels, launch, manipulation
from ember.array.creation import on_device
from ember.array.ndarray import ndarray, not_on_device
from ember.compiler.kernel import Kernel

BLOCK = 256
_HOST = (bool, int, float, complex, list, tuple)
_WEAK = (int, float, complex)  # Python scalars that promote weakly (NEP 50)


def _backend_of(*xs):
    """The backend of the first ember array among ``xs`` (None: the current one)."""
    return next((x.backend for x in xs if isinstance(x, ndarray)), None)


# --------------------------------------------------------------------- operands


def _operand(x, what: str, be=None) -> ndarray:
    """An ember array as it is; a Python scalar, list or tuple (a small description made
    on the host) copied to ``be`` (default the current backend); NumPy arrays refused."""
    if isinstance(x, ndarray):
        return x
    if type(x).__module__ == "numpy" and getattr(x, "ndim", 0):
        raise not_on_device(x, f"ember.{what}")
    if isinstance(x, _HOST) or type(x).__module__ == "numpy":
        return ember.asarray(x, device=be)
    raise TypeError(f"ember.{what}: expected an ember array (or a Python scalar or list), "
                    f"got {type(x).__name__}")  # fmt: skip


def _pair(ar1, ar2, what: str) -> tuple[ndarray, ndarray]:
    """Both operands on the device of the first ember array among them, flattened."""
    be = _backend_of(ar1, ar2)
    a, b = _operand(ar1, what, be), _operand(ar2, what, be)
    return _flat(a), _flat(b)


def _flat(x: ndarray) -> ndarray:
    return manipulation.reshape(x, (math.prod(x.shape),))


def _empty(x: ndarray, dt=None) -> ndarray:  # (no kernel for empty inputs)
    return launch.new(x.backend, (0,), x.dtype if dt is None else dt)


def _compact(flags: ndarray, values: ndarray) -> ndarray:
    """The elements of the 1-d ``values`` where ``flags`` is nonzero."""
    from ember.array.compact import compact

    return compact(flags, values) if values.shape[0] else _empty(values)


def _unique(x: ndarray) -> ndarray:
    return ember.unique(x) if x.shape[0] else _empty(x)


# --------------------------------------------------------------------- membership
@functools.cache
def member_kernel(ct: dtypes.DType) -> Kernel:
    """``found[i] = (s[pos[i]] == x[i]) != invert``, compared in ``ct`` (NaN equals
    nothing): ``x[i]`` is at its insertion point ``pos[i]`` in the sorted ``s``."""
    CT = ct

    def member(m, n, s, x, pos, found, invert):
        i = ember.global_id()
        while i < m:
            p = pos[i]
            hit = False
            if p < n:
                hit = CT(s[p]) == CT(x[i])
            found[i] = found.dtype(hit != invert)
            i += ember.global_size()

    return kernels._named(member, f"isin_member_{ct.name}")


def _contained(sorted_test: ndarray, x: ndarray, invert=False, flags=dtypes.bool_) -> ndarray:
    """Whether each element of ``x`` is in the sorted 1-d ``sorted_test`` (``flags``: bool,
    or uint8 for a compaction, whose kernels ``unique`` compiles for uint8 flags; of ``x``'s
    shape; ``invert``: whether it is not)."""
    from ember.array.search import searchsorted

    n = sorted_test.shape[0]
    found = launch.new(x.backend, x.shape, flags)
    if found.size == 0:
        return found
    pos = searchsorted(sorted_test, x) if n else launch.zeroed(x.backend, x.shape, dtypes.int64)
    flat = manipulation.ascontiguousarray(_flat(x))
    s = manipulation.ascontiguousarray(sorted_test)
    args = (found.size, n, s, flat, launch.flat1(pos), launch.flat1(found), invert)
    k = member_kernel(ember.result_type(sorted_test, x))
    launch.run(k, launch.grid(x.backend, found.size, BLOCK, whole=True), BLOCK, args)
    return found


def _count(flags: ndarray) -> int:
    """How many elements of ``flags`` are nonzero (one number read back; the compaction's
    count, whose kernels the selections compile anyway)."""
    from ember.array.compact import positions

    return positions(_flat(flags))[1]


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None) -> ndarray:
    """Whether each element of ``element`` is in ``test_elements`` (bool, of ``element``'s
    shape; ``invert=True``: whether it is not).

    The test elements are flattened and sorted on the device, and every element is found
    by binary search (:func:`ember.searchsorted`) and compared, in the dtype NumPy
    compares the two in.  NaN is in no set (NaN != NaN), ``-0.0`` equals ``0.0``.

    NumPy compatibility: ``assume_unique`` changes nothing (the sort does not need unique
    values); ``kind`` is checked as NumPy checks it (``'table'`` only for integers and
    bools) but both kinds take the sort.  A Python scalar ``element`` gives a 0-d array.
    """
    if kind not in (None, "sort", "table"):
        raise ValueError(f"ember.isin: invalid kind {kind!r}; use None, 'sort' or 'table'")
    be = _backend_of(element, test_elements)
    x, test = _operand(element, "isin", be), _operand(test_elements, "isin", be)
    if kind == "table" and not all(a.dtype.kind in "biu" for a in (x, test)):
        raise ValueError("ember.isin: kind='table' is only supported for boolean or integer "
                         "arrays; use kind='sort' or None")  # fmt: skip
    return _contained(ember.sort(_flat(test)), x, bool(invert))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """The sorted values in both ``ar1`` and ``ar2`` (flattened), in their promoted dtype;
    with ``return_indices``, also the indices of their first occurrences in each.

    ``unique`` of each input (a sort where ``assume_unique``), the common values found by
    :func:`isin`'s lookup, one compaction.  NaNs are never common, as in NumPy.
    """
    a, b = _pair(ar1, ar2, "intersect1d")
    dt = ember.result_type(a, b)
    ua, ia = _sorted_with_index(a, assume_unique, return_indices)
    ub, ib = _sorted_with_index(b, assume_unique, return_indices)
    found = _contained(ub, ua, flags=dtypes.uint8)
    if not return_indices:
        return manipulation.astype(_compact(found, ua), dt, copy=False)
    if ua.shape[0] == 0:
        return manipulation.astype(ua, dt, copy=False), ia, ia
    from ember.array.compact import compact_each
    from ember.array.search import searchsorted

    common, i1 = compact_each(found, [(ua, None), (ia, None)])
    i2 = ember.take(ib, searchsorted(ub, common))
    return manipulation.astype(common, dt, copy=False), i1, i2


def _sorted_with_index(x: ndarray, assume_unique: bool, index: bool):
    """``(values, where each came from or None)``: ``unique`` (with first indices), or,
    where the values are unique already, a stable sort (with its permutation)."""
    if x.shape[0] == 0:
        return x, _empty(x, dtypes.int64)
    if not assume_unique:
        return ember.unique(x, return_index=True) if index else (ember.unique(x), None)
    if not index:
        return ember.sort(x), None
    order = ember.argsort(x)
    return ember.take(x, order), order


def union1d(ar1, ar2) -> ndarray:
    """The sorted unique values of ``ar1`` and ``ar2`` together (flattened, promoted
    dtype); NaNs become one, as NumPy's ``unique`` makes them."""
    a, b = _pair(ar1, ar2, "union1d")
    return _unique(ember.concatenate([a, b]))


def setdiff1d(ar1, ar2, assume_unique=False) -> ndarray:
    """The unique values of ``ar1`` not in ``ar2``, sorted, in ``ar1``'s dtype.  With
    ``assume_unique`` ``ar1`` is only flattened: the result keeps its order, as NumPy's."""
    a, b = _pair(ar1, ar2, "setdiff1d")
    ua = a if assume_unique else _unique(a)
    return _compact(_contained(ember.sort(b), ua, True, dtypes.uint8), ua)


def setxor1d(ar1, ar2, assume_unique=False) -> ndarray:
    """The sorted values in exactly one of ``ar1`` and ``ar2`` (promoted dtype).

    NumPy's recipe: the sorted concatenation of the unique values of each keeps the values
    that differ from both neighbours.  As in NumPy, a NaN in each input gives two NaNs.
    """
    a, b = _pair(ar1, ar2, "setxor1d")
    if not assume_unique:
        a, b = _unique(a), _unique(b)
    aux = ember.sort(ember.concatenate([a, b]))
    n = aux.shape[0]
    if n == 0:
        return aux
    keep = launch.new(aux.backend, (n,), dtypes.uint8)
    launch.run(lonely_kernel(), launch.grid(aux.backend, n, BLOCK), BLOCK, (n, aux, keep))
    return _compact(keep, aux)


@functools.cache
def lonely_kernel() -> Kernel:
    """``keep[i] = 1`` where the sorted ``s[i]`` differs from both neighbours (``!=``:
    NaNs differ from each other, as in NumPy's ``setxor1d``)."""

    def lonely(n, s, keep):
        i = ember.global_id()
        while i < n:
            first = i == 0 or s[i] != s[i - 1]
            last = i == n - 1 or s[i + 1] != s[i]
            keep[i] = 1 if first and last else 0
            i += ember.global_size()

    return kernels._named(lonely, "setxor_lonely")


# --------------------------------------------------------------------- partitions, lexsort
def _kth(kth, n: int, what: str) -> None:
    """Check ``kth`` (an int or a sequence of them) against an axis of length ``n``."""
    for k in kth if isinstance(kth, list | tuple | range) else [kth]:
        if isinstance(k, bool) or not hasattr(k, "__index__"):
            raise TypeError(f"ember.{what}: kth must be an integer or a sequence of integers, "
                            f"got {k!r}")  # fmt: skip
        if not -n <= operator.index(k) < n:
            raise ValueError(f"ember.{what}: kth={k} is out of bounds for an axis of length "
                             f"{n} (valid: {-n} <= kth < {n})")  # fmt: skip


def _partition_args(a, kth, axis, kind, order, what: str):
    x = on_device(a, what)
    if kind != "introselect":
        raise ValueError(f"ember.{what}: kind must be 'introselect', got {kind!r}")
    if order is not None:
        raise ValueError(f"ember.{what}: order= (structured arrays) is not supported")
    if axis is None:
        x, axis = _flat(x), 0
    if x.ndim == 0:
        raise ValueError(f"ember.{what}: cannot partition a 0-d array (reshape it to 1-d)")
    k = manipulation._axis(axis, x.ndim)
    _kth(kth, x.shape[k], what)
    return x, k


def partition(a, kth, axis=-1, kind="introselect", order=None) -> ndarray:
    """A copy of ``a`` with the element at each ``kth`` position (an int or a sequence,
    negative from the end) where a sort would put it, no larger element before it and no
    smaller one after (``axis=None``: of the flattened array).

    Implemented as a full stable :func:`ember.sort`, which meets NumPy's contract: the
    sides come out sorted (NumPy leaves their order unspecified).  NaNs go last.  ``kth``
    outside ``[-n, n)`` raises ValueError, as in NumPy.
    """
    x, k = _partition_args(a, kth, axis, kind, order, "partition")
    return ember.sort(x, axis=k)


def argpartition(a, kth, axis=-1, kind="introselect", order=None) -> ndarray:
    """The int64 indices that would partition ``a`` (see :func:`partition`): a stable
    :func:`ember.argsort`, so equal elements keep their order."""
    x, k = _partition_args(a, kth, axis, kind, order, "argpartition")
    return ember.argsort(x, axis=k)


def lexsort(keys, axis=-1) -> ndarray:
    """The int64 indices that sort by several keys: the **last** key is the primary one
    (NumPy's ``lexsort``).  ``keys`` is a sequence of arrays of one shape, or an array
    whose first axis lists them.

    One stable :func:`ember.argsort` per key, least significant first, each key gathered
    through the permutation found so far.  Deviation: keys must be at least 1-d (NumPy
    reads a 1-d array as a sequence of 0-d keys).
    """
    if isinstance(keys, ndarray) and keys.ndim < 2:
        raise ValueError("ember.lexsort: keys must be at least 1-d (pass [x] for one key)")
    items = list(manipulation.unstack(keys)) if isinstance(keys, ndarray) else list(keys)
    if not items:
        raise TypeError("ember.lexsort: needs a sequence of at least one key")
    items = [_operand(a, "lexsort", _backend_of(*items)) for a in items]
    if len({a.shape for a in items}) != 1:
        raise ValueError(f"ember.lexsort: all keys need to be the same shape, got "
                         f"{[a.shape for a in items]}")  # fmt: skip
    if items[0].ndim == 0:
        raise ValueError("ember.lexsort: keys must be at least 1-d (pass [x] for one key)")
    k = manipulation._axis(axis, items[0].ndim)
    perm = ember.argsort(items[0], axis=k)
    for key in items[1:]:
        step = ember.argsort(ember.take_along_axis(key, perm, axis=k), axis=k)
        perm = ember.take_along_axis(perm, step, axis=k)
    return perm


# --------------------------------------------------------------------- selections
def _fit_condition(cond: ndarray, n: int, what: str) -> ndarray:
    """The 1-d ``cond`` cut or kept to length ``n``: a shorter one selects nothing past
    its end; a longer one is an error only where it selects past ``n`` (NumPy's rule,
    checked by reading one count).  Bools are seen as their bytes (uint8): the flags of
    the compaction kernels that ``unique`` and the set operations compile."""
    if cond.dtype is dtypes.bool_:
        cond = ndarray(cond.shape, dtypes.uint8, cond.buffer, cond.backend, cond.strides,
                       cond.offset)  # fmt: skip
    if cond.shape[0] > n and _count(cond[n:]):
        raise IndexError(f"ember.{what}: the condition selects index {n} or later, out of "
                         f"bounds for length {n}; make it at most as long as the selected "
                         "axis")  # fmt: skip
    return cond[:n]


def compress(condition, a, axis=None, out=None) -> ndarray:
    """The slices of ``a`` along ``axis`` (the flattened ``a`` if None) where the 1-d
    ``condition`` is true (nonzero); ``out``: an array of the result's shape that
    receives them.

    A condition shorter than the axis selects nothing past its end (NumPy's rule); a
    longer one raises IndexError if it selects past the axis.
    """
    if out is not None:
        return manipulation.into(out, compress(condition, a, axis), "compress")
    x = on_device(a, "compress")
    cond = _operand(condition, "compress", x.backend)
    if cond.ndim != 1:
        raise ValueError(f"ember.compress: condition must be 1-d, got shape {cond.shape}")
    if axis is None:
        flat = _flat(x)
        cond = _fit_condition(cond, flat.shape[0], "compress")
        return _compact(cond, flat[: cond.shape[0]])
    k = manipulation._axis(axis, x.ndim)
    cond = _fit_condition(cond, x.shape[k], "compress")
    return ember.take(x, ember.flatnonzero(cond), axis=k)


def extract(condition, arr) -> ndarray:
    """The elements of ``arr`` (flattened) where ``condition`` (flattened) is nonzero:
    NumPy's ``extract``, i.e. ``compress(ravel(condition), ravel(arr))``."""
    x = on_device(arr, "extract")
    cond = _operand(condition, "extract", x.backend)
    return compress(_flat(cond), x)


def _masked(a, mask, values, what: str):
    """``(a, mask as bools of a's shape, values flat in a's dtype)``: the mask must have
    ``a``'s size and the values are cast unsafely, as in NumPy."""
    x = on_device(a, what)
    m = _operand(mask, what, x.backend)
    if m.size != x.size:
        raise ValueError(f"ember.{what}: mask and data must be the same size, got {m.size} "
                         f"and {x.size}")  # fmt: skip
    m = manipulation.reshape(m if m.dtype is dtypes.bool_ else m != 0, x.shape)
    v = manipulation.astype(_flat(_operand(values, what, x.backend)), x.dtype, copy=False)
    return x, m, v


def _write(x: ndarray, m: ndarray, v: ndarray, positions) -> None:
    """``x[i] = v[positions()[i] % len(v)]`` in place wherever ``m[i]`` (flat C order;
    ``positions`` None: ``v`` has ``x``'s size and is taken as it is)."""
    if v.shape[0] == 1:
        new = manipulation.reshape(v, ())
    elif positions is None:
        new = manipulation.reshape(v, x.shape)
    else:
        new = manipulation.reshape(ember.take(v, positions() % v.shape[0]), x.shape)
    ember.where(m, new, x, out=x)


def place(arr, mask, vals) -> None:
    """Write ``vals`` into ``arr`` in place where ``mask`` is true, in C order, repeating
    ``vals`` when there are more true positions than values (NumPy's ``place``).

    The true positions are numbered by a cumulative sum of the mask; each takes value
    ``rank % len(vals)``.  An empty ``vals`` with a true position raises ValueError (one
    count read).
    """
    x, m, v = _masked(arr, mask, vals, "place")
    if v.shape[0] == 0:
        if _count(m):
            raise ValueError("ember.place: cannot insert from an empty array of values")
        return
    _write(x, m, v, lambda: ember.cumsum(_flat(m), dtype=dtypes.int64) - 1)


def putmask(a, mask, values) -> None:
    """``a.flat[i] = values.flat[i % len(values)]`` in place wherever ``mask.flat[i]`` is
    true (NumPy's ``putmask``: ``mask`` has ``a``'s size; ``values`` repeat cyclically by
    *flat index*, not by the count of true positions as :func:`place` does).  An empty
    ``values`` changes nothing, as in NumPy."""
    x, m, v = _masked(a, mask, values, "putmask")
    if v.shape[0] and x.size:
        same = v.shape[0] == x.size
        _write(x, m, v, None if same else lambda: ember.arange(x.size, device=x.backend))


def copyto(dst, src, casting: str = "same_kind", where=True) -> None:
    """Copy ``src`` into ``dst`` in place, broadcast to ``dst``'s shape and converted to
    its dtype, where ``where`` is true (NumPy's ``copyto``).

    ``casting`` is NumPy's rule for the conversion (``'no'``, ``'equiv'``, ``'safe'``,
    ``'same_kind'``, ``'unsafe'``); a Python or NumPy scalar is checked by NumPy's own rule
    (weak Python scalars: ``copyto(int_array, 1.5)`` raises, ``copyto(int_array, 3)`` does
    not).  Nothing is written when the check or the broadcast fails."""
    import numpy as np

    if not isinstance(dst, ndarray):
        raise TypeError(f"ember.copyto: dst must be an ember array, got {type(dst).__name__}")
    if isinstance(src, ndarray):
        if not ember.can_cast(src.dtype, dst.dtype, casting):
            raise TypeError(
                f"ember.copyto: cannot cast array data from {src.dtype.name} to "
                f"{dst.dtype.name} according to the rule {casting!r}"
            )
        s = src
    else:
        np.copyto(np.empty(0, dst.dtype.numpy), src, casting=casting)  # NumPy's check
        s = _operand(src, "copyto", dst.backend)
    s = manipulation.broadcast_to(manipulation.astype(s, dst.dtype, copy=False), dst.shape)
    if where is True:
        dst[...] = s
        return
    mask = manipulation.broadcast_to(_operand(where, "copyto", dst.backend), dst.shape)
    if mask.dtype is not dtypes.bool_:
        raise TypeError(f"ember.copyto: where must be an array of bool, not {mask.dtype.name}")
    ember.where(mask, s, dst, out=dst)


def _promoted(values) -> dtypes.DType:
    """NumPy's result dtype of ``select``'s and ``choose``'s operands: Python ints, floats
    and complexes are weak (NEP 50), anything else counts as NumPy's array of it."""
    import numpy as np

    ops = [v if isinstance(v, ndarray) or type(v) in _WEAK
           else dtypes.dtype(np.asarray(v).dtype) for v in values]  # fmt: skip
    if all(type(v) in _WEAK for v in ops):  # (ember.result_type wants one array or dtype)
        return dtypes.dtype(np.result_type(*ops))
    return ember.result_type(*ops)


def _cast(v, dt: dtypes.DType, be, what: str) -> ndarray:
    return manipulation.astype(_operand(v, what, be), dt, copy=False)


def select(condlist, choicelist, default=0) -> ndarray:
    """Per element, the value of the first choice whose condition holds, else ``default``
    (NumPy's ``select``; conditions and choices broadcast together).

    The result dtype is NumPy's: the choices and ``default`` promoted, Python int, float
    and complex scalars weakly (``int8`` choices with ``default=100`` give int8).  A chain
    of :func:`ember.where`, last condition first.
    """
    conds, choices = list(condlist), list(choicelist)
    if len(conds) != len(choices) or not conds:
        raise ValueError(f"ember.select: {len(conds)} conditions and {len(choices)} choices; "
                         "give at least one condition, and one choice per condition")  # fmt: skip
    for i, c in enumerate(conds):
        if not isinstance(c, ndarray) or c.dtype is not dtypes.bool_:
            raise TypeError(f"ember.select: condition {i} must be a bool ember array, got "
                            f"{getattr(c, 'dtype', type(c).__name__)}")  # fmt: skip
    dt = _promoted([*choices, default])
    be = conds[0].backend
    result = default if type(default) in _WEAK else _cast(default, dt, be, "select")
    for cond, choice in zip(reversed(conds), reversed(choices), strict=True):
        # a weak Python scalar goes to where as it is (nothing to copy), beside an array
        weak = type(choice) in _WEAK and isinstance(result, ndarray)
        result = ember.where(cond, choice if weak else _cast(choice, dt, be, "select"), result)
    return result


# --------------------------------------------------------------------- choose
@functools.cache
def choice_kernel(mode: str) -> Kernel:
    """``out[i]``: ``a[i]`` as an index into ``n`` choices by ``mode``: ``wrap`` (modulo),
    ``clip``, or ``raise`` (an entry outside ``[0, n)`` takes choice 0, and the thread
    raises ``ValueError`` when done: at the next synchronization)."""
    WRAP, CLIP = mode == "wrap", mode == "clip"

    def choice_index(m, a, out, n):
        bad = False
        i = ember.global_id()
        while i < m:
            j = ember.int64(a[i])
            if WRAP:
                j = j % n  # (floor modulo, as Python's: in [0, n))
            elif CLIP:
                j = 0 if j < 0 else (n - 1 if j >= n else j)
            elif j < 0 or j >= n:
                j = 0
                bad = True
            out[i] = j
            i += ember.global_size()
        if bad:
            raise ValueError("ember.choose: an entry of `a` is not a valid choice (valid: "
                             "0 <= a < len(choices)); use mode='wrap' or 'clip' to map it "
                             "into range")  # fmt: skip

    return kernels._named(choice_index, f"choose_index_{mode}")


def choose(a, choices, out=None, mode="raise") -> ndarray:
    """``choices[a[i]][i]`` per element (NumPy's ``choose``; ``a`` and every choice
    broadcast together; the result dtype promotes the choices, Python scalars weakly).

    ``mode``: ``'raise'`` (an entry outside ``[0, len(choices))`` raises ValueError at
    the next synchronization, checked on the device), ``'wrap'`` (modulo) or ``'clip'``.
    The broadcast choices are stacked and gathered along the new axis.  ``out``, when
    given, receives the result (of the broadcast shape) and is returned.
    """
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"ember.choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    items = list(manipulation.unstack(choices)) if isinstance(choices, ndarray) else list(choices)
    if not items:
        raise ValueError("ember.choose: needs at least one choice")
    idx = _operand(a, "choose", _backend_of(*items))
    if idx.dtype.kind not in "biu":
        raise TypeError(f"ember.choose: `a` must hold integers, got {idx.dtype.name}; "
                        "convert it with a.astype(ember.int64)")  # fmt: skip
    dt = _promoted(items)
    arrays = [_cast(c, dt, idx.backend, "choose") for c in items]
    shape = ember.broadcast_shapes(idx.shape, *(c.shape for c in arrays))
    stacked = ember.stack([ember.broadcast_to(c, shape) for c in arrays])
    flat = manipulation.ascontiguousarray(_flat(idx))
    where = launch.new(idx.backend, flat.shape, dtypes.int64)
    if flat.shape[0]:
        args = (flat.shape[0], flat, where, len(items))
        grid = launch.grid(idx.backend, flat.shape[0], BLOCK, whole=True)  # (gathers)
        launch.run(choice_kernel(mode), grid, BLOCK, args)
    where = manipulation.reshape(where, (1,) * (len(shape) - idx.ndim + 1) + idx.shape)
    result = manipulation.reshape(ember.take_along_axis(stacked, where, axis=0), shape)
    return manipulation.into(out, result, "choose")


def put_along_axis(arr, indices, values, axis) -> None:
    """``arr[..., indices[..., j, ...], ...] = values`` in place along ``axis`` (NumPy's
    ``put_along_axis``; ``axis=None``: into the flattened ``arr``, ``indices`` 1-d).

    ``indices`` has ``arr``'s number of dimensions and broadcasts against it on the other
    axes; ``values`` broadcast to the indexed shape, cast to ``arr``'s dtype.  Indices out
    of ``[-n, n)`` raise IndexError at the next synchronization (checked on the device).
    Deviation: where an index repeats, which value lands is unspecified (NumPy: the last).
    """
    x = on_device(arr, "put_along_axis")
    idx = _operand(indices, "put_along_axis", x.backend)
    if idx.dtype.kind not in "iu":
        raise IndexError(f"ember.put_along_axis: indices must be integers, got {idx.dtype.name}")
    v = _operand(values, "put_along_axis", x.backend)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("ember.put_along_axis: with axis=None, indices must be 1-d")
        ember.put(x, idx, ember.broadcast_to(v, idx.shape))
        return
    if idx.ndim != x.ndim:
        raise ValueError(f"ember.put_along_axis: indices and arr must have the same number of "
                         f"dimensions, got {idx.ndim} and {x.ndim}")  # fmt: skip
    k = manipulation._axis(axis, x.ndim)
    ones = (1,) * x.ndim  # each other axis indexed by its arange, along that axis
    x[tuple(idx if d == k else manipulation.reshape(ember.arange(n, device=x.backend),
                                                    ones[:d] + (n,) + ones[d + 1 :])
            for d, n in enumerate(x.shape))] = v  # fmt: skip


__all__ = [
    "isin", "intersect1d", "union1d", "setdiff1d", "setxor1d", "partition", "argpartition",
    "lexsort", "compress", "extract", "place", "putmask", "select", "choose",
    "put_along_axis",
]  # fmt: skip
