"""The one entry point: ``desktop-agent`` opens the window; subcommands do the rest.

``desktop-agent``            opens the main window (``desktop_agent.gui.app.run_app``).
``desktop-agent --version``  prints the version.
``desktop-agent --smoke-test`` opens the real window offscreen, runs one scripted turn
                             with a tool approval, and exits 0 only if all of it worked.
``desktop-agent serve|export|import|try-model|models ...`` come from the modules in
                             ``_COMMAND_MODULES``, each of which defines ``register(subparsers)``.

Start-up speed matters here more than anywhere: this module imports only the standard
library at the top, so ``--version`` and ``--help`` never load Qt, the openai SDK or
FastAPI, and the window can paint before the heavy modules a conversation needs.

Two environment variables serve ``bench/startup.py`` and the start-up tests:
``DESKTOP_AGENT_REPORT_PAINT=1`` prints ``first-paint <epoch seconds> <CPU seconds>``
(and the heavy modules already imported at that moment) when the main window first
paints, and ``ready <epoch seconds> <CPU seconds>`` once its conversation is shown and
takes typing (the window reopens its conversations just after its first paint);
``DESKTOP_AGENT_EXIT_AFTER_PAINT=1`` does the same and then exits at once.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

logger = logging.getLogger("desktop_agent.cli")

PROG = "desktop-agent"
DISTRIBUTION = "desktop-agent"
VERSION_FILE = "VERSION"

# Each module registers its own subcommands; the names listed here are only used to
# explain what is missing when a module is not in this build.
_COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "desktop_agent.server.cli_command": ("serve",),
    "desktop_agent.cli.transfer": ("export", "import", "copy-store"),
    "desktop_agent.cli.try_model": ("try-model",),
    "desktop_agent.cli.models_command": ("models",),
    "desktop_agent.cli.engine_command": ("_engine",),  # hidden: the engine's child process
}

# Modules the window must not need before its first paint (see bench/startup.py).
# multiprocessing: the app starts no worker processes; the single file once imported it
# at every start through PyInstaller's runtime hook (build.spec drops that hook).
HEAVY_MODULES = ("openai", "aiohttp", "fastapi", "uvicorn", "mcp", "tiktoken", "starlette",
                 "pydantic", "jsonschema", "multiprocessing")

EXIT_AFTER_PAINT_ENV = "DESKTOP_AGENT_EXIT_AFTER_PAINT"
REPORT_PAINT_ENV = "DESKTOP_AGENT_REPORT_PAINT"

Handler = Callable[[argparse.Namespace], int | None]


def app_version() -> str:
    """Return the app's version without importing anything heavy.

    The frozen binary carries a ``VERSION`` file written by ``build.spec`` from
    ``pyproject.toml``; an installed package has its metadata; a bare source checkout
    falls back to reading ``pyproject.toml`` itself.
    """
    if getattr(sys, "frozen", False):
        bundled = Path(getattr(sys, "_MEIPASS", "")) / "desktop_agent" / VERSION_FILE
        if bundled.is_file():
            return bundled.read_text(encoding="utf-8").strip()
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        with pyproject.open("rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])
    return "unknown"


class _VersionAction(argparse.Action):
    """``--version`` that looks the version up only when asked (keeps ``--help`` cheap)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(f"{PROG} {app_version()}")
        parser.exit()


# The extra that brings each top-level module the window and the server need
# (pyproject.toml): `pip install desktop-agent` alone is the SDK.
_EXTRA_OF_MODULE = {
    "PySide6": "window", "shiboken6": "window", "qasync": "window",
    "markdown_it": "window", "pygments": "window",
    "fastapi": "server", "starlette": "server", "uvicorn": "server", "httpx": "server",
    "multipart": "server", "python_multipart": "server",
    "keyring": "app", "platformdirs": "app", "mcp": "mcp", "mcp_types": "mcp",
}


def missing_extra_message(exc: ModuleNotFoundError, what: str) -> str | None:
    """A sentence naming the install that brings ``exc``'s module, or None if none does."""
    top = (exc.name or "").split(".")[0]
    extra = _EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    return (f"{what} needs {top}, which this install lacks (it has the SDK only). "
            f"Install the whole app with: pip install 'desktop-agent[app]' "
            f"(or scripts/install.sh from a clone).")


