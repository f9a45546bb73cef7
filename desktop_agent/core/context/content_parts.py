"""Prompts with pictures: OpenAI-style content parts, checked before they are sent.

``Client.query()`` takes a string or a list of parts::

    await client.query([text_part("What is in this picture?"),
                        image_part(png_bytes, "image/png")])

Images are ``image_url`` parts holding a ``data:`` URI (see
:mod:`desktop_agent.image_data` for the accepted kinds and the size limit).
The history keeps the parts as they were sent, so the store and exports keep
the picture too.

A model that cannot see gets :class:`~desktop_agent.core.errors.
VisionNotSupportedError` for a new prompt with an image, before anything is
sent; pictures from earlier turns are replaced by a short note in the
request, so switching to a text-only model mid-conversation keeps working.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from desktop_agent.core.errors import ConfigurationError, VisionNotSupportedError
from desktop_agent.image_data import ImageDataError, data_uri, decode_data_uri

ContentPart = dict[str, Any]
Prompt = str | Sequence[ContentPart]

#: What a text-only model reads where an earlier message had a picture.
IMAGE_OMITTED_NOTE = "[an image was attached here; this model cannot see images]"


def text_part(text: str) -> ContentPart:
    """A text content part."""
    return {"type": "text", "text": text}


def image_part(data: bytes, mime: str | None = None, *, detail: str | None = None) -> ContentPart:
    """An image content part from the picture's bytes.

    Args:
        data: PNG, JPEG, GIF or WebP bytes.
        mime: The declared type; None takes the type the bytes show.
        detail: OpenAI's ``low``/``high``/``auto`` hint, passed on when given.

    Raises:
        ConfigurationError: The bytes are not an accepted image, or too large.
    """
    try:
        url = data_uri(data, mime)
    except ImageDataError as exc:
        raise ConfigurationError(str(exc)) from None
    image: dict[str, Any] = {"url": url}
    if detail is not None:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


def image_file_part(path: str | Path) -> ContentPart:
    """An image content part read from a file (its type taken from its bytes)."""
    return image_part(Path(path).read_bytes())


def check_parts(parts: Sequence[Any]) -> list[ContentPart]:
    """A copy of ``parts`` after checking each one (images decoded and sniffed).

    Raises:
        ConfigurationError: A part of an unknown type, text that is not a
            string, or an image that is not an accepted data URI.
    """
    if isinstance(parts, str | bytes) or not isinstance(parts, Sequence):
        raise ConfigurationError("a prompt is a string or a list of content parts")
    checked: list[ContentPart] = []
    for index, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if not isinstance(part.get("text"), str):
                raise ConfigurationError(f"content part {index}: 'text' must be a string")
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            try:
                if not isinstance(url, str):
                    raise ImageDataError("an image part needs an image_url with a 'url'")
                decode_data_uri(url)
            except ImageDataError as exc:
                raise ConfigurationError(f"content part {index}: {exc}") from None
        else:
            raise ConfigurationError(
                f"content part {index} has type {kind!r}; parts are 'text' or 'image_url'")
        checked.append(copy.deepcopy(part))
    return checked


def has_images(content: Any) -> bool:
    """True when a message's ``content`` holds an image part."""
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") == "image_url" for p in content)


def prompt_text(content: Any) -> str:
    """The words of a prompt (string or parts), for hooks and titles."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def with_text(parts: list[ContentPart], text: str) -> list[ContentPart]:
    """``parts`` with its text replaced by ``text`` (a hook's modified prompt); images kept."""
    images = [p for p in parts if p.get("type") != "text"]
    return ([text_part(text)] if text else []) + images


def check_vision(messages: list[dict[str, Any]], vision: bool | None, model: str) -> None:
    """Refuse to send a new picture to a model known not to see.

    Raises:
        VisionNotSupportedError: The last user message holds an image and
            ``vision`` is False.
    """
    if vision is not False:
        return
    for message in reversed(messages):
        if message.get("role") == "user":
            if has_images(message.get("content")):
                raise VisionNotSupportedError(
                    f"The model {model!r} cannot see images. Pick a vision model (for "
                    "example a VLM or one loaded with its mmproj file), or send the message "
                    "without the picture.")
            return


def images_for_model(messages: list[dict[str, Any]], vision: bool | None) -> list[dict[str, Any]]:
    """The messages to send: earlier pictures become a note for a model that cannot see.

    The history itself is never changed; only the request is.
    """
    if vision is not False or not any(has_images(m.get("content")) for m in messages):
        return messages
    sent = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and has_images(content):
            parts = [p if p.get("type") != "image_url" else text_part(IMAGE_OMITTED_NOTE)
                     for p in content]
            message = {**message, "content": parts}
        sent.append(message)
    return sent


__all__ = [
    "IMAGE_OMITTED_NOTE",
    "ContentPart",
    "Prompt",
    "check_parts",
    "check_vision",
    "has_images",
    "image_file_part",
    "image_part",
    "images_for_model",
    "prompt_text",
    "text_part",
    "with_text",
]
