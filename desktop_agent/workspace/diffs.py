"""A file's diff from its old and new bytes, for approval cards, REST and checkpoints.

One :class:`FileDiff` says what a change does to one file: its :class:`DiffKind`
(an edit, a new file, a deletion, a binary file, a file over the size cap), the
unified hunks with the line numbers of both sides, the ``+N −M`` counts and, for
the kinds a person cannot read line by line, one sentence in words. It is plain
data (``to_dict``/``from_dict``) so that it can live in a message's metadata and
show again after a restart or an import, and it renders as a plain-text unified
diff for REST.

:mod:`~desktop_agent.workspace.line_matching` does the matching: patience
anchors (lines that occur once on each side) pin the unchanged stretches, and
:mod:`difflib`'s ``SequenceMatcher`` matches only the short gaps between them
(alone it slows down badly on a long file with changes spread through it; that
module says why). Its opcodes are grouped into the unified hunks as
``SequenceMatcher.get_grouped_opcodes`` groups them. ``bench/diff_render.py``
prints what a 10,000-line diff costs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from desktop_agent.workspace.line_matching import group_opcodes, opcodes

#: Largest side (in bytes) diffed line by line; bigger files get a sentence instead.
MAX_DIFF_BYTES = 2 * 1024 * 1024
#: Lines of unchanged context around each change, as in ``diff -u``.
CONTEXT_LINES = 3
#: How much of the start of a file is searched for a NUL byte (the usual binary test,
#: the same one the built-in file tools use).
_SNIFF_BYTES = 8_192


class DiffKind(enum.StrEnum):
    """What a change does to a file."""

    EDIT = "edit"
    NEW = "new"
    DELETE = "delete"
    BINARY = "binary"
    OVER_CAP = "over_cap"


class DiffLine(NamedTuple):
    r"""One line of a hunk (a named tuple: a 10,000-line diff makes 20,000 of them).

    Attributes:
        sign: ``" "`` (unchanged), ``"-"`` (removed) or ``"+"`` (added).
        old_no: The line's number in the old file, or None for an added line.
        new_no: The line's number in the new file, or None for a removed line.
        text: The line without its line ending.
        newline: False when this is the file's last line and it has no line
            ending (``\\ No newline at end of file`` in the unified text).
    """

    sign: str
    old_no: int | None
    new_no: int | None
    text: str
    newline: bool = True


@dataclass(frozen=True, slots=True)
class Hunk:
    """A run of changes with its context, as one ``@@`` block of a unified diff.

    Attributes:
        old_start: First old line shown (0 when the old side is empty).
        old_count: Old lines in the hunk.
        new_start: First new line shown (0 when the new side is empty).
        new_count: New lines in the hunk.
        lines: The hunk's lines in order.
    """

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[DiffLine, ...]

    @property
    def header(self) -> str:
        """The ``@@ -a,b +c,d @@`` line."""
        return f"@@ -{_range(self.old_start, self.old_count)} " \
               f"+{_range(self.new_start, self.new_count)} @@"


@dataclass(frozen=True, slots=True)
class SideBySideRow:
    """One row of a side-by-side view: the old line on the left, the new on the right.

    A removed line and an added line at the same place share a row (the usual
    pairing of ``-`` and ``+`` runs); either side is None where the other side
    has a line of its own.
    """

    left: DiffLine | None
    right: DiffLine | None


@dataclass(frozen=True, slots=True)
class FileDiff:
    """What a change does to one file.

    Attributes:
        path: The file's path as the person knows it (relative to the working folder).
        kind: What the change does.
        hunks: The unified hunks (empty for a deletion, a binary file, a file over the
            cap, and for a change that changes nothing).
        added: Lines added (for a new file: all its lines).
        removed: Lines removed (for a deletion: all the old file's lines, when it is text).
        old_size: Bytes before (None: the file did not exist).
        new_size: Bytes after (None: the file is gone).
        cap: The byte cap in force when the diff was made (said in the over-cap sentence).
    """

    path: str
    kind: DiffKind
    hunks: tuple[Hunk, ...] = ()
    added: int = 0
    removed: int = 0
    old_size: int | None = None
    new_size: int | None = None
    cap: int = MAX_DIFF_BYTES

    @property
    def counts(self) -> str:
        """``+12 −3``: lines added and removed (a real minus sign, as the card shows it)."""
        return f"+{self.added} \u2212{self.removed}"

    @property
    def changed(self) -> bool:
        """False for an edit that leaves the file as it was."""
        return self.kind is not DiffKind.EDIT or bool(self.hunks)

    @property
    def summary(self) -> str:
        """One line in words: what the change does, for every kind."""
        if self.kind is DiffKind.DELETE:
            size = _size_words(self.old_size or 0)
            lines = f", {self.removed} line{_s(self.removed)}" if self.removed else ""
            return f"Deletes {self.path} ({size}{lines})."
        if self.kind is DiffKind.BINARY:
            return f"Binary file {self.path}: {_sizes(self.old_size, self.new_size)}; " \
                   "no line diff."
        if self.kind is DiffKind.OVER_CAP:
            return f"{self.path} is too large to diff ({_sizes(self.old_size, self.new_size)}; " \
                   f"the cap is {_size_words(self.cap)})."
        if self.kind is DiffKind.NEW:
            return f"Creates {self.path} ({self.added} line{_s(self.added)})."
        if not self.hunks:
            return f"No change to {self.path}."
        return f"Changes {self.path} ({self.counts})."

    def unified_text(self) -> str:
        """The diff as plain text: ``diff -u`` for edits and new files, the summary otherwise."""
        if self.kind not in (DiffKind.EDIT, DiffKind.NEW) or not self.hunks:
            return self.summary + "\n"
        old_name = "/dev/null" if self.kind is DiffKind.NEW else f"a/{self.path}"
        out = [f"--- {old_name}\n", f"+++ b/{self.path}\n"]
        for hunk in self.hunks:
            out.append(hunk.header + "\n")
            for line in hunk.lines:
                out.append(f"{line.sign}{line.text}\n")
                if not line.newline:
                    out.append("\\ No newline at end of file\n")
        return "".join(out)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data, for message metadata and REST."""
        return {
            "path": self.path,
            "kind": self.kind.value,
            "added": self.added,
            "removed": self.removed,
            "old_size": self.old_size,
            "new_size": self.new_size,
            "cap": self.cap,
            "summary": self.summary,
            "hunks": [
                [h.old_start, h.old_count, h.new_start, h.new_count,
                 [[ln.sign, ln.old_no, ln.new_no, ln.text, ln.newline] for ln in h.lines]]
                for h in self.hunks
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FileDiff:
        """Read back what :meth:`to_dict` wrote.

        Raises:
            ValueError: The data is not a diff this module wrote.
        """
        try:
            hunks = tuple(
                Hunk(int(h[0]), int(h[1]), int(h[2]), int(h[3]),
                     tuple(DiffLine(str(ln[0]), ln[1], ln[2], str(ln[3]), bool(ln[4]))
                           for ln in h[4]))
                for h in data.get("hunks", ())
            )
            return cls(
                path=str(data["path"]), kind=DiffKind(data["kind"]), hunks=hunks,
                added=int(data.get("added", 0)), removed=int(data.get("removed", 0)),
                old_size=_opt_int(data.get("old_size")), new_size=_opt_int(data.get("new_size")),
                cap=int(data.get("cap", MAX_DIFF_BYTES)),
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ValueError(f"not a stored file diff: {exc}") from exc


def diff_bytes(path: str, old: bytes | None, new: bytes | None, *,
               cap: int = MAX_DIFF_BYTES, context: int = CONTEXT_LINES,
               blank: Callable[[str], str] | None = None) -> FileDiff:
    """The diff of one file from its old and new content (None: the file is absent).

    Args:
        path: The file's path as the person should read it.
        old: The content before, or None when the file did not exist.
        new: The content after, or None when the file is deleted.
        cap: Largest side diffed line by line.
        context: Unchanged lines shown around each change.
        blank: Applied to each side's text before it is diffed: the session
            passes one that blanks the conversation's secrets out, so no diff
            shown or sent (or kept in a message) holds one. Whole sides, not
            lines: a secret wrapped over lines (base64) is found too.

    Raises:
        ValueError: Both sides are absent (there is no file to speak of).
    """
    if old is None and new is None:
        raise ValueError(f"{path}: no content on either side to diff")
    old_size = None if old is None else len(old)
    new_size = None if new is None else len(new)
    if new is None:
        assert old is not None
        removed = 0 if _is_binary(old) or len(old) > cap else len(_Side(_decode(old)).lines)
        return FileDiff(path, DiffKind.DELETE, removed=removed, old_size=old_size, cap=cap)
    if _is_binary(new) or (old is not None and _is_binary(old)):
        return FileDiff(path, DiffKind.BINARY, old_size=old_size, new_size=new_size, cap=cap)
    if len(new) > cap or (old is not None and len(old) > cap):
        return FileDiff(path, DiffKind.OVER_CAP, old_size=old_size, new_size=new_size, cap=cap)
    old_text = None if old is None else _decode(old)
    new_text = _decode(new)
    if blank is not None:
        old_text = None if old_text is None else blank(old_text)
        new_text = blank(new_text)
    return diff_text(path, old_text, new_text,
                     context=context, old_size=old_size, new_size=new_size, cap=cap)


def diff_text(path: str, old: str | None, new: str, *, context: int = CONTEXT_LINES,
              old_size: int | None = None, new_size: int | None = None,
              cap: int = MAX_DIFF_BYTES) -> FileDiff:
    """The diff of two texts (``old`` None: a new file, shown as all added).

    The sizes default to the UTF-8 length of each side; :func:`diff_bytes` passes
    the real byte counts.
    """
    new_side = _Side(new)
    if new_size is None:
        new_size = len(new.encode("utf-8", errors="surrogateescape"))
    if old is None:
        count = len(new_side.lines)
        lines = tuple(new_side.line("+", None, j) for j in range(count))
        hunks = (Hunk(0, 0, 1, count, lines),) if count else ()
        return FileDiff(path, DiffKind.NEW, hunks, added=count, new_size=new_size, cap=cap)
    old_side = _Side(old)
    if old_size is None:
        old_size = len(old.encode("utf-8", errors="surrogateescape"))
    hunks_list: list[Hunk] = []
    added = removed = 0
    codes = opcodes(old_side.lines, new_side.lines)
    for group in group_opcodes(codes, context):
        lines_list: list[DiffLine] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines_list.extend(old_side.line(" ", i, j1 + i - i1) for i in range(i1, i2))
                continue
            lines_list.extend(old_side.line("-", i, None) for i in range(i1, i2))
            lines_list.extend(new_side.line("+", None, j) for j in range(j1, j2))
            removed += i2 - i1
            added += j2 - j1
        first, last = group[0], group[-1]
        old_count, new_count = last[2] - first[1], last[4] - first[3]
        hunks_list.append(Hunk(first[1] + 1 if old_count else first[1], old_count,
                               first[3] + 1 if new_count else first[3], new_count,
                               tuple(lines_list)))
    return FileDiff(path, DiffKind.EDIT, tuple(hunks_list), added=added, removed=removed,
                    old_size=old_size, new_size=new_size, cap=cap)


def side_by_side_rows(hunk: Hunk) -> list[SideBySideRow]:
    """Pair a hunk's lines for a two-column view.

    Unchanged lines sit on both sides; each run of removed lines is laid beside the
    run of added lines that follows it, the longer run leaving blanks on the other side.
    """
    rows: list[SideBySideRow] = []
    lines = hunk.lines
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.sign == " ":
            rows.append(SideBySideRow(line, line))
            i += 1
            continue
        removed: list[DiffLine] = []
        while i < len(lines) and lines[i].sign == "-":
            removed.append(lines[i])
            i += 1
        added: list[DiffLine] = []
        while i < len(lines) and lines[i].sign == "+":
            added.append(lines[i])
            i += 1
        for k in range(max(len(removed), len(added))):
            rows.append(SideBySideRow(removed[k] if k < len(removed) else None,
                                      added[k] if k < len(added) else None))
    return rows


def iter_lines(diff: FileDiff) -> Iterator[tuple[Hunk, DiffLine]]:
    """Every line of every hunk with its hunk, for views that render in chunks."""
    for hunk in diff.hunks:
        for line in hunk.lines:
            yield hunk, line


class _Side:
    """One side's lines (endings kept, for matching), and a maker of its DiffLines."""

    __slots__ = ("last_has_newline", "lines", "texts")

    def __init__(self, text: str) -> None:
        # Only "\n" splits (str.splitlines also splits on form feeds and U+2028).
        parts = text.split("\n")
        self.last_has_newline = not parts[-1]
        if self.last_has_newline:
            parts.pop()
        self.texts = [part.removesuffix("\r") for part in parts]
        self.lines = [part + "\n" for part in parts]
        if not self.last_has_newline:
            self.lines[-1] = parts[-1]

    def line(self, sign: str, old: int | None, new: int | None) -> DiffLine:
        """The DiffLine for this side's line ``old`` or ``new`` (0-based; the other None)."""
        index = old if old is not None else new
        assert index is not None
        newline = self.last_has_newline or index != len(self.texts) - 1
        return DiffLine(sign, None if old is None else old + 1,
                        None if new is None else new + 1, self.texts[index], newline)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _is_binary(data: bytes) -> bool:
    return b"\x00" in data[:_SNIFF_BYTES]


def _range(start: int, count: int) -> str:
    return str(start) if count == 1 else f"{start},{count}"


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _sizes(old: int | None, new: int | None) -> str:
    if old is None:
        return f"new, {_size_words(new or 0)}"
    if new is None:
        return f"{_size_words(old)}, deleted"
    if old == new:
        return _size_words(new)
    return f"{_size_words(old)} \u2192 {_size_words(new)}"


def _size_words(size: int) -> str:
    if size < 1024:
        return f"{size} byte{_s(size)}"
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= scale:
            value = round(size / scale, 1)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"  # pragma: no cover - unreachable
