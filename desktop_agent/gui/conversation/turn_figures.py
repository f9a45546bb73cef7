"""The figures a conversation's status line shows (no Qt here).

Kept apart from the controller so the status line can name the type without
pulling in the controller's turn machinery.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class TurnFigures:
    """What the status line shows for a conversation.

    Attributes:
        model: The model id in use ('' when none is chosen).
        tokens_per_second: Speed of the last reply.
        time_to_first_token: Seconds until the last reply's first token.
        context_used: Tokens the conversation takes (server figure or estimate).
        context_length: The model's context window, when known.
    """

    model: str = ""
    tokens_per_second: float | None = None
    time_to_first_token: float | None = None
    context_used: int | None = None
    context_length: int | None = None
