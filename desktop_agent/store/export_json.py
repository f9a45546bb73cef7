"""Exporting conversations to the documented JSON format.

An export holds each conversation's settings and whole message tree (every
branch, with thinking, tool calls, tool results and approval decisions kept
in the per-message metadata) but never a key: settings name keys that live in
the keyring, key-like values in settings and metadata are redacted, and every
secret value the app knows is blanked wherever it appears.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from desktop_agent.store.errors import NotFoundError
from desktop_agent.store.export_format import FORMAT_NAME, FORMAT_VERSION
from desktop_agent.store.secret_scrub import REDACTED, scrub
from desktop_agent.store.store import Store


def _app_version() -> str:
    try:
        from importlib.metadata import version

        return version("desktop-agent")
    except Exception:  # noqa: BLE001 - not installed (running from a checkout)
        return "unknown"


def secret_values_to_blank() -> list[str]:
    """Every secret value the app can resolve, to blank in exports."""
    from desktop_agent.appdata.secrets import known_secret_values

    return known_secret_values()


def blank_values(value: Any, secrets: list[str]) -> Any:
    """A copy of ``value`` with every occurrence of each secret replaced."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            if len(secret) >= 4 and secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {k: blank_values(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [blank_values(v, secrets) for v in value]
    return value


def export_conversations(
    store: Store,
    conversation_ids: Iterable[str] | None = None,
    *,
    secret_values: list[str] | None = None,
) -> dict[str, Any]:
    """The export document for some conversations (None: all, newest first).

    Args:
        store: Where the conversations are.
        conversation_ids: Which to export; None exports every conversation.
        secret_values: Values to blank wherever they appear; default: every
            secret :mod:`desktop_agent.appdata.secrets` can resolve.

    Raises:
        NotFoundError: An id names no conversation.
    """
    if conversation_ids is None:
        ids = [c.id for c in store.list_conversations(limit=-1)]
    else:
        ids = list(conversation_ids)
    secrets = secret_values_to_blank() if secret_values is None else secret_values
    conversations = []
    for conversation_id in ids:
        record = store.get_conversation(conversation_id)
        if record is None:
            raise NotFoundError(f"no conversation {conversation_id}")
        messages = [
            {
                "id": m.id,
                "parent_id": m.parent_id,
                "message": m.message,
                "metadata": scrub(m.metadata),
                "status": m.status,
                "created_at": m.created_at,
            }
            for m in store.all_messages(conversation_id)
        ]
        conversations.append(
            {
                "id": record.id,
                "title": record.title,
                "created_at": record.created_at,
                "updated_at": record.updated_at,
                "settings": _sealed(record.id, scrub(record.settings)),
                "active_leaf_id": record.active_leaf_id,
                "messages": messages,
            }
        )
    document = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "app_version": _app_version(),
        "conversations": conversations,
    }
    return blank_values(document, secrets)  # type: ignore[no-any-return]


def write_text_atomically(path: Path, text: str) -> None:
    """Write a file so that a failure never leaves half of it behind."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def export_json_text(store: Store, conversation_ids: Iterable[str] | None = None) -> str:
    """The export document as indented JSON text."""
    document = export_conversations(store, conversation_ids)
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def write_export_file(
    store: Store, path: Path | str, conversation_ids: Iterable[str] | None = None
) -> int:
    """Export conversations to a JSON file (written atomically); returns how many."""
    document = export_conversations(store, conversation_ids)
    write_text_atomically(Path(path), json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    return len(document["conversations"])


def _sealed(conversation_id: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with this installation's seal of the working folder, if it names one.

    The seal lets a re-import of this export keep the folder (see
    :mod:`desktop_agent.appdata.export_seal`); no other file can.
    """
    workdir = settings.get("workdir")
    if not isinstance(workdir, str):
        return settings
    from desktop_agent.appdata.export_seal import SEAL_KEY, seal

    return {**settings, SEAL_KEY: seal(conversation_id, workdir)}
