"""What a front end shows of a command preview: a :class:`PreviewCard` (plain data).

Its own module, apart from :mod:`~desktop_agent.session.files.command_previews`
(which decides previews and reports events), so the event vocabulary can name
the card without importing the part that emits it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

#: Characters of unified diffs a card's JSON carries at most.
DIFF_CHARS = 512_000
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

    def to_dict(self, *, tree_depth: int = 3, max_changes: int | None = None,
                diff_chars: int = DIFF_CHARS) -> dict[str, Any]:
        """JSON form for REST: diffs as unified text, the tree cut at ``tree_depth``.

        ``max_changes`` and ``diff_chars`` bound what an event carries (the
        REST server stores its events): the changes past the first
        ``max_changes``, and the diffs once ``diff_chars`` characters are used,
        are left out; ``changes_total`` and the tree's totals still count them.
        """
        diffs: dict[str, str] = {}
        budget = diff_chars
        for path, diff in self.diffs.items():
            text = diff.unified_text()
            if len(text) > budget:
                break
            budget -= len(text)
            diffs[path] = text
        changes = self.changes if max_changes is None else self.changes[:max_changes]
        return {"id": self.id, "tool_use_id": self.tool_use_id, "command": self.command,
                "output": self.output, "exit_code": self.exit_code, "summary": self.summary,
                "changes": [c.to_dict() for c in changes],
                "changes_total": len(self.changes), "diffs": diffs,
                "tree": self.tree.to_dict(tree_depth), "notes": list(self.notes),
                "incomplete": self.incomplete}


def preview_card(preview: CommandPreview, tool_use_id: str | None) -> PreviewCard:
    """The card of a preview (blocking: reads the files it diffs).

    The command's secrets are blanked out of everything the card shows (a
    command may write ``$TOKEN`` into a file: its diff would show it, and the
    REST server keeps its events), as they are out of its output.
    """
    from desktop_agent.workspace.preview_views import change_tree, file_diffs

    if preview.secrets:
        return _redacted_card(preview, tool_use_id)
    changes = preview.changes
    return PreviewCard(
        preview.id, tool_use_id, preview.command, preview.result, preview.summary(),
        tuple(changes.changes),
        file_diffs(str(preview.workdir), str(preview.layers.upper), changes),
        change_tree(changes), tuple(changes.notes), preview.incomplete, str(preview.workdir))


def _redacted_card(preview: CommandPreview, tool_use_id: str | None) -> PreviewCard:
    """:func:`preview_card` with the preview's secrets blanked out of paths, links and diffs."""
    from dataclasses import replace

    from desktop_agent.core.tooling.builtin.change_set import ChangeSet
    from desktop_agent.core.tooling.builtin.shell_tool import redact_secrets
    from desktop_agent.workspace.preview_views import change_tree, file_diffs

    secrets = preview.secrets

    def clean(text: str | None) -> str | None:
        return None if text is None else redact_secrets(text, secrets)

    changes = preview.changes
    shown = ChangeSet([replace(c, path=clean(c.path) or c.path, target=clean(c.target),
                               old_target=clean(c.old_target),
                               hard_link_of=clean(c.hard_link_of),
                               renamed_from=clean(c.renamed_from)) for c in changes.changes],
                      notes=[clean(n) or n for n in changes.notes])
    diffs = {clean(path) or path: _redacted_diff(diff, secrets)
             for path, diff in file_diffs(str(preview.workdir), str(preview.layers.upper),
                                          changes).items()}
    return PreviewCard(
        preview.id, tool_use_id, preview.command, preview.result, preview.summary(),
        tuple(shown.changes), diffs, change_tree(shown), tuple(shown.notes),
        preview.incomplete, str(preview.workdir))


def _redacted_diff(diff: FileDiff, secrets: Mapping[str, str]) -> FileDiff:
    from dataclasses import replace

    from desktop_agent.core.tooling.builtin.shell_tool import redact_secrets

    hunks = tuple(replace(hunk, lines=tuple(line._replace(text=redact_secrets(line.text,
                                                                               secrets))
                                            for line in hunk.lines))
                  for hunk in diff.hunks)
    return replace(diff, path=redact_secrets(diff.path, secrets), hunks=hunks)
