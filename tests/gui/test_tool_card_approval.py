"""A card that opened to ask folds back once the question is answered."""

from __future__ import annotations

from typing import Any

from desktop_agent.gui.transcript.approval_panel import ApprovalPrompt
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.tool_card import ToolCard


def _card(qtbot: Any, qapp: Any) -> ToolCard:
    card = ToolCard("call_1", "screenshot", {}, TranscriptTheme.from_palette(qapp.palette()))
    qtbot.addWidget(card)
    card.show()
    return card


def test_a_card_opened_to_ask_folds_back_when_answered(qtbot: Any, qapp: Any) -> None:
    card = _card(qtbot, qapp)
    assert not card.expanded
    card.show_approval(ApprovalPrompt())
    assert card.expanded and card.approval_panel is not None  # the question is seen
    card.show_approval(None)
    assert card.approval_panel is None
    assert not card.expanded  # back to the one-line card, the result's line in its header


def test_a_card_the_person_had_opened_stays_open(qtbot: Any, qapp: Any) -> None:
    card = _card(qtbot, qapp)
    card.set_expanded(True)
    card.show_approval(ApprovalPrompt())
    card.show_approval(None)
    assert card.expanded
