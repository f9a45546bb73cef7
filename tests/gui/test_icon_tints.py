"""Icons keep the theme's ink: drawn once per tint and size, never in another theme's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QIcon, QImage

from desktop_agent.gui import icons
from desktop_agent.gui.palette import palette_for


def _inks(image: QImage) -> set[str]:
    """The colours of the icon's fully drawn pixels (its strokes' cores, not their edges)."""
    found = set()
    for y in range(image.height()):
        for x in range(image.width()):
            pixel = image.pixelColor(x, y)
            if pixel.alpha() == 255:
                found.add(pixel.name())
    return found


@pytest.fixture
def light_then_back(qapp: Any) -> Iterator[None]:
    icons.set_icon_palette(palette_for(False))
    yield
    icons.set_icon_palette(palette_for(False))


@pytest.mark.usefixtures("light_then_back")
def test_an_icon_drawn_again_after_the_theme_changed_takes_the_new_ink() -> None:
    size = QSize(48, 48)
    light = _inks(icons.icon("send").pixmap(size).toImage())
    light_again = _inks(icons.icon("send").pixmap(size).toImage())
    icons.set_icon_palette(palette_for(True))
    dark = _inks(icons.icon("send").pixmap(size).toImage())

    assert light == light_again == {QColor(palette_for(False).text).name()}
    assert dark == {QColor(palette_for(True).text).name()}


@pytest.mark.usefixtures("light_then_back")
def test_a_disabled_icon_is_muted_and_the_enabled_one_beside_it_stays_in_body_ink() -> None:
    size = QSize(48, 48)
    shown = icons.icon("send")
    disabled = _inks(shown.pixmap(size, QIcon.Mode.Disabled).toImage())
    enabled = _inks(shown.pixmap(size).toImage())

    assert disabled == {QColor(palette_for(False).muted).name()}
    assert enabled == {QColor(palette_for(False).text).name()}


@pytest.mark.usefixtures("light_then_back")
def test_the_headers_choices_take_the_dark_ink_when_the_theme_switches_live(
        qtbot: Any) -> None:
    from desktop_agent.gui.conversation.conversation_header import ConversationHeader

    header = ConversationHeader()
    qtbot.addWidget(header)
    size = QSize(48, 48)
    boxes = (header.mode_box, header.sandbox_box)
    light = {QColor(palette_for(False).text).name()}
    assert all(_inks(box.itemIcon(0).pixmap(size).toImage()) == light for box in boxes)

    icons.set_icon_palette(palette_for(True))
    icons.retint(header)  # what the window does on a live theme switch
    dark = {QColor(palette_for(True).text).name()}
    for box in boxes:
        assert all(_inks(box.itemIcon(i).pixmap(size).toImage()) == dark
                   for i in range(box.count())), box.objectName()
