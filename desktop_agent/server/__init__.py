"""Headless mode: the agent core behind a REST API (``desktop-agent serve``).

``create_app(store, master_key=...)`` builds the FastAPI app; the CLI command
in :mod:`desktop_agent.server.cli_command` runs it on uvicorn.
"""

from .app import create_app

__all__ = ["create_app"]
