"""What a turn needs from the app's engine when its model runs on this computer.

A conversation whose settings say ``server: "local"`` has no address of its own:
the engine's port and key are new each time it starts. So at each turn's start
the turn asks the app's engine (:class:`LocalServers`, the app-wide
:class:`~desktop_agent.session.local_engine.local_engine.LocalEngine` in the window
and in ``serve``) for the running server, which starts the model when it is not
running, keeps it from being unloaded while the turn runs, and tells the
conversation (through its events) when the model loads and if the engine crashes.
The turn layer declares only this Protocol; the engine service sits above it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from desktop_agent.core.errors import ConfigurationError
from desktop_agent.session.events import SessionEvent


class LocalServerFacts(Protocol):
    """The engine's server as a turn connects to it."""

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""

    @property
    def api_key(self) -> str:
        """The engine's random key."""

    @property
    def model(self) -> str:
        """The model name the engine answers to."""

    @property
    def context_length(self) -> int | None:
        """Tokens per conversation as llama.cpp applied them."""


class LocalServers(Protocol):
    """The app's engine, as turns use it."""

    def use(self, model: str,
            emit: Callable[[SessionEvent], None]) -> AbstractAsyncContextManager[LocalServerFacts]:
        """The running server for ``model`` for the block, started if need be.

        Args:
            model: The conversation's ``model`` setting (a path or a name).
            emit: The conversation's events: told when the model loads and if the
                engine crashes during the block.

        Raises:
            LocalModelUnavailableError: No such model, a bad file, or the engine
                could not start it; the sentence says which.
        """


class LocalModelUnavailableError(ConfigurationError):
    """The model on this computer cannot serve the turn; the message says why.

    A :class:`ConfigurationError`, so both front ends show its sentence and offer no
    retry of the same request; ``__cause__`` is the engine's own error.
    """


NO_ENGINE = ("This conversation runs its model on this computer, but this program has no "
             "engine to run it with. Open it in the window, or run `desktop-agent serve "
             "--model NAME`.")
