"""Subagent definitions: who a main agent may delegate to, read from code, a config or Markdown.

A definition is claude-agent-sdk's ``AgentDefinition`` with the parts local
models need: ``name``, ``description`` (what the main agent reads to pick
one), ``prompt`` (the subagent's system prompt), ``tools`` (names or globs of
the main agent's tools; None: all of them), ``model`` and ``base_url`` (another,
smaller local model or server; None or ``"inherit"``: the main agent's) and
``max_turns`` (model requests per delegation).

They come from three places, with the same checks:

* ``AgentOptions(agents={"reviewer": AgentDefinition(...)})`` in a script;
* a config's ``"agents"`` object (:func:`definitions_from_config`), keyed by name;
* Markdown files with front matter, Claude Code's format, in a project's
  ``.agents/agents/`` and ``.claude/agents/`` (:func:`definitions_from_folder`)::

      ---
      name: reviewer
      description: Reviews a diff for bugs; use after changing code.
      tools: read_file, grep, glob
      model: qwen2.5-coder-1.5b
      ---
      You review code. Report real bugs only, with file and line.

  The front matter is read as simple ``key: value`` lines (a list as
  ``a, b``, ``[a, b]`` or ``- a`` lines); the body is the prompt.

A definition that names a tool the main agent does not have (a name or a glob
that matches none) is refused when the options are made, naming the tool and
what exists, never in the middle of a turn.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.core.errors import ConfigurationError

if TYPE_CHECKING:
    from desktop_agent.core.tooling.tools import Tool

#: Project folders read for Markdown definitions, in order (a later file of the same
#: name replaces an earlier one): our own, then Claude Code's.
DEFINITION_FOLDERS = (".agents/agents", ".claude/agents")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_INHERIT = ("", "inherit")


class AgentDefinitionError(ConfigurationError):
    """A subagent definition cannot be used; the message names it and what is wrong."""


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """One subagent the main agent may delegate to.

    Attributes:
        description: When to use it (the main agent reads this).
        prompt: Its system prompt.
        tools: Names or globs of the main agent's tools it gets (None: all).
        model: Its model id (None or ``"inherit"``: the main agent's).
        base_url: Its server (None: the main agent's).
        max_turns: Model requests one delegation may make (None: 10).
        name: Its name (set from the key it is given under when left empty).
        source: Where it was read (a file, ``config``, ``code``), for messages.
    """

    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    model: str | None = None
    base_url: str | None = None
    max_turns: int | None = None
    name: str = ""
    source: str = "code"

    def __post_init__(self) -> None:
        where = f"subagent {self.name or '?'} ({self.source})"
        if self.name and not _NAME.match(self.name):
            raise AgentDefinitionError(f"{where}: a name uses letters, digits, '.', '_' or "
                                       "'-' (at most 64 characters)")
        if not isinstance(self.description, str) or not self.description.strip():
            raise AgentDefinitionError(f"{where}: needs a description (the main agent "
                                       "reads it to choose a subagent)")
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise AgentDefinitionError(f"{where}: needs a prompt (its instructions)")
        if self.tools is not None:
            tools = (self.tools,) if isinstance(self.tools, str) else tuple(self.tools)
            if not all(isinstance(t, str) and t.strip() for t in tools):
                raise AgentDefinitionError(f"{where}: tools must be tool names or globs")
            object.__setattr__(self, "tools", tuple(t.strip() for t in tools))
        if self.model in _INHERIT:
            object.__setattr__(self, "model", None)
        if self.base_url is not None and not str(self.base_url).startswith(
                ("http://", "https://")):
            raise AgentDefinitionError(f"{where}: base_url must start with http:// or "
                                       f"https:// (got {self.base_url!r})")
        if self.max_turns is not None and (isinstance(self.max_turns, bool) or
                                           not isinstance(self.max_turns, int)
                                           or self.max_turns < 1):
            raise AgentDefinitionError(f"{where}: max_turns must be a positive whole number")

    def named(self, name: str) -> AgentDefinition:
        """This definition under ``name`` (the key it was given under)."""
        if self.name == name:
            return self
        return AgentDefinition(self.description, self.prompt, self.tools, self.model,
                               self.base_url, self.max_turns, name, self.source)

    def tools_from(self, available: Sequence[Tool]) -> list[Tool]:
        """The main agent's tools this subagent gets, in the main agent's order.

        Raises:
            AgentDefinitionError: A name or glob matches no tool of the main agent.
        """
        if self.tools is None:
            return list(available)
        names = [t.name for t in available]
        chosen: set[str] = set()
        for wanted in self.tools:
            matched = fnmatch.filter(names, wanted)
            if not matched:
                raise AgentDefinitionError(
                    f"subagent {self.name!r} ({self.source}) names the tool {wanted!r}, which "
                    f"the agent does not have. Its tools: {', '.join(names) or 'none'}.")
            chosen.update(matched)
        return [t for t in available if t.name in chosen]


def named_definitions(agents: Mapping[str, AgentDefinition] | None
                      ) -> dict[str, AgentDefinition]:
    """``agents`` keyed by name, each carrying its name; checked.

    Raises:
        AgentDefinitionError: An entry is not an :class:`AgentDefinition` or its
            key is not a valid name.
    """
    found: dict[str, AgentDefinition] = {}
    for key, definition in (agents or {}).items():
        if not isinstance(definition, AgentDefinition):
            raise AgentDefinitionError(f"agents[{key!r}] must be an AgentDefinition, "
                                       f"not {type(definition).__name__}")
        if not isinstance(key, str) or not _NAME.match(key):
            raise AgentDefinitionError(f"agents: {key!r} is not a valid subagent name")
        found[key] = definition.named(key)
    return found


def definitions_from_config(data: Any, where: str = "config") -> dict[str, AgentDefinition]:
    """A config's ``"agents"`` object (name -> fields), checked.

    Raises:
        AgentDefinitionError: Naming the entry and the field.
    """
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise AgentDefinitionError(f"{where}: agents must be an object of names to "
                                   "definitions")
    return {name: _from_fields(name, entry, f"{where}: agents.{name}")
            for name, entry in data.items()}


_FIELDS = ("name", "description", "prompt", "tools", "model", "base_url", "max_turns")


def _from_fields(name: str, entry: Any, where: str) -> AgentDefinition:
    if not isinstance(entry, Mapping):
        raise AgentDefinitionError(f"{where} must be an object (description, prompt, tools...)")
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise AgentDefinitionError(f"{where}: unknown field(s) {', '.join(unknown)}; use "
                                   f"{', '.join(_FIELDS)}")
    tools = entry.get("tools")
    if isinstance(tools, str):
        tools = _list(tools)
    try:
        return AgentDefinition(
            description=entry.get("description") or "", prompt=entry.get("prompt") or "",
            tools=tuple(tools) if isinstance(tools, list) else tools,
            model=entry.get("model"), base_url=entry.get("base_url"),
            max_turns=entry.get("max_turns"), name=str(entry.get("name") or name),
            source=where.split(":")[0])
    except AgentDefinitionError as exc:
        raise AgentDefinitionError(f"{where}: {str(exc).split(': ', 1)[-1]}") from None


def definition_from_markdown(text: str, source: str) -> AgentDefinition:
    """One Markdown file with front matter (Claude Code's subagent format), checked.

    Raises:
        AgentDefinitionError: No front matter, or a field is wrong (the file is named).
    """
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise AgentDefinitionError(f"{source}: starts with no front matter (a '---' line, "
                                   "name/description/tools/model lines, '---')")
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise AgentDefinitionError(f"{source}: the front matter has no closing '---'") \
            from None
    fields = _front_matter(lines[1:end], source)
    fields.setdefault("prompt", "\n".join(lines[end + 1:]).strip())
    name = str(fields.get("name") or Path(source).stem)
    return _from_fields(name, fields, source)


def _front_matter(lines: Iterable[str], source: str) -> dict[str, Any]:
    """``key: value`` lines; a value may be a list (``a, b`` for tools, ``[a, b]``, ``- a``)."""
    fields: dict[str, Any] = {}
    key: str | None = None
    for raw in lines:
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.lstrip().startswith("- ") and key is not None:
            previous = fields.get(key)
            fields[key] = [*(previous if isinstance(previous, list) else []),
                           _scalar(line.lstrip()[2:])]
            continue
        if ":" not in line:
            raise AgentDefinitionError(f"{source}: front matter line {line.strip()!r} is not "
                                       "'key: value'")
        key, _, value = line.partition(":")
        key = key.strip()
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            fields[key] = _list(value[1:-1])
        elif key == "max_turns" and value.isdigit():
            fields[key] = int(value)
        else:
            fields[key] = _scalar(value) if value else []
    return {k: (None if v == [] else v) for k, v in fields.items()}


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _list(value: str) -> list[str]:
    return [_scalar(part) for part in value.split(",") if part.strip()]


def definitions_from_folder(folder: str | Path) -> tuple[dict[str, AgentDefinition], list[str]]:
    """The Markdown definitions in a project folder's ``.agents/agents/`` and ``.claude/agents/``.

    Returns:
        The definitions by name, and a sentence for each file that could not be
        used (it is left out; the others still count).
    """
    found: dict[str, AgentDefinition] = {}
    problems: list[str] = []
    for sub in DEFINITION_FOLDERS:
        where = Path(folder) / sub
        if not where.is_dir():
            continue
        for path in sorted(where.glob("*.md")):
            try:
                definition = definition_from_markdown(
                    path.read_text(encoding="utf-8"), str(path))
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"{path}: cannot be read ({exc})")
                continue
            except AgentDefinitionError as exc:
                problems.append(str(exc))
                continue
            found[definition.name] = definition
    return found, problems
