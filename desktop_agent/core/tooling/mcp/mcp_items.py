"""What a server offers besides tools, as plain values: prompts, resources, templates.

No SDK import: front ends and the session name these types while the ``mcp``
SDK loads only when a server starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

#: Characters of a prompt's text kept (the rest is cut, and the prompt says so).
PROMPT_TEXT_LIMIT = 100_000
#: Characters of a resource's text kept when attached to a message.
RESOURCE_TEXT_LIMIT = 100_000

_VARIABLE = re.compile(r"\{([+#./;?&]?)([^}]*)\}")


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a server's prompt."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class McpPrompt:
    """A prompt a server offers (``prompts/list``), shown as ``/server:name``.

    Attributes:
        server: The configured server name.
        name: The prompt's name.
        title: Its title, if the server gave one.
        description: What it does.
        arguments: Its arguments, in the server's order.
    """

    server: str
    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()

    @property
    def command(self) -> str:
        """How it is typed in the composer: ``server:name``."""
        return f"{self.server}:{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "name": self.name, "title": self.title,
                "description": self.description, "command": self.command,
                "arguments": [{"name": a.name, "description": a.description,
                               "required": a.required} for a in self.arguments]}


@dataclass(frozen=True, slots=True)
class McpResource:
    """A resource a server lists (``resources/list``), offered as ``@server:name``."""

    server: str
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "uri": self.uri, "name": self.name, "title": self.title,
                "description": self.description, "mime_type": self.mime_type,
                "size": self.size}


@dataclass(frozen=True, slots=True)
class McpResourceTemplate:
    """A resource template (``resources/templates/list``): a URI with parameters to fill."""

    server: str
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None

    @property
    def parameters(self) -> tuple[str, ...]:
        """The template's variable names, in order."""
        names: list[str] = []
        for _op, body in _VARIABLE.findall(self.uri_template):
            for part in body.split(","):
                name = part.strip().rstrip("*").split(":")[0]
                if name and name not in names:
                    names.append(name)
        return tuple(names)

    def expand(self, values: dict[str, str]) -> str:
        """The URI for ``values`` (RFC 6570 simple, reserved and path expansion).

        A value is percent-encoded (``/`` too, except in ``{+var}``), so
        ``../../etc/passwd`` stays one segment of the server's URI: the URI goes
        to the server, which decides what it names; nothing here reads a file.
        """
        def one(match: re.Match[str]) -> str:
            op, body = match.group(1), match.group(2)
            names = [p.strip().rstrip("*").split(":")[0] for p in body.split(",")]
            safe = ":/?#[]@!$&'()*+,;=" if op in ("+", "#") else ""
            parts = [quote(str(values.get(n, "")), safe=safe) for n in names]
            if op == "/":
                return "".join("/" + p for p in parts)
            if op == "?":
                return "?" + "&".join(f"{n}={p}" for n, p in zip(names, parts, strict=True))
            if op == "#":
                return "#" + ",".join(parts)
            return ",".join(parts)

        return _VARIABLE.sub(one, self.uri_template)

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "uri_template": self.uri_template, "name": self.name,
                "title": self.title, "description": self.description,
                "mime_type": self.mime_type, "parameters": list(self.parameters)}


@dataclass(frozen=True, slots=True)
class PromptText:
    """A prompt's result made into what a person sends: text, pictures, a note when cut.

    Attributes:
        text: The messages as one text (each role named when the prompt has
            more than the user's), cut at :data:`PROMPT_TEXT_LIMIT`.
        images: Pictures the prompt holds, as ``data:`` URIs.
        cut: Whether the text was cut.
        size: Characters the prompt's text had before any cut.
        messages: ``(role, text)`` of each message, as the server sent them (cut too).
    """

    text: str
    images: tuple[str, ...] = ()
    cut: bool = False
    size: int = 0
    messages: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "images": list(self.images), "cut": self.cut,
                "size": self.size, "messages": [list(m) for m in self.messages]}


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """A resource read for a message: text, a picture, or binary data named only.

    Attributes:
        uri: The resource's URI.
        name: The name shown on its chip.
        mime_type: Its type, if known.
        text: Its text (cut at :data:`RESOURCE_TEXT_LIMIT`), or None.
        image_url: A ``data:`` URI for a picture, or None.
        size: Bytes (binary) or characters (text) it had.
        cut: Whether the text was cut.
    """

    uri: str
    name: str
    mime_type: str | None = None
    text: str | None = None
    image_url: str | None = None
    size: int = 0
    cut: bool = False

    @property
    def binary(self) -> bool:
        """Neither text nor a picture: only its name and size go with the message."""
        return self.text is None and self.image_url is None

    def to_dict(self) -> dict[str, Any]:
        return {"uri": self.uri, "name": self.name, "mime_type": self.mime_type,
                "text": self.text, "image_url": self.image_url, "size": self.size,
                "cut": self.cut, "binary": self.binary}
