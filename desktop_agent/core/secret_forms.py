"""The forms a secret takes in text, and where they are: every redaction in the app asks here.

Blanking a secret by its exact value missed the same secret printed by
``base64`` (``echo "$TOKEN" | base64``), in a basic-auth header, quoted in a
URL (``%2B`` for ``+``), dumped by ``xxd -p``, or written into JSON with its
quotes escaped. So each secret is looked for in every one of those forms,
listed once here (:func:`secret_forms`).

Base64 of a secret depends on where it starts in the encoded stream (its
offset modulo 3), so each of the three alignments is listed, cut to the
characters that only the secret's bytes decide: the secret is found inside
``base64 <<< "KEY=$SECRET"`` too. A few characters around it stay, which
reveal at most a handful of its bits.

The forms are looked for in the text as a terminal would show it
(:func:`secret_spans`): a colour escape put inside a secret
(``printf 'gh<ESC>[0mp_…'``) does not hide it, and base64 and hex, which tools
wrap at a line width (``base64`` at 76 columns, ``xxd -p`` at 60), are also
looked for across line breaks. A span found there covers the escapes and
breaks inside it, so the whole thing is replaced.
"""

from __future__ import annotations

import base64
import bisect
import functools
import json
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus

#: Encoded forms shorter than this are not looked for: they would match ordinary text.
MIN_FORM_LENGTH = 8

#: Kinds of form that tools wrap at a line width: also looked for across line breaks.
WRAPPED_KINDS = frozenset({"base64", "hex"})

# Terminal escape sequences: CSI (colours, cursor moves), OSC (titles, links: ended by
# BEL or ESC \), and the two-character ones.
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ESCAPE_OR_BREAK = re.compile(_ESCAPE.pattern + r"|\r|\n")
# An escape sequence the text ends in the middle of (its end comes in the next piece).
_UNFINISHED_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*\x1b?)?\Z")


