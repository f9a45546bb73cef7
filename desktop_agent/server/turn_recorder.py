"""Write a running turn to the store as it happens, mirroring the Client's history.

The client's history is the truth about what the turn added (assistant
messages with their tool calls, tool results, partial text after an
interrupt). The recorder copies each new history entry into the store once,
at round boundaries and at the end, so store and history never disagree.
Meanwhile the reply being streamed lives in the store as a ``streaming``
message, checkpointed about once a second, so the window (or a crash) sees
text as it grows and loses at most the last second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from desktop_agent.core.types import Usage

if TYPE_CHECKING:
    from desktop_agent.core.client import Client
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.server.recorder")

CHECKPOINT_INTERVAL = 1.0

Emit = Callable[[str, dict[str, Any]], None]


class TurnRecorder:
    """Keeps the store in step with one turn.

    Attributes:
        usage: The turn's usage once it arrived (stored with the last reply).
    """

    def __init__(self, store: Store, conversation_id: str, emit: Emit, written: int) -> None:
        self._store = store
        self._conversation_id = conversation_id
        self._emit = emit
        self._written = written
        self._open_id: str | None = None
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._last_checkpoint = 0.0
        self._after_tools = False
        self.usage: Usage | None = None

    async def _ensure_open(self, client: Client) -> None:
        if self._after_tools:
            await self.sync(client.history)
            self._after_tools = False
        if self._open_id is None:
            record = await asyncio.to_thread(
                self._store.add_message, self._conversation_id,
                {"role": "assistant", "content": ""}, status="streaming",
            )
            self._open_id = record.id
            self._last_checkpoint = time.monotonic()

    async def _maybe_checkpoint(self) -> None:
        now = time.monotonic()
        if self._open_id is None or now - self._last_checkpoint < CHECKPOINT_INTERVAL:
            return
        self._last_checkpoint = now
        await asyncio.to_thread(self._store.checkpoint_message, self._open_id,
                                "".join(self._text), "".join(self._thinking) or None)

    async def text(self, delta: str, client: Client) -> None:
        """A piece of the visible reply."""
        await self._ensure_open(client)
        self._text.append(delta)
        await self._maybe_checkpoint()

    async def thinking(self, delta: str, client: Client) -> None:
        """A piece of reasoning (kept in the message's metadata, never resent)."""
        await self._ensure_open(client)
        self._thinking.append(delta)
        await self._maybe_checkpoint()

    async def tool_call(self, client: Client) -> None:
        """A complete tool call arrived in the reply being streamed."""
        await self._ensure_open(client)

    async def round_boundary(self, client: Client) -> None:
        """Tools ran: the reply that called them, and earlier results, are in history."""
        await self.sync(client.history)
        self._after_tools = True

    def _metadata(self, final: bool) -> dict[str, Any]:
        metadata: dict[str, Any] = {"source": "server"}
        if self._thinking:
            metadata["thinking"] = "".join(self._thinking)
        if final and self.usage is not None:
            metadata["usage"] = {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "time_to_first_token": self.usage.time_to_first_token,
                "tokens_per_second": self.usage.tokens_per_second,
            }
        return metadata

    async def sync(self, history: list[dict[str, Any]], final_status: str | None = None) -> None:
        """Store history entries not stored yet; with ``final_status`` the turn is over."""
        new = history[self._written:]
        last_assistant = max((i for i, m in enumerate(new) if m.get("role") == "assistant"),
                             default=-1)
        for index, message in enumerate(new):
            final = final_status is not None and index == last_assistant
            status = final_status if final and final_status is not None else "complete"
            if message.get("role") == "assistant" and self._open_id is not None:
                message_id = self._open_id
                await asyncio.to_thread(self._store.complete_message, message_id, message,
                                        metadata=self._metadata(final), status=status)
                self._open_id = None
                self._text, self._thinking = [], []
            else:
                record = await asyncio.to_thread(
                    self._store.add_message, self._conversation_id, message,
                    metadata=self._metadata(final) if message.get("role") == "assistant" else None,
                    status=status,
                )
                message_id = record.id
            self._written += 1
            self._emit("message", {"id": message_id, "role": message.get("role"),
                                   "status": status, "message": message})
        if final_status is not None and self._open_id is not None:
            await self._close_open(final_status)

    async def _close_open(self, status: str) -> None:
        """The streamed reply never reached history: keep what arrived."""
        message_id = self._open_id
        if message_id is None:
            return
        self._open_id = None
        message = {"role": "assistant", "content": "".join(self._text)}
        await asyncio.to_thread(self._store.complete_message, message_id, message,
                                metadata=self._metadata(True), status=status)
        self._emit("message", {"id": message_id, "role": "assistant", "status": status,
                               "message": message})

    async def finish_after_error(self, history: list[dict[str, Any]] | None) -> None:
        """The turn failed: store what history kept, then any reply still open."""
        try:
            if history is not None:
                await self.sync(history, final_status="error")
            await self._close_open("error")
        except Exception:
            log.exception("could not store the end of a failed turn")

    def abandon(self, status: str) -> None:
        """The turn was cancelled: close the streaming message synchronously."""
        if self._open_id is None:
            return
        try:
            self._store.complete_message(
                self._open_id, {"role": "assistant", "content": "".join(self._text)},
                metadata=self._metadata(True), status=status,
            )
        except Exception:
            log.exception("could not store the end of a cancelled turn")
        self._open_id = None
