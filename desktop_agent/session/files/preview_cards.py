"""What a front end shows of a command preview: a :class:`PreviewCard` (plain data).

Its own module, apart from :mod:`~desktop_agent.session.files.command_previews`
(which decides previews and reports events), so the event vocabulary can name
the card without importing the part that emits it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.core.tooling.builtin.change_set import PathChange
    from desktop_agent.core.tooling.builtin.command_preview import CommandPreview
    from desktop_agent.core.tooling.builtin.shell_tool import CommandResult
    from desktop_agent.workspace.diffs import FileDiff
    from desktop_agent.workspace.preview_views import ChangeTree


@dataclass(frozen=True, slots=True)
class PreviewCard:
    """A preview as front ends show it: output, counts, diffs, a tree with totals.

    Attributes:
        id: The preview's id.
        tool_use_id: The model's ``bash`` call it belongs to (None: a REST command).
        command: The command line.
        result: Its exit status and output (secrets blanked), as without a preview.
        summary: ``changes 3 files, deletes 1``.
        changes: Every change, by path.
        diffs: Diffs of the first changed text files, by path.
        tree: The changes as folders with totals (for large sets).
        notes: What cannot be applied (sockets, devices).
        incomplete: Why it cannot be applied at all (its disk filled up).
        workdir: The working folder it previewed.
    """

    id: str
    tool_use_id: str | None
    command: str
    result: CommandResult
    summary: str
    changes: tuple[PathChange, ...]
    diffs: Mapping[str, FileDiff]
    tree: ChangeTree
    notes: tuple[str, ...]
    incomplete: str | None
    workdir: str

    @property
    def output(self) -> str:
        """The command's result as the model reads it (exit code, stdout, stderr)."""
        return self.result.to_text()

    @property
    def exit_code(self) -> int | None:
        """Its exit status (None: killed on timeout)."""
        return None if self.result.timed_out else self.result.exit_code

    def to_dict(self, *, tree_depth: int = 3) -> dict[str, Any]:
        """JSON form for REST (diffs as unified text, the tree cut at ``tree_depth``)."""
        return {"id": self.id, "tool_use_id": self.tool_use_id, "command": self.command,
                "output": self.output, "exit_code": self.exit_code, "summary": self.summary,
                "changes": [c.to_dict() for c in self.changes],
                "diffs": {p: d.unified_text() for p, d in self.diffs.items()},
                "tree": self.tree.to_dict(tree_depth), "notes": list(self.notes),
                "incomplete": self.incomplete}


def preview_card(preview: CommandPreview, tool_use_id: str | None) -> PreviewCard:
    """The card of a preview (blocking: reads the files it diffs)."""
    from desktop_agent.workspace.preview_views import change_tree, file_diffs

    changes = preview.changes
    return PreviewCard(
        preview.id, tool_use_id, preview.command, preview.result, preview.summary(),
        tuple(changes.changes),
        file_diffs(str(preview.workdir), str(preview.layers.upper), changes),
        change_tree(changes), tuple(changes.notes), preview.incomplete, str(preview.workdir))
