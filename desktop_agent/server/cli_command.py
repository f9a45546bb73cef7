"""``desktop-agent serve``: run the REST API on uvicorn.

Examples::

    DESKTOP_AGENT_MASTER_KEY=$(openssl rand -hex 32) desktop-agent serve
    desktop-agent serve --no-auth                 # 127.0.0.1 only
    DESKTOP_AGENT_MASTER_KEY=... desktop-agent serve --host 0.0.0.0 --port 9000
    desktop-agent serve --no-auth --model qwen3-1.7b-q4_k_m.gguf   # a model on this computer
    DESKTOP_AGENT_DATABASE_URL=postgresql://agent:pw@db:5432/agent \
        DESKTOP_AGENT_SECRET_KEY=$(cat secret.key) desktop-agent serve --workdirs /mnt/agent

Data lives in the same folder as the window's (``DESKTOP_AGENT_DATA_DIR``
honoured), so conversations made over the API appear in the window. With
``--database`` (or ``DESKTOP_AGENT_DATABASE_URL``) conversations, messages,
settings, events and turn leases live in that PostgreSQL database instead, and
any number of replicas on it serve one set of conversations; secrets are kept
there too, encrypted with the key every replica is given
(``DESKTOP_AGENT_SECRET_KEY`` or ``--secret-key-file``), and a replica without
that key does not start (see :mod:`desktop_agent.appdata.secret_cipher`); and
every replica is given one shared folder for working folders (``--workdirs``),
without which it does not start either (see :mod:`.shared_workdirs`). Only the
standard library is imported at the top; uvicorn loads when the command runs,
and FastAPI and the routes while ``/alive`` already answers, the turn's modules
once the API does (:mod:`.starting_app`).

uvicorn runs on uvloop and parses HTTP with httptools (both dependencies;
uvloop not on Windows, where uvicorn falls back to asyncio's loop): with 50
conversations streaming they take about a fifth off the server's CPU per
event, the margin that keeps per-event latency low when many turns start at
once (``bench/server_load.py``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.appdata.secret_cipher import SecretCipher
    from desktop_agent.store import Store

EXIT_OK = 0
EXIT_ERROR = 1

DATABASE_URL_VARIABLE = "DESKTOP_AGENT_DATABASE_URL"
"""Where ``serve`` reads the PostgreSQL URL from when ``--database`` is not given."""

log = logging.getLogger("desktop_agent.server.cli")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``serve`` subcommand."""
    serve = subparsers.add_parser(
        "serve",
        help="run the agent as a REST API (headless)",
        description="Serve conversations over HTTP. Every route except GET /alive needs "
        "'Authorization: Bearer <key>' with the key from DESKTOP_AGENT_MASTER_KEY.",
    )
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--no-auth", action="store_true",
                       help="run without a master key (allowed on 127.0.0.1 only; then only "
                            "the host names localhost, 127.0.0.1 and ::1 are answered)")
    serve.add_argument("--allowed-host", action="append", default=None, metavar="NAME",
                       help="a Host header name the server answers to (repeatable; with a "
                            "key the default is any name, without one only loopback names)")
    serve.add_argument("--idle-seconds", type=float, default=300.0, metavar="SECONDS",
                       help="drop a conversation's in-memory state (runner, recent events) "
                            "after this long unused; it is rebuilt from disk (default 300)")
    serve.add_argument("--database", default=None, metavar="URL",
                       help="keep conversations in this PostgreSQL database "
                            "(postgresql://user:password@host:5432/name) so that several "
                            "replicas serve them; default: DESKTOP_AGENT_DATABASE_URL, else "
                            "the SQLite file in the data folder. Prefer the variable: a "
                            "password on the command line is visible to other users")
    serve.add_argument("--secret-key-file", type=Path, default=None, metavar="PATH",
                       help="with --database: the file holding the key that encrypts secrets "
                            "in the database (every replica needs the same one); default: "
                            "DESKTOP_AGENT_SECRET_KEY. Make one with: "
                            "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'")
    serve.add_argument("--workdirs", default=None, metavar="PATH",
                       help="the folder under which conversations' working folders are made "
                            "(default: DESKTOP_AGENT_WORKDIRS, else the data folder's workdirs). "
                            "Required with --database: every replica must be given the same "
                            "shared folder (NFS, a shared volume) at the same path")
    serve.add_argument("--model", default=None, metavar="PATH_OR_NAME",
                       help="run this model on this computer (llama.cpp, started with the "
                            "server) for conversations created without a base_url: a .gguf "
                            "file's path, a name `desktop-agent models` lists, an Ollama "
                            "name:tag or a catalog id")
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug"],
                       help="uvicorn log level (default info)")
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Check the key and host, open the store, and serve until stopped."""
    from desktop_agent.appdata.allocator import hold_mmap_threshold, share_one_arena

    # As the window does, before any thread starts: big blocks freed go back to the
    # system, and the store's worker threads allocate from the main arena instead of
    # one each, where what a thread freed stayed for that thread
    # (bench/soak_serve.py, docs/performance.md).
    hold_mmap_threshold()
    share_one_arena()
    from .shared_workdirs import WorkdirsRefused, check_shared
    from .startup_checks import StartupRefused, check_startup, master_key_from_env

    key = master_key_from_env()
    try:
        check_startup(key, args.host, args.no_auth)
    except StartupRefused as exc:
        print(f"desktop-agent serve: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_ERROR
    if not args.idle_seconds > 0:
        print("desktop-agent serve: --idle-seconds must be positive", file=sys.stderr)  # noqa: T201
        return EXIT_ERROR
    if not 0 < args.port < 65536:
        print("desktop-agent serve: --port must be between 1 and 65535", file=sys.stderr)  # noqa: T201
        return EXIT_ERROR
    database = args.database or os.environ.get(DATABASE_URL_VARIABLE, "").strip() or None
    if database is not None and not database.lower().startswith(("postgresql://", "postgres://")):
        print("desktop-agent serve: --database takes a PostgreSQL URL such as "  # noqa: T201
              "postgresql://user:password@host:5432/name (without it, conversations "
              "stay in the data folder's SQLite file)", file=sys.stderr)
        return EXIT_ERROR
    if database is None and args.secret_key_file is not None:
        print("desktop-agent serve: --secret-key-file is for --database (secrets encrypted "  # noqa: T201
              "in a shared PostgreSQL database); without it secrets stay in this machine's "
              "keyring", file=sys.stderr)
        return EXIT_ERROR
    try:
        workdirs = _workdirs_root(args.workdirs, database is not None)
    except WorkdirsRefused as exc:
        print(f"desktop-agent serve: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_ERROR
    cipher = None
    if database is not None:
        from desktop_agent.appdata.secret_cipher import (
            SECRET_KEY_VARIABLE,
            SecretCipher,
            SecretKeyError,
            load_secret_key,
        )

        try:
            cipher = SecretCipher(load_secret_key(args.secret_key_file))
        except SecretKeyError as exc:
            print(f"desktop-agent serve: {exc}", file=sys.stderr)  # noqa: T201
            return EXIT_ERROR
        # Read once; commands never inherit the app's environment, MCP servers might.
        os.environ.pop(SECRET_KEY_VARIABLE, None)

    import uvicorn

    from desktop_agent.store import Store, StoreError

    from .starting_app import StartingApp

    try:
        store = Store.open(database)
    except StoreError as exc:
        print(f"desktop-agent serve: cannot open the conversation store: {exc}",  # noqa: T201
              file=sys.stderr)
        return EXIT_ERROR
    try:
        if cipher is not None and not _use_database_vault(store, cipher):
            return EXIT_ERROR
        if database is not None and workdirs is not None:
            try:
                check_shared(store, workdirs)
            except (WorkdirsRefused, StoreError) as exc:
                print(f"desktop-agent serve: {exc}", file=sys.stderr)  # noqa: T201
                return EXIT_ERROR
        master_key = None if args.no_auth else key

        def build() -> Any:
            """The real app (in a worker thread while /alive already answers)."""
            from .app import create_app

            return create_app(store, master_key=master_key, allowed_hosts=args.allowed_host,
                              idle_seconds=args.idle_seconds, secret_cipher=cipher,
                              workdirs_root=workdirs,
                              # made here, not before the port opens: its modules (the
                              # model catalog, the library, the runner) are no part of /alive
                              local_engine=_local_engine(store, args.model))

        app = StartingApp(build, master_key=master_key, allowed_hosts=args.allowed_host,
                          on_failure=lambda: setattr(server, "should_exit", True),
                          warm_up=_warm_up)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level,
                                timeout_graceful_shutdown=5, server_header=False,
                                loop="auto", http="auto")  # uvloop, httptools: see above
        server = uvicorn.Server(config)
        if args.no_auth:
            log.warning("serving WITHOUT a master key on %s (--no-auth)", args.host)
        server.run()
        if app.failed:
            print(f"desktop-agent serve: {app.failed}", file=sys.stderr)  # noqa: T201
        return EXIT_OK if server.started and not app.failed else EXIT_ERROR
    finally:
        store.close()


def _local_engine(store: Store, model: str | None) -> Any:
    """The app's engine over the data folder; ``--model`` is started with the app."""
    from desktop_agent.appdata.paths import data_dir
    from desktop_agent.session import LocalEngine

    engine = LocalEngine(data_dir(), store=store)
    engine.default_model = model
    return engine


