"""Every place the core bends the openai SDK (or the httpx2 client under it), one test each.

STYLE.md: bend a library only at its extension points; where the core must bend one,
pin the version and keep a test per bend. ``pyproject.toml`` pins openai to the minor
these bends were written against. On an openai (or httpx2) upgrade run this file
first: each test checks that the private thing the core relies on is still there in
the shape the core expects, then that the bend takes effect on a real request to the
scripted server, and its failure names the bend and what to re-read in the SDK.

The bends, by module of ``desktop_agent/core/wire/``:

1. ``model_client``: ``ModelServerClient._prepare_url`` overrides the SDK's
   ``BaseClient._prepare_url`` (each path merged with the base URL once, then kept).
2. ``model_client``: ``ModelServerClient._calculate_retry_timeout`` overrides the SDK's
   wait before a retry (the Client's ``RetryPolicy`` decides); it calls the SDK's
   private ``_parse_retry_after_header``.
3. ``model_client``: ``ModelServerClient._send_request`` overrides the SDK's one send
   per attempt (the response head's time limit, the resend after a hang-up); it sends
   through the SDK's private ``_client``.
4. ``split_transport``: ``SplitClient._init_transport`` overrides httpx2's
   ``AsyncClient._init_transport`` (inherited by openai's ``DefaultAsyncHttpxClient``)
   and builds openai's private ``openai._vendor.httpx_aiohttp`` ``AiohttpTransport``.
5. ``split_transport``: ``SplitClient._init_proxy_transport``, the same for a proxy.

And beside the five overrides: ``response_body`` reads the aiohttp response out of
private attributes (``Response.stream._stream._aiohttp_response``, the direct body
read); ``ModelServerClient.platform_headers`` overrides a public SDK method (no
``X-Stainless-*`` machine description sent); and ``sdk_type_packages`` puts an import
hook in front of ``openai`` and ``httpcore2`` that relies on their package ``__init__``
files being plain imports.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from desktop_agent.core import (
    ConnectionPool,
    RequestTimeoutError,
    RetryPolicy,
    ServerConnectionError,
)
from desktop_agent.core.servers.discovery import list_models
from desktop_agent.core.wire import http_backend, model_client, response_body, split_transport
from desktop_agent.core.wire.model_client import new_openai_client
from desktop_agent.core.wire.transport import ModelHttp, open_stream
from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.script import Hangup, Script

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]
NO_RETRY = RetryPolicy(max_retries=0)


def broken(bend: str, what: str, recheck: str) -> str:
    """The failure message of a bend: which one, what broke, what to re-read."""
    return (f"openai {openai.__version__} / httpx2 {httpx2.__version__}: the bend {bend} "
            f"no longer holds: {what}. Re-check: {recheck}. Then fix the bend (or drop it "
            f"for a public way) before raising the pin in pyproject.toml.")


def parameters(function: Callable[..., Any]) -> list[tuple[str, str]]:
    """A function's parameter names and kinds (defaults may differ: they are the caller's)."""
    return [(p.name, p.kind.name) for p in inspect.signature(function).parameters.values()]


def same_parameters(bend: str, ours: Callable[..., Any], owner: type[Any], name: str,
                    recheck: str) -> None:
    """Our override of ``owner.name`` still takes what the library passes it."""
    theirs = getattr(owner, name, None)
    assert theirs is not None, broken(bend, f"{owner.__qualname__}.{name} is gone", recheck)
    assert parameters(ours) == parameters(theirs), broken(
        bend, f"{owner.__qualname__}.{name} now takes {parameters(theirs)}, the override "
        f"{parameters(ours)}", recheck)


@pytest.fixture(params=["aiohttp", "httpx2"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(http_backend, "prefer_aiohttp", request.param == "aiohttp")
    yield request.param


@pytest.fixture
def on_aiohttp(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's backend: streamed replies on openai's aiohttp transport."""
    monkeypatch.setattr(http_backend, "prefer_aiohttp", True)


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy from the developer's environment (a client reads it when made)."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY",
                 "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


