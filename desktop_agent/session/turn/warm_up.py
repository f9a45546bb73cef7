"""Do ahead of time what a conversation's first turn would otherwise do on the event loop.

Measured in ``desktop-agent serve`` under ``bench/server_load.py`` (a callback
timer around every loop step): the first turn after start imported the core's
client and compaction modules (35 ms and 25 ms in two loop steps), ran the
bubblewrap probe (a subprocess, ~15 ms) and built every built-in tool's schema
for the first time, all on the loop, so every stream already open stalled that
long. :func:`warm_up_turns` does it all once, blocking: the server calls it
before its API takes requests (``/alive`` answers meanwhile), the window in a
worker thread when the person starts to type.
"""

from __future__ import annotations

import importlib
import logging
import tempfile

log = logging.getLogger("desktop_agent.session")

TURN_MODULES = (
    "desktop_agent.core.client",
    "desktop_agent.core.tooling.run_round",
    "desktop_agent.core.tooling.constrained_calls",
    "desktop_agent.core.tooling.tool_call_mode",
    "desktop_agent.core.servers.tool_call_support",
    "desktop_agent.core.servers.discovery",
    "desktop_agent.core.tooling.ran_inputs",
    "desktop_agent.core.tooling.output",
    "desktop_agent.core.tooling.builtin",
    "desktop_agent.core.tooling.mcp.server_usage",
    "desktop_agent.session.settings.sandbox_settings",
    "desktop_agent.session.turn.recorder",
    "desktop_agent.session.turn.turn_blocks",
    "desktop_agent.session.branch.branch_reading",
    "desktop_agent.session.turn.options",
    "desktop_agent.session.turn.model_doctor",
    "desktop_agent.session.settings.conversation_settings",
    "desktop_agent.session.files.file_checkpoints",
    "desktop_agent.workspace.diffs",
)
"""Modules a turn imports lazily (kept lazy so that commands which never run a turn
start fast)."""


def warm_up_turns(*, tokenizer: bool = True) -> None:
    """Load the HTTP stack, the turn's modules, the sandbox probe and tool schemas.

    Never raises: warming up only saves time, and the turn does the same work
    (and reports its failures) when it needs it.
    """
    from desktop_agent.core.warm_up import warm_up

    warm_up(tokenizer=tokenizer)
    for name in TURN_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.debug("warm-up import of %s failed: %s", name, exc)
    try:
        from desktop_agent.core.tooling.builtin import builtin_tools
        from desktop_agent.core.tooling.builtin.sandbox import sandbox_backend

        sandbox_backend()  # the bubblewrap probe runs once per process
        with tempfile.TemporaryDirectory(prefix="desktop-agent-warm-up-") as folder:
            builtin_tools(folder)  # fills the per-process schema and validator caches
    except Exception as exc:  # noqa: BLE001 - see the docstring
        log.debug("warm-up of the built-in tools failed: %s", exc)
