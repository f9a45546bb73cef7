"""Running one round of tool calls: hooks, permission check, execution, results.

Every path that runs a tool goes through :func:`run_tool_call`, so the
permission check cannot be skipped: hooks first (they may block or rewrite
the input), then rules, then the approval callback, then the handler with a
timeout, then the post-tool hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from desktop_agent.core.errors import AgentError, ToolInputError
from desktop_agent.core.tooling.hooks import (
    HOOK_NOTIFICATION,
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    NotificationEvent,
    PostToolUseEvent,
    PreToolUseEvent,
    run_hooks,
    stamped,
    tell_hooks,
)
from desktop_agent.core.tooling.output import ToolOutput, image_note
from desktop_agent.core.tooling.permissions import (
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDefer,
    RuleVerdict,
    ToolPermissionContext,
    apply_permission_mode,
    ask_callback,
    evaluate_rules,
)
from desktop_agent.core.tooling.progress import ProgressChannel
from desktop_agent.core.tooling.redaction import redact_values, secret_values
from desktop_agent.core.tooling.tooling_settings import ToolingSettings
from desktop_agent.core.tooling.tools import Tool, tool_named, tool_result_text
from desktop_agent.core.types import ToolResultBlock, ToolUseBlock, ToolUseError

log = logging.getLogger("desktop_agent.tools")


@dataclass(slots=True)
class ToolOutcome:
    """What running one call produced.

    Attributes:
        result: The result sent back to the model (``is_error`` marks failures).
        error: A readable error for the front end when the call failed or was refused.
        decision: How the call was settled: ``rule``/``approved``/``denied``/``blocked``
            /``auto`` (no rule, no approver), for the transcript and the store.
    """

    result: ToolResultBlock
    error: ToolUseError | None = None
    decision: str = "auto"


def _failure(call: ToolUseBlock, message: str, decision: str, raw: Any = None,
             secrets: tuple[str, ...] = (), ran_input: dict[str, Any] | None = None
             ) -> ToolOutcome:
    raw_text = raw if isinstance(raw, str) or raw is None else json.dumps(raw, default=str)
    message = redact_values(message, secrets)
    raw_text = raw_text if raw_text is None else redact_values(raw_text, secrets)
    return ToolOutcome(
        ToolResultBlock(call.id, f"Error: {message}", is_error=True, name=call.name,
                        ran_input=ran_input),
        ToolUseError(message, raw_data=raw_text, tool_use_id=call.id, name=call.name),
        decision,
    )


def failure_words(exc: BaseException) -> str:
    """A tool's exception in words: the sentence of the project's typed errors, else its type too.

    The project's errors (a built-in tool's "the file does not exist") are
    written as sentences for people and models alike; their class name adds
    nothing. Anything else (``KeyError: 'x'``) means little without its type.
    """
    text = str(exc)
    if isinstance(exc, AgentError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def run_tool_call(call: ToolUseBlock, options: ToolingSettings,
                        history: list[dict[str, Any]],
                        limit: asyncio.Semaphore | None = None,
                        progress: ProgressChannel | None = None,
                        answer: PermissionResult | None = None) -> ToolOutcome:
    """Run one tool call through hooks, permissions and the handler.

    Args:
        call: The model's call.
        options: The agent's tools, rules and approver.
        history: The conversation so far (for hooks).
        limit: Held while the handler runs (not while approval is awaited), so
            one reply's calls run at most ``MAX_PARALLEL_TOOL_CALLS`` at a time.
        progress: Where the handler's progress reports go (this task's calls only).
        answer: An approval given earlier for a deferred call; used instead of
            asking ``can_use_tool`` (deny rules still apply).

    A call the approver defers comes back with decision ``"deferred"`` and
    nothing run.
    """
    tool = tool_named(options.tools, call.name)
    if tool is None:
        available = ", ".join(t.name for t in options.tools) or "none"
        return _failure(call, f"There is no tool named {call.name!r} (available: {available}).",
                        "unknown", call.input)
    tool_input = dict(call.input)

    decision = await run_hooks(options.hooks, HOOK_PRE_TOOL_USE, stamped(
        PreToolUseEvent(call.name, tool_input, call.id, history), options))
    if decision is not None:
        if not decision.continue_:
            reason = decision.reason or "blocked by a hook"
            return _failure(call, f"The call to {call.name} was blocked: {reason}", "blocked",
                            tool_input)
        if decision.modified_input is not None:
            tool_input = dict(decision.modified_input)

    settled = await _settle_permission(call, tool, tool_input, options, answer)
    if isinstance(settled, ToolOutcome):
        return settled
    tool_input, settled_by = settled

    # From here on the tool runs: with an input that differs from the model's,
    # the result says so, and the client puts it into the history.
    ran = dict(tool_input) if tool_input != call.input else None
    timeout = tool.timeout or options.tool_timeout
    is_error = False
    secrets = secret_values(options)
    if progress is not None:
        progress.bind(call.id, call.name, secrets)
    try:
        async with limit or contextlib.nullcontext():
            value = await asyncio.wait_for(tool.execute(tool_input), timeout)
        # The one point where every tool's output loses the conversation's secrets.
        content, images, user_content = _rendered(value, options.vision, secrets)
    except ToolInputError as exc:
        return _failure(call, str(exc), settled_by, tool_input, secrets, ran)
    except TimeoutError:
        return _failure(call, f"{call.name} did not finish within {timeout:g} s.", settled_by,
                        tool_input, secrets, ran)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a tool's failure goes back to the model in words
        log.info("tool %s failed: %s", call.name, redact_values(str(exc), secrets))
        return _failure(call, f"{call.name} failed: {failure_words(exc)}", settled_by,
                        tool_input, secrets, ran)
    finally:
        if progress is not None:
            progress.finished(call.id)

    post = await run_hooks(options.hooks, HOOK_POST_TOOL_USE, stamped(PostToolUseEvent(
        call.name, tool_input, call.id, content, is_error, history), options))
    if post is not None and not post.continue_:
        reason = post.reason or "withheld by a hook"
        return _failure(call, f"The result of {call.name} was withheld: {reason}", settled_by,
                        ran_input=ran)
    return ToolOutcome(ToolResultBlock(call.id, content, is_error=False, name=call.name,
                                       ran_input=ran, images=images,
                                       user_content=user_content),
                       None, settled_by)


async def _settle_permission(call: ToolUseBlock, tool: Tool, tool_input: dict[str, Any],
                             options: ToolingSettings, answer: PermissionResult | None,
                             ) -> ToolOutcome | tuple[dict[str, Any], str]:
    """Rules, then an earlier answer or the approver: the input to run and how it was settled.

    Returns a :class:`ToolOutcome` instead when the call is refused or deferred.
    """
    verdict = evaluate_rules(
        options.permission_rules, call.name, tool_input, read_only=tool.read_only,
        allowed_tools=options.allowed_tools, disallowed_tools=options.disallowed_tools)
    verdict = apply_permission_mode(options.permission_mode, verdict, tool_name=call.name,
                                    read_only=tool.read_only, edits_files=tool.edits_files,
                                    unsandboxed=tool.unsandboxed)
    settled_by = "rule"
    if verdict.decision == "allow" and tool.unsandboxed and options.can_use_tool is not None:
        # No sandbox holds this call: an allow rule may not run it unasked.
        verdict = RuleVerdict("ask", verdict.rule)
    if verdict.decision == "deny":
        return _failure(call, verdict.reason or (
            f"The call to {call.name} is not allowed by a permission rule "
            f"({verdict.rule.tool if verdict.rule else call.name})."), "denied", tool_input)
    if verdict.decision == "allow":
        return tool_input, settled_by
    if answer is None and options.can_use_tool is None:
        if verdict.decision == "ask":
            return _failure(call, f"The call to {call.name} needs approval, but nobody is "
                            "there to approve it.", "denied", tool_input)
        return tool_input, "auto"
    given: PermissionResult | PermissionResultDefer | None = answer
    if given is None and options.can_use_tool is not None:
        context = ToolPermissionContext(
            tool_use_id=call.id, read_only=tool.read_only, source=tool.source,
            description=tool.description, rule=verdict.rule,
            unsandboxed=tool.unsandboxed, agent=options.agent_name)
        who = f"The subagent {options.agent_name!r}" if options.agent_name else "The agent"
        await tell_hooks(options.hooks, HOOK_NOTIFICATION, stamped(NotificationEvent(
            f"{who} needs your permission to use {call.name}", "Approval needed", call.name,
            call.id), options))
        given = await ask_callback(options.can_use_tool, call.name, tool_input, context,
                                   options.approval_timeout)
    if isinstance(given, PermissionResultDefer):
        return ToolOutcome(ToolResultBlock(call.id, "", name=call.name), None, "deferred")
    if not isinstance(given, PermissionResultAllow):
        message = given.message if given is not None else "no approval was given"
        return _failure(call, message, "denied", tool_input)
    if given.updated_input is not None:
        tool_input = dict(given.updated_input)
    return tool_input, "approved"


def _rendered(value: Any, vision: bool | None,
              secrets: tuple[str, ...]) -> tuple[str, list[dict[str, Any]], str | None]:
    """A handler's return value as (text for the model, pictures, text for the person)."""
    if not isinstance(value, ToolOutput):
        return redact_values(tool_result_text(value), secrets), [], None
    note = image_note(value.images, vision)
    text = "\n".join(t for t in (value.text, note) if t)
    return (redact_values(text, secrets), list(value.images),
            redact_values(value.user_text, secrets) or None)
