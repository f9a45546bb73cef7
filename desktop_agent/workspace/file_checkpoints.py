"""Undo from code: a script's working folder checkpointed before tool rounds, rewound on demand.

claude-agent-sdk's ``enable_file_checkpointing`` and ``rewind_files``, for the
SDK: ``AgentOptions(file_checkpoints=FileCheckpoints("/path/to/project"))``
makes the Client record the folder before each tool round (the same
content-addressed :class:`~desktop_agent.workspace.checkpoints.CheckpointStore`
the app keeps for every conversation, outside the folder, never touching its
``.git``), and ``client.rewind_files(turn)`` puts back what that turn and the
ones after it changed. Only recorded changes are put back, and a file changed
by something else meanwhile is a conflict, reported by name and overwritten
only with ``force=True``.

Turns are the Client's query numbers (``client.turns`` after ``query()``: 1 for
the first prompt), as claude-agent-sdk rewinds to a user message.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from desktop_agent.workspace.checkpoints import (
    CheckpointError,
    CheckpointStore,
    RestoreReport,
    TurnChanges,
)


class FileCheckpoints:
    """One folder's checkpoints for a Client (``AgentOptions.file_checkpoints``).

    Args:
        cwd: The folder the agent's tools work in.
        store_dir: Where the checkpoints live (default: a folder of the system's
            temporary directory named after ``cwd``, so a later script finds them).

    Attributes:
        cwd: The folder, resolved.
        store: The checkpoints themselves (their journal lists every turn).
    """

    def __init__(self, cwd: str | Path, store_dir: str | Path | None = None) -> None:
        self.cwd = Path(cwd).resolve()
        if not self.cwd.is_dir():
            raise CheckpointError(f"{self.cwd} is not a folder, so it cannot be checkpointed.")
        if store_dir is None:
            digest = hashlib.sha256(str(self.cwd).encode()).hexdigest()[:16]
            store_dir = Path(tempfile.gettempdir()) / "desktop-agent-checkpoints" / digest
        self.store = CheckpointStore(Path(store_dir))
        # Turn numbers restart with each Client: this object's turns carry its own prefix.
        self._run = uuid.uuid4().hex[:8]

    def _turn(self, turn: int) -> str:
        return f"{self._run}.{turn}"

    async def before_round(self, turn: int, calls: Sequence[Any]) -> None:
        """Record the folder before a tool round of ``turn`` runs (the Client calls this)."""
        del calls  # every round: a checkpoint of an unchanged folder costs a scan, no copy
        await asyncio.to_thread(self.store.checkpoint, self.cwd, kind="tool_round",
                                turn=self._turn(turn))

    async def end_turn(self, turn: int) -> TurnChanges | None:
        """Record what ``turn`` changed (None: no tool round ran in it)."""
        return await asyncio.to_thread(self.store.close_turn, self.cwd, self._turn(turn))

    def changes(self) -> list[TurnChanges]:
        """Every turn of this object's Client that changed files, oldest first."""
        return [t for t in self.store.turns()
                if t.changes and t.turn.startswith(f"{self._run}.")]

    def rewind(self, turn: int, *, force: bool = False) -> RestoreReport:
        """Put the folder back as it was before ``turn`` (what it and later turns changed).

        Raises:
            RestoreConflictError: A file changed since by something else (nothing done).
            CheckpointError: No recorded turn from ``turn`` on changed anything.
        """
        prefix = f"{self._run}."
        first = next((c for c in self.store.checkpoints()
                      if c.turn.startswith(prefix) and int(c.turn[len(prefix):]) >= turn
                      and c.workdir == str(self.cwd)), None)
        if first is None:
            raise CheckpointError(f"No tool round ran from turn {turn} on, so no file "
                                  "changed that could be rewound.")
        return self.store.restore_to(self.cwd, first.id, force=force)
