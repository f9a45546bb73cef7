"""Run one GGUF model with llama.cpp in a child process: start, stop, restart, watch.

:class:`LocalModel` is the whole engine for one model, with no Qt and no web
framework, so the window, ``desktop-agent serve --model`` and SDK scripts share it::

    async with LocalModel("qwen3-1.7b-q4_k_m.gguf") as server:
        query(prompt, options=AgentOptions(base_url=server.base_url, model=server.model,
                                           api_key=server.api_key))

The child is llama.cpp's own server (:mod:`desktop_agent.engine.engine_child`) on
127.0.0.1 with a random API key, so a crash in native code is a signal the app
reports, never the app's own crash, and other programs on the machine cannot use
the model without the key. A bad file is refused before anything starts; a start
that fails says why in one typed error (see :mod:`desktop_agent.engine.errors`).

Start engines from the thread that runs the app's event loop for the app's whole
life (the window's and ``serve``'s main thread): on Linux the kernel stops the
engine when the *thread* that started it ends, which is what makes a killed app
leave no engine behind.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import re
import secrets
import signal
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from desktop_agent.engine.child_spawn import (
    accepts_connections,
    answers_health,
    read_ready_line,
    spawn_child,
)
from desktop_agent.engine.engine_child import ChildLaunch, ReadyFacts
from desktop_agent.engine.errors import (
    EngineCrashed,
    EngineError,
    EnginePortTaken,
    EngineStartTimeout,
    EngineStopped,
    UnknownArchitecture,
    describe_exit,
)
from desktop_agent.engine.gguf_info import ModelInfo
from desktop_agent.engine.gguf_precheck import check_model_file
from desktop_agent.engine.llama_serve import require_server_package, tool_chat_template
from desktop_agent.engine.machine import load_factor, resident_bytes, startup_allowance
from desktop_agent.engine.model_names import find_model_file, names_a_path, served_name
from desktop_agent.engine.run_settings import RunSettings

logger = logging.getLogger("desktop_agent.engine")

#: How long a stopping engine may take before it is killed (it joins its threads).
STOP_GRACE_SECONDS = 10.0
#: How long a request that failed waits for the engine's end before asking whether it listens.
DYING_WAIT_SECONDS = 0.3
_UNKNOWN_ARCHITECTURE = re.compile(r"unknown model architecture: '([^']*)'")
_PORT_IN_USE = "couldn't bind HTTP server socket"

CrashCallback = Callable[[EngineCrashed], None]


class LocalModel:
    """One GGUF file served by llama.cpp in a child process, on loopback, with a random key.

    Attributes:
        path: The model file.
        settings: The settings asked for (None fields are chosen at start; the
            applied values are the properties below).
        alias: The model name the server answers to (the file's name without
            ``.gguf`` unless given).
        name: What the caller named the model (a path or a name), as given.
    """

    def __init__(self, model: str | os.PathLike[str], *, context_length: int | None = None,
                 threads: int | None = None, parallel: int = 1, gpu_layers: int | None = None,
                 chat_template: str | None = None, flash_attn: str = "auto", port: int = 0,
                 alias: str | None = None, log_dir: str | os.PathLike[str] | None = None,
                 fits_context: int | None = None, keyless: bool = False) -> None:
        """Describe the model to run; nothing starts until :meth:`start`.

        Args:
            model: The GGUF file, or a name the library knows: a file name
                (``qwen3-1.7b-q4_k_m.gguf``), a display name, an Ollama ``name:tag``
                or a catalog id (see :mod:`desktop_agent.engine.model_names`),
                resolved when it starts.
            context_length: Tokens per conversation (each slot), or None: 8192 capped
                by the model's trained context and ``fits_context``.
            threads: CPU threads, or None for the physical cores.
            parallel: Conversations served at once.
            gpu_layers: Layers on a GPU, or None to let llama.cpp fit them.
            chat_template: A Jinja template, or None: the model's own when it can call
                tools, else the project's tool template.
            flash_attn: ``auto``, ``on`` or ``off``.
            port: A port on 127.0.0.1, or 0 for a free one the system picks.
            alias: The model's name on the server.
            log_dir: Where the engine's log goes (None: a temporary file, removed
                after a clean stop and kept after a failure).
            fits_context: The most context that fits in memory (the library's fit rule).
            keyless: Demand no API key (``try-model``: the window finds that server by
                searching and cannot know a key). Any other program on the machine can
                then use the model.
        """
        self.name = os.fspath(model)
        self.path = Path(self.name).expanduser()
        self.settings = RunSettings(context_length=context_length, threads=threads,
                                    parallel=parallel, gpu_layers=gpu_layers,
                                    chat_template=chat_template, flash_attn=flash_attn)
        self.alias = alias or served_name(self.path)
        self._alias_given = alias is not None
        self._port = port
        self._log_dir = Path(log_dir) if log_dir is not None else None
        self._fits_context = fits_context
        self._api_key = "" if keyless else secrets.token_urlsafe(24)
        self._applied: RunSettings | None = None
        self._facts: ModelInfo | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._ready: ReadyFacts | None = None
        self._last_port = 0
        self._returncode: int | None = None
        self._stopping = False
        self._watcher: asyncio.Task[None] | None = None
        self._crash: EngineCrashed | None = None
        self._crash_callbacks: list[CrashCallback] = []
        self._log_path: Path | None = None
        self._template_source = ""
        self._start_lock = asyncio.Lock()
        self._stop_requested = asyncio.Event()  # set by a stop() during a start

    @classmethod
    def with_settings(cls, model: str | os.PathLike[str], settings: RunSettings, *,
                      port: int = 0, alias: str | None = None,
                      log_dir: str | os.PathLike[str] | None = None,
                      fits_context: int | None = None) -> LocalModel:
        """A model run with ``settings`` (as the app stores them per model)."""
        return cls(model, context_length=settings.context_length, threads=settings.threads,
                   parallel=settings.parallel, gpu_layers=settings.gpu_layers,
                   chat_template=settings.chat_template, flash_attn=settings.flash_attn,
                   port=port, alias=alias, log_dir=log_dir, fits_context=fits_context)

    # -- what the app shows and connects with ---------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the engine is up (started and not ended)."""
        return self._process is not None and self._process.returncode is None \
            and self._ready is not None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible address, ``http://127.0.0.1:PORT/v1`` (after start)."""
        return f"{self.root_url}/v1"

    @property
    def root_url(self) -> str:
        """The server's root (``/health``, ``/props``, ``/slots``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def port(self) -> int:
        """The port it listens on (after start; the one asked for before)."""
        return self._ready.port if self._ready is not None else self._port

    @property
    def model(self) -> str:
        """The model name to send in requests."""
        return self.alias

    @property
    def api_key(self) -> str:
        """The bearer token the engine demands (random, for this object's life; "" if keyless)."""
        return self._api_key

    @property
    def context_length(self) -> int | None:
        """Tokens per conversation as llama.cpp really applied them (None before start)."""
        return self._ready.context_length if self._ready is not None else None

    @property
    def parallel(self) -> int | None:
        """Slots as applied (None before start)."""
        return self._ready.parallel if self._ready is not None else None

    @property
    def threads(self) -> int | None:
        """CPU threads it runs with (None before start)."""
        return self._applied.threads if self._applied is not None else None

    @property
    def supports_tools(self) -> bool | None:
        """Whether the chat template in use renders tools (None before start)."""
        return self._ready.supports_tools if self._ready is not None else None

    @property
    def chat_template_source(self) -> str:
        """``model`` (its own), ``tool template`` (the project's) or ``custom``."""
        return self._template_source

    @property
    def facts(self) -> ModelInfo | None:
        """What the file's header said (after the check at start)."""
        return self._facts

    @property
    def pid(self) -> int | None:
        """The engine process's id while it runs."""
        return self._process.pid if self.running and self._process is not None else None

    @property
    def returncode(self) -> int | None:
        """How the last engine process ended (negative: the signal), or None."""
        if self._process is not None and self._process.returncode is not None:
            return self._process.returncode
        return self._returncode

    @property
    def crash(self) -> EngineCrashed | None:
        """Why the engine ended without being asked to, or None (cleared by a new start)."""
        return self._crash

    @property
    def log_path(self) -> Path | None:
        """The engine's log file (llama.cpp's own lines)."""
        return self._log_path

    def describe_exit(self) -> str:
        """How the engine ended, in words (``still running`` while it runs)."""
        return describe_exit(self.returncode)

    def rss_bytes(self) -> int | None:
        """The engine's resident memory in bytes (None when not running or not knowable)."""
        pid = self.pid
        return resident_bytes(pid) if pid is not None else None

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the engine's log."""
        if self._log_path is None:
            return ""
        try:
            with self._log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 16384))
                text = log.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def settle_after_failure(self) -> None:
        """After a request to it failed: if the engine is gone, wait until its end is known.

        A reply cut by the engine's death fails as soon as the socket closes, which can
        be before the app has reaped the process; waiting here lets the crash (and its
        callbacks) be known before the caller reports the failure. An engine that
        still listens failed the request for another reason: no wait.
        """
        watcher = self._watcher
        if watcher is None or watcher.done():
            return
        # A process being killed can still accept a connection for a moment (its
        # listening socket closes last): a short wait for its end first, so that
        # probe does not call a dying engine alive.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(watcher), DYING_WAIT_SECONDS * load_factor())
            return
        if await accepts_connections(self.port):
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(watcher), STOP_GRACE_SECONDS * load_factor())

    def on_crash(self, callback: CrashCallback) -> Callable[[], None]:
        """Call ``callback`` (on the event loop) when the engine ends unasked; returns an undo.

        The app shows the error's sentence on the card and offers :meth:`restart`.
        """
        self._crash_callbacks.append(callback)
        return lambda: self._crash_callbacks.remove(callback) \
            if callback in self._crash_callbacks else None

    # -- start and stop ------------------------------------------------------------------

    async def __aenter__(self) -> LocalModel:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.stop()

    async def start(self) -> None:
        """Check the file, start the engine and return once it answers (no-op if running).

        Raises:
            ModelNotFoundError: No model answers to the name given.
            ModelFileError: The file is missing, not GGUF, cut short, damaged or not a
                model that chats.
            EngineNotInstalled: ``xllamacpp`` is missing.
            UnknownArchitecture: This llama.cpp cannot run that kind of model.
            EnginePortTaken: The port asked for is in use.
            EngineStartTimeout: Not ready within the machine-scaled wait.
            EngineStopped: The engine ended while starting (how, and what it said).
            EngineError: :meth:`stop` was called before it was ready.
        """
        async with self._start_lock:
            if self.running:
                return
            await self._discard_ended()
            self._stop_requested.clear()
            if not self.path.is_file() and not names_a_path(self.name):
                self.path, alias = await asyncio.to_thread(find_model_file, self.name)
                self.alias = self.alias if self._alias_given else alias
            facts = await asyncio.to_thread(check_model_file, self.path)
            require_server_package()
            if self._stop_requested.is_set():
                raise self._abandoned()
            self._facts = facts
            self._applied = self.settings.resolve(trained_context=facts.context_length,
                                                  fits_context=self._fits_context)
            template, self._template_source = self._choose_template(facts)
            await self._launch(template)
            if self._template_source == "model" and not self.supports_tools:
                # The model's own template looked like it handles tools but llama.cpp says
                # it does not: run it with the project's tool template instead.
                logger.info("%s: its own template cannot call tools; using the tool template",
                            self.path.name)
                await self._halt()
                self._template_source = "tool template"
                await self._launch(tool_chat_template())

    async def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Stop the engine: SIGTERM, then SIGKILL if it has not ended after ``grace`` s.

        A start still under way is abandoned (its :meth:`start` raises), so quitting
        never waits for a big model to finish loading.
        """
        if self._start_lock.locked():
            self._stop_requested.set()
            await self._end_process(grace)
        async with self._start_lock:
            await self._halt(grace)

    async def restart(self) -> None:
        """Stop (if still running) and start again, on the same port when it is still free.

        The same port keeps the address conversations were given; when another program
        took it meanwhile, any free port will do.
        """
        await self.stop()
        asked = self._port
        if asked == 0 and self._last_port:
            self._port = self._last_port
            try:
                await self.start()
                return
            except EnginePortTaken:
                pass
            finally:
                self._port = asked
        await self.start()

    # -- the steps -------------------------------------------------------------------------

    def _choose_template(self, facts: ModelInfo) -> tuple[str | None, str]:
        if self.settings.chat_template is not None:
            return self.settings.chat_template, "custom"
        if facts.supports_tools:
            return None, "model"  # checked against llama.cpp's reading once it runs
        return tool_chat_template(), "tool template"

    async def _launch(self, template: str | None) -> None:
        assert self._applied is not None and self._facts is not None  # set by start()
        applied = self._applied
        context = (applied.context_length or 0) * applied.parallel
        launch = ChildLaunch(
            model=self._facts.path.resolve(), port=self._port, alias=self.alias,
            context_size=context,
            parallel=applied.parallel, threads=applied.threads or 1,
            gpu_layers=applied.gpu_layers, flash_attn=applied.flash_attn,
            api_key=self._api_key, chat_template=template)
        self._log_path = self._new_log_path()
        self._crash = None
        self._stopping = False
        process = await spawn_child(launch, self._log_path)
        self._process = process
        _LIVE.add(self)
        try:
            ready = await self._await_ready(process, launch)
        except BaseException:
            await self._halt(grace=0)  # a failed or cancelled start leaves nothing running
            raise
        self._ready = ready
        self._last_port = ready.port
        self._watcher = asyncio.create_task(self._watch(process), name=f"engine {self.alias}")
        logger.info("engine serving %s on port %d (context %d, %d slot(s), pid %d)",
                    self.path.name, ready.port, ready.context_length, ready.parallel,
                    process.pid)

    async def _await_ready(self, process: asyncio.subprocess.Process,
                           launch: ChildLaunch) -> ReadyFacts:
        assert process.stdout is not None  # a pipe (spawn_child)
        allowance = startup_allowance(self._facts.size_bytes if self._facts else 0)
        reading = asyncio.ensure_future(read_ready_line(process.stdout))
        stopping = asyncio.ensure_future(self._stop_requested.wait())
        try:
            done, _pending = await asyncio.wait({reading, stopping}, timeout=allowance,
                                                return_when=asyncio.FIRST_COMPLETED)
        finally:
            reading.cancel()
            stopping.cancel()
        if stopping in done or self._stopping:
            raise self._abandoned()
        if reading not in done:
            raise EngineStartTimeout(self.path, allowance, self.log_tail())
        ready = reading.result()
        if ready is None:  # its stdout ended before the ready line: it is ending
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), STOP_GRACE_SECONDS)
            if self._stopping:
                raise self._abandoned()
            raise self._start_failure(process.returncode, launch.port)
        if not await answers_health(ready.port):
            raise EngineError(f"The engine said {self.path.name} was ready but does not answer "
                              f"on port {ready.port}; a firewall may block 127.0.0.1.")
        return ready

    def _abandoned(self) -> EngineError:
        return EngineError(f"{self.path.name} was stopped before it was ready.")

    def _start_failure(self, returncode: int | None, port: int) -> EngineError:
        tail = self.log_tail()
        unknown = _UNKNOWN_ARCHITECTURE.search(tail)
        if unknown:
            return UnknownArchitecture(self.path, unknown.group(1))
        if _PORT_IN_USE in tail:
            return EnginePortTaken(port)
        if returncode is None:
            return EngineError(f"The engine closed its output without serving {self.path.name}.")
        return EngineStopped(returncode, tail, when=f"{self.path.name} did not start")

    async def _watch(self, process: asyncio.subprocess.Process) -> None:
        """Wait for the engine to end; an end nobody asked for is a crash the app hears of."""
        returncode = await process.wait()
        if self._stopping:
            return
        self._crash = EngineCrashed(returncode, self.log_tail(),
                                    when=f"{self.alias} stopped while serving")
        logger.warning("%s", self._crash)
        _LIVE.discard(self)
        for callback in list(self._crash_callbacks):
            try:
                callback(self._crash)
            except Exception as exc:  # noqa: BLE001 - one listener's bug must not hide the crash
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "engine crash callback failed", "exception": exc})

    async def _end_process(self, grace: float) -> None:
        """SIGTERM the engine, SIGKILL after ``grace`` s; an end asked for, never a crash."""
        process = self._process
        if process is None:
            return
        self._stopping = True
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()

    async def _halt(self, grace: float = STOP_GRACE_SECONDS) -> None:
        process = self._process
        if process is None:
            return
        await self._end_process(grace)
        if self._watcher is not None:
            await self._watcher
            self._watcher = None
        await self._discard_ended()
        if process.returncode == 0 and self._log_dir is None and self._log_path is not None:
            self._log_path.unlink(missing_ok=True)  # a clean stop: nothing to look into
            self._log_path = None

    async def _discard_ended(self) -> None:
        """Forget a process that has ended (closing its pipes), keeping how it ended."""
        process = self._process
        if process is None or process.returncode is None:
            return
        self._returncode = process.returncode
        self._ready = None
        if process.stdin is not None:
            process.stdin.close()
            with contextlib.suppress(ConnectionError, BrokenPipeError):
                await process.stdin.wait_closed()
        self._process = None
        _LIVE.discard(self)

    def _new_log_path(self) -> Path:
        folder = self._log_dir or Path(tempfile.gettempdir())
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f"engine-{self.alias}-", suffix=".log",
                                        dir=folder)
        os.close(handle)
        return Path(name)

    def _signal_now(self) -> None:
        """Ask the engine to stop without the event loop (at interpreter exit)."""
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)


#: Engines running now; at exit each is asked to stop (its watchdog pipe and, on
#: Linux, the parent-death signal stop it too; this is the polite first word).
_LIVE: weakref.WeakSet[LocalModel] = weakref.WeakSet()


@atexit.register
def _stop_engines_at_exit() -> None:
    for model in list(_LIVE):
        model._signal_now()
