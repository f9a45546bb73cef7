"""The transcript's Qt style sheet, filled in from the palette-derived theme."""

from __future__ import annotations

from desktop_agent.gui.transcript.theme import TranscriptTheme


def transcript_style_sheet(theme: TranscriptTheme) -> str:
    """Style sheet for the transcript and everything inside it."""
    t = theme
    return f"""
#transcriptContent {{ background: {t.background}; }}
QTextBrowser {{ background: transparent; border: none; }}
QLabel#roleLabel {{ color: {t.muted_text}; font-weight: 600; }}
QLabel#statusNote {{ color: {t.muted_text}; }}
QFrame#userBubble {{
    background: {t.user_bubble}; border-radius: 14px; border: none;
}}
QToolButton#actionButton {{
    color: {t.muted_text}; border: none; padding: 2px 6px; border-radius: 4px;
    background: transparent;
}}
QToolButton#actionButton:hover {{ background: {t.code_header}; color: {t.text}; }}
QFrame#codeBlock {{
    background: {t.code_background}; border: 1px solid {t.border}; border-radius: 8px;
}}
#codeHeader {{
    background: {t.code_header}; border-top-left-radius: 8px; border-top-right-radius: 8px;
}}
QLabel#codeLanguage {{ color: {t.muted_text}; font-size: 11px; }}
QToolButton#codeCopy {{
    color: {t.muted_text}; border: none; padding: 1px 6px; border-radius: 4px;
    background: transparent; font-size: 11px;
}}
QToolButton#codeCopy:hover {{ background: {t.border}; color: {t.text}; }}
QPlainTextEdit#codeBody {{
    background: {t.code_background}; color: {t.text}; border: none;
    border-bottom-left-radius: 8px; border-bottom-right-radius: 8px;
}}
QFrame#thinking {{ border-left: 3px solid {t.border}; background: transparent; }}
QTextBrowser#thinkingText {{ color: {t.muted_text}; }}
QToolButton#sectionHeader {{
    border: none; background: transparent; color: {t.text}; font-weight: 600; padding: 2px;
}}
QLabel#sectionDetail {{ color: {t.muted_text}; }}
QFrame#toolCard {{
    background: {t.card_background}; border: 1px solid {t.border}; border-radius: 8px;
}}
QFrame#toolCard[failed="true"] {{ border-color: {t.error_text}; }}
QLabel#cardCaption {{ color: {t.muted_text}; font-size: 11px; font-weight: 600; }}
QTextBrowser#toolOutput {{
    background: {t.code_background}; border-radius: 6px; padding: 4px;
}}
QLabel#toolError {{ color: {t.error_text}; }}
QFrame#errorNotice {{
    background: {t.error_background}; border: 1px solid {t.error_text}; border-radius: 8px;
}}
QLabel#errorText {{ color: {t.text}; }}
"""
