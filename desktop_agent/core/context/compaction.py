"""Compaction: every request fits the model's context window.

Small local models have 2k–32k contexts, and an agent run fills them within
a few tool rounds. Before each request the :class:`ContextKeeper` estimates
the prompt (messages, tool schemas and a reserve for the reply); past
``AgentOptions.compaction_threshold`` of ``context_length`` it replaces the
oldest messages in the *request* by a summary written by the same model (or
drops them, when summarising fails or is not wanted). ``Client.history`` and
the store keep everything: the request is a view of the history.

The view is kept stable between compactions (the system prompt, the summary,
then the history from a fixed point on), so the server's prompt cache keeps
matching; a compaction brings the prompt down to about half the window, so
the next one comes only after many turns. The cut never separates a tool call
from its results, and when it falls inside one long agent turn the user's
request that started the turn stays in.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal

from desktop_agent.core import errors
from desktop_agent.core.context.context_settings import ContextSettings
from desktop_agent.core.context.prompt_cut import WholePrompt, cut_to
from desktop_agent.core.context.prompt_size import TokenCounter, tools_tokens
from desktop_agent.core.context.result_budget import (
    budget_tool_messages,
    head_within,
    result_budget,
)
from desktop_agent.core.context.summary_request import summarise
from desktop_agent.core.servers import applied_context
from desktop_agent.core.servers.context_window import (
    SOURCE_CUT,
    SOURCE_REFUSED,
    ContextWindow,
)
from desktop_agent.core.servers.window_fix import larger_window_fix
from desktop_agent.core.turn_control import TurnControl
from desktop_agent.core.types import Block, CompactionBlock, PromptCutBlock
from desktop_agent.core.wire.reply_reader import read_reply
from desktop_agent.core.wire.stream import StreamAggregator
from desktop_agent.core.wire.usage import UsageTotals

log = logging.getLogger("desktop_agent.compaction")

#: A compaction brings the prompt (with the reply's reserve) down to this share.
TARGET_SHARE = 0.5
SUMMARY_HEADER = "Summary of the earlier part of this conversation (compacted to fit the context):"
DROPPED_NOTE = ("{n} earlier messages of this conversation were left out to fit the context; "
                "ask the user if something from them is needed.")
_DEFAULT_RESERVE = 1024
_N_CTX = re.compile(r'"?n_ctx"?\s*[:=]\s*(\d+)|context size[^0-9]{0,20}(\d+)', re.IGNORECASE)


class ContextKeeper:
    """Keeps one Client's requests within the context window.

    The window is the smallest of what the options say, what the server was
    last heard to apply to the model (:func:`.applied_context.known`: the
    session asks before each turn, a script may call
    :func:`~desktop_agent.core.servers.applied_context.applied_context`) and
    what the server showed (a prompt it cut or refused).

    Attributes:
        covered: History messages the request replaces (by the summary or a note).
        covered_tokens: Their estimated tokens (counted as they were covered, or
            as restored): what the history before ``covered`` weighs without
            holding it.
        summary: The current summary, None when nothing was summarised.
        last: The last compaction, for front ends that ask after the turn.
        last_ms: How long the last compaction took, in milliseconds.
        before_compact: Awaited with (history messages, estimated prompt tokens)
            just before a compaction (the client runs its PreCompact hooks there).
    """

    def __init__(self) -> None:
        self.before_compact: Callable[[int, int], Awaitable[None]] | None = None
        self.covered = 0
        self.covered_tokens = 0
        self.summary: str | None = None
        self.last: CompactionBlock | None = None
        self.last_ms = 0.0
        self._fingerprint = ""
        self._anchor: int | None = None  # a user message kept although before ``covered``
        self._dropped = 0  # of ``covered``, how many were dropped without a summary
        self._learned_context: int | None = None  # n_ctx the server told us
        self._shrink = 1.0
        self._force = False
        self._last_size = 0
        self._sent = 0  # our estimate of the last request's prompt
        self._ratio = 1.0  # the server's count over ours (its tokenizer and template)
        self._whole: WholePrompt | None = None  # the last prompt read whole, of this view
        self._counter = TokenCounter()
        self._system: dict[str, Any] | None = None  # the request's own system message

    # -- the two entry points --------------------------------------------------------
    async def fit(self, request: dict[str, Any], options: ContextSettings,
                  http: Any) -> AsyncIterator[CompactionBlock]:
        """Replace ``request["messages"]`` by a view that fits; yield a block if it compacted.

        ``request`` is the request as built for the whole history: a leading
        system message (the system prompt, maybe an output instruction), then
        one message per history entry.
        """
        messages = request["messages"]
        system = messages[0] if messages and messages[0].get("role") == "system" else None
        history = messages[1:] if system is not None else list(messages)
        self._system = system
        self._check_state(history)
        context = self._context(options)
        budget = result_budget(context, options.tool_result_budget)
        view = self._view(history, options, budget)
        request["messages"] = view
        # the schemas the request carries: none when they went into the system prompt
        # (constrained calls), which the messages count already
        fixed = tools_tokens(request.get("tools") or ())
        self._sent = self._counter.messages(view) + fixed
        if context is None or options.compaction == "off":
            self._last_size = self._sent
            return
        reserve = _reserve(options, context)
        before = self._counter.messages(view) + fixed + reserve
        if before <= options.compaction_threshold * context and not self._force:
            return
        self._force = False
        if self.before_compact is not None:
            await self.before_compact(len(history), before)
        started = time.perf_counter()
        block = await self._compact(history, options, http, context, reserve, fixed, budget)
        view = self._view(history, options, budget)
        # a single huge turn may still not fit: cut its tool results harder
        while (self._counter.messages(view) + fixed + reserve > context and budget > 64):
            budget //= 2
            view = self._view(history, options, budget)
        request["messages"] = view
        self._sent = self._counter.messages(view) + fixed
        self.last_ms = (time.perf_counter() - started) * 1000
        self._whole = None  # the view's start moved: growth compares with nothing before
        if block is not None:
            block.tokens_before = before
            block.tokens_after = self._counter.messages(view) + fixed + reserve
            self.last = block
            log.info("compacted %d messages (%s): %d -> %d tokens in %.0f ms",
                     block.messages, block.mode, block.tokens_before, block.tokens_after,
                     self.last_ms)
            yield block

    async def compact_now(self, request: dict[str, Any], options: ContextSettings,
                          http: Any) -> CompactionBlock | None:
        """Compact the history now, as far as it goes (``/compact``, asked by a person).

        Unlike :meth:`fit` it does not wait for the threshold, and it keeps only
        the last exchange (the user's request that started it stays in): a person
        who asks for a compaction wants the room now, not half of it.

        Returns:
            The compaction, or None when nothing could be compacted (compaction
            is off, the window is unknown, or there is one exchange only).
        """
        messages = request["messages"]
        system = messages[0] if messages and messages[0].get("role") == "system" else None
        history = messages[1:] if system is not None else list(messages)
        self._system = system
        self._check_state(history)
        context = self._context(options)
        if context is None or options.compaction == "off" or len(history) - self.covered < 2:
            return None
        budget = result_budget(context, options.tool_result_budget)
        fixed = tools_tokens(request.get("tools") or ())
        reserve = _reserve(options, context)
        before = self._counter.messages(self._view(history, options, budget)) + fixed + reserve
        if self.before_compact is not None:
            await self.before_compact(len(history), before)
        started = time.perf_counter()
        block = await self._compact(history, options, http, context, reserve, fixed, budget,
                                    share=0.0)
        self.last_ms = (time.perf_counter() - started) * 1000
        self._whole = None
        if block is None:
            return None
        block.tokens_before = before
        block.tokens_after = (self._counter.messages(self._view(history, options, budget))
                              + fixed + reserve)
        self.last = block
        log.info("compacted %d messages on request (%s): %d -> %d tokens in %.0f ms",
                 block.messages, block.mode, block.tokens_before, block.tokens_after,
                 self.last_ms)
        return block

    def restore(self, block: CompactionBlock, history: Sequence[dict[str, Any]]) -> bool:
        """Continue from a compaction made earlier (by another Client) over ``history``.

        A conversation opened again gets a new Client; without this its first
        request past the threshold would summarise the same messages again
        (a slow extra request, and a different prompt prefix). Ignored, and
        False, when ``history`` is shorter than what the block covers.

        ``history`` may stand in for the covered messages with anything (a
        front end that read only what follows them): they are never sent, only
        compared with the next requests' history, and their tokens come from
        the block's ``covered_tokens`` when it has them.
        """
        if block.messages <= 0 or block.messages > len(history) or (
                block.anchor is not None and not 0 <= block.anchor < block.messages):
            return False
        self.covered = block.messages
        self.covered_tokens = block.covered_tokens or self._counter.messages(
            history[:block.messages])
        self.summary = block.summary
        self._dropped = min(block.dropped, block.messages)
        self._anchor = block.anchor
        self._fingerprint = _fingerprint(history[:block.messages])
        self.last = block
        return True

    def observe(self, usage: dict[str, Any] | None,
                options: ContextSettings | None = None) -> PromptCutBlock | None:
        """Learn from the server's prompt count; a block when it shows the prompt was cut.

        The app counts with one shipped tokenizer and cannot see the chat
        template (a tool-calling template adds its own instructions); the
        server's ``usage.prompt_tokens`` for the request just sent says how
        many tokens it really took, and later estimates are scaled by that.
        A count well under what was sent is a cut (:mod:`.prompt_cut`): the
        window is learned from it, remembered for the server and model, and
        the next request is compacted to fit.
        """
        prompt = (usage or {}).get("prompt_tokens")
        if not (isinstance(prompt, int) and prompt > 0 and self._sent > 0):
            return None
        window = _known_window(options)
        kept = cut_to(self._sent, prompt, self._whole, window.applied if window else None)
        if kept is None:
            self._whole = WholePrompt(self._sent, prompt)
            self._ratio = min(3.0, max(1.0, prompt / self._sent))
            return None
        sent = int(self._sent * (self._whole.share if self._whole is not None else 1.0))
        self._whole = None
        self._learned_context = min(kept, self._learned_context or kept)
        self._force = True
        if options is not None:
            applied_context.remember(options.base_url, options.model, kept, SOURCE_CUT)
        log.warning("the server read %d prompt tokens of about %d sent: it cut the prompt",
                    kept, sent)
        return PromptCutBlock(kept=kept, sent=sent, window=kept)

    def overflowed(self, exc: errors.ContextTooLongError, options: ContextSettings,
                   history: Sequence[dict[str, Any]]) -> bool:
        """The server said the prompt is too long: compact harder on the next try.

        Returns:
            True when a retry may help (compaction is on and there is more
            than the prompt alone to compact).
        """
        window = exc.window
        if window is None:
            match = _N_CTX.search(exc.body or str(exc))
            window = int(match.group(1) or match.group(2)) if match else None
        if window is not None:
            applied_context.remember(options.base_url, options.model, window, SOURCE_REFUSED)
        if options.compaction == "off" or len(history) - self.covered < 2:
            return False
        if window is not None:
            self._learned_context = window
        elif options.context_length is None and self._learned_context is None and \
                self._last_size:
            self._learned_context = self._last_size  # at most what was just refused
        self._shrink = max(0.5, self._shrink * 0.8)  # our count was too low for this model
        self._force = True
        return True

    async def read_reply(self, http: Any, options: ContextSettings, request: dict[str, Any],
                         aggregator: StreamAggregator, usage: UsageTotals, control: TurnControl,
                         metadata: dict[str, Any],
                         history: Sequence[dict[str, Any]]) -> AsyncIterator[Block]:
        """:func:`~desktop_agent.core.wire.reply_reader.read_reply`, each request fitted to context.

        ``request`` is the request as built for the whole history (see
        :meth:`fit`); it is not changed. A server that still refuses the prompt
        as too long gets one harder compaction and one retry; its usage figures
        calibrate the estimate.
        """
        retried = False
        while True:
            built = dict(request)  # fit() puts the view of the history in its messages
            async for compaction in self.fit(built, options, http):
                yield compaction
            try:
                async for block in read_reply(http, options, built, aggregator, usage, control,
                                              metadata):
                    yield block
            except errors.ContextTooLongError as exc:
                if retried or aggregator.content_chunks or \
                        not self.overflowed(exc, options, history):
                    known = _known_window(options)
                    if known is None or known.server is None:  # which server: its setting
                        await applied_context.asked_window(options, _sdk_client(http))
                    self._advise(exc, options, history)
                    raise
                retried = True
                continue
            cut = self.observe(aggregator.usage, options)
            if cut is not None:
                metadata["prompt_cut"] = {"kept": cut.kept, "sent": cut.sent}
                yield cut
            return

    def _advise(self, exc: errors.ContextTooLongError, options: ContextSettings,
                history: Sequence[dict[str, Any]]) -> None:
        """Say in the error what gets the conversation going again."""
        needed = exc.prompt_tokens or int(self._sent * self._ratio) or self._last_size
        window = _known_window(options) or ContextWindow()
        if exc.window is not None:
            window = window.learned(exc.window, SOURCE_REFUSED)
        fix = larger_window_fix(window, options.model, needed + _reserve(
            options, exc.window or needed)).text
        then = fix[:1].lower() + fix[1:]
        if options.compaction == "off":
            exc.advise("Turn compaction on, so older messages are summarised to fit, or "
                       + then)
        elif len(history) - self.covered < 2:
            exc.advise("The newest message alone does not fit: shorten it, or " + then)
        else:
            exc.advise("Even compacted, the conversation does not fit. " + fix)

    # -- the view --------------------------------------------------------------------
    def _view(self, history: Sequence[dict[str, Any]], options: ContextSettings,
              budget: int) -> list[dict[str, Any]]:
        system = self._system
        content = system.get("content") if system is not None else None
        if system is not None and not isinstance(content, str):  # content parts: keep as is
            system_parts: list[str] = []
            messages: list[dict[str, Any]] = [system]
        else:
            system_parts = [content] if content else []
            messages = []
        if self.summary:
            system_parts.append(f"{SUMMARY_HEADER}\n{self.summary}")
        if self._dropped:
            system_parts.append(DROPPED_NOTE.format(n=self._dropped))
        if system_parts:
            messages.append({**(system or {"role": "system"}),
                             "content": "\n\n".join(system_parts)})
        if self._anchor is not None:
            messages.append(history[self._anchor])
        messages.extend(budget_tool_messages(history[self.covered:], budget))
        return messages

    def _check_state(self, history: Sequence[dict[str, Any]]) -> None:
        """Forget the compaction when the history no longer starts as it did (edit, branch)."""
        if self.covered and (len(history) < self.covered
                             or _fingerprint(history[:self.covered]) != self._fingerprint):
            self.covered, self.summary, self._anchor, self._dropped = 0, None, None, 0
            self.covered_tokens = 0
            self._whole = None

    def _context(self, options: ContextSettings) -> int | None:
        window = _known_window(options)
        applied = window.applied if window is not None else None
        figures = [f for f in (options.context_length, applied, self._learned_context) if f]
        if not figures:
            return None
        return max(256, int(min(figures) * self._shrink / self._ratio))

    # -- compacting ------------------------------------------------------------------
    async def _compact(self, history: Sequence[dict[str, Any]], options: ContextSettings,
                       http: Any, context: int, reserve: int, fixed: int,
                       budget: int, share: float = TARGET_SHARE) -> CompactionBlock | None:
        summary_tokens = min(512, max(64, context // 16))
        system = self._counter.messages([self._system]) if self._system is not None else 0
        target = int(context * share) - reserve - fixed - system - summary_tokens
        split = self._split(history, max(0, target), budget)
        if split is None:
            return None
        old = self.covered
        removed = list(history[old:split])
        anchor = _turn_start(history, split)
        mode: Literal["summarise", "drop_oldest"] = "drop_oldest"
        summary = None
        if options.compaction == "summarise":
            try:
                summary = await summarise(http, options, removed, self.summary,
                                          summary_tokens, context) or None
            except errors.APIError as exc:
                log.info("summary request failed (%s); dropping the oldest messages instead",
                         type(exc).__name__)
            if summary is not None:
                summary = head_within(summary, summary_tokens)
                mode = "summarise"
        if summary is None:
            self._dropped += split - old
            summary = self.summary  # an earlier summary still holds for what it covered
        self.summary = summary
        self.covered_tokens += self._counter.messages(history[old:split])
        self.covered = split
        self._anchor = anchor if anchor is not None and anchor < split else None
        self._fingerprint = _fingerprint(history[:split])
        return CompactionBlock(messages=split, summary=self.summary if mode == "summarise"
                               else None, mode=mode, dropped=self._dropped,
                               anchor=self._anchor, covered_tokens=self.covered_tokens)

    def _split(self, history: Sequence[dict[str, Any]], target: int,
               budget: int) -> int | None:
        """Where the kept part of the history starts: the longest tail within ``target``.

        A tail starts at a user message if it can (every chat template accepts
        that), else at an assistant message (a chain start), never at a tool result.
        """
        tail = budget_tool_messages(history[self.covered:], budget)
        size = 0
        best_user = best_any = None
        last_start = None
        for offset in range(len(tail) - 1, 0, -1):  # at least one message is compacted
            role = tail[offset].get("role")
            size += self._counter.message(tail[offset])
            if role != "tool" and last_start is None:
                last_start = offset
            if size > target:
                break
            if role == "user":
                best_user = offset
            elif role != "tool":
                best_any = offset
        chosen = best_user if best_user is not None else best_any
        if chosen is None:
            chosen = last_start  # even the last exchange is over target: keep only it
        return None if chosen is None else self.covered + chosen


def _turn_start(history: Sequence[dict[str, Any]], split: int) -> int | None:
    """The user message that started the turn ``split`` falls in (None at a user message)."""
    if split < len(history) and history[split].get("role") == "user":
        return None
    for index in range(split - 1, -1, -1):
        if history[index].get("role") == "user":
            return index
    return None


def _known_window(options: ContextSettings | None) -> ContextWindow | None:
    """The window the server was last heard to apply to the options' model (no request)."""
    if options is None:
        return None
    return applied_context.known(options.base_url, options.model)


def _sdk_client(http: Any) -> Any:
    """The server's ``AsyncOpenAI`` behind a Client's connection (None: ask with one's own)."""
    client = getattr(http, "client", None)
    return client() if callable(client) else None


def _reserve(options: ContextSettings, context: int) -> int:
    """Tokens kept free for the reply: max_tokens, but never more than a quarter."""
    return min(options.max_tokens or _DEFAULT_RESERVE, context // 4)


def _fingerprint(messages: Sequence[dict[str, Any]]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for message in messages:
        digest.update(repr((message.get("role"), message.get("content"),
                            message.get("tool_call_id"),
                            [c.get("id") for c in message.get("tool_calls") or ()])).encode())
    return digest.hexdigest()
