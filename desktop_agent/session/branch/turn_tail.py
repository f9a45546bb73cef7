"""What a turn's request needs of a long branch: the messages after its compaction.

Once a conversation has been compacted, its requests carry the summary and the
history from the compaction's end on; the messages before it are never sent
again. Reading and parsing the whole branch at every turn's start anyway made
the window's and ``serve``'s memory grow with each conversation's length (the
peak of each read raises the heap: several MB a turn after a few hundred
turns). So a compaction is stored with the ids of the messages it ends at
(``from``, and ``anchor_from`` for the user message kept before it), and a
turn's start reads back from the leaf only until it holds them
(:func:`tail_enough`); :func:`turn_history` builds the history the client
gets from that tail, with a stand-in for each message not read. The core's
context keeper is restored from the compaction (:class:`TurnHistory`'s
``compaction``), so the stand-ins are never sent: its view starts after them.

A branch whose newest compaction has no ids (stored before them, or ending at
a message no id names) or none within :data:`MOST_READ_BACK` messages is read
whole, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desktop_agent.session.branch.branch_reading import history_with_ids
from desktop_agent.session.branch.compaction_record import (
    compaction_block,
    newest_compaction,
    stored_compaction,
)

if TYPE_CHECKING:
    from desktop_agent.core.types import CompactionBlock
    from desktop_agent.store import MessageRecord

MOST_READ_BACK = 512
"""Messages read back looking for a compaction before the branch is read whole."""

STAND_IN: dict[str, Any] = {"role": "user", "content": ""}
"""What the client's history holds for each message the turn did not read (never sent)."""


@dataclass(frozen=True, slots=True)
class TurnHistory:
    """The history a turn gives its client, and how the client continues its view.

    Attributes:
        base: The history before the turn's prompt, oldest first.
        ids: The stored message each entry of ``base`` is (None: a pictures
            message, or a stand-in).
        compaction: The newest compaction stored on the branch: the client's
            context keeper continues from it. Always set when ``stand_ins`` is.
        stand_ins: How many of ``base`` are :data:`STAND_IN` (messages not read).
    """

    base: list[dict[str, Any]]
    ids: list[str | None]
    compaction: CompactionBlock | None
    stand_ins: int = 0


def tail_enough(records: list[MessageRecord]) -> bool | None:
    """Whether ``records`` (the branch's newest, root first) hold what a turn needs.

    The store's read-back predicate: True once the newest compaction's end (and
    its kept user message) are among them, False to read one more page, None to
    read the whole branch (no usable compaction).
    """
    found = newest_compaction(records)
    if found is None:
        return None if len(records) >= MOST_READ_BACK else False
    needed = _needed_ids(found)
    if needed is None:
        return None
    held = {record.id for record in records}
    return all(record_id in held for record_id in needed)


def turn_history(records: list[MessageRecord], end: int, vision: bool | None
                 ) -> TurnHistory | None:
    """The history of ``records[:end]`` for a turn's client; None when a tail cannot serve.

    ``records`` is the branch as held: whole (its first message has no parent)
    or its newest messages as :func:`tail_enough` read them.
    """
    if not records or records[0].parent_id is None:
        return whole_history(records[:end], vision, records)
    found = newest_compaction(records)
    needed = _needed_ids(found) if found is not None else None
    compaction = compaction_block(found) if found is not None else None
    if found is None or compaction is None or not needed:
        return None
    places = {record.id: i for i, record in enumerate(records)}
    if any(record_id not in places for record_id in needed):
        return None
    start = min(places[record_id] for record_id in needed)
    base, ids = history_with_ids(records[start:end], vision)
    first = found.get("from")
    if first not in ids:
        return None
    stand_ins = compaction.messages - ids.index(first)
    anchor_from = found.get("anchor_from")
    if stand_ins < 0 or (compaction.anchor is not None and (
            anchor_from not in ids or ids.index(anchor_from) != compaction.anchor - stand_ins)):
        return None
    unread: list[str | None] = [None] * stand_ins
    return TurnHistory([STAND_IN] * stand_ins + base, unread + ids, compaction, stand_ins)


def whole_history(path: list[MessageRecord], vision: bool | None,
                  branch: list[MessageRecord] | None = None) -> TurnHistory:
    """The history of ``path``, a branch from its root, for a turn's client.

    ``branch``: the branch whose newest compaction the client continues from
    (``path`` itself when not given; the prompt after it has none).
    """
    base, ids = history_with_ids(path, vision)
    return TurnHistory(base, ids, stored_compaction(path if branch is None else branch))


def _needed_ids(data: dict[str, Any]) -> list[str] | None:
    """The ids a tail must reach back to for this compaction; None when it names none."""
    first, anchor = data.get("from"), data.get("anchor_from")
    if not isinstance(first, str):
        return None
    if data.get("anchor") is not None:
        return [first, anchor] if isinstance(anchor, str) else None
    return [first]
