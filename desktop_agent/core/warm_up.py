"""Load ahead of time what the first turn would otherwise load on the event loop.

The HTTP library takes a few hundred milliseconds to import, the CA
certificates tens of milliseconds, and the tokenizer (used to size every
request) a few hundred milliseconds. Loaded lazily, they land inside the first
turn, on the event loop: a long-running process such as the REST server then
stalls every stream it is serving for that long. Such a process calls
:func:`warm_up` once before it starts serving; it blocks, so an interactive
program runs it in a worker thread instead.
"""

from __future__ import annotations

import importlib
import logging

log = logging.getLogger("desktop_agent.core")


def warm_up(*, tokenizer: bool = True) -> None:
    """Import the HTTP stack and (optionally) load the tokenizer; never raises."""
    try:
        from desktop_agent.core.wire import model_client

        for name in model_client.sdk_modules(streams=True):
            importlib.import_module(name)

        model_client.new_openai_client("http://127.0.0.1/v1")  # the SDK's own lazy imports
        if tokenizer:
            from desktop_agent.core.context.tokens import count_text_tokens

            count_text_tokens("warm up")
    except Exception as exc:  # noqa: BLE001 - warming up only saves time; the turn still works
        log.debug("warm-up failed: %s", exc)
