"""Reading and writing ``config.json``, the app's MCP servers and global rules.

The file belongs to the app (the core only parses the data, see
:func:`desktop_agent.core.tool_config.parse_tool_config`): a missing or empty
file is an empty config, a file that is not JSON, repeats a key or is
malformed raises :class:`~desktop_agent.core.tool_config.ToolConfigError`
naming the file and the place, and a save is atomic (a crash mid-write leaves
the old file) and keeps keys the app does not know.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from desktop_agent.core.permissions import PermissionRule
from desktop_agent.core.tool_config import (
    ToolConfig,
    ToolConfigError,
    add_rule,
    parse_tool_config,
)


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
