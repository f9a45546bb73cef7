"""Turning what a person types into a safe SQLite FTS5 query.

FTS5 has its own query language (``AND``, ``NEAR``, quotes, ``*``, column
filters); typed text must never be parsed as that language, or a stray quote
or hyphen becomes a syntax error. Each word is quoted as a literal phrase and
every word must match; the last word also matches as a prefix, so results
appear while the person is still typing.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str | None:
    """The FTS5 MATCH expression for typed text, or None when it has no words."""
    words = _WORD.findall(text)
    if not words:
        return None
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    quoted[-1] += "*"
    return " ".join(quoted)


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere, with ``%`` and ``_`` taken literally."""
    escaped = text.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
