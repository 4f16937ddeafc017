"""NumPy's and Python's protocols on ember arrays: NumPy functions run on the device, or say
why not; pickling goes through the host.

NumPy hands a call that involves an ember array to Ember (NEP 13 ``__array_ufunc__`` for
ufuncs, NEP 18 ``__array_function__`` for the rest), as it does for CuPy::

    numpy.sin(x)                      # ember.sin(x): runs on the device, an ember array
    numpy.add(x, y, out=z)            # ember.add(x, y, out=z)
    numpy.concatenate([x, y])         # ember.concatenate([x, y])
    numpy.add.outer(x, y)             # broadcast on the device

Routing is by name, looked up when the call is made: ``numpy.X`` runs ``ember.X`` (and
``numpy.linalg.X`` runs ``ember.linalg.X``) if Ember has it at that moment, so a function
added to Ember later is routed with nothing to register; :data:`RENAMES` holds the NumPy
names Ember spells otherwise, and an ember array's method of that name is the last resort
(``numpy.copy(x)`` is ``x.copy()``).  Ufunc methods route to the ember function's method
(``ember.add.reduce``) or to the named reduction (``numpy.add.reduce`` is ``ember.sum`` along
axis 0).

NumPy's keyword names of the first arguments work as well (``numpy.sum(a=x)``,
``numpy.clip(x, a_min=0, a_max=1)``): they go to Ember's parameter at the same place
(:func:`numpy_keywords`), whatever the Array API calls it there.

A function Ember lacks raises a ``TypeError`` that names it and the explicit way out
(``ember.asnumpy(x)``).  NumPy reaching for the data itself (``numpy.asarray(x)``, which calls
``__array__``) is refused the same way: Ember never copies to the host behind the user's
back.  ``EMBER_IMPLICIT_HOST_COPY=allow`` (or ``warn``) is the one switch for users who want
those copies: then both copy to the host and the result is NumPy's.

``pickle`` (and so ``multiprocessing``, Dask) stores an array's elements, copied to the host
as a NumPy array, and unpickling copies them to the *current* device of the process that
loads them (:func:`reduce`); a view is stored as its own elements, so views pickled together
no longer share memory after loading.  ``copy.copy`` and ``copy.deepcopy`` copy on the
device.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
from typing import Any

from ember.array.ndarray import ndarray
from ember.config import settings
from ember.errors import EmberPerformanceWarning

# NumPy name -> Ember name, tried after the NumPy name itself
RENAMES = {
    "amax": "max", "amin": "min", "around": "round", "concat": "concatenate",
    "row_stack": "vstack", "cumulative_sum": "cumsum", "cumulative_prod": "cumprod",
}  # fmt: skip
# ufunc.reduce -> the tuned Ember reductions that compute it (first found; the others, and
# accumulate and reduceat, are ember.array.ufunc_methods')
REDUCE = {
    "add": ("sum",), "multiply": ("prod",), "maximum": ("max",), "minimum": ("min",),
    "logical_and": ("all",), "logical_or": ("any",),
}  # fmt: skip
# ufunc keywords whose NumPy defaults Ember's functions always follow
_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True}
_NO_VALUE = object()
_warned: set[str] = set()


# ------------------------------------------------------------------------- __array__


def to_host(x: ndarray, dtype=None, copy=None):
    """``numpy.asarray(x)``: refused unless ``EMBER_IMPLICIT_HOST_COPY`` allows it."""
    if copy is False:
        raise ValueError(
            "an ember.ndarray lives in device memory: converting it to NumPy always copies"
        )
    _host_copy_allowed("numpy.asarray", _ASARRAY_HINT)
    out = x.to_numpy()
    return out if dtype is None else out.astype(dtype, copy=False)


_ASARRAY_HINT = (
    "NumPy asked for the data of an ember.ndarray (numpy.asarray, numpy.array or a "
    "function that converts its input), which would copy it from the device to the host; "
    "Ember copies only when asked: use x.to_numpy() or ember.asnumpy(x)"
)


def _host_copy_allowed(what: str, refusal: str) -> None:
    """Raise the refusal (``error``), warn once per ``what`` (``warn``), or let it copy."""
    mode = settings.implicit_host_copy
    if mode == "error":
        raise TypeError(
            f"{refusal}.  (To let NumPy copy ember arrays to the host implicitly, set "
            "EMBER_IMPLICIT_HOST_COPY=allow, or =warn.)"
        )
    if mode == "warn" and what not in _warned:
        _warned.add(what)
        warnings.warn(
            f"{what} copied ember arrays to the host (EMBER_IMPLICIT_HOST_COPY=warn); "
            "the result is a NumPy value",
            EmberPerformanceWarning,
            stacklevel=4,
        )


# ------------------------------------------------------------------------- pickle


def reduce(x: ndarray) -> tuple:
    """``x.__reduce__()``: rebuilt by :func:`rebuild` from a host copy of the elements."""
    return rebuild, (x.to_numpy(),)


def rebuild(host) -> ndarray:
    """An unpickled ember array: ``host`` copied to the current device."""
    from ember.array.creation import asarray

    return asarray(host)


# ------------------------------------------------------------------------- lookup


def _namespace(module: str) -> Any:
    """Ember's counterpart of a NumPy module: ``ember`` for ``numpy``, ``ember.linalg`` for
    ``numpy.linalg`` (when Ember has it), else None."""
    # the public package, already imported (this module is part of it): the names other
    # parts of Ember register there are what routing finds
    ember = sys.modules["ember"]
    if module == "numpy":
        return ember
    head, _, sub = module.partition(".")
    if head != "numpy" or "." in sub:
        return None
    try:
        found = getattr(ember, sub, None)
    except Exception:  # a lazily imported submodule that fails to import: not there
        return None
    return found if isinstance(found, types.ModuleType) else None


def _is_array_function(f: Any) -> bool:
    """Ember's array functions, not classes, modules or kernel-only functions."""
    if f is None or isinstance(f, type | types.ModuleType) or not callable(f):
        return False
    return getattr(f, "__module__", None) != "ember.lang"


