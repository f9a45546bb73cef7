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


def test_no_collection_runs_before_the_first_paint_and_the_garbage_is_freed_at_it() -> None:
    import gc

    from desktop_agent.gui.app import freeze_startup_objects, pause_collector_until_first_paint

    class Cycle:
        def __init__(self) -> None:
            self.me = self

    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    frozen_before = gc.get_freeze_count()
    gc.callbacks.append(count)
    try:
        pause_collector_until_first_paint()
        garbage = [Cycle() for _ in range(5000)]  # enough for several young collections
        del garbage
        assert collections == []  # start-up pays for none
        assert sum(isinstance(thing, Cycle) for thing in gc.get_objects()) == 5000
        freeze_startup_objects()  # what the window's first paint runs
        assert gc.isenabled()
        assert not any(isinstance(thing, Cycle) for thing in gc.get_objects())  # freed
        for _ in range(5000):
            Cycle()
        assert collections[1:]  # collection runs again afterwards
    finally:
        gc.callbacks.remove(count)
        gc.enable()
        if gc.get_freeze_count() != frozen_before:
            gc.unfreeze()  # later tests may check that their widgets are freed
