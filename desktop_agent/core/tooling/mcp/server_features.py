"""A server's prompts, resources, templates, completion and subscriptions, read through its session.

Each function sends one kind of request through
:meth:`~.server_connection.McpServerConnection.request` (so it shares the
connection's timeout, reconnect and error words) and turns the SDK's answer
into the plain values of :mod:`.mcp_items`. Listings follow cursors, at most
:data:`MAX_PAGES` pages, so a server that never stops paging cannot hang the app.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types

from desktop_agent.core.tooling.mcp.mcp_items import (
    PROMPT_TEXT_LIMIT,
    RESOURCE_TEXT_LIMIT,
    McpPrompt,
    McpResource,
    McpResourceTemplate,
    PromptArgument,
    PromptText,
    ResourceContent,
)
from desktop_agent.core.tooling.mcp.server_log import LOG_LEVELS
from desktop_agent.core.tooling.mcp.tool_mapping import render_contents
from desktop_agent.image_data import ImageDataError, data_uri

if TYPE_CHECKING:
    from mcp import Client as McpClient
    from mcp.client.caching import CacheMode

    from desktop_agent.core.tooling.mcp.server_connection import McpServerConnection

MAX_PAGES = 50


async def _pages(connection: McpServerConnection, what: str,
                 fetch: Callable[[McpClient, str | None], Awaitable[Any]],
                 key: str) -> list[Any]:
    async def run(client: McpClient) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await fetch(client, cursor)
            items.extend(getattr(page, key))
            cursor = page.next_cursor
            if not cursor:
                break
        return items

    result: list[Any] = await connection.request(run, what)
    return result


def _supports(connection: McpServerConnection, capability: str) -> bool:
    capabilities = connection.server_capabilities
    return capabilities is not None and getattr(capabilities, capability, None) is not None


async def list_prompts(connection: McpServerConnection) -> list[McpPrompt]:
    """The server's prompts (none when it declares no prompts capability)."""
    await connection.ensure_running()
    if not _supports(connection, "prompts"):
        return []
    fresh = connection.client_side.prompts_stale
    connection.client_side.prompts_stale = False
    mode: CacheMode = "refresh" if fresh else "use"
    prompts = await _pages(connection, "prompts/list",
                           lambda c, cursor: c.list_prompts(cursor=cursor, cache_mode=mode),
                           "prompts")
    return [McpPrompt(connection.name, p.name, p.title, p.description,
                      tuple(PromptArgument(a.name, a.description, bool(a.required))
                            for a in p.arguments or ()))
            for p in prompts]


async def list_resources(connection: McpServerConnection) -> list[McpResource]:
    """The server's resources (none when it declares no resources capability)."""
    await connection.ensure_running()
    if not _supports(connection, "resources"):
        return []
    mode: CacheMode = "refresh" if connection.client_side.resources_stale else "use"
    connection.client_side.resources_stale = False
    found = await _pages(connection, "resources/list",
                         lambda c, cursor: c.list_resources(cursor=cursor, cache_mode=mode),
                         "resources")
    return [McpResource(connection.name, str(r.uri), r.name, r.title, r.description,
                        r.mime_type, r.size) for r in found]


async def list_templates(connection: McpServerConnection) -> list[McpResourceTemplate]:
    """The server's resource templates."""
    await connection.ensure_running()
    if not _supports(connection, "resources"):
        return []
    found = await _pages(
        connection, "resources/templates/list",
        lambda c, cursor: c.list_resource_templates(cursor=cursor, cache_mode="refresh"),
        "resource_templates")
    return [McpResourceTemplate(connection.name, t.uri_template, t.name, t.title,
                                t.description, t.mime_type) for t in found]


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text[:limit], True) if len(text) > limit else (text, False)


def _prompt_block(block: Any, images: list[str]) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent):
        try:
            images.append(data_uri(base64.b64decode(block.data), block.mime_type))
            return ""
        except (ValueError, binascii.Error, ImageDataError):
            return f"[a picture ({block.mime_type}) that cannot be sent]"
    if isinstance(block, mcp_types.EmbeddedResource):
        rendered = render_contents([block.resource])
        images.extend(str(url["url"]) for part in rendered.images
                      if isinstance(url := part.get("image_url"), dict))
        return rendered.text
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource {block.name}: {block.uri}]"
    return f"[{getattr(block, 'type', 'content')} content]"


def prompt_text(messages: list[Any], limit: int = PROMPT_TEXT_LIMIT) -> PromptText:
    """A prompt's messages as one text to send; longer than ``limit`` is cut and says so."""
    images: list[str] = []
    parts: list[tuple[str, str]] = []
    for message in messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(t for t in (_prompt_block(b, images) for b in blocks) if t)
        parts.append((str(message.role), text))
        if sum(len(t) for _, t in parts) > limit * 2:
            break  # the rest would be cut anyway
    only_user = all(role == "user" for role, _ in parts)
    whole = "\n\n".join(text if only_user else f"{role.capitalize()}: {text}"
                        for role, text in parts)
    size = sum(len(t) for _, t in parts) if len(parts) == len(messages) else len(whole)
    text, cut = _cut(whole, limit)
    if cut:
        text += (f"\n\n[The prompt's text was cut at {limit:,} characters; it had "
                 f"{max(size, len(whole)):,}.]")
    kept = tuple((role, _cut(t, limit)[0]) for role, t in parts)
    return PromptText(text, tuple(images), cut, max(size, len(whole)), kept)


