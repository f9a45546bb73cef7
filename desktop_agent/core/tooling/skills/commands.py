"""Custom slash commands: Markdown files whose text becomes the message.

In the app they are found here, first found wins: the working folder's
``.agents/commands/`` and ``.claude/commands/`` (as Claude Code users have
them), then the user's own ``commands/`` in the data folder. ``review.md``
is ``/review``; ``frontend/review.md`` is ``/frontend:review``. The body may
use ``$ARGUMENTS`` (everything typed after the command) and ``$1`` ... ``$9``
(the words, quotes kept together); when it uses neither, what was typed is
added after it. A script names its own folders
(``AgentOptions(commands_dirs=[...])``). Front matter may give ``description``, ``argument-hint``,
``allowed-tools`` and ``model`` (shown; the conversation's own settings still
decide). A command's text is expanded once and never read for commands
again, so a command that names itself cannot loop.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop_agent.core.tooling.skills.markdown_file import (
    UnreadableFile,
    read_markdown,
    text_value,
)

#: Where a working folder keeps its commands, in the order they are looked up.
PROJECT_FOLDERS = (".agents/commands", ".claude/commands")
#: Files looked at in one folder, at most (a huge tree is not walked further).
MAX_FILES = 500
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_POSITIONAL = re.compile(r"\$([1-9])")


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """One command file.

    Attributes:
        name: What follows ``/`` (``review``, ``frontend:review``).
        description: Its front matter's description, or its first line.
        body: The text that becomes the message.
        path: The file.
        scope: ``project`` or ``user``.
        argument_hint: What to type after it, if the file says.
        allowed_tools: The tools the file names, if any (shown only).
        model: The model the file names, if any (shown only).
        cut: Whether the file was cut at the size limit.
    """

    name: str
    description: str
    body: str
    path: Path
    scope: str
    argument_hint: str | None = None
    allowed_tools: str | None = None
    model: str | None = None
    cut: bool = False

    @property
    def arguments(self) -> tuple[str, ...]:
        """The names of its ``$1`` ... ``$9`` (from ``argument-hint`` when it names as many).

        Empty for a command that takes everything typed (``$ARGUMENTS``) or nothing.
        """
        count = max((int(n) for n in _POSITIONAL.findall(self.body)), default=0)
        if not count:
            return ()
        named = [w.strip("[]<>") for w in (self.argument_hint or "").split()]
        named = [w for w in named if w]
        return tuple(named) if len(named) == count else \
            tuple(f"argument {i}" for i in range(1, count + 1))

    def expand(self, arguments: str, words: list[str] | None = None) -> str:
        """The message for ``/name arguments`` (``words``: the ``$1``... given one by one)."""
        uses_all = "$ARGUMENTS" in self.body
        uses_words = _POSITIONAL.search(self.body) is not None
        text = self.body.replace("$ARGUMENTS", arguments)
        if uses_words:
            if words is None:
                try:
                    words = shlex.split(arguments)
                except ValueError:  # an unclosed quote: plain words
                    words = arguments.split()
            text = _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1]
                                   if int(m.group(1)) <= len(words) else "", text)
        if arguments.strip() and not uses_all and not uses_words:
            text = f"{text.rstrip()}\n\n{arguments.strip()}"
        return text.strip()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "scope": self.scope,
                "path": str(self.path), "argument_hint": self.argument_hint,
                "allowed_tools": self.allowed_tools, "model": self.model, "cut": self.cut}


def find_commands(workdir: Path | None, user_folder: Path | None,
                  ) -> tuple[list[CustomCommand], list[str]]:
    """The commands of a working folder and of the user, and the files that were skipped.

    Blocking (reads files): call it in a worker thread.
    """
    folders: list[tuple[Path, str]] = []
    if workdir is not None:
        folders += [(workdir / sub, "project") for sub in PROJECT_FOLDERS]
    if user_folder is not None:
        folders.append((user_folder, "user"))
    return commands_in(folders)


def commands_in(folders: Sequence[tuple[Path, str]],
                ) -> tuple[list[CustomCommand], list[str]]:
    """The commands of these folders (each with its scope), first found wins, and those skipped.

    Blocking (reads files): call it in a worker thread.
    """
    found: dict[str, CustomCommand] = {}
    problems: list[str] = []
    for folder, scope in folders:
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.rglob("*.md"))[:MAX_FILES]:
            parts = path.relative_to(folder).with_suffix("").parts
            if not all(_NAME.match(p) for p in parts):
                problems.append(f"{path}: a command's name uses letters, digits, '-', '_' "
                                "and '.' only.")
                continue
            name = ":".join(parts)
            if name in found:
                continue
            try:
                read = read_markdown(path)
            except UnreadableFile as exc:
                problems.append(str(exc))
                continue
            first = next((line.strip("# ").strip() for line in read.body.splitlines()
                          if line.strip()), "")
            found[name] = CustomCommand(
                name, text_value(read.meta, "description", 300) or first[:300], read.body,
                path, scope, text_value(read.meta, "argument-hint", 200),
                text_value(read.meta, "allowed-tools", 1000), text_value(read.meta, "model", 200),
                read.cut)
    return sorted(found.values(), key=lambda c: c.name), problems
