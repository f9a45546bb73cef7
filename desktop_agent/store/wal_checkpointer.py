"""Moving WAL checkpoints off the path of the writes a person waits for.

SQLite's automatic checkpoint runs inside whichever commit pushes the log past
its limit, turning one ordinary autosave every few hundred into a
multi-millisecond copy-and-fsync. Instead, a background thread with its own
connection runs a PASSIVE checkpoint about once a second: it copies committed
pages into the database file while writers keep appending to the log, never
blocking them. The writers' own automatic checkpoint stays on at a much
higher limit as a safety net should this thread ever stall.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

logger = logging.getLogger("desktop_agent.store.wal_checkpointer")

SAFETY_NET_PAGES = 20_000  # ~80 MB of log before a writer checkpoints by itself


class WalCheckpointer:
    """A daemon thread that checkpoints one database's WAL periodically."""

    def __init__(self, path: Path, interval: float = 1.0) -> None:
        self._path = path
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"wal-checkpoint:{path.name}", daemon=True
        )

    def start(self) -> None:
        """Begin checkpointing in the background."""
        self._thread.start()

    def stop_soon(self) -> None:
        """Ask the thread to end without waiting for it (safe from a finalizer)."""
        self._stop.set()

    def stop(self) -> None:
        """Stop the thread (after its current checkpoint, if any) and wait for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            logger.warning("background WAL checkpoints are off for %s: %s", self._path, exc)
            return
        try:
            while not self._stop.wait(self._interval):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # e.g. the file went away; try again later
                    logger.debug("WAL checkpoint of %s skipped: %s", self._path, exc)
        finally:
            conn.close()
