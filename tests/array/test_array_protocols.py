"""NumPy's protocols (NEP 13, NEP 18, ``__array__``) on ember arrays, compared with NumPy."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import ember
from ember.array import interop, protocols
from ember.array.ndarray import ndarray


@pytest.fixture
def xy(backend):
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    b = np.linspace(1, 2, 6, dtype=np.float32).reshape(2, 3)
    return a, b, ember.asarray(a), ember.asarray(b)


def _close(got, want):
    assert isinstance(got, ndarray), type(got)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6)


def test_ufuncs_run_on_the_device(xy):
    a, b, x, y = xy
    _close(np.sin(x), np.sin(a))
    _close(np.add(x, y), a + b)
    _close(np.float32(2) * x, np.float32(2) * a)  # a NumPy scalar on the left
    _close(np.add(x, 1.5, dtype=np.float64), np.add(a, 1.5, dtype=np.float64))


def test_ufunc_out_and_where(xy):
    a, b, x, y = xy
    out = ember.zeros((2, 3), ember.float32)
    assert np.add(x, y, out=out) is out
    _close(out, a + b)
    mask = a > 0
    got = np.add(x, y, out=out, where=ember.asarray(mask))
    want = a + b
    np.add(a, b, out=want, where=mask)  # the masked-out elements keep out's value
    _close(got, want)


def test_ufunc_methods_outer_and_divmod(xy):
    a, b, x, y = xy
    _close(np.add.outer(x[0], y[1]), np.add.outer(a[0], b[1]))
    q, r = np.divmod(x, 2.0)
    _close(q, np.floor_divide(a, 2.0))
    _close(r, np.remainder(a, 2.0))


def test_functions_run_on_the_device(xy):
    a, b, x, y = xy
    _close(np.concatenate([x, y]), np.concatenate([a, b]))
    _close(np.where(x > 0, x, y), np.where(a > 0, a, b))
    _close(np.transpose(x), a.T)
    _close(np.copy(x), a)  # no ember.copy: the array's method
    assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x, 1) == 3


def test_numpy_positional_arguments(backend):
    # NumPy code passes these arguments positionally (np.triu(a, 1), np.diff(a, 2)); through
    # __array_function__ they reach Ember's functions, which take NumPy's order too
    a = np.arange(20, dtype=np.float64).reshape(4, 5) ** 1.5
    x = ember.asarray(a)
    idx = np.array([3, 0, 3])
    s = np.sort(a.ravel())
    cases = {
        "tril": (lambda m: np.tril(m, -1), lambda: np.tril(a, -1)),
        "triu": (lambda m: np.triu(m, 1), lambda: np.triu(a, 1)),
        "diff": (lambda m: np.diff(m, 2, 0), lambda: np.diff(a, 2, 0)),
        "repeat": (lambda m: np.repeat(m, 2, 1), lambda: np.repeat(a, 2, 1)),
        "roll": (lambda m: np.roll(m, 2, 1), lambda: np.roll(a, 2, 1)),
        "take": (lambda m: np.take(m, ember.asarray(idx), 1), lambda: np.take(a, idx, 1)),
        "tensordot": (lambda m: np.tensordot(m, m.T, 1), lambda: np.tensordot(a, a.T, 1)),
    }
    for name, (on_ember, on_numpy) in cases.items():
        got = on_ember(x)
        assert isinstance(got, ndarray), name
        np.testing.assert_allclose(got.to_numpy(), on_numpy(), err_msg=name)
    got = np.searchsorted(ember.asarray(s), x, "right")
    np.testing.assert_array_equal(got.to_numpy(), np.searchsorted(s, a, "right"))
    np.testing.assert_array_equal(ember.eye(3, 4, 1, "int32").to_numpy(), np.eye(3, 4, 1, "int32"))


def test_reductions_run_on_the_device(xy):
    a, _, x, _ = xy
    if protocols.ember_function("numpy", "sum") is None:
        pytest.skip("Ember has no reductions yet")
    _close(np.sum(x, axis=0), np.sum(a, axis=0))
    _close(np.add.reduce(x), np.add.reduce(a))  # a ufunc method: ember.sum along axis 0
    _close(np.maximum.reduce(x, axis=1), np.max(a, axis=1))


def test_routing_looks_names_up_at_call_time(xy, monkeypatch):
    _, _, x, _ = xy
    seen = []

    def fake_reduction(x, axis=None, **kwargs):
        seen.append((x, axis, kwargs))
        return "device result"

    monkeypatch.setattr(ember, "sum", fake_reduction, raising=False)
    assert np.sum(x, axis=0) == "device result"
    assert np.add.reduce(x, keepdims=True) == "device result"  # ufunc method -> ember.sum
    assert [(s[1], s[2]) for s in seen] == [(0, {}), (0, {"keepdims": True})]
    linalg = types.ModuleType("ember.linalg")
    linalg.norm = lambda x, ord=None: ("norm", ord)
    monkeypatch.setattr(ember, "linalg", linalg, raising=False)
    assert np.linalg.norm(x, ord=2) == ("norm", 2)


def _a_function_ember_lacks():
    for name in ("i0", "sinc", "unwrap", "trim_zeros"):
        if protocols.ember_function("numpy", name) is None:
            return name
    pytest.skip("Ember has all the candidate functions")


def test_missing_function_names_it_and_the_way_out(xy):
    _, _, x, _ = xy
    name = _a_function_ember_lacks()
    with pytest.raises(TypeError, match=rf"numpy\.{name} .*ember\.asnumpy\(x\).*to_numpy"):
        getattr(np, name)(x)


def test_missing_ufunc_method_and_unknown_ufunc(xy):
    _, _, x, _ = xy
    with pytest.raises(TypeError, match=r"nextafter\.at is not available .*ember\.asnumpy"):
        np.nextafter.at(x, [0], 2.0)
    with pytest.raises(TypeError, match=r"numpy\.isnat .*ember\.asnumpy"):
        np.isnat(x)


def test_arguments_ember_does_not_take_are_named(xy):
    _, _, x, _ = xy
    with pytest.raises(TypeError, match=r"numpy\.clip runs ember\.clip .*'casting'"):
        np.clip(x, 0, 1, casting="unsafe")
    with pytest.raises(TypeError, match="casting='unsafe' is not supported"):
        np.add(x, x, casting="unsafe")


def test_implicit_host_copy_refused_by_default(xy):
    _, _, x, _ = xy
    for convert in (np.asarray, np.array, np.ascontiguousarray):
        with pytest.raises(TypeError, match=r"x\.to_numpy\(\).*EMBER_IMPLICIT_HOST_COPY"):
            convert(x)


def test_the_switch_lets_numpy_copy(xy):
    a, _, x, _ = xy
    name = _a_function_ember_lacks()
    with ember.config.override(implicit_host_copy="allow"):
        np.testing.assert_array_equal(np.asarray(x), a)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # 'allow' is silent
            got = getattr(np, name)(x)
        assert isinstance(got, np.ndarray | np.generic)
        # writing into a host copy would lose the result: refused even so
        with pytest.raises(TypeError, match="not available"):
            np.nextafter.at(x, [0], 2.0)  # (multiply.at is Ember's: atomic updates)
        with pytest.raises(TypeError, match="not available"):
            np.isnat(x, out=x)
        with pytest.raises(TypeError, match="not available"):
            np.copyto(x, a)
    protocols._warned.discard("numpy.asarray")
    with ember.config.override(implicit_host_copy="warn"):
        with pytest.warns(ember.EmberPerformanceWarning, match="numpy.asarray copied"):
            np.asarray(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per function
            np.asarray(x)


# ------------------------------------------------------------------------- the walk

# Public NumPy callables not called in the walk: they write files, print, or change
# NumPy's global state whatever their argument.
_SIDE_EFFECTS = {
    "save", "savez", "savez_compressed", "savetxt", "load", "loadtxt", "genfromtxt",
    "fromfile", "fromregex", "set_printoptions", "printoptions", "seterr", "seterrcall",
    "setbufsize", "info", "show_config", "show_runtime", "test", "add_newdoc",
    "add_docstring", "get_include", "set_string_function",
}  # fmt: skip


def _public(module) -> list[tuple[str, object]]:
    out = []
    for name in sorted(dir(module)):
        f = getattr(module, name, None)
        if name.startswith("_") or name in _SIDE_EFFECTS or isinstance(f, type):
            continue
        if callable(f) and not isinstance(f, types.ModuleType):
            out.append((f"{module.__name__}.{name}", f))
    return out


def _holds_numpy(value, depth=0) -> bool:
    if isinstance(value, np.ndarray | np.generic):
        return True
    if isinstance(value, list | tuple | dict) and depth < 3:
        items = value.values() if isinstance(value, dict) else value
        return any(_holds_numpy(v, depth + 1) for v in items)
    return False


def test_no_numpy_function_silently_returns_numpy_data(backend, monkeypatch):
    """Every public NumPy function and ufunc method, called with ember arrays in a few
    ways, either runs Ember's function or raises: none hands back NumPy data.  Ember's
    functions are stubbed (the routing is what is under test, and no kernel compiles)."""
    routed = object()
    monkeypatch.setattr(protocols, "call", lambda *a: routed)
    # iterating over a 1-d array reads its elements (NumPy's dispatchers iterate over
    # sequences): the scalar-indexing policy's business, an error here
    monkeypatch.setattr(ember.config.settings, "values", {**ember.config.settings.values})
    ember.config.settings.values["allow_scalar"] = "error"
    x = ember.asarray(np.arange(4, dtype=np.float32))
    calls = [(x,), (x, x), (x, 1), ([x, x],), (x, x, x)]
    leaks, routes = [], 0
    functions = _public(np) + _public(np.linalg) + _public(np.fft)
    if backend.dlpack_device_type == interop.CPU:  # host memory, exported by address: NumPy
        functions = [(n, f) for n, f in functions if f is not np.from_dlpack]  # asked for it
    for label, f in functions:
        methods = [f]
        if isinstance(f, np.ufunc):
            methods += [getattr(f, m) for m in ("reduce", "accumulate", "outer", "at")]
        for g in methods:
            for args in calls:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        result = g(*args)
                except Exception:
                    continue  # refusing is fine
                routes += result is routed
                if _holds_numpy(result):
                    leaks.append(f"{label}{'' if g is f else '.' + g.__name__}: {type(result)}")
    assert not leaks, "NumPy results for ember inputs:\n" + "\n".join(sorted(set(leaks)))
    assert len(functions) > 400 and routes > 100  # the walk really reached the functions


# NumPy's positional parameter and the Ember parameter at the same place, where their names
# differ but they mean the same (the Array API's spellings)
SAME_MEANING = {
    ("clip", "a_min", "min"), ("clip", "a_max", "max"), ("eye", "M", "n_cols"),
    ("outer", "b", "x2"), ("searchsorted", "v", "x2"), ("tensordot", "b", "x2"),
    ("tile", "reps", "repetitions"), ("where", "x", "x1"), ("where", "y", "x2"),
    ("solve", "b", "x2"),
    ("dot", "other", "b"), ("swapaxes", "axis1", "a"), ("swapaxes", "axis2", "b"),  # methods
}  # fmt: skip


def _misaligned(name: str, label: str, f, target) -> list[str] | None:
    """Where NumPy's positional parameters of ``f`` land on others of ``target`` (None:
    either has no signature to compare)."""
    import inspect

    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    try:
        theirs = list(inspect.signature(f).parameters.values())
        ours = [p for p in inspect.signature(target).parameters.values() if p.kind in positional]
    except (TypeError, ValueError):
        return None
    out = []
    for i, p in enumerate(theirs[1 : len(ours)], start=1):
        if p.kind not in positional:
            break
        if p.name != ours[i].name and (name, p.name, ours[i].name) not in SAME_MEANING:
            out.append(f"{label}: NumPy's #{i} {p.name!r} is Ember's {ours[i].name!r}")
    return out


def test_numpy_positional_parameters_line_up_with_embers():
    """NEP 18 hands Ember's function NumPy's call as it was written, so an argument NumPy
    takes positionally lands on Ember's parameter at the same place.  Where the names
    differ they must mean the same (SAME_MEANING): numpy.reshape(x, shape, 'F') once
    reached Ember's ``copy`` and silently gave the C-order result.  Where Ember has no
    positional parameter there, the call raises (a TypeError naming it), never misroutes."""
    mismatched, checked = [], 0
    for label, f in _public(np) + _public(np.linalg) + _public(np.fft):
        module, _, name = label.rpartition(".")
        target = protocols.ember_function(module, name)
        if target is None or isinstance(f, np.ufunc):
            continue  # ufuncs reach Ember through __array_ufunc__, operands then out
        found = _misaligned(name, label, f, target)
        checked += found is not None
        mismatched += found or []
    for name in dir(np.ndarray):  # the methods: x.reshape(shape, 'F') the same way
        ours = getattr(ndarray, name, None)
        if not name.startswith("_") and callable(ours):
            found = _misaligned(name, f"ndarray.{name}", getattr(np.ndarray, name), ours)
            checked += found is not None
            mismatched += found or []
    assert not mismatched, "\n".join(mismatched)
    assert checked > 150  # the walk reached the routed functions


def test_ufuncs_take_numpy_positional_out(backend):
    x = ember.asarray(np.array([1.0, np.inf, -np.inf]))
    flags = ember.zeros(3, ember.bool_)
    assert np.isposinf(x, flags) is flags  # numpy.isposinf(x, out) -> ember.isposinf
    np.testing.assert_array_equal(flags.to_numpy(), [False, True, False])
    total = ember.zeros(3)
    assert ember.add(x, x, total) is total
    with pytest.raises(TypeError, match="takes 2 operand"):
        ember.add(x, x, total, out=total)
    with pytest.raises(TypeError, match="takes 2 operand"):
        ember.add(x, x, 3)  # not an array: not taken for the output
    with pytest.raises(TypeError, match="out= must be an ember array, got int"):
        ember.add(x, x, out=3)


def test_numpy_out_arguments_reach_embers(backend):
    """``out=`` (positional where NumPy's is) of the functions that take it in NumPy: the
    result lands in the given ember array, which is returned."""
    a = np.arange(12.0).reshape(3, 4) + 1
    x = ember.asarray(a)
    cases = [
        ("dot", lambda m, v, o: m.dot(v, v.T, o), (3, 3)),
        ("concatenate", lambda m, v, o: m.concatenate([v, v], 0, o), (6, 4)),
        ("stack", lambda m, v, o: m.stack([v, v], 1, o), (3, 2, 4)),
        ("einsum", lambda m, v, o: m.einsum("ij->j", v, out=o), (4,)),
        ("compress", lambda m, v, o: m.compress([True, False, True], v, 0, o), (2, 4)),
        ("outer", lambda m, v, o: m.outer(v[0], v[1], o), (4, 4)),
        ("matmul", lambda m, v, o: m.matmul(v, v.T, out=o), (3, 3)),
    ]
    for name, f, shape in cases:
        want = np.zeros(shape)
        f(np, a, want)
        out = ember.zeros(shape)
        assert f(np, x, out) is out, name  # NumPy's function, dispatched to Ember's
        np.testing.assert_allclose(out.to_numpy(), want, err_msg=name)
    with pytest.raises(ValueError, match="out= has shape"):
        np.concatenate([x, x], out=ember.zeros((5, 4)))


def test_ufunc_dtype_follows_numpys_loop_rule(backend):
    # dtype= names the loop: inputs cast to it under same_kind (float inputs with
    # dtype=int64 were truncated, silently), and a function whose result is not of that
    # dtype has no such loop (true_divide of ints to int64 returned float64)
    i, f = np.array([1, 2], np.int32), np.array([1.5, 2.5])
    ei, ef = ember.asarray(i), ember.asarray(f)
    for call in (
        lambda a, b: np.add(a, a, dtype=np.int64),
        lambda a, b: np.multiply(b, 2.5, dtype=np.int64),
        lambda a, b: np.true_divide(b, b, dtype=np.int64),
        lambda a, b: np.less(b, b, dtype=np.float64),
        lambda a, b: np.sqrt(b, dtype=np.int32),
        lambda a, b: np.add(b, b, dtype=np.uint32),
    ):
        with pytest.raises(TypeError):
            call(f, i)
        with pytest.raises(TypeError, match="same_kind|no loop"):
            call(ef, ei)
    for call in (
        lambda a, b: np.add(b, b, dtype=np.int8),
        lambda a, b: np.sqrt(b, dtype=np.float32),
        lambda a, b: np.less(a, b, dtype=bool),
        lambda a, b: np.add(a, 1, dtype=np.float32),
        lambda a, b: np.negative(b, dtype=np.float64),
    ):
        want, got = call(f, i), call(ef, ei)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6)


def test_where_masked_integer_powers_do_not_raise(backend):
    # NumPy never computes the masked-out elements: a negative exponent there must not
    # raise (it did, at the next synchronization)
    i, j = np.array([2, 3, 4], np.int32), np.array([-1, 2, 2], np.int32)
    mask = np.array([False, True, True])
    want = np.power(i, j, out=np.zeros(3, np.int32), where=mask)
    got = np.power(ember.asarray(i), ember.asarray(j), out=ember.zeros(3, ember.int32),
                   where=ember.asarray(mask))  # fmt: skip
    ember.synchronize()
    np.testing.assert_array_equal(got.to_numpy(), want)
