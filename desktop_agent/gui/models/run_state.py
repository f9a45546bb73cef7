"""How one model runs now, as the Models window shows it: starting, running, or crashed.

The bridge knows the engine's servers, its last crash and its memory figure; the
library page folds them into one :class:`RunState` per model file, which the table's
status column and the details panel read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.session import LocalServer, ModelCrashed


@dataclass(frozen=True)
class RunState:
    """One model file's state in the engine.

    Attributes:
        starting: It is loading now.
        server: Where it answers while it runs.
        crash: How it ended, when the engine ended unasked (Restart starts it again).
        rss_bytes: The engine's resident memory while it runs, when read.
    """

    starting: bool = False
    server: LocalServer | None = None
    crash: ModelCrashed | None = None
    rss_bytes: int | None = None

    @property
    def shown(self) -> bool:
        """Whether there is anything to say (not idle)."""
        return self.starting or self.server is not None or self.crash is not None


IDLE = RunState()


def run_states(servers: list[LocalServer], starting: Path | None, crash: ModelCrashed | None,
               rss_bytes: int | None) -> dict[Path, RunState]:
    """The state of each model file the engine is busy with, by resolved path."""
    states: dict[Path, RunState] = {}
    if crash is not None:
        states[resolved(crash.path)] = RunState(crash=crash)
    for server in servers:
        states[resolved(server.path)] = RunState(server=server, rss_bytes=rss_bytes)
    if starting is not None:
        states[resolved(starting)] = RunState(starting=True)
    return states


def resolved(path: Path) -> Path:
    """``path`` with links resolved (the same file reached two ways is one model)."""
    try:
        return path.resolve()
    except OSError:
        return path
