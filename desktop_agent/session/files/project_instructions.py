"""Project instructions: the working folder's ``AGENTS.md`` in the system prompt.

``AGENTS.md`` is the open convention Codex, Cline, Goose and others read for
"how to work in this project" (build commands, style, what not to touch);
``CLAUDE.md`` is read when there is no ``AGENTS.md``. Its text is added to the
conversation's system prompt on every turn, re-read when the file changed
since the last turn (by size and modification time), and capped at
:data:`MAX_INSTRUCTION_BYTES` (Codex's default for the same file): on a small
local model a long file would take the window before the conversation starts,
so the settings show what it costs in tokens and offer a switch
(:data:`PROJECT_INSTRUCTIONS_SETTING`) to leave it out.

Qt-free and FastAPI-free: the session builds the prompt with it, the window
and the REST server only report :class:`ProjectInstructions`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any

#: File names read, in order of preference (the first one found is used).
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")

#: At most this much of the file is sent (32 KiB, as Codex's ``project_doc_max_bytes``).
MAX_INSTRUCTION_BYTES = 32 * 1024

#: The conversation setting that leaves the file out when false (default: included).
PROJECT_INSTRUCTIONS_SETTING = "project_instructions"

_HEADING = "# Project instructions ({name})"
_CUT_NOTE = "[… the rest of {name} was left out: only its first {cap:,} bytes are sent]"


@dataclass(frozen=True, slots=True)
class ProjectInstructions:
    """The instruction file of a working folder, as it goes into the prompt.

    Attributes:
        path: The file read.
        text: Its text as sent (cut at the cap, on a character boundary).
        size: The file's size on disk, in bytes.
        truncated: Whether the file was longer than the cap.
        included: Whether the conversation sends it (its switch is on).
    """

    path: Path
    text: str
    size: int
    truncated: bool
    included: bool = True

    @property
    def cap_bytes(self) -> int:
        """The most of the file that is sent."""
        return MAX_INSTRUCTION_BYTES

    @property
    def name(self) -> str:
        """The file's name (``AGENTS.md`` or ``CLAUDE.md``)."""
        return self.path.name

    def prompt_section(self) -> str:
        """The text as it is added to the system prompt (a heading, then the file)."""
        section = f"{_HEADING.format(name=self.name)}\n\n{self.text.strip()}"
        if self.truncated:
            section += "\n\n" + _CUT_NOTE.format(name=self.name, cap=MAX_INSTRUCTION_BYTES)
        return section

    def tokens(self) -> int:
        """What the section costs in every request (the app's tokenizer; blocking)."""
        from desktop_agent.core.context.tokens import count_text_tokens

        return count_text_tokens(self.prompt_section())

    def as_dict(self) -> dict[str, Any]:
        """The figures a front end reports (no text: it may be long; tokens counted here)."""
        return {"file": self.name, "path": str(self.path), "bytes": self.size,
                "cap_bytes": MAX_INSTRUCTION_BYTES, "truncated": self.truncated,
                "included": self.included, "tokens": self.tokens()}


def included(settings: Mapping[str, Any]) -> bool:
    """Whether the conversation's settings send the instruction file (default yes)."""
    return settings.get(PROJECT_INSTRUCTIONS_SETTING) is not False


_cache: dict[Path, tuple[tuple[int, int], str, bool]] = {}
_cache_lock = threading.Lock()


def read_instructions(folder: Path | None,
                      settings: Mapping[str, Any] | None = None) -> ProjectInstructions | None:
    """The instruction file of ``folder``; None when it has none (or no folder).

    Blocking (reads the disk; the session calls it in a worker thread). The
    text is read again only when the file's size or modification time changed,
    so an edit between turns reaches the next turn and an unchanged file costs
    one ``stat``. An unreadable or non-UTF-8 file counts as none (a warning in
    words would be noise on every turn; the settings show no file), and so does
    a symlink: the file is read by the app, outside the sandbox, so a link
    planted by a command must not bring a file from elsewhere into the prompt.
    """
    if folder is None:
        return None
    for name in INSTRUCTION_FILES:
        path = folder / name
        try:
            stat = path.lstat()
        except OSError:
            continue
        if not S_ISREG(stat.st_mode):
            continue  # a symlink too: see _read
        read = _read(path, (stat.st_size, stat.st_mtime_ns))
        if read is None:
            continue
        text, truncated = read
        return ProjectInstructions(path, text, stat.st_size, truncated,
                                   included(settings or {}))
    return None


def _read(path: Path, stamp: tuple[int, int]) -> tuple[str, bool] | None:
    with _cache_lock:
        cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1], cached[2]
    try:
        # Never through a symlink: a command the model ran could plant
        # AGENTS.md -> ~/.ssh/id_rsa, and the app (outside the sandbox) would
        # read it into the prompt. O_NOFOLLOW closes the gap since the lstat.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(descriptor, "rb") as handle:
            if not S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            raw = handle.read(MAX_INSTRUCTION_BYTES + 1)
    except OSError:
        return None
    truncated = len(raw) > MAX_INSTRUCTION_BYTES
    raw = raw[:MAX_INSTRUCTION_BYTES]
    text = _decoded(raw, truncated)
    if text is None:
        return None
    with _cache_lock:
        _cache[path] = (stamp, text, truncated)
    return text, truncated


def _decoded(raw: bytes, truncated: bool) -> str | None:
    """UTF-8 text; a cut may split the last character, which is then dropped."""
    for cut in range(4 if truncated else 1):
        try:
            return raw[:len(raw) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def with_instructions(system_prompt: str | None,
                      instructions: ProjectInstructions | None) -> str | None:
    """The system prompt with the instruction file after the person's own prompt.

    After, not before: the person's prompt is the conversation's and changes
    least, so the request's prefix stays the same (and cached) when only the
    file changes.
    """
    if instructions is None or not instructions.included or not instructions.text.strip():
        return system_prompt or None
    section = instructions.prompt_section()
    return f"{system_prompt}\n\n{section}" if system_prompt else section


def project_instructions_for(conversation_id: str, settings: Mapping[str, Any],
                     workdirs_root: Path | None = None) -> ProjectInstructions | None:
    """The instruction file of a conversation's working folder (blocking; never raises).

    A folder that cannot be used gives none: the turn itself reports why.
    """
    from desktop_agent.session.tools.tool_catalog import WorkdirError, workdir_path

    try:
        folder = workdir_path(conversation_id, settings, workdirs_root)
    except WorkdirError:
        return None
    if not os.path.isdir(folder):
        return None
    return read_instructions(folder, settings)
