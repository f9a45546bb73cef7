"""Blocks and messages that the core yields to front ends.

A turn streams as a sequence of blocks. Text and thinking arrive as *deltas*
(each ``TextBlock`` holds the new piece only, in order); tool calls arrive
whole, once their arguments are complete. Front ends append deltas and never
parse provider chunks themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(slots=True)
class TextBlock:
    """A piece of the assistant's visible answer (a delta while streaming)."""

    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True)
class ThinkingBlock:
    """A piece of the model's reasoning; never sent back to the server."""

    text: str
    type: Literal["thinking"] = "thinking"


@dataclass(slots=True)
class ToolUseBlock:
    """A complete tool call requested by the model."""

    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_use"] = "tool_use"


@dataclass(slots=True)
class ToolUseError:
    """A tool call that could not be used, or a stop of the tool loop.

    Attributes:
        error: What went wrong, in words a person can read.
        raw_data: The raw argument buffer or input involved, if any.
        tool_use_id: The call this error answers, when there is one.
        name: The tool's name, when known.
    """

    error: str
    raw_data: str | None = None
    tool_use_id: str | None = None
    name: str | None = None
    type: Literal["tool_use_error"] = "tool_use_error"


@dataclass(slots=True)
class ToolResultBlock:
    """The result of running a tool, as sent back to the model.

    ``decision`` says how the call was settled (``rule``, ``approved``,
    ``denied``, ``blocked``, ``auto``...), for transcripts and the store.
    ``ran_input`` is the input the tool ran with when it differs from the
    model's (an approver edited it, or a hook rewrote it); the client has
    already put it into the history's assistant entry.
    ``images`` are pictures the tool returned (``image_url`` parts; sent to a
    model that can see). ``user_content`` is meant for the person only (MCP
    ``audience: ["user"]``): show it on the tool card; the model never gets it.
    """

    tool_use_id: str
    content: str
    is_error: bool = False
    name: str | None = None
    decision: str | None = None
    ran_input: dict[str, Any] | None = None
    images: list[dict[str, Any]] = field(default_factory=list)
    user_content: str | None = None
    type: Literal["tool_result"] = "tool_result"


@dataclass(slots=True)
class ToolProgressBlock:
    """How far a running tool call is (MCP ``notifications/progress``), or what it printed.

    A report with ``output`` set is live output (the ``bash`` tool's stdout
    and stderr as the command runs): ``progress`` then counts the lines
    printed so far. The model never gets these blocks; it gets the call's
    final, budgeted result.

    Attributes:
        tool_use_id: The call it belongs to.
        progress: Work done so far (grows with each report); lines, for output.
        total: Work in all, when the tool knows it.
        message: What the tool is doing now, if it says.
        name: The tool's name.
        output: Output printed since the previous report (a bounded tail when
            there was more; secrets blanked), or None for a plain progress report.
        elapsed: Seconds since the call started (output reports).
        stoppable: The call ends early when asked (``Client.stop_tool_call``).
    """

    tool_use_id: str
    progress: float
    total: float | None = None
    message: str | None = None
    name: str | None = None
    output: str | None = None
    elapsed: float | None = None
    stoppable: bool = False
    type: Literal["tool_progress"] = "tool_progress"


@dataclass(slots=True)
class PromptProgressBlock:
    """How far the server has read the prompt, before the first token.

    llama.cpp streams this when the request asks for it
    (``extra_body={"return_progress": True}``); on a CPU a long prompt takes
    seconds, and a front end can show "processing prompt N%" meanwhile.

    Attributes:
        processed: Prompt tokens read so far (cached ones included).
        total: Prompt tokens in all.
        cached: Prompt tokens reused from the server's cache.
    """

    processed: int
    total: int
    cached: int = 0
    type: Literal["prompt_progress"] = "prompt_progress"


@dataclass(slots=True)
class CompactionBlock:
    """Earlier messages were summarised or dropped so the request fits the context.

    Only the request changes: ``Client.history`` and the store keep every
    message. A front end shows it as "N earlier messages summarised", which
    expands to ``summary``.

    Attributes:
        messages: History messages the request now replaces (all compactions so far).
        summary: The summary that stands in for them; None when they were dropped.
        mode: ``summarise`` or ``drop_oldest`` (what actually happened: a failed
            summary falls back to dropping).
        tokens_before: Estimated prompt tokens before compacting.
        tokens_after: Estimated prompt tokens after.
        dropped: Of ``messages``, how many were left out without a summary.
        anchor: The index of a user message kept although before ``messages``
            (the start of a long agent turn the cut fell into), or None.
        covered_tokens: Estimated tokens of the ``messages`` the request replaces:
            with the rest of the history, what the conversation needs whole, for a
            front end that holds only the history after them.

    ``messages``, ``summary``, ``dropped`` and ``anchor`` are the whole state
    of the model's view: stored with the reply, they let a Client made later
    (the conversation opened again) continue from the same view
    (:meth:`~desktop_agent.core.context.compaction.ContextKeeper.restore`) instead of
    summarising again.
    """

    messages: int
    summary: str | None
    mode: Literal["summarise", "drop_oldest"]
    tokens_before: int = 0
    tokens_after: int = 0
    dropped: int = 0
    anchor: int | None = None
    covered_tokens: int = 0
    type: Literal["compaction"] = "compaction"


