"""One conversation's slash commands and skills: what ``/`` offers and what it expands to.

``/name`` in the composer (or in ``POST .../slash-commands/expand``) is looked up
in this order: a custom command file (:mod:`.custom_commands`), then an MCP
server's prompt (``/server:prompt``). Either becomes the message, shown to the
person before it is sent.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.session.commands.custom_commands import CustomCommand, find_commands
from desktop_agent.session.commands.skills import (
    Skill,
    SkillListing,
    find_skills,
    skill_listing,
)
from desktop_agent.session.tools.tool_catalog import WorkdirError, workdir_path

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.mcp_items import McpPrompt
    from desktop_agent.session.mcp.conversation_mcp import ConversationMcp

class UnknownCommand(ValueError):
    """``/name`` names no command; the message says so."""


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One entry of the ``/`` menu."""

    name: str
    kind: str  # command | prompt
    description: str
    argument_hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "description": self.description,
                "argument_hint": self.argument_hint}


@dataclass(frozen=True, slots=True)
class SlashExpansion:
    """What ``/name arguments`` became.

    Attributes:
        name: The command.
        kind: ``command`` or ``prompt``.
        message: The text to send (shown first).
        images: Pictures an MCP prompt holds, as ``data:`` URIs.
        notes: What the person should know (a cut file or prompt).
    """

    name: str
    kind: str
    message: str
    images: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "message": self.message,
                "images": list(self.images), "notes": list(self.notes)}


def user_folder(name: str) -> Path | None:
    """The user's own ``commands/`` or ``skills/`` folder in the data folder."""
    from desktop_agent.appdata.paths import data_dir

    try:
        return data_dir() / name
    except OSError:
        return None


class ConversationCommands:
    """The commands and skills of one conversation.

    Args:
        conversation_id: The conversation.
        settings: Returns its current settings (the working folder, ``skills_off``).
        workdirs_root: Where the app makes working folders.
        mcp: Its MCP servers (their prompts are commands too).
    """

    def __init__(self, conversation_id: str, settings: Callable[[], Mapping[str, Any]],
                 workdirs_root: Path | None, mcp: ConversationMcp) -> None:
        self._conversation_id = conversation_id
        self._settings = settings
        self._root = workdirs_root
        self._mcp = mcp

    def _workdir(self) -> Path | None:
        try:
            return workdir_path(self._conversation_id, self._settings(), self._root)
        except WorkdirError:
            return None

    def custom_commands(self) -> tuple[list[CustomCommand], list[str]]:
        """The command files and the ones skipped (blocking: reads files)."""
        return find_commands(self._workdir(), user_folder("commands"))

    def skills(self) -> tuple[list[Skill], list[str]]:
        """Every skill found (on or off) and the folders skipped (blocking)."""
        return find_skills(self._workdir(), user_folder("skills"))

    def skill_listing(self) -> SkillListing:
        """Every skill, on or off, with its tokens in the system prompt (blocking)."""
        found, skipped = self.skills()
        return skill_listing(found, skipped, self._settings().get("skills_off") or ())

    async def listed(self) -> list[SlashCommand]:
        """The ``/`` menu: command files, then the servers' prompts."""
        (files, _problems), prompts = await asyncio.gather(
            asyncio.to_thread(self.custom_commands), self._mcp.prompts())
        entries: list[SlashCommand] = []
        taken: set[str] = set()
        for command in files:
            if command.name not in taken:
                taken.add(command.name)
                entries.append(SlashCommand(command.name, "command", command.description,
                                            command.argument_hint))
        for prompt in prompts:
            if prompt.command not in taken:
                entries.append(SlashCommand(prompt.command, "prompt",
                                            prompt.description or prompt.title or "",
                                            _hint(prompt)))
        return entries

    async def expand(self, text: str) -> SlashExpansion:
        """What ``/name arguments`` becomes.

        Raises:
            UnknownCommand: No such command, or ``text`` does not start with ``/``.
            ValueError: A prompt's arguments cannot be read.
            NoMcpServers / McpServerError: The prompt's server is missing or refused.
        """
        if not text.startswith("/") or len(text) < 2:
            raise UnknownCommand("A command starts with '/' and its name, e.g. /review.")
        name, _, arguments = text[1:].partition(" ")
        name = name.strip()
        files, _problems = await asyncio.to_thread(self.custom_commands)
        command = next((c for c in files if c.name == name), None)
        if command is not None:
            notes = (f"{command.path.name} is longer than the limit; its end was cut.",) \
                if command.cut else ()
            return SlashExpansion(name, "command", command.expand(arguments), notes=notes)
        server, colon, prompt_name = name.partition(":")
        prompt = None
        if colon:
            prompt = next((p for p in await self._mcp.prompts()
                           if p.server == server and p.name == prompt_name), None)
        if prompt is None:
            raise UnknownCommand(f"There is no command /{name}.")
        got = await self._mcp.get_prompt(server, prompt_name, prompt_arguments(prompt,
                                                                               arguments))
        notes = (f"The prompt was {got.size:,} characters; it was cut.",) if got.cut else ()
        return SlashExpansion(name, "prompt", got.text, got.images, notes)


def _hint(prompt: McpPrompt) -> str | None:
    parts = [f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in prompt.arguments]
    return " ".join(parts) or None


def prompt_arguments(prompt: McpPrompt, typed: str) -> dict[str, str]:
    """A prompt's arguments from what was typed.

    ``key=value`` words, or the whole text for a prompt with one argument.

    Raises:
        ValueError: A word is not ``key=value`` (or names no argument) and the prompt
            has more than one argument.
    """
    typed = typed.strip()
    if not typed:
        return {}
    names = [a.name for a in prompt.arguments]
    try:
        words = shlex.split(typed)
    except ValueError:
        words = typed.split()
    pairs = [w.partition("=") for w in words]
    if all(sep and key in names for key, sep, _ in pairs):
        return {key: value for key, _, value in pairs}
    if len(names) == 1:
        return {names[0]: typed}
    raise ValueError(f"Give the arguments of /{prompt.command} as name=value "
                     f"({', '.join(names) or 'it takes none'}).")