async def stream_text(http: ModelHttp, base_url: str,
                      retry: RetryPolicy = NO_RETRY) -> tuple[str, bool]:
    """One reply through the core's transport: its text, and whether it was read directly."""
    request = {"model": "test-model", "stream": True,
               "messages": [{"role": "user", "content": "hi"}]}
    stream = await open_stream(http, request, base_url=base_url, api_key="", retry=retry)
    try:
        pieces = [choice["delta"].get("content") or ""
                  async for chunk in stream.chunks() for choice in chunk.get("choices", ())]
    finally:
        await stream.close()
    return "".join(pieces), stream.direct


# -- 1. _prepare_url ----------------------------------------------------------------

PREPARE_URL = "1 (model_client.ModelServerClient._prepare_url)"
PREPARE_URL_RECHECK = ("openai/_base_client.py BaseClient._prepare_url and _build_request "
                       "(and lib/azure.py's override): is the URL still merged there, "
                       "from base_url and the path alone?")


async def test_bend_1_prepare_url_is_the_sdks_and_keeps_each_path(
        backend: str, server: ScriptedServer) -> None:
    for base in (openai.AsyncOpenAI, openai.AsyncAzureOpenAI):
        ours = model_client._client_class(base is openai.AsyncAzureOpenAI)._prepare_url
        same_parameters(PREPARE_URL, ours, base, "_prepare_url", PREPARE_URL_RECHECK)

    server.enqueue(script.text("One."), script.text("Two."))
    client = new_openai_client(server.base_url)
    http = ModelHttp(server.base_url, "", 10, client=client)
    try:
        assert (await stream_text(http, server.base_url))[0] == "One."
        assert "/chat/completions" in client._prepared_urls, broken(
            PREPARE_URL, "a request did not ask the override for its URL",
            PREPARE_URL_RECHECK)
        assert (await stream_text(http, server.base_url))[0] == "Two."
    finally:
        await client.close()
    assert server.request_targets == ["/v1/chat/completions"] * 2, broken(
        PREPARE_URL, f"requests went to {server.request_targets}", PREPARE_URL_RECHECK)


# -- 2. _calculate_retry_timeout -------------------------------------------------------

RETRY_WAIT = "2 (model_client.ModelServerClient._calculate_retry_timeout)"
RETRY_WAIT_RECHECK = ("openai/_base_client.py _sleep_for_retry, _calculate_retry_timeout "
                      "and _parse_retry_after_header, and FinalRequestOptions.get_max_retries "
                      "in _models.py: does each retry's wait still come from "
                      "_calculate_retry_timeout(remaining_retries, options, headers)?")


async def test_bend_2_the_wait_before_a_retry_is_the_clients_policy(
        backend: str, server: ScriptedServer) -> None:
    same_parameters(RETRY_WAIT, model_client._client_class(False)._calculate_retry_timeout,
                    openai.AsyncOpenAI, "_calculate_retry_timeout", RETRY_WAIT_RECHECK)
    parse = getattr(openai.AsyncOpenAI, "_parse_retry_after_header", None)
    assert parse is not None and parameters(parse) == [
        ("self", "POSITIONAL_OR_KEYWORD"), ("response_headers", "POSITIONAL_OR_KEYWORD")], \
        broken(RETRY_WAIT, "the override calls _parse_retry_after_header(headers), now "
               f"{parameters(parse) if parse else 'gone'}", RETRY_WAIT_RECHECK)
    from openai._models import FinalRequestOptions

    assert callable(getattr(FinalRequestOptions, "get_max_retries", None)), broken(
        RETRY_WAIT, "FinalRequestOptions.get_max_retries is gone", RETRY_WAIT_RECHECK)

    asked: list[tuple[int, float | None]] = []

    class Recording(RetryPolicy):
        __slots__ = ()

        def delay(self, attempt: int, retry_after: float | None = None) -> float:
            asked.append((attempt, retry_after))
            return super().delay(attempt, retry_after)

    server.enqueue(script.error(503, "loading", headers={"retry-after": "0.05"}),
                   script.error(503, "still loading"), script.text("Ready."))
    http = ModelHttp(server.base_url, "", 10)
    policy = Recording(max_retries=2, initial_delay=0.01, jitter=False)
    try:
        assert (await stream_text(http, server.base_url, policy))[0] == "Ready."
    finally:
        await http.close()
    # attempt numbers from the SDK's remaining_retries, the server's Retry-After parsed
    assert asked == [(1, 0.05), (2, None)], broken(
        RETRY_WAIT, f"the policy was asked {asked} for two retries", RETRY_WAIT_RECHECK)


