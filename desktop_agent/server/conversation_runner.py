"""One runner per conversation: the REST adapter over a :class:`ConversationSession`.

The turn itself (options, tools, rules, approvals, recording, the turn lease)
is the session's, exactly as in the window. The runner maps the session's
events to this conversation's event log (and so to SSE and callbacks), turns
the session's typed refusals into HTTP errors at the edge, and parks approval
questions as pending approvals for the approve and reject routes: in memory on
SQLite, in the shared database on PostgreSQL, where any replica answers them
(:mod:`~desktop_agent.server.shared_approvals`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from desktop_agent.core import errors
from desktop_agent.server.api_models import ToolCallProbeOut
from desktop_agent.session import (
    ApprovalAnswer,
    ApprovalAsked,
    ApprovalChoice,
    ApprovalSettled,
    CheckpointError,
    CommandPreviewReady,
    CommandPreviewSettled,
    CompactionReported,
    ContextWindowChecked,
    ConversationSession,
    DoctorNotice,
    ElicitationAsked,
    FilesChanged,
    LocalModelCrashed,
    LocalModelStarting,
    MessageStored,
    NotConfiguredError,
    NothingToAnswerError,
    Notice,
    PlanUpdated,
    PreviewNotFoundError,
    PromptCutReported,
    PromptProgressReported,
    ResourcesChanged,
    RestoreConflictError,
    RestoreReport,
    SamplingAsked,
    ServerQuestionSettled,
    SessionEvent,
    SessionRegistry,
    StateChanged,
    SubagentReported,
    TextDelta,
    ThinkingDelta,
    ToolCallProbed,
    ToolCallStarted,
    ToolErrorReported,
    ToolInputReplaced,
    ToolOutputReported,
    ToolProgressReported,
    ToolResultArrived,
    TurnFailed,
    TurnRunningError,
    UsageReported,
    UserMessageAdded,
    WorkdirError,
    asks_before_tools,
    busy_sentence,
)
from desktop_agent.store import (
    ConversationBusyError,
    ConversationRecord,
    MessageRecord,
    StaleParentError,
)

from .api_errors import ApiError
from .message_content import refuse_if_blind
from .pending_approvals import PendingApproval, PendingApprovals
from .preview_models import EVENT_CHANGES
from .shared_approvals import SharedApprovals

if TYPE_CHECKING:
    from desktop_agent.session import AppliedPreview, SessionEnvironment, StoreCalls
    from desktop_agent.store import Store

    from .event_log import EventLog

log = logging.getLogger("desktop_agent.server.runner")


class RunnerServices(Protocol):
    """What a runner uses of the app's shared services.

    :class:`~.app_services.AppServices` has all of it; naming only these keeps
    the runner from importing the services that hold the runners.
    """

    @property
    def store(self) -> Store:
        """The conversation store."""

    @property
    def session(self) -> SessionEnvironment:
        """What every conversation shares: tools, rules, hooks."""

    @property
    def events(self) -> EventLog:
        """Every conversation's event log."""

    @property
    def approval_timeout(self) -> float:
        """Seconds a tool call waits for an answer before it is denied."""

    @property
    def shared_approvals(self) -> bool:
        """Whether questions go through the database, answerable on every replica."""

    @property
    def turn_calls(self) -> StoreCalls:
        """Runs the store calls that start and end turns, off the event loop."""


