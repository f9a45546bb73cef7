"""Sealed secret values in the shared database (PostgreSQL), for ``serve`` replicas.

The rows under :class:`~desktop_agent.appdata.encrypted_vault.EncryptedVault`: a
secret's name (readable: names are not secret) and its value as sealed by the
replicas' key. This part never sees a value in the clear; sealing and opening happen
in :mod:`desktop_agent.appdata` with a key that is never stored here.

PostgreSQL only: the desktop and one ``serve`` on SQLite keep secrets in the OS
keyring, so a table in every desktop's file would cost an upgrade (and its backup
copy) for nothing. On SQLite these calls raise :class:`StoreError` with a sentence.
"""

from __future__ import annotations

import time

from desktop_agent.store.engine import Engine
from desktop_agent.store.errors import StoreError


class SealedSecrets:
    """The sealed-secrets part of :class:`~desktop_agent.store.store.Store`."""

    def __init__(self, db: Engine) -> None:
        self._db = db

    def _require_table(self) -> None:
        if self._db.dialect.name != "postgresql":
            raise StoreError(
                "Secrets are kept in the database on PostgreSQL only (serve --database); "
                "with a SQLite file they stay in the OS keyring."
            )

    def sealed_secret(self, name: str) -> str | None:
        """The sealed value stored under ``name``, or None."""
        self._require_table()
        with self._db.reading() as conn:
            row = conn.execute("SELECT sealed FROM secrets WHERE name = ?", (name,)).fetchone()
        return str(row[0]) if row else None

    def put_sealed_secret(self, name: str, sealed: str) -> None:
        """Store (or replace) the sealed value of ``name``."""
        self._require_table()
        with self._db.writing() as conn:
            conn.execute(
                "INSERT INTO secrets(name, sealed, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT(name) DO UPDATE SET sealed = excluded.sealed,"
                " updated_at = excluded.updated_at",
                (name, sealed, time.time()),
            )

    def delete_sealed_secret(self, name: str) -> None:
        """Forget ``name``; a missing name is not an error."""
        self._require_table()
        with self._db.writing() as conn:
            conn.execute("DELETE FROM secrets WHERE name = ?", (name,))

    def sealed_secret_names(self, prefix: str = "") -> list[str]:
        """Sorted names starting with ``prefix`` (compared as text, not as a LIKE pattern)."""
        self._require_table()
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT name FROM secrets WHERE substr(name, 1, ?) = ?",
                (len(prefix), prefix),
            ).fetchall()
        return sorted(str(row[0]) for row in rows)

    def all_sealed_secrets(self) -> list[tuple[str, str]]:
        """Every ``(name, sealed value)``, for blanking known values out of exports."""
        self._require_table()
        with self._db.reading() as conn:
            rows = conn.execute("SELECT name, sealed FROM secrets ORDER BY name").fetchall()
        return [(str(row[0]), str(row[1])) for row in rows]

    def secret_key_check(self, proposed: str) -> str:
        """The key check sealed by the first replica; ``proposed`` becomes it if none is kept.

        Two replicas starting at once both propose; the first write wins and both
        read it back, so both compare their key with the same check.
        """
        self._require_table()
        with self._db.writing() as conn:
            conn.execute(
                "INSERT INTO secret_key_check(id, sealed) VALUES (1, ?)"
                " ON CONFLICT(id) DO NOTHING",
                (proposed,),
            )
            row = conn.execute("SELECT sealed FROM secret_key_check WHERE id = 1").fetchone()
        return str(row[0])
