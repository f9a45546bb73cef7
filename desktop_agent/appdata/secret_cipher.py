"""The key every ``serve`` replica shares, and the cipher that seals secrets with it.

On a server cluster there is no desktop keyring, so secrets are kept in the shared
database, sealed (see :mod:`~desktop_agent.appdata.encrypted_vault`). The key comes
from ``DESKTOP_AGENT_SECRET_KEY`` or a file (``serve --secret-key-file``), never from
the database: a copy of the database (a dump, a backup) without the key shows only
names and ciphertext.

AES-256-GCM from ``cryptography`` (not Fernet): its associated data binds each sealed
value to its secret's name, so a row copied under another name (say, one
conversation's token moved to another conversation whose commands print it) does not
open. A fresh 96-bit nonce per seal; a stored value reads ``v1.<base64url(nonce +
ciphertext and tag)>``, the ``v1`` leaving room for another scheme later.

Errors carry a sentence a person can act on (how to make a key, which key is wrong).
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

SECRET_KEY_VARIABLE = "DESKTOP_AGENT_SECRET_KEY"
"""The environment variable ``serve --database`` reads the secret key from."""

KEY_BYTES = 32
"""AES-256: a key is 32 random bytes, written as (URL-safe or standard) base64."""

MAKE_KEY_COMMAND = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
"""A command that prints a new key (``openssl rand -base64 32`` makes one too)."""

_VERSION = "v1."
_NONCE_BYTES = 12


class SecretKeyError(Exception):
    """The secret key is missing, unreadable or malformed (the message says how to fix it)."""


class WrongSecretKeyError(SecretKeyError):
    """A sealed value does not open with this key (another key sealed it, or it was altered)."""


def new_secret_key() -> str:
    """A fresh key, in the text form the variable and the key file take."""
    return secrets.token_urlsafe(KEY_BYTES)


def _how_to_make_one() -> str:
    return (
        f"Make one once with `{MAKE_KEY_COMMAND} > secret.key` (chmod 600), keep it safe, and "
        f"give every replica the same key: --secret-key-file secret.key, or "
        f"{SECRET_KEY_VARIABLE}=$(cat secret.key)"
    )


def parse_secret_key(text: str, source: str) -> bytes:
    """The 32 key bytes written in ``text``.

    Args:
        text: Base64 (URL-safe or standard, padding optional) of 32 bytes.
        source: Where the text came from, for the message.

    Raises:
        SecretKeyError: ``text`` is not such a key.
    """
    cleaned = "".join(text.split())
    try:
        padded = cleaned + "=" * (-len(cleaned) % 4)
        key = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise SecretKeyError(
            f"The secret key in {source} is not a key: it must be {KEY_BYTES} random bytes "
            f"written in base64 (44 characters, or 43 without the '='). {_how_to_make_one()}."
        )
    return key


def load_secret_key(key_file: Path | None, environ: Mapping[str, str] | None = None) -> bytes:
    """The secret key from ``key_file`` if given, else from ``DESKTOP_AGENT_SECRET_KEY``.

    Raises:
        SecretKeyError: Neither is given, the file cannot be read, or the key is malformed.
    """
    if key_file is not None:
        try:
            text = key_file.read_text(encoding="ascii")
        except FileNotFoundError:
            raise SecretKeyError(
                f"There is no secret key file at {key_file}. {_how_to_make_one()}."
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not text"
            raise SecretKeyError(
                f"The secret key file {key_file} could not be read ({detail})."
            ) from None
        return parse_secret_key(text, f"the file {key_file}")
    value = (os.environ if environ is None else environ).get(SECRET_KEY_VARIABLE, "").strip()
    if not value:
        raise SecretKeyError(
            "A server on a shared database keeps secrets (API keys, conversations' tokens) "
            "encrypted in that database, and needs the key to encrypt them with; none was "
            f"given. {_how_to_make_one()}. Without a key the server does not start: it never "
            "stores secrets in plain text."
        )
    return parse_secret_key(value, SECRET_KEY_VARIABLE)


class SecretCipher:
    """Seals and opens secret values with one key, each bound to its secret's name.

    Loads ``cryptography`` when made, so the window (which keeps secrets in the
    keyring) never imports it.
    """

    def __init__(self, key: bytes) -> None:
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as exc:
            raise SecretKeyError(
                "Encrypting secrets in the database needs the 'cryptography' package, which "
                "is not installed here: pip install 'desktop-agent[postgres]'."
            ) from exc
        if len(key) != KEY_BYTES:
            raise SecretKeyError(f"a secret key is {KEY_BYTES} bytes, not {len(key)}")
        self._aead = AESGCM(key)

    def seal(self, name: str, value: str) -> str:
        """``value`` encrypted under the key, bound to ``name``, as text for a TEXT column."""
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, value.encode("utf-8"), name.encode("utf-8"))
        return _VERSION + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(self, name: str, sealed: str) -> str:
        """The value :meth:`seal` sealed under ``name``.

        Raises:
            WrongSecretKeyError: Another key sealed it, it was sealed for another name,
                or it was altered.
        """
        from cryptography.exceptions import InvalidTag

        try:
            if not sealed.startswith(_VERSION):
                raise ValueError("unknown format")
            raw = base64.urlsafe_b64decode(sealed[len(_VERSION):].encode("ascii"))
            plain = self._aead.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:],
                                       name.encode("utf-8"))
            return plain.decode("utf-8")
        except (InvalidTag, ValueError, binascii.Error, UnicodeError):
            raise WrongSecretKeyError(
                f"the stored value of {name!r} does not open with this secret key"
            ) from None
