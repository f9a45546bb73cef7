"""Export and import behind the File menu, with results and problems in words.

The store does the work (:mod:`desktop_agent.store.export_json`,
``import_json``, ``markdown_export``); this module turns its outcomes and
errors into sentences for the status bar or a notice, and never lets a
malformed file import half-way (the store's import is all or nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.store import ConversationRecord, Store

log = logging.getLogger("desktop_agent.gui.transfer")


@dataclass(slots=True)
class TransferResult:
    """What an export or import did.

    Attributes:
        ok: Whether it worked.
        message: A sentence for the person.
        imported: Conversations created by an import.
    """

    ok: bool
    message: str
    imported: list[ConversationRecord] = field(default_factory=list)


def export_json(store: Store, path: str | Path, conversation_ids: Iterable[str] | None) -> \
        TransferResult:
    """Write conversations (None: all) to a JSON export file."""
    from desktop_agent.store import StoreError, write_export_file

    try:
        count = write_export_file(store, Path(path), conversation_ids)
    except (OSError, StoreError) as exc:
        log.warning("export failed: %s", exc)
        return TransferResult(False, f"Could not export to {path}: {exc}")
    noun = "conversation" if count == 1 else "conversations"
    return TransferResult(True, f"Exported {count} {noun} to {path}.")


def export_markdown(store: Store, path: str | Path, conversation_id: str) -> TransferResult:
    """Write one conversation's active branch as Markdown for reading."""
    from desktop_agent.store import StoreError, conversation_to_markdown
    from desktop_agent.store.export_json import write_text_atomically

    try:
        write_text_atomically(Path(path), conversation_to_markdown(store, conversation_id))
    except (OSError, StoreError) as exc:
        log.warning("markdown export failed: %s", exc)
        return TransferResult(False, f"Could not export to {path}: {exc}")
    return TransferResult(True, f"Saved the conversation as Markdown to {path}.")


def import_files(store: Store, paths: Iterable[str | Path]) -> TransferResult:
    """Import files as new conversations: all of them, or none with the reason."""
    from desktop_agent.store import ImportFormatError, StoreError, import_files

    resets: list[str] = []
    try:
        records = import_files(store, [Path(p) for p in paths], report=resets)
    except ImportFormatError as exc:
        return TransferResult(False, f"Nothing was imported: {exc}")
    except (OSError, StoreError) as exc:
        log.warning("import failed: %s", exc)
        return TransferResult(False, f"Nothing was imported: {exc}")
    from desktop_agent.session import drop_invalid_settings

    resets.extend(drop_invalid_settings(store, records))
    noun = "conversation" if len(records) == 1 else "conversations"
    reset = (" Reset for safety: " + " ".join(resets)) if resets else ""
    return TransferResult(True, f"Imported {len(records)} {noun}.{reset}", list(records))
