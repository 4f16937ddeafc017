"""NumPy's functions on ember arrays with their first arguments given by NumPy's keyword
names (``numpy.sum(a=x)``, ``numpy.clip(x, a_min=0, a_max=1)``): through
``__array_function__`` they reach Ember's functions, whose parameters have the Array API's
names, and give the result of the positional call."""

from __future__ import annotations

import inspect
import types
import warnings

import numpy as np
import pytest

import ember
from ember.array import protocols
from ember.array.ndarray import ndarray

# reading or writing files, global state, printing: not called by the walk
_SKIP = {
    "save", "savez", "savez_compressed", "savetxt", "load", "loadtxt", "genfromtxt",
    "fromfile", "fromregex", "set_printoptions", "printoptions", "seterr", "seterrcall",
    "setbufsize", "info", "show_config", "show_runtime", "test", "add_newdoc",
    "add_docstring", "get_include", "set_string_function", "tofile",
}  # fmt: skip
_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _routed() -> list[tuple[str, object, list[str]]]:
    """NumPy's functions that Ember runs, with the names of their leading parameters that
    NumPy takes by keyword too."""
    out = []
    for module in (np, np.linalg, np.fft):
        for name in sorted(dir(module)):
            f = getattr(module, name, None)
            if name.startswith("_") or name in _SKIP or isinstance(f, type | types.ModuleType):
                continue
            if not callable(f) or isinstance(f, np.ufunc):  # ufuncs take operands by place only
                continue
            if protocols.ember_function(module.__name__, name) is None:
                if name not in protocols.SPECIAL and not hasattr(ndarray, name):
                    continue
            try:
                params = list(inspect.signature(f).parameters.values())
            except (TypeError, ValueError):
                continue  # no readable signature: nothing to name
            names = []
            for p in params:
                if p.kind is not _POSITIONAL_OR_KEYWORD:
                    break
                names.append(p.name)
            if names:
                out.append((f"{module.__name__}.{name}", f, names))
    return out


