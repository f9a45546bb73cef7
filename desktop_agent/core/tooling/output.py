"""A tool result with more than text: pictures for the model, words for the person only.

A handler may return a :class:`ToolOutput` instead of a string. Its ``text``
is the tool message the model reads. Its ``images`` (OpenAI ``image_url``
parts with data URIs) reach a model that can see as a user message right
after the round's tool results, because OpenAI-style tool messages carry text
only; a model that cannot see (or whose vision is unknown) gets a sentence
saying a picture was returned instead, so a server never refuses the request.
Its ``user_text`` (MCP content meant for ``audience: ["user"]``) is shown to
the person on the tool card and never sent to the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from desktop_agent.core.context.content_parts import ContentPart, text_part

#: The user message that carries a round's pictures starts with this.
IMAGES_INTRO = "Pictures returned by the tool calls above:"


@dataclass(slots=True)
class ToolOutput:
    """What a tool produced.

    Attributes:
        text: The result the model reads (the tool message).
        images: ``image_url`` content parts (base64 data URIs) the tool returned.
        user_text: Content meant for the person only; never sent to the model.
    """

    text: str
    images: list[ContentPart] = field(default_factory=list)
    user_text: str = ""


def image_note(images: list[ContentPart], vision: bool | None) -> str:
    """The line added to a tool's text about its pictures."""
    if not images:
        return ""
    count = f"{len(images)} picture{'s' if len(images) != 1 else ''}"
    if vision:
        return f"[{count} returned; attached in the next message]"
    return f"[{count} returned; this model cannot see images, so they were not sent]"


def images_message(results: list[Any], vision: bool | None) -> dict[str, Any] | None:
    """The user message carrying a round's pictures to a model that can see, or None."""
    return pictures_message([image for result in results
                             for image in getattr(result, "images", None) or []], vision)


def pictures_message(images: list[ContentPart], vision: bool | None) -> dict[str, Any] | None:
    """The user message that carries ``images`` after a round's tool results, or None.

    Used live (:func:`images_message`) and when a stored conversation's history
    is rebuilt, so both send the model the same messages.
    """
    if not vision or not images:
        return None
    return {"role": "user", "content": [text_part(IMAGES_INTRO), *images]}


def is_pictures_message(message: dict[str, Any]) -> bool:
    """Whether ``message`` is the pictures message of :func:`pictures_message`."""
    content = message.get("content")
    return (message.get("role") == "user" and isinstance(content, list) and bool(content)
            and isinstance(content[0], dict) and content[0].get("text") == IMAGES_INTRO)
