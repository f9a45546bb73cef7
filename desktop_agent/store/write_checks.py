"""Checks on what callers ask the store to write, before anything touches disk.

Kept apart from the SQL so the rules (OpenAI-format messages, no keys in
settings, keys scrubbed from metadata) read in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any

from desktop_agent.image_data import ImageDataError, decode_data_uri, part_url
from desktop_agent.store.errors import SecretInSettingsError
from desktop_agent.store.secret_scrub import find_secret, scrub

# The name the store has always logged under, so log filters keep working.
logger = logging.getLogger("desktop_agent.store")


def check_message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise ValueError("a message must be a dict with a 'role' string (OpenAI format)")
    check_images(message.get("content"))
    return message


def check_images(content: Any, where: str = "content") -> None:
    """Refuse image parts that are not embedded, accepted pictures.

    The store keeps images inside the message (base64 data URIs), so that a
    conversation and its export hold the picture itself; a link, a script
    named ``image/png`` or a 100 MB file is refused here, with a sentence.

    Raises:
        ValueError: Naming the part and what is wrong with it.
    """
    if not isinstance(content, list):
        return
    for index, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "image_url":
            try:
                decode_data_uri(part_url(part) or "")
            except ImageDataError as exc:
                raise ValueError(f"{where}[{index}]: {exc}") from None


#: The command sandbox levels a conversation may name (see core.tooling.builtin.sandbox).
SANDBOX_LEVELS = ("workdir", "read_only", "off")


SettingsSchema = Callable[[Mapping[str, Any]], list[str]]
"""Names the keys of a settings dict whose values break the schema (empty: all good)."""

_schema: SettingsSchema | None = None


def use_settings_schema(schema: SettingsSchema) -> None:
    """Check every settings write against ``schema`` from now on (this process).

    The typed schema (``session.settings.ConversationSettings``) lives in the
    layer above, which the store may not import; that layer installs it here
    when it is loaded, so a window, a server or the CLI writing through the
    store cannot save a value the app would refuse. Without it (a script using
    the store alone) the safety checks below still apply.
    """
    global _schema
    _schema = schema


def check_settings(settings: Any, checked: Collection[str] | None = None) -> dict[str, Any]:
    """Refuse settings that are not a dict, break a safety rule, hold a key or break the schema.

    The installed schema is checked for the ``checked`` keys only, when given:
    a patch does not fail on a key it did not touch.
    """
    if not isinstance(settings, dict):
        raise ValueError("conversation settings must be a dict")
    if _schema is not None:
        bad = [key for key in _schema(settings) if checked is None or key in checked]
        if bad:
            raise ValueError(f"the setting(s) {', '.join(bad)} have values the app does not "
                             "accept; nothing was saved")
    if "sandbox" in settings and settings["sandbox"] not in SANDBOX_LEVELS:
        raise ValueError(f"the setting 'sandbox' must be one of {', '.join(SANDBOX_LEVELS)}, "
                         f"not {settings['sandbox']!r}; nothing was saved")
    if "network" in settings and not isinstance(settings["network"], bool):
        raise ValueError("the setting 'network' must be true or false; nothing was saved")
    where = find_secret(settings)
    if where:
        raise SecretInSettingsError(
            f"The setting '{where}' looks like a key or token. Store keys with "
            "desktop_agent.appdata.secrets.set_secret() and put only the key's name in "
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
