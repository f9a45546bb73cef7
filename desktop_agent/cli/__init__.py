"""The ``desktop-agent`` command: the window by default, and the subcommands.

- :mod:`.main`: the entry point (argument parsing, ``--version``, ``--smoke-test``,
  opening the window, crash reports); imports only the standard library at the
  top, so ``--version`` and ``--help`` answer at once.
- :mod:`.transfer`: ``export``, ``import`` and ``copy-store``.
- :mod:`.display_check`: whether a window can open here, asked before Qt loads.

``serve`` lives with the server (:mod:`desktop_agent.server.cli_command`); the
entry point finds every subcommand through its registry of modules.
"""

from __future__ import annotations

from .main import app_version, build_parser, main

__all__ = ["app_version", "build_parser", "main"]
