"""One question an MCP server asks a conversation, as the front ends show it.

Kept apart from :mod:`.server_questions` (which waits for the answers and reports
events) so the event vocabulary can name it without importing back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from desktop_agent.core.tooling.mcp.server_requests import ElicitationRequest, SamplingRequest


class SamplingChoice(enum.StrEnum):
    """The answers to a sampling request."""

    ALLOW_ONCE = "allow_once"
    ALLOW_SERVER = "allow_server"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class ServerQuestion:
    """One open question of a server.

    Attributes:
        id: Its id (the REST routes' and the card's).
        kind: ``sampling`` or ``elicitation``.
        request: What the server asked.
        timeout: Seconds before it is denied (sampling) or cancelled (elicitation).
    """

    id: str
    kind: str
    request: SamplingRequest | ElicitationRequest
    timeout: float | None

    def to_dict(self) -> dict[str, Any]:
        """The question as JSON (REST events and the pending list)."""
        request = self.request
        body: dict[str, Any] = {"id": self.id, "kind": self.kind, "server": request.server,
                                "timeout": self.timeout}
        if isinstance(request, SamplingRequest):
            body.update(messages=[{"role": m.role, "text": m.text, "images": len(m.images)}
                                  for m in request.messages],
                        system_prompt=request.system_prompt, max_tokens=request.max_tokens,
                        temperature=request.temperature)
        else:
            body.update(message=request.message, mode=request.mode, url=request.url,
                        fields=[f.to_dict() for f in request.fields])
        return body


__all__ = ["SamplingChoice", "ServerQuestion"]
