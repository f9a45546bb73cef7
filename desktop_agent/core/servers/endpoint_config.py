"""Where the model is: environment variables, provider shortcuts and fallbacks.

The seed's scripts resolve ``model`` and ``base_url`` through two helpers so
that one script runs against LM Studio at home and vLLM in CI by changing
the environment only. Resolution, most important first (``prefer_env=True``):

1. ``DESKTOP_AGENT_MODEL`` / ``DESKTOP_AGENT_BASE_URL``, then the seed's
   ``OPEN_AGENT_MODEL`` / ``OPEN_AGENT_BASE_URL`` (scripts written for the
   seed keep working after the rename);
2. the value passed to the helper (the fallback);
3. for ``base_url`` only: the provider's usual local address.

``prefer_env=False`` ignores the environment for that look-up (the seed's
way to pin one agent to a model whatever the shell says).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from desktop_agent.core.errors import ConfigurationError

#: The usual OpenAI-compatible root of each local server kind.
PROVIDER_DEFAULTS: Mapping[str, str] = {
    "lmstudio": "http://localhost:1234/v1",
    "ollama": "http://localhost:11434/v1",
    "llamacpp": "http://localhost:8080/v1",
    "vllm": "http://localhost:8000/v1",
}
#: The provider assumed when nothing else names a server.
DEFAULT_PROVIDER = "lmstudio"
#: Environment variables read for the model id, first found wins.
MODEL_ENV_VARS = ("DESKTOP_AGENT_MODEL", "OPEN_AGENT_MODEL")
#: Environment variables read for the server address, first found wins.
BASE_URL_ENV_VARS = ("DESKTOP_AGENT_BASE_URL", "OPEN_AGENT_BASE_URL")


def _from_env(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def provider_url(provider: str) -> str:
    """The usual address of ``provider`` (``lmstudio``, ``ollama``, ``llamacpp``, ``vllm``).

    Raises:
        ConfigurationError: the provider is not one of those.
    """
    key = provider.strip().lower().replace(".", "").replace("-", "").replace("_", "")
    try:
        return PROVIDER_DEFAULTS[key]
    except KeyError:
        known = ", ".join(PROVIDER_DEFAULTS)
        raise ConfigurationError(f"unknown provider {provider!r}; known: {known}") from None


def get_model(model: str | None = None, *, prefer_env: bool = True) -> str | None:
    """The model id: from the environment, else ``model``; None when neither is set."""
    env = _from_env(MODEL_ENV_VARS) if prefer_env else None
    return env or model


def get_base_url(base_url: str | None = None, provider: str | None = None, *,
                 prefer_env: bool = True) -> str:
    """The server's OpenAI-compatible root URL.

    Args:
        base_url: An explicit fallback address.
        provider: A provider whose usual address is the last resort.
        prefer_env: Read the environment variables first (False ignores them).

    Returns:
        The environment's address, else ``base_url``, else the provider's
        (LM Studio's when no provider is named).
    """
    env = _from_env(BASE_URL_ENV_VARS) if prefer_env else None
    return env or base_url or provider_url(provider or DEFAULT_PROVIDER)
