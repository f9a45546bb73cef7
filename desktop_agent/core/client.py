"""``Client`` and ``query()``: turns, history, the tool loop, interrupt.

A *turn* is one user prompt and everything it triggers: the streamed reply
and, in auto mode, rounds of tool execution with the model continuing after
each. ``receive_messages()`` yields the turn's blocks as they arrive (text
token by token) and ends with the turn's :class:`Usage`.

History invariants, kept on every path (success, error, interrupt, limits):
every assistant ``tool_calls`` entry is answered by ``tool`` messages, no
empty user message is ever added, and reasoning is never sent back.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from . import errors
from .history import (
    NOT_EXECUTED_INTERRUPT,
    NOT_EXECUTED_LIMIT,
    NOT_EXECUTED_LOOP,
    NOT_EXECUTED_UNANSWERED,
    answer_open_calls,
    history_call_ids,
    open_calls,
    tool_message,
)
from .hooks import HOOK_USER_PROMPT_SUBMIT, UserPromptSubmitEvent, run_hooks
from .options import AgentOptions
from .ran_inputs import replace_call_arguments
from .redaction import scrub_error, secret_values
from .stream import StreamAggregator
from .stream_guard import StreamGuard, next_chunk
from .tool_pool import MAX_PARALLEL_TOOL_CALLS
from .tool_runner import ToolOutcome, run_tool_call
from .transport import ChatStream, make_openai_client, open_stream
from .types import (
    AssistantMessage,
    Block,
    PromptProgressBlock,
    StreamItem,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)
from .usage import UsageTotals

log = logging.getLogger("desktop_agent.client")

class Client:
    """A multi-turn conversation with one model, as an async context manager.

    Attributes:
        options: The agent's settings; replace with :meth:`update_options`.
        last_usage: The figures of the last finished turn.
        turn_metadata: Facts about the last turn (``interrupted``,
            ``iterations``, ``finish_reason``, ``tool_decisions``...).
    """

    def __init__(self, options: AgentOptions) -> None:
        self.options = options
        self.last_usage: Usage | None = None
        self.turn_metadata: dict[str, Any] = {}
        self._history: list[dict[str, Any]] = []
        self._turns = 0
        self._pending = False  # a prompt or tool results wait for receive_messages()
        self._running = False
        self._http: Any = None
        self._interrupt_requested = False
        self._reader_task: asyncio.Task[Any] | None = None
        self._awaiting_server = False
        self._tool_tasks: list[asyncio.Task[ToolOutcome]] = []
        self._closing: set[asyncio.Future[None]] = set()

    # -- lifecycle -------------------------------------------------------------------
    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connection pool."""
        if self._http is not None:
            http, self._http = self._http, None
            await http.close()

    def update_options(self, options: AgentOptions) -> None:
        """Switch settings (model, server, tools...) between turns; history is kept."""
        if self._running:
            raise errors.TurnInProgressError("cannot change options while a turn runs")
        if self._http is not None and (options.base_url != self.options.base_url
                                       or options.api_key != self.options.api_key
                                       or options.timeout != self.options.timeout):
            self._closing.add(asyncio.ensure_future(self._http.close()))
            self._closing = {t for t in self._closing if not t.done()}
            self._http = None
        self.options = options

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
        self._history = [copy.deepcopy(m) for m in messages if m.get("role") != "system"]
        self._pending = bool(self._history) and self._history[-1].get("role") in ("user", "tool")

    @property
    def turns(self) -> int:
        """User queries sent so far."""
        return self._turns

    @property
    def is_running(self) -> bool:
        """True while a turn streams or runs tools."""
        return self._running

    # -- turns -----------------------------------------------------------------------
    async def query(self, prompt: str | None) -> None:
        """Queue a prompt; ``receive_messages()`` sends it and streams the reply.

        An empty prompt after tool results continues the turn without adding
        an empty user message.

        Raises:
            MaxTurnsExceededError: ``options.max_turns`` queries were already made.
            PromptBlockedError: a UserPromptSubmit hook refused the prompt.
            TurnInProgressError: the previous turn is still running.
        """
        if self._running:
            raise errors.TurnInProgressError("the previous turn is still running")
        if not prompt and self._history and self._history[-1].get("role") == "tool":
            self._pending = True
            return
        max_turns = self.options.max_turns
        if max_turns is not None and self._turns >= max_turns:
            raise errors.MaxTurnsExceededError(
                f"this client allows {max_turns} turn(s); create a new Client or raise "
                "AgentOptions.max_turns (None means unlimited)")
        text = prompt or ""
        decision = await run_hooks(self.options.hooks, HOOK_USER_PROMPT_SUBMIT,
                                   UserPromptSubmitEvent(text, self.history))
        if decision is not None:
            if not decision.continue_:
                raise errors.PromptBlockedError(decision.reason or "a hook blocked the prompt")
            if decision.modified_prompt is not None:
                text = decision.modified_prompt
        if not text.strip():
            if decision is not None and decision.modified_prompt is not None:
                raise errors.PromptBlockedError(
                    "a hook replaced the prompt with an empty one; nothing was sent")
            raise errors.ConfigurationError("the prompt is empty")
        self._answer_open_calls(NOT_EXECUTED_UNANSWERED)
        self._history.append({"role": "user", "content": text})
        self._turns += 1
        self._pending = True

    async def add_tool_result(self, tool_call_id: str, content: Any,
                              name: str | None = None, *, is_error: bool = False) -> None:
        """Answer a tool call yourself (manual mode); the next receive continues."""
        if not any(tool_call_id == c.get("id") for c in open_calls(self._history)):
            raise errors.ConfigurationError(f"no unanswered tool call with id {tool_call_id!r}")
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        message: dict[str, Any] = {"role": "tool", "tool_call_id": tool_call_id,
                                   "content": f"Error: {text}" if is_error else text}
        if name:
            message["name"] = name
        self._history.append(message)
        self._pending = not open_calls(self._history)

    async def interrupt(self) -> None:
        """Stop the running turn now, keeping what arrived so far."""
        if not self._running:
            return
        self._interrupt_requested = True
        if self._awaiting_server and self._reader_task is not None:
            self._reader_task.cancel()
        for task in self._tool_tasks:
            task.cancel()

    async def receive_messages(self) -> AsyncIterator[StreamItem]:
        """Stream the pending turn: blocks as they arrive, then its Usage."""
        if self._running:
            raise errors.TurnInProgressError("the turn is already being received")
        if not self._pending:
            return
        self._pending = False
        self._running = True
        self._interrupt_requested = False
        self._reader_task = asyncio.current_task()
        self.turn_metadata = {"interrupted": False, "iterations": 0, "finish_reason": None,
                              "tool_decisions": {}, "requests": 0}
        usage = UsageTotals()
        try:
            async for item in self._run_turn(usage):
                yield item
        except errors.AgentError as exc:
            scrub_error(exc, secret_values(self.options))  # a server may echo the key
            raise
        finally:
            self._running = False
            self._reader_task = None
            self._tool_tasks = []
            self._answer_open_calls(NOT_EXECUTED_INTERRUPT if self._interrupt_requested
                                    else NOT_EXECUTED_UNANSWERED, only_if_auto=True)
            self.last_usage = usage.result()
            self.turn_metadata["usage"] = self.last_usage
        yield self.last_usage

    async def _run_turn(self, usage: UsageTotals) -> AsyncIterator[StreamItem]:
        options = self.options
        recent_calls: list[str] = []
        iteration = 0
        while True:
            aggregator = StreamAggregator(options.text_delta_mode, options.text_tool_calls)
            aggregator.taken_ids = history_call_ids(self._history)
            async for block in self._stream_once(aggregator, usage):
                yield block
            calls = aggregator.tool_blocks
            bad_calls = [e for e in aggregator.tool_errors if e.name]
            self._append_assistant(aggregator, calls, bad_calls)
            self.turn_metadata["finish_reason"] = aggregator.finish_reason
            if self._interrupt_requested:
                self.turn_metadata["interrupted"] = True
                return
            if not options.auto_execute_tools or not (calls or bad_calls):
                return
            for error in bad_calls:  # the model gets a chance to correct itself
                self._history.append(tool_message(error.tool_use_id or "", error.name,
                                                   f"Error: {error.error} Raw arguments: "
                                                   f"{(error.raw_data or '')[:500]}"))
            if not calls:
                if iteration >= options.max_tool_iterations:
                    yield self._stop_loop(calls, NOT_EXECUTED_LIMIT, _limit_text(options))
                    return
                iteration += 1
                continue
            if iteration >= options.max_tool_iterations:
                yield self._stop_loop(calls, NOT_EXECUTED_LIMIT, _limit_text(options))
                return
            recent_calls.extend(_signature(c) for c in calls)
            threshold = options.doom_loop_threshold
            if threshold and len(recent_calls) >= threshold and \
                    len(set(recent_calls[-threshold:])) == 1:
                yield self._stop_loop(calls, NOT_EXECUTED_LOOP, (
                    f"Stopped: {calls[-1].name} was called {threshold} times in a row with the "
                    "same arguments."))
                return
            iteration += 1
            self.turn_metadata["iterations"] = iteration
            async for item in self._execute_round(calls):
                yield item
            if self._interrupt_requested:
                self.turn_metadata["interrupted"] = True
                return

    async def _stream_once(self, aggregator: StreamAggregator,
                           usage: UsageTotals) -> AsyncIterator[Block]:
        """One request, retried if the connection drops before any content arrived."""
        attempt = 0
        while True:
            try:
                async for block in self._stream_attempt(aggregator, usage):
                    yield block
                return
            except errors.ServerConnectionError as exc:
                retry = self.options.retry
                if (not getattr(exc, "mid_stream", False) or aggregator.content_chunks
                        or self._interrupt_requested or attempt >= retry.max_retries):
                    raise
                attempt += 1
                log.info("connection dropped before any content; retry %d", attempt)
                await asyncio.sleep(retry.delay(attempt))

    async def _stream_attempt(self, aggregator: StreamAggregator,
                              usage: UsageTotals) -> AsyncIterator[Block]:
        """One request: stream its blocks; on interrupt keep what arrived."""
        options = self.options
        request = self._build_request()
        self.turn_metadata["requests"] += 1
        sent_at = time.perf_counter()
        first_at: float | None = None
        stream: ChatStream | None = None
        try:
            self._awaiting_server = True
            try:
                stream = await open_stream(
                    self._client(), request, base_url=options.base_url,
                    api_key=options.api_key, retry=options.retry,
                    extra_headers=options.extra_headers)
                chunks = stream.chunks()
                guard = StreamGuard(options.max_tokens, options.base_url)
                while True:
                    self._awaiting_server = True
                    try:
                        chunk = await next_chunk(chunks, options.timeout, options.base_url)
                    except StopAsyncIteration:
                        break
                    finally:
                        self._awaiting_server = False
                    guard.check(chunk)
                    blocks = aggregator.feed(chunk)
                    if blocks:
                        if first_at is None and not _only_progress(blocks):
                            first_at = time.perf_counter()
                        for block in blocks:
                            yield block
                    if self._interrupt_requested:
                        break
            except asyncio.CancelledError:
                if not self._interrupt_requested:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
            finally:
                self._awaiting_server = False
            if not self._interrupt_requested:
                for block in aggregator.finish():
                    if first_at is None:
                        first_at = time.perf_counter()
                    yield block
            else:
                aggregator.finish_reason = aggregator.finish_reason or "interrupted"
        except errors.APIError:
            # any mid-stream failure (dropped connection, an `error` event as
            # LiteLLM sends): keep the partial reply in history, then re-raise
            if aggregator.text or aggregator.tool_blocks:
                self._append_assistant(aggregator, [], [])
                self.turn_metadata["dropped"] = True
            raise
        finally:
            if stream is not None:
                await asyncio.shield(stream.close())
            usage.add(aggregator, sent_at, first_at, time.perf_counter())

    async def _execute_round(self, calls: list[ToolUseBlock]) -> AsyncIterator[Block]:
        """Run one assistant message's calls concurrently; results in call order."""
        history = self.history
        limit = asyncio.Semaphore(MAX_PARALLEL_TOOL_CALLS)
        self._tool_tasks = [asyncio.ensure_future(run_tool_call(call, self.options, history,
                                                                limit))
                            for call in calls]
        outcomes: list[ToolOutcome | None] = []
        for call, task in zip(calls, self._tool_tasks, strict=True):
            try:
                outcomes.append(await task)
            except asyncio.CancelledError:
                if not self._interrupt_requested:
                    for other in self._tool_tasks:
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
        self._tool_tasks = []
        decisions = self.turn_metadata["tool_decisions"]
        for call, outcome in zip(calls, outcomes, strict=True):
            if outcome is None:
                self._history.append(tool_message(call.id, call.name, NOT_EXECUTED_INTERRUPT))
                decisions[call.id] = "interrupted"
                continue
            outcome.result.decision = outcome.decision
            decisions[call.id] = outcome.decision
            if outcome.result.ran_input is not None:
                # What the model sees next is what ran (an edited or rewritten input).
                replace_call_arguments(self._history, call.id, outcome.result.ran_input)
            if outcome.error is not None:
                yield outcome.error
            yield outcome.result
            self._history.append(tool_message(call.id, call.name, outcome.result.content))

    def _stop_loop(self, calls: list[ToolUseBlock], result_text: str,
                   message: str) -> ToolUseError:
        for call in calls:
            self._history.append(tool_message(call.id, call.name, result_text))
        self.turn_metadata["stopped"] = message
        return ToolUseError(message)

    # -- helpers ---------------------------------------------------------------------
    def _client(self) -> Any:
        if self._http is None:
            o = self.options
            self._http = make_openai_client(o.base_url, o.api_key, o.timeout)
        return self._http

    def _build_request(self) -> dict[str, Any]:
        o = self.options
        messages: list[dict[str, Any]] = []
        if o.system_prompt:
            messages.append({"role": "system", "content": o.system_prompt})
        messages.extend(self._history)
        request: dict[str, Any] = {
            "model": o.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if o.tools:
            request["tools"] = [t.to_openai_format() for t in o.tools]
        if o.max_tokens is not None:
            request["max_tokens"] = o.max_tokens
        if o.temperature is not None:
            request["temperature"] = o.temperature
        if o.extra_body:
            request["extra_body"] = dict(o.extra_body)
        return request

    def _append_assistant(self, aggregator: StreamAggregator, calls: list[ToolUseBlock],
                          bad_calls: list[ToolUseError]) -> None:
        tool_calls: list[dict[str, Any]] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.input, ensure_ascii=False)}}
            for c in calls
        ]
        if self.options.auto_execute_tools:
            # calls with unusable arguments stay in history (as {}) so that the
            # error result sent back has a call to answer
            tool_calls += [
                {"id": e.tool_use_id, "type": "function",
                 "function": {"name": e.name, "arguments": "{}"}}
                for e in bad_calls
            ]
        if not aggregator.text and not tool_calls:
            return
        message: dict[str, Any] = {"role": "assistant",
                                   "content": aggregator.text or (None if tool_calls else "")}
        if tool_calls:
            message["tool_calls"] = tool_calls
        self._history.append(message)

    def _answer_open_calls(self, text: str, only_if_auto: bool = False) -> None:
        if only_if_auto and not self.options.auto_execute_tools and not self._interrupt_requested:
            return
        answer_open_calls(self._history, text)


def _signature(call: ToolUseBlock) -> str:
    return call.name + "\x00" + json.dumps(call.input, sort_keys=True, default=str)


def _limit_text(options: AgentOptions) -> str:
    return (f"Stopped: the limit of {options.max_tool_iterations} tool rounds for one turn was "
            "reached. Ask again to let the agent continue.")


async def query(prompt: str, options: AgentOptions) -> AsyncIterator[AssistantMessage]:
    """Run one turn and stream it as messages, one per block as it arrives."""
    async with Client(options) as client:
        await client.query(prompt)
        async for item in client.receive_messages():
            if isinstance(item, Usage):
                continue
            yield AssistantMessage(content=[item], model=options.model)


__all__ = ["Client", "TextBlock", "query"]


def _only_progress(blocks: list[Block]) -> bool:
    """Prompt progress comes before the first token and must not count as it."""
    return all(isinstance(b, PromptProgressBlock) for b in blocks)