class ConversationRunner:
    """Runs one conversation's turns for the API and answers its approval requests.

    Attributes:
        session: The conversation's session.
        approvals: Open approval requests.
        last_context_check: The check before the last turn (the ``context_window``
            event's data), None before any turn here.
    """

    def __init__(self, conversation_id: str, services: RunnerServices,
                 record: ConversationRecord | None = None) -> None:
        self.conversation_id = conversation_id
        self._services = services
        self.approvals: PendingApprovals = (
            SharedApprovals(services.store, conversation_id, on_open=self._announce,
                            on_answered=self._answered)
            if services.shared_approvals else PendingApprovals(on_answered=self._answered))
        self.session = ConversationSession(services.store, conversation_id, services.session,
                                           self.approvals, owner="server", record=record)
        self._ran_inputs: dict[str, dict[str, Any]] = {}
        self._in_turn = False
        self.last_context_check: dict[str, Any] | None = None
        self.session.subscribe(self._on_event)

    # -- what routes read --------------------------------------------------------------
    @property
    def state(self) -> str:
        """``idle``, ``running``, ``waiting_approval`` or ``interrupting``."""
        return self.session.state

    @property
    def confirm_tools(self) -> bool:
        """Confirmation mode (tool calls wait for the API's decision)."""
        return asks_before_tools(self.session.settings)

    @property
    def busy(self) -> bool:
        """True while a turn is starting, streaming, running tools or waiting."""
        return self.session.busy or self.session.state != "idle"

    @property
    def last_used(self) -> float:
        """When the conversation was last driven (for idle eviction)."""
        return self.session.last_used

    def can_evict(self) -> bool:
        """Whether closing it loses nothing (no turn, no pending approval)."""
        return self.session.can_evict()

    def emit(self, event_type: str, data: dict[str, Any]) -> None:
        """Append an event to this conversation's log."""
        self._services.events.append(self.conversation_id, event_type, data)

    # -- actions -----------------------------------------------------------------------
    async def start_turn(self, message: str | list[dict[str, Any]] | None,
                         read: ConversationRecord | None = None,
                         path: list[MessageRecord] | None = None) -> None:
        """Start a turn in the background (the route returns at once).

        ``read`` is the conversation as the route just read it (to answer 404),
        and ``path`` its active branch read with it, so the start reads neither
        once more.

        Raises:
            ApiError: 409 when a turn runs (here or in another process), the
                conversation has no server/model, or there is nothing to answer.
        """
        with as_http():
            # Off the loop: on PostgreSQL a start's store calls wait for the database,
            # and every stream this replica serves would wait behind them.
            if message is not None:
                # Settings as just read: another process may have changed 'vision'.
                await self.session.send_off_loop(
                    self._services.turn_calls, message,
                    vet=lambda settings: refuse_if_blind(settings, message), read=read, path=path)
            else:
                await self.session.run_off_loop(self._services.turn_calls, read, path)

    def add_message(self, content: str | list[dict[str, Any]]) -> MessageRecord:
        """Store a user message without answering it (``POST .../messages``)."""
        if self.busy:
            raise ApiError(409, "turn_running",
                           "A turn is running; wait for it or interrupt it before sending.")
        with as_http():
            if self._services.store.turn_lease_holder(self.conversation_id) is not None:
                raise ConversationBusyError(self.conversation_id, "another process")
            self.session.refresh()
            return self.session.add_user_message(content)

    def set_confirmation(self, enabled: bool) -> None:
        """Turn confirmation mode on or off (takes effect for the next call asked about)."""
        self.session.update_settings(confirm_tools=enabled, auto_execute=None)

    async def approve(self, tool_use_id: str, edited_input: dict[str, Any] | None,
                      preview: bool = False) -> bool:
        """Let a waiting call run (with ``edited_input`` if given); False if none waits.

        ``preview``: run it on an overlay first (where the question offers it).
        """
        return await self.approvals.answer(tool_use_id, ApprovalAnswer(
            ApprovalChoice.ALLOW_ONCE, updated_input=edited_input, preview=preview))

    async def reject(self, tool_use_id: str, reason: str) -> bool:
        """Deny a waiting call; ``reason`` goes to the model. False if none waits."""
        return await self.approvals.answer(tool_use_id,
                                           ApprovalAnswer(ApprovalChoice.DENY, reason))

    def _answered(self, tool_use_id: str, answer: ApprovalAnswer) -> None:
        """An answer reached the waiting call (given here or on another replica)."""
        data: dict[str, Any] = {"tool_use_id": tool_use_id, "decision": answer.choice.value}
        if answer.choice is ApprovalChoice.DENY:
            data["reason"] = answer.reason
        else:
            data["edited"] = answer.updated_input is not None
            if answer.preview:
                data["preview"] = True
            if answer.updated_input is not None:
                data["input"] = answer.updated_input
        self.emit("approval_resolved", data)

    async def interrupt(self) -> bool:
        """Stop the running turn, keeping what streamed so far; False if none runs."""
        if not self.session.busy:
            return False
        self.approvals.withdraw_all()
        return await self.session.interrupt()

    async def undo_turn(self, turn: str | None, force: bool) -> RestoreReport:
        """Undo a turn's file changes (None: the latest that changed files).

        Raises:
            ApiError: 409 when a turn runs or files changed since (with their names),
                404 when there is nothing to undo.
        """
        with as_http(restoring=True):
            return await self.session.undo_turn(turn, force=force)

    async def restore_files(self, message_id: str | None, checkpoint_id: str | None,
                            force: bool, branch: bool) -> RestoreReport | None:
        """Put files back as before a message or at a checkpoint (409 on a conflict)."""
        with as_http(restoring=True):
            if message_id is not None:
                return await self.session.restore_files(message_id, force=force, branch=branch)
            assert checkpoint_id is not None
            return await self.session.restore_checkpoint(checkpoint_id, force=force)

    async def apply_preview(self, preview_id: str, force: bool) -> AppliedPreview:
        """Apply a command preview (409 with the names of files changed meanwhile)."""
        with as_http():
            return await self.session.apply_preview(preview_id, force=force)

    async def discard_preview(self, preview_id: str, reason: str) -> None:
        """Discard a command preview (404 when none such waits here)."""
        with as_http():
            await self.session.discard_preview(preview_id, reason)

    async def close(self) -> None:
        """Cancel any running turn and close the client (shutdown, deletion, eviction)."""
        self.approvals.withdraw_all()
        await self.session.close()

    # -- session events -> event log ------------------------------------------------------
    def _on_event(self, event: SessionEvent) -> None:
        """Append what the session reported to the log (one dict lookup per event)."""
        handler = _EVENT_HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _state_changed(self, event: StateChanged) -> None:
        data: dict[str, Any] = {"state": event.state}
        if event.state != "idle" and not self._in_turn:
            # A turn starts, so the ones before it have ended: their live output may go
            # (the events' retention rule); the latest turn's stays until this point.
            self._services.events.prune_live_output(self.conversation_id)
        self._in_turn = event.state != "idle"
        if event.outcome is not None:
            data["outcome"] = event.outcome
            self.approvals.withdraw_all()
        self.emit("state", data)
        if event.outcome is not None:
            # Between turns the session holds no history: a conversation in use would
            # otherwise keep every message until its idle eviction, growing with each turn.
            self.session.release_history()

    def _user_message_added(self, event: UserMessageAdded) -> None:
        record = event.record
        self.emit("message", {"id": record.id, "role": "user", "status": record.status,
                              "content": record.message.get("content")})

    def _text_delta(self, event: TextDelta) -> None:
        self.emit("text", {"text": event.text})

    def _thinking_delta(self, event: ThinkingDelta) -> None:
        self.emit("thinking", {"text": event.text})

    def _tool_call_started(self, event: ToolCallStarted) -> None:
        self.emit("tool_call", {"id": event.tool_use_id, "name": event.name,
                                "input": event.input})

    def _tool_input_replaced(self, event: ToolInputReplaced) -> None:
        self._ran_inputs[event.tool_use_id] = event.input

    def _tool_result_arrived(self, event: ToolResultArrived) -> None:
        data: dict[str, Any] = {
            "tool_use_id": event.tool_use_id, "name": event.name,
            "content": event.content, "is_error": event.is_error,
            # for the person only (MCP audience ["user"])
            "user_content": event.user_content, "images": event.images}
        ran = self._ran_inputs.pop(event.tool_use_id, None)
        if ran is not None:
            data["input"] = ran  # what ran, when it was not the model's
        self.emit("tool_result", data)

    def _tool_progress_reported(self, event: ToolProgressReported) -> None:
        self.emit("tool_progress", {"tool_use_id": event.tool_use_id, "name": event.name,
                                    "progress": event.progress, "total": event.total,
                                    "message": event.message})

    def _tool_output_reported(self, event: ToolOutputReported) -> None:
        self.emit("tool_output", {"tool_use_id": event.tool_use_id, "name": event.name,
                                  "text": event.text, "lines": event.lines,
                                  "elapsed": round(event.elapsed, 3),
                                  "stoppable": event.stoppable})

    def _compaction_reported(self, event: CompactionReported) -> None:
        block = event.block
        self.emit("compaction", {"messages": block.messages, "summary": block.summary,
                                 "mode": block.mode, "tokens_before": block.tokens_before,
                                 "tokens_after": block.tokens_after})

    def _context_window_checked(self, event: ContextWindowChecked) -> None:
        window, fix = event.window, event.fix
        data = {"model": event.model, "applied": window.applied, "trained": window.trained,
                "source": window.source, "server": window.server, "assumed": window.assumed,
                "needed": event.needed, "fixed": event.fixed, "reply": event.reply,
                "short": event.warning is not None, "warning": event.warning,
                "fix": None if fix is None else {"tokens": fix.tokens, "text": fix.text,
                                                 "ollama_model": fix.ollama_model}}
        self.last_context_check = data
        self.emit("context_window", data)

    def _prompt_cut_reported(self, event: PromptCutReported) -> None:
        block = event.block
        self.emit("prompt_cut", {"kept": block.kept, "sent": block.sent,
                                 "window": block.window, "message": block.message})

    def _tool_error_reported(self, event: ToolErrorReported) -> None:
        raw = event.raw_data if event.raw_data is None else event.raw_data[:2000]
        self.emit("tool_error", {"error": event.error, "tool_use_id": event.tool_use_id,
                                 "name": event.name, "raw_data": raw})

    def _usage_reported(self, event: UsageReported) -> None:
        usage = event.usage
        self.emit("usage", {"prompt_tokens": usage.prompt_tokens,
                            "completion_tokens": usage.completion_tokens,
                            "time_to_first_token": usage.time_to_first_token,
                            "tokens_per_second": usage.tokens_per_second})

    def _message_stored(self, event: MessageStored) -> None:
        record = event.record
        self.emit("message", {"id": record.id, "role": record.role,
                              "status": record.status, "message": record.message})

    def _turn_failed(self, event: TurnFailed) -> None:
        self.emit("error", _describe(event.error, self.conversation_id))

    def _approval_asked(self, event: ApprovalAsked) -> None:
        if self.approvals.shared:
            return  # announced once every replica can answer it (_announce)
        question = event.question
        context = question.context
        self.emit("approval_requested", {
            "tool_use_id": context.tool_use_id, "tool_name": question.tool_name,
            "input": question.tool_input, "read_only": context.read_only,
            "source": context.source, "description": context.description,
            "requested_at": time.time(), "unsandboxed": context.unsandboxed,
            "agent": context.agent,
            "timeout": self._services.approval_timeout,
            "diff": None if question.preview is None else question.preview.to_dict(),
            "can_preview": question.can_preview})

    def _announce(self, pending: PendingApproval) -> None:
        """A shared question's row is committed: tell the streams (the same event data)."""
        self.emit("approval_requested",
                  {**pending.to_dict(), "timeout": self._services.approval_timeout})

    def _files_changed(self, event: FilesChanged) -> None:
        changes = event.changes
        self.emit("files_changed", {
            "turn": changes.turn, "kind": changes.kind, "message_id": changes.message,
            "files": [{"path": c.path, "change": c.change, "kind": c.kind}
                      for c in changes.changes]})

    def _notice(self, event: Notice) -> None:
        self.emit("notice", {"text": event.text})

    def _resources_changed(self, event: ResourcesChanged) -> None:
        self.emit("resources_changed", {
            "resources": [{"server": s, "uri": u} for s, u in event.resources],
            "text": event.text})

    def _doctor_notice(self, event: DoctorNotice) -> None:
        self.emit("doctor_notice", {"kind": event.kind, "text": event.text,
                                    "offers": [{"id": i, "text": t} for i, t in event.offers]})

    def _tool_call_probed(self, event: ToolCallProbed) -> None:
        self.emit("tool_call_probe", {"model": event.model, "mode": event.mode,
                                      "summary": event.result.summary,
                                      **event.result.to_dict()})

    async def test_model(self) -> ToolCallProbeOut:
        """Run the tool-call probe; 409 when the conversation has no server or model."""
        from desktop_agent.core.errors import ConfigurationError
        from desktop_agent.core.tooling.tool_call_mode import from_probe

        try:
            result = await self.session.test_model()
        except ConfigurationError as exc:
            raise ApiError(409, "not_configured", "Set base_url and model in the "
                           "conversation's settings before testing the model.") from exc
        return ToolCallProbeOut(**result.to_dict(), summary=result.summary,
                                mode=from_probe(result).reason)

    def _prompt_progress_reported(self, event: PromptProgressReported) -> None:
        self.emit("prompt_progress", {"processed": event.processed, "total": event.total})

    def _subagent_reported(self, event: SubagentReported) -> None:
        """A subagent's step, nested under the delegation call by its ``tool_use_id``."""
        data: dict[str, Any] = {"tool_use_id": event.tool_use_id, "agent": event.agent,
                                "agent_id": event.agent_id, "step": event.step}
        if event.step in ("started", "finished"):
            data["model"] = event.model
        if event.step == "finished":
            data.update(requests=event.requests, tokens=event.tokens,
                        seconds=round(event.seconds, 3), result=event.text or None,
                        error=event.error)
        elif event.step in ("text", "thinking", "tool_output"):
            data["text"] = event.text
        if event.call_id is not None:
            data.update(call_id=event.call_id, name=event.name)
        if event.step == "tool_call":
            data["input"] = event.input
        elif event.step in ("tool_result", "tool_error"):
            data.update(content=event.text, is_error=event.is_error)
        self.emit("subagent", data)

    def _plan_updated(self, event: PlanUpdated) -> None:
        self.emit("plan", event.plan.as_dict())

    def _approval_settled(self, event: ApprovalSettled) -> None:
        self.emit("approval_resolved", {"tool_use_id": event.tool_use_id, **event.record})

    def _sampling_asked(self, event: SamplingAsked) -> None:
        self.emit("sampling_requested", event.question.to_dict())

    def _elicitation_asked(self, event: ElicitationAsked) -> None:
        self.emit("elicitation_requested", event.question.to_dict())

    def _server_question_settled(self, event: ServerQuestionSettled) -> None:
        self.emit("server_question_resolved", {"id": event.question_id,
                                               "outcome": event.outcome})

    def _local_model_starting(self, event: LocalModelStarting) -> None:
        self.emit("local_model_starting", {"model": event.model})

    def _local_model_crashed(self, event: LocalModelCrashed) -> None:
        self.emit("local_model_crashed", {"model": event.model, "message": event.message,
                                          "signal": event.signal_name,
                                          "returncode": event.returncode})

    def _command_preview_ready(self, event: CommandPreviewReady) -> None:
        # Bounded: the event log keeps it (GET .../previews has every change).
        self.emit("command_preview", event.card.to_dict(max_changes=EVENT_CHANGES))

    def _command_preview_settled(self, event: CommandPreviewSettled) -> None:
        self.emit("command_preview_settled", {
            "id": event.preview_id, "tool_use_id": event.tool_use_id,
            "outcome": event.outcome, "text": event.text})


