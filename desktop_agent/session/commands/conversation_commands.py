"""One conversation's slash commands and skills: what ``/`` offers and what it expands to.

``/name`` in the composer (or in ``POST .../slash-commands/expand``) is looked up
in this order: a built-in (:mod:`.builtin_commands`, run by the front end), a custom
command file (:mod:`.custom_commands`), then an MCP
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

from desktop_agent.core.tooling.skills.commands import CustomCommand, find_commands
from desktop_agent.core.tooling.skills.skills import (
    Skill,
    SkillListing,
    find_skills,
    skill_listing,
)
from desktop_agent.session.commands.builtin_commands import (
    BUILTIN_COMMANDS,
    BUILTIN_NAMES,
    REST_ROUTES,
    help_text,
)
from desktop_agent.session.tools.tool_catalog import WorkdirError, workdir_path

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.mcp_items import McpPrompt
    from desktop_agent.session.mcp.conversation_mcp import ConversationMcp

class UnknownCommand(ValueError):
    """``/name`` names no command; the message says so."""


@dataclass(frozen=True, slots=True)
class SlashArgument:
    """One argument a command or prompt asks for (a field of the argument form).

    Attributes:
        name: Its name (a prompt's argument name, or a command's ``$1``... name).
        description: What to give, if the server or file says.
        required: Whether it must be given (a command's ``$1``... are all optional).
    """

    name: str
    description: str = ""
    required: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "required": self.required}


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One entry of the ``/`` menu.

    Attributes:
        name: What follows ``/``.
        kind: ``builtin``, ``command`` (a file) or ``prompt`` (an MCP server's).
        description: What it does.
        argument_hint: What to type after it.
        arguments: Its named arguments (the form asks for them), in the order given.
    """

    name: str
    kind: str
    description: str
    argument_hint: str | None = None
    arguments: tuple[SlashArgument, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "description": self.description,
                "argument_hint": self.argument_hint,
                "arguments": [a.to_dict() for a in self.arguments]}


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

    async def listed(self, front: str = "window") -> list[SlashCommand]:
        """The ``/`` menu: the built-ins, the command files, then the servers' prompts.

        Args:
            front: ``window`` lists every built-in; ``rest`` only those the REST
                server runs (:data:`.builtin_commands.REST_ROUTES`).
        """
        (files, _problems), prompts = await asyncio.gather(
            asyncio.to_thread(self.custom_commands), self._mcp.prompts())
        entries = [SlashCommand(c.name, "builtin", c.description) for c in BUILTIN_COMMANDS
                   if front != "rest" or c.name in REST_ROUTES]
        taken: set[str] = set(BUILTIN_NAMES)
        for command in files:
            if command.name not in taken:
                taken.add(command.name)
                entries.append(SlashCommand(
                    command.name, "command", command.description, command.argument_hint,
                    tuple(SlashArgument(name) for name in command.arguments)))
        for prompt in prompts:
            if prompt.command not in taken:
                arguments = sorted(prompt.arguments, key=lambda a: not a.required)
                entries.append(SlashCommand(
                    prompt.command, "prompt", prompt.description or prompt.title or "",
                    _hint(prompt), tuple(SlashArgument(a.name, a.description or "", a.required)
                                         for a in arguments)))
        return entries

    async def help_text(self) -> str:
        """``/help``: every command, prompt and skill turned on, as Markdown."""
        listed, (skills, _skipped) = await asyncio.gather(self.listed(),
                                                          asyncio.to_thread(self.skills))
        off = set(self._settings().get("skills_off") or ())
        return help_text([(c.name, c.kind, c.description) for c in listed],
                         [(s.name, s.description) for s in skills if s.name not in off])

    async def expand(self, text: str,
                     values: Mapping[str, str] | None = None) -> SlashExpansion:
        """What ``/name arguments`` becomes.

        Args:
            text: ``/name`` and, unless ``values`` are given, its arguments as typed.
            values: The arguments by name, as the argument form gives them (empty
                ones are left out).

        Raises:
            UnknownCommand: No such command, or ``text`` does not start with ``/``.
            ValueError: A prompt's arguments cannot be read, or ``text`` names a
                built-in (run by the front end, not expanded).
            NoMcpServers / McpServerError: The prompt's server is missing or refused.
        """
        if not text.startswith("/") or len(text) < 2:
            raise UnknownCommand("A command starts with '/' and its name, e.g. /review.")
        name, _, arguments = text[1:].partition(" ")
        name = name.strip()
        if name in BUILTIN_NAMES:
            route = REST_ROUTES.get(name)
            raise ValueError(f"/{name} is a built-in command: it is run, not sent"
                             + (f" ({route} over REST)." if route else
                                " (in the window only)."))
        given = {k: v for k, v in (values or {}).items() if v.strip()}
        files, _problems = await asyncio.to_thread(self.custom_commands)
        command = next((c for c in files if c.name == name), None)
        if command is not None:
            notes = (f"{command.path.name} is longer than the limit; its end was cut.",) \
                if command.cut else ()
            if values is not None:
                words = [values.get(a, "") for a in command.arguments]
                message = command.expand(" ".join(w for w in words if w), words)
            else:
                message = command.expand(arguments)
            return SlashExpansion(name, "command", message, notes=notes)
        server, colon, prompt_name = name.partition(":")
        prompt = None
        if colon:
            prompt = next((p for p in await self._mcp.prompts()
                           if p.server == server and p.name == prompt_name), None)
        if prompt is None:
            raise UnknownCommand(f"There is no command /{name}.")
        missing = [a.name for a in prompt.arguments if a.required and a.name not in given]
        if values is not None and missing:
            raise ValueError(f"/{name} needs {', '.join(missing)}.")
        got = await self._mcp.get_prompt(server, prompt_name, given if values is not None
                                         else prompt_arguments(prompt, arguments))
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
