"""API keys and tokens at rest: the OS keyring, or this session's memory.

This is the only module that touches secret values outside a request. Values
go to the operating system's keyring (Secret Service, macOS Keychain, Windows
Credential Locker) under the service name ``desktop-agent``; the database,
settings and exports refer to a secret by its *name* only (e.g.
``"api:LM Studio"`` or ``"conv:<id>:GITHUB_TOKEN"``).

Where no usable keyring exists (a headless Linux without a Secret Service),
values are kept in memory for this session only and :func:`keyring_status`
says so; nothing is ever written to disk in the clear. Backends that would
store plain text (``keyrings.alt``'s file backends) count as unusable.

Keyrings cannot list their entries portably, so the names of persisted
secrets (names only, which are not secret) are indexed in a small JSON file
in the data folder; :func:`list_secret_names` reads it.

A ``serve`` cluster has no keyring: there :func:`use_vault` puts an
:class:`~desktop_agent.appdata.encrypted_vault.EncryptedVault` (values sealed in
the shared database) behind the same module functions, so the session layer and
the routes never learn which :class:`Vault` is below.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from desktop_agent.appdata import paths

SERVICE_NAME = "desktop-agent"

logger = logging.getLogger("desktop_agent.appdata.secrets")


def _keyring() -> Any:
    """The ``keyring`` package, imported on first use.

    Importing it reads every installed package's entry points (importlib_metadata,
    jaraco, email: about 60 ms and 10 MB); the window paints before any key is
    needed, so it is not imported at start-up.
    """
    import keyring
    import keyring.errors

    return keyring


@dataclass(frozen=True)
class KeyringStatus:
    """Whether secrets survive a restart, in words the app can show.

    Attributes:
        available: True when values are persisted in the OS keyring.
        backend: The keyring backend's name, e.g. ``"SecretService Keyring"``.
        message: A sentence for the person, e.g. why keys last only this session.
    """

    available: bool
    backend: str
    message: str


class Vault(Protocol):
    """Where secret values are kept: the keyring (:class:`SecretVault`) or a database."""

    def status(self) -> KeyringStatus:
        """Whether values persist, in words."""
        ...

    def set(self, name: str, value: str) -> bool:
        """Store a secret; True if it persists, False if kept for this session only."""
        ...

    def get(self, name: str) -> str | None:
        """The secret's value, or None when it is unknown."""
        ...

    def delete(self, name: str) -> None:
        """Forget a secret; a missing name is not an error."""
        ...

    def names(self, prefix: str = "") -> list[str]:
        """Sorted names of known secrets starting with ``prefix``."""
        ...

    def known_values(self) -> list[str]:
        """Every value the vault can resolve, longest first (for redacting exports)."""
        ...

    def forget_session(self) -> None:
        """Drop whatever is held for this session only."""
        ...


def _backend_name(backend: object) -> str:
    name = getattr(backend, "name", None)
    return name if isinstance(name, str) and name else type(backend).__name__


def _unusable_reason(backend: object) -> str | None:
    """Why a keyring backend cannot hold our secrets, or None if it can."""
    module = type(backend).__module__
    if module.startswith("keyring.backends.fail") or module.startswith("keyring.backends.null"):
        return "no system keyring was found"
    if module.startswith("keyrings.alt") or "plaintext" in type(backend).__name__.lower():
        return "the only keyring found stores files on disk, which Desktop Agent does not use"
    backends = getattr(backend, "backends", None)
    if module.startswith("keyring.backends.chainer"):
        usable = [b for b in backends or [] if _unusable_reason(b) is None]
        if not usable:
            return "no system keyring was found"
    return None


