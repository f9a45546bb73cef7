"""Terminal output with ANSI escapes, as runs of text with a colour and weight.

Why: commands colour their output (compilers, test runners, ``ls --color``)
and a live view that printed the escape bytes would be unreadable. Colour and
bold (SGR) are kept as runs a view can format; every other escape (cursor
moves, titles, erasing) is dropped, as is a carriage return. Parsing is one
regular expression pass, cheap enough for each coalesced report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: SGR (``ESC [ ... m``) and other CSI sequences, OSC (``ESC ] ... BEL``) and lone escapes.
_ESCAPE = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]?")

#: The 16 terminal colours, as (dark-background, light-background) pairs that stay readable.
_COLOURS = (
    ("#6e7681", "#24292f"), ("#ff7b72", "#cf222e"), ("#3fb950", "#116329"),
    ("#d29922", "#7d4e00"), ("#58a6ff", "#0550ae"), ("#bc8cff", "#8250df"),
    ("#39c5cf", "#1b7c83"), ("#b1bac4", "#6e7781"),
)
_BRIGHT = (
    ("#8b949e", "#57606a"), ("#ffa198", "#a40e26"), ("#56d364", "#1a7f37"),
    ("#e3b341", "#633c01"), ("#79c0ff", "#218bff"), ("#d2a8ff", "#a475f9"),
    ("#56d4dd", "#3192aa"), ("#f0f6fc", "#8c959f"),
)


@dataclass(frozen=True, slots=True)
class Run:
    """A piece of text and how it looks (``colour`` None: the view's own)."""

    text: str
    colour: str | None = None
    bold: bool = False


class AnsiReader:
    """Turns output into runs; the style carries over from one piece to the next.

    Args:
        dark: Pick the colours meant for a dark background.
    """

    def __init__(self, dark: bool) -> None:
        self._dark = dark
        self._colour: str | None = None
        self._bold = False

    def runs(self, text: str) -> list[Run]:
        """``text`` (which may end inside a style) as styled runs, escapes gone."""
        runs: list[Run] = []
        position = 0
        for match in _ESCAPE.finditer(text):
            self._add(runs, text[position:match.start()])
            position = match.end()
            if match.group(2) == "m":
                self._apply(match.group(1))
        self._add(runs, text[position:])
        return runs

    def _add(self, runs: list[Run], text: str) -> None:
        text = text.replace("\r", "")
        if text:
            runs.append(Run(text, self._colour, self._bold))

    def _apply(self, codes: str) -> None:
        side = 0 if self._dark else 1
        for code in (int(c) if c.isdigit() else 0 for c in (codes or "0").split(";")):
            if code == 0:
                self._colour, self._bold = None, False
            elif code == 1:
                self._bold = True
            elif code == 22:
                self._bold = False
            elif code == 39:
                self._colour = None
            elif 30 <= code <= 37:
                self._colour = _COLOURS[code - 30][side]
            elif 90 <= code <= 97:
                self._colour = _BRIGHT[code - 90][side]


def plain(text: str) -> str:
    """``text`` without any escapes (for copying and tests)."""
    return "".join(run.text for run in AnsiReader(dark=False).runs(text))
