"""A few PostgreSQL connections shared by a replica's threads, one per thread at a time.

A ``serve`` replica's threads all use the store at once: the event writer commits
batches, the event listener's reads fetch other replicas' events, and request
handlers read conversations. On one shared connection every one of them waited
for the others, and a writer waiting for another replica's write lock held up
every read of its own replica with it (measured with ``bench/server_load.py
--database``: reads waited up to 0.6 s for the one connection). With a pool,
a read runs beside a write of the same replica, as it does beside another
replica's.

Connections are made on first need, up to :data:`POOL_SIZE`, and handed out last
in, first out, so a replica that does one thing at a time keeps using one
connection (and one backend's warm caches). A connection found broken (its
server restarted, its backend was ended) is dropped when it is handed back, and
the next call makes a new one: a lost connection costs the call that met it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg

from desktop_agent.store.errors import StoreClosedError

POOL_SIZE = 6
"""Connections per replica at most: its writer, its listener's reads and a few requests.

More buy nothing on a two-core machine (each busy connection is a busy backend
process) and cost the database server memory per replica."""

Connection = psycopg.Connection[Any]

IDLE = psycopg.pq.TransactionStatus.IDLE


class ConnectionPool:
    """Up to ``size`` connections made by ``connect``; see the module docstring.

    Attributes:
        backend_pids: The server processes of the pool's open connections, to tell
            this process's own NOTIFYs from other replicas' (read from any thread).
    """

    def __init__(self, connect: Callable[[], Connection], size: int = POOL_SIZE) -> None:
        self._connect = connect
        self._size = size
        self._idle: list[Connection] = []
        self.backend_pids: frozenset[int] = frozenset()
        self._made = 0
        self._closed = False
        self._free = threading.Condition()

    def take(self) -> Connection:
        """A connection for this thread alone until :meth:`give_back`; waits when all are out.

        Raises:
            StoreClosedError: The pool was closed.
            DatabaseUnusableError: A new connection could not be made (from ``connect``).
        """
        with self._free:
            while True:
                if self._closed:
                    raise StoreClosedError("the conversation store is closed")
                if self._idle:
                    return self._idle.pop()
                if self._made < self._size:
                    self._made += 1
                    break
                self._free.wait()
        try:
            conn = self._connect()
        except BaseException:
            with self._free:
                self._made -= 1
                self._free.notify()
            raise
        with self._free:
            self.backend_pids = self.backend_pids | {conn.info.backend_pid}
        return conn

    def give_back(self, conn: Connection) -> None:
        """Return a connection taken with :meth:`take`; a broken one is closed and forgotten.

        With a broken one go the idle ones: what broke it (the server stopped or
        restarted) ended them too, and each would fail the next call that took it.
        """
        stale: list[Connection] = []
        with self._free:
            keep = not (self._closed or conn.closed or conn.broken
                        or conn.info.transaction_status != IDLE)
            if keep:
                self._idle.append(conn)
            else:
                self._made -= 1
                self.backend_pids = self.backend_pids - {conn.info.backend_pid}
                if conn.broken:
                    stale, self._idle = self._idle, []
                    self._made -= len(stale)
                    self.backend_pids = self.backend_pids - {c.info.backend_pid for c in stale}
            self._free.notify_all()
        if not keep:
            conn.close()
        for idle in stale:
            idle.close()

    def close(self) -> None:
        """Close the idle connections now and the others as they come back. Idempotent."""
        with self._free:
            self._closed = True
            idle, self._idle = self._idle, []
            self.backend_pids = self.backend_pids - {conn.info.backend_pid for conn in idle}
            self._free.notify_all()
        for conn in idle:
            conn.close()
