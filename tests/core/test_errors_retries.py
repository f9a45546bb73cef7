"""Failures: retries before content, typed errors, redaction, stream_options fallback."""

import socket

import pytest

from desktop_agent import (
    AuthenticationError,
    Client,
    ContextTooLongError,
    ModelNotFoundError,
    RateLimitError,
    RetryPolicy,
    ServerConnectionError,
    ServerError,
    TextBlock,
)
from desktop_agent.core.errors import redact
from desktop_agent.core.wire import transport
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


async def run(options, prompt="hi"):
    async with Client(options) as client:
        await client.query(prompt)
        items = [i async for i in client.receive_messages()]
        return items, client


def text_of(items):
    return "".join(i.text for i in items if isinstance(i, TextBlock))


async def test_5xx_and_429_are_retried_before_content(server, make_options):
    server.enqueue(script.error(500, "boom"),
                   script.error(429, "slow down", headers={"Retry-After": "0"}),
                   script.text("finally"))
    items, _ = await run(make_options())
    assert text_of(items) == "finally"
    assert len(server.requests) == 3


async def test_retries_give_up_with_a_typed_error(server, make_options):
    for _ in range(3):
        server.enqueue(script.error(503, "overloaded"))
    with pytest.raises(ServerError) as info:
        await run(make_options())
    assert info.value.status == 503 and "overloaded" in info.value.body
    assert len(server.requests) == 3  # first try + 2 retries (FAST_RETRY)


async def test_rate_limit_error_after_retries(server, make_options):
    for _ in range(3):
        server.enqueue(script.error(429, "busy"))
    with pytest.raises(RateLimitError):
        await run(make_options())


async def test_never_retried_after_content(server, make_options):
    server.enqueue(script.dropped("half an ans"))
    with pytest.raises(ServerConnectionError, match="dropped"):
        async with Client(make_options()) as client:
            await client.query("hi")
            try:
                async for _ in client.receive_messages():
                    pass
            finally:
                history = client.history
    assert len(server.requests) == 1
    assert history[-1] == {"role": "assistant", "content": "half an ans"}


@pytest.mark.parametrize("status, message, error_type", [
    (401, "Invalid API key", AuthenticationError),
    (403, "forbidden", AuthenticationError),
    (404, "model 'x' not found", ModelNotFoundError),
    (400, "the request exceeds the available context size", ContextTooLongError),
    (400, "This model's maximum context length is 4096 tokens", ContextTooLongError),
    (400, "bad field", ServerError),
])
async def test_statuses_map_to_core_errors(server, make_options, status, message, error_type):
    server.enqueue(script.error(status, message))
    with pytest.raises(error_type) as info:
        await run(make_options())
    assert info.value.status == status
    assert len(server.requests) == 1


async def test_connection_refused_is_a_connection_error(make_options):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = make_options(base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ServerConnectionError, match="is the server running"):
        await run(options)


async def test_api_key_never_in_error_messages(server, make_options):
    key = "sk-test-planted-key-4242"
    server.enqueue(script.error(500, f"upstream rejected Bearer {key} and api_key={key}"))
    options = make_options(api_key=key, retry=RetryPolicy(max_retries=0))
    with pytest.raises(ServerError) as info:
        await run(options)
    assert key not in str(info.value) and key not in info.value.body
    assert server.request_headers[0]["authorization"] == f"Bearer {key}"


def test_redact_blanks_known_and_shaped_secrets():
    text = redact("key sk-abcdefghijkl and Bearer xyz123456 and custom-value-42",
                  ("custom-value-42",))
    assert "sk-abcdefghijkl" not in text and "xyz123456" not in text
    assert "custom-value-42" not in text


async def test_servers_rejecting_stream_options_still_work(server, make_options):
    transport._NO_STREAM_OPTIONS.discard(server.base_url)
    server.reject_stream_options = True
    server.enqueue(script.text("first"), script.text("second"))
    async with Client(make_options()) as client:
        await client.query("hi")
        assert text_of([i async for i in client.receive_messages()]) == "first"
        await client.query("again")
        assert text_of([i async for i in client.receive_messages()]) == "second"
    # one rejected request, then every request goes without the option
    assert ["stream_options" in r for r in server.requests] == [True, False, False]
    transport._NO_STREAM_OPTIONS.discard(server.base_url)


async def test_mid_stream_error_event_is_a_server_error(server, make_options):
    from desktop_agent.testing.script import Chunk, ChunkFactory, Script
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "start"}),
                           Chunk({"error": {"message": "model crashed"}})]))
    with pytest.raises(ServerError, match="model crashed"):
        async with Client(make_options()) as client:
            await client.query("hi")
            try:
                async for _ in client.receive_messages():
                    pass
            finally:
                history = client.history
    # the text the person already saw stays in the conversation
    assert history[-1] == {"role": "assistant", "content": "start"}


async def test_litellm_invalid_model_name_is_model_not_found(server, make_options):
    # LiteLLM proxy's wording for a model it does not route
    server.enqueue(script.error(
        400, "litellm.BadRequestError: Invalid model name passed in model=nope. "
             "Call `/v1/models` to view available models for your key."))
    with pytest.raises(ModelNotFoundError, match="Invalid model name"):
        await run(make_options())


def test_retry_policy_backoff():
    policy = RetryPolicy(initial_delay=1, multiplier=2, max_delay=5, jitter=False)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1, 2, 4, 5]
    assert policy.delay(1, retry_after=3) == 3
    assert policy.delay(1, retry_after=60) == 5
    jittered = RetryPolicy(initial_delay=1)
    assert all(0.5 <= jittered.delay(1) <= 1 for _ in range(20))


async def test_drop_before_any_content_is_retried(server, make_options):
    from desktop_agent.testing.script import Drop, Script
    server.enqueue(Script([Drop()]), script.text("second try"))
    items, _ = await run(make_options())
    assert text_of(items) == "second try"
    assert len(server.requests) == 2


async def test_a_connection_closed_without_an_answer_is_sent_again_once(server, make_options):
    # llama.cpp closes kept-alive connections after 5 idle seconds; a request that
    # goes out on one just then gets no response at all. Even with retries off
    # it is sent once more, and the person never sees the hiccup.
    from desktop_agent.testing.script import Hangup, Script

    server.enqueue(script.text("First."), Script([Hangup()]), script.text("Second."))
    async with Client(make_options(retry=RetryPolicy(max_retries=0))) as client:
        await client.query("one")
        first = [b async for b in client.receive_messages()]
        await client.query("two")
        second = [b async for b in client.receive_messages()]
    assert (text_of(first), text_of(second)) == ("First.", "Second.")
    assert len(server.requests) == 3


async def test_a_server_that_always_hangs_up_is_reported_after_one_more_try(
        server, make_options):
    from desktop_agent.testing.script import Hangup, Script

    server.enqueue(Script([Hangup()]), Script([Hangup()]), script.text("never"))
    with pytest.raises(ServerConnectionError):
        await run(make_options(retry=RetryPolicy(max_retries=0)))
    assert len(server.requests) == 2
