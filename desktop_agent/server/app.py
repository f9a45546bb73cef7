"""The FastAPI app: ``create_app(store, ...)`` wires services, routers, auth and errors.

The app is built around a Store passed in (the window's store in production,
a temporary one in tests), so the REST server and the window share
conversations. Everything with a lifetime (runners, callback workers, the
event writer) is stopped in the app's lifespan, on purpose and in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse

from desktop_agent.appdata import paths
from desktop_agent.core.wire.connection_pool import ConnectionPool
from desktop_agent.core.wire.retry import RetryPolicy
from desktop_agent.session import (
    AppConfig,
    LocalEngine,
    SessionEnvironment,
    ToolCatalog,
    prune_left_behind,
)
from desktop_agent.store import DatabaseAccessError, DatabaseUnavailableError

from .api_errors import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS, install_error_handlers
from .api_models import Alive, Ready
from .app_services import AppServices
from .auth import check_key_text, require_key
from .callbacks import DELIVERY_TIMEOUT, CallbackDispatcher
from .conversation_runner import runner_registry
from .event_log import EventLog
from .memory_return import collect_cycles, return_freed_memory
from .request_guard import DEFAULT_BODY_LIMIT, RequestGuard
from .routes import (
    callbacks,
    checkpoints,
    commands,
    context_window,
    conversations,
    events,
    files,
    local_models,
    mcp,
    mcp_servers,
    previews,
    project,
    secrets,
    slash_commands,
    tools,
    turns,
)
from .shared_approvals import listen_for_answers
from .shared_callbacks import SharedCallbacks
from .start_pacer import PacedStarts
from .thread_scheduling import deferring_executor
from .unexpected_errors import UnexpectedErrors

if TYPE_CHECKING:
    from desktop_agent.appdata.secret_cipher import SecretCipher
    from desktop_agent.core.tooling.hooks import Hooks
    from desktop_agent.core.tooling.tools import Tool
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.server")

TELEMETRY_OFF: Any = {  # a TelemetryConfig where FastAPI has one
    "tracing": False, "metrics": False, "logs": False, "operation_spans": False,
    "auto_configure": False,
}
"""FastAPI's own OpenTelemetry (in recent versions) stays off whatever the environment says.

