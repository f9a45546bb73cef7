"""Confinement of the built-in tools to one conversation's working directory.

Every path a file tool receives goes through :meth:`Workdir.resolve`, which
follows symlinks and ``..`` first and only then checks that the result is
still inside the workdir. Checking the text of a path is not enough: a
symlink planted in the workdir can point anywhere.

A workdir is pinned by its inode when made: every later walk (and the
sandbox's bind mount) checks that the folder it opened is still that one, so
a folder swapped for a link to elsewhere after the check is refused, not
followed. Folders named as *hidden* (the app passes its data folder) do not
exist for the tools even when they lie inside the workdir.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from desktop_agent.core.errors import AgentError


class BuiltinToolError(AgentError):
    """A built-in tool could not do what it was asked; the message is for the model."""


class OutsideWorkdirError(BuiltinToolError):
    """A path leads outside the conversation's working directory."""


class Workdir:
    """The folder a conversation's file and shell tools may touch.

    Args:
        root: The folder.
        hidden: Folders the tools must see as absent even inside ``root``.

    Attributes:
        root: The workdir as an absolute path with every symlink resolved.
        identity: ``(st_dev, st_ino)`` of the folder when this was made.
        hidden: Identities of the hidden folders that lie inside ``root``.
    """

    def __init__(self, root: str | os.PathLike[str],
                 hidden: Iterable[str | os.PathLike[str]] = ()) -> None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise BuiltinToolError(f"the working directory {str(path)!r} is not a folder")
        self.root = path.resolve(strict=True)
        info = os.stat(self.root)
        self.identity = (info.st_dev, info.st_ino)
        self.hidden_paths = tuple(p for p in (Path(h).expanduser().resolve() for h in hidden)
                                  if p != self.root and p.is_relative_to(self.root))
        self.hidden: frozenset[tuple[int, int]] = frozenset(
            (i.st_dev, i.st_ino) for i in (_stat_or_none(p) for p in self.hidden_paths)
            if i is not None)

    def is_hidden(self, info: os.stat_result) -> bool:
        """True when ``info`` (an ``fstat``/``lstat``) is one of the hidden folders."""
        return bool(self.hidden) and (info.st_dev, info.st_ino) in self.hidden

    def check_pinned(self, info: os.stat_result) -> None:
        """Refuse a descriptor of the root that is not the folder pinned when this was made.

        Raises:
            BuiltinToolError: The folder was replaced (for example by a link to elsewhere).
        """
        if (info.st_dev, info.st_ino) != self.identity:
            raise BuiltinToolError(
                f"the working directory {str(self.root)!r} was replaced since the turn "
                "started (a link or another folder now stands there); nothing was done")

    def resolve(self, path: str) -> Path:
        """Turn a path the model gave into an absolute path inside the workdir.

        Relative paths are taken from the workdir; absolute paths are accepted
        only when they lie inside it. Symlinks are followed (also dangling ones,
        as far as they go), so a link that leads out is refused like ``..``.

        Raises:
            OutsideWorkdirError: The path, once resolved, is not inside the workdir.
            BuiltinToolError: The path is empty or malformed.
        """
        if not isinstance(path, str) or not path.strip():
            raise BuiltinToolError("a path is required")
        if "\x00" in path:
            raise BuiltinToolError("the path contains a NUL character")
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # symlink loops end up here
            raise BuiltinToolError(f"cannot resolve {path!r}: {exc}") from exc
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise OutsideWorkdirError(
                f"{path!r} is outside the working directory {str(self.root)!r}; "
                "file tools only work inside it"
            )
        return resolved

    def contains(self, path: Path) -> bool:
        """True when ``path`` (followed through symlinks) stays inside the workdir."""
        try:
            resolved = path.resolve(strict=False)
        except (OSError, RuntimeError):
            return False
        return resolved == self.root or resolved.is_relative_to(self.root)

    def display(self, path: Path) -> str:
        """The path as the model should see it: relative to the workdir, with ``/``."""
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return str(path)
        text = relative.as_posix()
        return text if text else "."


def _stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None
