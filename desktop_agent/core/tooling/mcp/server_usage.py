"""Which configured MCP servers a conversation's tool list actually uses.

Starting a server runs a program (or opens a connection) the person
configured once for some conversations; a conversation that names none of
its tools must not start it. Tool names are ``<server>__<tool>`` made safe
(see :func:`~.tool_mapping.core_tool_name`), so a server is used when an
enabled name begins with its safe prefix. A long name may match more than one
server's prefix; then both start, which errs on the side of working.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SAFE = re.compile(r"[^A-Za-z0-9_-]")
_PREFIX_CHARS = 40


def server_prefix(server: str) -> str:
    """The start every tool name of ``server`` shares."""
    safe = _SAFE.sub("_", server)
    return safe[:_PREFIX_CHARS] if len(safe) > _PREFIX_CHARS else safe + "__"


def servers_used(tool_names: Iterable[str], servers: Iterable[str]) -> list[str]:
    """The servers (in their configured order) whose tools appear in ``tool_names``."""
    names = [n for n in tool_names if isinstance(n, str)]
    return [s for s in servers if any(n.startswith(server_prefix(s)) for n in names)]
