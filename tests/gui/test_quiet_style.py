"""The app's style: dialog buttons show words only, and Qt's style questions stay in C++.

Why a file of its own: the style (``theme.QuietFusion``) is asked ~1,750 questions
to open a conversation tab; only the one about dialog buttons is the app's own, and
answering it from a Python ``styleHint`` turned every other question into a call into
Python. It now answers through the buttons' icons instead.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QDialogButtonBox,
    QMessageBox,
    QProxyStyle,
    QStyle,
    QStyleOption,
    QWidget,
)

from desktop_agent.gui.theme import QuietFusion

BUTTONS = QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel


class DesktopFusion(QProxyStyle):
    """Fusion as on a GNOME or KDE desktop, whose theme puts icons on dialog buttons.

    Qt's offscreen platform says no icons, so without this the test would pass
    whatever the app's style did.
    """

    def styleHint(self, hint: QStyle.StyleHint, option: QStyleOption | None = None,
                  widget: QWidget | None = None, returnData: Any = None) -> int:
        if hint == QStyle.StyleHint.SH_DialogButtonBox_ButtonsHaveIcons:
            return 1
        return super().styleHint(hint, option, widget, returnData)


def box_with(style: QStyle, qtbot: Any) -> QDialogButtonBox:
    box = QDialogButtonBox()
    qtbot.addWidget(box)
    box.setStyle(style)  # before the buttons: a box reads its style as it makes them
    box.setStandardButtons(BUTTONS)
    return box


def test_dialog_buttons_show_words_only_where_the_desktop_gives_them_icons(qtbot: Any) -> None:
    desktop = DesktopFusion("Fusion")
    with_icons = box_with(desktop, qtbot)
    assert not any(button.icon().isNull() for button in with_icons.buttons())

    quiet = QuietFusion(DesktopFusion("Fusion"))
    box = box_with(quiet, qtbot)
    assert [button.text().replace("&", "") for button in box.buttons()] == ["OK", "Cancel"]
    assert all(button.icon().isNull() for button in box.buttons())
    message = QMessageBox()
    qtbot.addWidget(message)
    message.setStyle(quiet)
    message.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
    assert message.buttons() and all(button.icon().isNull() for button in message.buttons())
    # The window's own uses of the same icons (the server picker's marks) keep them.
    for icon in (QStyle.StandardPixmap.SP_DialogApplyButton,
                 QStyle.StandardPixmap.SP_DialogCancelButton,
                 QStyle.StandardPixmap.SP_DialogCloseButton):
        assert not quiet.standardIcon(icon).isNull()


def test_the_style_leaves_every_hint_to_qt() -> None:
    """A ``styleHint`` written in Python would be called for each of Qt's questions."""
    assert "styleHint" not in vars(QuietFusion)
    assert QuietFusion.styleHint is QProxyStyle.styleHint
