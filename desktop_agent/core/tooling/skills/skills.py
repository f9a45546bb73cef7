"""Skills: folders with a ``SKILL.md`` the model loads when it decides one applies.

The format is the one Anthropic published (and goose and Codex read): YAML front
matter with ``name`` and ``description``, then Markdown instructions; other files
of the folder (scripts, templates, references) may be read too. The app finds
them in the working folder's ``.agents/skills/`` (and ``.claude/skills/``), then
the user's ``skills/`` in the data folder; a script names its own folders
(``AgentOptions(skills_dirs=[...])``); first found wins. Only names and descriptions go
into the system prompt (:func:`skills_prompt`); the model reads a skill's body,
or one of its files, with the ``load_skill`` tool (:func:`skill_tool`), and the
call's card shows which skill it loaded. The ``skills_off`` setting turns single
skills off for a conversation.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling.skills.markdown_file import (
    UnreadableFile,
    read_markdown,
    read_text,
    text_value,
)

if TYPE_CHECKING:
    from desktop_agent.core.tooling.permissions import PermissionRule
    from desktop_agent.core.tooling.tools import Tool

SKILL_TOOL_NAME = "load_skill"
#: Where a working folder keeps its skills, in the order they are looked up.
PROJECT_FOLDERS = (".agents/skills", ".claude/skills")
#: A skill's name and description as the format limits them.
NAME_LIMIT, DESCRIPTION_LIMIT = 64, 1024
#: The most of a skill's instructions (or of one of its files) one call gives the model:
#: Anthropic advises SKILL.md under 500 lines, and a small model's context holds little more.
SKILL_TEXT_LIMIT = 20_000
#: Skill folders looked at in one place, and files listed of one skill, at most.
MAX_SKILLS, MAX_FILES = 200, 100
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill folder.

    Attributes:
        name: Its front matter's name.
        description: When to use it (what the model reads in the system prompt).
        folder: The folder holding ``SKILL.md``.
        scope: ``project`` or ``user`` (the app's folders), ``folder`` (a script's).
    """

    name: str
    description: str
    folder: Path
    scope: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "folder": str(self.folder), "scope": self.scope}


def find_skills(workdir: Path | None, user_folder: Path | None,
                ) -> tuple[list[Skill], list[str]]:
    """The skills of a working folder and of the user, and the folders that were skipped.

    Blocking (reads files): call it in a worker thread.
    """
    places: list[tuple[Path, str]] = []
    if workdir is not None:
        places += [(workdir / sub, "project") for sub in PROJECT_FOLDERS]
    if user_folder is not None:
        places.append((user_folder, "user"))
    return skills_in(places)


def skills_in(places: Sequence[tuple[Path, str]]) -> tuple[list[Skill], list[str]]:
    """The skills in these folders (each with its scope), first found wins, and those skipped.

    Each place holds skill folders (``place/<skill>/SKILL.md``). Blocking (reads files).
    """
    found: dict[str, Skill] = {}
    problems: list[str] = []
    for place, scope in places:
        if not place.is_dir() or place.is_symlink():
            continue
        for folder in sorted(p for p in place.iterdir() if p.is_dir())[:MAX_SKILLS]:
            if not (folder / "SKILL.md").exists():
                continue
            try:
                skill = _read_skill(folder, scope)
            except UnreadableFile as exc:
                problems.append(str(exc))
                continue
            found.setdefault(skill.name, skill)
    return sorted(found.values(), key=lambda s: s.name), problems


def _read_skill(folder: Path, scope: str) -> Skill:
    read = read_markdown(folder / "SKILL.md")
    if not read.has_front_matter:
        raise UnreadableFile(f"{read.path} has no front matter: it must begin with '---', "
                             "'name: ...', 'description: ...', '---'.")
    name = text_value(read.meta, "name", NAME_LIMIT + 1)
    description = text_value(read.meta, "description", DESCRIPTION_LIMIT)
    if not name or not description:
        raise UnreadableFile(f"{read.path}: its front matter needs both 'name' and "
                             "'description'.")
    if len(name) > NAME_LIMIT or not _NAME.match(name):
        raise UnreadableFile(f"{read.path}: the name {name[:NAME_LIMIT]!r} must be at most "
                             f"{NAME_LIMIT} lower-case letters, digits and '-'.")
    return Skill(name, description, folder, scope)


def _prompt_line(skill: Skill) -> str:
    return f"- {skill.name}: {skill.description}"


def skills_prompt(skills: Sequence[Skill]) -> str:
    """What the system prompt says of the skills: their names and descriptions only."""
    lines = "\n".join(_prompt_line(s) for s in skills)
    return ("# Skills\n"
            f"Skills are instructions for particular tasks. When one applies, call "
            f"{SKILL_TOOL_NAME} with its name and follow what it says before doing the "
            f"task; call {SKILL_TOOL_NAME} with its name and a file to read one of the "
            f"files it mentions.\n{lines}")


