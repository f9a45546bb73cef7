"""Start the window: QApplication, the qasync loop, the error sink, the store.

The window is shown (and painted) before anything heavy is loaded; the HTTP
stack and the syntax highlighter are warmed up in a worker thread when the
person first types or clicks, so the first message and the first diff do not
wait for them and an idle window stays small. Full garbage collections run when
the window is idle (``idle_collector.py``), not in the middle of a frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication, QMainWindow

    from desktop_agent.gui.idle_collector import IdleCollector

log = logging.getLogger("desktop_agent.gui.app")

APP_NAME = "Desktop Agent"

#: Qt's pixmap cache, in KB (Qt's default is 10,240). Why smaller: the Fusion style
#: keeps there a pixmap of each control it drew at each size (a button panel of
#: every width it was given), and over a day of turns the transcript's controls
#: take sizes seen once, so the cache filled towards its cap: the window's soak
#: grew by ~2.4 MB of C heap over 1,000 turns for it (``bench/soak_window.py``;
#: with 1 MB it still grew within the run). A quarter of a megabyte keeps the
#: few controls drawn again and again; icons keep their own table.
STYLE_PIXMAP_CACHE_KB = 256


def create_application(argv: Sequence[str]) -> QApplication:
    """The QApplication (created once), themed to follow the system."""
    from PySide6.QtGui import QPixmapCache
    from PySide6.QtWidgets import QApplication

    from desktop_agent.gui.none_refcount_guard import guard_none_refcount
    from desktop_agent.gui.theme import follow_system_theme

    guard_none_refcount()  # before any widget: PySide6 6.12.0 leaks references to None
    QPixmapCache.setCacheLimit(STYLE_PIXMAP_CACHE_KB)
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(list(argv))
    app.setApplicationName(APP_NAME)
    app.setOrganizationName("desktop-agent")
    app.setApplicationDisplayName(APP_NAME)
    app.setWindowIcon(app_icon())
    follow_system_theme(app)
    return app


#: Sizes of the window icon, in pixels: what title bars, task bars and window switchers show.
WINDOW_ICON_SIZES = (16, 24, 32, 48, 64, 128)


def app_icon() -> Any:
    """The window's icon from ``resources/icons``, up to 128 px (empty if none).

    Why not 256 and 512 px too: a window icon is held decoded, in every size it
    has, for as long as the app runs (on X11 it is also handed to the window
    manager). With them an idle window held 2.95 MB for its icon, without them
    0.75 MB (RSS under Xvfb). The big sizes are for launchers, which take them from
    the desktop entry (``packaging/linux/install_desktop_entry.sh`` installs every
    size) or, on macOS, from the app bundle.
    """
    from PySide6.QtGui import QIcon

    from desktop_agent.appdata.resource_files import resource_path

    icon = QIcon()
    for size in WINDOW_ICON_SIZES:
        path = resource_path(f"icons/desktop-agent-{size}.png")
        if path.exists():
            icon.addFile(str(path))
    return icon


@contextlib.contextmanager
def finalize_async_generators_on(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Let the loop close abandoned async generators, as ``asyncio.run`` does.

    qasync does not install asyncio's async-generator hooks, so a stream
    generator dropped half-read (an HTTP response body, say) would be finalised
    by the garbage collector outside any task, with errors on stderr. With the
    hooks, the loop schedules ``aclose()`` on itself; at the end the remaining
    ones are shut down while the loop still runs.
    """
    base = asyncio.BaseEventLoop
    previous = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(
        firstiter=lambda agen: base._asyncgen_firstiter_hook(loop, agen),  # type: ignore[attr-defined]
        finalizer=lambda agen: base._asyncgen_finalizer_hook(loop, agen))  # type: ignore[attr-defined]
    try:
        yield
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        sys.set_asyncgen_hooks(*previous)


#: If the window has not painted by then (started minimised, say), collect anyway.
STARTUP_GC_FALLBACK_MS = 15_000