@functools.lru_cache(maxsize=256)
def secret_forms(value: str) -> tuple[tuple[str, str], ...]:
    """``(form, kind)`` pairs for ``value``, longest first; ``kind`` is '' for the value itself.

    Kinds: ``base64`` (standard and URL-safe alphabets, any alignment),
    ``URL-encoded`` (``quote`` and ``quote_plus``), ``hex`` (lower and upper
    case) and ``JSON-escaped`` (a value with quotes, backslashes or control
    characters, as ``json.dumps`` writes it).
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
    hexed = raw.hex()
    if len(hexed) >= MIN_FORM_LENGTH:
        found.setdefault(hexed, "hex")
        found.setdefault(hexed.upper(), "hex")
    for escaped in (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
        if escaped != value:
            found.setdefault(escaped, "JSON-escaped")
    return tuple(sorted(found.items(), key=lambda item: -len(item[0])))


def longest_form(values: Iterable[str]) -> int:
    """The length of the longest form of any of ``values`` (0 for none)."""
    return max((len(secret_forms(v)[0][0]) for v in values if v), default=0)


class _Positions:
    """Where each character of a view (a text with parts taken out) is in the text.

    One entry per piece kept, not per character: a 30 KB output with a colour
    escape on every line has a few thousand pieces, found by bisection.
    """

    __slots__ = ("_in_text", "_in_view")

    def __init__(self) -> None:
        self._in_view: list[int] = []
        self._in_text: list[int] = []

    def add(self, view_at: int, text_at: int) -> None:
        self._in_view.append(view_at)
        self._in_text.append(text_at)

    def __getitem__(self, view_at: int) -> int:
        piece = bisect.bisect_right(self._in_view, view_at) - 1
        return self._in_text[piece] + view_at - self._in_view[piece]


def _view(text: str, pattern: re.Pattern[str]) -> tuple[str, _Positions | None]:
    """``text`` without what ``pattern`` matches, and where each kept character was.

    The positions are None when nothing was taken out (the view is the text).
    """
    pieces: list[str] = []
    where = _Positions()
    at = 0
    length = 0
    for match in pattern.finditer(text):
        if match.start() > at:
            pieces.append(text[at:match.start()])
            where.add(length, at)
            length += match.start() - at
        at = match.end()
    if not at:
        return text, None
    pieces.append(text[at:])
    where.add(length, at)
    return "".join(pieces), where


def _views(text: str) -> list[tuple[str, bool]]:
    """The texts a form is looked for in: ``(text, for wrapped kinds only)``."""
    views = [(_ESCAPE.sub("", text) if "\x1b" in text else text, False)]
    if "\n" in text or "\r" in text:
        views.append((_ESCAPE_OR_BREAK.sub("", text), True))
    return views


def contains_secret(text: str, values: Iterable[str]) -> bool:
    """Whether any form of any of ``values`` is in ``text`` (as :func:`secret_spans` finds them).

    Cheaper than the spans (no positions are kept), for a large text that
    will only be kept or not: a file a checkpoint would store.
    """
    values = [v for v in values if v]
    if not values:
        return False
    views = _views(text)
    return any(form in shown for value in values for form, kind in secret_forms(value)
               for shown, wrapped_only in views if not wrapped_only or kind in WRAPPED_KINDS)


def secret_spans(text: str, values: Iterable[str]) -> list[tuple[int, int, str, str]]:
    """Where any form of any of ``values`` is in ``text``: ``(start, end, kind, value)``.

    Sorted, and merged where two overlap (the merged span keeps the kind and
    value of the one that starts first). Found in the text with terminal
    escapes left out, and for base64 and hex also with line breaks left out;
    a span covers whatever was left out inside it.
    """
    values = [v for v in values if v]
    if not values or not contains_secret(text, values):
        return []
    spans: list[tuple[int, int, str, str]] = []
    views = [(_view(text, _ESCAPE) if "\x1b" in text else (text, None), False)]
    if "\n" in text or "\r" in text:
        views.append((_view(text, _ESCAPE_OR_BREAK), True))
    for (shown, where), wrapped_only in views:
        for value in values:
            for form, kind in secret_forms(value):
                if wrapped_only and kind not in WRAPPED_KINDS:
                    continue
                start = shown.find(form)
                while start != -1:
                    end = start + len(form)
                    if where is None:
                        spans.append((start, end, kind, value))
                    else:
                        spans.append((where[start], where[end - 1] + 1, kind, value))
                    start = shown.find(form, end)
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, str, str]] = []
    for span in spans:
        if merged and span[0] < merged[-1][1]:
            last = merged[-1]
            if span[1] > last[1]:
                merged[-1] = (last[0], span[1], last[2], last[3])
            continue
        merged.append(span)
    return merged


def redact_text(text: str, marks: Mapping[str, str]) -> str:
    """``text`` with every form of each secret (``marks``' keys) replaced by its mark.

    An encoded form gets its kind inside the mark (``[redacted (base64)]``),
    so a reader knows the output was not simply missing a word.
    """
    spans = secret_spans(text, marks)
    if not spans:
        return text
    out: list[str] = []
    at = 0
    for start, end, kind, value in spans:
        mark = marks[value]
        out.append(text[at:start])
        out.append(f"{mark[:-1]} ({kind})]" if kind and mark.endswith("]") else mark)
        at = end
    out.append(text[at:])
    return "".join(out)


def replace_forms(text: str, value: str, mark: str) -> str:
    """``text`` with each form of ``value`` replaced by ``mark`` (as :func:`redact_text`)."""
    return redact_text(text, {value: mark}) if value else text


def safe_cut(text: str, values: Iterable[str], keep: int) -> int:
    """Where to cut ``text`` so that no form of ``values`` is cut in two.

    Everything before the cut can be shown (redacted) now; the rest, at least
    the last ``keep`` characters a form can be made of, and an escape sequence
    the text ends in the middle of, is held back for the text that follows:
    with ``keep`` one less than the longest form, a form whose end has not
    come yet always lies in the part held back.
    """
    shown, where = _view(text, _ESCAPE_OR_BREAK)
    first_held = len(shown) - keep
    if first_held <= 0:
        cut = 0
    elif first_held >= len(shown):
        cut = len(text)
    else:
        cut = first_held if where is None else where[first_held]
    unfinished = _UNFINISHED_ESCAPE.search(text)
    if unfinished is not None:
        cut = min(cut, unfinished.start())
    for start, end, _kind, _value in secret_spans(text, values):
        if start < cut < end:  # a whole form across the cut: shown whole (redacted)
            cut = end
    return cut
