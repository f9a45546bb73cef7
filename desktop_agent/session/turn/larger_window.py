"""The one-click fix for a window too small: on Ollama, a copy of the model that runs larger.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`.
Ollama's API makes a model from another with its own parameters
(``POST /api/create`` with ``from`` and ``parameters: {num_ctx: N}``), so the
app can do what the warning says instead of sending the person to a terminal:
make ``<model>-ctx16k`` and switch the conversation to it. The conversation's
``context_length`` setting is cleared with it: it was the old model's, and the
new one's window is asked from Ollama before the next turn. Other servers set
the window where the model is loaded; the warning names that setting.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from desktop_agent.session.errors import SessionError
from desktop_agent.session.settings import defaults
from desktop_agent.session.store_calls import StoreCalls, on_the_spot
from desktop_agent.session.turn.options import MissingApiKeyError, stored_api_key

if TYPE_CHECKING:
    from desktop_agent.session.settings.settings_record import SettingsRecord
    from desktop_agent.session.turn.options import SessionEnvironment

log = logging.getLogger("desktop_agent.session.context_window")


class LargerWindow:
    """Gives the conversation's Ollama model a larger window.

    Args:
        settings: The conversation's record (its server and model; changed here).
        env: What all conversations share (the connection pool).
    """

    def __init__(self, settings: SettingsRecord, env: SessionEnvironment) -> None:
        self._settings = settings
        self._env = env

    async def make_larger_window(self, tokens: int, call: StoreCalls = on_the_spot) -> str:
        """Make a copy of the model that runs with ``tokens`` and switch the conversation to it.

        Returns:
            The new model's name (``qwen2.5:7b-ctx16k``).

        Raises:
            SessionError: The conversation's server is not Ollama (its warning
                names the setting to change instead).
            ServerError: Ollama refused (an unknown model, a full disk...).
            ServerConnectionError: Ollama could not be reached.
        """
        from desktop_agent.core.servers import applied_context
        from desktop_agent.core.servers.context_window import OLLAMA
        from desktop_agent.core.servers.window_fix import create_ollama_model

        settings = self._settings.current
        base_url = str(settings.get("base_url") or "")
        model = str(settings.get("model") or "")
        try:
            api_key = await asyncio.to_thread(stored_api_key, settings)
        except MissingApiKeyError:
            api_key = defaults.NO_API_KEY
        pool = self._env.connection_pool
        window = await applied_context.applied_context(base_url, model, api_key, pool=pool)
        if window.server != OLLAMA:
            raise SessionError(f"Only Ollama can make a copy of a model with a larger window; "
                               f"{window.server or 'this server'} sets it where the model "
                               "is loaded.")
        made = await create_ollama_model(base_url, model, tokens, api_key, pool=pool)
        applied_context.forget(base_url)
        log.info("made %s (%d tokens) from %s", made, tokens, model)
        await self._settings.update_settings(call, model=made, context_length=None)
        return made
