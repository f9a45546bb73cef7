"""Core exception types turned into sentences and actions a person can use.

The window never parses error strings: it maps the core's exception classes
(see :mod:`desktop_agent.core.errors`) to words and to what can be done next.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from desktop_agent.core import errors


class ErrorAction(enum.Enum):
    """What the window offers next to an error."""

    RETRY = "retry"
    PICK_SERVER = "pick_server"
    OPEN_SETTINGS = "open_settings"


@dataclass(frozen=True, slots=True)
class ErrorDescription:
    """An error as shown to a person.

    Attributes:
        sentence: What happened, in plain words, with no secrets or tracebacks.
        actions: What the person can do about it, most useful first.
    """

    sentence: str
    actions: tuple[ErrorAction, ...] = ()

    @property
    def can_retry(self) -> bool:
        """Whether a Retry button makes sense."""
        return ErrorAction.RETRY in self.actions


def _server(exc: errors.APIError) -> str:
    return exc.base_url or "the model server"


def describe_error(exc: BaseException) -> ErrorDescription:
    """Turn any exception from a turn into a sentence and actions."""
    retry, pick = ErrorAction.RETRY, ErrorAction.PICK_SERVER
    if isinstance(exc, errors.RequestTimeoutError):
        return ErrorDescription(
            f"{_server(exc)} did not answer in time. It may still be loading the model.",
            (retry, pick))
    if isinstance(exc, errors.IncompleteReplyError):
        return ErrorDescription(
            "The server ended the reply early. The text so far is kept.", (retry, pick))
    if isinstance(exc, errors.VisionNotSupportedError):
        return ErrorDescription(
            "This model cannot see images. Pick a vision model, or send the message "
            "without the picture.", (pick,))
    if isinstance(exc, errors.ServerConnectionError):
        if not getattr(exc, "mid_stream", False):
            return ErrorDescription(
                f"Could not reach {_server(exc)}. Is the server running?", (retry, pick))
        return ErrorDescription(
            "The connection to the model server dropped before the reply was complete. "
            "The partial reply is kept.", (retry, pick))
    if isinstance(exc, errors.AuthenticationError):
        return ErrorDescription(
            f"{_server(exc)} refused the API key. Check the key in the server settings.",
            (pick, retry))
    if isinstance(exc, errors.ModelNotFoundError):
        return ErrorDescription(
            f"{_server(exc)} does not serve this model. Pick another model.", (pick, retry))
    if isinstance(exc, errors.ContextTooLongError):
        return _context_too_long(exc)
    if isinstance(exc, errors.RateLimitError):
        return ErrorDescription(
            "The server is busy and asked to slow down. Try again in a moment.", (retry,))
    if isinstance(exc, errors.ServerError):
        status = f" (status {exc.status})" if exc.status else ""
        return ErrorDescription(f"The model server reported an error{status}.", (retry, pick))
    if isinstance(exc, errors.APIError):
        return ErrorDescription("Talking to the model server failed.", (retry, pick))
    if isinstance(exc, errors.PromptBlockedError):
        return ErrorDescription(f"The prompt was not sent: {exc}", ())
    if isinstance(exc, errors.ConfigurationError):
        return ErrorDescription(f"The conversation settings are not valid: {exc}",
                                (ErrorAction.OPEN_SETTINGS,))
    if isinstance(exc, errors.TurnInProgressError):
        return ErrorDescription("A reply is still being written; stop it first.", ())
    if isinstance(exc, errors.AgentError):
        return ErrorDescription(str(exc) or "The agent stopped with an error.", (retry,))
    return ErrorDescription(
        "Something went wrong inside Desktop Agent. The details are in the log.", (retry,))


def _context_too_long(exc: errors.ContextTooLongError) -> ErrorDescription:
    """The core's sentence names the server's window and what to change, once it knows them."""
    if exc.fix is not None:
        return ErrorDescription(str(exc), (ErrorAction.OPEN_SETTINGS, ErrorAction.RETRY))
    return ErrorDescription(
        "The conversation is longer than the model's context window. Start a new "
        "conversation, or pick a model with a longer context.",
        (ErrorAction.PICK_SERVER, ErrorAction.RETRY))
