"""A nested Qt event loop inside a task's step must not lose another task's wake-up.

With plain qasync the woken task's step ran inside the nested loop, asyncio
refused it ("Cannot enter into task ... while another task ... is being
executed"), and the task then waited for ever on a finished future: the
screenshot script's stuck first reply (3 runs in 6). The test uses the window
fixture's loop, which is the app's :class:`GuiEventLoop`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtWidgets import QApplication
from window_driver import WAIT_MS, last_assistant_text, send, use_server

from desktop_agent.testing import script


def test_a_task_woken_during_a_nested_qt_loop_still_resumes(
        qtbot: Any, qasync_loop: asyncio.AbstractEventLoop) -> None:
    answer: asyncio.Future[str] = qasync_loop.create_future()
    heard: list[str] = []
    waiting: list[bool] = []

    async def listener() -> None:
        waiting.append(True)  # the await below parks it in this same step
        heard.append(await answer)

    async def painter() -> None:
        answer.set_result("hello")  # the listener's wake-up is now due...
        QApplication.processEvents()  # ...and Qt runs due timers inside this step

    listening = qasync_loop.create_task(listener())
    qtbot.waitUntil(lambda: bool(waiting), timeout=WAIT_MS)
    painting = qasync_loop.create_task(painter())
    qtbot.waitUntil(lambda: painting.done() and listening.done(), timeout=WAIT_MS)
    assert heard == ["hello"]


def test_a_reply_streams_to_the_end_while_a_task_paints_the_window(
        qtbot: Any, make_window: Any, server: Any) -> None:
    """The screenshot script's shape: grab the window mid-stream from a coroutine."""
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.text(" ".join(f"w{i}" for i in range(80)), pieces=80, delay=0.01))
    send(qtbot, window, "Tell me")
    grabs: list[bool] = []

    async def paint_while_it_streams() -> None:
        while controller.busy:
            QApplication.processEvents()  # paint first, as a screenshot does
            grabs.append(not window.grab().isNull())
            await asyncio.sleep(0.005)

    painting = asyncio.ensure_future(paint_while_it_streams())
    qtbot.waitUntil(lambda: "w79" in last_assistant_text(window) and not controller.busy,
                    timeout=WAIT_MS)
    qtbot.waitUntil(painting.done, timeout=WAIT_MS)
    assert grabs and all(grabs)


def _loop_workers() -> set[Any]:
    """The loop's worker threads alive now (other tests' threads may come and go meanwhile)."""
    import threading

    return {t for t in threading.enumerate() if t.name.startswith("loop-worker")}


def test_work_handed_to_threads_starts_only_the_threads_it_needs(
        qtbot: Any, qasync_loop: asyncio.AbstractEventLoop) -> None:
    """Jobs one after another start one worker thread, not ten as qasync did for the first.

    At most two: the standard pool counts a worker idle only after the job's result
    is handed back, so on a busy machine the next job may come before that and get a
    second thread.
    """
    import threading

    before = _loop_workers()
    ran_on: list[str] = []

    async def jobs() -> list[int]:
        results = []
        for n in range(3):
            results.append(await asyncio.to_thread(
                lambda n=n: ran_on.append(threading.current_thread().name) or n * n))
        return results

    task = qasync_loop.create_task(jobs())
    qtbot.waitUntil(task.done, timeout=WAIT_MS)
    assert task.result() == [0, 1, 4]
    assert len(set(ran_on)) <= 2 and threading.current_thread().name not in ran_on
    assert all(name.startswith("loop-worker") for name in ran_on)  # the loop's own pool
    assert len(_loop_workers() - before) <= 2


def test_a_timeout_that_did_not_fire_lets_go_of_its_call_at_once(
        qtbot: Any, qasync_loop: asyncio.AbstractEventLoop) -> None:
    """A network read's or a command's time limit: what the call held is freed when it ends.

    qasync kept a cancelled timer's handle, and with it the call's context, until
    the time limit would have run out (minutes), turn after turn.
    """
    import contextvars
    import gc
    import weakref

    class Output:  # what a tool call holds in its context, e.g. its progress channel
        pass

    held: contextvars.ContextVar[Output] = contextvars.ContextVar("held")
    output = Output()
    gone = weakref.ref(output)

    async def call(payload: Output) -> None:
        held.set(payload)
        await asyncio.wait_for(asyncio.sleep(0.001), timeout=600)

    task = qasync_loop.create_task(call(output))
    del output
    qtbot.waitUntil(task.done, timeout=WAIT_MS)
    task.result()
    del task
    gc.collect()
    assert gone() is None, "the call's context lives on in its cancelled 600 s timeout"
