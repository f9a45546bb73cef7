"""``config.json``: MCP servers and global permission rules, read the same by every front end.

The data's parser lives in :mod:`desktop_agent.core.tooling.config` (the SDK can
use an MCP config of its own); this
module is the app's side of it: where the file is, what a malformed file
means for a conversation (its rules count as absent, so calls are asked
about, and the file is never overwritten), and the global "always allow"
rules remembered in it. A conversation's own rules ("allow for this
conversation") live in its settings:
:mod:`~desktop_agent.session.settings.permission_rules`.

Before this module the window read the file's rules and the REST server did
not, so a ``deny`` rule stopped a tool in the window and not over REST.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling import config as tool_config
from desktop_agent.core.tooling.config import (
    ToolConfig,
    ToolConfigError,
    add_rule,
    parse_tool_config,
)
from desktop_agent.core.tooling.permissions import PermissionRule
from desktop_agent.session.settings.permission_rules import conversation_rules

if TYPE_CHECKING:
    from desktop_agent.core.tooling.agent_definitions import AgentDefinition
    from desktop_agent.core.tooling.command_hooks import CommandHook


def _positive(value: Any, default: int) -> int:
    """A positive whole number from the file, or ``default`` (logged) when it is not one."""
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    log.warning("config.json: subagents limit %r is not a positive whole number; using %d",
                value, default)
    return default

log = logging.getLogger("desktop_agent.session.config")



class ConfigWriteError(Exception):
    """The config file cannot be read or written; the message says why, in words."""


@dataclass(frozen=True)
class AppConfig:
    """Where the app's ``config.json`` is (None: the data folder's).

    Every read goes to the file, so hand edits and other processes (the
    window, ``serve``) are seen at the next turn.
    """

    path: Path | None = None

    @property
    def file(self) -> Path:
        """The file read and written: the given path, or the data folder's ``config.json``.

        Resolved here (the app's naming), so the core's parser needs no app knowledge.
        """
        if self.path is not None:
            return self.path
        from desktop_agent.appdata.paths import config_path

        return Path(config_path())

    def load(self) -> ToolConfig:
        """The parsed file.

        Raises:
            ToolConfigError: The file is malformed (the message names where).
        """
        return load_config_file(self.file)

    def problem(self) -> str | None:
        """Why the file cannot be used, or None when it is fine."""
        try:
            self.load()
        except ToolConfigError as exc:
            return str(exc)
        return None

    def command_hooks(self) -> tuple[list[CommandHook], str | None]:
        """The file's ``hooks`` (claude-agent-sdk's events as commands), and why not, if not.

        A malformed ``hooks`` entry (or file) gives no hooks and the sentence
        saying where; the rest of the file still counts.
        """
        try:
            found = self.load().extra.get("hooks")
            if found is None:
                return [], None  # the usual case: the hooks' module is never loaded
            from desktop_agent.core.tooling.command_hooks import parse_command_hooks

            return parse_command_hooks(found, str(self.file)), None
        except ToolConfigError as exc:
            log.warning("hooks not loaded: %s", exc)
            return [], f"The hooks in config.json are not used: {exc}"

    def agent_definitions(self) -> tuple[dict[str, AgentDefinition], str | None]:
        """The file's ``agents`` (subagent definitions), and why not, if they cannot be used."""
        from desktop_agent.core.tooling.agent_definitions import (
            AgentDefinitionError,
            definitions_from_config,
        )

        try:
            found = self.load().extra.get("agents")
            return definitions_from_config(found, str(self.file)), None
        except (ToolConfigError, AgentDefinitionError) as exc:
            log.warning("subagents not loaded: %s", exc)
            return {}, f"The subagents in config.json are not used: {exc}"

    def subagent_limits(self) -> tuple[int, int]:
        """``subagents.max_depth`` and ``subagents.max_concurrent`` of the file (1 and 2)."""
        try:
            limits = self.load().extra.get("subagents")
        except ToolConfigError:
            limits = None
        limits = limits if isinstance(limits, Mapping) else {}
        return (_positive(limits.get("max_depth"), 1), _positive(limits.get("max_concurrent"), 2))

    def global_rules(self) -> list[PermissionRule]:
        """The file's rules (none, with a warning, when the file is malformed)."""
        try:
            return list(self.load().permissions)
        except ToolConfigError as exc:
            log.warning("permission rules not loaded: %s", exc)
            return []

    def effective_rules(self, settings: Mapping[str, Any]) -> list[PermissionRule]:
        """Every rule for a conversation: its own, then the global ones."""
        return tool_config.effective_rules(conversation_rules(settings), self.global_rules())

    def add_rule(self, rule: PermissionRule) -> None:
        """Remember a global rule (re-reading the file first, so hand edits are kept).

        Raises:
            ConfigWriteError: The file is malformed or cannot be written.
        """
        try:
            save_global_rule(rule, self.file)
        except (ToolConfigError, OSError) as exc:
            raise ConfigWriteError(f"The rule was not saved: {exc}") from exc

    def remove_rule(self, rule: PermissionRule) -> None:
        """Forget a global rule (revoke a remembered approval).

        Raises:
            ConfigWriteError: The file is malformed or cannot be written.
        """
        try:
            config = self.load()
            config.permissions = tool_config.remove_rule(config.permissions, rule)
            save_config_file(config, self.file)
        except (ToolConfigError, OSError) as exc:
            raise ConfigWriteError(f"The rule was not removed: {exc}") from exc


# --- the file itself: read strictly, written atomically ---

def load_config_file(path: str | os.PathLike[str]) -> ToolConfig:
    """Read the config file; a missing or empty file is an empty config.

    Raises:
        ToolConfigError: The file is unreadable, not JSON, or malformed.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ToolConfig()
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolConfigError(f"cannot read {file}: {exc}") from exc
    if not text.strip():
        return ToolConfig()
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ToolConfigError(
            f"{file} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    except _DuplicateKeyError as exc:
        # json.loads would keep the last entry silently: two servers with one
        # name is a mistake the person should fix, not a coin toss
        raise ToolConfigError(
            f"{file} has the key {exc.key!r} more than once in one object; keep one"
        ) from exc
    return parse_tool_config(data, str(file))


class _DuplicateKeyError(Exception):
    """A JSON object repeats a key (only raised while loading the config)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def save_config_file(config: ToolConfig, path: str | os.PathLike[str]) -> Path:
    """Write the config atomically (a crash mid-write leaves the old file intact)."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(config.to_dict(), indent=2, ensure_ascii=False) + "\n"
    handle, temp = tempfile.mkstemp(prefix=".config-", suffix=".tmp", dir=file.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(OSError):
            os.chmod(temp, 0o600)
        os.replace(temp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return file


def save_global_rule(rule: PermissionRule, path: str | os.PathLike[str]) -> ToolConfig:
    """Add ``rule`` to the config file's global rules (an "Always allow" everywhere).

    The file is re-read first so that edits made meanwhile (by hand or by
    another window) are kept; a malformed file raises and is left untouched.
    """
    config = load_config_file(path)
    config.permissions = add_rule(config.permissions, rule)
    save_config_file(config, path)
    return config