def ember_function(module: str, name: str) -> Any:
    """The Ember function that NumPy's ``module.name`` runs for ember arrays, or None."""
    namespace = _namespace(module)
    if namespace is None:
        return None
    for candidate in (name, RENAMES.get(name)):
        if candidate:
            f = getattr(namespace, candidate, None)
            if _is_array_function(f):
                return f
    return None


def _method(args: tuple, name: str) -> Any:
    """``ndarray.name`` (called with the array first), when the first argument is an ember
    array with that method."""
    if args and isinstance(args[0], ndarray):
        f = getattr(type(args[0]), name, None)
        if inspect.isfunction(f) and not name.startswith("_"):
            return f
    return None


# ------------------------------------------------------------------------- __array_function__


def array_function(func, types_: tuple, args: tuple, kwargs: dict) -> Any:
    """NEP 18: run NumPy's ``func`` with Ember's function of the same name."""
    np = sys.modules["numpy"]
    if not all(issubclass(t, ndarray | np.ndarray) for t in types_):
        return NotImplemented  # another library's array is involved: let it answer
    module, name = func.__module__, func.__name__
    label = f"{module}.{name}"
    special = SPECIAL.get(name) if module == "numpy" else None
    if special is not None:
        return special(label, args, kwargs)
    target = ember_function(module, name) or _method(args or _first(func, kwargs), name)
    if target is None:
        return _without_ember(label, func, args, kwargs)
    if kwargs:  # NumPy's names of Ember's parameters; calls without keywords pay nothing
        known = _KEYWORDS.get(func)
        if known is None or known[0] is not target:
            known = _KEYWORDS[func] = (target, _keyword_table(func, target))
        if known[1] and not known[1].keys().isdisjoint(kwargs):
            args, kwargs = numpy_keywords(known[1], target, label, args, kwargs)
    return call(target, label, args, kwargs)


