"""Undo and restore in words: what happened to each file, or what is about to.

Why a module of its own: "Put back 1 file: notes.txt" read as the opposite of
what happened when the undo *removed* notes.txt (a file the turn had created).
A restore does one of three things to a file, and each gets its own verb and
says why: it removes a file made since, brings back one deleted since, and
puts back one changed since. The files bar says it after an undo or restore,
and the question before a restore says it ahead, with the same names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.session import FileChange

#: Names listed in a sentence of the bar before "and N more".
BAR_NAMES = 3
#: Files listed one per line in the question before a restore.
QUESTION_LINES = 12


@dataclass(frozen=True, slots=True)
class Undone:
    """Whose changes a restore took back, as the sentences name them.

    Attributes:
        made: The clause after a removed file, singular then plural
            ("which this turn created").
        deleted: The clause after a file brought back ("which this turn deleted").
        before: When the files put back were as they are now ("before this turn").
    """

    made: tuple[str, str]
    deleted: tuple[str, str]
    before: str

    @classmethod
    def by(cls, subject: str) -> Undone:
        """The changes of one thing named by ``subject`` ("this turn", "the command")."""
        return cls((f"which {subject} created",) * 2, (f"which {subject} deleted",) * 2,
                   f"before {subject}")


THIS_TURN = Undone.by("this turn")
THE_COMMAND = Undone.by("the command")
THE_RESTORE = Undone.by("the restore")
#: A restore seen later (in the Files changed window), whose cause is not at hand.
EARLIER_CHANGES = Undone(("which was new", "which were new"),
                         ("which had been deleted", "which had been deleted"), "earlier")
AFTER_MESSAGE = Undone(("which was created after that message",
                        "which were created after that message"),
                       ("which was deleted after that message",
                        "which were deleted after that message"),
                       "before that message")


def undone_by_kind(kind: str) -> Undone:
    """How to name a recorded turn's changes by its kind (``turn``, ``command``, ``restore``)."""
    return {"command": THE_COMMAND, "restore": THE_RESTORE}.get(kind, THIS_TURN)


def shown_files(changes: Sequence[FileChange]) -> list[FileChange]:
    """The files among ``changes`` (folders only when nothing else changed)."""
    return [c for c in changes if c.kind != "dir"] or list(changes)


def name_list(paths: Sequence[str], limit: int = BAR_NAMES) -> str:
    """``a``, ``a and b``, ``a, b and c``, ``a, b, c and 2 more``."""
    if len(paths) > limit:
        return ", ".join(paths[:limit]) + f" and {len(paths) - limit} more"
    if len(paths) <= 1:
        return "".join(paths)
    return ", ".join(paths[:-1]) + f" and {paths[-1]}"


def restore_summary(changes: Sequence[FileChange], undone: Undone) -> str:
    """What an undo or restore did, file by file, in the past tense.

    ``changes`` are the restore's own recorded changes: ``deleted`` (it removed
    the file), ``added`` (it brought the file back), ``modified`` (it put the
    file back). For example "Removed notes.txt, which this turn created."
    """
    groups = _groups(changes)
    sentences: list[str] = []
    if put_back := groups["modified"]:
        as_was = "as it was" if len(put_back) == 1 else "as they were"
        sentences.append(_sentence("Put back", put_back, f" {as_was} {undone.before}"))
    if back := groups["added"]:
        sentences.append(_sentence("Brought back", back, f", {_pick(undone.deleted, back)}"))
    if gone := groups["deleted"]:
        sentences.append(_sentence("Removed", gone, f", {_pick(undone.made, gone)}"))
    return " ".join(sentences) or "Nothing needed putting back."


@dataclass(frozen=True, slots=True)
class RestoreQuestion:
    """The question before a restore: a title line, a list and the answer's button.

    Attributes:
        text: "Restore 3 files to how they were before this message: a, b and c?"
        details: One line per file: what happens to it.
        button: The button that restores ("Restore 3 files").
    """

    text: str
    details: str
    button: str


def restore_question(changes: Sequence[FileChange], *, branch: bool) -> RestoreQuestion:
    """Ask before putting files back as they were before a message (``branch``: and going back)."""
    files = shown_files(changes)
    count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    names = name_list([c.path for c in files])
    text = f"Restore {count} to how they were before this message: {names}?" \
        if len(files) != 1 else f"Restore {names} to how it was before this message?"
    what = {"modified": "put back as it was", "added": "brought back (deleted since)",
            "deleted": "removed (created since)"}
    lines = [f"{c.path}: {what.get(c.change, c.change)}" for c in files[:QUESTION_LINES]]
    if len(files) > QUESTION_LINES:
        lines.append(f"… and {len(files) - QUESTION_LINES} more")
    if branch:
        lines += ["", "The conversation goes back to before this message too: the later "
                      "messages stay on their branch, and this message waits in the box to be "
                      "sent again."]
    lines += ["", f"Undo puts {'it' if len(files) == 1 else 'them'} back again if you change "
                  "your mind."]
    return RestoreQuestion(text, "\n".join(lines), f"Restore {count}")


def _groups(changes: Sequence[FileChange]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {"modified": [], "added": [], "deleted": []}
    for change in shown_files(changes):
        groups.setdefault(change.change, []).append(change.path)
    return groups


def _pick(forms: tuple[str, str], paths: Sequence[str]) -> str:
    return forms[0] if len(paths) == 1 else forms[1]


def _sentence(verb: str, paths: Sequence[str], clause: str) -> str:
    """``Removed a and b, which …`` or, past the limit, ``Removed 5 files, which …: a, b…``."""
    if len(paths) <= BAR_NAMES:
        return f"{verb} {name_list(paths)}{clause}."
    return f"{verb} {len(paths)} files{clause}: {name_list(paths)}."
