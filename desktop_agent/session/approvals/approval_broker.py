"""ApprovalBroker: one conversation's answer to the core's ``can_use_tool`` question.

The core settles a call by rules first (deny beats ask beats allow, the rules
of ``config.json`` and of the conversation). What is left comes here, and the
same policy applies whichever front end shows the question:

1. A call no OS sandbox would hold is always asked, and never remembered; so
   is a plan handed in from plan mode (``exit_plan_mode``): approving it is
   the person's to do. "Allow once" approves it and switches the conversation
   to ``default``; "Allow for this conversation" (shown as *Approve, accept
   edits*) to ``acceptEdits``; an approval with ``{"mode": ...}`` in the edited
   input (REST) to that mode.
2. With confirmation off (``confirm_tools`` false) it runs.
3. Approvals remembered since the turn began (allowed for this conversation,
   "always allow" rules) let it run.
4. Otherwise the front end's :data:`Asker` shows it (the window's dock, the
   REST server's pending approvals) and the broker waits **one** timeout. No
   answer in time, a stopped turn or a closed tab mean *deny*.

Each call's outcome is recorded with one set of words (:class:`Decision`),
and an approval with edited arguments records the input that ran; the
recorder stores both with the tool result, and the core puts the edited
input into the history the model sees next (see ``core/ran_inputs.py``).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling.config import always_allow_rule
from desktop_agent.core.tooling.permissions import (
    EXIT_PLAN_TOOL,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
    evaluate_rules,
)
from desktop_agent.session.settings.permission_rules import conversation_allowed_tools
from desktop_agent.session.settings.setting_values import asks_before_tools
from desktop_agent.session.tools.config import AppConfig, ConfigWriteError

if TYPE_CHECKING:
    from desktop_agent.session.files.file_changes import ChangePreview

log = logging.getLogger("desktop_agent.session.approvals")


class ApprovalChoice(enum.Enum):
    """The four answers a person (or a script) can give."""

    DENY = "deny"
    ALLOW_ONCE = "allow_once"
    ALLOW_CONVERSATION = "allow_conversation"
    ALLOW_ALWAYS = "allow_always"


class Decision(enum.StrEnum):
    """How a call was settled: the one set of words in the store, events and transcript."""

    DENY = "deny"
    ALLOW_ONCE = "allow_once"
    ALLOW_CONVERSATION = "allow_conversation"
    ALLOW_ALWAYS = "allow_always"
    AUTO_EXECUTE = "auto_execute"
    ALLOWED_FOR_CONVERSATION = "allowed_for_conversation"
    ALLOWED_BY_RULE = "allowed_by_rule"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """A person's answer to one request.

    Attributes:
        choice: Which answer was given.
        reason: For a deny: why, sent to the model (may be empty).
        updated_input: Edited arguments, or None when they were not changed.
        preview: Run the allowed command on an overlay first (*Preview*): its
            changes wait for Apply or Discard (only where the question offers it).
    """

    choice: ApprovalChoice
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    preview: bool = False

    @property
    def allowed(self) -> bool:
        """Whether the tool may run."""
        return self.choice is not ApprovalChoice.DENY


@dataclass(frozen=True, slots=True)
class ToolCallQuestion:
    """What a front end shows when a call needs a person.

    Attributes:
        conversation_id: The conversation the call belongs to.
        tool_name: The tool the model wants to run.
        tool_input: The model's arguments.
        context: The core's context (call id, read-only, source, unsandboxed...).
        timeout: Seconds before the call is denied (None: never).
        preview: For a built-in ``write_file``/``edit_file`` call: the change it would
            make, as a diff against the file on disk when the question was asked.
        can_preview: For a built-in ``bash`` call: it may be answered *Preview* (run
            on an overlay, its changes shown before they reach the folder).
    """

    conversation_id: str
    tool_name: str
    tool_input: dict[str, Any]
    context: ToolPermissionContext
    timeout: float | None
    preview: ChangePreview | None = None
    can_preview: bool = False

    @property
    def can_remember(self) -> bool:
        """Whether remembered approvals may be offered (never for unsandboxed calls)."""
        return not self.context.unsandboxed


Asker = Callable[[ToolCallQuestion], Awaitable[ApprovalAnswer]]
"""Shows a question and returns the answer; cancelled when the broker gives up.