def call(target, label: str, args: tuple, kwargs: dict) -> Any:
    """``target(*args, **kwargs)``; arguments it does not take get a message naming both."""
    try:
        return target(*args, **kwargs)
    except TypeError as exc:
        problem = _binding_problem(target, args, kwargs)
        if problem is None:
            raise
        raise TypeError(
            f"{label} runs {_name(target)} on ember arrays, which {problem}"
            f" (see help({_name(target)}))"
        ) from exc


# ------------------------------------------------------------------------- NumPy's keywords
#
# NumPy code names the first arguments as NumPy does (numpy.sum(a=x), numpy.clip(x, a_min=0),
# numpy.dot(a=x, b=y)); Ember's functions use the Array API's names (x, x1, ...), often
# positional-only.  The positional parameters line up (a test checks it), so a keyword of
# NumPy's positional parameter number i is Ember's parameter number i: passed there
# positionally, or under Ember's name.  The table is built once per (NumPy function, Ember
# function) from both signatures.

# NumPy's function -> (Ember's function, its table), rebuilt when the Ember function changes
_KEYWORDS: dict[Any, tuple[Any, dict[str, tuple[int, str | None]]]] = {}
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def numpy_keywords(table: dict, target, label: str, args: tuple, kwargs: dict) -> tuple:
    """``args, kwargs`` of a NumPy call as ``target`` takes them, by ``table``
    (:func:`_keyword_table`): a keyword of NumPy's positional parameter that ``target`` has
    at that place under another name, or positional-only, moves there.  Keywords Ember
    lacks stay, for ``call``'s error."""
    moved, rest = {}, {}
    for k, v in kwargs.items():
        if k in table:
            moved[table[k][0]] = (k, v)
        else:
            rest[k] = v
    args = list(args)
    for i in sorted(moved):
        k, v = moved[i]
        ours = table[k][1]
        if i == len(args):
            args.append(v)
        elif ours is not None and ours not in rest:
            rest[ours] = v
        else:
            raise TypeError(
                f"{label}: {k}= is positional-only in {_name(target)}, which takes it only "
                "after the arguments before it: pass them positionally"
            )
    return tuple(args), rest


def _keyword_table(func, target) -> dict[str, tuple[int, str | None]]:
    """NumPy's name -> (place, Ember's name or None if only positional) for the positional
    parameters of ``func`` whose keyword ``target`` does not take under NumPy's name at
    the same place; empty when either signature cannot be read."""
    try:
        theirs = list(inspect.signature(func).parameters.values())
        ours = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return {}
    table = {}
    for i, p in enumerate(theirs):
        if p.kind not in _POSITIONAL:
            break
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            continue  # NumPy takes it only by place, as Ember then gets it
        q = ours[i] if i < len(ours) else None
        if q is not None and q.kind is inspect.Parameter.VAR_POSITIONAL:
            ours = ours[:i] + [q] * (len(theirs) - i)  # f(*args): every later place too
        if q is None or q.kind not in (*_POSITIONAL, inspect.Parameter.VAR_POSITIONAL):
            continue  # no place there: by name (Ember's keyword) or refused by call
        if q.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            if q.name != p.name:
                table[p.name] = (i, q.name)
        else:
            table[p.name] = (i, None)
    return table


def _first(func, kwargs: dict) -> tuple:
    """The first argument of NumPy's call given by keyword (``numpy.swapaxes(a=x, ...)``),
    as a 1-tuple, so that an array method can be found for it; ``()`` if none."""
    if not kwargs:
        return ()
    try:
        first = next(iter(inspect.signature(func).parameters))
    except (TypeError, ValueError, StopIteration):
        return ()
    return (kwargs[first],) if first in kwargs else ()


def _binding_problem(target, args: tuple, kwargs: dict) -> str | None:
    try:
        inspect.signature(target).bind(*args, **kwargs)
    except TypeError as exc:
        return f"cannot take these arguments: {exc}"
    except ValueError:  # no signature to check against
        return None
    return None


def _name(target) -> str:
    if getattr(target, "__qualname__", "").startswith("ndarray."):
        return f"ember.{target.__qualname__}"
    return f"ember.{getattr(target, '__name__', repr(target))}"


