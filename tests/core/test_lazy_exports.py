"""A lazily exporting package names the same names to the type checker, at run time and in __all__.

A package that uses :func:`desktop_agent.lazy_exports.lazy_exports` names each public
name in up to three places: a mapping from the name to its submodule (what runs),
``from <submodule> import <name> as <name>`` under ``if TYPE_CHECKING:`` (what mypy
and editors see), and ``__all__``. Nothing at run time reads the ``TYPE_CHECKING``
imports, so a name added to the mapping alone is ``Any`` to mypy, and one imported
there from the wrong module type-checks against a class that is not the one
running. The packages are found by reading ``desktop_agent`` for the call, so one
added later is checked too.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

import desktop_agent
import desktop_agent.core

ROOT = Path(desktop_agent.__file__).parent


@dataclass(frozen=True)
class Listing:
    """What one package's ``__init__`` says about its names.

    Attributes:
        module: The package, imported.
        homes: The mapping passed to ``lazy_exports``: name -> submodule (relative).
        typed: Names imported under ``if TYPE_CHECKING:`` -> (absolute module, as-form).
        eager: Public names the ``__init__`` binds as it runs (imports, defs, assignments).
    """

    module: ModuleType
    homes: dict[str, str]
    typed: dict[str, tuple[str, bool]]
    eager: frozenset[str]


def packages_using_lazy_exports() -> list[str]:
    found = []
    for init in sorted(ROOT.rglob("__init__.py")):
        if "lazy_exports(" in init.read_text(encoding="utf-8"):
            parts = init.parent.relative_to(ROOT.parent).parts
            found.append(".".join(parts))
    return found


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
        and node.test.id == "TYPE_CHECKING"


def _bound(node: ast.stmt) -> list[str]:
    """Names a top-level statement binds."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, ast.AnnAssign) else []
    return [target.id for target in targets if isinstance(target, ast.Name)]


def read_listing(package: str) -> Listing:
    module = importlib.import_module(package)
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    typed: dict[str, tuple[str, bool]] = {}
    eager: set[str] = set()
    homes: dict[str, str] | None = None
    for node in tree.body:
        if _is_type_checking(node):
            assert isinstance(node, ast.If)
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom):
                    source = importlib.util.resolve_name(
                        "." * inner.level + (inner.module or ""), package) \
                        if inner.level else inner.module or ""
                    for alias in inner.names:
                        typed[alias.asname or alias.name] = (source, alias.asname == alias.name)
            continue
        eager.update(name for name in _bound(node) if not name.startswith("_"))
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                and call.func.id == "lazy_exports":
            mapping = call.args[1]
            homes = dict(getattr(module, mapping.id)) if isinstance(mapping, ast.Name) \
                else ast.literal_eval(mapping)
    assert homes is not None, f"{package}: no lazy_exports(__name__, <mapping>) call found"
    eager -= {"annotations", "TYPE_CHECKING", "lazy_exports"}
    return Listing(module, homes, typed, frozenset(eager))


PACKAGES = packages_using_lazy_exports()


def test_the_packages_are_found() -> None:
    assert {"desktop_agent.core", "desktop_agent.session", "desktop_agent.store"} \
        <= set(PACKAGES), PACKAGES


@pytest.mark.parametrize("package", PACKAGES)
def test_the_type_checker_sees_every_lazy_name_from_the_module_that_runs(package: str) -> None:
    listing = read_listing(package)
    public = set(listing.module.__all__)
    # what the TYPE_CHECKING block exports: ``as``-form re-exports and names in __all__
    # (a name imported there only for an annotation, like ``Tool``, is neither)
    typed_exports = {name for name, (_, as_form) in listing.typed.items()
                     if as_form or name in public}
    assert typed_exports == set(listing.homes), (
        f"{package}: lazily exported but not imported under TYPE_CHECKING: "
        f"{sorted(set(listing.homes) - typed_exports)}; imported there but not lazily "
        f"exported: {sorted(typed_exports - set(listing.homes))}")
    wrong_home = {name: (listing.typed[name][0], f"{package}.{home}")
                  for name, home in listing.homes.items()
                  if listing.typed[name][0] != f"{package}.{home}"}
    assert not wrong_home, f"{package}: typed from one module, run from another: {wrong_home}"


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_the_lazy_names_and_the_eager_ones(package: str) -> None:
    listing = read_listing(package)
    public = set(listing.module.__all__)
    assert len(public) == len(listing.module.__all__), f"{package}: __all__ repeats a name"
    assert set(listing.homes) <= public, (
        f"{package}: lazily exported but not in __all__: {sorted(set(listing.homes) - public)}")
    rest = public - set(listing.homes)
    assert rest <= listing.eager, (
        f"{package}: in __all__ but neither lazy nor bound by the __init__: "
        f"{sorted(rest - listing.eager)}")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_lazy_name_is_the_object_its_module_defines(package: str) -> None:
    listing = read_listing(package)
    for name, home in listing.homes.items():
        defined = getattr(importlib.import_module(f"{package}.{home}"), name)
        assert getattr(listing.module, name) is defined, f"{package}.{name}"


def test_the_root_package_exports_only_what_the_core_and_the_engine_type() -> None:
    # ``desktop_agent`` hands out core names (its own __getattr__) and shows them to the
    # type checker with ``from .core import *`` under TYPE_CHECKING; LocalModel comes
    # from the engine (the core runs no model) and is imported there by name
    import desktop_agent.engine

    core = read_listing("desktop_agent.core")
    engine_names = set(desktop_agent._ENGINE_NAMES)
    sdk_names = set(desktop_agent.__all__) - engine_names
    missing = sorted(sdk_names - set(desktop_agent.core.__all__))
    assert not missing, f"desktop_agent exports names the core does not: {missing}"
    assert sdk_names <= set(core.typed)
    for name in sdk_names:
        assert getattr(desktop_agent, name) is getattr(desktop_agent.core, name), name
    assert engine_names <= set(desktop_agent.engine.__all__)
    init = Path(desktop_agent.__file__).read_text(encoding="utf-8")
    for name in engine_names:
        assert f"import {name} as {name}" in init, f"{name} is not shown to the type checker"
        assert getattr(desktop_agent, name) is getattr(desktop_agent.engine, name), name
