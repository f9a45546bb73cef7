"""One retry policy for everything the app sends again: model requests, callbacks, writes.

A policy says how many times to try again and how long to wait before each
try; a :class:`RetryBudget` counts one operation's retries against it. *What*
is worth another try stays with each caller: a model request retries
connection errors, 429 and 5xx, and only before the first piece of a reply
reached the caller (a retry after that would duplicate text); a callback
retries any failed delivery; the event writer retries a failed transaction;
an MCP request retries once on a new session when an HTTP server forgot its
old one. One type for all of them means one place where a wait is computed,
capped and randomised, and one unit test that holds it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with optional jitter, honouring ``Retry-After``.

    The wait before retry *n* is bounded by ``initial_delay * multiplier**(n-1)``,
    capped at ``max_delay``; with ``jitter`` it is drawn from the upper half of
    that bound ("equal jitter": never less than half, so a busy server still
    gets a real pause, yet callers that failed together spread out).

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

    @property
    def attempts(self) -> int:
        """Tries in all, the first included (what a log line saying "gave up" counts)."""
        return self.max_retries + 1

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based).

        A server's ``retry_after`` wins over the computed wait (it knows when
        it will be free), but is capped like any wait, so a server asking for
        an hour cannot hang a turn for an hour.
        """
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        bound = min(self.initial_delay * self.multiplier ** (attempt - 1), self.max_delay)
        return random.uniform(bound / 2, bound) if self.jitter else bound

    def begin(self) -> RetryBudget:
        """A fresh count of retries for one operation under this policy."""
        return RetryBudget(self)


class RetryBudget:
    """One operation's retries so far under a :class:`RetryPolicy`.

    Loops differ in what they retry and how they wait (a coroutine sleeps on
    the loop, the event writer's thread sleeps itself), so the budget only
    answers "may I try again, and after how long?"; the loop does the rest.

    Attributes:
        policy: The policy counted against.
        retries: Retries granted so far.
    """

    __slots__ = ("policy", "retries")

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.retries = 0

    def next_delay(self, retry_after: float | None = None) -> float | None:
        """Seconds to wait before the next try, or None when the budget is spent.

        Each call that returns a number uses up one retry.
        """
        if self.retries >= self.policy.max_retries:
            return None
        self.retries += 1
        return self.policy.delay(self.retries, retry_after)


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
