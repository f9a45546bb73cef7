"""What an idle window loads and holds: no httpx command-line client (≈6 MB), a small icon,
nothing of what it does not show (checkpoints, diffs, dialogs, import and export)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_httpx_works_without_loading_its_command_line_client() -> None:
    code = textwrap.dedent("""
        import sys
        from desktop_agent.gui.app import skip_httpx_command_line
        skip_httpx_command_line()
        import httpx
        client = httpx.Client()  # the library itself is whole
        client.close()
        print(sorted(m for m in ("click", "rich", "httpx._main") if sys.modules.get(m)))
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_the_window_icon_has_the_small_sizes_only(qapp: object) -> None:
    """Each size of a window icon is held decoded: 256 and 512 px cost an idle window 2.2 MB."""
    from desktop_agent.gui.app import app_icon

    sizes = sorted(size.width() for size in app_icon().availableSizes())
    assert sizes[0] == 16
    assert max(sizes) == 128


#: Runs the real window (``desktop_agent.cli.main``) and, once it is shown and its
#: event loop has had nothing to do for half a second (the server search, the
#: restored tabs' context estimates and files check all done), prints the modules it
#: holds and the model its current conversation was given.
START_WINDOW_POLLING = r"""
timer = QTimer()
timer.timeout.connect(poll)
timer.start(100)
from desktop_agent.cli.main import main
main([])
"""
"""The end of each probe below: ``poll`` every 100 ms while the app's own main runs."""

IDLE_WINDOW_MODULES = r"""
import asyncio, json, os, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMainWindow

app = QApplication([sys.argv[0]])
quiet = 0

def busy() -> bool:
    try:
        tasks = asyncio.all_tasks(asyncio.get_event_loop())
    except RuntimeError:  # the window's loop is not set yet
        return True
    return any("until_closed" not in t.get_coro().__qualname__ for t in tasks)

def poll() -> None:
    global quiet
    shown = any(isinstance(w, QMainWindow) and w.isVisible() for w in app.topLevelWidgets())
    quiet = quiet + 1 if shown and not busy() else 0
    if quiet >= 5:
        window = next(w for w in app.topLevelWidgets() if isinstance(w, QMainWindow))
        print(json.dumps({"modules": sorted(sys.modules),
                          "model": window.current_controller().settings.get("model")}),
              flush=True)
        os._exit(0)

""" + START_WINDOW_POLLING

#: What an idle window with restored tabs must not hold: each is loaded when first
#: needed (a turn, an undo, a diff, ``@`` in the composer, a dialog opened).
NOT_AT_IDLE = (
    "desktop_agent.session.files.file_checkpoints",
    "desktop_agent.workspace.checkpoints",
    "desktop_agent.workspace.folder_scan",
    "desktop_agent.workspace.object_store",
    "desktop_agent.workspace.diffs",
    "desktop_agent.workspace.file_index",
    # Widgets and dialogs an idle window does not show (~0.4 MB): diffs, live command
    # output, pictures, the message editor, the plan, settings, Preferences, Files changed.
    "desktop_agent.gui.transcript.diff_view",
    "desktop_agent.gui.transcript.diff_lines",
    "desktop_agent.gui.transcript.live_output_view",
    "desktop_agent.gui.transcript.message_editor",
    "desktop_agent.gui.transcript.picture_strip",
    "desktop_agent.gui.conversation.settings_dialog",
    "desktop_agent.gui.window.settings_opener",
    "desktop_agent.gui.conversation.files_changed_panel",
    "desktop_agent.gui.conversation.plan_panel",
    "desktop_agent.gui.window.preferences_dialog",
    "desktop_agent.gui.conversation.template_form",
    "desktop_agent.gui.servers.mcp_servers_panel",
    # Import, export, serve and try-model (~0.2 MB): the window opened without a command
    # registers no subcommand, and File → Import / Export is made when first used.
    "desktop_agent.cli.transfer",
    "desktop_agent.cli.try_model",
    "desktop_agent.server.cli_command",
    "desktop_agent.store.import_json",
    "desktop_agent.store.import_safety",
    "desktop_agent.store.export_json",
    "desktop_agent.store.markdown_export",
    "desktop_agent.store.store_copy",
    "desktop_agent.gui.window.window_transfer",
    "desktop_agent.gui.window.transfer_dialogs",
    # The PostgreSQL engine is serve's: the one binary leaves it out (build.spec), so a
    # window that imported it would not start.
    "desktop_agent.store.postgres",
    # The openai SDK stack (~17 MB): the search lists a local server's models without it
    # (core/servers/local_json.py); the first key pressed loads it for the first turn.
    "openai",
    "httpx2",
    "httpcore2",
    "anyio",
    "aiohttp",
    # pydantic and the settings schema (~10 MB): the server and model a search found are
    # saved through the schema's limits without it (session/settings/plain_settings.py).
    "pydantic",
    "desktop_agent.session.settings.conversation_settings",
)


