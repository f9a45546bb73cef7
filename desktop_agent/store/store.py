"""Conversations on disk: the one place history is read from and written to.

A synchronous API over one SQLite file. One :class:`Store` may be shared by
every thread of a process (calls are serialised by a lock and each write is a
short ``BEGIN IMMEDIATE`` transaction); other processes may open the same file
at the same time (SQLite's locks plus a busy timeout keep them apart).

Messages form a tree: each has a parent, so editing or regenerating adds a
sibling branch instead of overwriting, and the conversation remembers which
leaf is active. Reading the active branch walks parents up from that leaf and
stops after the requested number of messages, so opening a 10,000-message
conversation reads only the page that is shown.

:class:`Store` is assembled from one mixin per responsibility, each in its own
module over the shared connection in :mod:`desktop_agent.store.transactions`:
:mod:`~desktop_agent.store.conversation_crud`,
:mod:`~desktop_agent.store.message_writes`,
:mod:`~desktop_agent.store.message_tree`,
:mod:`~desktop_agent.store.full_text_search` and
:mod:`~desktop_agent.store.app_settings`. Mixins rather than a façade that
delegates to helpers, because the methods all share one connection, lock and
transaction helper: a façade would repeat every public signature and docstring
just to forward the call, while mixins keep each method written once and
``Store`` still one class with the same methods as before.
"""

from __future__ import annotations

from pathlib import Path

from desktop_agent import paths
from desktop_agent.store import schema
from desktop_agent.store.app_settings import AppSettings
from desktop_agent.store.connection import check_is_ours, connect
from desktop_agent.store.conversation_crud import ConversationCrud
from desktop_agent.store.full_text_search import FullTextSearch
from desktop_agent.store.message_tree import MessageTree
from desktop_agent.store.message_writes import MessageWrites


class Store(ConversationCrud, MessageWrites, MessageTree, FullTextSearch, AppSettings):
    """The conversation database.

    Attributes:
        path: The SQLite file.
    """

    @classmethod
    def open(cls, path: Path | str | None = None, *, recover: bool = True) -> Store:
        """Open (creating and migrating as needed) the database.

        Args:
            path: The SQLite file; default :func:`desktop_agent.paths.database_path`.
            recover: Mark replies left "streaming" by a process that no longer runs
                as "interrupted" (see :meth:`recover_interrupted`).

        Raises:
            DatabaseUnusableError: The file is damaged, foreign or from a newer app.
        """
        path = Path(path) if path is not None else paths.database_path()
        conn = connect(path)
        try:
            check_is_ours(conn, path, schema.schema_version(conn))
            schema.migrate(conn, path)
        except BaseException:
            conn.close()
            raise
        store = cls(conn, path)
        if recover:
            try:
                store.recover_interrupted()
            except BaseException:
                store.close()
                raise
        return store