async def get_prompt(connection: McpServerConnection, name: str,
                     arguments: dict[str, str]) -> PromptText:
    """Get one prompt with its arguments, as text to send (cut when huge)."""
    async def run(client: McpClient) -> mcp_types.GetPromptResult:
        return await client.get_prompt(name, arguments or None)

    result: mcp_types.GetPromptResult = await connection.request(run, f"prompt {name}")
    return prompt_text(list(result.messages))


async def complete(connection: McpServerConnection, ref: tuple[str, str], argument: str,
                   value: str, context: dict[str, str] | None = None) -> list[str]:
    """Suggestions for one argument (``completion/complete``); none when the server has none.

    ``ref``: ``("prompt", name)`` or ``("template", uri_template)``.
    """
    await connection.ensure_running()
    if not _supports(connection, "completions"):
        return []
    kind, target = ref
    reference: Any = (mcp_types.PromptReference(type="ref/prompt", name=target)
                      if kind == "prompt" else
                      mcp_types.ResourceTemplateReference(type="ref/resource", uri=target))

    async def run(client: McpClient) -> mcp_types.CompleteResult:
        return await client.complete(reference, {"name": argument, "value": value},
                                     context or None)

    result: mcp_types.CompleteResult = await connection.request(run, f"completion of {argument}")
    return [str(v) for v in result.completion.values][:100]


async def read_content(connection: McpServerConnection, uri: str,
                       limit: int = RESOURCE_TEXT_LIMIT) -> list[ResourceContent]:
    """A resource read for a message: each content as text, a picture or a named blob."""
    async def run(client: McpClient) -> mcp_types.ReadResourceResult:
        return await client.read_resource(uri, cache_mode="bypass")

    result: mcp_types.ReadResourceResult = await connection.request(run, f"read {uri}")
    items: list[ResourceContent] = []
    for content in result.contents:
        item_uri = str(getattr(content, "uri", uri))
        name = item_uri.rstrip("/").rsplit("/", 1)[-1] or item_uri
        mime = getattr(content, "mime_type", None)
        if isinstance(content, mcp_types.TextResourceContents):
            text, cut = _cut(content.text, limit)
            items.append(ResourceContent(item_uri, name, mime, text=connection.redact(text),
                                         size=len(content.text), cut=cut))
            continue
        blob = getattr(content, "blob", "")
        try:
            raw = base64.b64decode(blob, validate=True)
        except (ValueError, binascii.Error):
            raw = b""
        rendered = render_contents([content])
        if rendered.images:
            url = rendered.images[0].get("image_url")
            items.append(ResourceContent(item_uri, name, mime,
                                         image_url=str(url["url"]) if isinstance(url, dict)
                                         else None, size=len(raw)))
        elif "\n" in rendered.text and not rendered.text.endswith("not shown]"):
            body = rendered.text.split("\n", 1)[1]
            text, cut = _cut(body, limit)
            items.append(ResourceContent(item_uri, name, mime, text=connection.redact(text),
                                         size=len(raw), cut=cut))
        else:
            items.append(ResourceContent(item_uri, name, mime, size=len(raw)))
    return items


async def subscribe(connection: McpServerConnection, uri: str, on: bool = True) -> bool:
    """Subscribe to (or leave) a resource's updates; False when the server cannot."""
    await connection.ensure_running()
    capabilities = connection.server_capabilities
    resources = getattr(capabilities, "resources", None)
    if resources is None or not getattr(resources, "subscribe", False):
        return False
    request: Any = (mcp_types.SubscribeRequest(params=mcp_types.SubscribeRequestParams(uri=uri))
                    if on else mcp_types.UnsubscribeRequest(
                        params=mcp_types.UnsubscribeRequestParams(uri=uri)))

    async def run(client: McpClient) -> Any:
        # through send_request: the SDK's subscribe_resource warns that 2026 servers
        # dropped it, and the servers of today still speak it
        return await client.session.send_request(request, mcp_types.EmptyResult)

    await connection.request(run, f"{'subscribe to' if on else 'unsubscribe from'} {uri}")
    return True


async def set_log_level(connection: McpServerConnection, level: str) -> bool:
    """Ask the server to send log messages at ``level`` and above; False when it has no logging.

    Raises:
        ValueError: ``level`` is not an MCP log level.
    """
    if level not in LOG_LEVELS:
        raise ValueError(f"{level!r} is not a log level; choose one of {', '.join(LOG_LEVELS)}")
    connection.client_side.log.level = level
    await connection.ensure_running()
    if not _supports(connection, "logging"):
        return False
    await connection.apply_log_level()
    return True
