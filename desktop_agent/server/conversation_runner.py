"""One runner per conversation: runs turns in the background and reports them as events.

The runner is the server's counterpart of the window's conversation
controller. For each turn it builds a core :class:`~desktop_agent.Client` from
the conversation's current settings and its history in the store, streams
the turn, turns every block into an event, and writes messages to the store
as they complete (a streaming reply is checkpointed about once a second), so
the window sees the same conversation.

Confirmation mode is the runner's ``can_use_tool``: with it on, each tool call
waits in :class:`PendingApprovals` until the API approves or rejects it; the
core's approval timeout turns silence into a deny.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from desktop_agent.command_sandbox import sandbox_policy
from desktop_agent.core import errors
from desktop_agent.core.client import Client
from desktop_agent.core.options import AgentOptions
from desktop_agent.core.permissions import (
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)
from desktop_agent.core.types import (
    CompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolProgressBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)

from .api_errors import ApiError
from .app_services import AppServices
from .conversation_secrets import conversation_environment
from .message_content import refuse_if_blind
from .pending_approvals import PendingApprovals
from .turn_recorder import TurnRecorder
from .workdir_paths import open_workdir

log = logging.getLogger("desktop_agent.server.runner")

INTERRUPT_GRACE = 5.0
"""Seconds an interrupted turn gets to stop by itself before its task is cancelled."""


class ConversationRunner:
    """Runs one conversation's turns and answers its approval requests.

    Attributes:
        state: ``idle``, ``running``, ``waiting_approval`` or ``interrupting``.
        confirm_tools: Confirmation mode (tool calls wait for the API's decision).
        approvals: Open approval requests.
    """

    def __init__(self, conversation_id: str, services: AppServices, confirm_tools: bool) -> None:
        self.conversation_id = conversation_id
        self._services = services
        self.state = "idle"
        self.confirm_tools = confirm_tools
        self.approvals = PendingApprovals()
        self._task: asyncio.Task[None] | None = None
        self._client: Client | None = None
        self._interrupt_requested = False
        self._claimed = False
        self.last_active = time.monotonic()

    # -- events ----------------------------------------------------------------------
    def emit(self, event_type: str, data: dict[str, Any]) -> None:
        """Append an event to this conversation's log."""
        self._services.events.append(self.conversation_id, event_type, data)

    def _set_state(self, state: str, **extra: Any) -> None:
        self.last_active = time.monotonic()
        if state == self.state and not extra:
            return
        self.state = state
        self.emit("state", {"state": state, **extra})

    @property
    def busy(self) -> bool:
        """True while a turn is starting, streaming, running tools or waiting."""
        return self._claimed or self.state != "idle"

    # -- turns -----------------------------------------------------------------------
    async def start_turn(self, message: str | list[dict[str, Any]] | None) -> None:
        """Start a turn in the background (the route returns at once).

        Raises:
            ApiError: 409 when a turn is running, the conversation has no
                server/model set, or there is no user message to answer.
        """
        if self.busy:
            raise ApiError(409, "turn_running", "A turn is already running in this conversation.")
        self._claimed = True  # claim the runner before the first await
        try:
            history = await self._prepare(message)
        finally:
            self._claimed = False
        self._interrupt_requested = False
        self._set_state("running")
        self._task = asyncio.get_running_loop().create_task(
            self._run_turn(history), name=f"turn-{self.conversation_id}"
        )

    async def _prepare(self, message: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        store = self._services.store
        record = await asyncio.to_thread(self._services.conversation, self.conversation_id)
        settings = record.settings or {}
        if not settings.get("base_url") or not settings.get("model"):
            raise ApiError(409, "not_configured",
                           "Set base_url and model in the conversation's settings before running.")
        if message is not None:
            refuse_if_blind(settings, message)
            added = await asyncio.to_thread(
                store.add_message, self.conversation_id, {"role": "user", "content": message}
            )
            self.emit("message", {"id": added.id, "role": "user", "status": added.status,
                                  "content": message})
        path = await asyncio.to_thread(store.active_path, self.conversation_id)
        if not path or path[-1].role not in ("user", "tool"):
            raise ApiError(409, "nothing_to_answer",
                           "The conversation has no new user message to answer; send one first.")
        return [dict(r.message) for r in path if _worth_sending(r.message)]

    async def _options(self) -> AgentOptions:
        record = await asyncio.to_thread(self._services.conversation, self.conversation_id)
        settings = record.settings or {}
        api_key = "not-needed"
        key_name = settings.get("api_key_name")
        if key_name:
            from desktop_agent import secrets

            value = await asyncio.to_thread(secrets.get_secret, key_name)
            if value is None:
                raise errors.ConfigurationError(
                    f"No API key named {key_name!r} is stored; set it or change api_key_name."
                )
            api_key = value
        tools = []
        # The conversation's secrets: in its commands' environment, and blanked
        # out of every tool result and error by the core.
        env = await asyncio.to_thread(conversation_environment, self.conversation_id)
        if settings.get("tools"):
            workdir = open_workdir(self._services.workdir_of(record))
            tools = self._services.tools.build(settings["tools"], workdir, env,
                                               sandbox_policy(settings))
        optional: dict[str, Any] = {}
        for key in ("temperature", "max_tokens", "max_tool_iterations", "context_length",
                    "compaction", "vision"):
            if settings.get(key) is not None:
                optional[key] = settings[key]
        return AgentOptions(
            model=settings["model"],
            base_url=settings["base_url"],
            system_prompt=settings.get("system_prompt") or None,
            tools=tools,
            max_turns=None,
            auto_execute_tools=True,
            can_use_tool=self._approve,
            approval_timeout=self._services.approval_timeout,
            api_key=api_key,
            secret_values=tuple(env.values()),
            connection_pool=self._services.connection_pool,
            **optional,
        )

    async def _ready_client(self, options: AgentOptions) -> Client:
        """The conversation's Client, kept across turns, with this turn's options.

        Its HTTP connections come from the app's shared pool (one per model
        server), so an idle runner holds no socket of its own.
        """
        if self._client is None:
            self._client = Client(options)
        else:
            self._client.update_options(options)
        return self._client

    async def _run_turn(self, history: list[dict[str, Any]]) -> None:
        recorder = TurnRecorder(self._services.store, self.conversation_id, self.emit,
                                len(history))
        outcome = "complete"
        client: Client | None = None
        try:
            client = await self._ready_client(await self._options())
            client.message_history = history
            if self._interrupt_requested:
                outcome = "interrupted"
                return
            async for item in client.receive_messages():
                await self._handle(item, client, recorder)
            if client.turn_metadata.get("interrupted"):
                outcome = "interrupted"
            await recorder.sync(client.history, final_status=(
                "interrupted" if outcome == "interrupted" else "complete"))
        except asyncio.CancelledError:
            outcome = "interrupted"
            recorder.abandon("interrupted")
            raise
        except errors.AgentError as exc:
            outcome = "error"
            self.emit("error", _describe(exc))
            await recorder.finish_after_error(client.history if client is not None else None)
        except Exception as exc:
            outcome = "error"
            log.exception("turn failed unexpectedly in %s", self.conversation_id)
            self.emit("error", {"kind": "internal", "message":
                                f"The turn failed unexpectedly ({type(exc).__name__})."})
            await recorder.finish_after_error(None)
        finally:
            for tool_use_id in self.approvals.deny_all("The turn ended before an answer."):
                self.emit("approval_resolved", {"tool_use_id": tool_use_id,
                                                "decision": "cancelled"})
            self._set_state("idle", outcome=outcome)
            self._task = None

    async def _handle(self, item: Any, client: Client, recorder: TurnRecorder) -> None:
        if isinstance(item, TextBlock):
            await recorder.text(item.text, client)
            self.emit("text", {"text": item.text})
        elif isinstance(item, ThinkingBlock):
            await recorder.thinking(item.text, client)
            self.emit("thinking", {"text": item.text})
        elif isinstance(item, ToolUseBlock):
            await recorder.tool_call(client)
            self.emit("tool_call", {"id": item.id, "name": item.name, "input": item.input})
        elif isinstance(item, ToolResultBlock):
            await recorder.round_boundary(client)
            self.emit("tool_result", {"tool_use_id": item.tool_use_id, "name": item.name,
                                      "content": item.content, "is_error": item.is_error,
                                      # for the person only (MCP audience ["user"])
                                      "user_content": item.user_content,
                                      "images": len(item.images)})
        elif isinstance(item, ToolProgressBlock):
            self.emit("tool_progress", {"tool_use_id": item.tool_use_id, "name": item.name,
                                        "progress": item.progress, "total": item.total,
                                        "message": item.message})
        elif isinstance(item, ToolUseError):
            await recorder.round_boundary(client)
            raw = item.raw_data if item.raw_data is None else item.raw_data[:2000]
            self.emit("tool_error", {"error": item.error, "tool_use_id": item.tool_use_id,
                                     "name": item.name, "raw_data": raw})
        elif isinstance(item, CompactionBlock):
            self.emit("compaction", {"messages": item.messages, "summary": item.summary,
                                     "mode": item.mode, "tokens_before": item.tokens_before,
                                     "tokens_after": item.tokens_after})
        elif isinstance(item, Usage):
            recorder.usage = item
            self.emit("usage", {"prompt_tokens": item.prompt_tokens,
                                "completion_tokens": item.completion_tokens,
                                "time_to_first_token": item.time_to_first_token,
                                "tokens_per_second": item.tokens_per_second})

    # -- approvals -------------------------------------------------------------------
    async def _approve(self, tool_name: str, tool_input: dict[str, Any],
                       context: ToolPermissionContext) -> PermissionResult:
        """The core's approval callback: confirmation mode, or allow."""
        if not self.confirm_tools and not context.unsandboxed:
            return PermissionResultAllow()
        pending = self.approvals.open(tool_name, tool_input, context)
        self.emit("approval_requested", {**pending.to_dict(),
                                         "timeout": self._services.approval_timeout})
        self._set_state("waiting_approval")
        try:
            return await pending.future
        except asyncio.CancelledError:
            # The core's approval timeout (a deny) or the turn being stopped.
            # Awaiting the future directly means cancellation cancelled it too.
            if not pending.future.done() or pending.future.cancelled():
                pending.future.cancel()
                decision = "cancelled" if self._interrupt_requested else "timed_out"
                self.emit("approval_resolved", {"tool_use_id": pending.tool_use_id,
                                                "decision": decision})
            raise
        finally:
            self.approvals.close(pending.tool_use_id)
            if self.state == "waiting_approval" and not self.approvals.all():
                self._set_state("running")

    def approve(self, tool_use_id: str, edited_input: dict[str, Any] | None) -> bool:
        """Let a waiting call run (with ``edited_input`` if given); False if none waits."""
        if not self.approvals.resolve(tool_use_id, PermissionResultAllow(edited_input)):
            return False
        self.emit("approval_resolved", {"tool_use_id": tool_use_id, "decision": "approved",
                                        "edited": edited_input is not None})
        return True

    def reject(self, tool_use_id: str, reason: str) -> bool:
        """Deny a waiting call; ``reason`` goes to the model. False if none waits."""
        if not self.approvals.resolve(tool_use_id, PermissionResultDeny(message=reason)):
            return False
        self.emit("approval_resolved", {"tool_use_id": tool_use_id, "decision": "rejected",
                                        "reason": reason})
        return True

    # -- stopping --------------------------------------------------------------------
    async def interrupt(self) -> bool:
        """Stop the running turn, keeping what streamed so far; False if none runs."""
        task = self._task
        if task is None or task.done():
            return False
        self._interrupt_requested = True
        self._set_state("interrupting")
        for tool_use_id in self.approvals.deny_all("The user interrupted the turn."):
            self.emit("approval_resolved", {"tool_use_id": tool_use_id, "decision": "cancelled"})
        if self._client is not None:
            await self._client.interrupt()
        done, _ = await asyncio.wait({task}, timeout=INTERRUPT_GRACE)
        if not done:
            log.warning("turn in %s ignored the interrupt; cancelling it", self.conversation_id)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return True

    async def close(self) -> None:
        """Cancel any running turn and close the Client (shutdown or deletion)."""
        task = self._task
        if task is not None and not task.done():
            self._interrupt_requested = True
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


def _worth_sending(message: dict[str, Any]) -> bool:
    """Skip empty assistant messages (an interrupted reply that had produced nothing)."""
    if message.get("role") != "assistant":
        return True
    return bool(message.get("content") or message.get("tool_calls"))


def _describe(exc: errors.AgentError) -> dict[str, Any]:
    """An error event: the exception's kind and a sentence, never a secret."""
    data: dict[str, Any] = {"kind": type(exc).__name__, "message": errors.redact(str(exc))}
    if isinstance(exc, errors.APIError):
        data["status"] = exc.status
    return data


class RunnerRegistry:
    """The runners of one app, created on first use."""

    def __init__(self, services: AppServices) -> None:
        self._services = services
        self._runners: dict[str, ConversationRunner] = {}

    def peek(self, conversation_id: str) -> ConversationRunner | None:
        """The runner if one exists (it does once a conversation was driven)."""
        return self._runners.get(conversation_id)

    def get(self, conversation_id: str, settings: dict[str, Any]) -> ConversationRunner:
        """The conversation's runner; ``settings`` seeds confirmation mode on creation."""
        runner = self._runners.get(conversation_id)
        if runner is None:
            runner = ConversationRunner(conversation_id, self._services,
                                        confirm_tools=bool(settings.get("confirm_tools", True)))
            self._runners[conversation_id] = runner
        runner.last_active = time.monotonic()
        return runner

    async def evict_idle(self, idle_seconds: float) -> int:
        """Close runners idle for ``idle_seconds`` (no turn, no approval); returns how many.

        A conversation driven once must not hold memory (its Client and
        history) until the server stops; the next turn makes a new runner from
        the store, which is the source of truth.
        """
        cutoff = time.monotonic() - idle_seconds
        idle = [cid for cid, runner in self._runners.items()
                if not runner.busy and not runner.approvals.all()
                and runner.last_active < cutoff]
        for conversation_id in idle:
            await self.discard(conversation_id)
        return len(idle)

    def __len__(self) -> int:
        """How many runners exist (for load figures)."""
        return len(self._runners)

    async def discard(self, conversation_id: str) -> None:
        """Stop and forget a runner (its conversation is being deleted)."""
        runner = self._runners.pop(conversation_id, None)
        if runner is not None:
            await runner.close()

    async def close(self) -> None:
        """Stop every runner."""
        for conversation_id in list(self._runners):
            await self.discard(conversation_id)