def _warm_up() -> None:
    """Load the turn's modules ahead of the first turn, then freeze what start-up made.

    Run in the build's worker thread once the API answers; requests that may
    start a turn wait for it (:class:`.starting_app.StartingApp`): a lazy first
    import would stall every open stream.
    """
    import gc

    from desktop_agent.session import warm_up_turns

    warm_up_turns()
    # A full collection scanned every object alive since start-up (50 ms measured
    # mid-stream under load, freeing nothing); frozen objects are never scanned.
    # Frozen without collecting first: the API already serves on the loop's thread,
    # and a collection here could run asyncio finalizers off it (start-up leaves a
    # few dozen objects of garbage; they stay).
    gc.freeze()


def _workdirs_root(option: str | None, shared: bool) -> Path | None:
    """``--workdirs`` (or its variable) checked and made; None: the data folder's.

    Raises:
        WorkdirsRefused: With a database and no folder given (see
            :mod:`.shared_workdirs` for why that is refused), or a folder that
            cannot be used.
    """
    from .shared_workdirs import WORKDIRS_VARIABLE, WorkdirsRefused, chosen_workdirs

    text = option or os.environ.get(WORKDIRS_VARIABLE, "").strip() or None
    if text is None:
        if shared:
            raise WorkdirsRefused(
                "with --database, give --workdirs PATH (or DESKTOP_AGENT_WORKDIRS): the folder "
                "under which conversations' working folders are made. Tools work on files, and "
                "a conversation created through one replica runs on any other, so every "
                "replica must be given the same shared folder (an NFS export or a shared "
                "volume) at the same path. Running one replica only? Give it any folder of "
                "its own")
        return None
    return chosen_workdirs(text)


def _use_database_vault(store: Store, cipher: SecretCipher) -> bool:
    """Keep secrets sealed in ``store`` from now on; False (having said why) on a wrong key."""
    from desktop_agent.appdata import secrets
    from desktop_agent.appdata.encrypted_vault import EncryptedVault
    from desktop_agent.appdata.secret_cipher import WrongSecretKeyError
    from desktop_agent.store import StoreError

    vault = EncryptedVault(store, cipher, store.location)
    try:
        vault.check_key()
    except (WrongSecretKeyError, StoreError) as exc:
        print(f"desktop-agent serve: {exc}", file=sys.stderr)  # noqa: T201
        return False
    secrets.use_vault(vault)
    return True
