"""``Client``: turns, history, the tool loop, interrupt (``query()`` is in :mod:`.query_run`).

Split by job: this module holds the public ``Client`` (history, turns, the
loop deciding whether another request or tool round follows), composed of
parts: :mod:`.model_replies` builds each request and reads the replies until
one is kept; :mod:`.received_turn` ends a turn from inside the loop reading
it; :mod:`.wire.model_connection` holds the connection to the server;
:mod:`.tooling.run_round` runs one reply's tool calls; :mod:`.turn_control`
holds the interrupt switch; :mod:`.prompt_intake` turns a prompt into the user
message; :mod:`.turn_stops` says how the loop stops and how the turn reads at
its end. Features keep their logic in their own modules
(:mod:`.structured_output`, :mod:`.context.history_stores`,
:mod:`.tooling.deferred_approvals`, :mod:`.tooling.manual_results`).

A *turn* is one user prompt and everything it triggers: the streamed reply
and, in auto mode, rounds of tool execution with the model continuing after
each. ``receive_messages()`` yields the turn's blocks as they arrive (text
token by token) and ends with the turn's :class:`Usage`.

History invariants, kept on every path (success, error, interrupt, limits):
every assistant ``tool_calls`` entry is answered by ``tool`` messages (the
one exception: calls whose approval was deferred stay open, last, until
``approve()``/``deny()`` or the next prompt), no empty user message is ever
added, and reasoning is never sent back.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from contextlib import aclosing
from typing import Any

from desktop_agent.core import errors
from desktop_agent.core.context.compaction import ContextKeeper
from desktop_agent.core.context.content_parts import Prompt, has_images
from desktop_agent.core.context.history_invariants import (
    NOT_EXECUTED_INTERRUPT,
    NOT_EXECUTED_UNANSWERED,
    answer_open_calls,
    open_calls,
)
from desktop_agent.core.context.history_stores import HistoryStore, SessionLink
from desktop_agent.core.folder_skills import expand_folder_command, with_folder_skills
from desktop_agent.core.lifecycle_hooks import LifecycleHooks
from desktop_agent.core.model_replies import ModelReplies
from desktop_agent.core.options import AgentOptions
from desktop_agent.core.prompt_intake import take_back_refused, user_message
from desktop_agent.core.received_turn import ReceivedTurn
from desktop_agent.core.request_build import append_reply
from desktop_agent.core.servers import prompt_speed
from desktop_agent.core.structured_output import structured_output_for
from desktop_agent.core.subagents import DELEGATE_TOOL, Delegation
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.tooling.deferred_approvals import (
    ApprovalLedger,
    PendingApproval,
    pending_in,
)
from desktop_agent.core.tooling.loop_guard import LoopGuard
from desktop_agent.core.tooling.manual_results import DONE, EarlyResults, result_message
from desktop_agent.core.tooling.mcp.server_requests import SamplingReply, SamplingRequest
from desktop_agent.core.tooling.permissions import (
    PERMISSION_MODES,
    PermissionMode,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
)
from desktop_agent.core.tooling.plan_mode import mode_after
from desktop_agent.core.tooling.redaction import scrub_error, secret_values
from desktop_agent.core.tooling.run_round import execute_round
from desktop_agent.core.tooling.tools import one_a_name
from desktop_agent.core.turn_control import TurnControl
from desktop_agent.core.turn_stops import (
    answer_bad_calls,
    limit_reached,
    streamed,
    turn_result,
)
from desktop_agent.core.types import (
    CompactionBlock,
    ResultMessage,
    StreamItem,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)
from desktop_agent.core.wire.model_connection import ModelConnection
from desktop_agent.core.wire.stream import StreamAggregator
from desktop_agent.core.wire.transport import ModelHttp
from desktop_agent.core.wire.usage import UsageTotals

log = logging.getLogger("desktop_agent.client")

class Client:
    """A multi-turn conversation with one model, as an async context manager.

    With ``session=`` (a :class:`~desktop_agent.core.context.history_stores.HistoryStore`,
    e.g. ``StoreHistory`` over the app's database) the conversation is loaded
    on ``async with`` and every query and turn is appended to it.

    Attributes:
        options: The agent's settings; replace with :meth:`update_options`.
        last_usage: The figures of the last finished turn.
        last_output: The last turn's answer validated as ``options.output_type``
            (None without an output type, or before a turn finished).
        final_text: The text of the last turn's final reply.
        turn_metadata: Facts about the last turn (``interrupted``,
            ``iterations``, ``finish_reason``, ``tool_decisions``, ``requests``...)
            and, as in the seed, ``turn_count`` and ``max_turns``.
        last_result: How the last turn ended, as claude-agent-sdk's
            :class:`~desktop_agent.core.types.ResultMessage` (turns, duration,
            usage, stop reason, structured output).
    """

    def __init__(self, options: AgentOptions, *,
                 session: HistoryStore | None = None) -> None:
        self._delegation: Delegation | None = None
        self.options = self._with_delegation(options)
        self._session = SessionLink(session) if session is not None else None
        self.last_usage: Usage | None = None
        self.turn_metadata: dict[str, Any] = {"turn_count": 0, "max_turns": options.max_turns}
        self._early = EarlyResults()
        self.last_output: Any = None
        self.final_text = ""
        self._structured = structured_output_for(options)
        self._approvals = ApprovalLedger()
        self._deferred_stop = False
        self._history: list[dict[str, Any]] = []
        self._turns = 0
        self._pending = False  # a prompt or tool results wait for receive_messages()
        self._running = False
        self._connection = ModelConnection()
        self._control = TurnControl()
        self._received = ReceivedTurn(self._control)
        self._picture_prompt: int | None = None  # index of a new prompt holding a picture
        #: Keeps each request within options.context_length (a view; history is whole).
        self.context_keeper = ContextKeeper()
        stored_id = self._session.stored_id if self._session is not None else lambda: None
        self._lifecycle = LifecycleHooks(lambda: self.options, stored_id)
        self.context_keeper.before_compact = self._lifecycle.pre_compact
        self.last_result: ResultMessage | None = None
        self._replies = ModelReplies(lambda: self.options, lambda: self._structured,
                                     self._client, lambda: self.context_keeper,
                                     self._control, self._early)

    # -- lifecycle -------------------------------------------------------------------
    async def __aenter__(self) -> Client:
        await self.load_session()
        return self

    async def load_session(self) -> None:
        """Load the session's conversation (once; ``async with`` and ``query`` call this).

        Raises:
            TurnInProgressError: a turn is running.
        """
        if self._session is not None and not self._session.loaded:
            if self._running:
                raise errors.TurnInProgressError("cannot load a session while a turn runs")
            stored = await self._session.load()
            if stored:
                self._replace_history(stored + self._history)
        await self._lifecycle.start(resumed=bool(self._history))

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections (a shared ``connection_pool``'s stay open for others).

        A Client that started tells its SessionEnd hooks first.
        """
        await self._lifecycle.end()
        await self._connection.close(self.options)

    def update_options(self, options: AgentOptions) -> None:
        """Switch settings (model, server, tools...) between turns; history is kept."""
        if self._running:
            raise errors.TurnInProgressError("cannot change options while a turn runs")
        self._connection.switch(self.options, options)
        self.options = self._with_delegation(options)
        self._structured = structured_output_for(options)

    def _with_delegation(self, options: AgentOptions) -> AgentOptions:
        """``options`` with the ``delegate`` tool when they name subagents it may start."""
        if not options.agents or options.subagent_depth >= options.max_subagent_depth:
            self._delegation = None
            return options
        self.options = options  # the delegation reads the options through the Client
        self._delegation = Delegation(lambda: self.options, Client, lambda: self._turns)
        tools = [t for t in options.tools if t.name != DELEGATE_TOOL]
        return dataclasses.replace(options, tools=[*tools, self._delegation.tool()])

    def set_permission_mode(self, mode: PermissionMode) -> None:
        """Switch the permission mode (claude-agent-sdk's ``set_permission_mode``).

        Allowed while a turn runs: the next tool round is settled in the new
        mode (the round running now keeps the mode it started with).

        Raises:
            ConfigurationError: ``mode`` is not one of the four.
        """
        if mode not in PERMISSION_MODES:
            raise errors.ConfigurationError(
                f"permission_mode must be one of {', '.join(PERMISSION_MODES)}, not {mode!r}")
        self.options = dataclasses.replace(self.options, permission_mode=mode)

    def rewind_files(self, turn: int, *, force: bool = False) -> Any:
        """Put the folder back as it was before ``turn`` (claude-agent-sdk's ``rewind_files``).

        Needs ``options.file_checkpoints``. ``turn`` is a query number (1: the
        first prompt; :attr:`turns` is the latest). The history is not changed:
        tell the model what you rewound, or start again from a fork.

        Returns:
            What was restored (a ``RestoreReport``).

        Raises:
            ConfigurationError: The options have no file checkpoints.
            TurnInProgressError: A turn is running.
            RestoreConflictError: A file changed since by something else (nothing
                restored; ``force=True`` overwrites it).
        """
        if self._running:
            raise errors.TurnInProgressError("rewind files between turns")
        checkpoints = self.options.file_checkpoints
        if checkpoints is None:
            raise errors.ConfigurationError(
                "rewind_files needs AgentOptions(file_checkpoints=FileCheckpoints(cwd))")
        return checkpoints.rewind(turn, force=force)

    # -- history ---------------------------------------------------------------------
    @property
    def history(self) -> list[dict[str, Any]]:
        """A copy of the conversation as OpenAI message dicts (no system prompt)."""
        return copy.deepcopy(self._history)

    @property
    def message_history(self) -> list[dict[str, Any]]:
        """The same as :attr:`history`; assign to replace the conversation."""
        return self.history

    @message_history.setter
    def message_history(self, messages: list[dict[str, Any]]) -> None:
        if self._running:
            raise errors.TurnInProgressError("cannot replace history while a turn runs")
        self._replace_history(messages)
        if self._session is not None:
            self._session.rebase(len(self._history))

    def _replace_history(self, messages: list[dict[str, Any]]) -> None:
        self._history = [copy.deepcopy(m) for m in messages if m.get("role") != "system"]
        self._pending = bool(self._history) and self._history[-1].get("role") in ("user", "tool")

    @property
    def turns(self) -> int:
        """User queries sent so far."""
        return self._turns

    @property
    def turn_count(self) -> int:
        """User queries sent so far (the seed's name for :attr:`turns`)."""
        return self._turns

    @property
    def pending_approvals(self) -> list[PendingApproval]:
        """Tool calls a deferred approval stopped at (auto mode), oldest first."""
        if not self.options.auto_execute_tools:
            return []
        return pending_in(self._history)

    def approve(self, tool_use_id: str, updated_input: dict[str, Any] | None = None) -> None:
        """Allow a pending call; once all are answered, ``receive_messages()`` resumes."""
        self._decide(tool_use_id, PermissionResultAllow(updated_input))

    def deny(self, tool_use_id: str, message: str = "The user denied this tool call.") -> None:
        """Refuse a pending call; the model gets ``message`` as its result."""
        self._decide(tool_use_id, PermissionResultDeny(message))

    def _decide(self, tool_use_id: str, answer: PermissionResult) -> None:
        if self._running:
            raise errors.TurnInProgressError("answer pending approvals between turns")
        if self._approvals.decide(self._history, tool_use_id, answer):
            self._pending = True

    @property
    def is_running(self) -> bool:
        """True while a turn streams or runs tools."""
        return self._running

    # -- turns -----------------------------------------------------------------------
    async def query(self, prompt: Prompt | None) -> None:
        """Queue a prompt; ``receive_messages()`` sends it and streams the reply.

        ``prompt`` is a string or a list of OpenAI content parts (text and
        images, see :mod:`~desktop_agent.core.context.content_parts`). An empty prompt
        after tool results continues the turn without adding an empty user
        message.

        As in the seed, a manual-mode script may answer a call and continue
        with ``query("")`` from inside the loop that yielded the call: the
        reply that carried it is read to its end first, and that loop then
        ends. After ``interrupt()`` a new query waits for the stopped turn to
        finish instead of being refused.

        Raises:
            PromptBlockedError: a UserPromptSubmit hook refused the prompt.
            TurnInProgressError: the previous turn is still running.
            VisionNotSupportedError: the prompt has a picture and the model
                cannot see (``options.vision`` is False).
            ConfigurationError: a content part is malformed or not an accepted image.
        """
        if self._running:
            await self._settle_running_turn(continuing=not prompt)
        await self.load_session()
        if not prompt and self._history and self._history[-1].get("role") == "tool":
            self._pending = True
            return
        if self.options.skills_dirs:  # read again each query: a skill added meanwhile counts
            self.options = await asyncio.to_thread(with_folder_skills, self.options)
        if isinstance(prompt, str) and self.options.commands_dirs:
            prompt = await asyncio.to_thread(expand_folder_command, prompt, self.options)
        message = await user_message(prompt, self.options, self.history)
        self._answer_open_calls(NOT_EXECUTED_UNANSWERED)  # a new prompt drops pending calls
        self._approvals.clear()
        self._history.append(message)
        self._turns += 1
        self._pending = True
        # A picture the server may refuse is stored once the turn shows it was accepted.
        self._picture_prompt = len(self._history) - 1 if has_images(message["content"]) else None
        if self._session is not None and self._picture_prompt is None:
            await self._session.save(self._history)

    async def _settle_running_turn(self, continuing: bool) -> None:
        """End the running turn where a seed script expects it ended, or refuse.

        A manual-mode continuation (``query("")`` after answering a streamed
        call, from the task reading the turn) reads the reply to its end; an
        interrupted turn is finished (here if its reader is paused in this
        task's loop, else by its reader, which is stopping).

        Raises:
            TurnInProgressError: the turn is still running and neither applies.
        """
        received = self._received
        if self._control.interrupt_requested:
            if received.paused_here():
                await received.finish()
            else:
                await received.ended.wait()
        elif continuing and not self.options.auto_execute_tools and self._early.streamed \
                and received.paused_here():
            await received.finish()
            # Calls of that reply the script had not seen yet stay unanswerable: say so.
            self._answer_open_calls(NOT_EXECUTED_UNANSWERED)
        if self._running:
            raise errors.TurnInProgressError("the previous turn is still running")

    def add_tool_result(self, tool_call_id: str, content: Any,
                        name: str | None = None, *, is_error: bool = False) -> Awaitable[None]:
        """Answer a tool call yourself (manual mode); the next receive continues.

        Works while ``receive_messages()`` is still yielding the reply that
        made the call, and with or without ``await``.
        """
        message = result_message(tool_call_id, content, name, is_error)
        if self._running and not self.options.auto_execute_tools \
                and tool_call_id in self._early.streamed:
            self._early.hold(message)
            return DONE
        if not any(tool_call_id == c.get("id") for c in open_calls(self._history)):
            raise errors.ConfigurationError(f"no unanswered tool call with id {tool_call_id!r}")
        self._history.append(message)
        self._pending = not open_calls(self._history)
        return DONE

    async def interrupt(self) -> None:
        """Stop the running turn now, keeping what arrived so far.

        Called from inside the ``async for`` over ``receive_messages()`` (the
        seed's "interrupt, then break"), the turn ends before this returns
        and the next ``query()`` is accepted at once. From another task, the
        reader stops at its next step; a ``query()`` meanwhile waits for it.
        """
        if not self._running:
            return
        self._control.interrupt()
        if self._received.paused_here():
            await self._received.finish()

    def stop_tool_call(self, tool_use_id: str) -> bool:
        """End just one running tool call (a command), letting the turn go on.

        Only calls whose tool listens for it can be stopped (the ``bash``
        tool; their progress blocks say ``stoppable``): the call ends with a
        result that says it was stopped, which the model then reads.

        Returns:
            False when no such call is running or it cannot be stopped.
        """
        return self._running and self._control.stop_call(tool_use_id)

    async def receive_messages(self) -> AsyncIterator[StreamItem]:
        """Stream the pending turn: blocks as they arrive, then its Usage."""
        if self._running:
            raise errors.TurnInProgressError("the turn is already being received")
        await self.load_session()
        if not self._pending:
            return
        async with aclosing(self._received.read(self._turn_items())) as items:
            async for item in items:
                yield item

    async def _turn_items(self) -> AsyncGenerator[StreamItem, None]:
        """The turn itself: state, the lease, the loop and the record on every exit."""
        resume = None
        if self.options.auto_execute_tools and open_calls(self._history):
            resume = self._approvals.take(self._history)  # answered deferred calls run first
        guard = self._session.turn() if self._session is not None else None
        if guard is not None:
            await guard.__aenter__()  # e.g. the store's turn lease: busy elsewhere raises here
        self._pending = False
        self._running = True
        self._received.ended = asyncio.Event()
        self._control.start()
        self._early.reset(new_turn=True)
        self._deferred_stop = False
        self.last_output = None
        self.final_text = ""
        if self._structured is not None:
            self._structured.start_turn()
        self._lifecycle.new_turn()
        self.turn_metadata = {"interrupted": False, "iterations": 0, "finish_reason": None,
                              "tool_decisions": {}, "requests": 0, "turn_count": self._turns,
                              "max_turns": self.options.max_turns}
        usage = UsageTotals()
        started = time.monotonic()
        self._replies.api_seconds = 0.0
        try:
            async for item in self._run_turn(usage, resume):
                yield item
        except errors.AgentError as exc:
            if isinstance(exc, errors.VisionNotSupportedError) \
                    and take_back_refused(self._history, self._picture_prompt):
                self._turns -= 1  # as if never sent
                self.turn_metadata["turn_count"] = self._turns
            scrub_error(exc, secret_values(self.options))  # a server may echo the key
            raise
        finally:
            self._picture_prompt = None
            self._running = False
            self._control.finish()
            if self._control.interrupt_requested or not self._deferred_stop:
                self._answer_open_calls(NOT_EXECUTED_INTERRUPT
                                        if self._control.interrupt_requested
                                        else NOT_EXECUTED_UNANSWERED, only_if_auto=True)
            self.last_usage = usage.result()
            self.turn_metadata["usage"] = self.last_usage
            self.last_result = turn_result(
                self.turn_metadata, seconds=time.monotonic() - started,
                api_seconds=self._replies.api_seconds,
                session_id=self._lifecycle.settings().session_id,
                final_text=self.final_text, output=self.last_output)
            if self.options.file_checkpoints is not None:
                try:
                    await asyncio.shield(self.options.file_checkpoints.end_turn(self._turns))
                except Exception as exc:  # noqa: BLE001 - the turn's own outcome stands
                    log.warning("the turn's file checkpoint was not closed: %s", exc)
            prompt_speed.observe_usage(self.options.base_url, self.options.model,
                                       self.last_usage)
            if self._early.released and not self._control.interrupt_requested:
                self._pending = not open_calls(self._history)  # answered mid-stream
            try:
                if self._session is not None:
                    await asyncio.shield(self._session.save(self._history))
            finally:
                try:
                    if guard is not None:
                        await asyncio.shield(guard.__aexit__(None, None, None))
                finally:
                    self._received.ended.set()  # a query() waiting after interrupt() goes on
        yield self.last_usage

    async def _run_turn(self, usage: UsageTotals,
                        resume: tuple[list[ToolUseBlock], dict[str, PermissionResult]] | None,
                        ) -> AsyncIterator[StreamItem]:
        options = self.options
        control = self._control
        loops = LoopGuard(options.doom_loop_threshold)
        iteration = 0
        if resume is not None:
            async for item in execute_round(resume[0], options, self._history, control,
                                            self.turn_metadata["tool_decisions"], resume[1]):
                yield item
            if control.interrupt_requested:
                self.turn_metadata["interrupted"] = True
                return
        self._replies.chances.new_turn()
        await self._before_first_request(options)
        while True:
            await self._refresh_tools()
            options = self.options  # set_permission_mode() may have switched it
            kept: list[StreamAggregator] = []
            async for block in self._replies.kept(self._history, self.turn_metadata, usage,
                                                  kept):
                yield block
            aggregator = kept[0]
            calls = aggregator.tool_blocks
            bad_calls = [e for e in aggregator.tool_errors if e.name]
            append_reply(self._history, aggregator, calls, bad_calls,
                         self.options.auto_execute_tools)
            self._early.release(self._history)
            self.turn_metadata["finish_reason"] = aggregator.finish_reason
            self.final_text = aggregator.text
            if control.interrupt_requested:
                self.turn_metadata["interrupted"] = True
                return
            if not (calls or bad_calls):
                if await self._answer_stands(aggregator.text):
                    return
                continue  # told what was wrong (its output, a Stop hook): it answers again
            if not options.auto_execute_tools:
                return
            answer_bad_calls(self._history, bad_calls)
            stop = limit_reached(options, self._history, self.turn_metadata, calls,
                                 iteration, loops)
            if isinstance(stop, ToolUseError):
                yield stop
                return
            iteration += 1
            if not calls:
                continue  # only unusable calls: the model answers their errors
            self.turn_metadata["iterations"] = iteration
            # A loop told once what it is doing gets that as its calls' answers instead.
            async for reported in self._round(calls, options, stop):
                yield reported
            if control.interrupt_requested:
                self.turn_metadata["interrupted"] = True
                return
            if any(self.turn_metadata["tool_decisions"].get(c.id) == "deferred" for c in calls):
                self._deferred_stop = True  # wait for approve()/deny(), maybe in a later process
                self.turn_metadata["pending_approvals"] = [
                    p.to_dict() for p in pending_in(self._history)]
                return

    async def _before_first_request(self, options: AgentOptions) -> None:
        """What the turn asks of servers before it sends anything."""
        if self._delegation is not None:
            await self._delegation.check_servers()  # a subagent's server down: say so now
        if options.constrained_tool_calls == "auto" and options.tools:
            await tool_call_mode.resolve(options)  # asks the server once per model

    async def _answer_stands(self, text: str) -> bool:
        """A reply that called no tool: True when the turn ends with it.

        False when the structured output did not validate or a Stop hook
        refused to let the agent stop; the model was told why, and answers again.
        """
        if self._structured is not None:
            done, self.last_output = self._structured.settle(text, self._history)
            if not done:
                return False
        reason = await self._lifecycle.stop_refusal(text, self.history,
                                                    self.turn_metadata["requests"])
        if reason is None:
            return True
        self._history.append({"role": "user", "content": reason})
        self.turn_metadata.setdefault("stop_hook_reasons", []).append(reason)
        return False

    async def _round(self, calls: list[ToolUseBlock], options: AgentOptions,
                     stop: list[ToolResultBlock] | None) -> AsyncIterator[StreamItem]:
        """Run one round of calls (or give the loop guard's answers instead).

        An approved plan (plan mode's ``exit_plan_mode``) switches the mode
        here, so the rest of the turn runs in the mode the approver chose.
        """
        inputs = {c.id: c.input for c in calls}
        if stop is None and options.file_checkpoints is not None:
            await options.file_checkpoints.before_round(self._turns, calls)
        items = execute_round(calls, options, self._history, self._control,
                              self.turn_metadata["tool_decisions"]) if stop is None \
            else streamed(stop)
        async for item in items:
            if isinstance(item, ToolResultBlock) and item.tool_use_id in inputs:
                mode = mode_after(item, inputs[item.tool_use_id])
                if mode is not None:
                    self.set_permission_mode(mode)
                    self.turn_metadata["permission_mode"] = mode
            yield item

    # -- helpers ---------------------------------------------------------------------
    async def _refresh_tools(self) -> None:
        """Offer a changed tool list from this request on (``AgentOptions.refresh_tools``)."""
        refresh = self.options.refresh_tools
        fresh = await refresh() if refresh is not None else None
        if fresh is not None:
            self.options.tools = one_a_name(fresh)  # never two tools under one name

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        """Answer an MCP server's sampling request with this agent's model (no tools).

        Raises:
            APIError: The model server failed.
        """
        from desktop_agent.core.tooling.mcp.model_sampling import sample_with

        return await sample_with(self._client(), self.options, request,
                                 self.options.temperature)

    async def compact(self) -> CompactionBlock | None:
        """Compact the model's view of the history now, keeping only the last exchange.

        What ``/compact`` runs: the same summary (or drop) the context keeper
        makes when a request nears the window, asked for by a person. The
        history itself is kept whole; the next requests see the summary.

        Returns:
            The compaction, or None when there was nothing to compact (see
            :meth:`ContextKeeper.compact_now`).

        Raises:
            APIError: Never for a failed summary (the oldest messages are then
                dropped instead); only what the hooks raise.
        """
        return await self.context_keeper.compact_now(self._replies.request(self._history),
                                                     self.options,
                                                     self._client())

    def _client(self) -> ModelHttp:
        return self._connection.http(self.options)

    def _answer_open_calls(self, text: str, only_if_auto: bool = False) -> None:
        if only_if_auto and not self.options.auto_execute_tools and \
                not self._control.interrupt_requested:
            return
        answer_open_calls(self._history, text)


__all__ = ["Client", "TextBlock"]
