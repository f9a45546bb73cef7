"""What the constrained-call tests read off a request and a turn's items."""

from __future__ import annotations

from typing import Any

from desktop_agent import TextBlock


def branches(request: dict[str, Any]) -> list[str]:
    """What a constrained request lets the model reply: "answer" and the tools' names."""
    out = []
    for branch in request["response_format"]["json_schema"]["schema"]["anyOf"]:
        name = branch["properties"].get("name")
        out.append(name["const"] if name else "answer")
    return out


def text_of(items: list[Any]) -> str:
    """The turn's text, its blocks joined."""
    return "".join(i.text for i in items if isinstance(i, TextBlock))
