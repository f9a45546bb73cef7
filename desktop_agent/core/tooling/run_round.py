"""One round of tool execution: every call of one reply, concurrently, results in order.

The round appends a ``tool`` message per call to the history it was given
(an interrupted call is answered "not executed"), so the history invariants
hold whatever happens to the round.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from desktop_agent.core.context.history_invariants import NOT_EXECUTED_INTERRUPT, tool_message
from desktop_agent.core.tooling.mcp.server_requests import McpCaller, set_caller
from desktop_agent.core.tooling.output import images_message
from desktop_agent.core.tooling.permissions import PermissionResult
from desktop_agent.core.tooling.pool import MAX_PARALLEL_TOOL_CALLS
from desktop_agent.core.tooling.progress import ProgressChannel
from desktop_agent.core.tooling.ran_inputs import replace_call_arguments
from desktop_agent.core.tooling.run_call import ToolOutcome, run_tool_call
from desktop_agent.core.tooling.tooling_settings import ToolingSettings
from desktop_agent.core.turn_control import TurnControl
from desktop_agent.core.types import Block, ToolResultBlock, ToolUseBlock, ToolUseError

log = logging.getLogger("desktop_agent.client")


async def execute_round(calls: list[ToolUseBlock], options: ToolingSettings,
                        history: list[dict[str, Any]], control: TurnControl,
                        decisions: dict[str, str],
                        answers: Mapping[str, PermissionResult] | None = None,
                        ) -> AsyncIterator[Block]:
    """Run one reply's calls; yield errors and results; answer each call in ``history``.

    Args:
        calls: The reply's tool calls, in order.
        options: Tools, rules and approver.
        history: The live conversation (hooks see a copy; results are appended).
        control: Interrupt switch; the round registers its tasks there.
        decisions: Filled with how each call was settled (``deferred`` calls
            get no result: they wait for ``Client.approve()``/``deny()``).
        answers: Approvals given earlier for deferred calls, by call id.
    """
    if options.before_tool_round is not None:
        await options.before_tool_round(list(calls))
    snapshot = copy.deepcopy(history)
    limit = asyncio.Semaphore(MAX_PARALLEL_TOOL_CALLS)
    progress = ProgressChannel()
    context = _with_caller(options, control)
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(run_tool_call(call, options, snapshot, limit, progress,
                                            (answers or {}).get(call.id)), context=context)
             for call in calls]
    control.tool_tasks = list(tasks)
    control.progress = progress
    outcomes: list[ToolOutcome | None] = []
    for call, task in zip(calls, tasks, strict=True):
        try:
            async for report in progress.until_done(task):
                yield report
            outcomes.append(await task)
        except asyncio.CancelledError:
            if not control.interrupt_requested:
                for other in tasks:
                    other.cancel()
                raise
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                current.uncancel()
            outcomes.append(None)
        except Exception as exc:  # defensive: run_tool_call turns failures into outcomes
            log.exception("tool runner failed for %s", call.name)
            outcomes.append(ToolOutcome(
                ToolResultBlock(call.id, f"Error: {exc}", True, call.name),
                ToolUseError(str(exc), tool_use_id=call.id, name=call.name), "error"))
    control.tool_tasks = []
    control.progress = None
    for call, outcome in zip(calls, outcomes, strict=True):
        if outcome is None:
            history.append(tool_message(call.id, call.name, NOT_EXECUTED_INTERRUPT))
            decisions[call.id] = "interrupted"
            continue
        decisions[call.id] = outcome.decision
        if outcome.decision == "deferred":
            continue
        outcome.result.decision = outcome.decision
        if outcome.result.ran_input is not None:
            # What the model sees next is what ran (an edited or rewritten input).
            replace_call_arguments(history, call.id, outcome.result.ran_input)
        if outcome.error is not None:
            yield outcome.error
        yield outcome.result
        history.append(tool_message(call.id, call.name, outcome.result.content))
    if any(o is not None and o.decision == "deferred" for o in outcomes):
        return  # open calls must stay last in history until approve()/deny()
    pictures = images_message([o.result for o in outcomes if o is not None], options.vision)
    if pictures is not None:
        history.append(pictures)


def _with_caller(options: ToolingSettings, control: TurnControl) -> contextvars.Context:
    """The calls' context: MCP servers they use ask this turn's callbacks (sampling...)."""
    caller = McpCaller(options.sampling_callback, options.elicitation_callback,
                       tuple(options.mcp_roots), options.sampling_limit,
                       control.server_requests)
    context = contextvars.copy_context()
    context.run(set_caller, caller)
    return context
