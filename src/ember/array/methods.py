"""NumPy's ``ndarray`` methods that are spellings of namespace functions (``x.clip(0, 1)``
is ``ember.clip(x, 0, 1)``, ``x.sum(axis=1)`` is ``ember.sum(x, axis=1)``), kept out of
:mod:`ember.array.ndarray`, whose class inherits them.  Each method imports its function on
first use: the modules that define them import the array class, not the other way round."""

from __future__ import annotations

from typing import Any


def _ember():
    import ember

    return ember


def _into(out, result, what: str):
    """``result``, or ``out`` holding it (for functions without ``out=``)."""
    from ember.array.manipulation import into

    return into(out, result, what)


class Flags:
    """An array's layout flags (:attr:`NumpyMethods.flags`), read-only."""

    __slots__ = ("c_contiguous", "f_contiguous", "writeable", "aligned", "owndata")

    def __init__(self, c: bool, f: bool, writeable: bool, aligned: bool, owndata: bool):
        for name, value in zip(self.__slots__, (c, f, writeable, aligned, owndata), strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value) -> None:
        # NumPy's `a.flags.writeable = False` makes writes raise; here setting it on this
        # snapshot would be accepted and protect nothing, silently
        raise AttributeError(
            f"ember arrays' flags cannot be set (flags.{name}): there is no read-only mode, "
            "so writes to the array would still go through; pass a copy (a.copy()) where "
            "the data must not change"
        )

    def __setitem__(self, name: str, value) -> None:
        self.__setattr__(self._key(name), value)

    def __getitem__(self, name: str) -> bool:
        return getattr(self, self._key(name))

    def _key(self, name: str) -> str:
        """The attribute a flag's name stands for (NumPy's letters or names, any case)."""
        key = {"C": "c_contiguous", "F": "f_contiguous", "W": "writeable", "A": "aligned",
               "O": "owndata"}.get(name) or str(name).lower()  # fmt: skip
        if key not in self.__slots__:
            raise KeyError(f"unknown flag {name!r}")
        return key

    def __repr__(self) -> str:
        return "\n".join(f"  {k.upper()} : {getattr(self, k)}" for k in self.__slots__)


