"""Fail when modules of a package import each other in a cycle, naming each cycle.

Usage: ``python .ci/import_cycles.py [PACKAGE ...]`` (default: ``desktop_agent``).

Why: a cycle means neither module can be read, tested or moved without the
other (the window's parts once imported ``MainWindow`` while it imported them).
The import graph comes from grimp, which import-linter already installs; it
counts every import statement, including those under ``TYPE_CHECKING`` and
inside functions, because each is a dependency a reader has to follow. Cycles
are found as strongly connected groups of modules (Tarjan's algorithm); for
each group one shortest cycle is printed with the file and line of each import.

Exit status: 0 without cycles, 1 with at least one, 2 when a package cannot be
found.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator

import grimp


def strongly_connected(graph: grimp.ImportGraph) -> Iterator[list[str]]:
    """Groups of two or more modules that all reach each other by imports.

    Iterative Tarjan, so a deep import chain cannot hit the recursion limit.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(
                        graph.find_modules_directly_imported_by(successor)))))
                    break
                if successor in on_stack:
                    low[module] = min(low[module], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == module:
                            break
                    if len(group) > 1:
                        yield sorted(group)


def shortest_cycle(graph: grimp.ImportGraph, group: list[str]) -> list[str]:
    """One shortest cycle through the group's first module, as a list of modules."""
    start = group[0]
    best: tuple[str, ...] | None = None
    for imported in sorted(graph.find_modules_directly_imported_by(start)):
        if imported not in group:
            continue
        chain = graph.find_shortest_chain(importer=imported, imported=start)
        if chain is not None and (best is None or len(chain) < len(best)):
            best = chain
    assert best is not None, "a strongly connected module imports one of its group"
    return [start, *best]


def describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    """The cycle as lines ``a -> b  (file line N: import ...)``."""
    lines = []
    for importer, imported in itertools.pairwise(cycle):
        details = graph.get_import_details(importer=importer, imported=imported)
        where = ""
        if details:
            first = details[0]
            where = f"  (line {first['line_number']}: {first['line_contents']})"
        lines.append(f"    {importer} -> {imported}{where}")
    return "\n".join(lines)


def main(packages: list[str]) -> int:
    """Check the packages; write every cycle found to stdout; return the exit status."""
    names = ", ".join(packages)
    try:
        graph = grimp.build_graph(*packages, cache_dir=None)
    except (ModuleNotFoundError, ValueError) as exc:
        sys.stderr.write(f"import cycles: cannot read {names}: {exc}\n")
        return 2
    groups = list(strongly_connected(graph))
    if not groups:
        sys.stdout.write(f"import cycles: none in {names} ({len(graph.modules)} modules)\n")
        return 0
    report = [f"import cycles: {len(groups)} group(s) of modules import each other:"]
    for group in groups:
        report += [f"  {len(group)} modules: {', '.join(group)}", "  for example:",
                   describe(graph, shortest_cycle(graph, group))]
    report.append("Give one side a narrow interface (a signal, a small Protocol or a "
                  "callable) instead of importing the other.")
    sys.stdout.write("\n".join(report) + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["desktop_agent"]))