_EVENT_HANDLERS: dict[type, Callable[[ConversationRunner, Any], None]] = {
    StateChanged: ConversationRunner._state_changed,
    UserMessageAdded: ConversationRunner._user_message_added,
    TextDelta: ConversationRunner._text_delta,
    ThinkingDelta: ConversationRunner._thinking_delta,
    ToolCallStarted: ConversationRunner._tool_call_started,
    ToolInputReplaced: ConversationRunner._tool_input_replaced,
    ToolResultArrived: ConversationRunner._tool_result_arrived,
    ToolProgressReported: ConversationRunner._tool_progress_reported,
    ToolOutputReported: ConversationRunner._tool_output_reported,
    CompactionReported: ConversationRunner._compaction_reported,
    ContextWindowChecked: ConversationRunner._context_window_checked,
    PromptCutReported: ConversationRunner._prompt_cut_reported,
    ToolErrorReported: ConversationRunner._tool_error_reported,
    UsageReported: ConversationRunner._usage_reported,
    MessageStored: ConversationRunner._message_stored,
    TurnFailed: ConversationRunner._turn_failed,
    ApprovalAsked: ConversationRunner._approval_asked,
    ApprovalSettled: ConversationRunner._approval_settled,
    Notice: ConversationRunner._notice,
    ResourcesChanged: ConversationRunner._resources_changed,
    FilesChanged: ConversationRunner._files_changed,
    PromptProgressReported: ConversationRunner._prompt_progress_reported,
    PlanUpdated: ConversationRunner._plan_updated,
    LocalModelStarting: ConversationRunner._local_model_starting,
    LocalModelCrashed: ConversationRunner._local_model_crashed,
    SubagentReported: ConversationRunner._subagent_reported,
    DoctorNotice: ConversationRunner._doctor_notice,
    ToolCallProbed: ConversationRunner._tool_call_probed,
    SamplingAsked: ConversationRunner._sampling_asked,
    ElicitationAsked: ConversationRunner._elicitation_asked,
    ServerQuestionSettled: ConversationRunner._server_question_settled,
    CommandPreviewReady: ConversationRunner._command_preview_ready,
    CommandPreviewSettled: ConversationRunner._command_preview_settled,
}
"""How each session event is told over REST. Events not listed here (reply started
and ended, path resets, settings reloaded from another process) are not sent: the
message and state events and ``GET /conversations/{id}`` cover what they say."""