# -- 3. _send_request -------------------------------------------------------------------

SEND = "3 (model_client.ModelServerClient._send_request)"
SEND_RECHECK = ("openai/_base_client.py AsyncAPIClient.request and _send_request: is each "
                "attempt still sent by _send_request(request, stream=..., **kwargs) through "
                "self._client (the httpx2 client passed as http_client)?")


async def test_bend_3_send_request_resends_after_a_hang_up(
        backend: str, server: ScriptedServer) -> None:
    same_parameters(SEND, model_client._client_class(False)._send_request,
                    openai.AsyncOpenAI, "_send_request", SEND_RECHECK)
    client = new_openai_client(server.base_url)
    http = ModelHttp(server.base_url, "", 10, client=client)
    try:
        assert isinstance(client._client, httpx2.AsyncClient), broken(
            SEND, f"the SDK's _client is a {type(client._client)}", SEND_RECHECK)
        server.enqueue(Script([Hangup()]), script.text("Second."))
        try:  # no retries: only the override sends the request again
            assert (await stream_text(http, server.base_url))[0] == "Second."
        except ServerConnectionError:
            pytest.fail(broken(SEND, "a request the server hung up on was not sent again",
                               SEND_RECHECK))
    finally:
        await client.close()
    assert len(server.requests) == 2


async def test_bend_3_send_request_bounds_the_wait_for_the_response_head(
        backend: str) -> None:
    # The SDK's own read timeout is off (read=None: it would arm a timer per chunk);
    # without the override a server that takes the request and never answers would
    # hold the turn for ever.
    with socket.socket() as silent:  # connections complete in its backlog, none answered
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        http = ModelHttp(url, "", 0.3)
        try:
            async with asyncio.timeout(30):
                with pytest.raises(RequestTimeoutError, match="did not answer in time"):
                    await stream_text(http, url)
        except TimeoutError:
            pytest.fail(broken(SEND, "a response head that never came was waited for "
                               "without limit", SEND_RECHECK))
        finally:
            await http.close()


# -- 4 and 5. SplitClient's transports --------------------------------------------------

SPLIT = "4 (split_transport.SplitClient._init_transport)"
SPLIT_PROXY = "5 (split_transport.SplitClient._init_proxy_transport)"
SPLIT_RECHECK = ("httpx2/_client.py AsyncClient.__init__, _init_transport and "
                 "_init_proxy_transport (openai's DefaultAsyncHttpxClient inherits them), and "
                 "openai/_vendor/httpx_aiohttp/transport.py AiohttpTransport.__init__ (made as "
                 "DefaultAioHttpClient makes it)")


