"""The HTTP stack is warmed up when the person starts typing, not while the window idles."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLineEdit

from desktop_agent.gui.app import warm_up_on_first_input


def test_warm_up_runs_once_on_first_key_press(qtbot: Any, qapp: Any) -> None:
    calls: list[int] = []
    warm_up_on_first_input(qapp, lambda: calls.append(1))
    field = QLineEdit()
    qtbot.addWidget(field)
    field.show()
    qtbot.wait(20)  # painting and idling do not count as input
    assert calls == []
    qtbot.keyClicks(field, "hello")
    assert calls == [1]
    assert field.text() == "hello"  # the filter never swallows the key
