"""One turn: the core's blocks -> the store (through the recorder) and session events.

Kept apart from :mod:`~desktop_agent.session.conversation` (which decides when turns start, stop
and what they answer) because this is the part that runs for every block of
a reply: write it first (so nothing shown is lost), then report it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from desktop_agent.core.types import (
    CompactionBlock,
    PromptCutBlock,
    PromptProgressBlock,
    SubagentBlock,
    TextBlock,
    ThinkingBlock,
    ToolProgressBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)
from desktop_agent.session.branch.branch_reading import picture_urls
from desktop_agent.session.events import (
    CompactionReported,
    PlanUpdated,
    PromptCutReported,
    PromptProgressReported,
    ReplyStarted,
    SessionEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallStarted,
    ToolErrorReported,
    ToolInputReplaced,
    ToolOutputReported,
    ToolProgressReported,
    ToolResultArrived,
    UsageReported,
)
from desktop_agent.session.tools.plan import PLAN_TOOL_NAME, Plan, PlanError
from desktop_agent.session.turn.subagent_runs import SubagentRuns, reported

if TYPE_CHECKING:
    from desktop_agent.core.client import Client
    from desktop_agent.session.store_calls import StoreCalls
    from desktop_agent.session.turn.recorder import TurnRecorder


class TurnBlocks:
    """Records and reports the blocks of one turn.

    Args:
        recorder: The turn's recorder.
        client: The client streaming the turn (for a tool's source).
        emit: Reports a session event.
    """

    def __init__(self, recorder: TurnRecorder, client: Client,
                 emit: Callable[[SessionEvent], None]) -> None:
        self._recorder = recorder
        self._client = client
        self._emit = emit
        self._plan_inputs: dict[str, dict[str, Any]] = {}
        self._subagents = SubagentRuns()

    def streamed_piece(self, item: Any) -> bool:
        """Record and report a text or reasoning piece of the open reply; False: not one.

        Nearly every block of a turn is such a piece: taken here without a
        coroutine or the type checks of :meth:`handle`, which takes every other
        block (and a piece that opens a reply, which needs a store call).
        """
        kind = item.__class__
        if kind is TextBlock:
            if not self._recorder.add_to_open_reply(item.text):
                return False
            self._emit(TextDelta(item.text))
            return True
        if kind is ThinkingBlock:
            if not self._recorder.add_to_open_reply(item.text, thinking=True):
                return False
            self._emit(ThinkingDelta(item.text))
            return True
        return False

    async def handle(self, item: Any, call: StoreCalls) -> None:
        """Write one block to the store, then report it.

        ``call`` runs the store calls that open and close a reply (see
        :mod:`~desktop_agent.session.store_calls`); the streamed pieces in
        between are saved in the background, so a text piece costs no store call here.
        """
        recorder = self._recorder
        if isinstance(item, TextBlock | ThinkingBlock | ToolUseBlock):
            await recorder.open_reply(call)
        if isinstance(item, TextBlock):
            self._opened(recorder.text(item.text))
            self._emit(TextDelta(item.text))
        elif isinstance(item, ThinkingBlock):
            self._opened(recorder.thinking(item.text))
            self._emit(ThinkingDelta(item.text))
        elif isinstance(item, ToolUseBlock):
            found = self._client.options.tool_named(item.name)
            source = found.source if found is not None else None
            self._opened(recorder.tool_call(item.id, item.name, dict(item.input), source))
            if item.name == PLAN_TOOL_NAME:
                self._plan_inputs[item.id] = dict(item.input)
            self._emit(ToolCallStarted(item.id, item.name, dict(item.input), source))
        elif isinstance(item, ToolResultBlock):
            self._result_arrived(item)
        elif isinstance(item, SubagentBlock):
            self._subagent_step(item)
        elif isinstance(item, ToolProgressBlock) and item.output is not None:
            recorder.output_reported(item.tool_use_id, int(item.progress), item.elapsed or 0.0)
            self._emit(ToolOutputReported(item.tool_use_id, item.name, item.output,
                                          int(item.progress), item.elapsed or 0.0,
                                          item.stoppable))
        elif isinstance(item, ToolProgressBlock):
            self._emit(ToolProgressReported(item.tool_use_id, item.name, item.progress,
                                            item.total, item.message))
        elif isinstance(item, ToolUseError):
            self._opened(recorder.tool_error(item.error, item.tool_use_id, item.name,
                                             item.raw_data))
            self._emit(ToolErrorReported(item.error, item.tool_use_id, item.name,
                                         item.raw_data))
        elif isinstance(item, Usage):
            await recorder.usage({
                "prompt_tokens": item.prompt_tokens,
                "completion_tokens": item.completion_tokens,
                "time_to_first_token": item.time_to_first_token,
                "tokens_per_second": item.tokens_per_second,
            }, call)
            self._emit(UsageReported(item))
        elif isinstance(item, PromptProgressBlock):
            self._emit(PromptProgressReported(item.processed, item.total))
        elif isinstance(item, CompactionBlock):
            recorder.compaction(item)
            self._emit(CompactionReported(item))
        elif isinstance(item, PromptCutBlock):
            await recorder.reply_metadata(
                "prompt_cut", {"kept": item.kept, "sent": item.sent, "window": item.window},
                call, streaming_only=True)
            self._emit(PromptCutReported(item))

    def _result_arrived(self, item: ToolResultBlock) -> None:
        """A call's result: stored (with its subagent run, for a delegation), then reported."""
        recorder = self._recorder
        recorder.tool_result(item.tool_use_id, item.content, item.is_error, item.name,
                             item.decision, item.ran_input, user_content=item.user_content,
                             images=item.images,
                             subagent=self._subagents.record_of(item.tool_use_id))
        if item.ran_input is not None:
            self._emit(ToolInputReplaced(item.tool_use_id, dict(item.ran_input)))
        self._emit(ToolResultArrived(item.tool_use_id, item.name, item.content,
                                     item.is_error,
                                     item.tool_use_id in recorder.errors_shown,
                                     item.user_content, len(item.images),
                                     picture_urls(item.images)))
        self._plan_ran(item)

    def _subagent_step(self, item: SubagentBlock) -> None:
        """A subagent's step: noted for the delegation's record, and reported."""
        event = reported(item)
        if event is not None:
            self._subagents.note(event)
            self._emit(event)

    def _plan_ran(self, result: ToolResultBlock) -> None:
        """An ``update_plan`` call that ran sets the plan (with the input it ran with)."""
        arguments = self._plan_inputs.pop(result.tool_use_id, None)
        if arguments is None or result.is_error:
            return
        try:
            plan = Plan.from_input(result.ran_input if result.ran_input is not None
                                   else arguments)
        except PlanError:
            return
        self._emit(PlanUpdated(plan))

    def _opened(self, message_id: str | None) -> None:
        if message_id is not None:
            self._emit(ReplyStarted(message_id))
