"""The person's app-wide choices: theme, font size, default folder, approval timeout.

Kept in the store (setting ``preferences``) so they travel with the data
folder. New conversations work in a visible, clearly named folder under the
work root (``~/Desktop Agent/Chat <date>`` by default), never a hidden folder
named by an id; the naming rule is the session's
(:mod:`desktop_agent.session.lifecycle.new_conversations`), the same for the REST server.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.store import Store

PREFERENCES_KEY = "preferences"
#: Tests and portable installs point the default work root elsewhere.
WORK_ROOT_ENV = "DESKTOP_AGENT_WORK_ROOT"


def default_work_root() -> Path:
    """``~/Desktop Agent`` (or ``$DESKTOP_AGENT_WORK_ROOT``)."""
    configured = os.environ.get(WORK_ROOT_ENV, "").strip()
    return Path(configured).expanduser() if configured else Path.home() / "Desktop Agent"


@dataclass
class Preferences:
    """App-wide choices.

    Attributes:
        theme: ``system``, ``light`` or ``dark``.
        font_pt: Body text size in points.
        default_folder: Parent of new conversations' working folders ('' = ~/Desktop Agent).
        approval_timeout: Seconds before an unanswered tool call is denied (0 = never).
    """

    theme: str = "system"
    font_pt: float = 10.0
    default_folder: str = ""
    approval_timeout: float = 300.0

    @classmethod
    def load(cls, store: Store) -> Preferences:
        """The saved preferences (defaults for anything missing or malformed)."""
        saved = store.get_setting(PREFERENCES_KEY) or {}
        prefs = cls()
        if isinstance(saved, dict):
            for name, default in asdict(prefs).items():
                value = saved.get(name)
                if isinstance(value, type(default)) or (
                        isinstance(default, float) and isinstance(value, int)):
                    setattr(prefs, name, type(default)(value))
        return prefs

    def save(self, store: Store) -> None:
        """Remember them."""
        store.set_setting(PREFERENCES_KEY, asdict(self))

    def work_root(self) -> Path:
        """Where new conversations' working folders go."""
        return Path(self.default_folder).expanduser() if self.default_folder \
            else default_work_root()

    def timeout(self) -> float | None:
        """The approval timeout for controllers (None: never expire)."""
        return self.approval_timeout if self.approval_timeout > 0 else None

