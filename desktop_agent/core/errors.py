"""The core's exception hierarchy.

Front ends map these types to sentences and actions (retry, pick another
server); they never parse error strings. Every error the core raises is a
:class:`AgentError`::

    AgentError
    ├── ConfigurationError (also ValueError)   invalid AgentOptions, duplicate tools
    ├── APIError                               anything from talking to the model server
    │   ├── ServerConnectionError              refused, reset, dropped mid-stream
    │   │   ├── RequestTimeoutError            no answer within the timeout
    │   │   └── IncompleteReplyError           the stream ended with no finish_reason and no [DONE]
    │   ├── AuthenticationError                401/403: wrong or missing API key
    │   ├── ModelNotFoundError                 404 / unknown model
    │   ├── ContextTooLongError                the prompt exceeds the model's context
    │   ├── RateLimitError                     429 after retries
    │   ├── ServerError                        any other status, with status and body
    │   ├── VisionNotSupportedError            a picture for a model that cannot see
    │   ├── MalformedStreamError               chunks of the wrong shape (a list of numbers...)
    │   └── ReplyTooLongError                  the reply passed the client's cap (max_tokens)
    ├── PromptBlockedError (also RuntimeError) a UserPromptSubmit hook refused the prompt
    ├── MaxTurnsExceededError                  (not raised any more; kept for scripts that catch it)
    ├── TurnInProgressError                    query() while the previous turn still streams
    └── ToolInputError                         tool arguments failed schema validation

Where the seed SDK (open-agent-sdk 0.4.2) raised a built-in exception for the
same event, the typed error also subclasses it, so the seed's scripts keep
catching it: a blocked prompt was a ``RuntimeError``; invalid options,
duplicate tool names and an unknown ``tool_call_id`` were ``ValueError``.

Messages never contain API keys or Authorization headers: response bodies are
passed through :func:`redact` before they are kept.
"""

from __future__ import annotations

import re

from desktop_agent.core.secret_forms import replace_forms

_SECRET_PATTERNS = [
    re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE),
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(\"?api[_-]?key\"?\s*[:=]\s*\"?)[^\s\",}]{4,}", re.IGNORECASE),
]


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove API keys and bearer tokens from text that may be shown or logged.

    Args:
        text: Any text that came from a server or a request.
        secrets: Known secret values (e.g. the configured API key) to blank out
            wherever they appear, whatever their shape.
    """
    for secret in secrets:
        if secret and len(secret) >= 4 and secret != "not-needed":
            text = replace_forms(text, secret, "[redacted]")
    for pattern in _SECRET_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + "[redacted]", text)
        else:
            text = pattern.sub("[redacted]", text)
    return text


class AgentError(Exception):
    """Base class of every error the core raises."""


class ConfigurationError(AgentError, ValueError):
    """Options or tools are invalid; raised at construction time."""


class APIError(AgentError):
    """Talking to the model server failed.

    Attributes:
        status: HTTP status code, or None when no response arrived.
        body: The (redacted) response body, or an empty string.
        base_url: The server the request went to.
        mid_stream: True when the reply had started streaming before the failure.
        request_id: The server's id for the failed request (``x-request-id``), when it sent one.
    """

    def __init__(
        self, message: str, *, status: int | None = None, body: str = "", base_url: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.base_url = base_url
        self.mid_stream = False  # raised while reading a reply that had started
        self.request_id: str | None = None


class ServerConnectionError(APIError):
    """The server could not be reached, or the connection dropped mid-stream."""


class RequestTimeoutError(ServerConnectionError):
    """The server did not answer within the configured timeout."""


class IncompleteReplyError(ServerConnectionError):
    """The server ended the reply early: the stream closed with no ``finish_reason``.

    Neither a ``finish_reason`` nor ``[DONE]`` arrived, so the reply may be cut
    off (a proxy or mock truncating, a server crashing between chunks). The
    text so far is kept in the history; tool calls from such a reply are not
    run, because their arguments may be cut off too.
    """


class AuthenticationError(APIError):
    """The server refused the API key (401/403)."""


class ModelNotFoundError(APIError):
    """The server does not serve the requested model."""


class ContextTooLongError(APIError):
    """The conversation is longer than the model's context window.

    The message names the window and the fix (compaction on, a larger window
    and where to set it) once the core knows them.

    Attributes:
        window: The window the server applies, where its answer said (llama.cpp's ``n_ctx``).
        prompt_tokens: How long the server counted the refused prompt, where it said.
        fix: The advice added to the message, None before any was.
    """

    def __init__(self, message: str, *, status: int | None = None, body: str = "",
                 base_url: str = "", window: int | None = None,
                 prompt_tokens: int | None = None) -> None:
        super().__init__(message, status=status, body=body, base_url=base_url)
        self.window = window
        self.prompt_tokens = prompt_tokens
        self.fix: str | None = None

    def advise(self, fix: str) -> None:
        """Add what to do to the message (once)."""
        if self.fix is None:
            self.fix = fix
            self.args = (f"{self.args[0]} {fix}", *self.args[1:])


class RateLimitError(APIError):
    """The server kept answering 429 after every retry."""


class ServerError(APIError):
    """Any other error status from the server."""


class VisionNotSupportedError(APIError):
    """The prompt holds a picture and the model cannot see.

    Raised before sending when the model is known to lack vision
    (``AgentOptions.vision`` is False), or when the server refused the image
    (``status`` is then the server's). Nothing was added to the history for
    a refused new prompt, so the person can resend it without the picture.
    """


class MalformedStreamError(APIError):
    """The server streamed chunks of a shape no OpenAI-compatible server sends.

    ``choices`` that are not objects, ``content`` that is a number, nesting too
    deep to decode: the turn ends with this error and the history keeps only
    what was valid before it.
    """


class ReplyTooLongError(APIError):
    """The reply kept streaming past the client's cap (tied to ``max_tokens``).

    A server that ignores ``max_tokens`` (or streams forever) would otherwise
    grow the reply, and the app's memory, without bound. What arrived before
    the cap is kept.
    """


class PromptBlockedError(AgentError, RuntimeError):
    """A UserPromptSubmit hook refused the prompt; nothing was sent.

    Also a ``RuntimeError``: the seed raised one for a blocked prompt, and its
    scripts catch it as such (``except RuntimeError``).
    """


class MaxTurnsExceededError(AgentError):
    """Kept so that scripts catching it still import; the core no longer raises it.

    ``AgentOptions.max_turns`` now limits the model requests of one query (as
    in claude-agent-sdk); reaching it ends the tool loop with a
    ``ToolUseError`` block and ``turn_metadata["stopped"]``, keeping the
    history consistent, instead of refusing the next query.
    """


class TurnInProgressError(AgentError):
    """A new query was started while the previous turn is still running."""


class ToolInputError(AgentError):
    """Tool arguments do not match the tool's input schema."""