class SecretVault:
    """Secrets by name, in the OS keyring or (failing that) in memory.

    Thread-safe. The module-level functions use one shared vault; tests and
    tools can make their own with another service name or index file.

    Attributes:
        service: The keyring service name the values are stored under.
    """

    def __init__(self, service: str = SERVICE_NAME, names_file: Path | None = None) -> None:
        self.service = service
        self._names_file = names_file
        self._session: dict[str, str] = {}
        self._lock = threading.RLock()
        self._last_failure: str | None = None
        self._failed_backend: object | None = None

    # -- status -----------------------------------------------------------------

    def status(self) -> KeyringStatus:
        """Report whether values persist, and why not when they do not."""
        backend = _keyring().get_keyring()
        name = _backend_name(backend)
        reason = _unusable_reason(backend)
        failure = self._last_failure if self._failed_backend is backend else None
        if reason is None and failure is None:
            return KeyringStatus(True, name, f"API keys are kept in the system keyring ({name}).")
        why = reason or failure or "the keyring is unavailable"
        return KeyringStatus(
            False,
            name,
            f"API keys are kept for this session only: {why}. "
            "They are never written to disk in plain text; enter them again after a restart.",
        )

    # -- values -----------------------------------------------------------------

    def set(self, name: str, value: str) -> bool:
        """Store a secret; True if it went to the OS keyring, False if session-only."""
        check_secret_name(name)
        if not isinstance(value, str) or not value:
            raise ValueError("a secret value must be a non-empty string")
        with self._lock:
            backend = _keyring().get_keyring()
            reason = _unusable_reason(backend)
            if reason is None:
                try:
                    backend.set_password(self.service, name, value)
                except Exception as exc:  # noqa: BLE001 - any backend failure means "session only"
                    self._note_failure("set", name, exc)
                else:
                    self._last_failure = self._failed_backend = None
                    self._session.pop(name, None)
                    self._update_index(add=name)
                    return True
            self._session[name] = value
            return False

    def get(self, name: str) -> str | None:
        """The secret's value, or None when it is unknown (or the keyring refuses)."""
        check_secret_name(name)
        with self._lock:
            if name in self._session:
                return self._session[name]
            backend = _keyring().get_keyring()
            if _unusable_reason(backend) is not None:
                return None
            try:
                value: str | None = backend.get_password(self.service, name)
                return value
            except Exception as exc:  # noqa: BLE001 - any backend failure means session only
                self._note_failure("read", name, exc)
                return None

    def delete(self, name: str) -> None:
        """Forget a secret everywhere; a missing name is not an error."""
        check_secret_name(name)
        with self._lock:
            self._session.pop(name, None)
            backend = _keyring().get_keyring()
            if _unusable_reason(backend) is None:
                try:
                    backend.delete_password(self.service, name)
                except _keyring().errors.PasswordDeleteError:
                    pass
                except Exception as exc:  # noqa: BLE001 - any backend failure means session only
                    self._note_failure("delete", name, exc)
            self._update_index(remove=name)

    def names(self, prefix: str = "") -> list[str]:
        """Sorted names of known secrets (persisted and session-only)."""
        with self._lock:
            names = set(self._read_index()) | set(self._session)
        return sorted(n for n in names if n.startswith(prefix))

    def known_values(self) -> list[str]:
        """Every secret value this vault can resolve, for redacting exports.

        Longest first so that a value containing another is replaced whole.
        """
        values = {v for v in (self.get(n) for n in self.names()) if v}
        return sorted(values, key=len, reverse=True)

    def forget_session(self) -> None:
        """Drop the session-only secrets (what a restart does); the keyring is untouched."""
        with self._lock:
            self._session.clear()

    # -- internals ----------------------------------------------------------------

    def _note_failure(self, action: str, name: str, exc: Exception) -> None:
        # The exception text comes from the backend, never contains the value,
        # but may be long: keep its first line.
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        self._last_failure = f"the system keyring refused to {action} a key ({detail})"
        self._failed_backend = _keyring().get_keyring()
        logger.warning("keyring could not %s secret %r: %s", action, name, detail)

    def _index_path(self) -> Path:
        return self._names_file if self._names_file is not None else paths.secret_names_path()

    def _read_index(self) -> list[str]:
        path = self._index_path()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            logger.warning("secret name index %s is unreadable (%s); starting afresh", path, exc)
            return []
        names = data.get("names", []) if isinstance(data, dict) else []
        return [n for n in names if isinstance(n, str)]

    def _update_index(self, add: str | None = None, remove: str | None = None) -> None:
        names = set(self._read_index())
        before = set(names)
        if add:
            names.add(add)
        if remove:
            names.discard(remove)
        if names != before:
            _write_json_atomically(self._index_path(), {"version": 1, "names": sorted(names)})


def check_secret_name(name: str) -> None:
    """Refuse a name that is not a non-empty string (every vault's rule)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a secret name must be a non-empty string")


def _write_json_atomically(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_default_vault = SecretVault()
_active_vault: Vault = _default_vault


def default_vault() -> SecretVault:
    """The OS keyring's vault (the one in use unless :func:`use_vault` put another)."""
    return _default_vault


def active_vault() -> Vault:
    """The vault the module-level functions use now."""
    return _active_vault


def use_vault(vault: Vault) -> Vault:
    """Put ``vault`` behind the module-level functions; returns the one it replaces.

    ``serve --database`` puts the encrypted database vault here at start-up, before
    any request; the window never calls it and keeps the keyring.
    """
    global _active_vault
    previous, _active_vault = _active_vault, vault
    return previous


def set_secret(name: str, value: str) -> bool:
    """Store a secret; True if it persists (keyring or database), False if session-only."""
    return _active_vault.set(name, value)


def get_secret(name: str) -> str | None:
    """Resolve a secret's name to its value at the moment it is needed."""
    return _active_vault.get(name)


def delete_secret(name: str) -> None:
    """Forget a secret (keyring, session and name index; or the database's row)."""
    _active_vault.delete(name)


def list_secret_names(prefix: str = "") -> list[str]:
    """Names of stored secrets starting with ``prefix`` (names are not secret)."""
    return _active_vault.names(prefix)


def keyring_status() -> KeyringStatus:
    """Whether keys survive a restart, with a sentence to show the person."""
    return _active_vault.status()


def known_secret_values() -> list[str]:
    """All secret values the app knows, so exports can redact them wherever they appear."""
    return _active_vault.known_values()


def redact_known_secrets(text: str, values: Iterable[str] | None = None) -> str:
    """Replace every known secret value in ``text`` with ``[redacted]``."""
    for value in known_secret_values() if values is None else values:
        if value and len(value) >= 4:
            text = text.replace(value, "[redacted]")
    return text
