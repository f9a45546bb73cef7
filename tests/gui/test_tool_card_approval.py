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


def test_on_a_narrow_card_the_answers_wrap_instead_of_being_cut_off(
        qtbot: Any, qapp: Any) -> None:
    # A 1024-pixel window with the Approvals dock open leaves the card about 440
    # pixels: the four answers side by side would run past its edge.
    card = _card(qtbot, qapp)
    card.show_approval(ApprovalPrompt())
    panel = card.approval_panel
    assert panel is not None
    buttons = (panel.allow_button, panel.allow_conversation_button, panel.allow_always_button,
               panel.deny_button)

    def inside(width: int) -> bool:
        card.resize(width, card.height())
        qtbot.waitUntil(lambda: panel.width() <= width)
        qapp.processEvents()
        return all(b.isVisible() and b.geometry().right() <= panel.width()
                   and b.geometry().left() >= 0 for b in buttons)

    assert inside(1000) and not panel.two_rows
    assert panel.deny_button.y() == panel.allow_always_button.y()  # one row
    assert inside(440) and panel.two_rows
    assert panel.allow_conversation_button.y() > panel.allow_button.y()
    assert inside(1000) and not panel.two_rows  # and back, when there is room again