@dataclass(frozen=True, slots=True)
class SkillListing:
    """The skills of a conversation with what each costs in its system prompt.

    Counted with the context meter's counter (:func:`~desktop_agent.core.context.tokens.
    count_text_tokens`), so the figures add up with the prompt size the window shows.

    Attributes:
        skills: Every skill found, on or off.
        tokens: Tokens of each skill's line (``- name: description``), by name.
        header_tokens: Tokens of the section's heading and instructions, paid once
            when any skill is on.
        off: The names the ``skills_off`` setting turns off.
        skipped: Skill folders that could not be used, and why.
    """

    skills: tuple[Skill, ...]
    tokens: dict[str, int]
    header_tokens: int
    off: frozenset[str]
    skipped: tuple[str, ...]

    def prompt_tokens(self, off: frozenset[str] | None = None) -> int:
        """What the skills section costs with the skills ``off`` (default: the setting's)."""
        off = self.off if off is None else off
        on = [self.tokens[s.name] for s in self.skills if s.name not in off]
        return self.header_tokens + sum(on) if on else 0

    def to_dicts(self) -> list[dict[str, Any]]:
        """Each skill as the REST API lists it: with ``enabled`` and ``tokens``."""
        return [{**s.to_dict(), "enabled": s.name not in self.off,
                 "tokens": self.tokens[s.name]} for s in self.skills]


def skill_listing(found: Sequence[Skill], skipped: Sequence[str],
                  off: Sequence[str] = ()) -> SkillListing:
    """Count what each skill costs in the system prompt (blocking: the tokenizer may load)."""
    from desktop_agent.core.context.tokens import count_text_tokens

    return SkillListing(tuple(found), {s.name: count_text_tokens(_prompt_line(s))
                                       for s in found},
                        count_text_tokens(skills_prompt(())), frozenset(off), tuple(skipped))


def load_skill(skills: Sequence[Skill], name: str, file: str | None = None) -> str:
    """A skill's instructions (and the list of its files), or one of its files.

    Blocking. A file is read only inside the skill's folder, never through a link.

    Raises:
        ValueError: No such skill or file; the message says which exist.
    """
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        known = ", ".join(s.name for s in skills) or "none"
        raise ValueError(f"There is no skill named {name!r}. The skills are: {known}.")
    if file:
        relative = Path(file)
        if relative.is_absolute() or ".." in relative.parts:
            raise ValueError(f"{file!r} is not a file of the skill: give a path inside "
                             "its folder, as its instructions name it.")
        if any(p.is_symlink() for p in _steps(skill.folder, relative)):
            raise ValueError(f"{file!r} is a link; links in a skill are not followed.")
        try:
            text, cut = read_text(skill.folder / relative, SKILL_TEXT_LIMIT)
        except UnreadableFile as exc:
            raise ValueError(str(exc).replace(str(skill.folder) + os.sep, "")) from exc
        return text + (f"\n\n[cut at {SKILL_TEXT_LIMIT:,} bytes]" if cut else "")
    read = read_markdown(skill.folder / "SKILL.md", SKILL_TEXT_LIMIT)
    others = sorted(str(p.relative_to(skill.folder)) for p in skill.folder.rglob("*")
                    if p.is_file() and not p.is_symlink() and p.name != "SKILL.md")
    text = read.body.strip()
    if read.cut:
        text += f"\n\n[SKILL.md is longer than {SKILL_TEXT_LIMIT:,} bytes; the rest was cut]"
    if others:
        listed = "\n".join(f"- {p}" for p in others[:MAX_FILES])
        more = f"\n(and {len(others) - MAX_FILES} more)" if len(others) > MAX_FILES else ""
        text += (f"\n\n[Files of this skill, read with {SKILL_TOOL_NAME}(name, file):]\n"
                 f"{listed}{more}")
    return text


def _steps(folder: Path, relative: Path) -> list[Path]:
    """Each folder on the way to ``relative`` (and the file): none may be a link."""
    return [folder.joinpath(*relative.parts[:i + 1]) for i in range(len(relative.parts))]


def skill_tool(skills: Sequence[Skill]) -> Tool:
    """The ``load_skill`` tool for these skills (read-only: it changes nothing)."""
    from desktop_agent.core.tooling.tools import Tool

    chosen = tuple(skills)

    async def run(args: dict[str, Any]) -> str:
        file = args.get("file")
        return await asyncio.to_thread(load_skill, chosen, str(args.get("name") or ""),
                                       str(file) if file else None)

    schema = {"type": "object", "properties": {
        "name": {"type": "string", "enum": [s.name for s in chosen],
                 "description": "The skill's name."},
        "file": {"type": "string", "description": "A file of the skill to read instead of "
                                                  "its instructions (a path in its folder)."}},
              "required": ["name"]}
    return Tool(SKILL_TOOL_NAME, "Load a skill's instructions (or one of its files) when "
                "the skill applies to the task.", schema, run, read_only=True,
                source="skills")


def skill_rule() -> PermissionRule:
    """Allow ``load_skill`` without asking (it reads the skill's own files; deny rules win)."""
    from desktop_agent.core.tooling.permissions import PermissionRule

    return PermissionRule(SKILL_TOOL_NAME, "allow")
