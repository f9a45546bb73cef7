"""Fixtures for the transcript widget tests (real widgets, offscreen)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from desktop_agent.gui.transcript import TranscriptView


@pytest.fixture
def view(qtbot):
    widget = TranscriptView()
    qtbot.addWidget(widget)
    widget.resize(800, 600)
    widget.show()
    qtbot.waitExposed(widget)
    return widget
