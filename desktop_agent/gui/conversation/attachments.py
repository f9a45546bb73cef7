"""Files and MCP resources attached to a message: pictures become image parts, text is inlined.

Why here and not in the composer: what a file becomes in the request is a
rule (image kinds, a size cap for inlined text), not a widget's business; the
composer only lists names. The parts are exactly the OpenAI-style content
parts ``Client.query()`` takes (``desktop_agent.core.context.content_parts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.image_data import ImageDataError, check_image, data_uri, sniff_mime

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.mcp_items import ResourceContent

#: Text files longer than this are cut (the model's context is not a file store).
TEXT_LIMIT = 100_000


class AttachmentError(ValueError):
    """A file that cannot be attached; the message says why, as a sentence."""


@dataclass(frozen=True)
class Attachment:
    """One attached file or MCP resource.

    Attributes:
        name: The file name shown on its chip.
        image_url: A ``data:`` URI for a picture (None for text).
        text: The inlined text for a text file (None for a picture).
        cut: Whether the text was cut at :data:`TEXT_LIMIT`.
        source: Where a resource came from (its URI), named with its text; None for a file.
        about: What stands for content that is neither text nor a picture (binary data:
            the model reads its name, type and size only).
    """

    name: str
    image_url: str | None = None
    text: str | None = None
    cut: bool = False
    source: str | None = None
    about: str | None = None


def resource_attachment(server: str, content: ResourceContent,
                        label: str | None = None) -> Attachment:
    """An MCP resource's content as the paperclip would attach it.

    Text is inlined and named by its URI, a picture goes as a picture, and binary
    data is named only (with its type and size), as no model reads raw bytes.
    ``label``: the chip's name instead of the content's (a template's name and values).
    """
    name = f"{server}:{label or content.name}"
    if content.image_url is not None:
        return Attachment(name, image_url=content.image_url, source=content.uri)
    if content.text is not None:
        return Attachment(name, text=content.text, cut=content.cut, source=content.uri)
    kind = content.mime_type or "binary data"
    return Attachment(name, source=content.uri,
                      about=f"[{kind}, {content.size:,} bytes: not included, only named]")


def read_attachment(path: str | Path) -> Attachment:
    """Read a file as a picture or as text.

    Raises:
        AttachmentError: Not a file, not a supported picture and not UTF-8 text.
    """
    file = Path(path)
    if not file.is_file():
        raise AttachmentError(f"{file.name} is not a file.")
    data = file.read_bytes()
    if sniff_mime(data) is not None:
        try:
            check_image(data)
            return Attachment(file.name, image_url=data_uri(data))
        except ImageDataError as exc:
            raise AttachmentError(f"{file.name}: {exc}") from None
    if b"\x00" in data[:8192]:
        raise AttachmentError(f"{file.name} is neither a picture (PNG, JPEG, GIF, WebP) "
                              "nor a text file, so it cannot be attached.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    cut = len(text) > TEXT_LIMIT
    return Attachment(file.name, text=text[:TEXT_LIMIT] if cut else text, cut=cut)


def message_text(text: str, attachments: list[Attachment]) -> str:
    """The typed text followed by every attached text file, fenced and named."""
    blocks = [text.strip()] if text.strip() else []
    for item in attachments:
        title = f"{item.name} ({item.source})" if item.source else item.name
        if item.text is not None:
            note = f"\n[cut at {TEXT_LIMIT:,} characters]" if item.cut else ""
            blocks.append(f"{title}:\n```\n{item.text}\n```{note}")
        elif item.about is not None:
            blocks.append(f"{title}: {item.about}")
    return "\n\n".join(blocks)


def message_content(text: str, attachments: list[Attachment]) -> str | list[dict[str, Any]]:
    """What to send: a string, or content parts (text first) when pictures are attached."""
    body = message_text(text, attachments)
    images = [a for a in attachments if a.image_url is not None]
    if not images:
        return body
    parts: list[dict[str, Any]] = [{"type": "text", "text": body}] if body else []
    parts += [{"type": "image_url", "image_url": {"url": a.image_url}} for a in images]
    return parts


def shown_text(text: str, attachments: list[Attachment]) -> str:
    """How the sent message reads in the transcript: the text sent (with text files).

    The pictures are not named here: the transcript shows them as pictures.
    """
    return message_text(text, attachments).strip()
