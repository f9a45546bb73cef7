"""A conversation's own secrets (e.g. ``GITHUB_TOKEN``), kept in the app's vault.

A secret named ``NAME`` of conversation ``ID`` is the vault entry ``conv:ID:NAME``:
in the OS keyring, or with ``serve --database`` sealed in the shared database, so a
secret set through one replica reaches commands run by another
(:mod:`desktop_agent.appdata.secrets` decides; this module does not know which).
Values only ever reach the conversation's own commands' environment (and the list
of values blanked out of tool output); routes and widgets see names. Deleting a
conversation deletes its secrets, from either front end, through :func:`delete_all`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from desktop_agent.appdata import secrets

log = logging.getLogger("desktop_agent.tools.shell")

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def secret_name(conversation_id: str, variable: str) -> str:
    """The secret-store name under which a conversation keeps ``variable``."""
    return f"conv:{conversation_id}:{variable}"


def conversation_env_secrets(
    conversation_id: str,
    *,
    names: Callable[[str], list[str]] | None = None,
    lookup: Callable[[str], str | None] | None = None,
) -> dict[str, str]:
    """``{VARIABLE: value}`` for every secret stored for the conversation.

    Args:
        conversation_id: The conversation whose secrets to read.
        names: Lists stored names by prefix (default: the app's secret store).
        lookup: Resolves a name to its value (default: the app's secret store).
    """
    names = names or secrets.list_secret_names
    lookup = lookup or secrets.get_secret
    prefix = secret_name(conversation_id, "")
    found: dict[str, str] = {}
    for name in names(prefix):
        variable = name[len(prefix):]
        if not _ENV_NAME.match(variable):
            log.warning("secret %r is not a valid environment variable name; skipped", name)
            continue
        value = lookup(name)
        if value is not None:
            found[variable] = value
    return found


# The keyring entry of a conversation's secret (the bash tool gets the values only).
keyring_name = secret_name


def _prefix(conversation_id: str) -> str:
    return f"conv:{conversation_id}:"


def set_conversation_secret(conversation_id: str, name: str, value: str) -> bool:
    """Store a value; True if it persists (keyring or database), False if session-only."""
    return secrets.set_secret(keyring_name(conversation_id, name), value)


def conversation_secret_names(conversation_id: str) -> list[str]:
    """Names (not values) of the conversation's secrets, sorted."""
    prefix = _prefix(conversation_id)
    names = secrets.list_secret_names(prefix)
    return sorted(n[len(prefix):] for n in names if n.startswith(prefix))


def delete_conversation_secret(conversation_id: str, name: str) -> bool:
    """Remove one secret; False if there was none."""
    if name not in conversation_secret_names(conversation_id):
        return False
    secrets.delete_secret(keyring_name(conversation_id, name))
    return True


def conversation_environment(conversation_id: str) -> dict[str, str]:
    """``{NAME: value}`` for a command's environment (blocking: call off the UI thread)."""
    return conversation_env_secrets(conversation_id)


def delete_all(conversation_id: str) -> None:
    """Remove every secret of a deleted conversation (blocking: keyring or database)."""
    for name in conversation_secret_names(conversation_id):
        secrets.delete_secret(keyring_name(conversation_id, name))


#: Shorter values are not blanked out of diffs: "abc" everywhere would garble them.
MIN_BLANKED_LENGTH = 4


def conversation_secret_marks(conversation_id: str,
                              settings: Mapping[str, Any]) -> dict[str, str]:
    """``{value: mark}`` for each secret a conversation's files may hold (blocking).

    Its own secrets (``[secret NAME redacted]``, as its commands' output says)
    and the API key its settings name (``[redacted]``): what diffs and
    checkpoints must never show or keep. A key that is named but not stored
    is simply left out.
    """
    marks = {value: f"[secret {name} redacted]"
             for name, value in sorted(conversation_env_secrets(conversation_id).items())
             if len(value) >= MIN_BLANKED_LENGTH}
    key_name = settings.get("api_key_name")
    if key_name:
        key = secrets.get_secret(str(key_name))
        if key and len(key) >= MIN_BLANKED_LENGTH:
            marks.setdefault(key, "[redacted]")
    return marks
