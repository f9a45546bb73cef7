"""Headless mode: the agent core behind a REST API (``desktop-agent serve``).

``create_app(store, master_key=...)`` builds the FastAPI app; the CLI command
in :mod:`desktop_agent.server.cli_command` runs it on uvicorn. ``create_app``
is imported on first use so that registering the ``serve`` command (which
imports this package) does not load FastAPI when the window starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
