"""One runner per conversation: the REST adapter over the session layer.

A turn is the session's: options from :func:`~desktop_agent.session.options.build_options`
(the same tools, rules of ``config.json``, ``extra_body``, hooks and defaults
as the window), approvals through the session's
:class:`~desktop_agent.session.approvals.ApprovalBroker` (questions wait as
pending approvals for the approve/reject routes), and the record written by
the session's :class:`~desktop_agent.session.recorder.TurnRecorder` (the
window's stored shape). This module only turns blocks into events and the
run state into the ``state`` events the API documents.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from desktop_agent.core import errors
from desktop_agent.core.client import Client
from desktop_agent.core.types import (
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)
from desktop_agent.session import defaults
from desktop_agent.session.approvals import ApprovalAnswer, ApprovalBroker, ApprovalChoice
from desktop_agent.session.history import model_history
from desktop_agent.session.options import build_options
from desktop_agent.session.recorder import TurnRecorder
from desktop_agent.session.settings import has_server
from desktop_agent.session.tools import WorkdirError
from desktop_agent.store import ConversationBusyError, MessageRecord

from .api_errors import ApiError
from .app_services import AppServices
from .pending_approvals import PendingApproval, PendingApprovals

log = logging.getLogger("desktop_agent.server.runner")

INTERRUPT_GRACE = defaults.STOP_GRACE_SECONDS
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
        self._settings: dict[str, Any] = {}
        self.approvals = PendingApprovals(on_open=self._on_question)
        self.broker = ApprovalBroker(
            conversation_id, self.approvals, settings=self._broker_settings,
            timeout=services.approval_timeout, config=services.session.config,
            allow_in_conversation=self._allow_in_conversation,
            on_settled=self._on_settled)
        self._task: asyncio.Task[None] | None = None
        self._client: Client | None = None
        self._interrupt_requested = False
        self._claimed = False

    # -- events ----------------------------------------------------------------------
    def emit(self, event_type: str, data: dict[str, Any]) -> None:
        """Append an event to this conversation's log."""
        self._services.events.append(self.conversation_id, event_type, data)

    def _set_state(self, state: str, **extra: Any) -> None:
        if state == self.state and not extra:
            return
        self.state = state
        self.emit("state", {"state": state, **extra})

    @property
    def busy(self) -> bool:
        """True while a turn is starting, streaming, running tools or waiting."""
        return self._claimed or self.state != "idle"

    # -- turns -----------------------------------------------------------------------
    async def start_turn(self, message: str | None) -> None:
        """Start a turn in the background (the route returns at once).

        Raises:
            ApiError: 409 when a turn is running, the conversation has no
                server/model set, or there is no user message to answer.
        """
        if self.busy:
            raise ApiError(409, "turn_running", "A turn is already running in this conversation.")
        holder = await asyncio.to_thread(self._services.store.turn_lease_holder,
                                         self.conversation_id)
        if holder is not None:
            raise ApiError(409, "conversation_busy",
                           "This conversation is busy in another window or server; wait for "
                           "its turn to end.")
        self._claimed = True  # claim the runner before the first await
        try:
            path = await self._prepare(message)
        finally:
            self._claimed = False
        self._interrupt_requested = False
        self._set_state("running")
        self._task = asyncio.get_running_loop().create_task(
            self._run_turn(path), name=f"turn-{self.conversation_id}"
        )

    async def _prepare(self, message: str | None) -> list[MessageRecord]:
        store = self._services.store
        record = await asyncio.to_thread(self._services.conversation, self.conversation_id)
        settings = dict(record.settings or {})
        if not has_server(settings):
            raise ApiError(409, "not_configured",
                           "Set base_url and model in the conversation's settings before running.")
        if message is not None:
            added = await asyncio.to_thread(
                store.add_message, self.conversation_id, {"role": "user", "content": message}
            )
            self.emit("message", {"id": added.id, "role": "user", "status": added.status,
                                  "content": message})
        path = await asyncio.to_thread(store.active_path, self.conversation_id)
        if not path or path[-1].role not in ("user", "tool"):
            raise ApiError(409, "nothing_to_answer",
                           "The conversation has no new user message to answer; send one first.")
        self._settings = settings
        return path

    async def _ready_client(self) -> Client:
        """The conversation's Client, kept across turns, with this turn's options."""
        options = await build_options(self.conversation_id, self._settings,
                                      self._services.session, self.broker)
        if self._client is None:
            self._client = Client(options)
        else:
            self._client.update_options(options)
        return self._client

    async def _run_turn(self, path: list[MessageRecord]) -> None:
        try:
            # One turn at a time per conversation, across processes (window, servers).
            async with self._services.store.turn_lease(self.conversation_id, "server"):
                await self._run_leased_turn(path)
        except ConversationBusyError as exc:
            self.emit("error", {"kind": "ConversationBusyError", "message": str(exc)})
            self._set_state("idle", outcome="error")
            self._task = None

    async def _run_leased_turn(self, path: list[MessageRecord]) -> None:
        self.broker.forget_decisions()
        recorder = TurnRecorder(self._services.store, self.conversation_id, list(path),
                                str(self._settings.get("model") or ""),
                                self.broker.decision_of, on_stored=self._on_stored)
        outcome = "complete"
        try:
            client = await self._ready_client()
            last = path[-1]
            if last.role == "user":
                # Through query(), so UserPromptSubmit hooks see the prompt as in the window.
                base = model_history(path[:-1])
                client.message_history = base
                await client.query(str(last.message.get("content") or ""))
                base_length = len(base)
            else:
                base = model_history(path)
                client.message_history = base
                await client.query("")
                base_length = len(base) - 1
            if self._interrupt_requested:
                outcome = "interrupted"
                return
            async for item in client.receive_messages():
                self._handle(item, recorder)
            if client.turn_metadata.get("interrupted"):
                outcome = "interrupted"
            recorder.finish(outcome, client.history, base_length)
        except asyncio.CancelledError:
            outcome = "interrupted"
            recorder.finish("interrupted")
            raise
        except (errors.AgentError, WorkdirError) as exc:
            outcome = "error"
            self.emit("error", _describe(exc))
            recorder.finish("error")
        except Exception as exc:
            outcome = "error"
            log.exception("turn failed unexpectedly in %s", self.conversation_id)
            self.emit("error", {"kind": "internal", "message":
                                f"The turn failed unexpectedly ({type(exc).__name__})."})
            recorder.finish("error")
        finally:
            self.approvals.withdraw_all()
            self._set_state("idle", outcome=outcome)
            self._task = None

    def _handle(self, item: Any, recorder: TurnRecorder) -> None:
        if isinstance(item, TextBlock):
            recorder.text(item.text)
            self.emit("text", {"text": item.text})
        elif isinstance(item, ThinkingBlock):
            recorder.thinking(item.text)
            self.emit("thinking", {"text": item.text})
        elif isinstance(item, ToolUseBlock):
            recorder.tool_call(item.id, item.name, dict(item.input))
            self.emit("tool_call", {"id": item.id, "name": item.name, "input": item.input})
        elif isinstance(item, ToolResultBlock):
            recorder.tool_result(item.tool_use_id, item.content, item.is_error, item.name,
                                 item.decision, item.ran_input)
            data: dict[str, Any] = {"tool_use_id": item.tool_use_id, "name": item.name,
                                    "content": item.content, "is_error": item.is_error}
            if item.ran_input is not None:
                data["input"] = item.ran_input  # what ran, when it was not the model's
            self.emit("tool_result", data)
        elif isinstance(item, ToolUseError):
            recorder.tool_error(item.error, item.tool_use_id, item.name, item.raw_data)
            raw = item.raw_data if item.raw_data is None else item.raw_data[:2000]
            self.emit("tool_error", {"error": item.error, "tool_use_id": item.tool_use_id,
                                     "name": item.name, "raw_data": raw})
        elif isinstance(item, Usage):
            figures = {"prompt_tokens": item.prompt_tokens,
                       "completion_tokens": item.completion_tokens,
                       "time_to_first_token": item.time_to_first_token,
                       "tokens_per_second": item.tokens_per_second}
            recorder.usage(figures)
            self.emit("usage", figures)

    def _on_stored(self, record: MessageRecord) -> None:
        self.emit("message", {"id": record.id, "role": record.role, "status": record.status,
                              "message": record.message})

    # -- approvals -------------------------------------------------------------------
    def _broker_settings(self) -> dict[str, Any]:
        return {**self._settings, "confirm_tools": self.confirm_tools}

    def _allow_in_conversation(self, tool_name: str) -> None:
        from desktop_agent.session.config import allow_in_conversation

        rules = allow_in_conversation(self._settings, tool_name)
        self._settings = self._services.store.patch_settings(
            self.conversation_id, {"permission_rules": rules})

    def _on_question(self, pending: PendingApproval) -> None:
        self.emit("approval_requested", {**pending.to_dict(),
                                         "timeout": self._services.approval_timeout})
        self._set_state("waiting_approval")

    def _on_settled(self, tool_use_id: str, record: dict[str, Any]) -> None:
        self.emit("approval_resolved", {"tool_use_id": tool_use_id, **record})
        self._after_answer()

    def _after_answer(self) -> None:
        if self.state == "waiting_approval" and len(self.approvals.all()) <= 1:
            self._set_state("running")

    def approve(self, tool_use_id: str, edited_input: dict[str, Any] | None) -> bool:
        """Let a waiting call run (with ``edited_input`` if given); False if none waits."""
        pending = self.approvals.get(tool_use_id)
        if pending is None:
            return False
        self._after_answer()
        self.approvals.resolve(tool_use_id, ApprovalAnswer(ApprovalChoice.ALLOW_ONCE,
                                                           updated_input=edited_input))
        data: dict[str, Any] = {"tool_use_id": tool_use_id, "decision": "allow_once",
                                "edited": edited_input is not None}
        if edited_input is not None:
            data["input"] = edited_input
        self.emit("approval_resolved", data)
        return True

    def reject(self, tool_use_id: str, reason: str) -> bool:
        """Deny a waiting call; ``reason`` goes to the model. False if none waits."""
        if self.approvals.get(tool_use_id) is None:
            return False
        self._after_answer()
        self.approvals.resolve(tool_use_id, ApprovalAnswer(ApprovalChoice.DENY, reason))
        self.emit("approval_resolved", {"tool_use_id": tool_use_id, "decision": "deny",
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
        self.approvals.withdraw_all()
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


def _describe(exc: Exception) -> dict[str, Any]:
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
            from desktop_agent.session.settings import asks_before_tools

            runner = ConversationRunner(conversation_id, self._services,
                                        confirm_tools=asks_before_tools(settings))
            self._runners[conversation_id] = runner
        return runner

    async def discard(self, conversation_id: str) -> None:
        """Stop and forget a runner (its conversation is being deleted)."""
        runner = self._runners.pop(conversation_id, None)
        if runner is not None:
            await runner.close()

    async def close(self) -> None:
        """Stop every runner."""
        for conversation_id in list(self._runners):
            await self.discard(conversation_id)
        await self._services.session.tools.aclose()
