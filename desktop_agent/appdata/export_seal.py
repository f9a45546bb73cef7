"""A seal that tells this installation's own exports from anyone else's.

An imported conversation gets a working folder of its own, because a folder
named in a file from anywhere may be a trap (the data folder, another
conversation's folder, a path a link will redirect). A person exporting and
importing their own conversations should keep the folder they chose, though.
Exports therefore carry, per conversation, an HMAC of the working folder
under a key that never leaves the data folder: an import that finds a seal
this key made knows the app wrote that folder name, and keeps it if it still
passes :mod:`desktop_agent.appdata.workdir_rule`. Anyone else's file (or an
edited one) has no valid seal and gets a new folder.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from desktop_agent.appdata import paths

#: The settings key an export uses for the seal (dropped again on import).
SEAL_KEY = "workdir_seal"
_KEY_FILE = "export-seal.key"


def _key() -> bytes:
    """The installation's seal key, made on first use (private to the user)."""
    path: Path = paths.data_dir() / _KEY_FILE
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_bytes()
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key


def seal(conversation_id: str, workdir: str) -> str:
    """The seal of one conversation's working folder, as exported."""
    message = f"{conversation_id}\x00{workdir}".encode("utf-8", "surrogateescape")
    return hmac.new(_key(), message, hashlib.sha256).hexdigest()


def sealed_by_us(conversation_id: str, workdir: str, value: object) -> bool:
    """True when ``value`` is this installation's seal of that folder for that conversation."""
    if not isinstance(value, str):
        return False
    return hmac.compare_digest(seal(conversation_id, workdir), value)
