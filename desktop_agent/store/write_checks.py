"""Checks on what callers ask the store to write, before anything touches disk.

Kept apart from the SQL so the rules (OpenAI-format messages, no keys in
settings, keys scrubbed from metadata) read in one place.
"""

from __future__ import annotations

import logging
from typing import Any

from desktop_agent.image_data import ImageDataError, decode_data_uri
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
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else None
            try:
                decode_data_uri(url if isinstance(url, str) else "")
            except ImageDataError as exc:
                raise ValueError(f"{where}[{index}]: {exc}") from None


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
