"""Conversations on disk: SQLite store, crash-safe autosave, JSON export and import.

No Qt here: the GUI and the REST server both use this package. Start with
:class:`Store`; :class:`StreamingReplyWriter` checkpoints a reply as it
streams; :mod:`desktop_agent.store.export_json`,
:mod:`desktop_agent.store.import_json` and
:mod:`desktop_agent.store.markdown_export` move conversations in and out, and
their names load on first use (PEP 562): a window or server that never imports
or exports does not hold them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_agent.lazy_exports import lazy_exports
from desktop_agent.store.autosave import StreamingReplyWriter
from desktop_agent.store.errors import (
    ConversationBusyError,
    DatabaseAccessError,
    DatabaseUnavailableError,
    DatabaseUnusableError,
    ImportFormatError,
    NotFoundError,
    SecretInSettingsError,
    StaleParentError,
    StoreClosedError,
    StoreError,
    TextWithNulError,
    refuse_nul,
)
from desktop_agent.store.event_records import NewEvent, StoredEvent
from desktop_agent.store.message_writes import UNCHECKED
from desktop_agent.store.records import (
    ChangeToken,
    ConversationRecord,
    MessageRecord,
    NewConversation,
    NewMessage,
    SearchHit,
)
from desktop_agent.store.store import Store
from desktop_agent.store.turn_lease import TurnLease

if TYPE_CHECKING:
    from desktop_agent.store.export_json import export_conversations as export_conversations
    from desktop_agent.store.export_json import write_export_file as write_export_file
    from desktop_agent.store.import_json import import_data as import_data
    from desktop_agent.store.import_json import import_files as import_files
    from desktop_agent.store.markdown_export import (
        conversation_to_markdown as conversation_to_markdown,
    )
    from desktop_agent.store.store_history import StoreHistory as StoreHistory

#: Names of the import and export modules, loaded when first asked for.
_LAZY: dict[str, str] = {
    "export_conversations": "export_json",
    "write_export_file": "export_json",
    "import_data": "import_json",
    "import_files": "import_json",
    "conversation_to_markdown": "markdown_export",
    "StoreHistory": "store_history",
}

__all__ = [
    "UNCHECKED",
    "ChangeToken",
    "ConversationBusyError",
    "ConversationRecord",
    "DatabaseAccessError",
    "DatabaseUnavailableError",
    "DatabaseUnusableError",
    "ImportFormatError",
    "MessageRecord",
    "NewConversation",
    "NewEvent",
    "NewMessage",
    "NotFoundError",
    "SearchHit",
    "SecretInSettingsError",
    "StaleParentError",
    "Store",
    "StoreClosedError",
    "StoreError",
    "StoreHistory",
    "StoredEvent",
    "StreamingReplyWriter",
    "TextWithNulError",
    "TurnLease",
    "conversation_to_markdown",
    "export_conversations",
    "import_data",
    "import_files",
    "refuse_nul",
    "write_export_file",
]


__getattr__ = lazy_exports(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
