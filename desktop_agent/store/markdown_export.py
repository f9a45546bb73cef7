"""One conversation as Markdown, for reading (not for importing back).

The active branch is written in order: who spoke, when, the text, thinking
folded in a ``<details>`` block, each tool call with its arguments and
approval decision, and each tool result. Known secret values are blanked as
in the JSON export.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

from desktop_agent.store.errors import NotFoundError
from desktop_agent.store.export_json import blank_values, secret_values_to_blank
from desktop_agent.store.message_text import content_text
from desktop_agent.store.records import MessageRecord
from desktop_agent.store.secret_scrub import scrub
from desktop_agent.store.store import Store

_ROLE_TITLES = {
    "user": "User",
    "assistant": "Assistant",
    "tool": "Tool result",
    "system": "System",
    "developer": "Developer",
}
_STATUS_NOTES = {
    "interrupted": "*(reply interrupted before it finished)*",
    "streaming": "*(reply still being written)*",
    "error": "*(reply failed)*",
}


def _fence(text: str, language: str = "") -> str:
    """A fenced block that cannot be closed early by backticks inside ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _when(epoch: float) -> str:
    moment = datetime.datetime.fromtimestamp(epoch, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


_DECISION_WORDS = {
    "allow": "approved",
    "allow_once": "approved once",
    "allow_conversation": "approved for this conversation",
    "allowed_for_conversation": "approved for this conversation",
    "allow_always": "always allowed",
    "allowed_by_rule": "allowed by a rule",
    "auto_execute": "ran without asking (auto-execute)",
    "deny": "denied",
    "timeout": "denied (no answer in time)",
    "expired": "denied (no answer in time)",
    "cancelled": "cancelled",
}


def _approval_text(approval: Any) -> str:
    if not isinstance(approval, dict) or "decision" not in approval:
        return ""
    decision = str(approval["decision"])
    words = _DECISION_WORDS.get(decision, decision.replace("_", " "))
    by = f" by {approval['by']}" if approval.get("by") else ""
    note = approval.get("reason") or approval.get("message")
    return f"{words}{by}: {note}" if note else f"{words}{by}"


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        try:
            return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
        except ValueError:
            return raw
    return json.dumps(raw, indent=2, ensure_ascii=False)


def _message_markdown(record: MessageRecord) -> str:
    message, metadata = record.message, record.metadata
    heading = _ROLE_TITLES.get(record.role, record.role.title())
    if record.role == "tool" and message.get("name"):
        heading += f": {message['name']}"
    details = [_when(record.created_at)]
    if metadata.get("model"):
        details.append(f"`{metadata['model']}`")
    parts = [f"## {heading}", "*" + " · ".join(details) + "*"]
    thinking = metadata.get("thinking") or message.get("reasoning_content")
    if thinking:
        parts.append(f"<details><summary>Thinking</summary>\n\n{thinking}\n\n</details>")
    text = content_text(message.get("content"), image_placeholder="*[image]*")
    if text:
        parts.append(_fence(text) if record.role == "tool" else text)
    call_status = metadata.get("tool_calls") if isinstance(metadata.get("tool_calls"), dict) else {}
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        line = f"**Tool call** `{function.get('name', '?')}`"
        status = call_status.get(call.get("id"), {}) if isinstance(call_status, dict) else {}
        decision = _approval_text(status.get("approval") if isinstance(status, dict) else None)
        if decision:
            line += f" ({decision})"
        parts.append(line + "\n\n" + _fence(_arguments(function.get("arguments", "")), "json"))
    decision = _approval_text(metadata.get("approval"))
    if decision:
        parts.append(f"*Approval: {decision}*")
    if record.status in _STATUS_NOTES:
        parts.append(_STATUS_NOTES[record.status])
    return "\n\n".join(parts)


def conversation_to_markdown(
    store: Store, conversation_id: str, *, secret_values: list[str] | None = None
) -> str:
    """The conversation's active branch as a Markdown document.

    Raises:
        NotFoundError: No conversation with that id.
    """
    record = store.get_conversation(conversation_id)
    if record is None:
        raise NotFoundError(f"no conversation {conversation_id}")
    settings = scrub(record.settings)
    lines = [f"# {record.title}", ""]
    facts = []
    if settings.get("model"):
        facts.append(f"- Model: `{settings['model']}`")
    if settings.get("base_url"):
        facts.append(f"- Server: `{settings['base_url']}`")
    facts.append(f"- Started: {_when(record.created_at)}")
    lines += facts
    if settings.get("system_prompt"):
        quoted = "\n".join("> " + line for line in str(settings["system_prompt"]).splitlines())
        lines += ["", "**System prompt**", "", quoted]
    path = store.active_path(conversation_id)
    total = store.count_messages(conversation_id)
    if total > len(path):
        lines += [
            "",
            f"*This is the active branch; {total - len(path)} message(s) on other "
            "branches are in the JSON export.*",
        ]
    body = "\n\n---\n\n".join(_message_markdown(m) for m in path)
    document = "\n".join(lines) + "\n\n---\n\n" + body + "\n"
    secrets = secret_values_to_blank() if secret_values is None else secret_values
    return blank_values(document, secrets)  # type: ignore[no-any-return]
