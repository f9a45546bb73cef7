"""Importing conversations: from our export format or a plain OpenAI-style file.

Imports always create NEW conversations (fresh ids; nothing existing is
touched). Every file is read and checked against the shipped JSON Schema and
for tree consistency before anything is written, and all conversations of all
files go in one transaction: a malformed or foreign file gets a message naming
the file and the place of the problem, and nothing is imported. Imported
settings never weaken safety (:mod:`desktop_agent.store.import_safety`): what
was reset is reported, one sentence per change, through ``report``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema loads when a file is imported, not at start-up
    import jsonschema

from desktop_agent.store.errors import ImportFormatError
from desktop_agent.store.export_format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    export_validator,
    openai_file_validator,
)
from desktop_agent.store.import_safety import check_values, make_safe, refuse_constant
from desktop_agent.store.message_text import content_text
from desktop_agent.store.records import ConversationRecord, NewConversation, NewMessage
from desktop_agent.store.secret_scrub import redact_shapes, scrub
from desktop_agent.store.store import Store
from desktop_agent.store.write_checks import check_images

_TITLE_LENGTH = 60


def _where(path: Iterable[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the top level"


_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _short(value: Any) -> str:
    """A value for an error message: short, and never a key."""
    text = redact_shapes(json.dumps(value, ensure_ascii=False))
    return text if len(text) <= 40 else text[:39] + "…"


def _describe(error: jsonschema.exceptions.ValidationError) -> str:
    """What a schema error means, without echoing large or secret values."""
    kind, expected, instance = error.validator, error.validator_value, error.instance
    if kind == "not":
        return (
            "holds an API key; conversation settings may only name a key kept in the "
            "keyring (api_key_name)"
        )
    if kind == "type":
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return f"should be of type {wanted}, not {_JSON_TYPES.get(type(instance), 'that')}"
    if kind == "enum":
        return f"{_short(instance)} is not one of {', '.join(map(str, expected))}"
    if kind == "const":
        return f"should be {_short(expected)}, not {_short(instance)}"
    if kind == "pattern" and "data:image" in str(expected):
        return ("is not an embedded PNG, JPEG, GIF or WebP picture (a base64 data: URI); "
                "linked images are not imported")
    if kind in ("minItems", "minLength"):
        return "should not be empty"
    if kind == "required":
        return str(error.message)
    message = redact_shapes(error.message)
    return message if len(message) <= 200 else message[:199] + "…"


def _check_schema(validator: jsonschema.protocols.Validator, data: Any, source: str) -> None:
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(data))
    if error is not None:
        raise ImportFormatError(source, f"{_where(error.absolute_path)}: {_describe(error)}")


def _check_images(message: dict[str, Any], where: str, source: str) -> None:
    """Each picture: a real image of an accepted kind and size (the schema saw only text)."""
    try:
        check_images(message.get("content"), where)
    except ValueError as exc:
        raise ImportFormatError(source, str(exc)) from None


def _title_from(messages: list[dict[str, Any]], fallback: str) -> str:
    for message in messages:
        if message.get("role") == "user":
            text = " ".join(content_text(message.get("content")).split())
            if text:
                return text if len(text) <= _TITLE_LENGTH else text[: _TITLE_LENGTH - 1] + "…"
    return fallback


def _from_export(data: dict[str, Any], source: str,
                 report: list[str] | None = None) -> list[NewConversation]:
    _check_schema(export_validator(), data, source)
    items = []
    for index, conversation in enumerate(data["conversations"]):
        seen: set[str] = set()
        messages = []
        for position, entry in enumerate(conversation["messages"]):
            where = f"conversations[{index}].messages[{position}]"
            if entry["id"] in seen:
                raise ImportFormatError(source, f"{where}.id {entry['id']!r} appears twice")
            parent = entry["parent_id"]
            if parent is not None and parent not in seen:
                raise ImportFormatError(
                    source,
                    f"{where}.parent_id {parent!r} is not the id of an earlier message "
                    "in this conversation",
                )
            seen.add(entry["id"])
            _check_images(entry["message"], f"{where}.message.content", source)
            messages.append(
                NewMessage(
                    key=entry["id"],
                    parent_key=parent,
                    message=entry["message"],
                    metadata=scrub(entry.get("metadata", {})),
                    status=entry.get("status", "complete"),
                    created_at=entry.get("created_at"),
                )
            )
        leaf = conversation.get("active_leaf_id")
        if leaf is not None and leaf not in seen:
            raise ImportFormatError(
                source,
                f"conversations[{index}].active_leaf_id {leaf!r} is not one of its messages",
            )
        settings, resets = make_safe(scrub(conversation["settings"]),
                                     conversation.get("id"))
        if report is not None:
            report.extend(f"{conversation['title'][:80]!r}: {note}." for note in resets)
        items.append(
            NewConversation(
                title=conversation["title"],
                settings=settings,
                messages=messages,
                active_leaf_key=leaf,
                created_at=conversation.get("created_at"),
                # updated_at is left to "now" so the import shows at the top of the list.
            )
        )
    return items


def _from_openai(data: dict[str, Any], source: str) -> list[NewConversation]:
    _check_schema(openai_file_validator(), data, source)
    messages = list(data["messages"])
    for position, message in enumerate(messages):
        _check_images(message, f"messages[{position}].content", source)
    settings: dict[str, Any] = {}
    if isinstance(data.get("model"), str):
        settings["model"] = data["model"]
    # The app keeps the system prompt in the settings, not in the history.
    if messages[0]["role"] == "system" and isinstance(messages[0].get("content"), str):
        settings["system_prompt"] = messages.pop(0)["content"]
    chain = [
        NewMessage(key=str(i), parent_key=str(i - 1) if i else None, message=m)
        for i, m in enumerate(messages)
    ]
    title = _title_from(messages, Path(source).stem or "Imported chat")
    return [NewConversation(title=title, settings=settings, messages=chain)]


def parse_import(data: Any, source: str,
                 report: list[str] | None = None) -> list[NewConversation]:
    """Check an import document and turn it into conversations to insert.

    Args:
        data: The parsed JSON.
        source: The file name, used in error messages.
        report: Collects one sentence per setting reset for safety.

    Raises:
        ImportFormatError: The document is foreign, from a newer app, or invalid.
    """
    check_values(data, source)
    if not isinstance(data, dict):
        kind = type(data).__name__.replace("list", "an array").replace("str", "a string")
        raise ImportFormatError(
            source,
            f"holds {kind} at the top level, not a Desktop Agent export or an "
            'OpenAI-style {"messages": [...]} object',
        )
    if "format" in data:
        if data["format"] != FORMAT_NAME:
            raise ImportFormatError(
                source,
                f"is a {str(data['format'])[:60]!r} file, not a Desktop Agent conversation export",
            )
        version = data.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
            raise ImportFormatError(
                source,
                f"was written by a newer Desktop Agent (format version {version}; this "
                f"version reads up to {FORMAT_VERSION}). Update the app to import it.",
            )
        return _from_export(data, source, report)
    if "messages" in data:
        return _from_openai(data, source)
    raise ImportFormatError(
        source,
        'is neither a Desktop Agent export (no "format" field) nor an OpenAI-style '
        'chat file (no "messages" list)',
    )


def read_import_file(path: Path | str,
                     report: list[str] | None = None) -> list[NewConversation]:
    """Read and check one file (``report`` collects what was reset for safety).

    Raises:
        ImportFormatError: The file cannot be read, is not JSON, or is invalid.
    """
    path = Path(path)
    source = path.name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(source, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(source, "is not UTF-8 text, so it is not a JSON export") from exc
    try:
        data = json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            source, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    except ValueError as exc:  # NaN / Infinity
        raise ImportFormatError(source, str(exc)) from None
    except RecursionError:
        raise ImportFormatError(source, "is nested too deeply to be a conversation export; "
                                        "nothing was imported") from None
    return parse_import(data, source, report)


def _insert(store: Store, items: list[NewConversation], source: str) -> list[ConversationRecord]:
    try:
        return store.insert_conversations(items)
    except ValueError as exc:
        raise ImportFormatError(source, str(exc)) from exc


def import_data(store: Store, data: Any, source: str = "import", *,
                report: list[str] | None = None) -> list[ConversationRecord]:
    """Import an already-parsed document as new conversations (all or nothing)."""
    return _insert(store, parse_import(data, source, report), source)


def import_files(store: Store, paths: Iterable[Path | str], *,
                 report: list[str] | None = None) -> list[ConversationRecord]:
    """Import files as new conversations: all of them, or (on any problem) none.

    Args:
        store: Where the conversations go.
        paths: The files.
        report: Collects one sentence per setting that was reset for safety.

    Raises:
        ImportFormatError: Naming the first bad file and what is wrong with it.
    """
    items: list[NewConversation] = []
    names = []
    for path in paths:
        items.extend(read_import_file(path, report))
        names.append(Path(path).name)
    return _insert(store, items, ", ".join(names) or "import")