class _Recorder:
    """Stands in for ``protocols.call``: records which of Ember's parameters each argument
    reached (by identity), runs nothing (so the walk compiles no kernels)."""

    def __init__(self):
        self.seen = []

    def __call__(self, target, label, args, kwargs):
        try:
            bound = inspect.signature(target).bind(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            self.seen.append((target, f"refused: {exc}"))
        else:
            self.seen.append((target, {k: _ids(v) for k, v in bound.arguments.items()}))
        return _RAN


_RAN = object()


def _ids(value):
    """``value`` by identity (``*args`` and ``**kwargs`` item by item)."""
    if type(value) is tuple:
        return tuple(map(_ids, value))
    if type(value) is dict:
        return {k: _ids(v) for k, v in value.items()}
    return id(value)


def _reached(recorder, f, args: tuple, kwargs: dict):
    """What Ember's function got from NumPy's ``f(*args, **kwargs)``, or what it returned
    where no Ember function is called (``numpy.shape``); raises what NumPy raises."""
    recorder.seen.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = f(*args, **kwargs)
    if result is _RAN:
        return list(recorder.seen)
    return _host(result)


def _host(value):
    if isinstance(value, ndarray):
        return value.to_numpy()
    if isinstance(value, list | tuple):
        return type(value)(_host(v) for v in value)
    return value


def test_every_routed_function_takes_numpy_keywords(backend, monkeypatch):
    """Each routed NumPy function with a readable signature, called with its leading
    arguments named as NumPy names them (all of them, ``numpy.dot(a=x, b=y)``, and all
    but the first, ``numpy.dot(x, b=y)``), hands Ember's function the same arguments in
    the same parameters as the positional call ``numpy.dot(x, y)`` does."""
    recorder = _Recorder()
    monkeypatch.setattr(protocols, "call", recorder)
    values = [ember.asarray(np.linspace(1, 2, 4) + k) for k in range(4)]
    failures, checked = [], set()
    for label, f, names in _routed():
        for n in range(1, min(len(names), len(values)) + 1):
            args = tuple(values[:n])
            try:
                want = _reached(recorder, f, args, {})
            except Exception:
                continue  # NumPy refuses these arguments before dispatching
            if isinstance(want, list) and any(isinstance(r, str) for _, r in want):
                continue  # Ember's function does not take them positionally either
            for first in range(min(n, 2)):  # how many stay positional
                kwargs = dict(zip(names[first:n], args[first:], strict=False))
                try:
                    got = _reached(recorder, f, args[:first], kwargs)
                except Exception as exc:
                    if not recorder.seen and _numpy_refuses(f, args[:first], kwargs):
                        continue  # NumPy takes it only by place (numpy.unique_values)
                    got = f"{type(exc).__name__}: {exc}"
                checked.add(label)
                if not _same(got, want):
                    shown = ", ".join([*(["x"] * first), *(f"{k}=" for k in kwargs)])
                    failures.append(f"{label}({shown}): {got!r:.200} instead of {want!r:.200}")
    assert not failures, f"{len(failures)} calls of {len(checked)} functions:\n" + "\n".join(
        failures
    )
    assert len(checked) > 200  # the walk reached the routed functions


def _numpy_refuses(f, args: tuple, kwargs: dict) -> bool:
    """Whether NumPy refuses these keywords for NumPy arrays too."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(*_host(args), **{k: _host(v) for k, v in kwargs.items()})
    except TypeError as exc:
        return "argument" in str(exc)
    except Exception:
        return False
    return False


def _same(got, want) -> bool:
    try:
        np.testing.assert_equal(got, want)
    except AssertionError:
        return False
    return True


def _close(got, want):
    assert isinstance(got, ndarray), type(got)
    assert got.dtype == ember.dtype(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12)


@pytest.fixture
def arrays(backend):
    a = np.linspace(-2, 2, 12).reshape(3, 4)
    b = np.linspace(1, 3, 8).reshape(4, 2)
    return a, b, ember.asarray(a), ember.asarray(b)


def test_numpy_keywords_of_first_arguments(arrays):
    a, b, x, y = arrays
    i = np.array([2, 0, 1])
    _close(np.sum(a=x), np.sum(a=a))
    _close(np.mean(a=x, axis=0), np.mean(a=a, axis=0))
    _close(np.clip(x, a_min=0, a_max=1), np.clip(a, a_min=0, a_max=1))
    _close(np.clip(x, None, a_max=1), np.clip(a, None, a_max=1))
    _close(np.clip(a=x, min=-1, max=1), np.clip(a=a, min=-1, max=1))
    _close(np.take(x, indices=ember.asarray(i)), np.take(a, indices=i))
    _close(np.take(a=x, indices=ember.asarray(i), axis=1), np.take(a=a, indices=i, axis=1))
    _close(np.dot(a=x, b=y), np.dot(a=a, b=b))
    _close(np.sinc(x=x), np.sinc(x=a))
    _close(np.angle(z=x), np.angle(z=a))
    _close(np.round(a=x, decimals=1), np.round(a=a, decimals=1))
    assert np.can_cast(from_=x, to=np.float32) == np.can_cast(from_=a.dtype, to=np.float32)
    _close(np.swapaxes(a=x, axis1=0, axis2=1), np.swapaxes(a=a, axis1=0, axis2=1))  # a method
    k = np.zeros((3, 1), np.int64)
    _close(np.take_along_axis(arr=x, indices=ember.asarray(k), axis=1),
           np.take_along_axis(arr=a, indices=k, axis=1))  # fmt: skip


def test_keywords_ember_lacks_still_name_the_parameter(arrays):
    _, _, x, _ = arrays
    with pytest.raises(TypeError, match=r"numpy\.clip runs ember\.clip.*'casting'"):
        np.clip(a=x, a_min=0, a_max=1, casting="unsafe")  # a ufunc keyword clip lacks


def test_missing_parameters(arrays):
    a, _, x, _ = arrays
    out = ember.empty((3, 4))
    assert np.clip(x, 0, 1, out) is out  # out positional, as NumPy's
    _close(out, np.clip(a, 0, 1))
    assert np.round(x, 1, out) is out
    _close(out, np.round(a, 1))
    assert np.around(x, 1, out) is out
    _close(out, np.round(a, 1))
    assert np.cumulative_sum(x, axis=1, out=out) is out
    _close(out, np.cumulative_sum(a, axis=1))
    assert np.cumulative_prod(x, axis=0, out=out) is out
    _close(out, np.cumulative_prod(a, axis=0))
    wide = ember.empty((3, 5))
    assert ember.cumulative_sum(x, axis=1, include_initial=True, out=wide) is wide
    _close(wide, np.cumulative_sum(a, axis=1, include_initial=True))
    with pytest.raises(ValueError, match="out"):
        ember.cumulative_sum(x, axis=1, out=ember.empty((3, 3)))
    i = ember.asarray(np.array([1, 0]))
    _close(ember.take(x, indices=i, axis=0), np.take(a, [1, 0], axis=0))
    k = ember.asarray(np.zeros((3, 1), np.int64))
    _close(ember.take_along_axis(x, indices=k, axis=1), a[:, :1])
