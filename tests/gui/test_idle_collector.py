"""Full garbage collections wait for an idle window, but never longer than the cap.

The collector's clock is a test clock moved by hand (its timer is set to an hour,
so only the test calls ``check``); the input is real key presses on a real
widget, seen by the collector's real application event filter.
"""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from PySide6.QtWidgets import QLineEdit

from desktop_agent.gui.idle_collector import FULL_THRESHOLD, IdleCollector
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler

HOUR_MS = 3_600_000


class Node:
    """Refers to itself: only the cycle-finding collector frees it."""

    def __init__(self) -> None:
        self.me = self


def old_cyclic_garbage() -> weakref.ref[Node]:
    """A cycle that reached the oldest generation, then dropped: only a full collection frees it."""
    node = Node()
    gc.collect(1)  # it survives the young collections and moves to generation 2
    return weakref.ref(node)


class HandClock:
    """Seconds that pass only when the test says so (far from the real monotonic clock)."""

    def __init__(self) -> None:
        self.now = time.monotonic() + 1e6

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def make_collector(qapp: Any) -> Iterator[Callable[..., IdleCollector]]:
    """An IdleCollector on the test's QApplication, removed (thresholds restored) after."""
    made: list[IdleCollector] = []
    thresholds = gc.get_threshold()
    frozen_before = gc.get_freeze_count()

    def make(**kwargs: Any) -> IdleCollector:
        settings: dict[str, Any] = {"idle_seconds": 2.0, "max_interval_seconds": 60.0,
                                    "check_interval_ms": HOUR_MS}
        collector = IdleCollector(qapp, **(settings | kwargs))
        made.append(collector)
        return collector

    yield make
    for collector in made:
        collector.uninstall()
        collector.deleteLater()
    assert gc.get_threshold() == thresholds
    if not frozen_before:
        gc.unfreeze()  # later tests may check that their widgets are freed


@pytest.fixture
def field(qtbot: Any) -> QLineEdit:
    widget = QLineEdit()
    qtbot.addWidget(widget)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_old_garbage_waits_while_the_person_types_and_goes_once_idle(
        qtbot: Any, make_collector: Callable[..., IdleCollector], field: QLineEdit) -> None:
    clock = HandClock()
    collector = make_collector(clock=clock)
    assert gc.get_threshold()[2] == FULL_THRESHOLD  # Python's own full collections put off
    garbage = old_cyclic_garbage()
    collector.check()
    assert collector.watching  # something to collect: input is watched from now on
    clock.advance(1.5)
    qtbot.keyClick(field, "a")
    clock.advance(1.5)
    collector.check()  # 3 s of watching, but only 1.5 s since the key
    assert garbage() is not None
    assert collector.collections == 0
    clock.advance(1.0)
    collector.check()  # 2.5 s quiet
    assert garbage() is None
    assert collector.collections == 1
    assert not collector.watching  # nothing wanted until young collections run again
    assert field.text() == "a"  # the filter never swallows input


def test_a_window_that_is_never_idle_is_still_collected_within_the_cap(
        qtbot: Any, make_collector: Callable[..., IdleCollector], field: QLineEdit) -> None:
    clock = HandClock()
    collector = make_collector(clock=clock)
    garbage = old_cyclic_garbage()
    collector.check()
    for _ in range(39):  # a key every 1.5 s: never 2 s quiet
        clock.advance(1.5)
        qtbot.keyClick(field, "a")
        collector.check()
    assert garbage() is not None  # 58.5 s
    clock.advance(1.5)
    collector.check()  # 60 s: overdue
    assert garbage() is None


def test_input_is_watched_only_when_a_collection_is_wanted_and_no_frames_run(
        make_collector: Callable[..., IdleCollector]) -> None:
    collector = make_collector(idle_seconds=3600.0)  # the real clock: a frame stays recent
    collector.collect()
    collector.check()
    assert not collector.watching  # nothing to collect
    old_cyclic_garbage()
    FrameScheduler().run_frame()  # a transcript is busy
    collector.check()
    assert not collector.watching  # frames say "busy" without an event filter's cost


def test_survivors_are_frozen_once_after_the_warm_up(
        make_collector: Callable[..., IdleCollector]) -> None:
    clock = HandClock()
    collector = make_collector(clock=clock)
    survivor = Node()  # stands for the modules the warm-up imported
    assert any(thing is survivor for thing in gc.get_objects())  # walked by collections
    collector.freeze_at_next_idle()
    collector.check()
    clock.advance(2.5)
    collector.check()
    assert collector.collections == 1
    assert not any(thing is survivor for thing in gc.get_objects())  # frozen: never walked
    frozen = gc.get_freeze_count()
    later = Node()
    collector.collect()  # later collections do not freeze again
    # (frozen objects that die leave the count, so it may fall meanwhile; never rise)
    assert gc.get_freeze_count() <= frozen
    assert any(thing is later for thing in gc.get_objects())
