"""What an MCP server may ask of the client, and who answers it: the caller of the moment.

A server may ask the client to run its model (``sampling/createMessage``), to
ask the person for values (``elicitation/create``) and for the folders it may
work in (``roots/list``). The servers are shared by every conversation of an
app, so these requests are answered by whoever is using the server: a
:class:`McpCaller` travels in a context variable (set for a turn's tool calls by
the core from ``AgentOptions``, or by an app around its own MCP calls) and each
request of the server goes to the newest caller with a request in flight, or
else to the last one that used it.

These are plain types with no SDK import: ``AgentOptions`` names them, and the
``mcp`` SDK loads only when a server starts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.elicitation_form import FormField

#: Sampling requests one server may make in one turn; more are refused at once.
DEFAULT_SAMPLING_LIMIT = 10


class ServerRequestRefused(Exception):
    """A sampling request was denied or could not run; the message goes back to the server."""


@dataclass(frozen=True, slots=True)
class SamplingMessage:
    """One message a server wants the model to read.

    Attributes:
        role: ``user`` or ``assistant``.
        text: Its text (a picture or sound is described in words here).
        images: Pictures as ``data:`` URIs, for a model that can see.
    """

    role: str
    text: str
    images: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A server's ``sampling/createMessage``: what it wants the model to answer.

    Attributes:
        server: The configured name of the server asking.
        messages: The conversation it sends, oldest first.
        system_prompt: Its system prompt, if any.
        max_tokens: The most tokens the answer may take.
        temperature: Its sampling temperature, if it set one.
        stop_sequences: Where the answer should stop.
        model_hints: Model names it would prefer (advice only).
    """

    server: str
    messages: tuple[SamplingMessage, ...]
    system_prompt: str | None
    max_tokens: int
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SamplingReply:
    """The model's answer to a sampling request."""

    text: str
    model: str
    stop_reason: str | None = "endTurn"


ElicitationAction = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """A server's ``elicitation/create``: a form to fill, or a link to open.

    Attributes:
        server: The configured name of the server asking.
        message: What the server says it wants, to show above the form.
        mode: ``form`` (fill :attr:`fields`) or ``url`` (open :attr:`url` in a browser).
        fields: The form's fields, in the schema's order (empty for ``url``).
        url: The page to open (``url`` mode only).
        elicitation_id: The server's id for a ``url`` elicitation.
    """

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    fields: tuple[FormField, ...] = ()
    url: str | None = None
    elicitation_id: str | None = None


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """The person's answer: accept (with the values), decline, or cancel (no answer)."""

    action: ElicitationAction
    content: dict[str, Any] | None = None


SamplingCallback = Callable[[SamplingRequest], Awaitable[SamplingReply]]
"""Runs a sampling request (asking the person first, as an app should); raises
:class:`ServerRequestRefused` to deny it."""

ElicitationCallback = Callable[[ElicitationRequest], Awaitable[ElicitationAnswer]]
"""Shows an elicitation to the person and returns the answer."""


@dataclass(eq=False)
class McpCaller:
    """Who uses the MCP servers now: one turn of one conversation, or an app's own call.

    Attributes:
        sampling: Answers sampling requests (None: they are refused, saying why).
        elicitation: Answers elicitations (None: they are refused, saying why).
        roots: The folders the servers may work in (``roots/list``); a caller whose
            roots differ from what a server was told makes it send ``roots/list_changed``.
        sampling_limit: Sampling requests one server may make of this caller.
        counts: Sampling requests made so far, by server (a new caller per turn
            starts from zero).
        label: Who this is, for logs.
    """

    sampling: SamplingCallback | None = None
    elicitation: ElicitationCallback | None = None
    roots: tuple[Path, ...] = ()
    sampling_limit: int = DEFAULT_SAMPLING_LIMIT
    counts: dict[str, int] = field(default_factory=dict)
    label: str = "agent"


_caller: ContextVar[McpCaller | None] = ContextVar("desktop_agent_mcp_caller", default=None)


def current_caller() -> McpCaller | None:
    """The caller the current task works for (None outside any)."""
    return _caller.get()


@contextlib.contextmanager
def using_caller(caller: McpCaller | None) -> Iterator[None]:
    """Make MCP requests sent inside the block (and tasks started there) ``caller`` 's."""
    token = _caller.set(caller)
    try:
        yield
    finally:
        _caller.reset(token)


def set_caller(caller: McpCaller | None) -> None:
    """Make ``caller`` the current task's caller (for a task made to run a call)."""
    _caller.set(caller)
