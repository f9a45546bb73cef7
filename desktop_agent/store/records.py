"""The plain records the store hands out.

Frozen dataclasses rather than row objects, so callers (the GUI's controllers,
the REST server) can pass them across threads and keep them after the store
closes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

MessageStatus = Literal["complete", "streaming", "interrupted", "error"]
MESSAGE_STATUSES: tuple[str, ...] = ("complete", "streaming", "interrupted", "error")


@dataclass(frozen=True)
class ConversationRecord:
    """One conversation's header.

    Attributes:
        id: Opaque identifier (a hex UUID).
        title: Shown in the sidebar and tab.
        created_at: Epoch seconds.
        updated_at: Epoch seconds of the last message or edit; the sidebar sorts on it.
        settings: Server, model, ``api_key_name`` (a keyring name, never a key),
            system prompt, sampling, tools, workdir.
        active_leaf_id: The last message of the branch shown, or None when empty.
    """

    id: str
    title: str
    created_at: float
    updated_at: float
    settings: dict[str, Any] = field(default_factory=dict)
    active_leaf_id: str | None = None


@dataclass(frozen=True)
class MessageRecord:
    """One message in a conversation's tree.

    Attributes:
        id: Opaque identifier (a hex UUID).
        conversation_id: The conversation it belongs to.
        parent_id: The message it answers or follows; None for a root.
        role: ``"user"``, ``"assistant"``, ``"tool"`` or ``"system"``.
        message: The OpenAI-format message dict, as sent to or received from the model.
        metadata: Time, model, usage, thinking, tool-call status, approval decisions.
        status: ``"complete"``, ``"streaming"`` (being written), ``"interrupted"``
            (the app stopped mid-stream) or ``"error"``.
        created_at: Epoch seconds.
        depth: Number of ancestors; a first shown message with ``depth > 0`` means
            older messages can be paged in.
    """

    id: str
    conversation_id: str
    parent_id: str | None
    role: str
    message: dict[str, Any]
    metadata: dict[str, Any]
    status: str
    created_at: float
    depth: int = 0


@dataclass(frozen=True)
class SearchHit:
    """A message whose text matched a search.

    Attributes:
        conversation_id: Where the match is.
        message_id: The matching message.
        snippet: A short excerpt with the matched words wrapped in ``[`` ``]``.
    """

    conversation_id: str
    message_id: str
    snippet: str


@dataclass(frozen=True)
class NewMessage:
    """A message to insert in bulk (imports); ids are local to the batch.

    Attributes:
        key: The message's id in the source (remapped to a fresh id on insert).
        parent_key: The source id of its parent, or None for a root.
        message: The OpenAI-format message dict.
        metadata: Per-message metadata.
        status: One of :data:`MESSAGE_STATUSES` (``"streaming"`` is stored as ``"interrupted"``).
        created_at: Epoch seconds.
    """

    key: str
    parent_key: str | None
    message: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    status: str = "complete"
    created_at: float | None = None


@dataclass(frozen=True)
class NewConversation:
    """A whole conversation to insert in one go (imports, benchmarks).

    Attributes:
        title: The title.
        settings: Conversation settings (no secrets).
        messages: Parents before children.
        active_leaf_key: The source id of the active leaf; None means the last message.
        created_at: Epoch seconds; None means now.
        updated_at: Epoch seconds; None means now (an import shows at the top of the list).
    """

    title: str
    settings: dict[str, Any]
    messages: list[NewMessage]
    active_leaf_key: str | None = None
    created_at: float | None = None
    updated_at: float | None = None


@dataclass(frozen=True)
class ChangeToken:
    """A cheap fingerprint of the database's state, for polling (see ``Store.change_token``).

    Two tokens from one :class:`~desktop_agent.store.store.Store` differ when
    something was committed in between.

    Attributes:
        external: SQLite's ``PRAGMA data_version`` of the store's connection:
            changes when another connection (another process: the REST server,
            ``desktop-agent import``, a second window) committed.
        local: Commits made through this store itself.
    """

    external: int
    local: int

    def changed_elsewhere(self, since: ChangeToken) -> bool:
        """True when another process (or connection) wrote after ``since`` was taken."""
        return self.external != since.external
