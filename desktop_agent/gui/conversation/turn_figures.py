"""The figures a conversation's status line shows (no Qt here).

Kept apart from the controller so the status line can name the type without
pulling in the controller's turn machinery.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

#: Seconds between two updates of the live speed (the status line, not every token).
LIVE_RATE_INTERVAL = 0.25


@dataclass(slots=True)
class TurnFigures:
    """What the status line shows for a conversation.

    Attributes:
        model: The model id in use ('' when none is chosen).
        tokens_per_second: Speed of the reply streaming now (``live``), else of the last one.
        time_to_first_token: Seconds until the last reply's first token.
        context_used: Tokens the conversation takes (server figure or estimate).
        context_length: The window the server applies to the model, when known.
        context_source: Where ``context_length`` came from (shown in its tooltip).
    """

    model: str = ""
    tokens_per_second: float | None = None
    time_to_first_token: float | None = None
    context_used: int | None = None
    context_length: int | None = None
    live: bool = False
    context_source: str | None = None


class LiveRate:
    """The speed of a reply while it streams: pieces per second since the first one.

    Why pieces: OpenAI-compatible servers stream about one token per chunk, so
    the count of text and reasoning pieces is the token count a person can
    watch grow; the server's own figure replaces it when the reply ends.
    """

    def __init__(self) -> None:
        self._first: float | None = None
        self._pieces = 0
        self._shown = 0.0

    def reset(self) -> None:
        """A new reply starts."""
        self._first, self._pieces, self._shown = None, 0, 0.0

    def piece(self, now: float | None = None) -> float | None:
        """Count one piece; the rate when it is time to show it again, else None."""
        now = time.monotonic() if now is None else now
        self._pieces += 1
        if self._first is None:
            self._first = self._shown = now
            return None
        # Not before a quarter second of pieces: a burst (a server that sends a short
        # reply at once) would read as thousands of tokens a second.
        if now - self._shown < LIVE_RATE_INTERVAL:
            return None
        self._shown = now
        return (self._pieces - 1) / (now - self._first)