def test_bends_4_and_5_the_transport_factories_are_httpx2s() -> None:
    _, split_client_class = split_transport._classes()
    assert issubclass(openai.DefaultAsyncHttpxClient, httpx2.AsyncClient), broken(
        SPLIT, "openai's DefaultAsyncHttpxClient is no httpx2.AsyncClient", SPLIT_RECHECK)
    for bend, name in ((SPLIT, "_init_transport"), (SPLIT_PROXY, "_init_proxy_transport")):
        same_parameters(bend, getattr(split_client_class, name), httpx2.AsyncClient, name,
                        SPLIT_RECHECK)
        # the SDK's client must not put its own version between ours and httpx2's
        assert getattr(openai.DefaultAsyncHttpxClient, name) is \
            getattr(httpx2.AsyncClient, name), broken(
                bend, f"openai's DefaultAsyncHttpxClient overrides {name} now", SPLIT_RECHECK)
    from openai._vendor.httpx_aiohttp.transport import AiohttpTransport

    taken = {name for name, _ in parameters(AiohttpTransport.__init__)}
    assert {"verify", "cert", "trust_env", "limits", "proxy"} <= taken, broken(
        SPLIT, f"AiohttpTransport takes {sorted(taken)}", SPLIT_RECHECK)


async def test_bend_4_streamed_replies_go_through_aiohttp_the_rest_through_httpx2(
        on_aiohttp: None, no_proxy: None, server: ScriptedServer) -> None:
    server.enqueue(script.text("Streamed."))
    pool = ConnectionPool()  # discovery and the chat share the server's one client
    client = pool.client(server.base_url)
    http = ModelHttp(server.base_url, "", 10, client=client)
    try:
        transport = client._client._transport
        assert isinstance(transport, split_transport.split_transport_class()), broken(
            SPLIT, f"the client's transport is a {type(transport)}", SPLIT_RECHECK)
        assert [m.id for m in await list_models(server.base_url, pool=pool)] == server.models
        assert transport.streamed is None, broken(
            SPLIT, "a model list was sent through aiohttp", SPLIT_RECHECK)
        assert (await stream_text(http, server.base_url))[0] == "Streamed."
        assert type(transport.streamed).__name__ == "AiohttpTransport", broken(
            SPLIT, f"a streamed reply went through {type(transport.streamed)}", SPLIT_RECHECK)
    finally:
        await pool.aclose()