@dataclass(slots=True)
class PromptCutBlock:
    """The server read less of the prompt than it was sent, and said nothing.

    Ollama's OpenAI-compatible route drops the oldest messages of a prompt
    longer than the model's ``num_ctx`` without an error; only its
    ``usage.prompt_tokens`` shows it. The reply it came with was written
    without that part of the conversation; front ends mark it so. The window
    is remembered for the server and model, and the next request is
    compacted to fit it.

    Attributes:
        kept: Prompt tokens the server says it read.
        sent: About how many it was sent, in the server's tokens (the core's count).
        window: The context window learned from it.
    """

    kept: int
    sent: int
    window: int
    type: Literal["prompt_cut"] = "prompt_cut"

    @property
    def message(self) -> str:
        """The mark a front end shows on the reply."""
        return (f"The server cut the prompt to {self.kept:,} tokens (about {self.sent:,} "
                "were sent): this reply did not see the oldest part of the conversation. "
                "The next message is compacted to fit.")


@dataclass(slots=True)
class Usage:
    """Figures for one turn.

    Token counts are what the server reported (None when it reported nothing).
    ``tokens_per_second`` prefers the server's own timing; otherwise it is
    completion tokens over the time from first to last token.

    The prompt figures are of the turn's first request, where the server says
    them (llama.cpp's ``timings``; ``cached_prompt_tokens`` also from
    ``usage.prompt_tokens_details``): ``prompt_tokens_evaluated`` were
    processed afresh, ``cached_prompt_tokens`` reused from the server's prefix
    cache, at ``prompt_tokens_per_second``.
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    time_to_first_token: float | None = None
    tokens_per_second: float | None = None
    type: Literal["usage"] = "usage"
    prompt_tokens_evaluated: int | None = None
    cached_prompt_tokens: int | None = None
    prompt_tokens_per_second: float | None = None

    @property
    def text(self) -> str:
        """Always empty: code written for the seed reads ``.text`` on every item."""
        return ""

    @property
    def total_tokens(self) -> int | None:
        """Prompt plus completion tokens, when both are known."""
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.prompt_tokens + self.completion_tokens


@dataclass(slots=True)
class SubagentBlock:
    """What a subagent is doing, streamed under the delegation call that started it.

    The child's own blocks arrive wrapped (``event="block"``): its text
    deltas, calls, results and errors, as the main agent's arrive. ``started``
    comes first (with the model), ``finished`` last (with the figures and the
    answer handed back, or the error that ended it). The model never gets these
    blocks; it gets the delegation call's result.

    Attributes:
        tool_use_id: The main agent's delegation call.
        agent: The subagent's name (its definition).
        agent_id: This run of it (several runs of one definition may run at once).
        event: ``started``, ``block`` or ``finished``.
        block: The child's block (``event="block"``; a nested subagent's own
            SubagentBlock when children delegate further).
        model: The model it runs on.
        requests: Model requests it made (``finished``).
        tokens: Tokens it used, prompt and completion (``finished``; None: unknown).
        seconds: How long it ran (``finished``).
        result: The answer handed back (``finished``).
        error: Why it ended without an answer (``finished``; the loop guard, a limit).
    """

    tool_use_id: str
    agent: str
    agent_id: str
    event: Literal["started", "block", "finished"]
    block: Any = None
    model: str | None = None
    requests: int = 0
    tokens: int | None = None
    seconds: float = 0.0
    result: str | None = None
    error: str | None = None
    type: Literal["subagent"] = "subagent"


Block = (TextBlock | ThinkingBlock | ToolUseBlock | ToolUseError | ToolResultBlock
         | PromptProgressBlock | ToolProgressBlock | CompactionBlock | PromptCutBlock
         | SubagentBlock)
StreamItem = Block | Usage


@dataclass(slots=True)
class AssistantMessage:
    """A group of blocks yielded by :func:`desktop_agent.query`."""

    content: list[Block] = field(default_factory=list)
    model: str | None = None


@dataclass(slots=True)
class ResultMessage:
    """How a query ended: ``query()`` yields it last (claude-agent-sdk's ``ResultMessage``).

    ``content`` is empty, so a seed loop reading ``message.content`` of every
    message reads nothing from it. ``Client.last_result`` holds the same after
    each turn.

    Attributes:
        subtype: ``success``; ``error_max_turns`` (a request or tool-round limit
            stopped the agent); ``error_during_execution`` (the loop guard
            stopped it); ``interrupted``; ``awaiting_approval`` (a deferred call).
        duration_ms: The turn's wall time.
        duration_api_ms: Of it, the time spent waiting on the model server.
        is_error: True unless the turn ended with an answer (or awaits approval).
        num_turns: Model requests the turn made (claude-agent-sdk's turns).
        session_id: The conversation's id, when the Client has one.
        usage: The turn's token figures.
        result: The final answer's text.
        stop_reason: Why the last reply ended (the server's ``stop``, ``length``...)
            or what stopped the turn (``max_turns``, ``tool_rounds``, ``loop``,
            ``interrupted``, ``awaiting_approval``).
        structured_output: The validated ``output_type`` object, if one was asked for.
        total_cost_usd: Always None: local models cost nothing per token.
    """

    subtype: str
    duration_ms: int
    duration_api_ms: int
    is_error: bool
    num_turns: int
    session_id: str | None = None
    usage: Usage | None = None
    result: str = ""
    stop_reason: str | None = None
    structured_output: Any = None
    total_cost_usd: float | None = None
    content: list[Block] = field(default_factory=list)
    type: Literal["result"] = "result"
