"""The forms a secret takes in text: as written, base64 and URL-encoded.

Blanking a secret by its exact value missed the same secret printed by
``base64`` (``echo "$TOKEN" | base64``), in a basic-auth header, or quoted in
a URL (``%2B`` for ``+``). Every redaction in the core asks here for the forms
to look for, so the list is kept once.

Base64 of a secret depends on where it starts in the encoded stream (its
offset modulo 3), so each of the three alignments is listed, cut to the
characters that only the secret's bytes decide: the secret is found inside
``base64 <<< "KEY=$SECRET"`` too. A few characters around it stay, which
reveal at most a handful of its bits.
"""

from __future__ import annotations

import base64
import functools
from urllib.parse import quote, quote_plus

#: Encoded forms shorter than this are not looked for: they would match ordinary text.
MIN_FORM_LENGTH = 8


@functools.lru_cache(maxsize=256)
def secret_forms(value: str) -> tuple[tuple[str, str], ...]:
    """``(form, kind)`` pairs for ``value``, longest first; ``kind`` is '' for the value itself.

    Kinds: ``base64`` (standard and URL-safe alphabets, any alignment) and
    ``URL-encoded`` (``quote`` and ``quote_plus``).
    """
    found: dict[str, str] = {value: ""}
    raw = value.encode("utf-8", "surrogateescape")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        start = 4 if offset else 0
        end = (offset + len(raw)) // 3 * 4
        for alphabet in (encoded, encoded.replace("+", "-").replace("/", "_")):
            part = alphabet[start:end]
            if offset == 0 and (len(raw) % 3):
                whole = alphabet.rstrip("=")  # the secret alone, at the end of the stream
                if len(whole) >= MIN_FORM_LENGTH:
                    found.setdefault(whole, "base64")
            if len(part) >= MIN_FORM_LENGTH:
                found.setdefault(part, "base64")
    for quoted in (quote(value, safe=""), quote(value), quote_plus(value)):
        if quoted != value:
            found.setdefault(quoted, "URL-encoded")
    return tuple(sorted(found.items(), key=lambda item: -len(item[0])))


def replace_forms(text: str, value: str, mark: str) -> str:
    """``text`` with ``value`` in each of its forms replaced by ``mark``.

    An encoded form gets the kind inside the mark (``[redacted (base64)]``),
    so a reader knows the output was not simply missing a word.
    """
    for form, kind in secret_forms(value):
        if form in text:
            shown = f"{mark[:-1]} ({kind})]" if kind and mark.endswith("]") else mark
            text = text.replace(form, shown)
    return text
