"""The seed's ``open_agent.types``: options, blocks and messages."""

from __future__ import annotations

from .core.options import AgentOptions
from .core.types import (
    AssistantMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)

__all__ = ["AgentOptions", "AssistantMessage", "TextBlock", "ThinkingBlock", "ToolResultBlock",
           "ToolUseBlock", "ToolUseError", "Usage"]
