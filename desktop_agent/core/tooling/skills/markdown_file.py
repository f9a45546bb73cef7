"""Reading the Markdown files of commands and skills: capped, never through a link.

Both formats (Claude Code's and Codex's command files, Anthropic's ``SKILL.md``)
are Markdown with optional YAML front matter between ``---`` lines; the front
matter is read with PyYAML's safe loader, so a file can name values but never
build objects.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The most of one command or skill file that is read (a bigger one is cut, and said).
FILE_LIMIT = 64 * 1024


class UnreadableFile(Exception):
    """A command or skill file that cannot be used; the message names it and says why."""


@dataclass(frozen=True, slots=True)
class MarkdownFile:
    """A command or skill file as read.

    Attributes:
        path: Where it is.
        meta: Its front matter (empty when it has none).
        body: The Markdown after the front matter.
        has_front_matter: Whether it began with a front matter block.
        cut: Whether the file was longer than :data:`FILE_LIMIT` and cut there.
    """

    path: Path
    meta: dict[str, Any]
    body: str
    has_front_matter: bool
    cut: bool


def read_text(path: Path, limit: int = FILE_LIMIT) -> tuple[str, bool]:
    """A text file's first ``limit`` bytes (not following a link) and whether it was cut.

    Raises:
        UnreadableFile: It is a link, not a regular file, or not UTF-8.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise UnreadableFile(f"{path} cannot be read ({exc.strerror or exc}; "
                             "links are not followed).") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnreadableFile(f"{path} is not a regular file.")
        raw = handle.read(limit + 1)
    cut = len(raw) > limit
    try:  # a cut may split a character: only then is a broken end forgiven
        text = raw[:limit].decode("utf-8", errors="ignore" if cut else "strict")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"{path} is not UTF-8 text.") from exc
    return text.replace("\r\n", "\n"), cut


def read_markdown(path: Path, limit: int = FILE_LIMIT) -> MarkdownFile:
    """Read ``path`` (not following a link), its front matter parsed.

    Raises:
        UnreadableFile: It is a link, not a regular file, not UTF-8, or its front
            matter is not a YAML mapping.
    """
    text, cut = read_text(path, limit)
    meta, body, has_front = _split(path, text)
    return MarkdownFile(path, meta, body, has_front, cut)


def _split(path: Path, text: str) -> tuple[dict[str, Any], str, bool]:
    if not text.startswith("---\n"):
        return {}, text, False
    end = text.find("\n---", 4)
    if end == -1:
        raise UnreadableFile(f"{path}: its front matter has no closing '---' line.")
    import yaml

    try:
        meta = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError as exc:
        raise UnreadableFile(f"{path}: its front matter is not valid YAML "
                             f"({str(exc).splitlines()[0]}).") from exc
    if not isinstance(meta, dict):
        raise UnreadableFile(f"{path}: its front matter is not a list of 'key: value' lines.")
    rest = text[end + 4:]
    return {str(k): v for k, v in meta.items()}, rest.split("\n", 1)[1] if "\n" in rest \
        else "", True


def text_value(meta: dict[str, Any], key: str, limit: int) -> str | None:
    """A front matter value as one line of text, at most ``limit`` characters."""
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    return " ".join(str(value).split())[:limit] or None
