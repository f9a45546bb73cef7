"""A compaction as the store keeps it: with the reply whose request it shaped.

Stored in that reply's metadata (``compaction``), it lets the transcript show
the marker again when the conversation is opened later, a new client continue
from the same view instead of summarising again, and a turn's start read only
the branch after it (:mod:`~desktop_agent.session.branch.turn_tail`): the
compaction names the stored messages it ends at by their ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.core.types import CompactionBlock
    from desktop_agent.store import MessageRecord


def compaction_metadata(block: CompactionBlock,
                        ids: Sequence[str | None] = ()) -> dict[str, Any]:
    """A compaction as a reply's metadata keeps it (read back by :func:`stored_compaction`).

    ``ids`` are the stored messages of the client's history, in its order (None
    for one that is not a stored message): the ones at the compaction's end and
    at its kept user message are kept as ``from`` and ``anchor_from`` when both
    are known.
    """
    data: dict[str, Any] = {
        "messages": block.messages, "summary": block.summary, "mode": block.mode,
        "dropped": block.dropped, "anchor": block.anchor,
        "tokens_before": block.tokens_before, "tokens_after": block.tokens_after,
        "covered_tokens": block.covered_tokens}
    first = ids[block.messages] if block.messages < len(ids) else None
    anchor = block.anchor
    anchor_from = ids[anchor] if anchor is not None and 0 <= anchor < len(ids) else None
    if first is not None and (anchor is None or anchor_from is not None):
        data["from"] = first
        if anchor_from is not None:
            data["anchor_from"] = anchor_from
    return data


def newest_compaction(path: Sequence[MessageRecord]) -> dict[str, Any] | None:
    """The newest compaction's metadata kept with a reply on this branch, as stored."""
    for record in reversed(path):
        data = record.metadata.get("compaction") if record.role == "assistant" else None
        if isinstance(data, dict):
            return data
    return None


def stored_compaction(path: Sequence[MessageRecord]) -> CompactionBlock | None:
    """The newest compaction kept with a reply on this branch, as the core's block."""
    data = newest_compaction(path)
    return compaction_block(data) if data is not None else None


def compaction_block(data: dict[str, Any]) -> CompactionBlock | None:
    """A compaction's stored metadata as the core's block; None when it is malformed."""
    from desktop_agent.core.types import CompactionBlock

    messages, anchor = data.get("messages"), data.get("anchor")
    if not isinstance(messages, int) or not (anchor is None or isinstance(anchor, int)):
        return None
    summary = data.get("summary")
    dropped = data.get("dropped")
    covered = data.get("covered_tokens")
    return CompactionBlock(messages=messages,
                           summary=summary if isinstance(summary, str) else None,
                           mode="summarise" if data.get("mode") == "summarise"
                           else "drop_oldest",
                           dropped=dropped if isinstance(dropped, int) else 0, anchor=anchor,
                           covered_tokens=covered if isinstance(covered, int) else 0)