async def test_bend_5_through_a_proxy_streamed_replies_still_go_through_aiohttp(
        on_aiohttp: None, no_proxy: None, server: ScriptedServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", server.root_url)  # the scripted server plays the proxy
    remote = "http://model-server.invalid:8000/v1"  # resolves nowhere: only the proxy knows it
    server.enqueue(script.text("Through the proxy."))
    client = new_openai_client(remote)
    http = ModelHttp(remote, "", 10, client=client)
    try:
        mounted = [t for t in client._client._mounts.values() if t is not None]
        assert mounted and all(isinstance(t, split_transport.split_transport_class())
                               for t in mounted), broken(
            SPLIT_PROXY, f"the proxy's transports are {mounted}", SPLIT_RECHECK)
        assert (await stream_text(http, remote))[0] == "Through the proxy."
        assert any(type(t.streamed).__name__ == "AiohttpTransport" for t in mounted), broken(
            SPLIT_PROXY, "a streamed reply through the proxy did not use aiohttp",
            SPLIT_RECHECK)
    finally:
        await client.close()
    assert server.request_targets == [f"{remote}/chat/completions"]


# -- the direct body read ---------------------------------------------------------------

DIRECT = "'direct body read' (response_body.aiohttp_response)"
DIRECT_RECHECK = ("openai/_vendor/httpx_aiohttp/transport.py AiohttpResponseStream (still "
                  "holding the aiohttp response as _aiohttp_response?) and what httpx2's "
                  "Response.stream wraps it in (BoundAsyncStream._stream?)")


async def test_the_direct_body_read_is_taken_on_aiohttp(
        on_aiohttp: None, server: ScriptedServer) -> None:
    from openai._vendor.httpx_aiohttp.transport import AiohttpResponseStream

    assert AiohttpResponseStream.__name__ == response_body._SDK_WRAPPER, broken(
        DIRECT, f"the wrapper looked for is {response_body._SDK_WRAPPER}", DIRECT_RECHECK)
    assert [name for name, _ in parameters(AiohttpResponseStream.__init__)] == [
        "self", "aiohttp_response"], broken(DIRECT, "the wrapper is made differently",
                                            DIRECT_RECHECK)
    server.enqueue(script.text("Read straight from aiohttp."))
    http = ModelHttp(server.base_url, "", 10)
    try:
        text, direct = await stream_text(http, server.base_url)
    finally:
        await http.close()
    assert text == "Read straight from aiohttp."
    # not taken, every chunk passes three more generators: slower, and nothing else says so
    assert direct, broken(DIRECT, "replies are read through the SDK's aiter_raw again",
                          DIRECT_RECHECK)


# -- platform_headers -------------------------------------------------------------------

HEADERS = "'no machine description' (model_client.ModelServerClient.platform_headers)"
HEADERS_RECHECK = ("openai/_base_client.py default_headers and platform_headers: are the "
                   "X-Stainless-* headers about the machine still added there alone?")


async def test_no_machine_description_is_sent(backend: str, server: ScriptedServer) -> None:
    plain = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
    try:
        described = {name.lower() for name in plain.platform_headers()}
    finally:
        await plain.close()
    assert "x-stainless-os" in described, broken(HEADERS, f"the SDK describes {described}",
                                                 HEADERS_RECHECK)
    server.enqueue(script.text("Hello."))
    http = ModelHttp(server.base_url, "", 10)
    try:
        assert (await stream_text(http, server.base_url))[0] == "Hello."
    finally:
        await http.close()
    [sent] = server.request_headers
    assert not described & set(sent), broken(
        HEADERS, f"a request carried {sorted(described & set(sent))}", HEADERS_RECHECK)


# -- the import hook --------------------------------------------------------------------

HOOK = "'deferred package inits' (sdk_type_packages, in front of openai and httpcore2)"
HOOK_RECHECK = ("the __init__.py of openai, httpcore2, openai.types, openai.types.chat, "
                "openai.lib and openai._vendor(.httpx_aiohttp): still only imports (see "
                "sdk_type_packages' docstring)? tests/core/test_sdk_type_packages.py "
                "says more")

DEFERRED_AFTER_A_CHAT = """
import asyncio, json, sys
from desktop_agent.core.wire import sdk_type_packages as hook
assert hook.defer_type_package_inits()
from desktop_agent.core import AgentOptions, Client

async def main():
    async with Client(AgentOptions(base_url={url!r}, model="test-model")) as client:
        await client.query("hi")
        text = "".join([getattr(i, "text", "") async for i in client.receive_messages()])
    # the packages the hook is for: the two roots and every package under DEFERRED_ROOTS
    packages = sorted(name for name, module in sys.modules.items()
                      if (name in hook.ROOT_PACKAGES or any(
                          name == root or name.startswith(root + ".")
                          for root in hook.DEFERRED_ROOTS))
                      and getattr(module.__spec__, "submodule_search_locations", None))
    print(json.dumps({{"text": text, "packages": packages, "deferred": [
        name for name in packages
        if isinstance(sys.modules[name].__spec__.loader, hook._DeferredInit)]}}))

asyncio.run(main())
"""


def test_the_import_hook_still_defers_every_sdk_package_a_chat_loads(
        server: ScriptedServer) -> None:
    server.enqueue(script.text("Hello."))
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(DEFERRED_AFTER_A_CHAT.format(url=server.base_url))],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, broken(HOOK, f"a chat failed:\n{result.stderr}",
                                          HOOK_RECHECK)
    facts = json.loads(result.stdout.strip().splitlines()[-1])
    assert facts["text"] == "Hello."
    assert {"openai", "httpcore2", "openai.types"} <= set(facts["packages"]), facts
    undeferred = sorted(set(facts["packages"]) - set(facts["deferred"]))
    # a package the hook cannot defer is imported whole, silently: only memory says so
    assert not undeferred, broken(HOOK, f"{undeferred} are imported whole again",
                                  HOOK_RECHECK)
