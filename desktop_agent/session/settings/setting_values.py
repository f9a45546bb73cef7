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


def has_server(settings: Mapping[str, Any]) -> bool:
    """Whether a server and a model are chosen (a turn can run)."""
    return bool(settings.get("base_url") and settings.get("model"))
