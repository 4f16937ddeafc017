"""NumPy's ``ndarray`` methods that are spellings of namespace functions (``x.clip(0, 1)``
is ``ember.clip(x, 0, 1)``), kept out of :mod:`ember.array.ndarray`, whose class inherits
them.  Each method imports its function on first use: the modules that define them import
the array class, not the other way round."""

from __future__ import annotations

from typing import Any


def _ember():
    import ember

    return ember


def _into(out, result, what: str):
    """``result``, or ``out`` holding it (for functions without ``out=``)."""
    from ember.array.manipulation import into

    return into(out, result, what)


class NumpyMethods:
    """Methods of :class:`~ember.ndarray` that delegate to ``ember.<name>(self, ...)``."""

    __slots__ = ()

    def clip(self, min=None, max=None, out=None):  # noqa: A002 - NumPy's names
        """Values limited to ``[min, max]`` (:func:`ember.clip`)."""
        return _ember().clip(self, min, max, out=out)

    def round(self, decimals: int = 0, out=None):
        """Round half to even to ``decimals`` digits (:func:`ember.round`)."""
        return _ember().round(self, decimals, out=out)

    def take(self, indices, axis=None, out=None, mode="raise"):
        """Elements at ``indices`` along ``axis`` (flattened if None; :func:`ember.take`)."""
        if out is not None or mode != "raise":
            raise TypeError(
                "ember.ndarray.take: out= and mode= other than 'raise' are not supported; "
                "index with x[ember.clip(i, 0, n - 1)] for 'clip'"
            )
        return _ember().take(self, indices, axis=axis)

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

    def tobytes(self, order: str = "C") -> bytes:
        """The elements' bytes (a copy to the host, as ``to_numpy().tobytes()``)."""
        host: Any = self.to_numpy()  # type: ignore[attr-defined]
        return host.tobytes(order=order)
