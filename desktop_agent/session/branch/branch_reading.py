"""How a conversation's stored branch reads to the model and to the transcript.

The store keeps every branch; the controller works on the active one as a
list of :class:`~desktop_agent.store.MessageRecord`. These functions say what
the model is sent, what the transcript is given, and what a new chat is
called after its first message (no Qt here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from desktop_agent.image_data import part_url
from desktop_agent.store.conversation_crud import DEFAULT_TITLE as DEFAULT_TITLE

if TYPE_CHECKING:
    from desktop_agent.store import MessageRecord

#: Metadata key of a user message whose picture the model's server refused: it stays
#: in the transcript (what the person wrote) but is never sent again, or every later
#: prompt would be refused too.
REFUSED_PICTURE = "refused_picture"
#: Metadata key of a prompt sent with resources that changed since they were attached:
#: ``[{server, uri, text}]``, read again at the turn's start and sent after the prompt.
RESOURCE_CHANGES = "resource_changes"
TITLE_LENGTH = 48


def model_history(path: list[MessageRecord],
                  vision: bool | None = None) -> list[dict[str, Any]]:
    """What the model sees of ``path`` (:func:`history_with_ids` without the ids)."""
    return history_with_ids(path, vision)[0]


def history_with_ids(path: list[MessageRecord], vision: bool | None = None
                     ) -> tuple[list[dict[str, Any]], list[str | None]]:
    """What the model sees: the stored messages, with some left out; and whose each is.

    The ids run beside the messages: the stored message each one is, None for
    a pictures message (made of the tool results before it). A compaction
    names where it ends by them, so a later turn reads the branch from there.

    Left out: failed empty partial replies, and prompts whose picture the
    server refused (:data:`REFUSED_PICTURE`).

    Pictures a round of tool calls returned are stored with the tool results;
    for a model that can see (``vision``) they go back in as the user message
    that followed the round live (:func:`~desktop_agent.core.tooling.output.pictures_message`),
    so a reopened conversation sends what the live one sent.
    """
    history: list[dict[str, Any]] = []
    ids: list[str | None] = []
    pictures: list[dict[str, Any]] = []
    for record in path:
        if record.status == "error" and not (record.message.get("content") or
                                             record.message.get("tool_calls")):
            continue
        if record.role == "user" and record.metadata.get(REFUSED_PICTURE):
            continue
        if record.role != "tool":
            _add_pictures(history, ids, pictures, vision)
        elif isinstance(stored := record.metadata.get("images"), list):
            pictures += [part for part in stored if isinstance(part, dict)]
        message = dict(record.message)
        if record.role == "user" and record.metadata.get(RESOURCE_CHANGES):
            message["content"] = with_resource_changes(message.get("content") or "",
                                                       record.metadata[RESOURCE_CHANGES])
        history.append(message)
        ids.append(record.id)
    _add_pictures(history, ids, pictures, vision)
    return history, ids


def with_resource_changes(content: Any, changes: list[dict[str, Any]]) -> Any:
    """A prompt's content followed by the resources that changed since they were attached."""
    note = "\n\n".join(f"[The resource {c.get('uri')} (MCP server {c.get('server')}) changed "
                        f"since it was attached; it now reads:]\n{c.get('text')}"
                        for c in changes if isinstance(c, dict))
    if not note:
        return content
    if isinstance(content, list):
        return [*content, {"type": "text", "text": note}]
    return f"{content}\n\n{note}" if content else note


def _add_pictures(history: list[dict[str, Any]], ids: list[str | None],
                  pictures: list[dict[str, Any]], vision: bool | None) -> None:
    """Append the pictures message for the round just ended (and forget its pictures)."""
    from desktop_agent.core.tooling.output import pictures_message

    message = pictures_message(pictures, vision)
    if message is not None:
        history.append(message)
        ids.append(None)
    pictures.clear()


def view_dict(record: MessageRecord) -> dict[str, Any]:
    """One stored message as the transcript takes it (copies, so widgets cannot edit it)."""
    return {"id": record.id, "role": record.role, "message": dict(record.message),
            "metadata": dict(record.metadata), "status": record.status}


def last_user_index(path: list[MessageRecord]) -> int | None:
    """Where the last user message sits in the branch (None when there is none)."""
    return next((i for i in range(len(path) - 1, -1, -1) if path[i].role == "user"), None)


def title_from(text: str) -> str:
    """A chat title from its first message: one line, cut to fit a tab."""
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[:TITLE_LENGTH - 1].rstrip() + "…"


def tool_result_text(content: str, user_content: str | None) -> str:
    """What a tool card shows: the result, and content meant for the person only.

    MCP content for ``audience: ["user"]`` never reaches the model; the card
    (live, and when the conversation is opened again) is where the person sees it.
    """
    if not user_content:
        return content
    return f"{content}\n\nFor you: {user_content}" if content else user_content



def picture_urls(parts: Any) -> tuple[str, ...]:
    """The ``data:`` URIs of the ``image_url`` parts in ``parts``, in order.

    ``parts`` is a message's ``content`` (a string has none) or the pictures a
    tool returned; what a front end shows as pictures.
    """
    if not isinstance(parts, list):
        return ()
    urls = (part_url(part) for part in parts)
    return tuple(url for url in urls if url is not None and url.startswith("data:"))
