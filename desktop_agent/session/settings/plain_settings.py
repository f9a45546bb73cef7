"""Settings changes the schema certainly accepts, told without loading pydantic.

Why: when the window's server search finds a model server it saves the
server and model into the conversations that have none (``base_url``,
``model``, ``context_length``, ``vision``...). Checking that patch against
:class:`~desktop_agent.session.settings.conversation_settings.ConversationSettings`
loaded pydantic and built the schema: about 10 MB of an idle window's resident
memory (``bench/startup.py``), for values the app itself made. The keys here
carry the schema's own limits (``tests/session/test_plain_settings.py`` compares
them with the schema's fields, so the two cannot drift apart); a change whose
every value passes them is one the schema accepts. Anything else (another key,
a value of another type, a value out of range) is left to the schema, which
names what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

WEB_ADDRESS = r"^https?://[^\s]+$"
"""What ``base_url`` must match (shown as its pattern in the REST API's schema)."""
WEB_ADDRESS_RE = re.compile(WEB_ADDRESS)


@dataclass(frozen=True, slots=True)
class PlainRule:
    """One key's type and limits, as the schema states them.

    Attributes:
        kind: The value's exact type (``str``, ``int`` or ``bool``).
        min_length: Fewest characters (text).
        max_length: Most characters (text).
        ge: Smallest number.
        le: Largest number.
        choices: The only values allowed (a Literal in the schema).
        web_address: Whether the text must be an http(s) address.
    """

    kind: type
    min_length: int | None = None
    max_length: int | None = None
    ge: int | None = None
    le: int | None = None
    choices: tuple[str, ...] = ()
    web_address: bool = False

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` certainly meets this rule (its exact type, within the limits)."""
        if type(value) is not self.kind:  # exact: a bool is an int, True is not a count
            return False
        if self.choices and value not in self.choices:
            return False
        if isinstance(value, str):
            if self.min_length is not None and len(value) < self.min_length:
                return False
            if self.max_length is not None and len(value) > self.max_length:
                return False
            return not self.web_address or WEB_ADDRESS_RE.fullmatch(value) is not None
        if isinstance(value, bool) or not isinstance(value, int):
            return True  # a bool: its type is all there is to check
        if self.ge is not None and value < self.ge:
            return False
        return self.le is None or value <= self.le


PLAIN_RULES: dict[str, PlainRule] = {
    "server": PlainRule(str, choices=("local",)),
    "base_url": PlainRule(str, max_length=2000, web_address=True),
    "model": PlainRule(str, min_length=1, max_length=4000),
    "api_key_name": PlainRule(str, min_length=1, max_length=500),
    "context_length": PlainRule(int, ge=1, le=100_000_000),
    "vision": PlainRule(bool),
}
"""The keys choosing a server and model (what a found server writes), with the schema's limits."""


def plainly_valid(changes: Mapping[str, Any]) -> bool:
    """Whether the schema certainly accepts this patch (``None`` removes a key: always fine).

    False means "ask the schema", not "invalid".
    """
    return all(value is None or (key in PLAIN_RULES and PLAIN_RULES[key].accepts(value))
               for key, value in changes.items())
