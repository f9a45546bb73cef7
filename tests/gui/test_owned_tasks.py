"""The window parts' background tasks: held until they end, stopped when the part goes."""

from __future__ import annotations

import asyncio
import gc

from desktop_agent.gui.loop_work import OwnedTasks


def test_a_task_started_and_forgotten_still_finishes() -> None:
    async def scenario() -> list[str]:
        done: list[str] = []
        tasks = OwnedTasks()

        async def work() -> None:
            await asyncio.sleep(0.01)
            done.append("read")

        tasks.start(work())  # the caller keeps no reference
        gc.collect()
        assert tasks.busy()
        await tasks.wait()
        assert not tasks.busy()
        return done

    assert asyncio.run(scenario()) == ["read"]


def test_cancel_and_wait_stops_every_task_and_hides_their_endings() -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        tasks = OwnedTasks()
        started = asyncio.Event()

        async def forever() -> None:
            started.set()
            await asyncio.Event().wait()

        async def fails() -> None:
            raise RuntimeError("the store went away")

        slow = tasks.start(forever())
        broken = tasks.start(fails())
        await started.wait()
        await tasks.cancel_and_wait()  # neither the cancel nor the failure escapes
        return slow.cancelled(), broken.done(), tasks.busy()

    assert asyncio.run(scenario()) == (True, True, False)
