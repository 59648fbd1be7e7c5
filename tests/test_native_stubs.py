"""The .pyi stubs describe every public name of the native module."""

import ast
from pathlib import Path

import itercast
from itercast import _native

STUBS = Path(itercast.__file__).with_name("_native.pyi")


def stub_names() -> dict[str, set[str]]:
    tree = ast.parse(STUBS.read_text())
    names: dict[str, set[str]] = {"": set()}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            inherited = set().union(*(names.get(base.id, set()) for base in node.bases if isinstance(base, ast.Name)))
            names[node.name] = inherited | {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            if not node.name.startswith("_"):
                names[""].add(node.name)
        elif isinstance(node, ast.FunctionDef):
            names[""].add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names[""].add(node.target.id)
    return names


def public(obj) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_")}


def test_stubs_cover_the_native_module():
    stubs = stub_names()
    assert public(_native) == stubs[""]
    for name in stubs[""]:
        value = getattr(_native, name)
        if isinstance(value, type) and not issubclass(value, Exception):
            assert public(value) == stubs[name] - {"__init__"}, name