def _without_ember(label: str, func, args: tuple, kwargs: dict) -> Any:
    """A NumPy function Ember has no version of: refuse, or copy to the host if allowed."""
    short = label.removeprefix("numpy.")
    refusal = (
        f"{label} is not available for ember arrays: Ember has no ember.{short} (yet). "
        f"Copy to the host explicitly to use NumPy's: {label}(ember.asnumpy(x), ...) or "
        f"{label}(x.to_numpy(), ...)"
    )
    if _writes_into_ember(short, args, kwargs):
        raise TypeError(refusal)  # a host copy would be written to, not the ember array
    _host_copy_allowed(label, refusal)
    return func(*_host(args), **_host(kwargs))


# NumPy functions that write into their first argument (in place)
_IN_PLACE = {"copyto", "place", "put", "putmask", "put_along_axis", "fill_diagonal"}


def _writes_into_ember(name: str, args: tuple, kwargs: dict) -> bool:
    if _holds_array(kwargs.get("out")):
        return True
    if name not in _IN_PLACE:
        return False
    first = args[:1] or [v for k, v in kwargs.items() if k in ("dst", "arr", "a")]
    return _holds_array(list(first))


def _holds_array(value: Any) -> bool:
    if isinstance(value, ndarray):
        return True
    if isinstance(value, list | tuple):
        return any(_holds_array(v) for v in value)
    return False


def _host(value: Any) -> Any:
    """``value`` with every ember array (also inside lists, tuples, dicts) copied to NumPy."""
    if isinstance(value, ndarray):
        return value.to_numpy()
    if isinstance(value, list | tuple):
        return type(value)(_host(v) for v in value)
    if isinstance(value, dict):
        return {k: _host(v) for k, v in value.items()}
    return value


# NumPy functions whose Ember answer is not the same-named function: metadata that needs
# no data, and one-argument ``where`` (NumPy's ``nonzero``).
def _shape(label, args, kwargs):
    return tuple(_bind(label, lambda a: None, args, kwargs)["a"].shape)


def _ndim(label, args, kwargs):
    return _bind(label, lambda a: None, args, kwargs)["a"].ndim


def _size(label, args, kwargs):
    bound = _bind(label, lambda a, axis=None: None, args, kwargs)
    a, axis = bound["a"], bound.get("axis")
    return a.size if axis is None else a.shape[axis]


def _where(label, args, kwargs):
    if len(args) + len(kwargs) == 1:
        target = ember_function("numpy", "nonzero") or _method(args, "nonzero")
        if target is None:
            return _without_ember("numpy.nonzero", sys.modules["numpy"].where, args, kwargs)
        return call(target, label, args, kwargs)
    return call(ember_function("numpy", "where"), label, args, kwargs)


def _bind(label: str, signature, args: tuple, kwargs: dict) -> dict:
    try:
        bound = inspect.signature(signature).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{label}: {exc}") from None
    return dict(bound.arguments)


def _array(label, args, kwargs):
    """``numpy.array(obj, like=x)`` (NEP 35, Dask's way to make small arrays of a chunk's
    type): ``ember.asarray`` with NumPy's ``array`` defaults (a copy)."""
    kwargs = {k: v for k, v in kwargs.items() if k != "like"}
    signature = lambda object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0: None  # noqa: E731
    bound = _bind(label, signature, args, kwargs)
    ember = sys.modules["ember"]
    out = ember.asarray(bound["object"], dtype=bound.get("dtype"), copy=bound.get("copy", True))
    ndmin = bound.get("ndmin", 0)
    return out.reshape((1,) * (ndmin - out.ndim) + out.shape) if out.ndim < ndmin else out


SPECIAL = {"shape": _shape, "ndim": _ndim, "size": _size, "where": _where, "array": _array}


# ------------------------------------------------------------------------- __array_ufunc__


