"""The streaming transcript widget of one conversation (see ``view.py``)."""

from desktop_agent.gui.transcript.view import TranscriptView

__all__ = ["TranscriptView"]
