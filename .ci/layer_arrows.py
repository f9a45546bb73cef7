"""Fail when a module of a lower layer imports one of a higher layer, naming each import.

Usage: ``python .ci/layer_arrows.py [CONTRACT_ID ...]`` (default: every ``layers``
contract with ``containers`` in pyproject.toml's ``[tool.importlinter]``).

Why: a lower layer that imports a higher one cannot be read, tested or moved
without it, and one such arrow invites the next. import-linter's ``layers``
contract (run by ``lint-imports``) already refuses these, and longer chains
through other modules too; this check is the explicit count of arrows that run
back up: every direct import from a module of a lower layer to one of a higher
layer, with its file and line, read from grimp's graph, so imports under
``TYPE_CHECKING`` and inside functions count. The layers are read from the
contracts themselves, so there is one list to keep. Imports the contract
ignores (exact ``a -> b`` lines) are left out; imports between the siblings of
one layer are lint-imports' business.

Exit status: 0 when no arrow runs back up, 1 when one does, 2 when the
contracts or the package cannot be read.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

import grimp

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def layer_contracts(config: dict[str, Any], wanted: list[str]) -> list[dict[str, Any]]:
    """The ``layers`` contracts with containers, those named in ``wanted`` only if any are."""
    contracts = [c for c in config.get("contracts", [])
                 if c.get("type") == "layers" and c.get("containers")]
    if wanted:
        missing = set(wanted) - {c.get("id") for c in contracts}
        if missing:
            raise ValueError(f"no layers contract with containers has id {sorted(missing)}")
        contracts = [c for c in contracts if c.get("id") in wanted]
    return contracts


def layer_of_modules(graph: grimp.ImportGraph, container: str,
                     layers: list[str]) -> dict[str, int]:
    """The index of each module's layer, 0 for the top one.

    A layer's modules are the one its name gives and, for a package, all it holds.
    """
    index: dict[str, int] = {}
    for position, layer in enumerate(layers):
        for tail in layer.replace(":", "|").split("|"):
            name = f"{container}.{tail.strip()}"
            if name not in graph.modules:
                raise ValueError(f"layer {tail.strip()!r} names no module of {container}")
            for module in {name, *graph.find_descendants(name)}:
                index[module] = position
    return index


def arrows_back_up(graph: grimp.ImportGraph, contract: dict[str, Any]) -> list[str]:
    """``importer -> imported  (line N: ...)`` for each import that runs back up."""
    ignored = {tuple(part.strip() for part in line.split("->"))
               for line in contract.get("ignore_imports", [])}
    found = []
    for container in contract["containers"]:
        layer_index = layer_of_modules(graph, container, contract["layers"])
        for importer in sorted(layer_index):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                higher = layer_index.get(imported)
                if higher is None or higher >= layer_index[importer] or \
                        (importer, imported) in ignored:
                    continue
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    found.append(f"    {importer} -> {imported}  (line {detail['line_number']}:"
                                 f" {detail['line_contents']})")
    return found


def main(wanted: list[str]) -> int:
    """Check the contracts; write what runs back up to stdout; return the exit status."""
    try:
        config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
        contracts = layer_contracts(config, wanted)
        graph = grimp.build_graph(config["root_package"], cache_dir=None)
        report = {c.get("id") or c["name"]: arrows_back_up(graph, c) for c in contracts}
    except (KeyError, ValueError, ModuleNotFoundError) as exc:
        sys.stderr.write(f"layer arrows: cannot check ({type(exc).__name__}: {exc})\n")
        return 2
    status = 0
    for name, arrows in report.items():
        if not arrows:
            sys.stdout.write(f"layer arrows: 0 run back up in {name}\n")
            continue
        status = 1
        sys.stdout.write(f"layer arrows: {len(arrows)} run back up in {name}"
                         " (a lower layer imports a higher one):\n" + "\n".join(arrows) + "\n")
    if status:
        sys.stdout.write("Move the code to the layer it belongs to, or give the lower layer a "
                         "narrow interface (a Protocol, a callable, data) the higher one "
                         "fills in.\n")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
