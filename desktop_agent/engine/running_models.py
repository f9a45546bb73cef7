"""The models the app runs right now: one at a time by default, unloaded when idle.

A model held in memory is memory the rest of the machine does not have, so running
a second model stops the first (unless the person allows several), and a model
nobody has used for the time the person set is stopped, giving its memory back.
The app says when a model is used (:meth:`RunningModels.in_use` around a request,
or :meth:`RunningModels.touch`); quitting calls :meth:`RunningModels.stop_all`
(an app that is killed instead leaves no engine behind either: see ``engine_child``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from desktop_agent.engine.run_settings import RunSettings
from desktop_agent.engine.runner import LocalModel

logger = logging.getLogger("desktop_agent.engine")

UnloadCallback = Callable[[LocalModel], None]


class RunningModels:
    """The engines this app runs, by model file.

    Attributes:
        one_at_a_time: Running a model stops any other first.
    """

    def __init__(self, *, one_at_a_time: bool = True, idle_unload_after: float | None = None,
                 log_dir: str | os.PathLike[str] | None = None) -> None:
        """Hold no model yet.

        Args:
            one_at_a_time: Stop the running model when another is run.
            idle_unload_after: Seconds without use after which a model is stopped
                (None: never).
            log_dir: Where the engines' logs go (None: temporary files).
        """
        self.one_at_a_time = one_at_a_time
        self._idle_unload_after = idle_unload_after
        self._log_dir = log_dir
        self._models: dict[Path, LocalModel] = {}
        self._last_used: dict[Path, float] = {}
        self._users: dict[Path, int] = {}
        self._timers: dict[Path, asyncio.TimerHandle] = {}
        self._unloads: set[asyncio.Task[None]] = set()
        self._unload_callbacks: list[UnloadCallback] = []
        self._starting: LocalModel | None = None
        self._lock = asyncio.Lock()

    @property
    def models(self) -> list[LocalModel]:
        """The models held (running, or crashed and not yet restarted or stopped)."""
        return list(self._models.values())

    @property
    def idle_unload_after(self) -> float | None:
        """Seconds without use before a model is stopped (None: never)."""
        return self._idle_unload_after

    @idle_unload_after.setter
    def idle_unload_after(self, seconds: float | None) -> None:
        self._idle_unload_after = seconds
        for path in list(self._models):
            self._schedule_idle_check(path)

    def find(self, model: str | os.PathLike[str]) -> LocalModel | None:
        """The engine held for this model file, if any."""
        return self._models.get(_key(model))

    def on_unloaded(self, callback: UnloadCallback) -> Callable[[], None]:
        """Call ``callback`` with each model stopped for being idle; returns an undo."""
        self._unload_callbacks.append(callback)
        return lambda: self._unload_callbacks.remove(callback) \
            if callback in self._unload_callbacks else None

    async def run(self, model: str | os.PathLike[str], settings: RunSettings | None = None, *,
                  fits_context: int | None = None, alias: str | None = None) -> LocalModel:
        """The running engine for ``model``, started (and others stopped) if need be.

        The same file with the same settings returns the engine already running (a
        crashed one restarted, keeping its address and key); new settings start a new
        engine in its place.

        Raises:
            EngineError: The engine could not start (see ``LocalModel.start``); the
                model is then not held, and the others stay stopped.
        """
        wanted = settings or RunSettings()
        path = _key(model)
        async with self._lock:
            held = self._models.get(path)
            if held is not None and held.settings == wanted:
                if not held.running:  # crashed: same key, and the same port when free
                    await held.restart()
                self.touch(held)
                return held
            if held is not None:
                await self._forget(path)
            if self.one_at_a_time:
                for other in list(self._models):
                    await self._forget(other)
            engine = LocalModel.with_settings(path, wanted, log_dir=self._log_dir,
                                              fits_context=fits_context, alias=alias)
            self._starting = engine
            try:
                await engine.start()
            finally:
                self._starting = None
            self._models[path] = engine
            self._users[path] = 0
            self.touch(engine)
            return engine

    def users(self, engine: LocalModel) -> int:
        """How many requests use ``engine`` now (:meth:`in_use` blocks open)."""
        return self._users.get(_key(engine.path), 0)

    def touch(self, engine: LocalModel) -> None:
        """Note that ``engine`` was just used: its idle time starts again."""
        path = _key(engine.path)
        if path not in self._models:
            return
        self._last_used[path] = time.monotonic()
        self._schedule_idle_check(path)

    @contextlib.asynccontextmanager
    async def in_use(self, engine: LocalModel) -> AsyncIterator[LocalModel]:
        """Mark ``engine`` busy for the block (a request): it is not unloaded meanwhile."""
        path = _key(engine.path)
        self._users[path] = self._users.get(path, 0) + 1
        try:
            yield engine
        finally:
            self._users[path] = max(0, self._users.get(path, 1) - 1)
            self.touch(engine)

    async def stop(self, model: str | os.PathLike[str] | LocalModel) -> None:
        """Stop the engine for this model and stop holding it."""
        path = _key(model.path if isinstance(model, LocalModel) else model)
        async with self._lock:
            await self._forget(path)

    async def stop_all(self) -> None:
        """Stop every engine (the app is quitting)."""
        for task in list(self._unloads):
            task.cancel()
        if self._starting is not None:
            await self._starting.stop()  # its run() raises: quitting does not wait for a load
        async with self._lock:
            for path in list(self._models):
                await self._forget(path)

    # -- idle unloading ----------------------------------------------------------------

    def _schedule_idle_check(self, path: Path) -> None:
        timer = self._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        seconds = self._idle_unload_after
        if seconds is None or path not in self._models:
            return
        remaining = self._last_used.get(path, time.monotonic()) + seconds - time.monotonic()
        self._timers[path] = asyncio.get_running_loop().call_later(
            max(0.0, remaining), self._idle_check, path)

    def _idle_check(self, path: Path) -> None:
        self._timers.pop(path, None)
        engine = self._models.get(path)
        if engine is None or self._users.get(path, 0) > 0:
            return  # in use: leaving the block touches it, which schedules the next check
        seconds = self._idle_unload_after
        idle = time.monotonic() - self._last_used.get(path, 0.0)
        if seconds is None:
            return
        if idle < seconds:
            self._schedule_idle_check(path)
            return
        task = asyncio.get_running_loop().create_task(self._unload_idle(path, engine),
                                                      name=f"unload {engine.alias}")
        self._unloads.add(task)
        task.add_done_callback(self._unloads.discard)

    async def _unload_idle(self, path: Path, engine: LocalModel) -> None:
        async with self._lock:
            if self._models.get(path) is not engine or self._users.get(path, 0) > 0:
                return  # replaced or taken into use while the lock was held
            logger.info("unloading %s: unused for %.0f s", engine.alias,
                        self._idle_unload_after or 0)
            await self._forget(path)
        for callback in list(self._unload_callbacks):
            callback(engine)

    async def _forget(self, path: Path) -> None:
        timer = self._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        engine = self._models.pop(path, None)
        self._last_used.pop(path, None)
        self._users.pop(path, None)
        if engine is not None:
            await engine.stop()


def _key(model: str | os.PathLike[str]) -> Path:
    return Path(model).resolve()
