"""``query()``: one prompt, one turn, streamed as messages or awaited for its result.

``async for message in query(...)`` streams the turn as the seed did (one
:class:`AssistantMessage` per block, as it arrives), then, as claude-agent-sdk
does, one :class:`ResultMessage` (turns, duration, usage, stop reason,
structured output; its ``content`` is empty, so seed loops over
``message.content`` read nothing from it). ``await query(...)`` runs it to
the end and returns the result: the validated object when an ``output_type``
is given, otherwise the reply's text. After iterating, :attr:`QueryRun.output`
and :attr:`QueryRun.result` hold the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Generator
from typing import Any

from desktop_agent.core.client import Client
from desktop_agent.core.options import AgentOptions
from desktop_agent.core.types import AssistantMessage, ResultMessage, TextBlock, Usage


class QueryRun:
    """One running ``query()``: an async iterator of messages, and awaitable.

    Attributes:
        output: After the turn: the validated object (with ``output_type``)
            or the reply's text.
        usage: The turn's figures, once it ended.
        result: How it ended (the :class:`ResultMessage` yielded last).
    """

    def __init__(self, prompt: str, options: AgentOptions) -> None:
        self.output: Any = None
        self.usage: Usage | None = None
        self.result: ResultMessage | None = None
        self._prompt = prompt
        self._options = options
        self._text: list[str] = []
        self._stream = self._messages()

    async def _messages(self) -> AsyncGenerator[AssistantMessage | ResultMessage, None]:
        async with Client(self._options) as client:
            await client.query(self._prompt)
            async for item in client.receive_messages():
                if isinstance(item, Usage):
                    self.usage = item
                    continue
                if isinstance(item, TextBlock):
                    self._text.append(item.text)
                yield AssistantMessage(content=[item], model=self._options.model)
            self.output = (client.last_output if self._options.output_type is not None
                           else client.final_text)
            self.result = client.last_result
        if self.result is not None:
            yield self.result

    def __aiter__(self) -> QueryRun:
        return self

    async def __anext__(self) -> AssistantMessage | ResultMessage:
        return await self._stream.__anext__()

    async def aclose(self) -> None:
        """Stop early and release the connection."""
        await self._stream.aclose()

    async def _result(self) -> Any:
        async for _ in self:
            pass
        return self.output

    def __await__(self) -> Generator[Any, None, Any]:
        return self._result().__await__()


def query(prompt: str, options: AgentOptions, *, output_type: Any = None) -> QueryRun:
    """Run one turn: iterate it for messages as they stream, or await it for the result.

    Args:
        prompt: The user's message.
        options: The agent's settings.
        output_type: A pydantic model (or any type pydantic validates) the
            final answer must match; overrides ``options.output_type``.
    """
    if output_type is not None:
        options = dataclasses.replace(options, output_type=output_type)
    return QueryRun(prompt, options)
