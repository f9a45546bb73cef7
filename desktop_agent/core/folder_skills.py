"""A script's own skills and slash commands: ``AgentOptions(skills_dirs=..., commands_dirs=...)``.

The app finds skills and commands in a conversation's working folder and the
user's data folder; a script names its folders instead, and gets the same
formats read by the same code (:mod:`desktop_agent.core.tooling.skills`): the
skills' names and descriptions in the system prompt with the ``load_skill``
tool, and ``/name arguments`` prompts sent as the command's text.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from desktop_agent.core.errors import ConfigurationError
from desktop_agent.core.tooling.skills.commands import commands_in
from desktop_agent.core.tooling.skills.skills import (
    SKILL_TOOL_NAME,
    skill_rule,
    skill_tool,
    skills_in,
    skills_prompt,
)

if TYPE_CHECKING:
    from desktop_agent.core.options import AgentOptions

#: How the skills' part of the system prompt begins (so a second query replaces it).
_SECTION = "# Skills\n"


def with_folder_skills(options: AgentOptions) -> AgentOptions:
    """``options`` offering the skills of ``options.skills_dirs`` (read now).

    Idempotent: the skills' tool and system-prompt section from an earlier call
    are replaced, not added twice, so the prompt stays the same (and the
    server's prompt cache matches) while the skills do.

    Blocking (reads the skill folders): call it in a worker thread.

    Raises:
        ConfigurationError: A folder of ``skills_dirs`` does not exist.
    """
    if not options.skills_dirs:
        return options
    missing = [str(p) for p in options.skills_dirs if not Path(p).is_dir()]
    if missing:
        raise ConfigurationError(f"skills_dirs: {', '.join(missing)} is not a folder.")
    skills, _skipped = skills_in([(Path(p), "folder") for p in options.skills_dirs])
    tools = [t for t in options.tools
             if not (t.name == SKILL_TOOL_NAME and t.source == "skills")]
    system = options.system_prompt or ""
    start = system.find(_SECTION)
    if start != -1:
        system = system[:start].rstrip("\n")
    rules = list(options.permission_rules)
    if skills:
        tools.append(skill_tool(skills))
        system = "\n\n".join(p for p in (system, skills_prompt(skills)) if p)
        if skill_rule() not in rules:
            rules.append(skill_rule())
    return dataclasses.replace(options, tools=tools, system_prompt=system or None,
                               permission_rules=rules)


def expand_folder_command(prompt: str, options: AgentOptions) -> str:
    """``prompt`` as sent: the command's text when it starts with ``/name`` of one.

    A prompt naming no command of ``options.commands_dirs`` (``/etc/hosts is
    odd``) is sent as it is. Blocking (reads the command folders).
    """
    if not options.commands_dirs or not prompt.startswith("/") or len(prompt) < 2:
        return prompt
    name, _, arguments = prompt[1:].partition(" ")
    commands, _skipped = commands_in([(Path(p), "folder") for p in options.commands_dirs])
    command = next((c for c in commands if c.name == name.strip()), None)
    return command.expand(arguments) if command is not None else prompt
