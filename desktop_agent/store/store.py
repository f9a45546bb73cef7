"""Conversations on disk: the one place history is read from and written to.

A synchronous API over one SQLite file, or over one PostgreSQL database shared
by several ``desktop-agent serve`` replicas (``Store.open("postgresql://...")``;
see :mod:`~desktop_agent.store.engine` for how one store runs on two engines).
One :class:`Store` may be shared by every thread of a process (on SQLite calls
are serialised by a lock, on PostgreSQL each thread uses a connection of a small
pool, and each write is a short transaction that takes the engine's write lock);
other processes may open the same file or database at the same time.

Messages form a tree: each has a parent, so editing or regenerating adds a
sibling branch instead of overwriting, and the conversation remembers which
leaf is active. Reading the active branch walks parents up from that leaf and
stops after the requested number of messages, so opening a 10,000-message
conversation reads only the page that is shown.

:class:`Store` is composed of one part per responsibility, each in its own
module and each handed the one :class:`~desktop_agent.store.engine.Engine`
(connection, lock, transactions; SQLite's is
:class:`~desktop_agent.store.transactions.Database`):
:class:`~desktop_agent.store.conversation_crud.ConversationCrud`,
:class:`~desktop_agent.store.message_writes.MessageWrites`,
:class:`~desktop_agent.store.message_tree.MessageTree`,
:class:`~desktop_agent.store.full_text_search.FullTextSearch`,
:class:`~desktop_agent.store.app_settings.AppSettings`,
:class:`~desktop_agent.store.cross_process.CrossProcess` (change token, turn
lease), :class:`~desktop_agent.store.event_table.EventTable` and, on PostgreSQL
only, :class:`~desktop_agent.store.sealed_secrets.SealedSecrets`,
:class:`~desktop_agent.store.approval_table.ApprovalTable` (tool-call questions
shared by replicas) and :class:`~desktop_agent.store.callback_rows.CallbackRows`
(HTTP callbacks shared by replicas).

Callers use ``store.add_message(...)``, not ``store.writes.add_message(...)``:
the split into parts is this package's business, and about 500 call sites in
the window, the server, the session layer, the tests and the benches would
otherwise name which part holds what (and move when a method moves, or when a
second engine behind the same interface splits it differently). The repeated
signatures that a hand-written facade needed are gone instead: each public
name is a :class:`~desktop_agent.store.part_method.PartMethod` of its part's
method, so a signature and its docstring change in one place, the part, and
type checkers, ``inspect.signature`` and ``help()`` see them there.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Self

from desktop_agent.appdata import paths
from desktop_agent.store import schema
from desktop_agent.store.app_settings import AppSettings
from desktop_agent.store.approval_table import ApprovalTable
from desktop_agent.store.callback_rows import CallbackRows
from desktop_agent.store.connection import check_is_ours, connect
from desktop_agent.store.conversation_crud import ConversationCrud
from desktop_agent.store.cross_process import CrossProcess
from desktop_agent.store.dialects import EventsCommitted
from desktop_agent.store.engine import Engine, engine_path
from desktop_agent.store.errors import DatabaseUnusableError
from desktop_agent.store.event_table import EventTable
from desktop_agent.store.full_text_search import FullTextSearch
from desktop_agent.store.message_tree import MessageTree
from desktop_agent.store.message_writes import MessageWrites
from desktop_agent.store.part_method import PartMethod
from desktop_agent.store.sealed_secrets import SealedSecrets
from desktop_agent.store.sql_connection import SqlConnection
from desktop_agent.store.transactions import Database

if TYPE_CHECKING:
    from desktop_agent.store.store_copy import CopyCounts

DATABASE_URL_SCHEMES = ("postgresql://", "postgres://")


def is_database_url(text: str) -> bool:
    """True for a PostgreSQL URL (``postgresql://...``), as opposed to a SQLite file's path."""
    return text.strip().lower().startswith(DATABASE_URL_SCHEMES)


def _open_postgres(url: str) -> Engine:
    try:
        from desktop_agent.store.postgres.postgres_database import PostgresDatabase
    except ImportError as exc:
        raise DatabaseUnusableError(
            "A PostgreSQL database needs the PostgreSQL driver, which is not installed "
            f"here ({exc.name or exc}): pip install 'desktop-agent[postgres]'. "
            "The one-file binary runs on SQLite only."
        ) from exc
    return PostgresDatabase(url)


def _open_sqlite(path: Path) -> Database:
    conn = connect(path)
    try:
        check_is_ours(conn, path, schema.schema_version(conn))
        schema.migrate(conn, path)
    except BaseException:
        conn.close()
        raise
    return Database(conn, path)


class Store:
    """The conversation database.

    Attributes:
        path: The SQLite file; None on PostgreSQL.
        location: The file, or the PostgreSQL URL without its password (for messages).
        engine: ``"sqlite"`` or ``"postgresql"``.
    """

    def __init__(self, db: Engine) -> None:
        self._db = db
        self.path = engine_path(db)
        self.location = db.location
        self.engine = db.dialect.name
        self._conversations = ConversationCrud(self._db)
        self._writes = MessageWrites(self._db)
        self._tree = MessageTree(self._db)
        self._search = FullTextSearch(self._db)
        self._app_settings = AppSettings(self._db)
        self._cross = CrossProcess(self._db)
        self._events = EventTable(self._db)
        self._sealed = SealedSecrets(self._db)
        self._approvals = ApprovalTable(self._db)
        self._callbacks = CallbackRows(self._db)

    @classmethod
    def open(cls, path: Path | str | None = None, *, recover: bool = True) -> Store:
        """Open (creating and migrating as needed) the database.

        Args:
            path: The SQLite file (default
                :func:`desktop_agent.appdata.paths.database_path`), or a
                ``postgresql://user:password@host:port/database`` URL.
            recover: Mark replies left "streaming" by a process that no longer runs
                as "interrupted" (see :meth:`recover_interrupted`).

        Raises:
            DatabaseUnusableError: The file is damaged, foreign or from a newer app;
                the PostgreSQL server cannot be reached or refuses the login.
        """
        if isinstance(path, str) and is_database_url(path):
            store = cls(_open_postgres(path))
        else:
            store = cls(_open_sqlite(Path(path) if path is not None else paths.database_path()))
        if recover:
            try:
                store.recover_interrupted()
            except BaseException:
                store.close()
                raise
        return store

    def close(self) -> None:
        """Close the file; later calls raise :class:`StoreClosedError`. Idempotent."""
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def copy_from(self, source: Store) -> CopyCounts:
        """Copy every conversation, message, event and app setting of ``source`` here, ids kept.

        One transaction: all or nothing. This store must hold no conversations
        (see :mod:`~desktop_agent.store.store_copy`).

        Raises:
            TargetNotEmptyError: This store already holds conversations.
        """
        from desktop_agent.store.store_copy import copy_rows  # only copy-store needs it

        return copy_rows(source._db, self._db)

    def watch_events(self, on_commit: EventsCommitted) -> Callable[[], None] | None:
        """Hear events other processes append, as they commit; returns a stop function.

        ``on_commit({conversation_id: newest_event_id, ...}, carried)`` is called
        from a thread of the store's, once per commit heard; ``carried`` are the
        events that came whole with the news (the small ones), in order. PostgreSQL pushes them
        (LISTEN/NOTIFY); on SQLite this returns None and readers poll
        :meth:`last_event_id` instead.
        """
        return self._db.watch_events(on_commit)

    def watch_approvals(self, on_answer: Callable[[str], None]) -> Callable[[], None] | None:
        """Hear answers to this process's tool-call questions; returns a stop function.

        ``on_answer(conversation_id)`` is called from a thread of the store's when
        any process answers a question of that conversation (PostgreSQL's
        LISTEN/NOTIFY). None on SQLite, where questions are not shared: the
        methods of :mod:`~desktop_agent.store.approval_table` are for PostgreSQL.
        """
        return self._db.watch_approvals(on_answer)

    def check_reachable(self) -> None:
        """Ask the database one trivial question (a readiness probe's).

        Raises:
            DatabaseUnavailableError: The database server cannot be reached now.
            DatabaseAccessError: It answered with an error.
        """
        with self._db.reading() as conn:
            conn.execute("SELECT 1").fetchone()

    def _reading(self) -> AbstractContextManager[SqlConnection]:
        """The raw connection under the store's lock (tests inspect the database with it)."""
        return self._db.reading()

    # The public API: each name is its part's method (signature and docstring live there).
    # -- conversation_crud -----------------------------------------------------------------
    create_conversation = PartMethod("_conversations", ConversationCrud.create_conversation)
    get_conversation = PartMethod("_conversations", ConversationCrud.get_conversation)
    list_conversations = PartMethod("_conversations", ConversationCrud.list_conversations)
    count_conversations = PartMethod("_conversations", ConversationCrud.count_conversations)
    update_conversation = PartMethod("_conversations", ConversationCrud.update_conversation)
    patch_settings = PartMethod("_conversations", ConversationCrud.patch_settings)
    delete_conversation = PartMethod("_conversations", ConversationCrud.delete_conversation)
    insert_conversations = PartMethod("_conversations", ConversationCrud.insert_conversations)
    # -- message_writes --------------------------------------------------------------------
    add_message = PartMethod("_writes", MessageWrites.add_message)
    checkpoint_message = PartMethod("_writes", MessageWrites.checkpoint_message)
    complete_message = PartMethod("_writes", MessageWrites.complete_message)
    update_message_metadata = PartMethod("_writes", MessageWrites.update_message_metadata)
    recover_interrupted = PartMethod("_writes", MessageWrites.recover_interrupted)
    # -- message_tree ----------------------------------------------------------------------
    get_message = PartMethod("_tree", MessageTree.get_message)
    active_path = PartMethod("_tree", MessageTree.active_path)
    conversation_with_path = PartMethod("_tree", MessageTree.conversation_with_path)
    newest_rows = PartMethod("_tree", MessageTree.newest_rows)
    path_to = PartMethod("_tree", MessageTree.path_to)
    children = PartMethod("_tree", MessageTree.children)
    siblings = PartMethod("_tree", MessageTree.siblings)
    branch_position = PartMethod("_tree", MessageTree.branch_position)
    latest_leaf = PartMethod("_tree", MessageTree.latest_leaf)
    set_active_leaf = PartMethod("_tree", MessageTree.set_active_leaf)
    all_messages = PartMethod("_tree", MessageTree.all_messages)
    count_messages = PartMethod("_tree", MessageTree.count_messages)
    # -- full_text_search ------------------------------------------------------------------
    search = PartMethod("_search", FullTextSearch.search)
    # -- app_settings ----------------------------------------------------------------------
    get_setting = PartMethod("_app_settings", AppSettings.get_setting)
    set_setting = PartMethod("_app_settings", AppSettings.set_setting)
    setting_once = PartMethod("_app_settings", AppSettings.setting_once)
    remember_recent = PartMethod("_app_settings", AppSettings.remember_recent)
    delete_setting = PartMethod("_app_settings", AppSettings.delete_setting)
    # -- cross_process ---------------------------------------------------------------------
    change_token = PartMethod("_cross", CrossProcess.change_token)
    turn_lease = PartMethod("_cross", CrossProcess.turn_lease)
    turn_lease_holder = PartMethod("_cross", CrossProcess.turn_lease_holder)
    # -- event_table -----------------------------------------------------------------------
    append_events = PartMethod("_events", EventTable.append_events)
    read_events = PartMethod("_events", EventTable.read_events)
    read_events_after = PartMethod("_events", EventTable.read_events_after)
    last_event_id = PartMethod("_events", EventTable.last_event_id)
    event_conversations = PartMethod("_events", EventTable.event_conversations)
    delete_events = PartMethod("_events", EventTable.delete_events)
    prune_live_output = PartMethod("_events", EventTable.prune_live_output)
    # -- sealed_secrets (PostgreSQL only) --------------------------------------------------
    sealed_secret = PartMethod("_sealed", SealedSecrets.sealed_secret)
    put_sealed_secret = PartMethod("_sealed", SealedSecrets.put_sealed_secret)
    delete_sealed_secret = PartMethod("_sealed", SealedSecrets.delete_sealed_secret)
    sealed_secret_names = PartMethod("_sealed", SealedSecrets.sealed_secret_names)
    all_sealed_secrets = PartMethod("_sealed", SealedSecrets.all_sealed_secrets)
    secret_key_check = PartMethod("_sealed", SealedSecrets.secret_key_check)
    # -- approval_table (PostgreSQL only: see watch_approvals) ------------------------------
    open_approval = PartMethod("_approvals", ApprovalTable.open_approval)
    open_approvals = PartMethod("_approvals", ApprovalTable.open_approvals)
    answer_approval = PartMethod("_approvals", ApprovalTable.answer_approval)
    answered_approvals = PartMethod("_approvals", ApprovalTable.answered_approvals)
    close_approval = PartMethod("_approvals", ApprovalTable.close_approval)
    # -- callback_rows (PostgreSQL only) ---------------------------------------------------
    add_callback_row = PartMethod("_callbacks", CallbackRows.add_callback_row)
    callback_rows = PartMethod("_callbacks", CallbackRows.callback_rows)
    delete_callback_row = PartMethod("_callbacks", CallbackRows.delete_callback_row)
    delete_conversation_callbacks = PartMethod("_callbacks",
                                               CallbackRows.delete_conversation_callbacks)
    watch_callbacks = PartMethod("_callbacks", CallbackRows.watch_callbacks)
