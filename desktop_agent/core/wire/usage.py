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

    def result(self) -> Usage:
        """The turn's Usage; tokens/s prefers the server's own timing."""
        if self.server_tps:
            tps: float | None = sum(self.server_tps) / len(self.server_tps)
        elif self.generation_time > 0:
            produced = self.completion_tokens if self.completion_tokens else self.chunks
            tps = max(produced - 1, 1) / self.generation_time if produced else None
        else:
            tps = None
        return Usage(self.prompt_tokens, self.completion_tokens, self.first_token, tps)
