"""A tab loaded before the asyncio loop runs: nothing started that cannot step.

The app shows its window (and loads the first tab) just before its loop starts;
a script can drive Qt by hand with no loop running at all. A tab's background
work must wait for the loop in the first case and not start in the second:
a task stepped by Qt's timers with no running loop fails inside
(``asyncio.to_thread``: "no running event loop") with nobody to see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.gui.transcript.message_bubbles import UserMessageWidget
from desktop_agent.testing import script


@contextlib.contextmanager
def loop_not_running(loop: Any) -> Iterator[None]:
    """Qt events are processed but the asyncio loop does not run (as before ``exec``)."""
    loop._QEventLoop__is_running = False
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        loop._QEventLoop__is_running = True
        asyncio.events._set_running_loop(loop)


def _changed_files_conversation(qtbot: Any, make_window: Any, server: Any,
                                work: Path) -> str:
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["write_file"], workdir=str(work), confirm_tools=False)
    server.enqueue(script.tool_calls([("write_file", {"path": "a.txt", "content": "one\n"})]),
                   script.text("Written."))
    send(qtbot, window, "Write a")
    wait_idle(qtbot, controller)
    conversation_id: str = controller.session.conversation_id
    window.close()
    shut = asyncio.ensure_future(window.shutdown())
    qtbot.waitUntil(shut.done, timeout=WAIT_MS)
    return conversation_id


def _restore_shown(window: Any) -> bool:
    view = window.current_tab().transcript
    view.flush()
    return any(isinstance(view.item_widget(k), UserMessageWidget)
               and view.item_widget(k).restore_button.isVisible() for k in view.item_keys())


def test_a_tab_shown_before_the_loop_runs_offers_restore_once_it_runs(
        qtbot: Any, make_window: Any, qasync_loop: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _changed_files_conversation(qtbot, make_window, server, work)

    with loop_not_running(qasync_loop):
        window = make_window(builtin=True)  # restores the tab and shows it: loads it
    qtbot.waitUntil(lambda: _restore_shown(window), timeout=WAIT_MS)


def test_a_tab_driven_with_no_loop_running_starts_nothing_that_fails(
        qtbot: Any, make_window: Any, qasync_loop: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _changed_files_conversation(qtbot, make_window, server, work)
    reported: list[dict[str, Any]] = []
    handler = qasync_loop.get_exception_handler()
    qasync_loop.set_exception_handler(lambda _loop, context: reported.append(context))

    with loop_not_running(qasync_loop):
        window = make_window(builtin=True)
        for _ in range(20):
            qtbot.wait(5)
        gc.collect()  # a failed task nobody awaited is reported when collected

    qasync_loop.set_exception_handler(handler)
    assert [f"{c.get('message')}: {c.get('future')}" for c in reported] == []
    assert window.current_tab().transcript.item_keys()  # the tab itself did load
