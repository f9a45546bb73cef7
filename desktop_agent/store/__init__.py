"""Conversations on disk: SQLite store, crash-safe autosave, JSON export and import.

No Qt here: the GUI and the REST server both use this package. Start with
:class:`Store`; :class:`StreamingReplyWriter` checkpoints a reply as it
streams; :mod:`desktop_agent.store.export_json`,
:mod:`desktop_agent.store.import_json` and
:mod:`desktop_agent.store.markdown_export` move conversations in and out.
"""

from desktop_agent.store.autosave import StreamingReplyWriter
from desktop_agent.store.errors import (
    DatabaseAccessError,
    DatabaseUnusableError,
    ImportFormatError,
    NotFoundError,
    SecretInSettingsError,
    StoreClosedError,
    StoreError,
)
from desktop_agent.store.export_json import export_conversations, write_export_file
from desktop_agent.store.import_json import import_data, import_files
from desktop_agent.store.markdown_export import conversation_to_markdown
from desktop_agent.store.records import (
    ConversationRecord,
    MessageRecord,
    NewConversation,
    NewMessage,
    SearchHit,
)
from desktop_agent.store.store import Store

__all__ = [
    "ConversationRecord",
    "DatabaseAccessError",
    "DatabaseUnusableError",
    "ImportFormatError",
    "MessageRecord",
    "NewConversation",
    "NewMessage",
    "NotFoundError",
    "SearchHit",
    "SecretInSettingsError",
    "Store",
    "StoreClosedError",
    "StoreError",
    "StreamingReplyWriter",
    "conversation_to_markdown",
    "export_conversations",
    "import_data",
    "import_files",
    "write_export_file",
]
