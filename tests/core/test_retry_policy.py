"""The one retry policy every retrying loop uses: delays, jitter, Retry-After, giving up."""

from __future__ import annotations

import time

import pytest

from desktop_agent import Client, RetryPolicy, TextBlock
from desktop_agent.core.wire.retry import is_retryable_status, parse_retry_after
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


def test_delays_grow_by_the_multiplier_and_stop_at_the_cap():
    policy = RetryPolicy(max_retries=6, initial_delay=0.5, multiplier=2, max_delay=4,
                         jitter=False)
    assert [policy.delay(n) for n in range(1, 7)] == [0.5, 1, 2, 4, 4, 4]
    tripling = RetryPolicy(initial_delay=0.1, multiplier=3, max_delay=100, jitter=False)
    assert [round(tripling.delay(n), 6) for n in (1, 2, 3)] == [0.1, 0.3, 0.9]


def test_jitter_stays_within_the_upper_half_of_each_bound_and_varies():
    policy = RetryPolicy(initial_delay=1, multiplier=2, max_delay=6)
    for attempt, bound in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 6.0), (9, 6.0)):
        waits = [policy.delay(attempt) for _ in range(200)]
        assert all(bound / 2 <= w <= bound for w in waits), (attempt, min(waits), max(waits))
        assert len(set(waits)) > 1  # really randomised: callers that failed together spread out


def test_retry_after_wins_over_the_computed_wait_but_is_capped():
    policy = RetryPolicy(initial_delay=1, max_delay=5)  # jitter on: Retry-After is exact anyway
    assert policy.delay(1, retry_after=3) == 3
    assert policy.delay(3, retry_after=0) == 0
    assert policy.delay(1, retry_after=3600) == 5
    # a negative value is no instruction: the computed wait applies
    assert 0.5 <= policy.delay(1, retry_after=-1) <= 1


def test_retry_after_header_values():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 0.25 ") == 0.25
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None  # date form: not read
    assert parse_retry_after("") is None and parse_retry_after(None) is None


def test_a_budget_grants_max_retries_then_gives_up():
    policy = RetryPolicy(max_retries=3, initial_delay=0.1, max_delay=1, jitter=False)
    assert policy.attempts == 4
    budget = policy.begin()
    waits = [budget.next_delay() for _ in range(5)]
    assert waits[:3] == [0.1, 0.2, 0.4]
    assert waits[3:] == [None, None]
    assert budget.retries == 3
    # each operation starts afresh
    assert policy.begin().next_delay(retry_after=0.7) == 0.7


def test_no_retries_means_the_first_failure_is_final():
    budget = RetryPolicy(max_retries=0).begin()
    assert budget.next_delay() is None
    assert budget.next_delay(retry_after=1) is None


def test_settings_are_checked():
    for bad in ({"max_retries": -1}, {"initial_delay": -0.1}, {"max_delay": -2}):
        with pytest.raises(ValueError, match="must not be negative"):
            RetryPolicy(**bad)


def test_which_statuses_are_worth_another_try():
    assert [s for s in (200, 400, 401, 404, 408, 429, 500, 502, 503, 599, 600)
            if is_retryable_status(s)] == [429, 500, 502, 503, 599]
    assert not is_retryable_status(None)


async def test_a_model_server_retry_after_is_waited_for(server, make_options):
    """A 429 asking for 0.4 s gets at least that, though the policy alone would wait 10 ms."""
    server.enqueue(script.error(429, "slow down", headers={"Retry-After": "0.4"}),
                   script.text("after the pause"))
    policy = RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=5, jitter=False)
    started = time.monotonic()
    async with Client(make_options(retry=policy)) as client:
        await client.query("hi")
        items = [i async for i in client.receive_messages()]
    elapsed = time.monotonic() - started
    assert "".join(i.text for i in items if isinstance(i, TextBlock)) == "after the pause"
    assert len(server.requests) == 2
    assert elapsed >= 0.4
