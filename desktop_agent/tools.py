"""The seed's ``open_agent.tools``: the ``Tool`` type and the ``@tool`` decorator."""

from __future__ import annotations

from desktop_agent.core.tooling.tools import Tool, tool

__all__ = ["Tool", "tool"]
