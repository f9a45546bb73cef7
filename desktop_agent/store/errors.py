"""Errors the store raises, each with a sentence a person can read.

::

    StoreError
    ├── DatabaseUnusableError     the file is not a database, is damaged, or is from a newer app
    ├── DatabaseAccessError       a read or write failed (disk full, read-only, locked too long)
    │   └── DatabaseUnavailableError  the database server cannot be reached (also Unusable)
    ├── StoreClosedError          the store was used after close()
    ├── NotFoundError (KeyError)  no such conversation or message
    ├── SecretInSettingsError (ValueError)  a key value where only a key *name* belongs
    ├── TextWithNulError (ValueError)       a title with a NUL character (PostgreSQL refuses one)
    ├── ImportFormatError (ValueError)      an import file is malformed or foreign
    ├── ConversationBusyError     another process (window or server) holds the turn lease
    └── StaleParentError          the active leaf moved since the caller read it
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class of the store's errors."""


class DatabaseUnusableError(StoreError):
    """The database file cannot be opened safely; it is left untouched."""


class DatabaseAccessError(StoreError):
    """A read or write failed; the transaction was rolled back, so nothing half-changed."""


class DatabaseUnavailableError(DatabaseUnusableError, DatabaseAccessError):
    """The database server cannot be reached now (stopped, restarting, the network cut).

    Not the database's fault nor the caller's: the same call may work in a few
    seconds (the next call connects again). Also a :class:`DatabaseUnusableError`,
    which is what opening the store raises when it cannot connect.
    """


class StoreClosedError(StoreError):
    """The store was used after :meth:`Store.close`."""


class NotFoundError(StoreError, KeyError):
    """No conversation or message with the given id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "not found"


class SecretInSettingsError(StoreError, ValueError):
    """Settings carried what looks like a key value; keys belong in the keyring."""


class TextWithNulError(StoreError, ValueError):
    """A title (or other name) holds a NUL character.

    PostgreSQL's text cannot hold one and SQLite's would hold it where no
    person can see it; both engines refuse it alike, with this sentence.
    """


def refuse_nul(text: str, what: str) -> str:
    """``text`` as it is, unless it holds a NUL character.

    Raises:
        TextWithNulError: It does (``what`` names the text in the sentence).
    """
    if "\x00" in text:
        raise TextWithNulError(f"{what} cannot contain a NUL character (\\0).")
    return text


class ImportFormatError(StoreError, ValueError):
    """An import file is not JSON, not one of the known formats, or is inconsistent.

    Attributes:
        source: The file name (or label) the problem is in.
        problem: What is wrong, naming the place in the file.
    """

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem


class ConversationBusyError(StoreError):
    """Another window or server is running a turn on this conversation.

    The turn lease (:meth:`Store.turn_lease`) lets one process at a time run a
    turn, so two front ends never interleave replies in one conversation.

    Attributes:
        conversation_id: The conversation asked for.
        holder: Who holds the lease (the ``owner`` it was taken with).
    """

    def __init__(self, conversation_id: str, holder: str) -> None:
        super().__init__("This conversation is busy in another window or server.")
        self.conversation_id = conversation_id
        self.holder = holder


class StaleParentError(StoreError):
    """The conversation's active leaf is not the message the caller expected.

    Another process (the REST server, an import) appended or switched branch
    since the caller read the path; appending anyway would fork the tree. The
    caller re-reads the active path and tries again.

    Attributes:
        conversation_id: The conversation written to.
        expected: The leaf the caller expected (None: an empty conversation).
        actual: The leaf found.
    """

    def __init__(self, conversation_id: str, expected: str | None, actual: str | None) -> None:
        super().__init__(
            "This conversation changed in another window or server; "
            "reload it and try again."
        )
        self.conversation_id = conversation_id
        self.expected = expected
        self.actual = actual
