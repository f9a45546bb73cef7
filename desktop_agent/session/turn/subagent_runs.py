"""A turn's subagent runs: the core's SubagentBlocks -> session events, and a record to keep.

Each :class:`~desktop_agent.core.types.SubagentBlock` becomes a
:class:`~desktop_agent.session.events.SubagentReported` of plain values, so
neither front end reads the core's blocks. Each run is also summed up (its
model, figures, the calls it made and what it wrote, capped) and stored with
the delegation call's result, so a conversation opened again shows the
delegation card as it ended.
"""

from __future__ import annotations

from typing import Any

from desktop_agent.core.types import (
    SubagentBlock,
    TextBlock,
    ThinkingBlock,
    ToolProgressBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
)
from desktop_agent.session.events import SubagentReported, SubagentStep

#: Metadata key of a delegation result's record of its subagent run.
SUBAGENT_KEY = "subagent"
#: Characters of a subagent's written text kept in the record (the answer is in the result).
TEXT_KEPT = 4000
#: Calls kept in the record.
CALLS_KEPT = 50


def reported(block: SubagentBlock) -> SubagentReported | None:
    """The session event for one SubagentBlock (None: nothing a person would see)."""
    def base(step: SubagentStep, **fields: Any) -> SubagentReported:
        return SubagentReported(block.tool_use_id, block.agent, block.agent_id, step, **fields)

    if block.event == "started":
        return base("started", model=block.model)
    if block.event == "finished":
        return base("finished", text=block.result or "", model=block.model,
                    requests=block.requests, tokens=block.tokens,
                    # rounded here, once: the live card and the stored record show one figure
                    seconds=round(block.seconds, 2), error=block.error)
    inner = block.block
    if isinstance(inner, TextBlock):
        return base("text", text=inner.text)
    if isinstance(inner, ThinkingBlock):
        return base("thinking", text=inner.text)
    if isinstance(inner, ToolUseBlock):
        return base("tool_call", call_id=inner.id, name=inner.name, input=dict(inner.input))
    if isinstance(inner, ToolResultBlock):
        return base("tool_result", call_id=inner.tool_use_id, name=inner.name,
                    text=inner.content, is_error=inner.is_error)
    if isinstance(inner, ToolUseError):
        return base("tool_error", call_id=inner.tool_use_id, name=inner.name,
                    text=inner.error, is_error=True)
    if isinstance(inner, ToolProgressBlock) and inner.output:
        return base("tool_output", call_id=inner.tool_use_id, name=inner.name,
                    text=inner.output)
    return None


class SubagentRuns:
    """Sums up each delegation call's subagent run as its events pass."""

    def __init__(self) -> None:
        self._runs: dict[str, dict[str, Any]] = {}

    def note(self, event: SubagentReported) -> None:
        """Add one step to its run's record."""
        run = self._runs.setdefault(event.tool_use_id, {
            "agent": event.agent, "agent_id": event.agent_id, "text": "", "calls": []})
        if event.step in ("started", "finished"):
            run["model"] = event.model
        if event.step == "text" and len(run["text"]) < TEXT_KEPT:
            run["text"] = (run["text"] + event.text)[:TEXT_KEPT]
        elif event.step == "tool_call" and len(run["calls"]) < CALLS_KEPT:
            run["calls"].append({"id": event.call_id, "name": event.name,
                                 "input": event.input, "is_error": False})
        elif event.step in ("tool_result", "tool_error"):
            for call in run["calls"]:
                if call["id"] == event.call_id:
                    call["is_error"] = event.is_error
        elif event.step == "finished":
            run.update(requests=event.requests, tokens=event.tokens,
                       seconds=event.seconds, error=event.error)

    def record_of(self, tool_use_id: str) -> dict[str, Any] | None:
        """The run's record (for the delegation result's metadata), once it finished."""
        return self._runs.pop(tool_use_id, None)
