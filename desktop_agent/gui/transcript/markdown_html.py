"""Markdown to the HTML subset QTextDocument understands.

Why: QTextDocument (used by QTextBrowser) renders a subset of HTML 4 with a
little CSS; markdown-it's default output relies on browser styles for tables,
code and quotes. The render rules here add the attributes Qt needs (table
borders and padding, code backgrounds) from the palette's colours. Raw HTML in
a reply is shown as text, never interpreted, so a model cannot inject markup.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from desktop_agent.gui.transcript.theme import TranscriptTheme

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


class MarkdownRenderer:
    """Renders markdown blocks to Qt-friendly HTML with the theme's colours."""

    def __init__(self, theme: TranscriptTheme) -> None:
        self._theme = theme
        self._parser: MarkdownIt | None = None

    @property
    def _md(self) -> MarkdownIt:
        """The parser, built on first use.

        markdown-it costs ~50 ms to import, which would otherwise delay the
        window's first paint.
        """
        if self._parser is None:
            self._parser = self._build_parser()
        return self._parser

    def _build_parser(self) -> MarkdownIt:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"html": False, "breaks": False}).enable(
            ["table", "strikethrough"]
        )
        rules: dict[str, Any] = {
            "table_open": self._table_open,
            "th_open": self._cell_open,
            "td_open": self._cell_open,
            "code_inline": self._code_inline,
            "code_block": self._code_block,
            "fence": self._code_block,
            "blockquote_open": self._blockquote_open,
            "hr": self._hr,
            "image": self._image,
        }
        # Stored directly (not via add_render_rule, which would rebind them to
        # the renderer) so the rules keep this object and its theme.
        renderer: Any = md.renderer
        renderer.rules.update(rules)
        return md

    def render(self, markdown: str) -> str:
        """Return the HTML for ``markdown`` (one or more blocks)."""
        return str(self._md.render(markdown))

    # -- render rules (signature fixed by markdown-it) -----------------------

    def _table_open(self, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        return (
            '<table border="1" cellspacing="0" cellpadding="6" '
            f'style="border-collapse: collapse; border-color: {self._theme.border};'
            ' margin-top: 4px; margin-bottom: 8px;">'
        )

    def _cell_open(self, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        align = ""
        style = token.attrGet("style")
        if isinstance(style, str) and style.startswith("text-align:"):
            align = f' align="{style.split(":", 1)[1].strip()}"'
        background = (
            f' bgcolor="{self._theme.code_header}"' if token.tag == "th" else ""
        )
        return f"<{token.tag}{align}{background}>"

    def _code_inline(self, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        return (
            f'<code style="background-color: {self._theme.inline_code_background};">'
            f"&#8201;{html.escape(tokens[idx].content)}&#8201;</code>"
        )

    def _code_block(self, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        code = tokens[idx].content.rstrip("\n")
        return (
            f'<table width="100%" cellspacing="0" cellpadding="8" '
            f'bgcolor="{self._theme.code_background}" style="margin-bottom: 8px;">'
            f"<tr><td><pre>{html.escape(code)}</pre></td></tr></table>"
        )

    def _blockquote_open(self, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        return f'<blockquote style="color: {self._theme.muted_text};">'

    def _image(self, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        # Images become links: the transcript never loads files or URLs on its own.
        token = tokens[idx]
        source = str(token.attrGet("src") or "")
        label = html.escape(token.content or "image")
        return f'<a href="{_escape_attribute(source)}">[image: {label}]</a>'

    def _hr(self, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        return f'<hr style="background-color: {self._theme.border};"/>'


@functools.lru_cache(maxsize=4)
def renderer_for(theme: TranscriptTheme) -> MarkdownRenderer:
    """The one renderer of ``theme``, shared by every transcript.

    Why: building markdown-it's parser (its rule chains) cost about as much as
    rendering an answer's blocks, and each opened tab built its own; the renderer
    keeps no state between renders, so the tabs of one theme can share it.
    """
    return MarkdownRenderer(theme)


def _escape_attribute(value: str) -> str:
    return html.escape(value, quote=True)


def plain_text_html(text: str) -> str:
    """HTML that shows ``text`` as is (for text too long to render each frame)."""
    return f'<p style="white-space: pre-wrap;">{html.escape(text)}</p>'