def _missing_command(module_name: str, reason: str) -> Handler:
    def handler(_args: argparse.Namespace) -> int:
        print(
            f"{PROG}: this command is not available in this build ({module_name}: {reason}).",
            file=sys.stderr,
        )
        return 2

    return handler


def _register_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Let each command module add its subcommands; a missing module degrades to a message."""
    for module_name, command_names in _COMMAND_MODULES.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                raise  # The module exists but one of its own imports is broken.
            reason = "not installed"
        else:
            module.register(subparsers)
            continue
        for name in command_names:
            if name in subparsers.choices:
                continue
            stub = subparsers.add_parser(
                name, help=f"(not available in this build: {module_name} is {reason})"
            )
            stub.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            stub.set_defaults(handler=_missing_command(module_name, reason))


def build_parser(*, commands: bool = True) -> argparse.ArgumentParser:
    """Build the argument parser, with every subcommand the installed modules provide.

    Args:
        commands: Register the subcommands (False: the window's arguments only, for a
            command line that cannot name one; see :func:`_may_name_a_command`).
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Run local language models as tool-calling agents, with you approving what runs. "
            "Without a command, opens the window."
        ),
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    parser.add_argument(
        "--smoke-test",
        action="store_true",
        help=(
            "open the main window offscreen, run one scripted turn with a tool approval "
            "against a local test server, and exit 0 only if it all worked"
        ),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    if commands:
        _register_commands(subparsers)
    return parser


def _may_name_a_command(arguments: Sequence[str]) -> bool:
    """Whether the command modules are needed to read ``arguments``.

    Only a word not starting with ``-`` can name a subcommand, and help lists them
    all. Without either the window opens, and the modules of ``serve``,
    ``import``/``export`` and ``try-model`` (with the store's import and export
    they load) are not imported for it: an idle window held them (~0.2 MB).
    """
    return any(not a.startswith("-") or a.startswith(("-h", "--h")) for a in arguments)


def _command_handler(args: argparse.Namespace) -> Handler | None:
    """Return the function a subcommand registered (``handler`` or ``func`` default)."""
    for attribute in ("handler", "func"):
        handler = getattr(args, attribute, None)
        if callable(handler):
            return cast(Handler, handler)
    return None


def _use_offscreen_without_display() -> None:
    """Let the smoke test run on a machine with no display (CI, SSH)."""
    has_display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if sys.platform.startswith("linux") and not has_display:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _run_smoke_test() -> int:
    _use_offscreen_without_display()
    try:
        from desktop_agent.gui.smoke_test import run_smoke_test

        result = run_smoke_test()
    except BaseException as exc:  # noqa: BLE001 - The smoke test must report everything, even SystemExit.
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            return 0
        traceback.print_exc()
        print(f"{PROG}: smoke test FAILED: {exc!r}", file=sys.stderr)
        return 1
    if result != 0:
        print(f"{PROG}: smoke test FAILED (exit status {result}).", file=sys.stderr)
        return 1 if not isinstance(result, int) else result
    print(f"{PROG}: smoke test passed.")
    return 0


def _run_window(qt_args: list[str]) -> int:
    from .display_check import window_problem

    problem = window_problem(qt_args)
    if problem is not None:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 2
    try:
        from desktop_agent.gui.app import prepare_imports, run_app

        prepare_imports()  # before PySide6 and the openai SDK are imported: see there
        probe = None
        if os.environ.get(EXIT_AFTER_PAINT_ENV) or os.environ.get(REPORT_PAINT_ENV):
            probe = _first_paint_probe(exit_after=bool(os.environ.get(EXIT_AFTER_PAINT_ENV)))
        return int(run_app([sys.argv[0], *qt_args], on_window=probe) or 0)
    except ModuleNotFoundError as exc:
        if exc.name and "desktop_agent.gui.app".startswith(exc.name):
            print(f"{PROG}: the window is not available in this build ({exc}).", file=sys.stderr)
            return 2
        message = missing_extra_message(exc, "The window")
        if message is None:
            raise
        print(f"{PROG}: {message}", file=sys.stderr)
        return 2


_paint_probe: object | None = None  # Kept alive for the life of the app.


def _cpu_seconds() -> float:
    """User and system CPU this process has used, across its ``exec`` (not its children)."""
    import time

    return time.process_time()


def _first_paint_probe(*, exit_after: bool) -> Callable[[Any], None]:
    """Print when the main window first paints and is ready (then optionally exit).

    ``run_app`` hands the probe its main window before showing it. The probe filters
    that window's own events only: an application-wide filter written in Python would
    cost the start-up it measures (see ``gui/app.py``'s ``warm_up_on_first_input``).
    It is installed last, so it sees the first paint before the window's own
    ``first_painted`` handlers are queued, and removes itself after that paint.
    "Ready" is when the window's conversation is shown (``conversations_shown``),
    painted at once so the figure includes drawing it. Each line carries the process's
    CPU time too (user and system, the single file's stub included: it replaced itself
    with the app), which a shared machine moves less than the seconds.
    """
    import time

    from PySide6.QtCore import QEvent, QObject, QTimer

    def watch(window: Any) -> None:
        global _paint_probe

        class FirstPaintProbe(QObject):
            def __init__(self) -> None:
                super().__init__()
                self._seen = False

            def eventFilter(self, watched: QObject, event: QEvent) -> bool:
                if not self._seen and event.type() == QEvent.Type.Paint:
                    self._seen = True
                    # Report once this paint pass is done and the frame is on screen.
                    QTimer.singleShot(0, self._report)
                return False

            def _report(self) -> None:
                window.removeEventFilter(self)
                loaded = sorted(name for name in HEAVY_MODULES if name in sys.modules)
                print(f"first-paint {time.time():.6f} {_cpu_seconds():.3f}", flush=True)
                print(f"heavy-modules-at-paint {','.join(loaded) or '-'}", flush=True)
                if window.conversations_ready:
                    self._ready()
                else:
                    window.conversations_shown.connect(self._ready)

            def _ready(self) -> None:
                window.repaint()  # the conversation drawn, as the next frame would
                print(f"ready {time.time():.6f} {_cpu_seconds():.3f}", flush=True)
                if exit_after:
                    sys.stderr.flush()
                    os._exit(0)

        _paint_probe = FirstPaintProbe()
        window.installEventFilter(_paint_probe)

    return watch


def _report_crash(command: str) -> int:
    """Tell the person what failed in words; keep the traceback in a file for a bug report."""
    details = traceback.format_exc()
    log_file = _write_crash_log(details)
    where = f" Details were saved to {log_file}." if log_file else ""
    print(f"{PROG}: {command} stopped because of an unexpected error.{where}", file=sys.stderr)
    if os.environ.get("DESKTOP_AGENT_DEBUG"):
        print(details, file=sys.stderr)
    return 1


def _write_crash_log(details: str) -> Path | None:
    import tempfile
    import time

    try:
        try:
            from desktop_agent.appdata.paths import data_dir

            folder = data_dir()
        except ImportError:
            folder = Path(tempfile.gettempdir())
        log_file = folder / "crash.log"
        with log_file.open("a", encoding="utf-8") as handle:
            handle.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {PROG} {app_version()}\n")
            handle.write(details)
        return log_file
    except OSError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the process exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(commands=_may_name_a_command(arguments))
    args, extra = parser.parse_known_args(arguments)
    handler = _command_handler(args)

    if args.smoke_test:
        if args.command or extra:
            parser.error("--smoke-test takes no command or other arguments")
        return _run_smoke_test()
    if args.command is None:
        # Arguments we do not know (e.g. Qt's -platform, -style) belong to Qt.
        try:
            return _run_window(extra)
        except KeyboardInterrupt:
            return 130
        except Exception:  # noqa: BLE001 - any crash is logged and reported
            return _report_crash("the window")
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if handler is None:
        parser.error(f"the command {args.command!r} did not register a handler")
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as exc:
        message = missing_extra_message(exc, f"'{PROG} {args.command}'")
        if message is None:
            return _report_crash(args.command)
        print(f"{PROG}: {message}", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - any crash is logged and reported
        return _report_crash(args.command)


if __name__ == "__main__":
    sys.exit(main())
