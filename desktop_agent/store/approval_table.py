"""Tool-call questions any replica can list and answer: the ``approvals`` table (PostgreSQL).

With several ``serve`` replicas on one database, a turn runs on one of them
while the person (or script) asking to approve a call may reach any other. The
replica running the turn writes a row per open question; any replica lists the
open ones and answers one by flipping its row from ``open`` to ``answered``
with a NOTIFY (:data:`~desktop_agent.store.dialects.APPROVALS_CHANNEL`) that the
running replica's listener turns into the answer its turn is waiting for.

The rules a single server keeps in memory hold across replicas because each
answer is one write transaction, and writes are serialised on every engine:

- **Answered once.** Only an ``open`` row is answered; a second answer, or one
  to a question already closed, finds none.
- **Only while someone waits.** A question is answerable while its expiry has
  not passed and the replica that asked still holds the conversation's turn
  lease. A replica killed with a question open leaves a row that stops being
  listed or answerable when its lease lapses, and is deleted when the next
  turn of that conversation asks something. Expiry and lease times are the
  replicas' clocks, as the turn lease's are: keep them in step (NTP).
- **An answer that counted is never lost.** The asking replica closes its row
  with one ``DELETE ... RETURNING``: if an answer committed first, the close
  returns it, so an answer accepted just before the expiry still decides the call.

Only the PostgreSQL schema has this table: on SQLite one process runs and
answers its own turns' questions, in memory (see
:mod:`desktop_agent.server.pending_approvals`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from desktop_agent.store.engine import Engine
from desktop_agent.store.process_liveness import current_writer, writer_alive
from desktop_agent.store.record_rows import dumps
from desktop_agent.store.sql_connection import SqlConnection

_LIVE = (
    " FROM approvals a JOIN turn_leases l"
    " ON l.conversation_id = a.conversation_id AND l.process = a.process"
)


def _answerable(row_expires: float | None, process: str, lease_expires: float) -> bool:
    now = time.time()
    return ((row_expires is None or row_expires > now) and lease_expires > now
            and writer_alive(process))


class ApprovalTable:
    """The shared-questions part of :class:`~desktop_agent.store.store.Store`."""

    def __init__(self, db: Engine) -> None:
        self._db = db

    def open_approval(self, conversation_id: str, tool_use_id: str,
                      question: dict[str, Any], expires_at: float | None) -> None:
        """Record a question this process's turn waits on (it holds the turn lease).

        Rows other processes left on the conversation are deleted: whoever wrote
        them no longer runs its turn, since this process holds the lease.
        """
        me = current_writer()
        with self._db.writing() as conn:
            conn.execute("DELETE FROM approvals WHERE conversation_id = ? AND process <> ?",
                         (conversation_id, me))
            conn.execute(
                "INSERT INTO approvals(conversation_id, tool_use_id, process, question,"
                " asked_at, expires_at, status, answer) VALUES (?, ?, ?, ?, ?, ?, 'open', NULL)"
                " ON CONFLICT(conversation_id, tool_use_id) DO UPDATE SET"
                " process = excluded.process, question = excluded.question,"
                " asked_at = excluded.asked_at, expires_at = excluded.expires_at,"
                " status = 'open', answer = NULL",
                (conversation_id, tool_use_id, me, dumps(question), time.time(), expires_at),
            )

    def open_approvals(self, conversation_id: str) -> list[dict[str, Any]]:
        """The questions still answerable on the conversation, oldest first."""
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT a.question, a.expires_at, a.process, l.expires_at" + _LIVE +
                " WHERE a.conversation_id = ? AND a.status = 'open' ORDER BY a.asked_at",
                (conversation_id,),
            ).fetchall()
        return [json.loads(row[0]) for row in rows if _answerable(row[1], row[2], row[3])]

    def answer_approval(self, conversation_id: str, tool_use_id: str,
                        answer: dict[str, Any]) -> bool:
        """Answer an open question; False when none is open (answered, closed, expired).

        The replica running the turn is told when this commits.
        """
        with self._db.writing() as conn:
            if not self._still_answerable(conn, conversation_id, tool_use_id):
                return False
            conn.execute(
                "UPDATE approvals SET status = 'answered', answer = ?"
                " WHERE conversation_id = ? AND tool_use_id = ? AND status = 'open'",
                (dumps(answer), conversation_id, tool_use_id),
            )
            self._db.dialect.approval_answered(conn, conversation_id)
        return True

    @staticmethod
    def _still_answerable(conn: SqlConnection, conversation_id: str, tool_use_id: str) -> bool:
        row = conn.execute(
            "SELECT a.expires_at, a.process, l.expires_at" + _LIVE +
            " WHERE a.conversation_id = ? AND a.tool_use_id = ? AND a.status = 'open'",
            (conversation_id, tool_use_id),
        ).fetchone()
        return row is not None and _answerable(row[0], row[1], row[2])

    def answered_approvals(self, conversation_id: str) -> list[tuple[str, dict[str, Any]]]:
        """``(tool use id, answer)`` of this process's questions answered and not yet closed."""
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT tool_use_id, answer FROM approvals WHERE conversation_id = ?"
                " AND process = ? AND status = 'answered'",
                (conversation_id, current_writer()),
            ).fetchall()
        return [(str(row[0]), json.loads(row[1])) for row in rows]

    def close_approval(self, conversation_id: str, tool_use_id: str) -> dict[str, Any] | None:
        """Close this process's question; returns the answer if one committed first."""
        with self._db.writing() as conn:
            row = conn.execute(
                "DELETE FROM approvals WHERE conversation_id = ? AND tool_use_id = ?"
                " AND process = ? RETURNING status, answer",
                (conversation_id, tool_use_id, current_writer()),
            ).fetchone()
        if row is None or row[0] != "answered" or row[1] is None:
            return None
        answer: dict[str, Any] = json.loads(row[1])
        return answer
