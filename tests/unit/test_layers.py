"""The architecture holds: code outside the backends asks capabilities, never names.

A backend or dialect name written into code outside ``ember/backends/`` and
``ember/codegen/dialects/`` (a comparison, a table keyed by it, ``get("cuda")``) is a missing
capability: a new backend would have to edit that file.  The registry
(``ember/runtime/registry.py``) is the one place that lists the names.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from ember.codegen import dialects
from ember.runtime import registry

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "ember"
OWN_NAMES = ("backends/", "codegen/dialects/", "runtime/registry.py")
# every registered name, and the planned native CPU backend's
NAMES = frozenset(registry.REGISTRY) | frozenset(dialects.names()) | {"cpu"}
NAME_ATTRS = {"dialect"}  # x.dialect == ... compares a dialect by name
OWNERS = {"backend", "be", "dialect"}  # backend.name == ..., dialect.name == ...


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr):
            if isinstance(node.body[0].value, ast.Constant):
                found.add(id(node.body[0].value))
    return found


def _names_a_backend(node: ast.AST) -> bool:
    """``x.dialect`` or ``backend.name`` / ``dialect.name`` / ``x.dialect.name``: compared
    with a string constant, a test of the backend's name."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr in NAME_ATTRS:
        return True
    if node.attr == "name":
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in OWNERS:
            return True
        return isinstance(owner, ast.Attribute) and owner.attr in OWNERS | NAME_ATTRS
    return False


def _is_text(node: ast.AST) -> bool:
    """A string constant, or a tuple / list / set of them."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(map(_is_text, node.elts))
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def offences(text: str, rel: str) -> list[str]:
    tree = ast.parse(text)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in NAMES and id(node) not in docs:
            found.append(f"{rel}:{node.lineno}: the name {node.value!r}")
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops
        ):
            sides = (node.left, *node.comparators)
            if any(map(_names_a_backend, sides)) and any(map(_is_text, sides)):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_backend_or_dialect_names_outside_the_backends():
    files = [
        p for p in SRC.rglob("*.py") if not p.relative_to(SRC).as_posix().startswith(OWN_NAMES)
    ]
    assert len(files) > 50
    found = [
        o
        for p in sorted(files)
        for o in offences(p.read_text("utf-8"), p.relative_to(SRC).as_posix())
    ]
    assert not found, (
        "code outside ember/backends/ names a backend or dialect; ask a capability of the "
        "backend (ember/runtime/backend.py) or an attribute of the dialect instead:\n  "
        + "\n  ".join(found)
    )


def test_the_check_finds_what_it_forbids():
    code = (
        '"""A docstring may say cuda."""\n'
        "def f(backend, d):\n"
        "    a = backend.dialect == 'x'\n"
        "    b = backend.name != other  # a lookup, not a test of a name\n"
        "    return {'cuda': 1}, backend.name in ('a', 'b')\n"
    )
    found = offences(code, "probe.py")
    assert len(found) == 3, found
    assert any("'cuda'" in f for f in found) and any("backend.dialect" in f for f in found)


def test_imports_point_down():
    """The import-linter layers contract of pyproject.toml (also run by .ci/run)."""
    import os
    import shutil
    import subprocess
    import sys

    pytest.importorskip("importlinter")
    exe = shutil.which("lint-imports") or os.path.join(
        os.path.dirname(sys.executable), "lint-imports"
    )
    if not os.path.exists(exe):
        pytest.skip("lint-imports is not on PATH")
    root = SRC.parents[1]
    env = dict(os.environ, PYTHONPATH=str(SRC.parent))
    out = subprocess.run([exe], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
