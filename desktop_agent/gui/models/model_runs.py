"""The models the window runs: start, stop, restart, keep loaded during a turn, watch.

The engine is started on the event loop's thread, which is the GUI thread: on Linux
the parent-death signal that stops an engine when the app is killed follows the
*thread* that started it, and this one lives as long as the app. One model runs at a
time; a model unused for the time the person set is unloaded (a turn holds its model
meanwhile). The engine's random key goes to the keyring under :data:`ENGINE_KEY_NAME`,
where a conversation's turn reads it; the window only names it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

if TYPE_CHECKING:
    from desktop_agent.engine import LocalModel, RunningModels, RunSettings
    from desktop_agent.store import Store

IDLE_UNLOAD_KEY = "engine_idle_unload_minutes"
#: The keyring name under which conversations find the running engine's random key.
ENGINE_KEY_NAME = "engine:on-this-computer"
#: What the server picker and the header call the app's own engine.
LOCAL_SERVER_NAME = "On this computer"
DEFAULT_IDLE_MINUTES = 30
FIGURES_INTERVAL_MS = 2000


@dataclass(frozen=True)
class RunningModel:
    """A model the app runs, as the window shows it.

    Attributes:
        path: Its file.
        name: The model name requests use.
        base_url: Where it answers (``http://127.0.0.1:PORT/v1``).
        context_length: Tokens per conversation as llama.cpp applied them.
        threads: CPU threads it runs with.
        rss_bytes: The engine process's resident memory, when known.
        pid: The engine process's id while it runs.
        running: False once it ended unasked (``crash`` says how).
        crash: The sentence naming how it ended (the signal, with advice).
        signal_name: ``SIGKILL`` and the like when a signal ended it.
    """

    path: Path
    name: str
    base_url: str
    context_length: int | None
    threads: int | None
    rss_bytes: int | None
    pid: int | None = None
    running: bool = True
    crash: str | None = None
    signal_name: str | None = None


class ModelRuns(QObject):
    """The engines the window runs, as facts and signals for the widgets.

    Args:
        store: Where the idle time is kept.
        fits_context: The most context that fits in memory for a model file (the
            library's fit rule), or None when unknown.

    Signals:
        models_changed(): A model started, stopped, was unloaded, crashed, or its
            figures (memory) changed.
        started(object): A model is ready: its :class:`RunningModel`.
        start_failed(object, str): A model could not start: its path and why.
        crashed(object): A :class:`RunningModel` that ended unasked, with how.
    """

    models_changed = Signal()
    started = Signal(object)
    start_failed = Signal(object, str)
    crashed = Signal(object)

    def __init__(self, store: Store, fits_context: Callable[[Path], int | None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._store = store
        self._fits_context = fits_context
        self._runner: RunningModels | None = None
        self._starting: Path | None = None
        self._rss: dict[Path, int | None] = {}
        self._unloaded: dict[str, RunningModel] = {}  # by base URL: stopped for being idle
        self._holds: dict[str, contextlib.AsyncExitStack] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._figures = QTimer(self)
        self._figures.setInterval(FIGURES_INTERVAL_MS)
        self._figures.timeout.connect(self._read_figures)

    @property
    def starting(self) -> Path | None:
        """The model file being started, if any."""
        return self._starting

    def running(self) -> list[RunningModel]:
        """The models held now (a crashed one until it is restarted or stopped)."""
        if self._runner is None:
            return []
        return [self._facts(engine) for engine in self._runner.models]

    def unloaded(self, base_url: str) -> RunningModel | None:
        """The model that answered at ``base_url`` until it was unloaded for being idle."""
        return self._unloaded.get(base_url.rstrip("/"))

    def hold(self, user: str, base_url: str) -> None:
        """``user`` (a conversation's turn) uses the model at ``base_url``: keep it loaded.

        Idle unloading counts from the end of the last use, never during one.
        """
        engine = self._engine_at(base_url)
        if engine is None or user in self._holds or self._runner is None:
            return
        stack = contextlib.AsyncExitStack()
        self._holds[user] = stack
        self._track(stack.enter_async_context(self._runner.in_use(engine)))

    def release(self, user: str) -> None:
        """``user``'s turn ended: the model's idle time starts now."""
        stack = self._holds.pop(user, None)
        if stack is not None:
            self._track(stack.aclose())

    def running_model(self, path: Path) -> RunningModel | None:
        """The held model for ``path``, if any."""
        key = _resolved(path)
        return next((model for model in self.running() if _resolved(model.path) == key), None)

    def run_in_background(self, path: Path, settings: RunSettings | None = None) -> None:
        """:meth:`run` as a task the bridge owns (for button clicks)."""
        self._track(self.run(path, settings))

    async def run(self, path: Path, settings: RunSettings | None = None) -> RunningModel | None:
        """Start ``path`` (stopping the other model first); None when it could not start.

        Runs on the event loop's thread: see the module docstring.
        """
        from desktop_agent.engine import EngineError

        runner = self._running_models()
        fits = self._fits_context(path)
        self._starting = path
        self.models_changed.emit()
        try:
            engine = await runner.run(path, settings, fits_context=fits)
        except EngineError as error:
            self._starting = None
            self.models_changed.emit()
            self.start_failed.emit(path, str(error))
            return None
        finally:
            self._starting = None
        engine.on_crash(functools.partial(self._on_crash, engine))
        self._unloaded = {url: model for url, model in self._unloaded.items()
                          if _resolved(model.path) != _resolved(path)}
        await asyncio.to_thread(_remember_engine_key, engine.api_key)
        self._figures.start()
        self._read_figures()
        facts = self._facts(engine)
        self.started.emit(facts)
        return facts

    def stop(self, path: Path) -> None:
        """Stop the model running from ``path`` (a task the bridge owns)."""
        if self._runner is not None:
            self._track(self._stop(path))

    async def _stop(self, path: Path) -> None:
        assert self._runner is not None
        await self._runner.stop(path)
        self._rss.pop(_resolved(path), None)
        self.models_changed.emit()

    def restart(self, path: Path) -> None:
        """Start a crashed or unloaded model again (a crashed one at the same address)."""
        self._track(self._restart(path))

    async def _restart(self, path: Path) -> None:
        from desktop_agent.engine import EngineError

        engine = self._runner.find(path) if self._runner is not None else None
        if engine is None:
            await self.run(path)
            return
        try:
            await engine.restart()
        except EngineError as error:
            self.start_failed.emit(path, str(error))
        self.models_changed.emit()

    @property
    def idle_minutes(self) -> int:
        """Minutes without use after which a model is unloaded (0: never)."""
        value = self._store.get_setting(IDLE_UNLOAD_KEY, DEFAULT_IDLE_MINUTES)
        return value if isinstance(value, int) and value >= 0 else DEFAULT_IDLE_MINUTES

    def set_idle_minutes(self, minutes: int) -> None:
        """Unload a model after ``minutes`` without use (0: never)."""
        self._store.set_setting(IDLE_UNLOAD_KEY, max(0, int(minutes)))
        if self._runner is not None:
            self._runner.idle_unload_after = minutes * 60.0 if minutes else None

    async def close(self) -> None:
        """Stop every model (the app is quitting)."""
        self._figures.stop()
        if self._runner is not None:
            await self._runner.stop_all()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    def _running_models(self) -> RunningModels:
        if self._runner is None:
            from desktop_agent.engine import RunningModels

            minutes = self.idle_minutes
            self._runner = RunningModels(idle_unload_after=minutes * 60.0 if minutes else None)
            self._runner.on_unloaded(self._on_unloaded)
        return self._runner

    def _on_unloaded(self, engine: LocalModel) -> None:
        facts = self._facts(engine)
        self._unloaded[facts.base_url.rstrip("/")] = facts
        self._rss.pop(_resolved(engine.path), None)
        self.models_changed.emit()

    def _engine_at(self, base_url: str) -> LocalModel | None:
        wanted = base_url.rstrip("/")
        engines = self._runner.models if self._runner is not None else []
        return next((engine for engine in engines if engine.base_url.rstrip("/") == wanted),
                    None)

    def _on_crash(self, engine: LocalModel, _error: object) -> None:
        self._rss.pop(_resolved(engine.path), None)
        self.crashed.emit(self._facts(engine))
        self.models_changed.emit()

    def _facts(self, engine: LocalModel) -> RunningModel:
        crash = engine.crash
        return RunningModel(
            path=engine.path, name=engine.model, base_url=engine.base_url,
            context_length=engine.context_length, threads=engine.threads,
            rss_bytes=self._rss.get(_resolved(engine.path)), pid=engine.pid,
            running=engine.running,
            crash=str(crash) if crash is not None else None,
            signal_name=crash.signal_name if crash is not None else None)

    def _read_figures(self) -> None:
        engines = [engine for engine in (self._runner.models if self._runner else [])
                   if engine.running]
        if not engines:
            self._figures.stop()
            return
        self._rss = {_resolved(engine.path): engine.rss_bytes() for engine in engines}
        self.models_changed.emit()

    def _track(self, coroutine: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task



def _remember_engine_key(key: str) -> None:
    """Keep the engine's random key where conversations look keys up: the keyring.

    A conversation names the key (:data:`ENGINE_KEY_NAME`), never holds it; each new
    engine replaces it, so a stale one opens nothing.
    """
    from desktop_agent.appdata.secrets import set_secret

    set_secret(ENGINE_KEY_NAME, key)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