def array_ufunc(ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """NEP 13: run NumPy's ``ufunc`` (or one of its methods) with Ember's function."""
    np = sys.modules["numpy"]
    if _foreign_override(np, (*inputs, *kwargs.get("out", ()))):
        return NotImplemented
    name = ufunc.__name__
    label = f"numpy.{name}" + ("" if method == "__call__" else f".{method}")
    target = ember_function("numpy", name)
    if name == "divmod" and target is None:
        target = _divmod
    if target is None:
        return _ufunc_without_ember(label, ufunc, method, inputs, kwargs)
    kwargs = _ufunc_keywords(label, dict(kwargs), ufunc.nout)
    # a NumPy scalar on the left of a comparison reaches here as a 0-d array
    # (numpy.float32(1.5) < x): a scalar operand, as on the right
    inputs = tuple(x[()] if type(x) is np.ndarray and x.ndim == 0 else x for x in inputs)
    if method == "__call__":
        return _ufunc_call(target, label, inputs, kwargs)
    if method in ("reduce", "accumulate", "reduceat"):
        return reduction_method(name, target, method, label, inputs, kwargs)
    own = getattr(target, method, None)  # ember.add.at, when Ember has it
    if own is not None:
        return call(own, label, inputs, kwargs)
    if method == "outer":
        return _ufunc_call(target, label, _outer(inputs), kwargs)
    return _ufunc_without_ember(label, ufunc, method, inputs, kwargs)


def reduction_method(name: str, target, method: str, label: str, inputs: tuple, kwargs: dict):
    """``ufunc.reduce`` of ufunc ``name`` (Ember's ``target``) by the tuned reduction of
    :data:`REDUCE` where it takes the arguments, else (and ``accumulate``, ``reduceat``)
    :mod:`ember.array.ufunc_methods`; NumPy's ufunc methods and Ember's own
    (``ember.add.reduce``) both come here.  The reductions are looked up by name when
    called."""
    from ember.array import ufunc_methods
    from ember.array.elementwise import Ufunc

    names = REDUCE.get(name, ()) if method == "reduce" else ()
    found = next((f for f in map(lambda n: ember_function("numpy", n), names) if f), None)
    if found is not None and (kwargs.get("dtype") is None or "dtype" in _parameters(found)):
        kwargs.setdefault("axis", 0)  # NumPy's default for ufunc methods
        kwargs = {k: v for k, v in kwargs.items() if k != "dtype" or v is not None}
        return call(found, label, inputs, kwargs)
    if not isinstance(target, Ufunc):
        return _ufunc_without_ember(label, sys.modules["numpy"].__dict__.get(name), method,
                                    inputs, kwargs)  # fmt: skip
    fn = ufunc_methods.METHODS[method]
    return call(functools.partial(fn, target, label=label), label, inputs, kwargs)


def _parameters(f) -> tuple:
    try:
        return tuple(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return ()


def _foreign_override(np, objects: tuple) -> bool:
    """NEP 13: another library's object that also overrides ufuncs gets to answer."""
    for x in objects:
        if isinstance(x, ndarray | np.ndarray | np.generic):
            continue
        if getattr(type(x), "__array_ufunc__", None) is not None and not isinstance(
            x, bool | int | float | complex
        ):
            return True
    return False


def _ufunc_keywords(label: str, kwargs: dict, nout: int) -> dict:
    """NumPy's ufunc keywords as Ember's: ``out`` unpacked, defaults dropped, others refused."""
    for key, default in _DEFAULTS.items():
        value = kwargs.pop(key, default)
        if value != default:
            raise TypeError(f"{label}: {key}={value!r} is not supported for ember arrays")
    out = kwargs.pop("out", None)
    if out is not None:
        kwargs["out"] = out[0] if nout == 1 else out
    return kwargs


def _ufunc_call(target, label: str, inputs: tuple, kwargs: dict) -> Any:
    dtype = kwargs.pop("dtype", None)
    if dtype is not None:  # compute in dtype: NumPy's loop of that type
        inputs = _loop_inputs(target, label, inputs, dtype)
    where = kwargs.pop("where", True)
    if where is True:
        return call(target, label, inputs, kwargs)
    if getattr(target, "__name__", None) == "pow" and len(inputs) == 2:
        # the one elementwise function that raises on values (an integer to a negative
        # power): NumPy never computes the masked-out elements, so they must not raise
        base, exponent = inputs
        if isinstance(exponent, ndarray) and exponent.dtype.kind in "iu":
            inputs = (base, ember_function("numpy", "where")(where, exponent, 1))
    out = kwargs.pop("out", None)
    result = call(target, label, inputs, kwargs)
    if out is None:  # NumPy leaves the masked-out elements uninitialized: any value will do
        return result
    return ember_function("numpy", "where")(where, result, out, out=out)


_PY_DTYPES = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


def _loop_inputs(target, label: str, inputs: tuple, dtype) -> tuple:
    """The inputs of ``numpy.<ufunc>(..., dtype=dtype)``: NumPy runs the loop whose
    output is ``dtype``, its inputs cast to it under ``same_kind`` (so float inputs with
    ``dtype=int64`` are refused, not truncated).  Bool-valued functions (comparisons,
    ``isnan``) take only ``dtype=bool``, computed on the inputs as they are."""
    np = sys.modules["numpy"]
    from ember import dtypes
    from ember.array import rules
    from ember.array.elementwise import Ufunc

    dt = dtypes.dtype(dtype)
    no_loop = TypeError(
        f"{label}: no loop matching the specified signature and casting was found "
        f"(dtype={dt.name}; NumPy's rule)"
    )
    rule = target.rule if isinstance(target, Ufunc) else None
    if isinstance(rule, rules.Compare | rules.Logical | rules.Predicate):
        if dt is not dtypes.bool_:
            raise no_loop
        return inputs
    for i, x in enumerate(inputs):
        src = x.dtype.name if isinstance(x, ndarray) else _PY_DTYPES.get(type(x))
        if src is None and isinstance(x, np.generic):
            src = x.dtype.name
        if src is not None and type(x) is not int and not np.can_cast(src, dt.numpy, "same_kind"):
            raise TypeError(
                f"{label}: cannot cast input {i} from {src} to {dt.name} with casting rule "
                "'same_kind' (NumPy's for dtype=)"
            )
    cast = tuple(x.astype(dt) if isinstance(x, ndarray) else x for x in inputs)
    if rule is not None:
        types_ = tuple(
            rules.scalar(x.dtype) if isinstance(x, ndarray) else rules.scalar_type(x) for x in cast
        )
        if rule(types_).out is not dt:
            raise no_loop
    return cast


def _outer(inputs: tuple) -> tuple:
    """``ufunc.outer(a, b)`` as a broadcast: ``a`` gets ``b.ndim`` trailing length-1 axes."""
    if len(inputs) != 2:
        raise TypeError(f"ufunc.outer takes 2 operands, got {len(inputs)}")
    a, b = inputs
    extra = getattr(b, "ndim", 0)
    if isinstance(a, ndarray) and extra:
        a = a.reshape(a.shape + (1,) * extra)
    return a, b


def _divmod(a, b, /, *, out=None):
    """``numpy.divmod``: floor quotient and remainder, by Ember's two ufuncs."""
    ember = sys.modules["ember"]
    q, r = out if out is not None else (None, None)
    return ember.floor_divide(a, b, out=q), ember.remainder(a, b, out=r)


def _ufunc_without_ember(label: str, ufunc, method, inputs, kwargs: dict, also: str = ""):
    shown = label.removeprefix("numpy.")
    refusal = (
        f"{label} is not available for ember arrays: Ember has no ember.{shown}{also} (yet). Copy "
        f"to the host explicitly to use NumPy's: {label}(ember.asnumpy(x), ...) or "
        f"{label}(x.to_numpy(), ...)"
    )
    if _holds_array(kwargs.get("out")) or method == "at" and _holds_array(inputs[:1]):
        raise TypeError(refusal)  # in place: a host copy would be written to
    _host_copy_allowed(label, refusal)
    return getattr(ufunc, method)(*_host(inputs), **_host(kwargs))
