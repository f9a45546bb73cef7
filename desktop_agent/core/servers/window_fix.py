"""How to give a model a larger context window on its server: the exact setting, or one click.

Each server sets the window in its own place, so the advice names that place
and the figure: LM Studio's load settings (``lms load --context-length``),
llama.cpp's ``--ctx-size`` (shared by its ``--parallel`` slots), vLLM's
``--max-model-len``, LiteLLM's ``model_info``. Ollama's API can do it itself:
``POST /api/create`` with ``from`` the model and ``parameters: {num_ctx: N}``
makes a model that runs with N tokens whatever the server's default
(``docs/api.md``, "Create a Model"); it is named after the model with the
window added (``qwen2.5:7b-ctx16k``), so a person recognises it in any list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from desktop_agent.core import errors
from desktop_agent.core.servers.context_window import (
    LITELLM,
    LLAMA_CPP,
    LM_STUDIO,
    OLLAMA,
    VLLM,
    ContextWindow,
    ollama_name,
)

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool

#: Windows a fix asks for: the first one with room for the conversation to grow.
WINDOW_STEPS = (8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576)
#: Room left over what the conversation needs now (the reply, the next turns).
GROWTH = 1.5
#: Seconds Ollama may take to write the derived model (it reuses the model's layers).
CREATE_TIMEOUT = 120.0

_CTX_SUFFIX = re.compile(r"-ctx\d+k$")


@dataclass(frozen=True, slots=True)
class WindowFix:
    """The window to ask for and how, in words a person can follow.

    Attributes:
        tokens: The window the fix gives the model.
        text: What to change, as a sentence with the exact setting.
        ollama_model: For Ollama: the derived model :func:`create_ollama_model`
            makes in one click; None where the server's API cannot.
    """

    tokens: int
    text: str
    ollama_model: str | None = None


def window_for(needed: int, trained: int | None = None) -> int:
    """A window with room for ``needed`` tokens and some growth, within what the model knows."""
    wanted = int(needed * GROWTH)
    tokens = next((step for step in WINDOW_STEPS if step >= wanted), WINDOW_STEPS[-1])
    return tokens if trained is None else min(tokens, trained)


def window_label(tokens: int) -> str:
    """``16384`` as ``16k``: how a window is written in a model's name."""
    return f"{tokens // 1024}k" if tokens % 1024 == 0 else f"{tokens}"


def derived_model_name(model: str, tokens: int) -> str:
    """The name of ``model`` run with ``tokens``: ``qwen2.5:7b`` -> ``qwen2.5:7b-ctx16k``."""
    name, _, tag = ollama_name(model).rpartition(":")
    label = f"ctx{window_label(tokens)}"
    if tag == "latest":
        return f"{_CTX_SUFFIX.sub('', name)}-{label}"
    return f"{name}:{_CTX_SUFFIX.sub('', tag)}-{label}"


def larger_window_fix(window: ContextWindow, model: str, needed: int) -> WindowFix:
    """What gives ``model`` a window for ``needed`` tokens on the server ``window`` came from."""
    tokens = window_for(needed, window.trained)
    figure = f"{tokens:,}"
    server = window.server
    if server == OLLAMA:
        derived = derived_model_name(model, tokens)
        return WindowFix(tokens, (
            f"Make {derived}, a copy of {model} that runs with {figure} tokens, or start "
            f"Ollama with OLLAMA_CONTEXT_LENGTH={tokens}."), derived)
    if server == LM_STUDIO:
        text = (f"Load {model} with a context length of {figure} in LM Studio's model "
                f"settings (or: lms load {model} --context-length {tokens}).")
    elif server == LLAMA_CPP:
        slots = window.slots
        text = f"Start llama-server with --ctx-size {tokens * slots}" + (
            f" (its --parallel {slots} slots share it)." if slots > 1 else ".")
    elif server == VLLM:
        text = f"Start vLLM with --max-model-len {tokens}."
    elif server == LITELLM:
        text = (f"Give {model} a window of {figure} tokens on the server behind LiteLLM, "
                "and set max_input_tokens to match in LiteLLM's model_info.")
    else:
        text = (f"Give {model} a context of {figure} tokens on its server, and set the "
                "context length to match.")
    if window.trained is not None and window.trained < needed:
        text += (f" The model was trained for {window.trained:,} tokens only: with "
                 "compaction on, older messages are summarised to fit.")
    return WindowFix(tokens, text)


async def create_ollama_model(base_url: str, model: str, tokens: int,
                              api_key: str | None = None, *,
                              pool: ConnectionPool | None = None) -> str:
    """Make the Ollama model :func:`derived_model_name` names, running with ``tokens``.

    Returns:
        The new model's name (Ollama lists it from now on).

    Raises:
        ServerError: Ollama answered an error (the model is unknown, the disk is full...).
        ServerConnectionError: Ollama could not be reached.
    """
    import openai

    from desktop_agent.core.servers.discovery import server_client
    from desktop_agent.core.servers.model_details import get_json

    derived = derived_model_name(model, tokens)
    root = base_url.rstrip("/").removesuffix("/v1")
    body = {"model": derived, "from": model, "parameters": {"num_ctx": tokens},
            "stream": False}
    try:
        async with server_client(base_url, api_key, pool) as http:
            answer = await get_json(http, f"{root}/api/create", CREATE_TIMEOUT, body=body)
    except openai.APIStatusError as exc:
        detail = errors.redact(exc.response.text[:300], (api_key or "",))
        raise errors.ServerError(f"Ollama could not make {derived}: {detail}",
                                 status=exc.status_code, body=detail,
                                 base_url=base_url) from None
    except (openai.APIError, ValueError, OSError) as exc:
        raise errors.ServerConnectionError(
            f"Could not ask Ollama at {base_url} to make {derived} "
            f"({type(exc).__name__}).", base_url=base_url) from None
    status = answer.get("status") if isinstance(answer, dict) else None
    if status != "success":
        raise errors.ServerError(f"Ollama did not make {derived}: it answered {answer!r:.200}",
                                 base_url=base_url)
    return derived
