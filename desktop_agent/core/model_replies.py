"""The turn loop's requests to the model, each asked until the reply it goes on with.

The Client's loop wants one thing from the model at each step: the reply it
continues with. Getting it may take more than one request: a server that
refuses ``response_format`` is asked again without it, and
:mod:`.tooling.second_chances` asks a cut or prose reply again, once each;
the replies asked again are not kept. Reading one request's stream (retries
before content, fitting the prompt to the window) is the context keeper's
:meth:`~desktop_agent.core.context.compaction.ContextKeeper.read_reply`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from desktop_agent.core import errors
from desktop_agent.core.context.history_invariants import history_call_ids
from desktop_agent.core.options import AgentOptions
from desktop_agent.core.request_build import append_reply, build_request
from desktop_agent.core.tooling import constrained_calls, tool_match
from desktop_agent.core.tooling.manual_results import EarlyResults
from desktop_agent.core.tooling.second_chances import SecondChances
from desktop_agent.core.tooling.tool_decision import ToolDecision
from desktop_agent.core.turn_control import TurnControl
from desktop_agent.core.types import StreamItem, ToolUseBlock, ToolUseError
from desktop_agent.core.wire.call_lists import Said
from desktop_agent.core.wire.stream import StreamAggregator
from desktop_agent.core.wire.usage import UsageTotals

if TYPE_CHECKING:
    from desktop_agent.core.context.compaction import ContextKeeper
    from desktop_agent.core.structured_output import StructuredOutput

log = logging.getLogger("desktop_agent.client")


class ModelReplies:
    """Builds each request of a turn and reads the replies until one is kept.

    The Client holds one and hands it what changes under it as getters (the
    options are replaced between turns and by ``set_permission_mode`` during
    one); the history and the turn's metadata come with each call.

    Attributes:
        chances: Which second chances this turn used, and how the next
            request differs (the Client starts them afresh each turn).
        api_seconds: This turn's time waiting on the server (the Client sets it
            to 0 when a turn starts).
    """

    def __init__(self, options: Callable[[], AgentOptions],
                 structured: Callable[[], StructuredOutput | None],
                 http: Callable[[], Any], keeper: Callable[[], ContextKeeper],
                 control: TurnControl, early: EarlyResults) -> None:
        self._options = options
        self._structured = structured
        self._http = http
        self._keeper = keeper
        self._control = control
        self._early = early
        self.chances = SecondChances()  # a cut or prose reply asked again, once each
        self.api_seconds = 0.0
        self._decision = ToolDecision()

    def request(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        """The request for the whole history; the context keeper fits it to the window.

        Built here and handed down as data: the layers below send it (again,
        after a dropped connection or a harder compaction) without calling up.
        """
        chances = self.chances
        request = build_request(self._options(), history, calls_only=chances.calls_only,
                                answer_only=chances.answer_only, max_tokens=chances.max_tokens)
        structured = self._structured()
        if structured is not None:
            structured.apply(request)
        return request

    async def kept(self, history: list[dict[str, Any]], metadata: dict[str, Any],
                   usage: UsageTotals, kept: list[StreamAggregator],
                   ) -> AsyncIterator[StreamItem]:
        """The reply the loop goes on with, in ``kept``; its blocks as they stream.

        The request goes again when the server refused ``response_format``, and
        once for each of :mod:`.tooling.second_chances` (a constrained reply cut
        mid-call, prose naming a tool); the replies asked again are not kept.
        """
        options = self._options()
        chances = self.chances
        if options.tool_decision and not chances.used and constrained_calls.applies(options):
            await self._decide(history, options)
        while True:
            constrained = chances.calls_only or constrained_calls.applies(options)
            aggregator = StreamAggregator(
                options.text_delta_mode, options.text_tool_calls, constrained=constrained,
                string_cap=constrained_calls.string_cap(chances.max_tokens or options.max_tokens),
                said=Said(history, options.tools) if constrained else None)
            aggregator.taken_ids = history_call_ids(history)
            self._early.reset()
            ask_again: list[bool] = []
            # A call that could not be read comes at the reply's end; it is shown only
            # when the reply is kept: a call cut by the token limit and asked again with
            # more room was never the reply, and its error would tell the person of a
            # call that was not made.
            unreadable: list[ToolUseError] = []
            async for block in self._stream(history, metadata, aggregator, usage, ask_again):
                if isinstance(block, ToolUseError) and block.tool_use_id:
                    unreadable.append(block)
                else:
                    yield block
            if ask_again:
                continue
            after_tools = bool(history) and history[-1].get("role") == "tool"
            again = None if self._control.interrupt_requested else chances.after_reply(
                options, aggregator, after_tools=after_tools, history=history)
            if again is None:
                for error in unreadable:
                    yield error
                kept.append(aggregator)
                return
            log.info("asking the model again (%s)", again)
            metadata.setdefault("asked_again", []).append(again)

    async def _decide(self, history: list[dict[str, Any]], options: AgentOptions) -> None:
        """Hold this reply to an answer when the model decides no tool fits the request.

        See :mod:`.tooling.tool_decision`; a server that cannot answer the decision
        leaves the reply as it would be without it.
        """
        tools = self._decision.applies(history, options.tools, options, options.model)
        if not tools:
            return
        asked = time.monotonic()
        try:
            if await self._decision.no_tool_fits(
                    self._http(), options, self.request(history), options.system_prompt,
                    tools, tool_match.last_request(history)):
                log.info("the model decided no offered tool fits; holding the reply to an "
                         "answer")
                self.chances.hold_to_answer()
        finally:
            self.api_seconds += time.monotonic() - asked

    async def _stream(self, history: list[dict[str, Any]], metadata: dict[str, Any],
                      aggregator: StreamAggregator, usage: UsageTotals,
                      ask_again: list[bool]) -> AsyncIterator[StreamItem]:
        """One reply of the model, as it streams.

        A failure mid-reply (a dropped connection, an ``error`` event as LiteLLM
        sends) keeps the partial reply in history and is raised; a server that
        refuses constrained output is remembered and ``ask_again`` gets a True.
        """
        asked = time.monotonic()
        try:
            async for block in self._keeper().read_reply(
                    self._http(), self._options(), self.request(history), aggregator, usage,
                    self._control, metadata, history):
                if isinstance(block, ToolUseBlock):
                    self._early.streamed[block.id] = block.name
                yield block
        except errors.APIError as exc:
            if self._refused_response_format(exc, bool(aggregator.content_chunks),
                                             aggregator.constrained):
                ask_again.append(True)
                return
            if aggregator.text or aggregator.tool_blocks:
                append_reply(history, aggregator, [], [], self._options().auto_execute_tools)
                metadata["dropped"] = True
            raise
        finally:
            self.api_seconds += time.monotonic() - asked

    def _refused_response_format(self, exc: errors.APIError, content_arrived: bool,
                                 constrained: bool) -> bool:
        """The server refused ``response_format``: True when the request goes again without."""
        structured = self._structured()
        if structured is not None and structured.refused_natively(exc, content_arrived):
            log.info("the server refused response_format; asking in the prompt instead")
            return True
        if constrained_calls.refused(exc, self._options(), content_arrived, constrained):
            self.chances.calls_only = False
            return True
        return False
