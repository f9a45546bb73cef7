"""One model at a time, unloaded when idle: ``RunningModels`` with the real engine."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path

import pytest
from runner_fixtures import process_gone, scaled, smollm2, wait_until_async

from desktop_agent.engine.run_settings import RunSettings
from desktop_agent.engine.runner import LocalModel
from desktop_agent.engine.running_models import RunningModels

pytestmark = pytest.mark.e2e

SMALL = RunSettings(context_length=1024, threads=1)


def second_model(tmp_path: Path) -> Path:
    """Another model file (the same bytes under another name: a link when it can be)."""
    other = tmp_path / "other-model.gguf"
    try:
        os.link(smollm2(), other)
    except OSError:
        shutil.copyfile(smollm2(), other)
    return other


async def test_running_a_second_model_stops_the_first(tmp_path: Path) -> None:
    running = RunningModels(log_dir=tmp_path)
    try:
        first = await running.run(smollm2(), SMALL)
        first_pid = first.pid
        assert first_pid is not None
        assert await running.run(smollm2(), SMALL) is first  # already running: the same one
        second = await running.run(second_model(tmp_path), SMALL)
        assert second.running and not first.running and process_gone(first_pid)
        assert running.models == [second]
        assert second.model == "other-model"
    finally:
        await running.stop_all()
    assert running.models == [] and not second.running


async def test_several_models_run_together_when_allowed(tmp_path: Path) -> None:
    running = RunningModels(one_at_a_time=False, log_dir=tmp_path)
    try:
        first = await running.run(smollm2(), SMALL)
        second = await running.run(second_model(tmp_path), SMALL)
        assert first.running and second.running and first.port != second.port
        changed = await running.run(smollm2(), RunSettings(context_length=2048, threads=1))
        assert changed is not first and changed.context_length == 2048 and not first.running
    finally:
        await running.stop_all()


async def test_an_idle_model_is_unloaded_but_not_while_in_use(tmp_path: Path) -> None:
    idle = 0.3
    running = RunningModels(idle_unload_after=idle, log_dir=tmp_path)
    unloaded: list[LocalModel] = []
    running.on_unloaded(unloaded.append)
    try:
        engine = await running.run(smollm2(), SMALL)
        pid = engine.pid
        assert pid is not None
        async with running.in_use(engine):  # a request longer than the idle time
            await asyncio.sleep(idle * 3)
            assert engine.running and not unloaded
        await wait_until_async(lambda: bool(unloaded), "the idle model is unloaded")
        assert unloaded == [engine] and not engine.running and process_gone(pid)
        assert running.models == [] and engine.crash is None
    finally:
        await running.stop_all()


async def test_a_longer_idle_time_set_later_keeps_the_model(tmp_path: Path) -> None:
    running = RunningModels(idle_unload_after=0.2, log_dir=tmp_path)
    try:
        engine = await running.run(smollm2(), SMALL)
        running.idle_unload_after = scaled(600)
        await asyncio.sleep(0.6)
        assert engine.running and running.models == [engine]
        running.idle_unload_after = None
        await asyncio.sleep(0.3)
        assert engine.running
    finally:
        await running.stop_all()


async def test_running_a_crashed_model_again_keeps_its_address_and_key(tmp_path: Path) -> None:
    running = RunningModels(log_dir=tmp_path)
    try:
        engine = await running.run(smollm2(), SMALL)
        address, key, pid = engine.base_url, engine.api_key, engine.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await wait_until_async(lambda: engine.crash is not None, "the crash is noticed")
        again = await running.run(smollm2(), SMALL)
        assert again is engine and engine.running and engine.pid != pid
        assert (engine.base_url, engine.api_key) == (address, key)
    finally:
        await running.stop_all()
