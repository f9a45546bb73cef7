"""The one set of defaults a conversation gets, whichever front end drives it.

Before the session layer the window and the REST server disagreed on each of
these (tools all vs none, 10 vs 5 tool rounds, a 2 s vs 5 s stop wait, a
missing API key sent as "not-needed" vs refused). The choices, and why:

* **Tools:** a conversation without a ``tools`` setting offers every tool
  (built-ins and the MCP servers of ``config.json``). Every call is still
  asked about unless the person turned confirmation off, and deny rules
  always apply, so offering tools by default costs no safety; a script that
  wants none sets ``"tools": []``.
* **Tool rounds:** 10 per turn, so multi-step work (read, edit, run, check)
  finishes without a "continue" prompt; the doom-loop guard stops repeats.
* **Stop wait:** 2 s for a stopped turn to end by itself before its task is
  cancelled: a person who pressed Stop expects it to stop now, and the
  partial reply is kept either way.
* **Missing API key:** when a conversation names a key (``api_key_name``)
  that is not stored, the turn fails with a sentence saying so; sending no
  key to a server that needs one would only fail later with a vaguer 401.
* **Approval timeout:** 300 s, then the call is denied.
"""

from __future__ import annotations

DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 4096
DEFAULT_MAX_TOOL_ITERATIONS = 10
STOP_GRACE_SECONDS = 2.0
DEFAULT_APPROVAL_TIMEOUT = 300.0
APPROVAL_BACKSTOP_SECONDS = 30.0
"""The core's own approval limit is the broker's plus this, so the broker's
visible timeout always fires first and the core's is only a backstop."""
NO_API_KEY = "not-needed"
"""What is sent as the key when a conversation names none (local servers)."""
