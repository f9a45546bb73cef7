"""The WAL file shrinks back once the log restarts, after a long run of commits.

A reader holding an old snapshot keeps SQLite from restarting the log, so it
grows with every commit meanwhile (in ``serve`` with 20 conversations streaming,
to ~80 MB); once the reader lets go and the background checkpoint has copied
the log, the next commit restarts it and the file is cut back to
``WAL_KEPT_BYTES`` instead of keeping its largest size on disk for good.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from desktop_agent.store import Store
from desktop_agent.store.connection import WAL_KEPT_BYTES


def test_the_wal_is_cut_back_after_a_long_run_of_commits(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    store = Store.open(path)
    conversation = store.create_conversation("Long run")
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM messages").fetchone()  # holds its snapshot
    parent = None
    for n in range(120):  # ~24 MB of commits the log cannot restart under
        parent = store.add_message(conversation.id, {"role": "user",
                                                     "content": f"{n} " + "x" * 200_000},
                                   parent_id=parent.id if parent else None)
    wal = Path(f"{path}-wal")
    grown = wal.stat().st_size
    assert grown > 3 * WAL_KEPT_BYTES
    reader.execute("COMMIT")
    reader.close()
    for n in range(600):  # the checkpoint thread copies the log about once a second
        parent = store.add_message(conversation.id, {"role": "user", "content": f"after {n}"},
                                   parent_id=parent.id)
        if wal.stat().st_size <= WAL_KEPT_BYTES:
            break
        time.sleep(0.1)
    assert wal.stat().st_size <= WAL_KEPT_BYTES, (grown, wal.stat().st_size)
    assert len(store.active_path(conversation.id)) == 120 + n + 1  # nothing lost
    store.close()
