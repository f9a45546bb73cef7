"""One conversation's view of the shared MCP servers: prompts, resources, and who answers them.

The servers are the app's (:class:`~desktop_agent.session.tools.tool_catalog.ToolCatalog`
holds the pool); what they ask is answered for the conversation using them:
its model runs their sampling requests after a person allows
(:class:`~.server_questions.ServerQuestions`), its person fills their forms,
and its working folder is their root (a conversation in another folder using
the same server makes the server hear ``roots/list_changed``). A resource
attached to a message is subscribed to; when the server says it changed, the
next turn reads it again and its prompt says so
(:data:`RESOURCE_CHANGES` in the prompt's metadata, read by
:func:`~desktop_agent.session.branch.branch_reading.model_history`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling.mcp.server_requests import (
    DEFAULT_SAMPLING_LIMIT,
    McpCaller,
    SamplingReply,
    SamplingRequest,
    ServerRequestRefused,
    using_caller,
)
from desktop_agent.session.branch.branch_reading import RESOURCE_CHANGES
from desktop_agent.session.mcp.server_questions import ServerQuestions
from desktop_agent.session.tools.tool_catalog import ToolCatalog, WorkdirError, workdir_path

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.mcp_items import (
        McpPrompt,
        McpResource,
        McpResourceTemplate,
        PromptText,
        ResourceContent,
    )
    from desktop_agent.core.tooling.mcp.server_pool import McpServerPool

log = logging.getLogger("desktop_agent.session.mcp")

ModelRun = Callable[[SamplingRequest], Awaitable[SamplingReply]]


class NoMcpServers(Exception):
    """No MCP server is configured (or config.json cannot be read); the message says which."""


class ConversationMcp:
    """The MCP servers as one conversation uses them.

    Args:
        conversation_id: The conversation.
        settings: Returns its current settings (the working folder).
        tools: The app's tool catalog (it holds the servers).
        questions: Where servers' sampling and elicitation wait for a person.
        model: Runs a sampling request on the conversation's model.
    """

    def __init__(self, conversation_id: str, settings: Callable[[], Mapping[str, Any]],
                 tools: ToolCatalog, questions: ServerQuestions, model: ModelRun) -> None:
        self._conversation_id = conversation_id
        self._settings = settings
        self._tools = tools
        self.questions = questions
        self._model = model
        self._subscribed: set[tuple[str, str]] = set()

    # -- who answers the servers ----------------------------------------------------------
    def roots(self) -> tuple[Path, ...]:
        """The folders the servers may work in: the conversation's working folder."""
        try:
            return (workdir_path(self._conversation_id, self._settings(),
                                 self._tools.workdirs_root),)
        except WorkdirError:
            return ()

    async def sampling(self, request: SamplingRequest) -> SamplingReply:
        """A server's sampling request: asked, then run on the conversation's model."""
        return await self.questions.sampling(request, self._model)

    def caller(self) -> McpCaller:
        """The conversation as the servers' caller (for requests made outside a turn)."""
        return McpCaller(self.sampling, self.questions.elicitation, self.roots(),
                         DEFAULT_SAMPLING_LIMIT, label=self._conversation_id)

    async def _pool(self) -> McpServerPool:
        pool = await self._tools.mcp_pool()
        if pool is None:
            raise NoMcpServers(self._tools.problem or "No MCP server is configured.")
        return pool

    # -- what the servers offer ---------------------------------------------------------
    async def prompts(self) -> list[McpPrompt]:
        """Every enabled server's prompts (none when no server is configured)."""
        try:
            pool = await self._pool()
        except NoMcpServers:
            return []
        with using_caller(self.caller()):
            return await pool.list_prompts()

    async def resources(self) -> tuple[list[McpResource], list[McpResourceTemplate]]:
        """Every enabled server's resources and resource templates."""
        try:
            pool = await self._pool()
        except NoMcpServers:
            return [], []
        with using_caller(self.caller()):
            listed, templates = await asyncio.gather(pool.list_resources(),
                                                     pool.list_resource_templates())
        return listed, templates

    async def get_prompt(self, server: str, name: str,
                         arguments: Mapping[str, str] | None = None) -> PromptText:
        """A prompt's result as the text to send (shown before sending; cut when huge).

        Raises:
            NoMcpServers: No server is configured.
            McpServerError: The server refused (a missing argument...) or failed.
        """
        pool = await self._pool()
        with using_caller(self.caller()):
            return await pool.get_prompt(server, name, arguments)

    async def complete(self, server: str, ref: tuple[str, str], argument: str, value: str,
                       context: Mapping[str, str] | None = None) -> list[str]:
        """Suggestions for an argument of a prompt or a template (``completion/complete``)."""
        pool = await self._pool()
        with using_caller(self.caller()):
            return await pool.complete(server, ref, argument, value, context)

    async def attach(self, server: str, uri: str) -> list[ResourceContent]:
        """Read a resource to attach to a message, and follow its changes if the server can.

        Raises:
            NoMcpServers: No server is configured.
            McpServerError: The server refused or failed.
        """
        pool = await self._pool()
        with using_caller(self.caller()):
            contents = await pool.read_content(server, uri)
            if (server, uri) not in self._subscribed:
                try:
                    if await pool.subscribe(server, uri):
                        self._subscribed.add((server, uri))
                except Exception as exc:  # noqa: BLE001 - attaching works without updates
                    log.info("could not subscribe to %s on %s: %s", uri, server, exc)
        return contents

    async def resource_changes(self) -> list[dict[str, Any]]:
        """Subscribed resources that changed, read again: ``{server, uri, text}`` each.

        Called at the start of a turn; each change is reported once.
        """
        pool = self._tools.running_pool()
        if pool is None or not self._subscribed:
            return []
        changed = [item for item in pool.take_updated() if item in self._subscribed]
        found: list[dict[str, Any]] = []
        with using_caller(self.caller()):
            for server, uri in changed:
                try:
                    contents = await pool.read_content(server, uri)
                except Exception as exc:  # noqa: BLE001 - said in the note instead
                    found.append({"server": server, "uri": uri,
                                  "text": f"(it could not be read again: {exc})"})
                    continue
                text = "\n".join(c.text if c.text is not None else
                                 f"[{c.mime_type or 'binary'} data, {c.size} bytes]"
                                 for c in contents)
                found.append({"server": server, "uri": uri, "text": text})
        return found


__all__ = ["RESOURCE_CHANGES", "ConversationMcp", "NoMcpServers", "ServerRequestRefused"]
