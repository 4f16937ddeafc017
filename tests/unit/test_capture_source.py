"""Capture's reading of a function's lines by indentation against inspect's tokenizing."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap
import types

import pytest

import ember
from ember.frontend import capture as cap

TRICKY = '''
import functools


def plain(a, x, y):
    i = 1
    if i < 2:
        y[i] = a * x[i] + y[i]
    # a trailing comment, indented as the body


# a comment after it, not the function's


def long_header(
    a,
    x,  # with a comment
    y=(1, [2, {3: 4}]),
) -> None:
    return a


@functools.lru_cache(
    maxsize=None)
def decorated(a):
    return a


def margin_docstring(a):
    """A docstring
continued at the left margin."""
    return a


def one_line(a): return a


def bracket_in_a_string(a, sep="("):
    return a


class Holder:
    def method(self, a):
        def inner(b):
            return b

        return inner(a)


def nested_outer():
    def nested(x):
        if x:
            return 1
        return 2

    return nested
'''


def _module(tmp_path, monkeypatch):
    path = tmp_path / "tricky_source.py"
    path.write_text(TRICKY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("tricky_source")


def _read(func):
    """Capture's reading (lines, first line, and whether indentation read them)."""
    filename = inspect.getsourcefile(func) or func.__code__.co_filename
    by_indentation = cap._block(func, filename) is not None
    source = cap._source_of(func)
    cap._parsed(source)
    return list(source[0]), source[1], by_indentation


@pytest.fixture
def tricky(tmp_path, monkeypatch):
    return _module(tmp_path, monkeypatch)


@pytest.mark.parametrize(
    "name, fast",
    [
        ("plain", True),
        ("long_header", True),
        ("decorated", True),
        ("margin_docstring", False),  # cut short by indentation: inspect reads it
        ("one_line", False),
        ("bracket_in_a_string", False),  # the count of brackets is off: inspect reads it
        ("Holder.method", True),
        ("nested_outer", True),
    ],
)
def test_the_lines_are_inspects(tricky, name, fast):
    func = tricky
    for part in name.split("."):
        func = getattr(func, part)
    func = inspect.unwrap(func)
    lines, first, by_indentation = _read(func)
    assert (lines, first) == tuple(inspect.getsourcelines(func))
    assert by_indentation is fast


def test_a_nested_function_and_a_trailing_comment(tricky):
    nested = tricky.nested_outer()
    lines, first, fast = _read(nested)
    assert fast and (lines, first) == tuple(inspect.getsourcelines(nested))
    plain, *_ = _read(tricky.plain)
    assert plain[-1].strip() == "# a trailing comment, indented as the body"


def _functions(module):
    for value in list(vars(module).values()):
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            yield value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr in vars(value).values():
                attr = getattr(attr, "__func__", getattr(attr, "fget", attr))
                if isinstance(attr, types.FunctionType):
                    yield attr


def test_every_function_of_ember_reads_as_inspect_reads_it():
    """Ember's own sources (the array library's device functions among them): the lines
    capture reads are inspect's, whichever way it read them."""
    modules = []
    for info in pkgutil.walk_packages(ember.__path__, "ember."):
        if info.name.endswith("__main__") or info.name.startswith("ember.cli"):
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except Exception:  # noqa: S112 - an optional dependency missing here
            continue
    checked = by_indentation = 0
    for module in modules:
        for func in _functions(module):
            func = inspect.unwrap(func)
            if func.__code__.co_name == "<lambda>":
                continue
            try:
                expected = inspect.getsourcelines(func)
            except (OSError, TypeError):
                continue
            try:
                lines, first, fast = _read(func)
            except (SyntaxError, StopIteration):  # capture refuses it: as with inspect's lines
                try:
                    tree = ast.parse(textwrap.dedent("".join(expected[0])))
                except SyntaxError:
                    continue
                assert not any(isinstance(n, ast.FunctionDef) for n in tree.body), func
                continue
            assert (lines, first) == (expected[0], expected[1]), func.__qualname__
            checked += 1
            by_indentation += fast
    assert checked > 2000 and by_indentation > 0.95 * checked


def test_a_definition_cut_short_never_parses_as_another(tmp_path, monkeypatch):
    """A function whose lines indentation would cut inside a string still captures whole."""
    src = textwrap.dedent('''
        def k(y):
            s = """
        not the end"""
            y[0] = 1
    ''')
    (tmp_path / "cut_source.py").write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("cut_source")
    captured = cap.capture(mod.k)
    assert captured.lines[-1].strip() == "y[0] = 1"
