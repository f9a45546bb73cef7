"""Hearing one NOTIFY channel's payloads as text (callbacks changed on another replica).

The same thread and reconnection as :class:`~.event_listener.EventListener`, for
channels whose payload is not ``<conversation id>:<event id>``. Each time it starts
listening (at first, and after a lost connection) it reports ``""``: a notification
sent meanwhile may have been missed, so the caller reloads everything then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from desktop_agent.store.postgres.event_listener import EventListener

logger = logging.getLogger("desktop_agent.store.postgres")


class ChannelListener(EventListener):
    """A thread that LISTENs on ``channel`` and hands each payload to ``on_note``."""

    def __init__(self, url: str, location: str, channel: str,
                 on_note: Callable[[str], None]) -> None:
        super().__init__(url, location, lambda _newest, _carried: None, channel=channel)
        self._on_note = on_note

    def _listening(self) -> None:
        self._report("")

    def _report(self, payload: str) -> None:
        try:
            self._on_note(payload)
        except Exception:  # the listener must outlive a failing callback
            logger.exception("handling the %s notification %r failed", self._channel, payload)
