"""Which tool-call mode a conversation's model gets, and why: for the settings page.

The core decides (:mod:`desktop_agent.core.tooling.tool_call_mode`): constrained
decoding where the server supports it and the model is not known to call
tools natively, native calls otherwise, and native for a model whose server
refused the ``response_format`` field. A person who wonders why replies come
as calls (or as prose) reads the decision and its reason in Conversation
settings; the same sentence the core logged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from desktop_agent.core.errors import ConfigurationError
from desktop_agent.core.tooling.tool_call_mode import ToolCallMode, resolve
from desktop_agent.session.settings import defaults
from desktop_agent.session.turn.options import MissingApiKeyError, stored_api_key

if TYPE_CHECKING:
    from desktop_agent.store import Store


async def tool_call_mode_for(settings: Mapping[str, Any],
                             store: Store | None = None) -> ToolCallMode | None:
    """The mode the conversation's next turn with tools will use; None without a model.

    Asks the model's server once per model and process (a few quick GETs); a
    server that does not answer gives native calls, as a turn would. With the
    ``store``, a tool-call probe result kept for the model decides, as it does
    for a turn (its scores are in the mode's reason and ``measured``).
    """
    from desktop_agent.core.options import AgentOptions
    from desktop_agent.session.turn.model_doctor import load_into_core

    if store is not None:
        await asyncio.to_thread(load_into_core, store, str(settings.get("base_url") or ""),
                                str(settings.get("model") or ""))

    try:
        api_key = await asyncio.to_thread(stored_api_key, settings)
    except MissingApiKeyError:
        api_key = defaults.NO_API_KEY
    setting = settings.get("constrained_tool_calls")
    try:
        options = AgentOptions(model=str(settings.get("model") or ""),
                               base_url=str(settings.get("base_url") or ""), api_key=api_key,
                               constrained_tool_calls=setting if isinstance(setting, bool)
                               else "auto")
    except ConfigurationError:
        return None
    return await resolve(options)
