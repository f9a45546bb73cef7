"""Checks on what callers ask the store to write, before anything touches disk.

Kept apart from the SQL so the rules (OpenAI-format messages, no keys in
settings, keys scrubbed from metadata) read in one place.
"""

from __future__ import annotations

import logging
from typing import Any

from desktop_agent.store.errors import SecretInSettingsError
from desktop_agent.store.secret_scrub import find_secret, scrub

# The name the store has always logged under, so log filters keep working.
logger = logging.getLogger("desktop_agent.store")


def check_message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise ValueError("a message must be a dict with a 'role' string (OpenAI format)")
    return message


#: The command sandbox levels a conversation may name (see core.builtin_tools.sandbox).
SANDBOX_LEVELS = ("workdir", "read_only", "off")


def check_settings(settings: Any) -> dict[str, Any]:
    if not isinstance(settings, dict):
        raise ValueError("conversation settings must be a dict")
    if "sandbox" in settings and settings["sandbox"] not in SANDBOX_LEVELS:
        raise ValueError(f"the setting 'sandbox' must be one of {', '.join(SANDBOX_LEVELS)}, "
                         f"not {settings['sandbox']!r}; nothing was saved")
    if "network" in settings and not isinstance(settings["network"], bool):
        raise ValueError("the setting 'network' must be true or false; nothing was saved")
    where = find_secret(settings)
    if where:
        raise SecretInSettingsError(
            f"The setting '{where}' looks like a key or token. Store keys with "
            "desktop_agent.secrets.set_secret() and put only the key's name in "
            "'api_key_name'; nothing was saved."
        )
    return settings


def clean_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValueError("message metadata must be a dict")
    cleaned = scrub(metadata)
    if cleaned != metadata:
        logger.warning("redacted a key-like value from message metadata before saving it")
    return cleaned  # type: ignore[no-any-return]
