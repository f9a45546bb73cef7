"""Images as data URIs: which kinds are accepted, how big, and how they are checked.

One module shared by the core (prompts with images), the store (messages
written and imported) and the REST server (image parts in a request), so the
three agree on what an image is. Images travel as OpenAI ``image_url`` parts
whose URL is a ``data:`` URI: the conversation then holds the picture itself,
works offline, and an export can embed it. The bytes are sniffed, not
trusted: a part that says ``image/png`` but holds a script is refused.

It sits at the package root, beside the layers rather than in one: the core and
the store both need it and must not import each other (the import-linter layers
in pyproject.toml), and it knows nothing of either.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

#: Image kinds every vision-capable local server reads.
IMAGE_MIME_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: Largest decoded image accepted (the OpenAI API's own limit per image).
MAX_IMAGE_BYTES = 20 * 1024 * 1024

_DATA_URI = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+)(?P<params>(?:;[\w.+-]+=[\w.+-]+)*)"
                       r";base64,(?P<data>.*)", re.DOTALL)


class ImageDataError(ValueError):
    """An image part that cannot be sent or kept; the message is one sentence."""


def sniff_mime(data: bytes) -> str | None:
    """The image kind from the first bytes, or None when it is not one we accept."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def check_image(data: bytes, mime: str | None = None) -> str:
    """Check image bytes and return their MIME type.

    Args:
        data: The image file's bytes.
        mime: The declared type; None takes the type the bytes show.

    Raises:
        ImageDataError: Too large, not an accepted kind, or not what ``mime`` says.
    """
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageDataError(
            f"The image is {len(data) / 1_048_576:.1f} MB; images of up to "
            f"{MAX_IMAGE_BYTES // 1_048_576} MB can be sent.")
    declared = (mime or "").lower().replace("image/jpg", "image/jpeg")
    if declared and declared not in IMAGE_MIME_TYPES:
        raise ImageDataError(f"Images of type {declared[:60]!r} cannot be sent; use PNG, JPEG, "
                             "GIF or WebP.")
    found = sniff_mime(data)
    if found is None:
        raise ImageDataError("The image is not a PNG, JPEG, GIF or WebP picture, the kinds "
                             "a model server reads.")
    if declared and declared != found:
        raise ImageDataError(f"The image says it is {declared} but its data is {found}.")
    return found


def data_uri(data: bytes, mime: str | None = None) -> str:
    """A checked ``data:<mime>;base64,...`` URI for image bytes."""
    kind = check_image(data, mime)
    return f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}"


def part_url(part: Any) -> str | None:
    """The URL of an OpenAI ``image_url`` content part (None: not one, or no URL)."""
    if not isinstance(part, dict) or part.get("type") != "image_url":
        return None
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else None
    return url if isinstance(url, str) else None


def decode_data_uri(url: str) -> tuple[str, bytes]:
    """The MIME type and bytes of an image data URI, checked.

    Raises:
        ImageDataError: Not a base64 data URI, or not an acceptable image.
    """
    if not isinstance(url, str) or not url.startswith("data:"):
        raise ImageDataError("Images must be embedded as data: URIs (base64), not links; "
                             "the conversation keeps the picture itself.")
    # a quick bound before decoding: base64 is 4 characters per 3 bytes
    if len(url) > (MAX_IMAGE_BYTES * 4) // 3 + 200:
        raise ImageDataError(f"The image is larger than {MAX_IMAGE_BYTES // 1_048_576} MB, "
                             "the most that can be sent.")
    match = _DATA_URI.fullmatch(url)
    if match is None:
        raise ImageDataError("The image's data: URI is not base64 encoded "
                             "(data:image/png;base64,...).")
    try:
        data = base64.b64decode(match["data"], validate=True)
    except (binascii.Error, ValueError):
        raise ImageDataError("The image's base64 data is damaged.") from None
    return check_image(data, match["mime"]), data
