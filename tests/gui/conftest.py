"""Fixtures for window tests: a qasync loop on the test's QApplication, the real
main window over a temporary data folder, and a scripted model server.

pytest-qt knows nothing of qasync, so ``qasync_loop`` creates the QEventLoop
as "already running" (Qt's own event processing drives asyncio callbacks while
qtbot waits), collects exceptions the loop reports and fails the test with
them at teardown. Qt warnings fail tests too.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, QtMsgType

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from window_driver import WAIT_MS

#: Messages of the headless "offscreen" platform itself, not of our widgets.
PLATFORM_NOISE = ("This plugin does not support propagateSizeHints()",
                  "This plugin does not support raise()",
                  "This plugin does not support grabbing the keyboard")


@pytest.fixture(scope="session", autouse=True)
def turn_stack_loaded() -> None:
    """Load what a turn imports (the openai SDK above all) once, before any window test.

    The app does this in a worker thread when the person first types or clicks
    (``gui/app.py``'s ``warm_up_on_first_input``); these tests send without a
    key press, so the first test to send would otherwise wait for the import
    inside its turn, seconds on a busy machine.
    """
    from desktop_agent.session import warm_up_turns

    warm_up_turns(tokenizer=False)


@pytest.fixture(autouse=True)
def fail_on_qt_warnings(qtlog: Any) -> Iterator[None]:
    """Any Qt warning, critical or fatal message fails the test."""
    yield
    bad = [r for r in qtlog.records
           if r.type in (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg)
           and not r.message.startswith(PLATFORM_NOISE)]
    if bad:
        pytest.fail("Qt warnings: " + "; ".join(r.message for r in bad))


@pytest.fixture
def qasync_loop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync event loop on the test's QApplication, torn down with the test."""
    from desktop_agent.gui.event_loop import GuiEventLoop

    loop = GuiEventLoop(qapp, already_running=True)
    asyncio.set_event_loop(loop)
    errors: list[dict[str, Any]] = []

    def collect(_loop: Any, context: dict[str, Any]) -> None:
        errors.append(context)

    loop.set_exception_handler(collect)
    hooks = sys.get_asyncgen_hooks()
    base = asyncio.BaseEventLoop
    sys.set_asyncgen_hooks(firstiter=lambda agen: base._asyncgen_firstiter_hook(loop, agen),
                           finalizer=lambda agen: base._asyncgen_finalizer_hook(loop, agen))
    yield loop
    closing = loop.create_task(loop.shutdown_asyncgens())
    deadline = loop.time() + 5
    while not closing.done() and loop.time() < deadline:
        qapp.processEvents()
    sys.set_asyncgen_hooks(*hooks)
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        deadline = loop.time() + 5
        while any(not t.done() for t in pending) and loop.time() < deadline:
            qapp.processEvents()
    # loop.stop() would call QApplication.exit(), which leaves Qt's "quit now"
    # flag set and stops timers (hence asyncio callbacks) in later tests; the
    # loop never ran exec() here, so only its own flag needs resetting.
    loop._QEventLoop__is_running = False
    asyncio.events._set_running_loop(None)
    loop.close()
    # Kill the loop's leftover Qt timers now, in the GUI thread: a garbage
    # collection in another thread (the scripted server's) must not be the one
    # that destroys a QObject with live timers.
    loop._timer.kill_all()
    gc.collect()
    asyncio.set_event_loop(None)
    if errors:
        details = "; ".join(
            f"{c.get('message')}: " + "".join(traceback.format_exception(c["exception"]))
            if c.get("exception") else str(c.get("message")) for c in errors)
        raise AssertionError(f"exceptions reached the event loop: {details}")


@pytest.fixture
def make_window(qtbot: Any, qasync_loop: Any, store: Any, data_dir: Path,
                weather: Any) -> Iterator[Callable[..., Any]]:
    """Build the real main window (several times for restart tests)."""
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session.tools.tool_catalog import ToolCatalog

    windows: list[Any] = []

    def make(approval_timeout: float | None = 60.0, discover: bool = False,
             the_store: Any = None, tools: Any = None, builtin: bool = False,
             tabs_after_paint: bool = False) -> Any:
        window = MainWindow(
            the_store or store,
            tools=ToolCatalog(tools or [weather.build()], include_builtin=builtin),
            approval_timeout=approval_timeout, discover_on_start=discover,
            window_settings=QSettings(str(data_dir / "window.ini"), QSettings.Format.IniFormat),
            tabs_after_paint=tabs_after_paint)
        # Not qtbot.addWidget: pytest-qt would delete the window before this
        # fixture's teardown has shut its conversations down.
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        if not window._closed:
            window.close()
        task = asyncio.ensure_future(window.shutdown())
        qtbot.waitUntil(task.done, timeout=WAIT_MS)
        window.deleteLater()
    qtbot.wait(10)
