"""ember._records.record against dataclasses.dataclass: the same classes, field for field."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember._records import record

# a field: (has a default, a factory instead, init, repr, compare)
FIELD = st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans())


def _define(deco, specs, frozen, eq, post_init=False):
    """One class of fields f0.. per ``specs``, decorated by ``deco``; defaults only after
    the fields without one (as both require)."""
    ns: dict = {"__annotations__": {}, "__doc__": "a class"}
    ordered = sorted(specs, key=lambda s: s[0])  # fields without a default first
    for i, (default, factory, init, shown, compared) in enumerate(ordered):
        name = f"f{i}"
        ns["__annotations__"][name] = "int"
        kw = {"init": init or not default, "repr": shown, "compare": compared}
        if default:
            kw["default_factory" if factory else "default"] = list if factory else f"d{i}"
        ns[name] = dataclasses.field(**kw)
    if post_init:
        ns["__post_init__"] = lambda self: object.__setattr__(self, "seen", True)
    cls = type("C", (), ns)
    return deco(frozen=frozen, eq=eq)(cls), ordered


def _args(ordered):
    required = [i for i, s in enumerate(ordered) if not s[0]]
    return [f"v{i}" for i in required]


def _hash_or_error(obj):
    try:
        return hash(obj)
    except TypeError as exc:
        return str(exc)


@settings(max_examples=150, deadline=None)
@given(st.lists(FIELD, max_size=5), st.booleans(), st.booleans())
def test_record_makes_the_class_dataclass_makes(specs, frozen, eq):
    D, ordered = _define(dataclasses.dataclass, specs, frozen, eq)
    R, _ = _define(record, specs, frozen, eq)
    args = _args(ordered)
    d1, d2, r1, r2 = D(*args), D(*args), R(*args), R(*args)
    assert str(inspect.signature(R)) == str(inspect.signature(D))
    assert repr(r1) == repr(d1)
    assert vars(r1) == vars(d1)
    assert (r1 == r2) == (d1 == d2) and (r1 != r2) == (d1 != d2)
    assert (r1 == d1) is False  # another class: never equal, as between dataclasses
    if R.__hash__ is None:
        assert D.__hash__ is None
    elif eq and frozen:  # hashed over the compared fields: a list among them cannot be
        assert _hash_or_error(r1) == _hash_or_error(r2)
        assert (_hash_or_error(r1) == _hash_or_error(r2)) == (
            _hash_or_error(d1) == _hash_or_error(d2)
        )
    assert [f.name for f in dataclasses.fields(R)] == [f.name for f in dataclasses.fields(D)]
    assert R.__match_args__ == D.__match_args__
    assert dataclasses.is_dataclass(r1) and dataclasses.asdict(r1) == dataclasses.asdict(d1)
    params = R.__dataclass_params__
    assert (params.frozen, params.eq) == (frozen, eq)
    if ordered and ordered[0][2] or not ordered:
        assert vars(dataclasses.replace(r1)) == vars(r1)
    if ordered:
        if frozen:
            with pytest.raises(dataclasses.FrozenInstanceError):
                r1.f0 = 1
            with pytest.raises(dataclasses.FrozenInstanceError):
                del r1.f0
        else:
            r1.f0 = 1
            assert r1.f0 == 1


def test_factories_make_a_new_value_per_instance_and_post_init_runs():
    R, _ = _define(record, [(True, True, True, True, True)], True, True, post_init=True)
    a, b = R(), R()
    assert a.f0 == [] and a.f0 is not b.f0 and a.seen
    assert R([1]).f0 == [1]


def test_methods_the_class_defines_are_kept():
    @record(frozen=True)
    class C:
        x: int

        def __repr__(self) -> str:
            return "mine"

    assert repr(C(1)) == "mine" and C(1) == C(1) and hash(C(1)) == hash(C(1))


def test_what_dataclass_refuses_is_refused():
    with pytest.raises(TypeError, match="follows default"):

        @record
        class C:
            a: int = 1
            b: int

    with pytest.raises(ValueError, match="mutable default"):

        @record
        class D:
            a: list = []  # noqa: RUF012

    with pytest.raises(TypeError, match="__setattr__"):

        @record(frozen=True)
        class E:
            a: int

            def __setattr__(self, name, value):
                pass


def test_frozen_records_pickle_and_hash_as_keys():
    from ember import dtypes
    from ember.frontend.types import Array, Scalar  # records on the first kernel's path

    s = Scalar(dtypes.float32)
    assert pickle.loads(pickle.dumps(s)) == s and s != Scalar(dtypes.float32, weak=True)
    a = Array(s.dtype, 1)
    assert {a: 1}[Array(s.dtype, 1)] == 1 and a != Array(s.dtype, 2)


def test_a_mutable_record_is_unhashable_and_compares_by_fields():
    @record
    class M:
        a: int
        b: list = dataclasses.field(default_factory=list, compare=False)

    assert M(1, [1]) == M(1, [2]) and M(1) != M(2)
    with pytest.raises(TypeError):
        hash(M(1))
