"""The one place secrets are blanked out of what tools and servers say.

Secrets reach tools (as a command's environment, as MCP servers' env and
headers) and servers (the API key). Whatever those print back - a file that
holds a token, a grep hit, an MCP result, a server error chunk that echoes the
key - passes through here before it becomes a block, enters history, an
event, the store or an export: :func:`redact_values` for tool results and tool
errors (in :func:`~desktop_agent.core.tooling.run_call.run_tool_call`),
:func:`scrub_error` for every error that ends a turn (in
:meth:`~desktop_agent.core.client.Client.receive_messages`).

Only known secret *values* (as written, or in any of the forms of
:mod:`~desktop_agent.core.secret_forms`: base64, URL-encoded, hex, JSON-escaped,
split by terminal escapes) are replaced in tool results: pattern matching
(``sk-...``) would corrupt ordinary file content a model reads. Errors also
get the shape patterns of :func:`~desktop_agent.core.errors.redact`.
"""

from __future__ import annotations

from collections.abc import Iterable

from desktop_agent.core.errors import AgentError, APIError, redact
from desktop_agent.core.secret_forms import redact_text
from desktop_agent.core.tooling.tooling_settings import ToolingSettings

#: Shorter values are not redacted: blanking "abc" everywhere would corrupt output.
MIN_SECRET_LENGTH = 4
MARK = "[redacted]"


def secret_values(options: ToolingSettings) -> tuple[str, ...]:
    """The values to blank out for ``options``: its secrets and its API key, longest first."""
    values = {v for v in options.secret_values if isinstance(v, str)}
    if options.api_key and options.api_key != "not-needed":
        values.add(options.api_key)
    return tuple(sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH),
                        key=len, reverse=True))


def redact_values(text: str, values: Iterable[str]) -> str:
    """``text`` with every occurrence of each value replaced by ``[redacted]``.

    Also the value's other forms (:mod:`desktop_agent.core.secret_forms`).
    """
    return redact_text(text, dict.fromkeys(values, MARK))


def scrub_error(exc: AgentError, values: Iterable[str]) -> None:
    """Blank secrets (known values and key shapes) out of an error, in place."""
    known = tuple(values)
    exc.args = tuple(redact(a, known) if isinstance(a, str) else a for a in exc.args)
    if isinstance(exc, APIError) and exc.body:
        exc.body = redact(exc.body, known)
