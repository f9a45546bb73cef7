"""A conversation's secrets as environment variables for the ``bash`` tool.

Secrets are stored by the app under names ``conv:<conversation id>:<VARIABLE>``
(see :mod:`desktop_agent.secrets`); this turns them into ``{VARIABLE: value}``
at the moment the tools are built, so the values exist only in memory and in
the command's environment.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

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
    if names is None or lookup is None:
        from desktop_agent import secrets  # lazy: the keyring is slow to import

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
