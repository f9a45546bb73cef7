"""The tree a preview card lists: in the order a person reads a folder."""

from __future__ import annotations

from desktop_agent.core.tooling.builtin.change_set import ChangeSet, PathChange
from desktop_agent.workspace.preview_views import change_tree


def test_folders_first_and_numbers_in_number_order() -> None:
    names = ["pkg10/a.js", "pkg2/a.js", "pkg1/a.js", "Readme.md", "file10.txt", "file9.txt",
             "b.txt"]
    changes = ChangeSet(changes=[PathChange(path=n, change="created", kind="file", size=1)
                                 for n in names])
    tree = change_tree(changes)
    assert [c.name for c in tree.children] == ["pkg1", "pkg2", "pkg10", "b.txt", "file9.txt",
                                               "file10.txt", "Readme.md"]
    assert tree.totals.created == 7