class as_http:
    """Turns the session's typed refusals into the API's 409 answers, at the edge.

    Args:
        restoring: The block puts files back: a file system error there (a folder
            swapped for a link mid-restore, a disk gone read-only) is a 409 with a
            sentence, not a 500.
    """

    def __init__(self, *, restoring: bool = False) -> None:
        self._restoring = restoring

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 _tb: object) -> None:
        if exc is None:
            return
        if isinstance(exc, TurnRunningError):
            raise ApiError(409, "turn_running", str(exc)) from exc
        if isinstance(exc, NotConfiguredError):
            raise ApiError(409, "not_configured", "Set base_url and model in the "
                           "conversation's settings before running (or server \"local\" "
                           "and a model on this computer).") from exc
        if isinstance(exc, NothingToAnswerError):
            raise ApiError(409, "nothing_to_answer", str(exc)) from exc
        if isinstance(exc, ConversationBusyError):
            raise ApiError(409, "conversation_busy", busy_sentence(exc.holder)) from exc
        if isinstance(exc, StaleParentError):
            raise ApiError(409, "conversation_changed", str(exc)) from exc
        if isinstance(exc, RestoreConflictError):
            raise ApiError(409, "restore_conflict", str(exc),
                           details=[{"path": p} for p in exc.paths]) from exc
        if isinstance(exc, PreviewNotFoundError):
            raise ApiError(404, "no_such_preview", str(exc)) from exc
        _preview_refusal(exc)
        if isinstance(exc, CheckpointError):
            raise ApiError(404, "nothing_to_restore", str(exc)) from exc
        if self._restoring and isinstance(exc, OSError):
            raise ApiError(409, "restore_failed",
                           f"Files could not all be put back ({exc.strerror or exc}): the "
                           "working folder changed meanwhile; the ones before it were. Try "
                           "again.") from exc


