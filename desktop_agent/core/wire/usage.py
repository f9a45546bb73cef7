"""Per-turn figures: token counts as the server reports them, and speed.

A turn may make several requests (auto tool rounds); their figures add up
here into the one :class:`~desktop_agent.core.types.Usage` the caller sees.
"""

from __future__ import annotations

from desktop_agent.core.types import Usage
from desktop_agent.core.wire.stream import StreamAggregator


class UsageTotals:
    """Adds up the figures of every request in a turn."""

    def __init__(self) -> None:
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.first_token: float | None = None
        self.generation_time = 0.0
        self.chunks = 0
        self.server_tps: list[float] = []
        self.prompt_tps: float | None = None
        self.prompt_evaluated: int | None = None
        self.prompt_cached: int | None = None

    def add(self, aggregator: StreamAggregator, sent: float, first: float | None,
            end: float) -> None:
        """Count one request: sent at ``sent``, first content at ``first``, done at ``end``."""
        if first is not None and self.first_token is None:
            self.first_token = first - sent
        if first is not None:
            self.generation_time += end - first
        self.chunks += aggregator.content_chunks
        usage = aggregator.usage or {}
        if isinstance(usage.get("prompt_tokens"), int):
            self.prompt_tokens = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            self.completion_tokens = (self.completion_tokens or 0) + usage["completion_tokens"]
        timings = aggregator.timings or {}
        if isinstance(timings.get("predicted_per_second"), int | float):
            self.server_tps.append(float(timings["predicted_per_second"]))
        self._prompt_figures(usage, timings)

    def _prompt_figures(self, usage: dict[str, object], timings: dict[str, object]) -> None:
        """The first request's prompt processing: tokens evaluated, reused, and the speed.

        llama.cpp reports ``prompt_n`` (tokens evaluated), ``cache_n`` (reused from
        the slot's cache) and ``prompt_per_second``; other servers may give
        ``usage.prompt_tokens_details.cached_tokens``.
        """
        if self.prompt_evaluated is not None or self.prompt_cached is not None:
            return  # the turn's first request is the one a person waits for
        evaluated, cached, speed = (timings.get("prompt_n"), timings.get("cache_n"),
                                    timings.get("prompt_per_second"))
        details = usage.get("prompt_tokens_details")
        if not isinstance(cached, int) and isinstance(details, dict):
            cached = details.get("cached_tokens")
        self.prompt_evaluated = evaluated if isinstance(evaluated, int) else None
        self.prompt_cached = cached if isinstance(cached, int) else None
        self.prompt_tps = float(speed) if isinstance(speed, int | float) and speed > 0 else None

    def result(self) -> Usage:
        """The turn's Usage; tokens/s prefers the server's own timing."""
        if self.server_tps:
            tps: float | None = sum(self.server_tps) / len(self.server_tps)
        elif self.generation_time > 0:
            produced = self.completion_tokens if self.completion_tokens else self.chunks
            tps = max(produced - 1, 1) / self.generation_time if produced else None
        else:
            tps = None
        return Usage(self.prompt_tokens, self.completion_tokens, self.first_token, tps,
                     prompt_tokens_evaluated=self.prompt_evaluated,
                     cached_prompt_tokens=self.prompt_cached,
                     prompt_tokens_per_second=self.prompt_tps)
