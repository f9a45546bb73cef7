"""Full garbage collections wait for an idle window, but never longer than the cap."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from PySide6.QtWidgets import QLineEdit
from window_driver import WAIT_MS

from desktop_agent.gui.idle_collector import FULL_THRESHOLD, IdleCollector


class Node:
    """Refers to itself: only the cycle-finding collector frees it."""

    def __init__(self) -> None:
        self.me = self


def old_cyclic_garbage() -> weakref.ref[Node]:
    """A cycle that reached the oldest generation, then dropped: only a full collection frees it."""
    node = Node()
    gc.collect(1)  # it survives the young collections and moves to generation 2
    return weakref.ref(node)


@pytest.fixture
def make_collector(qapp: Any) -> Iterator[Callable[..., IdleCollector]]:
    """An IdleCollector on the test's QApplication, removed (thresholds restored) after."""
    made: list[IdleCollector] = []
    thresholds = gc.get_threshold()
    frozen_before = gc.get_freeze_count()

    def make(**kwargs: Any) -> IdleCollector:
        collector = IdleCollector(qapp, **kwargs)
        made.append(collector)
        return collector

    yield make
    for collector in made:
        collector.uninstall()
        collector.deleteLater()
    assert gc.get_threshold() == thresholds
    if not frozen_before:
        gc.unfreeze()  # later tests may check that their widgets are freed


def test_old_garbage_waits_while_the_person_types_and_goes_once_idle(
        qtbot: Any, make_collector: Callable[..., IdleCollector]) -> None:
    collector = make_collector(idle_seconds=0.3, max_interval_seconds=3600,
                               check_interval_ms=50)
    assert gc.get_threshold()[2] == FULL_THRESHOLD  # Python's own full collections put off
    field = QLineEdit()
    qtbot.addWidget(field)
    field.show()
    gc.collect(1)  # something for an idle collection to look at
    qtbot.waitUntil(lambda: collector.collections >= 1, timeout=WAIT_MS)  # idle now
    garbage = old_cyclic_garbage()
    qtbot.keyClick(field, "a")
    collector.check()  # a key was just pressed: not idle any more
    assert garbage() is not None
    assert collector.collections == 1
    qtbot.waitUntil(lambda: garbage() is None, timeout=WAIT_MS)
    assert collector.collections == 2
    assert field.text() == "a"  # the filter never swallows input


def test_a_window_that_is_never_idle_is_still_collected_within_the_cap(
        qtbot: Any, make_collector: Callable[..., IdleCollector]) -> None:
    collector = make_collector(idle_seconds=3600, max_interval_seconds=0.2,
                               check_interval_ms=50)
    garbage = old_cyclic_garbage()
    qtbot.waitUntil(lambda: garbage() is None, timeout=WAIT_MS)
    assert collector.collections >= 1


def test_survivors_are_frozen_once_after_the_warm_up(
        qtbot: Any, make_collector: Callable[..., IdleCollector]) -> None:
    collector = make_collector(idle_seconds=0.1, max_interval_seconds=3600,
                               check_interval_ms=50)
    survivor = Node()  # stands for the modules the warm-up imported
    assert any(thing is survivor for thing in gc.get_objects())  # walked by collections
    collector.freeze_at_next_idle()
    qtbot.waitUntil(lambda: collector.collections >= 1, timeout=WAIT_MS)
    assert not any(thing is survivor for thing in gc.get_objects())  # frozen: never walked
    frozen = gc.get_freeze_count()
    later = Node()
    collector.collect()  # later collections do not freeze again
    assert gc.get_freeze_count() == frozen
    assert any(thing is later for thing in gc.get_objects())
