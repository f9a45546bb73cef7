"""How MCP tools map onto core tools: safe names, and results as text and pictures."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
from collections.abc import Iterable

import mcp_types

from desktop_agent.core.tooling.output import ToolOutput
from desktop_agent.image_data import ImageDataError, data_uri

log = logging.getLogger(__name__)

_MAX_NAME = 64
#: Largest decoded text blob put into a result (the rest is cut).
MAX_BLOB_TEXT = 200_000
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript",
                         "application/x-yaml", "application/yaml", "application/toml"})
_SAFE = re.compile(r'[^A-Za-z0-9_-]')


def core_tool_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """``<server>__<tool>`` made safe for the model: allowed characters, at most 64 long.

    The name depends only on the configured server name and the tool's name,
    never on which server started first: an *Always allow* rule names a tool,
    so ``ev.a`` and ``ev_a`` must never swap names between start-ups. When
    making the name safe changed it (or it was too long), a digest of the
    original pair is appended, so two servers that look alike stay apart. A
    name still taken (a digest collision) is logged as a collision.
    """
    raw = f"{server}__{tool}"
    name = f"{_SAFE.sub('_', server)}__{_SAFE.sub('_', tool)}"
    if name != raw or len(name) > _MAX_NAME:
        digest = hashlib.sha1(f"{server}\x00{tool}".encode()).hexdigest()[:8]
        name = f"{name[:_MAX_NAME - 9]}_{digest}"
    if name in set(taken):
        log.warning("MCP tool name collision: %r from server %r is already in use", name, server)
    return name


def _for_user_only(block: object) -> bool:
    """Content annotated ``audience: ["user"]``: for the person, not the model."""
    annotations = getattr(block, "annotations", None)
    audience = getattr(annotations, "audience", None)
    return isinstance(audience, list) and bool(audience) and "assistant" not in audience


def _picture(data: str, mime: str | None) -> dict[str, object] | None:
    """An ``image_url`` part from base64 data, or None when it is not a picture we send."""
    try:
        raw = base64.b64decode(data, validate=True)
        return {"type": "image_url", "image_url": {"url": data_uri(raw, mime)}}
    except (ValueError, binascii.Error, ImageDataError):
        return None


def _blob_text(blob: str, mime: str | None) -> str | None:
    """A blob's text when its type says it is text (``text/*``, JSON, XML...)."""
    kind = (mime or "").split(";")[0].strip().lower()
    if not (kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml"))):
        return None
    try:
        raw = base64.b64decode(blob, validate=True)
    except (ValueError, binascii.Error):
        return None
    if len(raw) > MAX_BLOB_TEXT:
        raw = raw[:MAX_BLOB_TEXT]
    return raw.decode("utf-8", errors="replace")


def render_contents(contents: Iterable[object]) -> ToolOutput:
    """Resource contents (``resources/read``, embedded resources) as a tool output."""
    text: list[str] = []
    images: list[dict[str, object]] = []
    for resource in contents:
        uri = getattr(resource, "uri", "?")
        mime = getattr(resource, "mime_type", None)
        if isinstance(resource, mcp_types.TextResourceContents):
            text.append(f"[resource {uri}]\n{resource.text}")
        elif isinstance(resource, mcp_types.BlobResourceContents):
            decoded = _blob_text(resource.blob, mime)
            picture = None if decoded is not None else (
                _picture(resource.blob, mime) if (mime or "").startswith("image/") else None)
            if decoded is not None:
                text.append(f"[resource {uri}, {mime}]\n{decoded}")
            elif picture is not None:
                images.append(picture)
                text.append(f"[resource {uri}: picture {mime}]")
            else:
                size = len(resource.blob) * 3 // 4
                text.append(f"[resource {uri}: {mime or 'binary'} data, about {size} bytes, "
                            "not shown]")
    return ToolOutput("\n".join(text), images)


def render_result(result: mcp_types.CallToolResult) -> ToolOutput:
    """What the model and the person get from an MCP tool result.

    Text blocks are joined; pictures become ``image_url`` parts (sent to a model
    that can see); text blobs are decoded; other binary data is described.
    Content for ``audience: ["user"]`` goes to the person only. Resource links
    name their URI, which the server's ``read_resource`` tool can read.
    Structured content is used when the server sent no text (the spec asks
    servers to mirror it as text, so using both would repeat it).
    """
    model: list[str] = []
    person: list[str] = []
    images: list[dict[str, object]] = []
    for block in result.content:
        target = person if _for_user_only(block) else model
        if isinstance(block, mcp_types.TextContent):
            target.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            picture = _picture(block.data, block.mime_type)
            if target is person:
                target.append(f"[picture {block.mime_type}]")
            elif picture is not None:
                images.append(picture)
            else:
                target.append(f"[image {block.mime_type}, about {len(block.data) * 3 // 4} "
                              "bytes, in a format that cannot be sent]")
        elif isinstance(block, mcp_types.AudioContent):
            target.append(f"[audio {block.mime_type}, about {len(block.data) * 3 // 4} bytes]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            inner = render_contents([block.resource])
            target.append(inner.text)
            if target is model:
                images.extend(inner.images)
        elif isinstance(block, mcp_types.ResourceLink):
            target.append(f"[resource link {block.name}: {block.uri}"
                          f"{', ' + block.mime_type if block.mime_type else ''}]")
    text = "\n".join(model)
    if not model and not images and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return ToolOutput(text, images, "\n".join(person))