def test_an_idle_window_with_restored_tabs_loads_nothing_it_does_not_show(
        tmp_path: Path) -> None:
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer

    store = Store.open(tmp_path / "conversations.sqlite3")
    ids = []
    for n in range(3):
        record = store.create_conversation(title=f"Conversation {n}")
        for i in range(4):
            store.add_message(record.id, {"role": "user", "content": f"Question {i}"})
            store.add_message(record.id, {"role": "assistant",
                                          "content": f"Answer {i}\n\n```python\nprint(1)\n```"})
        ids.append(record.id)
    store.set_setting("open_tabs", {"ids": ids, "current": ids[-1]})
    store.close()
    with ScriptedServer() as server:  # the server search finds one and asks it for models
        server.models = ["idle-model"]
        env = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(tmp_path),
               "QT_QPA_PLATFORM": "offscreen", "DESKTOP_AGENT_BASE_URL": server.base_url,
               "PYTHONPATH": str(REPO)}
        result = subprocess.run([sys.executable, "-c", IDLE_WINDOW_MODULES], cwd=REPO, env=env,
                                capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    idle = json.loads(result.stdout.strip().splitlines()[-1])
    loaded = set(idle["modules"])
    assert idle["model"] == "idle-model"  # the search found the server and listed its model
    assert "desktop_agent.gui.transcript.view" in loaded  # the test sees the shown tab
    assert "desktop_agent.session.conversation" in loaded
    assert sorted(loaded.intersection(NOT_AT_IDLE)) == []


#: The idle window of :data:`IDLE_WINDOW_MODULES` with a server answering; then the
#: person types (the warm-up starts on the first key) and, once the warm-up has
#: loaded what the first turn needs, presses Enter. Prints the modules the send itself
#: imported (on the event loop, while the person waits) and the reply shown.
FIRST_SEND_AFTER_TYPING = r"""
import asyncio, json, os, sys
from PySide6.QtCore import QTimer, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMainWindow

import desktop_agent.gui.app as app_module

app = QApplication([sys.argv[0]])
state = {"phase": "idle", "quiet": 0}
warm_up = app_module.warm_up

def recorded_warm_up() -> None:
    warm_up()
    state["warm"] = True

app_module.warm_up = recorded_warm_up  # what the first key press starts

def busy() -> bool:
    try:
        tasks = asyncio.all_tasks(asyncio.get_event_loop())
    except RuntimeError:
        return True
    return any("until_closed" not in t.get_coro().__qualname__ for t in tasks)

def poll() -> None:
    window = next((w for w in app.topLevelWidgets()
                   if isinstance(w, QMainWindow) and w.isVisible()), None)
    state["quiet"] = state["quiet"] + 1 if window is not None and not busy() else 0
    if state["phase"] == "idle" and state["quiet"] >= 5:
        state["idle"] = sorted(m for m in ("openai", "markdown_it") if m in sys.modules)
        window.current_tab().composer.setFocus()
        QTest.keyClicks(window.current_tab().composer, "Hello there")
        state["phase"] = "typing"
    elif state["phase"] == "typing" and state.get("warm") and state["quiet"] >= 5:
        state["before"] = set(sys.modules)  # the warm-up is done
        QTest.keyClick(window.current_tab().composer, Qt.Key.Key_Return)
        state["phase"] = "sent"
        state["quiet"] = 0
    elif state["phase"] == "sent" and state["quiet"] >= 5:
        controller = window.current_controller()
        replies = [m["message"]["content"] for m in controller.stored_messages()
                   if m["role"] == "assistant"]
        print(json.dumps({"idle": state["idle"], "replies": replies,
                          "send_imported": sorted(set(sys.modules) - state["before"])}),
              flush=True)
        os._exit(0)

""" + START_WINDOW_POLLING

#: Packages the first turn needs that the warm-up loads ahead (not on the loop).
WARMED_UP = ("openai", "httpx2", "httpcore2", "anyio", "aiohttp", "pydantic", "markdown_it",
             "pygments")


def test_the_first_key_press_loads_what_the_first_turn_needs_and_the_turn_runs(
        tmp_path: Path) -> None:
    from desktop_agent.testing import ScriptedServer, script

    with ScriptedServer() as server:
        server.models = ["typed-model"]
        server.enqueue(script.text("Hello, person."))
        env = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(tmp_path),
               "QT_QPA_PLATFORM": "offscreen", "DESKTOP_AGENT_BASE_URL": server.base_url,
               "PYTHONPATH": str(REPO)}
        result = subprocess.run([sys.executable, "-c", FIRST_SEND_AFTER_TYPING], cwd=REPO,
                                env=env, capture_output=True, text=True, timeout=300,
                                check=False)
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout.strip().splitlines()[-1])
    assert run["idle"] == []  # neither the SDK nor the markdown parser while idle
    assert run["replies"] == ["Hello, person."]
    loaded_by_the_send = {m.split(".")[0] for m in run["send_imported"]}
    assert sorted(loaded_by_the_send.intersection(WARMED_UP)) == []