def _preview_refusal(exc: BaseException) -> None:
    """A preview's conflict or part-way failure as a 409 (the apply machinery loads late)."""
    if not isinstance(exc, CheckpointError):
        return
    from desktop_agent.session import PreviewApplyError, PreviewConflictError

    if isinstance(exc, PreviewConflictError):
        raise ApiError(409, "preview_conflict", str(exc),
                       details=[{"path": p} for p in exc.paths]) from exc
    if isinstance(exc, PreviewApplyError):
        raise ApiError(409, "preview_partly_applied", str(exc),
                       details=[{"path": p, "applied": True} for p in exc.applied]) from exc


def _describe(exc: BaseException, conversation_id: str) -> dict[str, Any]:
    """An error event: the exception's kind and a sentence, never a secret."""
    if isinstance(exc, errors.AgentError | WorkdirError | ConversationBusyError):
        data: dict[str, Any] = {"kind": type(exc).__name__, "message": errors.redact(str(exc))}
        if isinstance(exc, errors.APIError):
            data["status"] = exc.status
        if isinstance(exc, errors.ContextTooLongError):
            data["window"] = exc.window  # the message names it, and the fix
        return data
    log.error("turn failed unexpectedly in %s", conversation_id, exc_info=exc)
    return {"kind": "internal",
            "message": f"The turn failed unexpectedly ({type(exc).__name__})."}


def runner_registry(services: RunnerServices) -> SessionRegistry[ConversationRunner]:
    """One runner per conversation; idle ones are closed (their connections released)."""
    return SessionRegistry(lambda conversation_id: ConversationRunner(conversation_id, services))
