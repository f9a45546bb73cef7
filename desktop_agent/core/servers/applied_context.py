"""The window a server applies to one model, asked before a turn and remembered per process.

Discovery reads every model of a server; a turn needs one model's window,
and needs it fresh enough: Ollama loads a model with another ``num_ctx``
after a restart, a person reloads a model in LM Studio with a larger context.
So the server's own endpoints are asked at most once per
:data:`REASK_SECONDS` per server and model (a server that names no window,
once per process), and turns starting together share one question. The
kinds are tried one after the other, through the client the conversation
already holds: on its kept-alive connection a few small GETs cost a few
milliseconds, and asking in parallel would open a connection per question.

What a server *showed* beats what it said: a prompt cut to N tokens without
an error (Ollama) or refused over N tokens (llama.cpp) is remembered for the
server and model for the rest of the process (:func:`remember`), and the
window is narrowed to it with a source that says so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import openai

from desktop_agent.core.servers.context_window import (
    ContextWindow,
    listed_window,
    litellm_window,
    llamacpp_window,
    lmstudio_window,
    ollama_window,
)
from desktop_agent.core.servers.model_details import get_json, get_or_none, request_errors

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool
    from desktop_agent.core.wire.wire_settings import WireSettings

log = logging.getLogger("desktop_agent.core.context_window")

#: How long an answer stands before the server is asked again.
REASK_SECONDS = 30.0

Key = tuple[str, str]
_ANSWERS: dict[Key, tuple[float, ContextWindow]] = {}
_ASKING: dict[Key, asyncio.Task[ContextWindow]] = {}
_LEARNED: dict[Key, tuple[int, str]] = {}


def _key(base_url: str, model: str) -> Key:
    return (base_url.rstrip("/"), model)


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


# -- what the server showed ---------------------------------------------------------------
def remember(base_url: str, model: str, tokens: int, source: str) -> None:
    """The server showed it applies ``tokens`` to this model (a cut, a refusal): keep it."""
    key = _key(base_url, model)
    known = _LEARNED.get(key)
    if known is None or tokens < known[0]:
        _LEARNED[key] = (tokens, source)
        log.warning("%s applies about %d tokens to %s (%s)", key[0], tokens, model, source)


def learned(base_url: str, model: str) -> int | None:
    """The window this server showed for the model in this process, if it did."""
    found = _LEARNED.get(_key(base_url, model))
    return found[0] if found else None


def forget(base_url: str | None = None) -> None:
    """Forget answers and learned windows (one server's, or all): after a fix, and in tests."""
    for table in (_ANSWERS, _ASKING, _LEARNED):
        for key in [k for k in table if base_url is None or k[0] == base_url.rstrip("/")]:
            del table[key]


def _with_learned(window: ContextWindow, key: Key) -> ContextWindow:
    found = _LEARNED.get(key)
    return window if found is None else window.learned(*found)


# -- asking the server ---------------------------------------------------------------------
def known(base_url: str, model: str) -> ContextWindow | None:
    """The last answer for this server and model (however old), without asking."""
    key = _key(base_url, model)
    answer = _ANSWERS.get(key)
    if answer is None:
        return None if key not in _LEARNED else _with_learned(ContextWindow(), key)
    return _with_learned(answer[1], key)


async def applied_context(base_url: str, model: str, api_key: str | None = None, *,
                          timeout: float = 3.0, pool: ConnectionPool | None = None,
                          http: openai.AsyncOpenAI | None = None) -> ContextWindow:
    """The window the server applies to ``model``; never raises.

    ``http`` is the server's client to ask through (else the ``pool``'s, else
    one made for the question).

    An answer younger than :data:`REASK_SECONDS` is reused (an unknown one
    too: a server that names no window is not asked at every turn).
    """
    key = _key(base_url, model)
    answer = _ANSWERS.get(key)
    if answer is not None and (answer[1].server is None
                               or time.monotonic() - answer[0] < REASK_SECONDS):
        return _with_learned(answer[1], key)
    loop = asyncio.get_running_loop()
    asking = _ASKING.get(key)
    if asking is None or asking.get_loop() is not loop:
        asking = loop.create_task(_ask(base_url, model, api_key, timeout, pool, http))
        _ASKING[key] = asking
        asking.add_done_callback(lambda done: _ASKING.pop(key, None)
                                 if _ASKING.get(key) is done else None)
    window = await asyncio.shield(asking)
    _ANSWERS[key] = (time.monotonic(), window)
    return _with_learned(window, key)


async def asked_window(options: WireSettings,
                       http: openai.AsyncOpenAI | None = None) -> ContextWindow:
    """:func:`applied_context` for an agent's options, through ``http`` when given."""
    return await applied_context(options.base_url, options.model, options.api_key,
                                 timeout=min(options.timeout, 3.0),
                                 pool=options.connection_pool, http=http)


Reader = Callable[[openai.AsyncOpenAI, str, str, float], Awaitable[ContextWindow | None]]


async def _ollama(http: openai.AsyncOpenAI, root: str, model: str,
                  timeout: float) -> ContextWindow | None:
    show = await get_json(http, f"{root}/api/show", timeout, body={"model": model})
    if not isinstance(show, dict) or not ("model_info" in show or "capabilities" in show
                                          or "parameters" in show):
        return None
    ps = await get_or_none(http, f"{root}/api/ps", timeout)
    version = await get_or_none(http, f"{root}/api/version", timeout)
    return ollama_window(model, show, ps, version)


async def _lmstudio(http: openai.AsyncOpenAI, root: str, model: str,
                    timeout: float) -> ContextWindow | None:
    """``/api/v0/models`` (``id``, ``loaded_context_length``), else ``/api/v1/models``.

    The v1 list (LM Studio 0.4) names a model by ``key`` and keeps the
    applied window in ``loaded_instances[].config.context_length``; an
    instance loaded under its own identifier is matched by its ``id``.
    """
    data = await get_or_none(http, f"{root}/api/v0/models", timeout)
    entries = data.get("data") if isinstance(data, dict) else None
    if isinstance(entries, list):
        entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == model),
                     None)
        if entry is not None:
            return lmstudio_window(entry)
    data = await get_json(http, f"{root}/api/v1/models", timeout)
    entries = data.get("models") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and _lmstudio_names(entry, model):
            return lmstudio_window(entry)
    return None


