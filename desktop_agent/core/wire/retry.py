"""Backoff policy for requests that failed before any content arrived.

Only connection errors, 429 and 5xx are retried, and only before the first
piece of a reply reached the caller: a retry after that would duplicate text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter, honouring ``Retry-After``.

    Attributes:
        max_retries: Retries after the first attempt (0 disables retrying).
        initial_delay: Upper bound of the first wait, in seconds.
        max_delay: Cap on any single wait, including ``Retry-After``.
        multiplier: Growth of the bound per attempt.
        jitter: Randomise waits (disable for deterministic tests).
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 20.0
    multiplier: float = 2.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.initial_delay < 0 or self.max_delay < 0:
            raise ValueError("retry settings must not be negative")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        bound = min(self.initial_delay * self.multiplier ** (attempt - 1), self.max_delay)
        return random.uniform(bound / 2, bound) if self.jitter else bound


def is_retryable_status(status: int | None) -> bool:
    """429 and 5xx are worth another try; other statuses are final."""
    return status is not None and (status == 429 or 500 <= status < 600)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds form only)."""
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return None
