"""Writing one turn to the store as it streams (no Qt here).

Every message is written when it happens: an assistant reply is added as
"streaming" at its first piece and checkpointed as it grows (through the
store's :class:`~desktop_agent.store.StreamingReplyWriter`), completed when
its tool calls run or the turn ends; each tool result is written with the
approval decision in its metadata. At the end, the stored messages are made
equal to what the client actually sent (its history is the truth), so a
restored conversation continues exactly where it was.

This is the one recorder of every front end, so a conversation has one
stored shape whoever ran it. A call whose input was edited before it ran is
stored with the input that ran (the model's own arguments are kept in the
assistant message's metadata under ``model_arguments``), and every stored
message is reported through ``on_stored`` (the REST server's ``message``
events).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from desktop_agent.core.context.history_invariants import (
    NOT_EXECUTED_INTERRUPT,
    NOT_EXECUTED_UNANSWERED,
)
from desktop_agent.session.approvals.call_states import (
    OUTPUT_FIGURES_KEY,
    STOPPED_BY_PERSON_KEY,
    STOPPED_KEY,
)
from desktop_agent.session.branch.compaction_record import compaction_metadata
from desktop_agent.session.files.file_changes import FILE_CHANGE_KEY
from desktop_agent.session.store_calls import finish_now, on_the_spot
from desktop_agent.store import StreamingReplyWriter

if TYPE_CHECKING:
    from desktop_agent.core.types import CompactionBlock
    from desktop_agent.session.store_calls import StoreCalls
    from desktop_agent.store import MessageRecord, Store

log = logging.getLogger("desktop_agent.session.recorder")

CHECKPOINT_INTERVAL = 0.5


@dataclass(slots=True)
class _Segment:
    """One assistant message being streamed (text, thinking, tool calls)."""

    writer: StreamingReplyWriter
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # call id -> its tool's source
    closed: bool = False
    # Metadata for the reply's final write (the turn's usage, when it came first).
    pending: dict[str, Any] = field(default_factory=dict)

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.writer.text or None}
        if self.tool_calls:
            message["tool_calls"] = list(self.tool_calls)
        elif message["content"] is None:
            message["content"] = ""
        return message

    def has_call(self, tool_use_id: str | None) -> bool:
        return any(c["id"] == tool_use_id for c in self.tool_calls)


class TurnRecorder:
    """Mirrors one turn's blocks into the store, keeping the active path in step.

    Args:
        store: The conversation store.
        conversation_id: The conversation being written.
        path: The active branch (root first); extended and updated in place.
        model: The model id, kept in each reply's metadata.
        decision_of: The approval decision recorded for a tool call id, if any.
        on_stored: Told about each message once it is complete in the store.
        change_of: The diff of what a tool call changed in a file, if it changed one
            (kept in the result's metadata so the card shows it after a restart).
        stopped_by_person: Whether Stop on the call's card ended it (kept as
            ``stopped_by_person`` in its result's metadata).
        history_ids: The stored message each entry of the client's history is
            at the turn's start (None where it is none), its prompt included.
    """

    def __init__(self, store: Store, conversation_id: str, path: list[MessageRecord],
                 model: str, decision_of: Callable[[str], dict[str, Any] | None],
                 on_stored: Callable[[MessageRecord], None] = lambda _record: None,
                 change_of: Callable[[str], dict[str, Any] | None] = lambda _id: None,
                 stopped_by_person: Callable[[str], bool] = lambda _id: False,
                 history_ids: list[str | None] | None = None) -> None:
        self._store = store
        self._conversation_id = conversation_id
        self._path = path
        self._model = model
        self._decision_of = decision_of
        self._on_stored = on_stored
        self._change_of = change_of
        self._stopped_by_person = stopped_by_person
        self._segment: _Segment | None = None
        self._just_opened: str | None = None  # opened by open_reply, not yet reported
        self._compaction: dict[str, Any] | None = None  # for the next reply's metadata
        self._tool_records: dict[str, str] = {}
        self._bad_calls: list[tuple[str, str, str]] = []
        self.written: list[str] = []
        self.errors_shown: set[str] = set()
        self._output_figures: dict[str, tuple[int, float]] = {}  # lines, seconds per command
        self._history_ids = history_ids or []

    # -- blocks -----------------------------------------------------------------

    @property
    def _open(self) -> _Segment | None:
        """The reply being written, when one is open (stored and not closed)."""
        segment = self._segment
        return segment if segment is not None and not segment.closed else None

    async def open_reply(self, call: StoreCalls) -> None:
        """Store the reply the next text, thinking or call block goes into, if none is open.

        Why apart from :meth:`text`: storing a reply is a round trip to the
        database, and ``call`` runs it off the event loop in ``serve`` (see
        :mod:`~desktop_agent.session.store_calls`); the block itself is then added at once.
        """
        if self._open is not None:
            return
        metadata: dict[str, Any] = {"model": self._model, "started_at": time.time()}
        if self._compaction is not None:
            metadata["compaction"], self._compaction = self._compaction, None
        writer = await call(partial(
            StreamingReplyWriter, self._store, self._conversation_id,
            parent_id=self._leaf_id(), metadata=metadata, interval=CHECKPOINT_INTERVAL))
        self._path.append(writer.record)
        self.written.append(writer.message_id)
        self._segment = _Segment(writer)
        self._just_opened = writer.message_id

    def add_to_open_reply(self, delta: str, *, thinking: bool = False) -> bool:
        """Add answer (or reasoning) text to the reply already open and reported.

        The step of nearly every streamed piece, without the coroutine that
        opening a reply takes. False when no reply is open, or the one open was
        not reported yet: :meth:`open_reply` and :meth:`text` (:meth:`thinking`)
        take the piece then.
        """
        segment = self._open
        if segment is None or self._just_opened is not None:
            return False
        if thinking:
            segment.writer.append_thinking(delta)
        else:
            segment.writer.append_text(delta)
        return True

    def text(self, delta: str) -> str | None:
        """Add answer text; returns the new reply's id when this piece opened one."""
        segment, opened = self._open_segment()
        segment.writer.append_text(delta)
        return opened

    def thinking(self, delta: str) -> str | None:
        """Add reasoning text; returns the new reply's id when this piece opened one."""
        segment, opened = self._open_segment()
        segment.writer.append_thinking(delta)
        return opened

    def tool_call(self, tool_use_id: str, name: str, arguments: dict[str, Any],
                  source: str | None = None) -> str | None:
        """Add a complete tool call to the reply being streamed (``source``: its tool's origin)."""
        segment, opened = self._open_segment()
        if source:
            segment.sources[tool_use_id] = source
        segment.tool_calls.append({"id": tool_use_id, "type": "function",
                                   "function": {"name": name,
                                                "arguments": json.dumps(arguments)}})
        segment.writer.flush()
        return opened

    def tool_result(self, tool_use_id: str, content: str, is_error: bool,
                    name: str | None, settled_by: str | None = None,
                    ran_input: dict[str, Any] | None = None, *,
                    user_content: str | None = None,
                    images: list[dict[str, Any]] | None = None,
                    subagent: dict[str, Any] | None = None) -> None:
        """A tool ran (or was refused): its reply is complete; store the result.

        ``settled_by`` is the core's word for how the call was decided (``rule``,
        ``auto``, ``denied``...), kept when nobody was asked. ``ran_input`` is
        the input the tool ran with when it was not the model's. ``user_content``
        (for the person only) goes in the metadata, never in the message; so do
        the pictures the tool returned (``images``, ``image_url`` parts), from
        which the history sent to the model is rebuilt when the conversation is
        opened again (:func:`~desktop_agent.session.branch.branch_reading.model_history`).
        ``subagent`` is the record of the subagent a delegation ran (shown again on reopening).
        """
        self.finish_segment("complete")
        if ran_input is not None:
            self._store_ran_input(tool_use_id, ran_input)
        self._tool_message(tool_use_id, content, is_error, name, settled_by, user_content,
                           images, extra={"subagent": subagent} if subagent else None)

    def output_reported(self, tool_use_id: str, lines: int, seconds: float) -> None:
        """A running command reported its output: keep its figures for its result.

        Stored with the result (metadata ``output_figures``), whether the command
        finished or the turn was stopped while it ran, so that its card reads
        "20 lines · 10.2 s" when the conversation is opened again, as it did live.
        """
        self._output_figures[tool_use_id] = (lines, seconds)

    def _store_ran_input(self, tool_use_id: str, ran_input: dict[str, Any]) -> None:
        """Put the input that ran into the stored call; keep the model's in metadata."""
        from desktop_agent.core.tooling.ran_inputs import replace_call_arguments

        for record in reversed(self._path):
            if record.role != "assistant" or not any(
                    c.get("id") == tool_use_id for c in record.message.get("tool_calls") or []):
                continue
            message = json.loads(json.dumps(record.message))
            original = replace_call_arguments([message], tool_use_id, ran_input)
            kept = dict(record.metadata.get("model_arguments") or {})
            kept.setdefault(tool_use_id, original)
            self._stored(self._store.complete_message(
                record.id, message, {"model_arguments": kept}, status=record.status,
                conversation_id=self._conversation_id))
            return

    def tool_error(self, error: str, tool_use_id: str | None, name: str | None,
                   raw_data: str | None) -> str | None:
        """A call that could not be used, a refused call, or a stop of the tool loop.

        Returns the new reply's id when the error opened one.
        """
        segment = self._segment
        opened = None
        if tool_use_id and name and not (segment is not None and segment.has_call(tool_use_id)):
            # Unusable arguments: the core keeps the call in the assistant message
            # (as {}) and answers it with an error result after the message.
            segment, opened = self._open_segment()
            segment.tool_calls.append({"id": tool_use_id, "type": "function",
                                       "function": {"name": name, "arguments": "{}"}})
            self._bad_calls.append((tool_use_id, name, f"Error: {error} Raw arguments: "
                                                       f"{(raw_data or '')[:500]}"))
        elif not tool_use_id:
            # The loop stopped: calls still open get a "not executed" answer, and
            # keep the stop's words so a reopened card shows the same "Stopped: ..." line.
            self.finish_segment("complete")
            self.answer_open_calls(error, stopped=error)
        else:
            self.finish_segment("complete")
        if tool_use_id:
            self.errors_shown.add(tool_use_id)
        return opened

    def compaction(self, block: CompactionBlock) -> None:
        """The next request's view was compacted: keep it with the reply that follows.

        Stored in that reply's metadata (``compaction``), so the transcript
        shows the marker again when the conversation is opened later, and the
        session continues from the same view instead of summarising again
        (:func:`~desktop_agent.session.branch.compaction_record.stored_compaction`).
        Its end is named by the stored message there (``history_ids``), so the
        next turn reads the branch from there on.
        """
        self._compaction = compaction_metadata(block, self._history_ids)

    async def usage(self, figures: dict[str, Any], call: StoreCalls) -> None:
        """Keep the turn's figures in the last reply's metadata (stored through ``call``)."""
        await self.reply_metadata("usage", figures, call)

    async def reply_metadata(self, key: str, value: Any, call: StoreCalls, *,
                             streaming_only: bool = False) -> None:
        """Keep ``value`` under ``key`` in the last reply's metadata (stored through ``call``).

        While that reply still streams it goes with its final write, which every
        ending makes (:meth:`finish_reply`): one write at a turn's end instead of two.
        ``streaming_only``: about the reply being streamed only (a reply that
        stored nothing gets nothing; an earlier one is not it).
        """
        last = next((r for r in reversed(self._path) if r.role == "assistant"), None)
        segment = self._open
        if last is not None and segment is not None and segment.writer.message_id == last.id:
            segment.pending[key] = value
            return
        if last is not None and not streaming_only:
            self._replace(await call(partial(
                self._store.update_message_metadata, last.id, {key: value},
                conversation_id=self._conversation_id)))

    async def finish_reply(self, status: str, call: StoreCalls) -> None:
        """Complete the reply being streamed with ``status``, its last write through ``call``."""
        segment = self._open
        if segment is None:
            return
        segment.closed = True
        metadata: dict[str, Any] = {**segment.pending, "finished_at": time.time()}
        if segment.tool_calls:
            metadata["tool_calls"] = {
                c["id"]: {"name": c["function"]["name"],
                          **({"source": segment.sources[c["id"]]}
                             if c["id"] in segment.sources else {})}
                for c in segment.tool_calls}
        self._stored(await call(partial(segment.writer.finish, segment.message(), metadata,
                                        status)))
        bad_calls, self._bad_calls = self._bad_calls, []
        for tool_use_id, name, content in bad_calls:
            self._tool_message(tool_use_id, content, True, name)

    def flush(self) -> None:
        """Save the partial reply now (the controller's timer calls this)."""
        segment = self._open
        if segment is not None:
            segment.writer.flush()

    # -- ending -----------------------------------------------------------------

    def finish_segment(self, status: str) -> None:
        """Complete the reply being streamed with ``status``."""
        finish_now(self.finish_reply(status, on_the_spot))

    def answer_open_calls(self, text: str, stopped: str | None = None) -> None:
        """Store an answer for every call of this turn that has none (as the core does).

        ``stopped`` is the loop guard's or a limit's sentence, kept in the metadata.
        """
        for record_id in list(self.written):
            record = self._find(record_id)
            if record is None or record.role != "assistant":
                continue
            for call in record.message.get("tool_calls") or []:
                if call["id"] not in self._tool_records:
                    self._tool_message(call["id"], text, True, call["function"]["name"],
                                       stopped=stopped)

    def finish(self, status: str, history: list[dict[str, Any]] | None = None,
               base_length: int = 0) -> None:
        """End the turn; with the client's history, make the stored messages equal it."""
        self.finish_segment(status)
        if status == "error":
            return
        self.answer_open_calls(NOT_EXECUTED_INTERRUPT if status == "interrupted"
                               else NOT_EXECUTED_UNANSWERED)
        if status == "interrupted":
            self._mark_stopped()
        if history is not None:
            self._reconcile(history[base_length + 1:])

    def _mark_stopped(self) -> None:
        """Keep on the turn's last reply that the turn was stopped (metadata ``interrupted``).

        Why: a turn stopped between two requests (its last reply complete, the
        next not yet begun) was shown "stopped" live, but nothing stored said
        so, and reopened it was not.
        """
        last = next((r for r in reversed(self._path) if r.id in self.written
                     and r.role == "assistant"), None)
        if last is None or last.status == "interrupted" or last.metadata.get("interrupted"):
            return
        self._replace(self._store.update_message_metadata(
            last.id, {"interrupted": True}, conversation_id=self._conversation_id))

    def _reconcile(self, sent: list[dict[str, Any]]) -> None:
        from desktop_agent.core.tooling.output import is_pictures_message

        # A round's pictures travel in a user message of their own; the store keeps
        # them with the tool results instead (see tool_result).
        sent = [m for m in sent if not is_pictures_message(m)]
        if len(sent) != len(self.written):
            log.debug("history has %d new messages, the store %d; keeping the store's",
                      len(sent), len(self.written))
            return
        for record_id, message in zip(self.written, sent, strict=True):
            record = self._find(record_id)
            if record is None or record.role != message.get("role"):
                return
            if record.message != message:
                self._stored(self._store.complete_message(
                    record_id, message, dict(record.metadata), status=record.status,
                    conversation_id=self._conversation_id))

    # -- helpers ----------------------------------------------------------------

    def _open_segment(self) -> tuple[_Segment, str | None]:
        """The open reply, and its id when it was opened since last asked (else None)."""
        segment = self._open
        if segment is None:
            finish_now(self.open_reply(on_the_spot))
            segment = self._segment
            assert segment is not None
        opened, self._just_opened = self._just_opened, None
        return segment, opened

    def _tool_message(self, tool_use_id: str, content: str, is_error: bool,
                      name: str | None, settled_by: str | None = None,
                      user_content: str | None = None,
                      images: list[dict[str, Any]] | None = None,
                      stopped: str | None = None,
                      extra: dict[str, Any] | None = None) -> None:
        metadata: dict[str, Any] = {"name": name, "is_error": is_error, **(extra or {})}
        if stopped:
            metadata[STOPPED_KEY] = stopped
        output_figures = self._output_figures.get(tool_use_id)
        if output_figures is not None:
            metadata[OUTPUT_FIGURES_KEY] = {"lines": output_figures[0],
                                            "seconds": round(output_figures[1], 3)}
        if self._stopped_by_person(tool_use_id):
            metadata[STOPPED_BY_PERSON_KEY] = True
        if user_content:
            metadata["user_content"] = user_content
        if images:
            metadata["images"] = list(images)
        decision = self._decision_of(tool_use_id)
        if decision is not None:
            metadata["approval"] = decision
        elif settled_by:
            by = "rule" if settled_by in ("rule", "denied") else "auto"
            metadata["approval"] = {"decision": settled_by, "by": by}
        change = self._change_of(tool_use_id)
        if change is not None:
            metadata[FILE_CHANGE_KEY] = change
        message = {"role": "tool", "tool_call_id": tool_use_id, "content": content}
        existing = self._tool_records.get(tool_use_id)
        if existing is not None:
            self._stored(self._store.complete_message(
                existing, message, metadata, conversation_id=self._conversation_id))
            return
        record = self._store.add_message(self._conversation_id, message,
                                         parent_id=self._leaf_id(), metadata=metadata)
        self._path.append(record)
        self.written.append(record.id)
        self._tool_records[tool_use_id] = record.id
        self._on_stored(record)

    def _leaf_id(self) -> str | None:
        return self._path[-1].id if self._path else None

    def _find(self, record_id: str) -> MessageRecord | None:
        return next((r for r in self._path if r.id == record_id), None)

    def _stored(self, record: MessageRecord) -> None:
        self._replace(record)
        self._on_stored(record)

    def _replace(self, record: MessageRecord) -> None:
        for i, old in enumerate(self._path):
            if old.id == record.id:
                self._path[i] = record
                return
