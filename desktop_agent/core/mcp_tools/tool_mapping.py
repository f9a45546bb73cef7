"""How MCP tools map onto core tools: safe names and the text of results."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable

import mcp_types

log = logging.getLogger(__name__)

_MAX_NAME = 64
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


def render_result(result: mcp_types.CallToolResult) -> str:
    """The text the model gets from an MCP tool result.

    Text blocks are joined; images, audio and binary resources are described,
    not inlined. Structured content is used when the server sent no text (the
    spec asks servers to mirror it as text, so using both would repeat it).
    """
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
            parts.append(f"[{kind} {block.mime_type}, about {len(block.data) * 3 // 4} bytes]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                parts.append(f"[resource {resource.uri}, {resource.mime_type or 'binary'}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[link {block.name}: {block.uri}]")
    text = "\n".join(parts)
    if not parts and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return text
