"""What the context reads of an agent's settings: the window, compaction, result budgets.

Compaction also sends a summary request of its own, so the context's settings
include the wire's. ``AgentOptions`` has them all by its fields (see
:mod:`~desktop_agent.core.wire.wire_settings` for why each wing declares its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from desktop_agent.core.wire.wire_settings import WireSettings

CompactionMode = Literal["summarise", "drop_oldest", "off"]
"""``AgentOptions.compaction``: what to do when a request nears the context window."""
COMPACTION_MODES = ("summarise", "drop_oldest", "off")


class OfferedTool(Protocol):
    """A tool as the context sees it: a schema that costs prompt tokens."""

    def to_openai_format(self) -> dict[str, Any]:
        """The tool as an entry of the Chat Completions ``tools`` list."""
        ...


class ContextSettings(WireSettings, Protocol):
    """The settings each request is fitted to the model's context window with.

    Each member is the ``AgentOptions`` field of the same name, documented there.
    """

    @property
    def context_length(self) -> int | None: ...

    @property
    def compaction(self) -> CompactionMode: ...

    @property
    def compaction_threshold(self) -> float: ...

    @property
    def tool_result_budget(self) -> int | None: ...

    @property
    def tools(self) -> Sequence[OfferedTool]: ...