def _lmstudio_names(entry: dict[str, object], model: str) -> bool:
    """Whether a v1 ``/api/v1/models`` entry is ``model``: its key or a loaded instance's id."""
    instances = entry.get("loaded_instances")
    return entry.get("key") == model or any(
        isinstance(i, dict) and i.get("id") == model
        for i in (instances if isinstance(instances, list) else []))


async def _llamacpp(http: openai.AsyncOpenAI, root: str, model: str,
                    timeout: float) -> ContextWindow | None:
    props = await get_json(http, f"{root}/props", timeout)
    if not isinstance(props, dict) or "default_generation_settings" not in props:
        return None
    models = await get_or_none(http, f"{root}/v1/models", timeout)
    entries = models.get("data") if isinstance(models, dict) else None
    entry = entries[0] if isinstance(entries, list) and len(entries) == 1 else None
    return llamacpp_window(props, entry)


async def _litellm(http: openai.AsyncOpenAI, root: str, model: str,
                   timeout: float) -> ContextWindow | None:
    data = await get_json(http, f"{root}/v1/model/info", timeout)
    entries = data.get("data") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        info = entry.get("model_info") if isinstance(entry, dict) else None
        if entry.get("model_name") == model and isinstance(info, dict):
            return litellm_window(info)
    return None


async def _listed(http: openai.AsyncOpenAI, root: str, model: str,
                  timeout: float) -> ContextWindow | None:
    """The window a ``/v1/models`` entry names: vLLM's ``max_model_len``, or another's."""
    data = await get_json(http, f"{root}/v1/models", timeout)
    entries = data.get("data") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return listed_window(entry)
    return None


#: In order of trust: a server's own endpoint before a figure in ``/v1/models``.
_READERS: tuple[Reader, ...] = (_llamacpp, _ollama, _lmstudio, _litellm, _listed)
_FAILURES: tuple[type[BaseException], ...] = (*request_errors(), AttributeError, OSError)


async def _ask(base_url: str, model: str, api_key: str | None, timeout: float,
               pool: ConnectionPool | None, http: openai.AsyncOpenAI | None) -> ContextWindow:
    from desktop_agent.core.servers.discovery import server_client

    root = _root(base_url)
    try:
        if http is not None:
            window = await _first_answer(http, root, model, timeout)
        else:
            async with server_client(base_url, api_key, pool) as own:
                window = await _first_answer(own, root, model, timeout)
    except _FAILURES:
        window = ContextWindow()
    log.info("%s %s: %s tokens per request (%s)", base_url, model, window.applied,
             window.source)
    return window


async def _first_answer(http: openai.AsyncOpenAI, root: str, model: str,
                        timeout: float) -> ContextWindow:
    for reader in _READERS:
        try:
            found = await reader(http, root, model, timeout)
        except openai.APIConnectionError:
            break  # down or unreachable: the other kinds would not answer either
        except _FAILURES:
            continue
        if found is not None:
            return found
    return ContextWindow()
