"""The seed's ``open_agent.context``: count tokens and trim history by hand."""

from __future__ import annotations

from desktop_agent.core.context.tokens import count_text_tokens, estimate_tokens, truncate_messages

__all__ = ["count_text_tokens", "estimate_tokens", "truncate_messages"]
