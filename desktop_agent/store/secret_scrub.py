"""A safety net that keeps key values out of settings, metadata and exports.

Keys belong in the keyring (:mod:`desktop_agent.appdata.secrets`) and are referred to
by name. These checks catch a value that slipped through anyway: by the name
of the field holding it (``api_key``, ``token``, ``password``...) or by its
shape (``sk-...``, ``Bearer ...``, GitHub and Slack tokens, AWS key ids).
Field names ending in ``_name`` are names, not secrets, and pass.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"

_SECRET_FIELD_WORDS = ("apikey", "token", "secret", "password", "passwd", "authorization", "bearer")
_SECRET_SHAPES = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
]


def is_secret_field(key: str) -> bool:
    """True when a dict key names a secret value (but not a secret's *name*)."""
    folded = re.sub(r"[^a-z]", "", key.lower())
    if key.lower().endswith("_name") or folded.endswith("name"):
        return False
    return any(folded.endswith(word) for word in _SECRET_FIELD_WORDS)


def has_secret_shape(text: str) -> bool:
    """True when text contains something shaped like a known kind of token."""
    return any(p.search(text) for p in _SECRET_SHAPES)


def redact_shapes(text: str) -> str:
    """Replace every token-shaped substring with ``[redacted]``."""
    for pattern in _SECRET_SHAPES:
        text = pattern.sub(REDACTED, text)
    return text


def find_secret(value: Any, path: str = "") -> str | None:
    """The path of the first secret-looking value inside ``value``, or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(item, str) and item and is_secret_field(str(key)) and len(item) >= 4:
                return where
            found = find_secret(item, where)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = find_secret(item, f"{path}[{index}]")
            if found:
                return found
    elif isinstance(value, str) and has_secret_shape(value):
        return path or "(value)"
    return None


def scrub(value: Any) -> Any:
    """A copy of ``value`` with secret-looking fields and substrings redacted."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(item, str) and item and is_secret_field(str(key)) and len(item) >= 4:
                out[key] = REDACTED
            else:
                out[key] = scrub(item)
        return out
    if isinstance(value, list):
        return [scrub(item) for item in value]
    if isinstance(value, str):
        return redact_shapes(value)
    return value
