"""The client's half of one server's session: what it answers and what it is told.

Given to the SDK's ``Client`` as its callbacks, so the server sees exactly the
capabilities answered here: ``sampling`` (the caller's model, after its
approval, within a per-turn limit), ``elicitation`` (form and URL, shown by the
caller), ``roots`` (the caller's folders, with ``list_changed``). Notifications
are kept: log messages in the server's :class:`~.server_log.ServerLog`, a
changed tool, prompt or resource list as a flag the pool acts on before the
next request, an updated resource's URI until the app takes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types

from desktop_agent.core.tooling.mcp.elicitation_form import UnsupportedForm, form_fields
from desktop_agent.core.tooling.mcp.server_log import ServerLog
from desktop_agent.core.tooling.mcp.server_requests import (
    ElicitationRequest,
    McpCaller,
    SamplingMessage,
    SamplingRequest,
    ServerRequestRefused,
)
from desktop_agent.image_data import ImageDataError, data_uri

log = logging.getLogger("desktop_agent.mcp")


def _error(message: str, code: int = mcp_types.INVALID_REQUEST) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(code=code, message=message)


def _blocks(content: Any) -> list[Any]:
    return list(content) if isinstance(content, list) else [content]


def sampling_message(message: Any) -> SamplingMessage:
    """One ``SamplingMessage`` of the SDK as text (and pictures) for a model."""
    texts: list[str] = []
    images: list[str] = []
    for block in _blocks(message.content):
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            try:
                import base64

                images.append(data_uri(base64.b64decode(block.data), block.mime_type))
            except (ValueError, ImageDataError):
                texts.append(f"[a picture ({block.mime_type}) that cannot be sent]")
        elif isinstance(block, mcp_types.AudioContent):
            texts.append(f"[a sound ({block.mime_type}) that cannot be sent]")
        else:
            texts.append(f"[{getattr(block, 'type', 'content')} content]")
    return SamplingMessage(str(message.role), "\n".join(texts), tuple(images))


class ClientSide:
    """The callbacks and the notices of one server's session.

    Args:
        server: The configured name of the server.
        redact: Blanks the server's secrets out of text kept here.

    Attributes:
        log: The server's log messages.
        tools_stale: The server said its tool list changed; list it again.
        prompts_stale: Its prompt list changed.
        resources_stale: Its resource list changed.
        tool_changes: How many times its tool list changed.
        tool_change_note: What the last change did, in words (set by the pool).
        updated: Subscribed resources the server said changed, not yet taken.
        roots: The folders the server was last told about.
        last_caller: Who used the server last.
    """

    def __init__(self, server: str, redact: Callable[[str], str]) -> None:
        self.server = server
        self._redact = redact
        self.log = ServerLog(server)
        self.tools_stale = False
        self.prompts_stale = False
        self.resources_stale = False
        self.tool_changes = 0
        self.tool_change_note: str | None = None
        self.tool_changed_at: float | None = None
        self.updated: set[str] = set()
        self.roots: tuple[Path, ...] = ()
        self.last_caller: McpCaller | None = None
        self._callers: list[McpCaller] = []
        self._asking = asyncio.Lock()  # one sampling question of a server at a time

    # -- who asks ------------------------------------------------------------------------
    def enter(self, caller: McpCaller | None) -> bool:
        """A request of ``caller`` starts; True when the server must hear of new roots."""
        if caller is None:
            return False
        self._callers.append(caller)
        self.last_caller = caller
        if caller.roots != self.roots:
            self.roots = caller.roots
            return True
        return False

    def leave(self, caller: McpCaller | None) -> None:
        """A request of ``caller`` ended."""
        if caller is not None and caller in self._callers:
            self._callers.remove(caller)

    def caller(self) -> McpCaller | None:
        """The newest caller with a request in flight, else the last one."""
        return self._callers[-1] if self._callers else self.last_caller

    # -- the SDK's callbacks --------------------------------------------------------------
    async def on_sampling(self, _context: Any, params: Any) -> Any:
        """``sampling/createMessage``: the caller's model answers, if it allows."""
        caller = self.caller()
        if caller is None or caller.sampling is None:
            return _error("This client has no model to sample with now (no conversation "
                          "is using the server).")
        used = caller.counts.get(self.server, 0) + 1
        caller.counts[self.server] = used
        if used > caller.sampling_limit:
            if used == caller.sampling_limit + 1:
                self.log.add("warning", f"sampling refused: more than {caller.sampling_limit} "
                             "requests in one turn", "desktop-agent")
            return _error(f"Sampling limit reached: this server may ask for "
                          f"{caller.sampling_limit} answers per turn.")
        request = SamplingRequest(
            self.server, tuple(sampling_message(m) for m in params.messages),
            params.system_prompt, int(params.max_tokens), params.temperature,
            tuple(params.stop_sequences or ()),
            tuple(h.name for h in (params.model_preferences.hints or ())
                  if h.name) if params.model_preferences else ())
        async with self._asking:
            try:
                reply = await caller.sampling(request)
            except ServerRequestRefused as exc:
                return _error(str(exc) or "The person denied the request.")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("sampling for %s failed", self.server, exc_info=True)
                return _error(self._redact(f"The model could not answer: {exc}"),
                              mcp_types.INTERNAL_ERROR)
        return mcp_types.CreateMessageResult(
            role="assistant", content=mcp_types.TextContent(type="text", text=reply.text),
            model=reply.model, stop_reason=reply.stop_reason)

    async def on_elicitation(self, _context: Any, params: Any) -> Any:
        """``elicitation/create``: a form (or a link) the caller shows the person."""
        caller = self.caller()
        if caller is None or caller.elicitation is None:
            return _error("No one can answer this request now (no conversation is using "
                          "the server).")
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            request = ElicitationRequest(self.server, params.message, "url", url=params.url,
                                         elicitation_id=params.elicitation_id)
        else:
            try:
                fields = form_fields(params.requested_schema)
            except UnsupportedForm as exc:
                reason = f"Declined: {exc}."
                self.log.add("warning", f"elicitation refused: {exc}", "desktop-agent")
                return _error(reason, mcp_types.INVALID_PARAMS)
            request = ElicitationRequest(self.server, params.message, "form", fields)
        answer = await caller.elicitation(request)
        content = answer.content if answer.action == "accept" else None
        return mcp_types.ElicitResult(action=answer.action, content=content)

    async def on_list_roots(self, _context: Any) -> Any:
        """``roots/list``: the caller's folders."""
        caller = self.caller()
        if caller is not None:
            self.roots = caller.roots
        return mcp_types.ListRootsResult(roots=[
            mcp_types.Root.model_validate({"uri": path.as_uri(), "name": path.name or str(path)})
            for path in self.roots])

    async def on_log(self, params: Any) -> None:
        """``notifications/message``: kept for the person, never sent to a model."""
        self.log.add(str(params.level), params.data, params.logger, self._redact)

    async def on_message(self, message: Any) -> None:
        """The other notifications: list changes and resource updates."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.tools_stale = True
            self.tool_changes += 1
            self.tool_changed_at = time.time()
        elif isinstance(message, mcp_types.PromptListChangedNotification):
            self.prompts_stale = True
        elif isinstance(message, mcp_types.ResourceListChangedNotification):
            self.resources_stale = True
        elif isinstance(message, mcp_types.ResourceUpdatedNotification):
            self.updated.add(str(message.params.uri))
        elif isinstance(message, Exception):
            log.debug("MCP server %s transport: %s", self.server, message)

    def take_updated(self) -> list[str]:
        """The resources that changed since the last call (each reported once)."""
        taken, self.updated = sorted(self.updated), set()
        return taken
