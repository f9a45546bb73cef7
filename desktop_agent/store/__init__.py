"""Conversations on disk: SQLite store, crash-safe autosave, JSON export and import.

No Qt here: the GUI and the REST server both use this package. Start with
:class:`Store`; :class:`StreamingReplyWriter` checkpoints a reply as it
streams; :mod:`desktop_agent.store.export_json`,
:mod:`desktop_agent.store.import_json` and
:mod:`desktop_agent.store.markdown_export` move conversations in and out.
"""

from desktop_agent.store.autosave import StreamingReplyWriter
from desktop_agent.store.errors import (
    ConversationBusyError,
    DatabaseAccessError,
    DatabaseUnusableError,
    ImportFormatError,
    NotFoundError,
    SecretInSettingsError,
    StaleParentError,
    StoreClosedError,
    StoreError,
)
from desktop_agent.store.event_records import NewEvent, StoredEvent
from desktop_agent.store.export_json import export_conversations, write_export_file
from desktop_agent.store.import_json import import_data, import_files
from desktop_agent.store.markdown_export import conversation_to_markdown
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

__all__ = [
    "UNCHECKED",
    "ChangeToken",
    "ConversationBusyError",
    "ConversationRecord",
    "DatabaseAccessError",
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
    "StoredEvent",
    "StreamingReplyWriter",
    "TurnLease",
    "conversation_to_markdown",
    "export_conversations",
    "import_data",
    "import_files",
    "write_export_file",
]
