"""Secrets in the shared database, sealed with the replicas' key: the keyring of a cluster.

``desktop-agent serve --database`` has no desktop keyring, and several replicas must
see the same secrets (a token set through replica A reaches a command run by replica
B). :class:`EncryptedVault` keeps each value sealed by
:class:`~desktop_agent.appdata.secret_cipher.SecretCipher` in rows of the database
(names readable, values never in plain text) and is put behind the module functions
of :mod:`~desktop_agent.appdata.secrets` with ``use_vault``, so the session layer and
the routes do not know which vault is below.

The rows live in the store (this module knows only :class:`SealedSecretRows`, which
the store's part satisfies): appdata sits under the store and never imports it.

A key check (a known text sealed with the first replica's key) tells a replica given
another key, before it seals anything, that its key is not the cluster's: without it
that replica would store secrets the others cannot open.
"""

from __future__ import annotations

import logging
from typing import Protocol

from desktop_agent.appdata.secret_cipher import SecretCipher, WrongSecretKeyError
from desktop_agent.appdata.secrets import KeyringStatus, check_secret_name

logger = logging.getLogger("desktop_agent.appdata.secrets")

KEY_CHECK_NAME = "desktop-agent key check"
KEY_CHECK_TEXT = "the secret key of these replicas"


class SealedSecretRows(Protocol):
    """Where sealed values are kept (the store's ``secrets`` table); never sees a value."""

    def sealed_secret(self, name: str) -> str | None:
        """The sealed value stored under ``name``, or None."""
        ...

    def put_sealed_secret(self, name: str, sealed: str) -> None:
        """Store (or replace) the sealed value of ``name``."""
        ...

    def delete_sealed_secret(self, name: str) -> None:
        """Forget ``name``; a missing name is not an error."""
        ...

    def sealed_secret_names(self, prefix: str = "") -> list[str]:
        """Sorted names starting with ``prefix``."""
        ...

    def all_sealed_secrets(self) -> list[tuple[str, str]]:
        """Every ``(name, sealed value)``."""
        ...

    def secret_key_check(self, proposed: str) -> str:
        """The stored key check; ``proposed`` is stored first if there is none yet."""
        ...


class EncryptedVault:
    """Secrets by name, sealed in the database that every replica shares.

    Satisfies :class:`~desktop_agent.appdata.secrets.Vault`.

    Attributes:
        location: The database, named in sentences (no password).
    """

    def __init__(self, rows: SealedSecretRows, cipher: SecretCipher, location: str) -> None:
        self._rows = rows
        self._cipher = cipher
        self.location = location

    def check_key(self) -> None:
        """Make sure this key is the one the database's secrets were sealed with.

        The first replica on a database stores the key check; later ones compare.

        Raises:
            WrongSecretKeyError: With a sentence saying what to do.
        """
        stored = self._rows.secret_key_check(self._cipher.seal(KEY_CHECK_NAME, KEY_CHECK_TEXT))
        try:
            if self._cipher.open(KEY_CHECK_NAME, stored) == KEY_CHECK_TEXT:
                return
        except WrongSecretKeyError:
            pass
        raise WrongSecretKeyError(
            f"The secret key given does not open the secrets stored in {self.location}: they "
            "were encrypted with another key. Give this replica the same key as the others "
            "(DESKTOP_AGENT_SECRET_KEY or --secret-key-file); the database was left untouched."
        )

    def status(self) -> KeyringStatus:
        """Values persist (encrypted in the database), so keys survive a restart."""
        return KeyringStatus(
            True, "encrypted in the database",
            f"API keys are kept encrypted in the conversation database ({self.location}).",
        )

    def set(self, name: str, value: str) -> bool:
        """Seal and store a secret; always True (it persists)."""
        check_secret_name(name)
        if not isinstance(value, str) or not value:
            raise ValueError("a secret value must be a non-empty string")
        self._rows.put_sealed_secret(name, self._cipher.seal(name, value))
        return True

    def get(self, name: str) -> str | None:
        """The secret's value, or None when unknown or when its row does not open."""
        check_secret_name(name)
        sealed = self._rows.sealed_secret(name)
        return None if sealed is None else self._open(name, sealed)

    def delete(self, name: str) -> None:
        """Forget a secret; a missing name is not an error."""
        check_secret_name(name)
        self._rows.delete_sealed_secret(name)

    def names(self, prefix: str = "") -> list[str]:
        """Sorted names of stored secrets starting with ``prefix``."""
        return self._rows.sealed_secret_names(prefix)

    def known_values(self) -> list[str]:
        """Every value that opens, longest first (exports blank them)."""
        values = {self._open(name, sealed) for name, sealed in self._rows.all_sealed_secrets()}
        return sorted((v for v in values if v), key=len, reverse=True)

    def forget_session(self) -> None:
        """Nothing is held in memory; the database is untouched."""

    def _open(self, name: str, sealed: str) -> str | None:
        try:
            return self._cipher.open(name, sealed)
        except WrongSecretKeyError:
            # The key check passed at start, so this row was altered or copied in under
            # another name: treat it as absent rather than hand out the wrong thing.
            logger.warning("the stored secret %r does not open with this replica's key "
                           "(altered, or sealed under another name); ignored", name)
            return None
