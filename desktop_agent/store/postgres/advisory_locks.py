"""The advisory locks replicas take on one PostgreSQL database, named in one place.

Python's write transactions (:mod:`.postgres_database`) and the schema's SQL
functions (:mod:`.postgres_schema`) must take the same locks, so both read the
numbers from here.
"""

from __future__ import annotations

WRITE_LOCK = 0x64_61_67_02
"""The advisory lock every write transaction takes first (exclusive, or shared beside others)."""

KEY_LOCKS = 0x64_61_67_03
"""The first half of the advisory locks a write beside others takes per key it names."""

EVENT_LOCKS = 0x64_61_67_04
"""The first half of the lock on one conversation's event log, taken by the append function.

Apart from :data:`KEY_LOCKS` because its second half is PostgreSQL's ``hashtext``
of the conversation id, computed in the function, not Python's CRC of a key."""