A front end that withdraws a question itself (Stop, a closed tab) raises
:class:`QuestionWithdrawn`."""


Previewer = Callable[[str, dict[str, Any]], Awaitable["ChangePreview | None"]]
"""Works out what a call would change in a file (None: not a file-changing call)."""


Notify = Callable[[str, str, "str | None"], Awaitable[None]]
"""Told ``(tool name, tool use id, subagent)`` when a person is about to be asked."""


BeforeRun = Callable[[str, str, dict[str, Any]], Awaitable[None]]
"""Told ``(tool use id, tool name, input that will run)`` when an asked call is allowed."""


Previewable = Callable[[str, ToolPermissionContext], Awaitable[bool]]
"""Whether a call may be answered *Preview* (a built-in bash call, where previews work)."""


async def _never(_name: str, _context: ToolPermissionContext) -> bool:
    return False


async def _no_preview(_name: str, _input: dict[str, Any]) -> ChangePreview | None:
    return None


async def _nothing_before_run(_call_id: str, _name: str, _input: dict[str, Any]) -> None:
    return None


class QuestionWithdrawn(Exception):
    """The front end withdrew the question (the turn was stopped, the tab closed)."""


class ApprovalBroker:
    """Decides the tool calls of one conversation.

    Args:
        conversation_id: The conversation whose calls are decided.
        ask: Shows a question to the front end's person or script.
        settings: Returns the conversation's current settings.
        timeout: Seconds to wait for an answer (None: as long as it takes).
        config: The app's ``config.json`` (global rules, "always allow").
        allow_in_conversation: Remembers a tool as allowed in this conversation.
        on_settled: Told ``(tool_use_id, decision record)`` when a question ends
            without an answer (expired or withdrawn) so the front end can say so.
        on_problem: Told, in words, when a remembered approval could not be saved.
        preview: Works out the diff a built-in file-changing call would make, shown
            with the question.
        before_run: Awaited when a person allowed a call, with the input that will
            run (edited or not): the session reads the file the call writes again, so
            the diff it keeps follows an edited path and a file changed while asking.
        previewable: Whether a call may be answered *Preview*.
        run_as_preview: Told the id of a call a person allowed with *Preview*.
        set_permission_mode: Saves the mode an approved plan switches the
            conversation to.
        notify: Awaited with (tool name, call id, subagent or None) when a person is
            about to be asked: the session tells its Notification hooks.
    """

    def __init__(self, conversation_id: str, ask: Asker, *,
                 settings: Callable[[], Mapping[str, Any]], timeout: float | None,
                 config: AppConfig | None = None,
                 allow_in_conversation: Callable[[str], None] = lambda _name: None,
                 on_settled: Callable[[str, dict[str, Any]], None] = lambda _i, _r: None,
                 on_problem: Callable[[str], None] = lambda _text: None,
                 preview: Previewer = _no_preview,
                 before_run: BeforeRun = _nothing_before_run,
                 previewable: Previewable = _never,
                 run_as_preview: Callable[[str], None] = lambda _call: None,
                 set_permission_mode: Callable[[str], None] = lambda _mode: None,
                 notify: Notify | None = None) -> None:
        self.conversation_id = conversation_id
        self._ask = ask
        self._settings = settings
        self.timeout = timeout
        self._config = config or AppConfig()
        self._allow_in_conversation = allow_in_conversation
        self._on_settled = on_settled
        self._on_problem = on_problem
        self._preview = preview
        self._before_run = before_run
        self._previewable = previewable
        self._run_as_preview = run_as_preview
        self._set_permission_mode = set_permission_mode
        self._notify = notify
        self._decisions: dict[str, dict[str, Any]] = {}

    def decision_of(self, tool_use_id: str) -> dict[str, Any] | None:
        """How the call was decided (stored with its result), if the broker decided it."""
        return self._decisions.get(tool_use_id)

    def forget_decisions(self) -> None:
        """Start a new turn with no per-call decisions."""
        self._decisions.clear()

    def _record(self, tool_use_id: str, decision: Decision, **extra: Any) -> dict[str, Any]:
        record = {"decision": decision.value, **extra}
        self._decisions[tool_use_id] = record
        return record

    async def __call__(self, tool_name: str, tool_input: dict[str, Any],
                       context: ToolPermissionContext) -> PermissionResult:
        """The ``can_use_tool`` callback."""
        call_id = context.tool_use_id
        if context.unsandboxed or tool_name == EXIT_PLAN_TOOL:
            return await self._question(tool_name, tool_input, context)
        settings = self._settings()
        if not asks_before_tools(settings):
            self._record(call_id, Decision.AUTO_EXECUTE)
            return PermissionResultAllow()
        # The core settled rules at the start of the turn; these checks see
        # approvals remembered since (a later call in the same turn).
        if tool_name in conversation_allowed_tools(settings):
            self._record(call_id, Decision.ALLOWED_FOR_CONVERSATION)
            return PermissionResultAllow()
        rules = await asyncio.to_thread(self._config.global_rules)
        if evaluate_rules(rules, tool_name, tool_input,
                          read_only=context.read_only).decision == "allow":
            self._record(call_id, Decision.ALLOWED_BY_RULE)
            return PermissionResultAllow()
        return await self._question(tool_name, tool_input, context)

    async def _question(self, tool_name: str, tool_input: dict[str, Any],
                        context: ToolPermissionContext) -> PermissionResult:
        preview = await self._preview(tool_name, tool_input) \
            if context.source in (None, "builtin") else None
        can_preview = await self._previewable(tool_name, context)
        question = ToolCallQuestion(self.conversation_id, tool_name, dict(tool_input), context,
                                    self.timeout, preview, can_preview)
        call_id = context.tool_use_id
        if self._notify is not None:
            await self._notify(tool_name, call_id, context.agent)
        try:
            answer = await asyncio.wait_for(self._ask(question), self.timeout)
        except TimeoutError:
            self._on_settled(call_id, self._record(call_id, Decision.EXPIRED))
            return PermissionResultDeny(
                message=f"No approval came within {self.timeout:g} s, so the call was not "
                        "run.")
        except QuestionWithdrawn:
            self._on_settled(call_id, self._record(call_id, Decision.CANCELLED))
            return PermissionResultDeny(
                message="The person stopped the conversation; the call was not run.")
        except asyncio.CancelledError:
            self._on_settled(call_id, self._record(call_id, Decision.CANCELLED))
            raise
        result = self._apply(answer, question)
        if isinstance(result, PermissionResultAllow):
            await self._before_run(call_id, tool_name, dict(result.updated_input or tool_input))
        return result

    def _apply(self, answer: ApprovalAnswer, question: ToolCallQuestion) -> PermissionResult:
        tool_name, call_id = question.tool_name, question.context.tool_use_id
        choice = answer.choice
        if tool_name == EXIT_PLAN_TOOL and answer.allowed:
            return self._plan_approved(answer, question)
        if not question.can_remember and choice in (ApprovalChoice.ALLOW_CONVERSATION,
                                                    ApprovalChoice.ALLOW_ALWAYS):
            log.info("not remembering an approval of unsandboxed %s", tool_name)
            choice = ApprovalChoice.ALLOW_ONCE
        extra: dict[str, Any] = {}
        edited = answer.updated_input
        if edited is not None and edited != question.tool_input and choice is not \
                ApprovalChoice.DENY:
            extra["edited_input"] = edited
        else:
            edited = None
        if answer.reason:
            extra["reason"] = answer.reason
        previewed = answer.preview and question.can_preview and choice is not ApprovalChoice.DENY
        if previewed:
            extra["preview"] = True
        record = self._record(call_id, Decision(choice.value), **extra)
        if choice is ApprovalChoice.DENY:
            reason = answer.reason or "no reason given"
            return PermissionResultDeny(
                message=f"The user denied this call to {tool_name}: {reason}")
        if previewed:
            self._run_as_preview(call_id)
        if choice is ApprovalChoice.ALLOW_CONVERSATION:
            self._allow_in_conversation(tool_name)
        elif choice is ApprovalChoice.ALLOW_ALWAYS:
            try:
                self._config.add_rule(always_allow_rule(tool_name))
            except ConfigWriteError as exc:
                record["not_saved"] = str(exc)
                self._on_problem(f"“Always allow {tool_name}” ran the tool this time, but "
                                 f"could not be remembered. {exc}")
            else:
                log.info("%s is now always allowed", tool_name)
        return PermissionResultAllow(updated_input=edited)

    def _plan_approved(self, answer: ApprovalAnswer,
                       question: ToolCallQuestion) -> PermissionResult:
        """A plan approved: the conversation leaves plan mode for the mode chosen."""
        asked = (answer.updated_input or {}).get("mode")
        if answer.choice in (ApprovalChoice.ALLOW_CONVERSATION, ApprovalChoice.ALLOW_ALWAYS):
            mode = "acceptEdits"
        else:
            mode = asked if asked in ("default", "acceptEdits") else "default"
        self._record(question.context.tool_use_id, Decision.ALLOW_ONCE, permission_mode=mode)
        try:
            self._set_permission_mode(mode)
        except Exception as exc:  # noqa: BLE001 - the plan still goes ahead this turn
            log.warning("the approved plan's mode was not saved: %s", exc)
            self._on_problem(f"The plan was approved, but the mode “{mode}” could not be "
                             f"saved for the next turns: {exc}")
        plan = (answer.updated_input or question.tool_input).get("plan",
                                                                 question.tool_input.get("plan"))
        return PermissionResultAllow(updated_input={"plan": plan, "mode": mode})