Spans carry request paths (conversation ids) and exception messages; with
``FASTAPI_OTEL_AUTO_CONFIGURE`` set for some other program they would be
exported from a desktop app that promises nothing leaves the machine. Off, it
also costs nothing per request (``GET /alive`` in-process: 77 -> 70 µs).
Older FastAPI versions keep unknown keyword arguments and ignore them."""

DEFAULT_UPLOAD_LIMIT = 50 * 1024 * 1024
DEFAULT_IDLE_SECONDS = 300.0


def create_app(
    store: Store,
    *,
    master_key: str | None,
    workdirs_root: Path | None = None,
    extra_tools: Sequence[Tool] = (),
    upload_limit: int = DEFAULT_UPLOAD_LIMIT,
    approval_timeout: float = 300.0,
    callback_policy: RetryPolicy | None = None,
    callback_timeout: float = DELIVERY_TIMEOUT,
    allowed_hosts: Sequence[str] | None = None,
    body_limit: int = DEFAULT_BODY_LIMIT,
    config_path: Path | None = None,
    hooks: Hooks | None = None,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    secret_cipher: SecretCipher | None = None,
    local_engine: LocalEngine | None = None,
) -> FastAPI:
    """Build the REST app over ``store``.

    Args:
        store: The conversation store (shared with the window).
        master_key: The bearer key every route but ``/alive`` requires; None
            disables auth (the CLI allows that only on loopback).
        workdirs_root: Parent of per-conversation workdirs; defaults to the data folder's.
        extra_tools: Tools conversations may name besides the built-in ones.
        upload_limit: Largest accepted upload, in bytes.
        approval_timeout: Seconds a tool call waits for a decision in confirmation mode.
        callback_policy: Retries of a failed HTTP callback delivery (default: six
            tries over about 15 s).
        callback_timeout: Seconds one callback POST may take before it counts as failed.
        allowed_hosts: Host header names served (``*``: any). Default: only
            loopback names without a key (DNS rebinding), any name with one.
            Without a key, names that are not loopback are dropped.
        body_limit: Largest request body of every route but uploads, in bytes.
        config_path: The ``config.json`` with MCP servers and permission rules
            (default: the data folder's, the one the window reads).
        hooks: Hooks every turn runs (``UserPromptSubmit``, ``PreToolUse``...).
        idle_seconds: Drop a conversation's runner and in-memory events after
            this long without use (they are rebuilt from the store on next use).
        secret_cipher: The replicas' key (``serve --database``): callbacks are then
            shared through the store with their URLs sealed by it. None: callbacks
            stay in this process's memory.
        local_engine: The models on this computer; None makes one over the data
            folder (nothing is scanned or started until asked). Its
            ``default_model`` (``serve --model``) is started when the app starts,
            and conversations created without a ``base_url`` use it.

    Raises:
        ValueError: The master key has characters HTTP headers cannot carry.
    """
    check_key_text(master_key)
    root = workdirs_root or paths.workdirs_dir()
    root.mkdir(parents=True, exist_ok=True)
    event_log = EventLog(store)
    shared = None if secret_cipher is None else SharedCallbacks(store, secret_cipher)
    dispatcher = CallbackDispatcher(callback_policy, callback_timeout, shared=shared)
    event_log.listeners.append(dispatcher.on_event)
    # One HTTP pool per model server, shared by every conversation.
    pool = ConnectionPool()
    engine = local_engine or LocalEngine(paths.data_dir(), store=store)
    svc = AppServices(
        store=store,
        events=event_log,
        callbacks=dispatcher,
        session=SessionEnvironment(
            tools=ToolCatalog(extra_tools, config=AppConfig(config_path), workdirs_root=root),
            config=AppConfig(config_path), hooks=hooks, approval_timeout=approval_timeout,
            connection_pool=pool, local_servers=engine),
        workdirs_root=root,
        upload_limit=upload_limit,
        approval_timeout=approval_timeout,
        connection_pool=pool,
        idle_seconds=idle_seconds,
        shared_approvals=store.engine == "postgresql",
        local_engine=engine,
    )
    svc.runners = runner_registry(svc)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        asyncio.get_running_loop().set_default_executor(deferring_executor())
        await _prune_deleted(svc)
        await svc.events.watch_other_processes()
        stop_answers = await listen_for_answers(svc.store, svc.runners) \
            if svc.shared_approvals else None
        await svc.callbacks.share()
        sweeper = asyncio.get_running_loop().create_task(_evict_idle(svc), name="idle-sweeper")
        if engine.default_model is not None:
            await _start_default_model(engine, engine.default_model)
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            if stop_answers is not None:
                await asyncio.to_thread(stop_answers)
            await svc.runners.close()
            await engine.close()
            await svc.session.tools.aclose()
            await svc.callbacks.close()
            await asyncio.to_thread(svc.events.close)
            await svc.connection_pool.aclose()
            svc.turn_calls.close()

    app = FastAPI(
        title="Desktop Agent",
        summary="Drive Desktop Agent conversations over HTTP: the same agent as the window.",
        version=_version(),
        lifespan=lifespan,
        # The spec is served below behind the key; no unauthenticated docs pages.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        telemetry=TELEMETRY_OFF,
    )
    app.state.services = svc
    app.state.master_key = master_key
    install_error_handlers(app)
    # Inside the guard (added later, so outside): a refused request is not paced.
    app.add_middleware(PacedStarts, pacer=svc.pacer)
    # Host, key and body size are checked before any route reads the body.
    app.add_middleware(RequestGuard, master_key=master_key, allowed_hosts=allowed_hosts,
                       body_limit=body_limit, upload_limit=upload_limit)
    # Outermost of ours: an error nothing expected is a 500 on a connection kept alive.
    app.add_middleware(UnexpectedErrors)

    @app.get("/alive", response_model=Alive, tags=["health"])
    async def alive() -> Alive:
        """Liveness probe: the process answers (whatever the database does); needs no key."""
        return Alive(status="ok")

    @app.get("/ready", response_model=Ready, tags=["health"],
             responses={503: {"model": Ready, "description": "The database is unavailable."}})
    async def ready() -> JSONResponse:
        """Readiness probe: 200 when the database answers, 503 (``Retry-After``) when not.

        For a load balancer in front of several replicas: send requests only to
        replicas that are ready. Needs no key, like ``/alive``.
        """
        try:
            await asyncio.to_thread(svc.store.check_reachable)
        except DatabaseAccessError as exc:
            unavailable = isinstance(exc, DatabaseUnavailableError)
            return JSONResponse(
                Ready(status="unavailable", database="unavailable" if unavailable else "error",
                      error=DATABASE_UNAVAILABLE if unavailable else
                      "The database answered with an error; see the server's log.").model_dump(),
                status_code=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
        return JSONResponse(Ready(status="ready", database="ok").model_dump())

    # A probe may ask with HEAD (some load balancers do), as the starting server answers it:
    # the same status and headers, no body (the server leaves it out).
    app.add_api_route("/alive", alive, methods=["HEAD"], include_in_schema=False)
    app.add_api_route("/ready", ready, methods=["HEAD"], include_in_schema=False)

    protected = [Depends(require_key)]
    for module in (conversations, turns, events, callbacks, files, commands, secrets, tools,
                   checkpoints, project, previews, context_window, mcp, mcp_servers,
                   slash_commands, local_models):
        app.include_router(module.router, dependencies=protected)

    @app.get("/openapi.json", include_in_schema=False, dependencies=protected)
    async def openapi_spec() -> JSONResponse:
        """The OpenAPI document (behind the key like everything but /alive)."""
        return JSONResponse(app.openapi())

    return app


async def _start_default_model(engine: LocalEngine, name: str) -> None:
    """Start ``serve --model``'s model before serving; a model that cannot start stops serve."""
    from desktop_agent.engine.errors import EngineError

    try:
        server = await engine.run(name)
    except EngineError as error:
        raise RuntimeError(f"--model {name}: {error}") from None
    log.info("serving %s on this computer (context %s tokens) for conversations without a "
             "base_url", server.name, server.context_length)


async def _prune_deleted(svc: AppServices) -> None:
    """Drop what conversations deleted while the server was down left: events, checkpoints."""
    stored = await asyncio.to_thread(svc.events.stored_conversations)
    for conversation_id in stored:
        record = await asyncio.to_thread(svc.store.get_conversation, conversation_id)
        if record is None:
            svc.events.forget(conversation_id)
    await asyncio.to_thread(prune_left_behind, svc.store)


async def _evict_idle(svc: AppServices) -> None:
    """Every so often, drop what idle conversations hold in memory (see ``idle_seconds``)."""
    period = min(max(svc.idle_seconds / 4, 0.05), 30.0)
    while True:
        await asyncio.sleep(period)
        try:
            runners = await svc.runners.evict_idle(svc.idle_seconds)
            tails = svc.events.evict_idle(svc.idle_seconds)
        except Exception:
            log.exception("dropping idle conversations failed")
            continue
        if runners or tails:
            log.debug("dropped %d idle runner(s) and %d event tail(s)", runners, tails)
            # Without this the allocator keeps the pages the dropped objects used,
            # and the RSS stays at the busiest hour's level.
            if runners:
                collect_cycles()
            await asyncio.to_thread(return_freed_memory)


def _version() -> str:
    try:
        from desktop_agent import __version__

        return str(__version__)
    except ImportError:
        return "0"
