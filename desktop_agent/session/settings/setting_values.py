"""What a few settings mean, shared by both front ends (no pydantic: the window imports it).

Kept apart from :mod:`~desktop_agent.session.settings.conversation_settings`
(the pydantic schema) so the window can paint before pydantic loads; the
schema is imported when settings are saved.
``tests/e2e/test_entry_point.py`` checks that nothing heavy loads before the
first paint: folding this module into the schema made that test fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def asks_before_tools(settings: Mapping[str, Any]) -> bool:
    """Whether tool calls no rule allows wait for a person (confirmation mode).

    One rule for both front ends: ``confirm_tools`` when set, else the
    window's older ``auto_execute`` inverted, else on.
    """
    confirm = settings.get("confirm_tools")
    if isinstance(confirm, bool):
        return confirm
    return not bool(settings.get("auto_execute"))


LOCAL_SERVER = "local"
"""The ``server`` setting of a conversation whose model runs on this computer (the app's
engine): ``model`` then names the model (its file's path, or any name the library
knows) and ``base_url`` is not used; the engine's address and key are given at each
turn's start."""


def runs_locally(settings: Mapping[str, Any]) -> bool:
    """Whether the conversation's model runs on this computer, in the app's engine."""
    return settings.get("server") == LOCAL_SERVER


def has_server(settings: Mapping[str, Any]) -> bool:
    """Whether a server and a model are chosen (a turn can run)."""
    return bool(settings.get("model") and (settings.get("base_url") or runs_locally(settings)))
