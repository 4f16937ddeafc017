"""The dialect classes: every registered dialect spells everything the emitter asks for."""

from __future__ import annotations

import typing

import pytest

from ember.codegen import dialects
from ember.codegen.dialects.base import INDEX_NAMES, Dialect
from ember.dtypes import ALL


def _annotated() -> list[str]:
    hints = typing.get_type_hints(Dialect)
    return [name for name, hint in hints.items() if typing.get_origin(hint) is typing.ClassVar]


@pytest.mark.parametrize("name", dialects.names())
def test_every_dialect_sets_every_attribute(name):
    d = dialects.get(name)
    assert isinstance(d, Dialect) and d.name == name
    missing = [a for a in _annotated() if not hasattr(d, a)]
    assert not missing, f"dialect {name} lacks {missing}"
    assert set(INDEX_NAMES) <= set(d.index)
    assert {dt.name for dt in ALL if not dt.is_complex} <= set(d.types)
    # complex values are declared types (codegen/complexes.py), not entries of the table
    assert "{name}" in d.complex_struct and "{t}" in d.complex_struct
    assert len(d.complex_fields) == 2
    assert {4, 8} <= set(d.unsigned) and {4, 8} <= set(d.cas_bits)
    assert {"float32", "float64"} <= set(d.inf) & set(d.nan)
    assert {"shfl", "shfl_up", "shfl_down", "shfl_xor"} <= set(d.shuffle)
    keys = {"claim", "record", "claim_cas", "fence", "f32_bits", "f64_bits", "int_fmt"}
    assert keys <= set(d.checks)
    assert d.source_suffix.startswith(".")


def test_get_is_one_instance_per_name_and_names_unknown_ones():
    assert dialects.get("cuda") is dialects.get("cuda")
    with pytest.raises(KeyError, match="unknown C dialect 'metal'; known dialects: cuda"):
        dialects.get("metal")


def test_a_dialect_without_its_code_methods_cannot_be_made():
    class Half(Dialect):
        name = "half"

    with pytest.raises(TypeError, match="atomic_body"):
        Half()


def test_address_spaces_and_offsets_are_attributes():
    cuda, opencl = dialects.get("cuda"), dialects.get("opencl")
    assert opencl.atomic_pointer("uint", "shared") == "volatile __local uint*"
    assert cuda.atomic_pointer("int", "shared") == "int*"
    assert opencl.separate_offsets and not cuda.separate_offsets