def pause_collector_until_first_paint() -> None:
    """Run no garbage collection until :func:`freeze_startup_objects`.

    Start-up imports and builds ~90,000 objects and leaves ~30,000 of them as cyclic
    garbage (class and enum creation); the ~120 young collections that Python runs
    meanwhile cost about 30 ms of CPU before the first paint (``gc.callbacks``, from
    source). One collection at the first paint frees the same garbage, after the
    window is on screen.
    """
    gc.disable()


def freeze_startup_objects() -> None:
    """Collect once, move everything alive after start-up out of the collector's reach.

    A full garbage collection over the Qt wrappers and modules loaded at
    start-up stalls the loop for tens of milliseconds mid-stream; frozen
    objects are never scanned again. Collection, paused until now
    (:func:`pause_collector_until_first_paint`), resumes.
    """
    gc.collect()
    gc.freeze()
    gc.enable()


def warm_up_on_first_input(app: QApplication, warm_up: Callable[[], object]) -> None:
    """Run ``warm_up`` once, when the person first presses a key or clicks.

    Importing the HTTP stack ahead of the first message makes that message
    start at once, but costs memory: doing it when the person starts to type
    keeps an idle window small and still finishes long before Enter.
    The filter is parented to the app, which keeps it alive.

    :func:`run_app` installs it once the window has painted, not before: an
    application-wide filter written in Python sees Qt's private objects (the
    animation timer, the widgets' native windows), and wrapping the first of them
    makes shiboken create every lazily loaded class of QtCore, QtGui and
    QtWidgets with their enums (~250 classes, ~40 ms of CPU).
    """
    from PySide6.QtCore import QEvent, QObject

    class FirstInput(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() in (QEvent.Type.KeyPress, QEvent.Type.MouseButtonPress):
                app.removeEventFilter(self)
                warm_up()
            return False

    app.installEventFilter(FirstInput(app))


def warm_up() -> None:
    """Load what the first diff and the first turn need, off the UI thread.

    The highlighter first: it takes a fraction of a second, the turn stack
    (``session.warm_up``) a second or more, and a diff can be opened before any
    turn has run (a restored conversation's "what changed").
    """
    import importlib

    from desktop_agent.gui.transcript.code_highlight import warm_up_highlighting
    from desktop_agent.gui.transcript.theme import DARK_CODE_STYLE, LIGHT_CODE_STYLE
    from desktop_agent.session import warm_up_turns

    warm_up_highlighting((LIGHT_CODE_STYLE, DARK_CODE_STYLE))
    warm_up_turns()
    importlib.import_module("markdown_it")  # the first reply's rendering (~50 ms)


def start_warm_up(loop: asyncio.AbstractEventLoop, collector: IdleCollector) -> None:
    """Run :func:`warm_up` on a worker thread; then freeze what it loaded, when idle.

    The modules it imports live as long as the process: frozen, they are not
    walked by every later full collection (about 40 ms of CPU each).
    """
    future = loop.run_in_executor(None, warm_up)
    future.add_done_callback(lambda _done: collector.freeze_at_next_idle())


def skip_httpx_command_line() -> None:
    """Keep ``import httpx`` from loading httpx's command-line client.

    httpx's package runs ``from desktop_agent.gui._main import main`` and falls back to a stub
    when that import fails; ``_main`` pulls in click, rich and pygments'
    terminal formatters, which the window never uses and which cost every idle
    window about 6 MB of resident memory (``bench/startup.py``). Marking the
    module as absent before httpx is first imported takes httpx's own fallback.
    """
    if "httpx" not in sys.modules:
        # None in sys.modules is Python's documented "this import fails" marker
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def list_startup_files_when_shown(window: Any, target: str) -> None:
    """Write what the start read to ``target`` once the conversations are shown.

    The single file's stub asks for it once per build (``gui/startup_files.py``) and
    reads those files ahead on later launches, while the app starts. It is written
    when the conversation is shown, not at the first paint, so the files the tabs
    need are in it too; at once, in the signal's slot, because a probe exits there.
    """
    from desktop_agent.gui.startup_files import write_startup_files

    def write() -> None:
        window.conversations_shown.disconnect(write)
        write_startup_files(target)

    window.conversations_shown.connect(write)


def prepare_imports() -> None:
    """Make what the window imports cost less resident memory (before it imports anything).

    Three measures, each explained and measured in its module: glibc's mmap
    threshold held at its start value and one arena for all threads
    (``appdata/allocator.py``: the allocator's free memory grew with every turn,
    and a worker thread's arena kept what the warm-up freed), and ``linecache`` keeps
    the source lines PySide6 reads of every imported module for a few files only
    (``source_line_cache.py``: up to 25 MB in a window run from source), and the
    openai SDK is imported without the ~500 modules of API types it re-exports and
    the core does not use (``core/wire/sdk_type_packages.py``: ~12 MB).
    """
    from desktop_agent.appdata.allocator import hold_mmap_threshold, share_one_arena
    from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits
    from desktop_agent.gui.source_line_cache import bound_source_line_cache

    hold_mmap_threshold()  # first: big blocks freed later go back to the system
    share_one_arena()  # before any thread starts: a thread keeps the arena it got
    bound_source_line_cache()  # before PySide6 starts reading every import's source
    defer_type_package_inits()  # before discovery's worker thread imports openai


def run_app(argv: Sequence[str],
            on_window: Callable[[QMainWindow], object] | None = None) -> int:
    """Open the main window and run until it closes; returns the exit status.

    ``on_window`` is called with the main window before it is shown (the start-up
    bench's first-paint probe watches it).
    """
    prepare_imports()
    pause_collector_until_first_paint()
    skip_httpx_command_line()
    from desktop_agent.gui.startup_files import take_target

    startup_files = take_target()  # before anything starts a child process
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QMessageBox

    app = create_application(argv)
    from desktop_agent.gui.error_sink import ErrorSink
    from desktop_agent.gui.event_loop import GuiEventLoop
    from desktop_agent.gui.idle_collector import IdleCollector
    from desktop_agent.gui.window.main_window import MainWindow

    loop = GuiEventLoop(app)
    asyncio.set_event_loop(loop)
    sink = ErrorSink()
    sink.install(loop)
    app.setQuitOnLastWindowClosed(False)

    from desktop_agent.appdata.paths import data_dir
    from desktop_agent.gui.single_instance import (
        SingleInstance,
        bring_forward,
        offer_running_instance,
    )
    from desktop_agent.store import DatabaseUnusableError, Store

    instance = SingleInstance(data_dir())
    if not instance.claim():
        return offer_running_instance(instance, data_dir())

    try:
        store = Store.open()
    except DatabaseUnusableError as exc:
        QMessageBox.critical(None, APP_NAME, f"The conversation database cannot be opened: "
                             f"{exc}\n\nNothing was changed.")
        return 1

    # The menus, toolbar and Conversations list paint first; the conversations (the
    # transcript and the session modules, a third of the CPU to the paint) right after.
    window = MainWindow(store, tabs_after_paint=True)
    instance.activation_requested.connect(lambda: bring_forward(window))
    sink.reported.connect(window.show_error_notice)
    collector = IdleCollector(app)
    window.first_painted.connect(
        lambda: warm_up_on_first_input(app, lambda: start_warm_up(loop, collector)))
    window.first_painted.connect(freeze_startup_objects)
    if startup_files is not None:  # the single file's stub reads it ahead next time
        list_startup_files_when_shown(window, startup_files)
    QTimer.singleShot(STARTUP_GC_FALLBACK_MS, gc.enable)
    if on_window is not None:
        on_window(window)
    window.show()

    async def until_closed() -> None:
        closed = asyncio.Event()
        window.closed.connect(closed.set)
        await closed.wait()

    try:
        with loop, finalize_async_generators_on(loop):
            loop.run_until_complete(until_closed())
    finally:
        instance.release()
        sink.uninstall()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(run_app(sys.argv))
