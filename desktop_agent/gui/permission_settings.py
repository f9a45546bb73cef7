"""Remembered approvals ("Always allow this tool") in the global config file.

They live in ``config.json`` under ``"permissions"`` next to the MCP server
list, so the REST server and scripts honour the same rules. Other keys in the
file are kept as they are; the file is replaced atomically so a crash never
leaves half a config.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from desktop_agent.core.permissions import PermissionRule

log = logging.getLogger("desktop_agent.gui.permissions")


def _config_file(path: Path | None) -> Path:
    if path is not None:
        return path
    from desktop_agent.paths import config_path

    return config_path()


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as exc:
        log.warning("cannot read %s (%s); permissions start empty", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def load_rules(path: Path | None = None) -> list[PermissionRule]:
    """The permission rules in the config file (malformed entries are skipped, logged)."""
    rules: list[PermissionRule] = []
    for entry in _read_config(_config_file(path)).get("permissions", []) or []:
        try:
            rules.append(PermissionRule.from_dict(entry))
        except (ValueError, TypeError) as exc:
            log.warning("skipping permission rule: %s", exc)
    return rules


def save_rules(rules: list[PermissionRule], path: Path | None = None) -> None:
    """Write the rules, keeping the rest of the config file."""
    target = _config_file(path)
    data = _read_config(target)
    data["permissions"] = [rule.to_dict() for rule in rules]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".config-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_rule(rule: PermissionRule, path: Path | None = None) -> None:
    """Remember one rule (no duplicate entries)."""
    rules = load_rules(path)
    if rule not in rules:
        rules.append(rule)
        save_rules(rules, path)


def remove_rule(rule: PermissionRule, path: Path | None = None) -> None:
    """Forget one rule (revoke a remembered approval)."""
    rules = [r for r in load_rules(path) if r != rule]
    save_rules(rules, path)
