"""Token counts without the tokenizer: a close guess for a figure shown at a glance.

Loading the shipped tokenizer (:mod:`.tokens`) costs about 40 MB of memory and
a few hundred milliseconds. A window reopening conversations whose server gave
no token counts wants a "context used" figure for each, but only to show it:
loading the tokenizer for that alone kept the idle window ~45 MB heavier.

This guess splits text the way cl100k's pre-tokenizer does (words with their
leading space, up to three digits, punctuation runs, whitespace) and charges
each piece from its length and script, calibrated against cl100k: within about
10 % for English prose, Markdown, code and JSON, and about 20 % for other
scripts (``tests/core/test_quick_count.py`` holds it to that). Counts that
size requests, compact history or are reported back stay on the tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from desktop_agent.core.context.tokens import prompt_tokens

__all__ = ["quick_count_text", "quick_estimate_tokens"]

# cl100k's pre-tokenizer pattern in ``re`` terms (no \p{L}: a letter is [^\W\d_]).
_PIECES = re.compile(
    r"'(?:[sdmt]|ll|ve|re)|[^\r\n\w]?[^\W\d_]+|\d{1,3}| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]|\s+(?!\S)|\s",
    re.IGNORECASE,
)
# One token per piece, plus one per this many more Latin characters: common English
# words, identifiers and punctuation runs are one token; long ones split.
_LATIN_CHARS_PER_TOKEN = 8
# Accented Latin letters usually split a word once more; Greek, Cyrillic, Arabic and
# the like take about a token per two letters; CJK and other wide scripts about one
# per character and a bit.
_ACCENTED_COST = 1.0
_ALPHABET_COST = 0.5
_WIDE_COST = 1.15
_ACCENTED_END = 0x250  # end of Latin Extended-B
_ALPHABET_END = 0x2000  # below: alphabetic scripts; above: symbols and wide scripts


def _piece_cost(piece: str) -> float:
    word = piece.strip() or piece
    if word.isascii():
        return 1 + (len(word) - 1) // _LATIN_CHARS_PER_TOKEN
    latin = accented = alphabet = 0
    for char in word:
        code = ord(char)
        if code < 0x80:
            latin += 1
        elif code < _ACCENTED_END:
            accented += 1
        elif code < _ALPHABET_END:
            alphabet += 1
    wide = len(word) - latin - accented - alphabet
    cost = (accented * _ACCENTED_COST + alphabet * _ALPHABET_COST + wide * _WIDE_COST
            + (latin + accented - 1) // _LATIN_CHARS_PER_TOKEN)
    return cost if wide == len(word) else cost + 1


def quick_count_text(text: str) -> int:
    """About as many tokens as cl100k counts in ``text``, without loading it."""
    return round(sum(_piece_cost(piece) for piece in _PIECES.findall(text)))


def quick_estimate_tokens(messages: Iterable[dict[str, Any]],
                          tools: Sequence[Any] | None = None) -> int:
    """:func:`.tokens.estimate_tokens`, counted with :func:`quick_count_text`.

    Args:
        messages: OpenAI message dicts.
        tools: Tools (``Tool`` or OpenAI dicts) whose schemas are sent too.
    """
    return prompt_tokens(messages, tools, quick_count_text)