class NumpyMethods:
    """Methods of :class:`~ember.ndarray` that delegate to ``ember.<name>(self, ...)``."""

    __slots__ = ()

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
        """Sum over ``axis``: :func:`ember.sum`."""
        return reductions.sum(self, axis, dtype, out, keepdims, initial, where)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
        """Product over ``axis``: :func:`ember.prod`."""
        return reductions.prod(self, axis, dtype, out, keepdims, initial, where)

    def max(self, axis=None, out=None, keepdims=False, initial=None, where=True):
        """Largest element over ``axis``: :func:`ember.max`."""
        return reductions.max(self, axis, out, keepdims, initial, where)

    def min(self, axis=None, out=None, keepdims=False, initial=None, where=True):
        """Smallest element over ``axis``: :func:`ember.min`."""
        return reductions.min(self, axis, out, keepdims, initial, where)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        """Index of the largest element: :func:`ember.argmax`."""
        return reductions.argmax(self, axis, out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        """Index of the smallest element: :func:`ember.argmin`."""
        return reductions.argmin(self, axis, out, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
        """Mean over ``axis``: :func:`ember.mean`."""
        return reductions.mean(self, axis, dtype, out, keepdims, where=where)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None,
            where=True):  # fmt: skip
        """Variance over ``axis``: :func:`ember.var`."""
        return reductions.var(self, axis, dtype, out, ddof, keepdims, correction=correction,
                              where=where)  # fmt: skip

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None,
            where=True):  # fmt: skip
        """Standard deviation over ``axis``: :func:`ember.std`."""
        return reductions.std(self, axis, dtype, out, ddof, keepdims, correction=correction,
                              where=where)  # fmt: skip

    def any(self, axis=None, out=None, keepdims=False, *, where=True):
        """Whether any element is true: :func:`ember.any`."""
        return reductions.any(self, axis, out, keepdims, where=where)

    def all(self, axis=None, out=None, keepdims=False, *, where=True):
        """Whether every element is true: :func:`ember.all`."""
        return reductions.all(self, axis, out, keepdims, where=where)

    def cumsum(self, axis=None, dtype=None, out=None) -> Any:
        """The cumulative sum (:func:`ember.cumsum`)."""
        from ember.array import scan

        return scan.cumsum(self, axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None) -> Any:
        """The cumulative product (:func:`ember.cumprod`)."""
        from ember.array import scan

        return scan.cumprod(self, axis, dtype, out)

    def copy(self, order: str = "C"):
        """A copy on the device, C-contiguous (``order``: ``'F'``, ``'A'``, ``'K'`` as in
        :func:`ember.copy`)."""
        if order == "C":
            from ember.array.manipulation import astype

            return astype(self, self.dtype, copy=True)
        return _ember().copy(self, order)

    def ravel(self, order: str = "C"):
        """A 1-d view (or a copy when the layout needs one); ``order`` as in
        :func:`ember.ravel`."""
        return _ember().ravel(self, order)

    def flatten(self, order: str = "C"):
        """A 1-d copy, its elements in ``order`` (as in :func:`ember.ravel`)."""
        out = _ember().ravel(self, order)
        return out.copy() if out.buffer is self.buffer else out  # a view: copied once

    def sort(self, axis: int = -1, kind=None, order=None) -> None:
        """Sort in place along ``axis`` (stable; :func:`ember.sort`)."""
        from ember.array import sort

        sort.sort_inplace(self, axis, kind, order)

    def argsort(self, axis: int = -1, kind=None, order=None) -> Any:
        """The indices that sort the array along ``axis`` (:func:`ember.argsort`)."""
        from ember.array import sort

        return sort.argsort(self, axis, kind, order)

    def nonzero(self) -> tuple:
        """The indices of the nonzero elements, one array per axis (:func:`ember.nonzero`)."""
        from ember.array import search

        return search.nonzero(self)

    # ------------------------------------------------------------------ others

    def clip(self, min=None, max=None, out=None):  # noqa: A002 - NumPy's names
        """Values limited to ``[min, max]`` (:func:`ember.clip`)."""
        return _ember().clip(self, min, max, out=out)

    def round(self, decimals: int = 0, out=None):
        """Round half to even to ``decimals`` digits (:func:`ember.round`)."""
        return _ember().round(self, decimals, out=out)

    def take(self, indices, axis=None, out=None, mode="raise"):
        """Elements at ``indices`` along ``axis`` (flattened if None; :func:`ember.take`,
        NumPy's ``out`` and ``mode``)."""
        return _ember().take(self, indices, axis=axis, out=out, mode=mode)

    def put(self, indices, values, mode="raise") -> None:
        """Write ``values`` at the flat ``indices``, in place (:func:`ember.put`)."""
        _ember().put(self, indices, values, mode=mode)

    def repeat(self, repeats, axis=None):
        """Each element repeated ``repeats`` times (:func:`ember.repeat`)."""
        return _ember().repeat(self, repeats, axis=axis)

    def searchsorted(self, v, side="left", sorter=None):
        """Insertion points of ``v`` in this sorted 1-d array (:func:`ember.searchsorted`)."""
        return _ember().searchsorted(self, v, side=side, sorter=sorter)

    def dot(self, b, out=None):
        """The dot product with ``b`` (:func:`ember.dot`); ``out=`` receives it."""
        return _into(out, _ember().dot(self, b), "ndarray.dot")

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1):
        """The diagonal of axes ``axis1``, ``axis2`` (:func:`ember.diagonal`)."""
        return _ember().diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
        """The sum along the diagonal (:func:`ember.trace`)."""
        return _ember().trace(self, offset, axis1, axis2, dtype=dtype, out=out)

    def compress(self, condition, axis=None, out=None):
        """The slices where ``condition`` is true (:func:`ember.compress`)."""
        return _into(out, _ember().compress(condition, self, axis=axis), "ndarray.compress")

    def choose(self, choices, out=None, mode="raise"):
        """Elements of ``choices`` picked by this index array (:func:`ember.choose`)."""
        return _ember().choose(self, choices, out=out, mode=mode)

    def partition(self, kth, axis: int = -1, kind="introselect", order=None) -> None:
        """Partition in place around ``kth`` (:func:`ember.partition`)."""
        from ember.array.manipulation import copy_into

        copy_into(self, _ember().partition(self, kth, axis=axis, kind=kind, order=order))

    def argpartition(self, kth, axis: int = -1, kind="introselect", order=None):
        """The indices that partition the array around ``kth`` (:func:`ember.argpartition`)."""
        return _ember().argpartition(self, kth, axis=axis, kind=kind, order=order)

    def view(self, dtype=None, type=None):  # noqa: A002 - NumPy's names
        """The same memory as another dtype (NumPy's ``view``): the bits reinterpreted,
        nothing copied.  With a dtype of another size the last axis must be contiguous, and
        its byte length a multiple of the new size; it is rescaled (``float32 (4, 2)`` as
        ``uint8`` is ``(4, 8)``).  ``type=`` (ndarray subclasses) is not supported."""
        from ember import dtypes
        from ember.array.ndarray import ndarray

        if type is not None:
            raise TypeError("ember.ndarray.view: type= is not supported (no subclasses)")
        x: Any = self
        new = x.dtype if dtype is None else dtypes.dtype(dtype)
        old_size, new_size = x.dtype.itemsize, new.itemsize
        shape, strides = tuple(x.shape), tuple(x.strides)
        if new_size != old_size:
            if not shape:
                raise ValueError(
                    f"ember.ndarray.view: a 0-d {x.dtype.name} array cannot be viewed as "
                    f"{new.name} (another element size); reshape it to (1,) first"
                )
            if strides[-1] != old_size and shape[-1] != 1:
                raise ValueError(
                    "ember.ndarray.view: to view with another element size the last axis "
                    "must be contiguous; copy first (ember.ascontiguousarray(x))"
                )
            nbytes = shape[-1] * old_size
            if nbytes % new_size:
                raise ValueError(
                    f"ember.ndarray.view: the last axis holds {nbytes} bytes, not a multiple "
                    f"of {new.name}'s {new_size}"
                )
            if x.offset % new_size:
                raise ValueError(f"ember.ndarray.view: the data is not aligned for {new.name}")
            shape = (*shape[:-1], nbytes // new_size)
            strides = (*strides[:-1], new_size)
        return ndarray(shape, new, x.buffer, x.backend, strides, x.offset)

    @property
    def flags(self) -> Flags:
        """NumPy's memory-layout flags, read as attributes (``x.flags.c_contiguous``) or
        items (``x.flags["C_CONTIGUOUS"]``): C_CONTIGUOUS, F_CONTIGUOUS, WRITEABLE (always:
        Ember has no read-only arrays), ALIGNED, OWNDATA (False: Ember does not track which
        array made a buffer)."""
        x: Any = self
        isz = x.dtype.itemsize
        f_expected, step = [], isz
        for n in x.shape:
            f_expected.append(step)
            step *= n
        f_contig = x.size <= 1 or all(
            n == 1 or s == e for n, s, e in zip(x.shape, x.strides, f_expected, strict=True)
        )
        aligned = x.offset % isz == 0 and all(s % isz == 0 for s in x.strides)
        return Flags(x.is_c_contiguous, f_contig, True, aligned, False)

    def tobytes(self, order: str = "C") -> bytes:
        """The elements' bytes (a copy to the host, as ``to_numpy().tobytes()``)."""
        host: Any = self.to_numpy()  # type: ignore[attr-defined]
        return host.tobytes(order=order)


class _OnFirstUse:
    """Stands for a module until one of its names is first read: then imports it and puts
    it in this module's globals in its own place (later lookups find the module itself)."""

    def __init__(self, module: str):
        self._module = module  # its last part is the global it stands in for

    def __getattr__(self, attr: str) -> Any:
        import importlib

        module = importlib.import_module(self._module)
        globals()[self._module.rpartition(".")[2]] = module
        return getattr(module, attr)


# The reductions (and their kernels' planner) on the first x.sum()...: an elementwise
# program never needs them, and importing them took ~20 ms of a first array op (issue 19).
reductions = _OnFirstUse("ember.array.reductions")
