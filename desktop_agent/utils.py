"""The seed's ``open_agent.utils``: request helpers and the chunk aggregator."""

from __future__ import annotations

from .core.seed_utils import ToolCallAggregator, format_messages, format_tools

__all__ = ["ToolCallAggregator", "format_messages", "format_tools"]
