"""Syntax highlighting of code blocks with pygments, in small slices.

Why: pygments lexes lazily (a generator of tokens), so a large code block can
be coloured a few hundred tokens at a time across frames instead of stalling
the window. Colours come from a pygments style chosen for the palette's
darkness and are applied as character formats onto the text already shown,
so the code never flickers or reflows.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor, QTextDocument

from desktop_agent.gui.transcript.frame_scheduler import WAIT

if TYPE_CHECKING:  # pygments loads on the first code block, not at start-up
    from pygments.lexer import Lexer
    from pygments.token import _TokenType

TOKENS_PER_STEP = 64

# Building a pygments lexer compiles its regular expressions the first time a
# language is seen (tens of milliseconds for Python), which would freeze the
# window mid-stream. Lexers are therefore built on a worker thread, once per
# language, and shared: a lexer keeps no state between get_tokens calls.
_lexer_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lexer-loader")
_lexers: dict[str, Future[Lexer]] = {}
_lexers_lock = threading.Lock()


def _build_lexer(name: str) -> Lexer:
    from pygments.lexers import get_lexer_by_name
    from pygments.lexers.special import TextLexer
    from pygments.util import ClassNotFound

    if name:
        try:
            return get_lexer_by_name(name, stripnl=False, ensurenl=False)
        except ClassNotFound:
            pass
    return TextLexer()


def lexer_future(language: str) -> Future[Lexer]:
    """The lexer for a fence's info word (plain text if unknown), loading in the background."""
    name = language.strip().lower()
    with _lexers_lock:
        future = _lexers.get(name)
        if future is None:
            future = _lexer_pool.submit(_build_lexer, name)
            _lexers[name] = future
    return future


def lexer_for(language: str) -> Lexer:
    """The lexer for a fence's info word, waiting for it if needed."""
    return lexer_future(language).result()


@functools.lru_cache(maxsize=8)
def _style_formats(style_name: str) -> dict[_TokenType, QTextCharFormat]:
    from pygments.styles import get_style_by_name

    formats: dict[_TokenType, QTextCharFormat] = {}
    style = get_style_by_name(style_name)
    for token_type, spec in style:
        fmt = QTextCharFormat()
        if spec["color"]:
            fmt.setForeground(QColor(f"#{spec['color']}"))
        if spec["bold"]:
            fmt.setFontWeight(QFont.Weight.Bold)
        if spec["italic"]:
            fmt.setFontItalic(True)
        if spec["color"] or spec["bold"] or spec["italic"]:
            formats[token_type] = fmt
    return formats


def _utf16_length(text: str) -> int:
    """Length as Qt counts it (characters outside the BMP take two units)."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def highlight_job(
    document: QTextDocument, code: str, language: str, style_name: str
) -> Iterator[object]:
    """Colour ``code`` (already the document's text) step by step.

    Yields after every few dozen tokens; drive it with ``FrameScheduler``.
    """
    loading = lexer_future(language)
    while not loading.done():
        yield WAIT
    lexer = loading.result()
    formats = _style_formats(style_name)
    try:
        cursor = QTextCursor(document)
    except RuntimeError:
        return  # the block left the screen (its widget was deleted) before its turn
    position = 0
    in_step = 0
    # One edit block a step: the document lays out the step's changes once, at its
    # end, instead of once per coloured token.
    cursor.beginEditBlock()
    for _index, token_type, value in lexer.get_tokens_unprocessed(code):
        length = _utf16_length(value)
        fmt = None
        kind: _TokenType | None = token_type
        while kind is not None and fmt is None:
            fmt = formats.get(kind)
            kind = kind.parent
        if fmt is not None and value.strip():
            cursor.setPosition(position)
            cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(fmt)
        position += length
        in_step += 1
        if in_step >= TOKENS_PER_STEP:
            in_step = 0
            cursor.endEditBlock()
            yield None
            if cursor.isNull():
                return  # the document was deleted while waiting for the next frame
            cursor.beginEditBlock()
    cursor.endEditBlock()


def _build_file_lexer(path: str) -> Lexer:
    from pygments.lexers import get_lexer_for_filename
    from pygments.lexers.special import TextLexer
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer()


def file_lexer_future(path: str) -> Future[Lexer]:
    """The lexer for a file's name (plain text if unknown), loading in the background."""
    key = "file:" + path.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower() if "." in path else \
        "file:"
    with _lexers_lock:
        future = _lexers.get(key)
        if future is None:
            future = _lexer_pool.submit(_build_file_lexer, path)
            _lexers[key] = future
    return future


#: A file name whose lexer the warm-up builds: Python, the language most diffs are in.
WARM_UP_FILE_NAME = "warm_up.py"


def warm_up_highlighting(style_names: tuple[str, ...] = ()) -> None:
    """Do now what the first diff or code block shown would wait for; blocks.

    Measured (``bench/diff_render.py``): the first lexer looked up by a file's
    name cost 200-300 ms, most of the first diff's time on screen in colour
    (later diffs take about 20 ms). pygments compiles a regular expression for
    each of its ~900 file-name patterns, scans the installed packages for
    plugin lexers, then imports the lexer's module; the patterns and the scan
    are kept, so later lookups pay only their own lexer's import (2-40 ms).
    The app runs this in its first-input warm-up, on a worker thread, with the
    lexer pool doing the building (so nothing is built twice).

    Args:
        style_names: pygments styles whose modules to import too (the themes').
    """
    file_lexer_future(WARM_UP_FILE_NAME).result()
    lexer_future("python").result()
    if style_names:
        from pygments.styles import get_style_by_name

        for name in style_names:
            get_style_by_name(name)


def token_formats(style_name: str) -> dict[_TokenType, QTextCharFormat]:
    """The pygments style's colours as Qt character formats, by token type."""
    return _style_formats(style_name)
