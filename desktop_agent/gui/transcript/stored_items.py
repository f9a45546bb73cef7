"""Stored conversation messages (OpenAI format) into transcript items.

Why: the store and ``Client.history`` keep OpenAI-style message dicts; the
transcript shows turns. An assistant message, the tool messages answering its
calls and the assistant messages that follow them (automatic tool rounds) form
one assistant turn, exactly as they looked while streaming.

Accepted entries: a message dict (``role``, ``content``, ``tool_calls``,
``tool_call_id``, optionally ``reasoning_content`` or ``reasoning``), the same
dict with extra keys ``id``, ``metadata`` and ``status``, or any object with
``message``, ``metadata``, ``id`` and ``status`` attributes (the store's
``MessageRecord``). Metadata may hold ``thinking`` (str), ``interrupted``
(bool: the turn was stopped, also when its last reply was complete),
``is_error`` (bool, on tool messages), ``source`` (str, on tool messages),
``output_figures`` (a command's lines and seconds, on tool messages) and
``error`` (str, shown as an error after the message).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from desktop_agent.gui.transcript.items import (
    AssistantItem,
    CompactionItem,
    ErrorItem,
    LiveOutput,
    ReplyNotePart,
    SubagentRun,
    TextRun,
    ToolCallPart,
    ToolErrorPart,
    TranscriptItem,
    UserItem,
)
from desktop_agent.session import ToolCallState, picture_urls, tool_call_state
from desktop_agent.store.message_text import content_text as stored_content_text

log = logging.getLogger("desktop_agent.gui.transcript")


def _unpack(entry: Any) -> tuple[dict[str, Any], dict[str, Any], str | None, str]:
    if isinstance(entry, dict):
        wrapped = entry.get("message")
        message: dict[str, Any] = wrapped if isinstance(wrapped, dict) else entry
        metadata = entry.get("metadata") or {}
        message_id = entry.get("id")
        status = str(entry.get("status") or "complete")
        return message, dict(metadata), None if message_id is None else str(message_id), status
    stored = getattr(entry, "message", None)
    if not isinstance(stored, dict):
        raise TypeError(f"not a message: {type(entry).__name__}")
    metadata = getattr(entry, "metadata", None) or {}
    status = getattr(entry, "status", None) or "complete"
    record_id = getattr(entry, "id", None)
    return stored, dict(metadata), None if record_id is None else str(record_id), str(status)


def content_text(content: Any) -> str:
    """Text of an OpenAI ``content`` field as the transcript shows it."""
    return stored_content_text(content, image_placeholder="[image]")


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw if raw is not None else {}


def settle_part(part: ToolCallPart, state: ToolCallState) -> None:
    """Give a card's data the settled state of its call (live and reopened alike)."""
    part.result = state.result
    part.is_error = state.is_error
    part.outcome = state.outcome
    part.pictures = list(state.pictures)
    part.change = state.change
    part.stopped_line = state.stopped
    if state.output_lines is not None:
        # "20 lines · 10.2 s" as the card said while the command ran (kept with its result).
        # A card that watched it run takes the kept figures too: its last report on screen
        # may be older than the last one the result was stored with, and the card must
        # read the same when the conversation is opened again.
        if part.live is None:
            part.live = LiveOutput()
        part.live.lines = state.output_lines
        part.live.elapsed = state.output_seconds or 0.0
    part.settled += 1


def prompt_cut_note(stored: Any) -> str | None:
    """The mark of a reply whose prompt the server cut (its ``prompt_cut`` metadata)."""
    from desktop_agent.core.types import PromptCutBlock

    if not isinstance(stored, dict) or not isinstance(stored.get("kept"), int) \
            or not isinstance(stored.get("sent"), int):
        return None
    return PromptCutBlock(stored["kept"], stored["sent"], stored["kept"]).message


def _settle_stored_call(turn: AssistantItem | None, part: ToolCallPart, message: dict[str, Any],
                        metadata: dict[str, Any]) -> None:
    """A stored result on its call's part, with what was shown beside it live."""
    part.source = metadata.get("source") or part.source
    settle_part(part, tool_call_state(message, metadata))
    run = metadata.get("subagent")
    if isinstance(run, dict):  # a delegation: the subagent's run, as it ended
        part.subagent = SubagentRun.from_record(run)
    stop_line = part.stopped_line
    if turn is not None and stop_line and not any(
            isinstance(p, ToolErrorPart) and p.text == stop_line for p in turn.parts):
        turn.parts.append(ToolErrorPart(stop_line))  # as the loop guard said it live


def items_from_messages(entries: Iterable[Any], new_key: Any) -> list[TranscriptItem]:
    """Group stored messages into items; ``new_key()`` names items without an id."""
    items: list[TranscriptItem] = []
    turn: AssistantItem | None = None
    for entry in entries:
        try:
            message, metadata, message_id, status = _unpack(entry)
        except TypeError:
            log.warning("Skipped a history entry that is not a message")
            continue
        role = message.get("role")
        key = str(message_id) if message_id is not None else new_key()
        if role == "user":
            turn = None
            content = message.get("content")
            pictures = list(picture_urls(content))
            # the pictures are shown as pictures, not as "[image]" in the text
            text = stored_content_text(content) if pictures else content_text(content)
            items.append(UserItem(key, text, pictures=pictures, message_id=message_id))
        elif role == "assistant":
            compaction = metadata.get("compaction")
            if isinstance(compaction, dict) and isinstance(compaction.get("messages"), int):
                # where the model's view was compacted before this reply (as shown live)
                summary = compaction.get("summary")
                items.append(CompactionItem(new_key(), compaction["messages"],
                                            summary if isinstance(summary, str) else None))
                turn = None
            if turn is None:
                turn = AssistantItem(key, open=False)
                items.append(turn)
            thinking = (
                metadata.get("thinking")
                or message.get("reasoning_content")
                or message.get("reasoning")
            )
            if thinking:
                turn.parts.append(TextRun("thinking", [str(thinking)]))
            text = content_text(message.get("content"))
            if text:
                turn.parts.append(TextRun("text", [text]))
            edited = metadata.get("model_arguments") or {}  # calls that ran with other input
            recorded = metadata.get("tool_calls") or {}  # each call's tool source
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                call_id = str(call.get("id", ""))
                about = recorded.get(call_id) if isinstance(recorded, dict) else None
                source = about.get("source") if isinstance(about, dict) else None
                turn.parts.append(
                    ToolCallPart(
                        call_id,
                        str(function.get("name", "tool")),
                        _arguments(function.get("arguments")),
                        source=source if isinstance(source, str) else None,
                        edited=isinstance(edited, dict) and call_id in edited,
                    )
                )
            turn.interrupted = bool(metadata.get("interrupted")) or status == "interrupted"
            note = prompt_cut_note(metadata.get("prompt_cut"))
            if note is not None:  # as it was marked live
                turn.parts.append(ReplyNotePart(note))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            result = content_text(message.get("content"))
            part = turn.find_tool_call(call_id) if turn is not None else None
            if part is None:
                if turn is None:
                    turn = AssistantItem(key, open=False)
                    items.append(turn)
                turn.parts.append(ToolErrorPart(f"Result for an unknown call: {result}"))
                continue
            _settle_stored_call(turn, part, message, metadata)
        else:
            continue  # system prompts and unknown roles are not shown
        if metadata.get("error"):
            turn = None
            items.append(ErrorItem(new_key(), str(metadata["error"]), retry=False))
    return items

