"""``desktop-agent _engine``: the hidden subcommand the engine's child process runs.

The app runs a model by starting itself again with this subcommand (the one-file
binary has no other program to start), so it is registered like any command but
left out of ``--help``: a person has no use for it. The child's work and its
contract with the app live in :mod:`desktop_agent.engine.engine_child`.
"""

from __future__ import annotations

import argparse

from desktop_agent.engine.engine_child import HIDDEN_COMMAND, add_arguments, run_child


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the hidden ``_engine`` subcommand (no ``help``: argparse then does not list it)."""
    command = subparsers.add_parser(
        HIDDEN_COMMAND, description="Serve one model for the app (started by the app itself).")
    add_arguments(command)
    command.set_defaults(handler=run_child)
