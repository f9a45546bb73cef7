"""The built-in slash commands: what the app itself does on ``/undo``, ``/compact``...

Each one is a menu item or button the window already has (``/undo`` the Files
changed bar's Undo, ``/model`` "Choose server and model…", ``/clear`` "New
conversation" in the same folder); the session only names and describes them,
so the ``/`` menu lists them beside the command files and the servers'
prompts, and a command file of the same name cannot take their place. Over
REST only those with a route of their own are offered (see :data:`REST_ROUTES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BuiltinCommand:
    """One built-in command.

    Attributes:
        name: What follows ``/``.
        description: What it does, as the ``/`` menu and ``/help`` say it.
    """

    name: str
    description: str

    @property
    def kind(self) -> str:
        """``builtin``, as the ``/`` menu's entries say what they are."""
        return "builtin"

    @property
    def arguments(self) -> tuple[()]:
        """None: a built-in takes no arguments."""
        return ()


BUILTIN_COMMANDS: tuple[BuiltinCommand, ...] = (
    BuiltinCommand("undo", "Undo the last turn's file changes"),
    BuiltinCommand("compact", "Summarise the conversation to free the model's context"),
    BuiltinCommand("plan", "Switch to plan mode: read and plan, change nothing"),
    BuiltinCommand("model", "Choose the server and model"),
    BuiltinCommand("clear", "New conversation in the same working folder"),
    BuiltinCommand("help", "List the commands, the servers' prompts and the skills"),
)
#: The built-ins the REST server runs, and the route that runs each.
REST_ROUTES = {"compact": "POST /conversations/{id}/compact",
               "help": "GET /conversations/{id}/slash-commands"}
BUILTIN_NAMES = frozenset(c.name for c in BUILTIN_COMMANDS)


def builtin_named(name: str) -> BuiltinCommand | None:
    """The built-in command ``name`` (without ``/``), if it is one."""
    return next((c for c in BUILTIN_COMMANDS if c.name == name), None)


def help_text(commands: Sequence[tuple[str, str, str]],
              skills: Sequence[tuple[str, str]]) -> str:
    """``/help`` as Markdown: the commands by kind, then the skills.

    Args:
        commands: ``(name, kind, description)`` of each command listed (kinds
            ``builtin``, ``command``, ``prompt``).
        skills: ``(name, description)`` of each skill turned on.
    """
    titles = {"builtin": "Built-in commands", "command": "Your commands",
              "prompt": "Prompts of the MCP servers"}
    empty = {"command": "None yet: put Markdown files in the working folder's "
                        "`.agents/commands/` (or `.claude/commands/`).",
             "prompt": "None: no MCP server of this conversation offers prompts."}
    parts: list[str] = []
    for kind, title in titles.items():
        rows = [f"- `/{name}` — {text}" if text else f"- `/{name}`"
                for name, of_kind, text in commands if of_kind == kind]
        parts.append(f"**{title}**\n" + ("\n".join(rows) if rows else empty.get(kind, "")))
    rows = [f"- `{name}` — {text}" for name, text in skills]
    parts.append("**Skills** (the model loads one when it applies)\n" + (
        "\n".join(rows) if rows else "None: a skill is a folder with a `SKILL.md` in the "
                                     "working folder's `.agents/skills/`."))
    parts.append("Type `/` at the start of a message to choose one; a command with "
                 "arguments opens a form.")
    return "\n\n".join(parts)
