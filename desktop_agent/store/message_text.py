"""The searchable text of an OpenAI-format message.

Content may be a string, a list of parts (``{"type": "text", "text": ...}``,
images), or None with tool calls; search indexes the words a person would
look for: the text, the names and arguments of tool calls, and any thinking
kept in the metadata.
"""

from __future__ import annotations

from typing import Any


def content_text(content: Any, image_placeholder: str | None = None) -> str:
    """Plain text of a message's ``content`` field, whatever its shape.

    Args:
        content: A string, a list of parts, or None.
        image_placeholder: Text standing for an image part (e.g. ``"[image]"`` in
            the transcript); images are left out when None.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif (image_placeholder is not None and isinstance(part, dict)
                  and part.get("type") == "image_url"):
                pieces.append(image_placeholder)
        return "\n".join(pieces)
    return str(content)


def searchable_text(message: dict[str, Any], metadata: dict[str, Any] | None = None) -> str:
    """All words of a message worth finding by search, one block of text.

    Without NUL characters: PostgreSQL's text cannot hold one (the message
    itself keeps it, escaped in its JSON), and no one searches for one.
    """
    pieces = [content_text(message.get("content"))]
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        if isinstance(function, dict):
            pieces.append(str(function.get("name", "")))
            pieces.append(str(function.get("arguments", "")))
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str):
            pieces.append(message[key])
    if metadata and isinstance(metadata.get("thinking"), str):
        pieces.append(metadata["thinking"])
    return "\n".join(p for p in pieces if p).replace("\x00", " ")
