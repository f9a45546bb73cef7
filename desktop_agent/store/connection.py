"""Opening the SQLite file with the settings every connection needs.

- WAL journal: readers never block the writer, and a killed process leaves a
  consistent file (the next open replays or discards the log).
- ``synchronous = NORMAL``: in WAL mode a committed transaction survives a
  crash or ``kill -9`` of the app (the data is in the OS's hands); only a power
  cut can lose the last commits, never corrupt the file. Full fsync per
  checkpoint would cost milliseconds per streamed second for no gain here.
- ``busy_timeout``: another process (the REST server, a second window) holding
  the write lock makes us wait, not fail.
- Autocommit (``isolation_level=None``): the store opens its own short
  ``BEGIN IMMEDIATE`` transactions, so the write lock is taken up front and a
  read snapshot never has to be upgraded (which would fail with "busy" at once).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from desktop_agent.store.errors import DatabaseUnusableError

logger = logging.getLogger("desktop_agent.store.connection")

BUSY_TIMEOUT_MS = 15_000
WAL_KEPT_BYTES = 8 * 1024 * 1024
"""The most a WAL file keeps on disk once a checkpoint has restarted it."""


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the database at ``path``, ready for the store.

    Raises:
        DatabaseUnusableError: The file is not an SQLite database or is damaged.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise DatabaseUnusableError(
            f"Cannot open the conversation database {path}: {exc}."
        ) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            logger.warning("database %s runs in %s journal mode, not WAL", path, mode)
        conn.execute("PRAGMA synchronous = NORMAL")
        # A WAL file keeps the size of its longest run of commits between two
        # checkpoints that could restart it (serve's soak: ~80 MB after 3,000 turns
        # of 20 conversations streaming at once); cut back to this when it restarts.
        conn.execute(f"PRAGMA journal_size_limit = {WAL_KEPT_BYTES}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise DatabaseUnusableError(
            f"{path} is not a Desktop Agent conversation database, or it is damaged ({exc}). "
            "It was left untouched; move it aside to start with an empty one."
        ) from exc
    return conn


def check_is_ours(conn: sqlite3.Connection, path: Path, version: int) -> None:
    """Refuse a foreign SQLite file rather than adding our tables to it."""
    if version != 0:
        return
    tables = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchone()[0]
    if tables:
        raise DatabaseUnusableError(
            f"{path} is an SQLite database of another program, not Desktop Agent's. "
            "It was left untouched."
        )
