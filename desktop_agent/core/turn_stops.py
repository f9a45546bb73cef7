"""How a turn's tool loop stops: limits, the loop guard, and the result message at its end.

Why apart from :mod:`.client`: the Client decides *whether* another round
runs; what a stop writes into the history (every call answered, so the
history stays valid for the next request), what it tells the front end, and
how the ended turn reads as claude-agent-sdk's :class:`ResultMessage` are
rules of their own, testable without a model and a stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from desktop_agent.core.context.history_invariants import (
    NOT_EXECUTED_LIMIT,
    NOT_EXECUTED_LOOP,
    NOT_EXECUTED_MAX_TURNS,
    tool_message,
)
from desktop_agent.core.options import AgentOptions
from desktop_agent.core.tooling.loop_guard import LoopGuard
from desktop_agent.core.types import ResultMessage, ToolResultBlock, ToolUseBlock, ToolUseError

#: What ends a loop: the stop notice, or the corrective answers given in place of the calls.
Stop = ToolUseError | list[ToolResultBlock] | None


def limit_reached(options: AgentOptions, history: list[dict[str, Any]],
                  meta: dict[str, Any], calls: list[ToolUseBlock], iteration: int,
                  loops: LoopGuard) -> Stop:
    """The stop notice when max_turns, the tool-round limit or a loop ends the turn.

    A loop seen for the first time is answered instead: the corrective
    results of these calls, which the model reads in place of running them.
    """
    max_turns = options.max_turns
    if max_turns is not None and meta["requests"] >= max_turns:
        meta["stop_kind"] = "max_turns"
        return _stop_loop(history, meta, calls, NOT_EXECUTED_MAX_TURNS, (
            f"Stopped: the limit of {max_turns} model request(s) for one query "
            "(max_turns) was reached. Ask again to let the agent continue."))
    if iteration >= options.max_tool_iterations:
        meta["stop_kind"] = "tool_rounds"
        return _stop_loop(history, meta, calls, NOT_EXECUTED_LIMIT, (
            f"Stopped: the limit of {options.max_tool_iterations} tool rounds for one turn "
            "was reached. Ask again to let the agent continue."))
    loop = loops.observe(calls)
    if loop is None:
        return None
    if loop.stop:
        meta["loop_rule"] = loop.rule
        meta["stop_kind"] = "loop"
        return _stop_loop(history, meta, calls, NOT_EXECUTED_LOOP, loop.message)
    meta["loop_corrected"] = loop.rule
    return answer_calls(history, calls, loop.correction)


def answer_bad_calls(history: list[dict[str, Any]], bad_calls: list[ToolUseError]) -> None:
    """Calls with unusable arguments get their error back, so the model can correct itself."""
    for error in bad_calls:
        history.append(tool_message(error.tool_use_id or "", error.name,
                                    f"Error: {error.error} Raw arguments: "
                                    f"{(error.raw_data or '')[:500]}"))


def answer_calls(history: list[dict[str, Any]], calls: list[ToolUseBlock],
                 text: str) -> list[ToolResultBlock]:
    """Answer calls that do not run with ``text``: in history, and as blocks front ends show."""
    blocks = []
    for call in calls:
        history.append(tool_message(call.id, call.name, text))
        blocks.append(ToolResultBlock(call.id, text, is_error=True, name=call.name))
    return blocks


def _stop_loop(history: list[dict[str, Any]], meta: dict[str, Any],
               calls: list[ToolUseBlock], result_text: str, message: str) -> ToolUseError:
    for call in calls:
        history.append(tool_message(call.id, call.name, result_text))
    meta["stopped"] = message
    return ToolUseError(message)


async def streamed(items: list[ToolResultBlock]) -> AsyncIterator[ToolResultBlock]:
    """Answers given in place of a round, as the round's own results would stream."""
    for item in items:
        yield item


def turn_result(meta: dict[str, Any], *, seconds: float, api_seconds: float,
                   session_id: str | None, final_text: str, output: Any) -> ResultMessage:
    """The turn as claude-agent-sdk's result message (its subtypes, our stop reasons)."""
    kind = meta.get("stop_kind")
    reason: str | None
    if meta.get("interrupted"):
        subtype, reason = "interrupted", "interrupted"
    elif meta.get("pending_approvals"):
        subtype, reason = "awaiting_approval", "awaiting_approval"
    elif kind in ("max_turns", "tool_rounds"):
        subtype, reason = "error_max_turns", kind
    elif kind == "loop":
        subtype, reason = "error_during_execution", "loop"
    else:
        subtype, reason = "success", meta.get("finish_reason")
    return ResultMessage(
        subtype=subtype, duration_ms=round(seconds * 1000),
        duration_api_ms=round(api_seconds * 1000),
        is_error=subtype not in ("success", "awaiting_approval"),
        num_turns=int(meta.get("requests") or 0), session_id=session_id,
        usage=meta.get("usage"), result=final_text, stop_reason=reason,
        structured_output=output)
