"""A conversation's answer to the core's ``can_use_tool`` question.

The core has already applied deny rules; here the conversation's own choices
come first (auto-execute, tools allowed for this conversation, "always allow"
rules), and anything else becomes an :class:`ApprovalRequest` in the shared
queue that the dock shows. The gate waits for the person's answer; no answer
within the timeout, a closed tab or a stopped turn all mean *deny*, and each
decision is remembered per tool call so it can be stored with the result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from desktop_agent.core.permissions import (
    PermissionResultAllow,
    PermissionResultDeny,
    evaluate_rules,
)
from desktop_agent.core.tool_config import always_allow_rule

from . import permission_settings
from .approval_queue import (
    ApprovalChoice,
    ApprovalDecision,
    ApprovalQueue,
    ApprovalRequest,
    RequestState,
)

if TYPE_CHECKING:
    from desktop_agent.core.permissions import PermissionResult, ToolPermissionContext

log = logging.getLogger("desktop_agent.gui.approvals")


class ApprovalGate:
    """Decides tool calls for one conversation, asking the person when needed.

    Args:
        conversation_id: The conversation whose calls are decided.
        queue: The window's shared approval queue.
        timeout: Seconds to wait for the person (None: wait as long as it takes).
        settings: Returns the conversation's current settings.
        title: Returns the conversation's current title.
        allow_in_conversation: Remembers a tool as allowed for this conversation.
        on_request: Told about each new request (for notifications).
        on_problem: Told, in words, when a remembered approval could not be saved.
    """

    def __init__(self, conversation_id: str, queue: ApprovalQueue, timeout: float | None, *,
                 settings: Callable[[], dict[str, Any]], title: Callable[[], str],
                 allow_in_conversation: Callable[[str], None],
                 on_request: Callable[[ApprovalRequest], None],
                 on_problem: Callable[[str], None] = lambda _text: None) -> None:
        self._conversation_id = conversation_id
        self._queue = queue
        self.timeout = timeout
        self._settings = settings
        self._title = title
        self._allow_in_conversation = allow_in_conversation
        self._on_request = on_request
        self._on_problem = on_problem
        self._decisions: dict[str, dict[str, Any]] = {}

    def decision_of(self, tool_use_id: str) -> dict[str, Any] | None:
        """How the call was decided (for the stored tool result), if it was asked."""
        return self._decisions.get(tool_use_id)

    def forget_decisions(self) -> None:
        """Start a new turn with no remembered per-call decisions."""
        self._decisions.clear()

    async def __call__(self, tool_name: str, tool_input: dict[str, Any],
                       context: ToolPermissionContext) -> PermissionResult:
        """The ``can_use_tool`` callback."""
        settings = self._settings()
        call_id = context.tool_use_id
        if context.unsandboxed:
            # Nothing holds this command: only the person, every time.
            return await self._ask(tool_name, tool_input, context)
        if settings.get("auto_execute"):
            self._decisions[call_id] = {"decision": "auto_execute"}
            return PermissionResultAllow()
        # Rules were settled by the core at the start of the turn; these checks see
        # approvals remembered since (a later call in the same turn).
        if tool_name in permission_settings.conversation_allowed_tools(settings):
            self._decisions[call_id] = {"decision": "allowed_for_conversation"}
            return PermissionResultAllow()
        verdict = evaluate_rules(permission_settings.load_rules(), tool_name, tool_input,
                                 read_only=context.read_only)
        if verdict.decision == "allow":
            self._decisions[call_id] = {"decision": "allowed_by_rule"}
            return PermissionResultAllow()
        return await self._ask(tool_name, tool_input, context)

    async def _ask(self, tool_name: str, tool_input: dict[str, Any],
                   context: ToolPermissionContext) -> PermissionResult:
        request = ApprovalRequest(
            conversation_id=self._conversation_id, conversation_title=self._title(),
            tool_name=tool_name, tool_input=dict(tool_input), tool_use_id=context.tool_use_id,
            description=context.description, source=context.source,
            read_only=context.read_only, timeout=self.timeout,
            unsandboxed=context.unsandboxed)
        self._queue.submit(request)
        self._on_request(request)
        try:
            decision = await asyncio.wait_for(asyncio.shield(request.future), self.timeout)
        except TimeoutError:
            self._queue.expire(request)
            self._decisions[context.tool_use_id] = {"decision": "expired"}
            return PermissionResultDeny(
                message=f"Nobody approved the call within {self.timeout:g} s, so it was not "
                        "run.")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if request.state is RequestState.CANCELLED and not (task and task.cancelling()):
                self._decisions[context.tool_use_id] = {"decision": "cancelled"}
                return PermissionResultDeny(
                    message="The person stopped the conversation; the call was not run.")
            self._queue.cancel(request)
            raise
        return self._apply(decision, tool_name, context.tool_use_id, request.can_remember)

    def _apply(self, decision: ApprovalDecision, tool_name: str,
               tool_use_id: str, can_remember: bool = True) -> PermissionResult:
        if not can_remember and decision.choice in (ApprovalChoice.ALLOW_CONVERSATION,
                                                    ApprovalChoice.ALLOW_ALWAYS):
            # An unsandboxed call is approved once, never remembered.
            log.info("not remembering an approval of unsandboxed %s", tool_name)
            decision = ApprovalDecision(ApprovalChoice.ALLOW_ONCE, decision.reason,
                                        decision.updated_input)
        record: dict[str, Any] = {"decision": decision.choice.value}
        if decision.updated_input is not None:
            record["edited_input"] = decision.updated_input
        if decision.reason:
            record["reason"] = decision.reason
        self._decisions[tool_use_id] = record
        if decision.choice is ApprovalChoice.DENY:
            reason = decision.reason or "no reason given"
            return PermissionResultDeny(
                message=f"The user denied this call to {tool_name}: {reason}")
        if decision.choice is ApprovalChoice.ALLOW_CONVERSATION:
            self._allow_in_conversation(tool_name)
        elif decision.choice is ApprovalChoice.ALLOW_ALWAYS:
            try:
                permission_settings.add_rule(always_allow_rule(tool_name))
            except permission_settings.PermissionSettingsError as exc:
                record["not_saved"] = str(exc)
                self._on_problem(f"“Always allow {tool_name}” ran the tool this time, but "
                                 f"could not be remembered. {exc}")
            else:
                log.info("%s is now always allowed", tool_name)
        return PermissionResultAllow(updated_input=decision.updated_input)