#: Runs the app's own entry point with the start-up bench's probe, which exits once the
#: window's conversation is shown (``ready``), and prints what the process held at the
#: window's first paint and at that exit.
AT_FIRST_PAINT = r"""
import importlib, json, os, sys
os.environ["DESKTOP_AGENT_EXIT_AFTER_PAINT"] = "1"
from PySide6.QtCore import QEvent, QObject
import desktop_agent.gui.app as app_module

exit_now = os._exit
at_paint = {}

class FirstPaint(QObject):
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and not at_paint:
            import PySide6.QtCore
            at_paint["modules"] = sorted(sys.modules)
            at_paint["qt_classes"] = sorted(vars(PySide6.QtCore))
        return False

run_app = app_module.run_app

def run_watched(argv, on_window=None):
    def watch(window):
        window.installEventFilter(FirstPaint(window))  # the window's own events only
        if on_window is not None:
            on_window(window)
    return run_app(argv, on_window=watch)

def at_ready(code: int) -> None:
    print(json.dumps({"at_paint": at_paint, "modules": sorted(sys.modules)}), flush=True)
    exit_now(code)

app_module.run_app = run_watched
os._exit = at_ready  # the probe exits once the conversation is shown
importlib.import_module("desktop_agent.cli.main").main([])
"""

#: What the window paints without: the conversation, built in the loop turn after the
#: first paint (the transcript and the session, about a third of the CPU to the paint).
CONVERSATION_AFTER_FIRST_PAINT = (
    "desktop_agent.gui.transcript.view",
    "desktop_agent.gui.conversation.conversation_tab",
    "desktop_agent.gui.conversation.conversation_controller",
    "desktop_agent.session.conversation",
)

#: The sandbox's policies and command limits: the approval dock, built before the
#: paint, shows only the sandbox's warning sentence (``sandbox_warning.py``).
SANDBOX_AFTER_FIRST_PAINT = (
    "desktop_agent.core.tooling.builtin.sandbox",
    "desktop_agent.core.tooling.builtin.command_limits",
)

#: What a new conversation's window does not need before its first paint: the
#: widgets of answers, messages and compaction markers (made with the first one).
NOT_BEFORE_FIRST_PAINT = (
    "desktop_agent.gui.transcript.assistant_message",
    "desktop_agent.gui.transcript.message_bubbles",
    "desktop_agent.gui.transcript.compaction_marker",
    "desktop_agent.gui.transcript.tool_card",
    "desktop_agent.gui.transcript.code_block",
    "desktop_agent.gui.transcript.markdown_html",
)

#: QtCore classes the window never uses. PySide6 creates a class (and its enums)
#: when it is first named; an application-wide event filter in Python before the
#: paint would create all QObject subclasses (it is handed Qt's private objects,
#: whose type PySide6 looks for among them): ~100 more classes, ~40 ms of CPU.
NEVER_USED_QT_CLASSES = ("QProcess", "QSharedMemory", "QTranslator", "QTimeLine")


def test_the_first_paint_of_a_new_conversation_waits_for_nothing_it_does_not_show(
        tmp_path: Path) -> None:
    env = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(tmp_path),
           "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)}
    env.pop("DESKTOP_AGENT_BASE_URL", None)
    result = subprocess.run([sys.executable, "-c", AT_FIRST_PAINT], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout.strip().splitlines()[-1])
    at_paint, at_ready = set(run["at_paint"]["modules"]), set(run["modules"])
    assert sorted(at_paint.intersection(CONVERSATION_AFTER_FIRST_PAINT)) == []
    assert sorted(at_paint.intersection(SANDBOX_AFTER_FIRST_PAINT)) == []
    assert "desktop_agent.gui.transcript.view" in at_ready  # then the tab's transcript
    assert "desktop_agent.session.conversation" in at_ready
    assert sorted(at_ready.intersection(NOT_BEFORE_FIRST_PAINT)) == []
    assert sorted(set(run["at_paint"]["qt_classes"]).intersection(NEVER_USED_QT_CLASSES)) == []
