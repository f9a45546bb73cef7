"""Look at the real window: run a scripted conversation under Xvfb and save screenshots.

Usage::

    python tests/e2e/screenshot_window.py [output_folder] [--dark]
    SCREENSHOT_ONLY=approval-diff python tests/e2e/screenshot_window.py ...  # that window only
    SCREENSHOT_ONLY=command-preview python tests/e2e/screenshot_window.py ...  # previews only
    SCREENSHOT_ONLY=subagents python tests/e2e/screenshot_window.py ...  # likewise
    SCREENSHOT_ONLY=context-window python tests/e2e/screenshot_window.py ...  # the window doctor
    SCREENSHOT_ONLY=slash python tests/e2e/screenshot_window.py ...  # the / menu and its form

Starts a virtual X display (``Xvfb``; ``apt-get install -y xvfb``) unless
``DISPLAY`` is already set, opens the real main window with the xcb platform
over a throw-away data folder, and plays a scripted conversation against a
local scripted model server: the empty conversation, a streamed markdown
answer, a tool call waiting on its card (and its arguments opened for editing
there), a regenerated answer with its branch
switcher, attachments in the composer, a request from a background tab in the
Approvals dock, a turn that changed files (the bar with Undo, the Files changed
window with a diff, and the folder after Undo), a project with an ``AGENTS.md``
(its mark in the header, the model's plan pinned above the composer, ``@``
completion open in the composer), a ``bash`` call's output shown live on its
card mid-command (then stopped from the card, and again after a restart), the theme
switched live (light to dark, or dark to light) with no restart, the settings
dialogs, the folder menu with recent folders, and (in a
second window with the built-in file tools) an ``edit_file`` approval with its
diff on the inline card and in the Approvals dock, then the "Restore files…" menu
under the message whose turn changed the file and the question it asks, (in a
third window) a delegation to a subagent live on its card, its call asked in the
Approvals dock, the card once it ended, and the permission-mode selector, and (in a
fourth, with real bubblewrap on a real overlay) command previews: a small change,
``rm -rf``, a 10,000-file install folded into folders, and *Preview* on an approval
card. It does
so in the light and the dark theme (``--light`` / ``--dark`` for one) at 1200×800
and 1024×640, saving
``<theme>-<size>-NN-<moment>.png``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ANSWER = """## Plan for the refactor

Here is what I would change, step by step:

1. Split `client.py` into **transport** and **turn logic**.
2. Add tests for the *interrupt* path.
3. Measure streaming overhead.

| Step | Risk | Effort |
|------|------|--------|
| Split | low | 1 h |
| Tests | none | 2 h |

```python
async def interrupt(self) -> None:
    self._interrupt_requested = True
```

Shall I start with the first step?"""


@contextlib.contextmanager
def virtual_display() -> Iterator[None]:
    """Run Xvfb on a free display number for the duration (unless DISPLAY is set)."""
    if os.environ.get("DISPLAY"):
        yield
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise SystemExit("Xvfb is not installed: apt-get install -y xvfb")
    for number in range(90, 110):
        if not Path(f"/tmp/.X{number}-lock").exists():
            break
    process = subprocess.Popen([xvfb, f":{number}", "-screen", "0", "1400x900x24", "-nolisten",
                                "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not Path(f"/tmp/.X11-unix/X{number}").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("Xvfb did not start")
            time.sleep(0.05)
        os.environ["DISPLAY"] = f":{number}"
        yield
    finally:
        process.terminate()
        process.wait(5)


async def _pause(seconds: float) -> None:
    await asyncio.sleep(seconds)


async def _wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the window did not reach the expected state: {what}")
        await asyncio.sleep(0.02)


SIZES = ((1200, 800), (1024, 640))


async def play(app: Any, out: Path, prefix: str, size: tuple[int, int]) -> list[Path]:
    """Drive the window through the scripted conversation, saving screenshots."""
    from desktop_agent.core.tooling.tools import tool
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session.tools.plan import plan_tool
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script

    @tool("read_file", "Read a text file in the work folder", {"path": str}, read_only=True)
    async def read_file(args: dict[str, Any]) -> str:
        return "def interrupt(self):\n    ...\n"

    @tool("take_screenshot", "Capture the screen", {}, read_only=True)
    async def take_screenshot(args: dict[str, Any]) -> Any:
        from desktop_agent.core.tooling.output import ToolOutput
        from desktop_agent.image_data import data_uri

        shot_file = out / "screen.png"
        _draw_chart(shot_file, width=480, height=280)
        url = data_uri(shot_file.read_bytes())
        shot_file.unlink()
        return ToolOutput("Captured the screen (480 × 280).",
                          [{"type": "image_url", "image_url": {"url": url}}])

    @tool("refactor", "Rename greet() to welcome() across the work folder", {})
    async def refactor(args: dict[str, Any]) -> str:
        work = _demo_folder()
        source = work / "src" / "app.py"
        source.write_text(source.read_text().replace("greet", "welcome"))
        (work / "tests").mkdir(exist_ok=True)
        (work / "tests" / "test_app.py").write_text(
            "from src.app import welcome\n\n\ndef test_welcome():\n"
            "    assert welcome('Ada') == 'Hello, Ada!'\n")
        (work / "old_notes.txt").unlink()
        return "Renamed greet() to welcome() in src/app.py, added tests/test_app.py, " \
               "removed old_notes.txt."

    @tool("bash", "Run a bash command in the working folder", {"command": str})
    async def bash(args: dict[str, Any]) -> str:
        from desktop_agent.core.tooling.builtin.shell_tool import run_command
        from desktop_agent.core.tooling.builtin.workdir import Workdir

        # The real sandboxed runner: its output reaches the card live.
        result = await run_command(args["command"], Workdir(_LIVE[0]), time_limit=120)
        return result.to_text()

    saved: list[Path] = []

    def save(widget: Any, name: str) -> None:
        app.processEvents()
        path = out / f"{prefix}-{name}"
        widget.grab().save(str(path))
        saved.append(path)

    def shot(name: str) -> None:
        save(window, name)

    with ScriptedServer() as server:
        server.models = ["qwen2.5-7b-instruct", "llama-3.1-8b"]
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog([read_file, take_screenshot, refactor,
                                                      plan_tool(), bash],
                                                     include_builtin=False),
                            approval_timeout=300.0, discover_on_start=False)
        window.resize(*size)
        window.show()
        controller = window.current_controller()
        window.servers.use_server(controller, server.base_url, "qwen2.5-7b-instruct", None, 32768)
        await _pause(0.2)
        shot("01-empty.png")

        server.enqueue(script.text(ANSWER, pieces=120, delay=0.03))
        controller.send("How should we refactor the client?")
        tab = window.current_tab()
        await _wait_for(lambda: "Effort" in " ".join(
            tab.transcript.item_text(k) for k in tab.transcript.item_keys()), "streaming")
        shot("02-streaming.png")
        await _wait_for(lambda: not controller.busy, "the first answer")

        server.enqueue(script.tool_calls([("read_file", {"path": "desktop_agent/core/client.py"})],
                                         text_before="Let me look at the file first."),
                       script.text("The interrupt method only sets a flag; the reader task "
                                   "is cancelled by `interrupt()`."))
        controller.send("Check how interrupt works in client.py")
        await _wait_for(lambda: bool(window.approvals.pending()), "the approval request")
        await _pause(0.4)
        shot("03-inline-approval.png")
        from desktop_agent.gui.transcript.tool_card import ToolCard

        asking = next(c for c in tab.findChildren(ToolCard) if c.approval_panel is not None)
        asking.approval_panel.edit_button.click()  # the arguments, editable on the card
        await _pause(0.3)
        shot("03b-card-arguments-editor.png")
        window.approval_dock.allow_once()
        await _wait_for(lambda: not controller.busy, "the tool turn")

        server.enqueue(script.text("In short: `interrupt()` sets a flag and cancels the "
                                   "reader task, so the stream closes at once."))
        controller.regenerate()
        await _wait_for(lambda: not controller.busy, "the regenerated answer")
        await _pause(0.3)
        shot("04-branch-switcher.png")

        picture = out / "chart.png"
        _draw_chart(picture)
        notes = Path(os.environ["DESKTOP_AGENT_DATA_DIR"]) / "meeting-notes.md"
        notes.write_text("# Notes\n- ship the window redesign\n")
        tab.attach_files([str(picture), str(notes)])
        tab.composer.setPlainText("What does this chart say about last week?")
        await _pause(0.2)
        shot("05-attachments.png")
        controller.update_settings(vision=True)
        server.enqueue(script.tool_calls([("take_screenshot", {})],
                                         text_before="Let me compare it with the screen."),
                       script.text("Sales peaked on **Thursday**; the screen shows the "
                                   "same chart, so the dashboard is up to date."))
        tab.send()
        await _wait_for(lambda: bool(window.approvals.pending()), "the screenshot approval")
        window.approval_dock.allow_once()
        await _wait_for(lambda: not controller.busy, "the answer about the pictures")
        await _pause(0.3)
        shot("05b-pictures.png")
        sent = next(key for key in tab.transcript.item_keys()
                    if getattr(tab.transcript.item_widget(key), "pictures", None) is not None)
        save(tab.transcript.item_widget(sent), "05c-sent-picture.png")
        picture.unlink()

        second = window.new_conversation()
        window.servers.use_server(second, server.base_url, "llama-3.1-8b", None, 8192)
        server.enqueue(script.tool_calls([("read_file", {"path": "README.md"})]))
        window.tabs.setCurrentIndex(0)
        second.send("Read the README")
        await _wait_for(lambda: bool(window.approvals.pending()), "a background request")
        await _pause(0.3)
        shot("06-background-approval.png")
        window.activateWindow()  # the keyboard's window (no window manager here to say so)
        await _wait_for(window.isActiveWindow, "the window to take the keyboard", 5)
        window.approval_dock.deny_button.setFocus()
        window.approval_dock.deny_button.click()  # answered in the dock...
        await _wait_for(lambda: not second.busy, "the denied turn")
        await _pause(0.3)
        shot("06b-after-dock-answer.png")  # ...the message box has the keyboard again

        await _files_changed_shots(window, server, save, shot)
        await _plan_and_mention_shots(app, window, server, out, prefix, saved)
        await _live_output_and_theme_shots(window, server, shot)
        await _folder_menu_shot(app, window, out, prefix, saved)

        dialog = window.open_settings()
        await _pause(0.3)
        if dialog is not None:
            save(dialog, "07-conversation-settings.png")
            dialog.scroll_to(dialog.revoke_button)  # the bottom, reached by scrolling
            save(dialog, "07b-conversation-settings-bottom.png")
            dialog.reject()
        prefs = window.chrome.open_preferences()
        await _pause(0.3)
        save(prefs, "08-preferences.png")
        prefs.reject()

        window.close()
        await window.shutdown()
        # Started again on the same data: the stopped command's conversation must look as
        # it did live (14b): its card's figures, the turn's marks, the context figure.
        again = MainWindow(store, tools=window.tools, approval_timeout=300.0,
                           discover_on_start=False)
        again.resize(*size)
        again.show()
        again.open_conversation(_LIVE_CONVERSATION[0])
        reopened = again.current_tab()
        await _wait_for(lambda: bool(reopened.transcript.item_keys()), "the reopened transcript")
        await _wait_for(lambda: "context \u2014" not in reopened.status_line.context_label.text(),
                        "the reopened context figure")
        await _pause(0.4)
        save(again, "17-reopened-after-restart.png")
        again.close()
        await again.shutdown()
        store.close()
    return saved


_DEMO: list[Path] = []
"""The demo conversation's own working folder, once it has one."""


def _demo_folder() -> Path:
    return _DEMO[0]


async def _files_changed_shots(window: Any, server: Any, save: Any, shot: Any) -> None:
    """A turn whose tool changes files: the bar, the Files changed window, then Undo."""
    from desktop_agent.session import workdir_path
    from desktop_agent.testing import script

    third = window.new_conversation()
    window.servers.use_server(third, server.base_url, "qwen2.5-7b-instruct", None, 32768)
    third.update_settings(confirm_tools=False, tools=["refactor"])
    work = workdir_path(third.conversation_id, third.settings)  # its own folder
    _DEMO[:] = [work]
    (work / "src").mkdir(parents=True, exist_ok=True)
    (work / "src" / "app.py").write_text(
        '"""A tiny greeter."""\n\n\ndef greet(name: str) -> str:\n'
        '    """Say hello."""\n    return f"Hello, {name}!"\n\n\n'
        'if __name__ == "__main__":\n    print(greet("world"))\n')
    (work / "old_notes.txt").write_text("rename greet before the release\n")
    server.enqueue(script.tool_calls([("refactor", {})], text_before="Renaming it now."),
                   script.text("Done: `greet()` is now `welcome()`, with a test."))
    third.send("Rename greet to welcome and add a test")
    tab = window.current_tab()
    await _wait_for(lambda: not third.busy and tab.files_bar.isVisible(), "the files bar")
    await _pause(0.3)
    shot("09-files-changed-bar.png")
    tab.undo_actions.show_files_changed()
    panel = tab.undo_actions.files_panel
    await _wait_for(lambda: panel.tree.topLevelItemCount() > 0, "the Files changed window")
    top = panel.tree.topLevelItem(0)
    panel.tree.setCurrentItem(next(top.child(i) for i in range(top.childCount())
                                   if "app.py" in top.child(i).text(0)))
    await _pause(0.5)
    save(panel, "10-files-changed-window.png")
    panel.close()
    tab.undo_actions.undo_shown_turn()
    await _wait_for(lambda: (work / "old_notes.txt").exists()
                    and tab.files_bar.undo_button.text() == "Undo this restore", "the undo")
    await _pause(0.3)
    shot("11-undone.png")


_LIVE_CONVERSATION: list[str] = []
"""The conversation whose command runs live (looked at again after a restart)."""

_LIVE: list[Path] = []
"""The working folder of the conversation whose command runs live."""

#: The demo project's test script: coloured lines for a few seconds, then a test that hangs.
TEST_RUN = ("printf '\\033[1m===== test session starts =====\\033[0m\\n'; "
            "for i in $(seq 1 60); do printf 'tests/test_parser.py::test_row_%02d "
            "\\033[32mPASSED\\033[0m\\n' $i; sleep 0.05; done; "
            "printf 'tests/test_parser.py::test_quoted_commas \\033[31mFAILED\\033[0m\\n'; "
            "printf 'tests/test_reader.py::test_huge_file '; sleep 60")


async def _live_output_and_theme_shots(window: Any, server: Any, shot: Any) -> None:
    """A command's output on its card while it runs (then Stop), and a live theme switch."""
    from desktop_agent.gui.theme import is_dark
    from desktop_agent.gui.transcript.tool_card import ToolCard
    from desktop_agent.gui.window.preferences import Preferences
    from desktop_agent.session import workdir_path
    from desktop_agent.testing import script

    fifth = window.new_conversation()
    _LIVE_CONVERSATION[:] = [fifth.conversation_id]
    window.servers.use_server(fifth, server.base_url, "qwen2.5-7b-instruct", None, 32768)
    fifth.update_settings(confirm_tools=False, tools=["bash"])
    work = workdir_path(fifth.conversation_id, fifth.settings)
    _LIVE[:] = [work]
    (work / "run-tests.sh").write_text(TEST_RUN + "\n")
    server.enqueue(script.tool_calls([("bash", {"command": "bash run-tests.sh"})],
                                     text_before="Running the tests."),
                   script.text("I stopped the run: `test_huge_file` hangs. The failing test "
                               "is `test_quoted_commas`; shall I look at it?"))
    tab = window.current_tab()
    fifth.send("Run the tests")

    def live_card() -> Any:
        tab.transcript.flush()
        cards = [c for c in tab.findChildren(ToolCard) if c.tool_name == "bash"]
        return cards[-1] if cards else None

    def showing(text: str) -> bool:
        card = live_card()
        return card is not None and card.live_view is not None \
            and text in card.live_view.plain_text()

    await _wait_for(lambda: showing("test_row_01"), "the live output")
    await _wait_for(lambda: showing("test_huge_file"), "the output mid-command")
    await _pause(1.2)  # the elapsed time moves on while it hangs
    shot("14-live-output.png")
    card = live_card()
    card.live_view.stop_button.click()
    await _wait_for(lambda: not fifth.busy, "the stopped command")
    await _pause(0.3)
    shot("14b-live-output-stopped.png")

    # The theme, switched live: every open transcript follows, no restart.
    was_dark = is_dark()
    window.chrome.apply_preferences(Preferences(theme="light" if was_dark else "dark"))
    await _pause(0.5)
    shot(f"15-theme-switched-live-to-{'light' if was_dark else 'dark'}.png")
    window.chrome.apply_preferences(Preferences(theme="dark" if was_dark else "light"))
    await _pause(0.3)


async def _folder_menu_shot(app: Any, window: Any, out: Path, prefix: str,
                            saved: list[Path]) -> None:
    """Two project folders picked: a new conversation starts in the last one, and the
    header's folder menu offers both (the menu is a window: a shot of the screen)."""
    projects = Path(os.environ["DESKTOP_AGENT_WORK_ROOT"]).parent / "Projects"
    window.new_conversation()  # one of its own to pick them in (the others keep theirs)
    for name in ("csv-parser", "website"):
        (projects / name).mkdir(parents=True, exist_ok=True)
        window.current_tab().header.folder_chosen.emit(str(projects / name))
    window.new_conversation()  # from the tab working in website/: it starts there too
    header = window.current_tab().header
    await _pause(0.3)
    button = header.folder_button
    header.folder_menu.popup(button.mapToGlobal(button.rect().bottomLeft()))
    await _wait_for(header.folder_menu.isVisible, "the folder menu")
    await _pause(0.3)
    app.processEvents()
    path = out / f"{prefix}-16-folder-menu.png"
    window.screen().grabWindow(0).copy(window.frameGeometry()).save(str(path))
    saved.append(path)
    header.folder_menu.hide()


PLAN = [{"step": "Read src/parser.py and its tests", "status": "completed"},
        {"step": "Handle quoted commas in parse_row()", "status": "in_progress"},
        {"step": "Add a test for an empty last column", "status": "pending"},
        {"step": "Run the test suite", "status": "pending"}]


async def _plan_and_mention_shots(app: Any, window: Any, server: Any, out: Path, prefix: str,
                                  saved: list[Path]) -> None:
    """A project with AGENTS.md: the plan pinned above the composer, then ``@`` completion.

    The completion list is a window of its own, so that shot is of the screen
    (cropped to the main window), not of the main window's widgets alone.
    """
    from desktop_agent.session import workdir_path
    from desktop_agent.testing import script

    fourth = window.new_conversation()
    window.servers.use_server(fourth, server.base_url, "qwen2.5-7b-instruct", None, 32768)
    fourth.update_settings(confirm_tools=False)
    work = workdir_path(fourth.conversation_id, fourth.settings)
    for name in ("src/parser.py", "src/reader.py", "src/cli.py", "tests/test_parser.py",
                 "tests/test_reader.py", "docs/parsing-rules.md", "README.md"):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(f"# {name}\n")
    (work / "AGENTS.md").write_text("# How to work here\n- Run `pytest -q` before saying "
                                    "done.\n- Keep parse_row() free of regular expressions.\n")
    server.enqueue(script.tool_calls([("update_plan", {
        "explanation": "The bug is in parse_row(); a test first, then the fix.", "plan": PLAN})],
        text_before="Here is my plan."),
        script.text("I am on step 2: `parse_row()` splits on every comma, even inside "
                    "quotes."))
    fourth.send("CSV rows with quoted commas come out wrong. Fix it.")
    tab = window.current_tab()
    await _wait_for(lambda: not fourth.busy and tab.plan_panel.isVisible()
                    and tab.header.instructions_mark.isVisible(), "the pinned plan")
    await _pause(0.4)
    window.grab().save(str(out / f"{prefix}-12-plan-pinned.png"))
    saved.append(out / f"{prefix}-12-plan-pinned.png")

    tab.composer.setFocus()
    tab.composer.insertPlainText("Also look at @pars")
    await _wait_for(tab.file_mentions.is_open, "the @ completion list")
    await _pause(0.4)
    app.processEvents()
    frame = window.frameGeometry()
    screen = window.screen().grabWindow(0)
    path = out / f"{prefix}-13-at-completion.png"
    screen.copy(frame).save(str(path))
    saved.append(path)
    tab.file_mentions.popup.hide()


APP_BEFORE = '''"""Read rows of a CSV file."""

import csv
from pathlib import Path


def parse_row(line: str) -> list[str]:
    """Split one line into its fields."""
    return line.split(",")


def read_rows(path: Path) -> list[list[str]]:
    """Every row of the file, header included."""
    with path.open(encoding="utf-8") as handle:
        return [parse_row(line.rstrip("\\n")) for line in handle]
'''

EDIT = {"path": "src/parser.py",
        "old_string": '''def parse_row(line: str) -> list[str]:
    """Split one line into its fields."""
    return line.split(",")''',
        "new_string": '''def parse_row(line: str) -> list[str]:
    """Split one line into its fields; a quoted field may hold commas."""
    return next(csv.reader([line]))'''}


async def play_approval_diff(app: Any, out: Path, prefix: str, size: tuple[int, int]) -> list[Path]:
    """An ``edit_file`` call waiting for approval: its diff on the card and in the dock.

    A window of its own, because the built-in file tools (the only calls with
    a diff before approval) would take the place of the scripted ``read_file``
    of the main run.
    """
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session import workdir_path
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script

    saved: list[Path] = []
    with ScriptedServer() as server:
        server.models = ["qwen2.5-7b-instruct"]
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog(include_builtin=True, include_mcp=False),
                            approval_timeout=300.0, discover_on_start=False)
        window.resize(*size)
        window.show()
        controller = window.new_conversation()
        window.servers.use_server(controller, server.base_url, "qwen2.5-7b-instruct", None,
                                  32768)
        controller.update_settings(tools=["read_file", "edit_file", "write_file"])
        work = workdir_path(controller.conversation_id, controller.settings)
        (work / "src").mkdir(parents=True, exist_ok=True)
        (work / "src" / "parser.py").write_text(APP_BEFORE)
        server.enqueue(script.tool_calls([("edit_file", EDIT)],
                                         text_before="parse_row() splits on every comma; "
                                                     "the csv module handles quotes."),
                       script.text("Done: quoted commas stay inside their field."))
        controller.send("CSV rows with quoted commas come out wrong. Fix parse_row().")
        tab = window.current_tab()
        await _wait_for(lambda: bool(window.approvals.pending()), "the edit_file approval", 20)
        await _pause(1.5)  # the diff's colours arrive once the file's lexer has loaded
        app.processEvents()
        path = out / f"{prefix}-20-approval-diff-card.png"
        window.grab().save(str(path))
        saved.append(path)
        window.approval_dock.toggleViewAction().trigger()  # as View ▸ Approvals does
        await _wait_for(lambda: window.approval_dock.diff_view.rows_shown > 0, "the dock's diff")
        await _pause(0.6)
        app.processEvents()
        for name, widget in (("21-approval-diff-dock.png", window),
                             ("21b-approval-diff-dock-alone.png", window.approval_dock)):
            path = out / f"{prefix}-{name}"
            widget.grab().save(str(path))
            saved.append(path)
        window.approval_dock.allow_once()
        await _wait_for(lambda: not controller.busy, "the edit")
        await _pause(0.3)
        path = out / f"{prefix}-22-approval-diff-after.png"
        tab.transcript.flush()
        window.grab().save(str(path))
        saved.append(path)
        saved.extend(await _restore_menu_shot(app, window, out, prefix))
        window.close()
        await window.shutdown()
        store.close()
    return saved


REVIEWER_PROMPT = "You review code for real bugs only."


def _write_reviewer_config() -> None:
    """A subagent in the data folder's config.json, on a smaller model."""
    import json

    Path(os.environ["DESKTOP_AGENT_DATA_DIR"], "config.json").write_text(json.dumps({
        "agents": {"reviewer": {
            "description": "Reviews a file for bugs; use after changing code.",
            "prompt": REVIEWER_PROMPT, "tools": ["read_file"],
            "model": "qwen2.5-coder-1.5b"}}}))


async def play_subagents(app: Any, out: Path, prefix: str, size: tuple[int, int]) -> list[Path]:
    """A delegation to a subagent: its card live, its call asked in the dock, the card
    once it ended; then the permission-mode selector in the header (open, plan, bypass).

    A window of its own, with a subagent in config.json and a server that answers the
    main agent and the subagent by their system prompts.
    """
    import threading

    from desktop_agent.core.tooling.tools import tool
    from desktop_agent.gui.transcript.tool_card import ToolCard
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script
    from desktop_agent.testing.script import Gate, Script

    _write_reviewer_config()

    @tool("read_file", "Read a text file in the work folder", {"path": str}, read_only=True)
    async def read_file(args: dict[str, Any]) -> str:
        return APP_BEFORE

    hold = threading.Event()
    scripts: dict[str, list[Script]] = {
        "main": [script.tool_calls([("delegate", {
                     "agent": "reviewer", "prompt": "Review src/parser.py for bugs."})],
                     text_before="I'll ask the reviewer to look at the parser."),
                 script.text("The reviewer found one real bug: `parse_row()` splits quoted "
                             "commas. Shall I fix it with the `csv` module?")],
        "reviewer": [Script([*script.text("I'll read the parser first, then check how rows "
                                          "are split.", pieces=12, delay=0.02).steps[:-2],
                             Gate(hold, 60),
                             *script.tool_calls([("read_file", {"path": "src/parser.py"})]
                                                ).steps[1:]]),
                     script.text("**One bug**: `parse_row()` uses `line.split(',')`, so a "
                                 "quoted field with a comma is cut in two (src/parser.py, "
                                 "line 2). `read_rows()` is fine.")],
    }
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> Script:
        system = str(body["messages"][0].get("content") or "")
        with lock:
            return scripts["reviewer" if REVIEWER_PROMPT in system else "main"].pop(0)

    saved: list[Path] = []

    def save(widget: Any, name: str) -> None:
        app.processEvents()
        path = out / f"{prefix}-{name}"
        widget.grab().save(str(path))
        saved.append(path)

    with ScriptedServer() as server:
        server.models = ["qwen2.5-7b-instruct", "qwen2.5-coder-1.5b"]
        server.responder = respond
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog([read_file], include_builtin=False),
                            approval_timeout=300.0, discover_on_start=False)
        window.resize(*size)
        window.show()
        controller = window.new_conversation()
        window.servers.use_server(controller, server.base_url, "qwen2.5-7b-instruct", None,
                                  32768)
        tab = window.current_tab()

        def delegation() -> Any:
            tab.transcript.flush()
            cards = [c for c in tab.findChildren(ToolCard) if c.tool_name == "delegate"]
            return cards[-1] if cards else None

        controller.send("Have the reviewer check src/parser.py.")
        await _wait_for(lambda: delegation() is not None
                        and delegation().subagent_view is not None
                        and "rows" in delegation().subagent_view.run_view.toPlainText(),
                        "the subagent writing on the delegation card")
        await _pause(0.4)
        save(window, "25-subagent-live.png")
        hold.set()
        await _wait_for(lambda: bool(window.approvals.pending()), "the subagent's approval")
        await _pause(0.4)
        save(window, "26-subagent-approval-dock.png")
        window.approval_dock.allow_once()
        await _wait_for(lambda: not controller.busy, "the delegating turn")
        await _pause(0.4)
        save(window, "27-subagent-done.png")
        delegation().subagent_view.set_expanded(True)  # unfolded, as a click does
        await _pause(0.3)
        save(window, "27b-subagent-done-unfolded.png")

        header = tab.header
        header.mode_box.showPopup()
        await _pause(0.4)
        app.processEvents()
        path = out / f"{prefix}-28-permission-mode-menu.png"
        window.screen().grabWindow(0).copy(window.frameGeometry()).save(str(path))
        saved.append(path)
        header.mode_box.hidePopup()
        controller.set_permission_mode("plan")
        await _pause(0.2)
        save(header, "28b-permission-mode-plan.png")
        if not controller.set_permission_mode("bypassPermissions"):  # no working sandbox
            print("bypassPermissions refused: no working sandbox here", file=sys.stderr)
        await _pause(0.2)
        save(header, "28c-permission-mode-bypass.png")
        window.close()
        await window.shutdown()
        store.close()
    return saved


async def _restore_menu_shot(app: Any, window: Any, out: Path,
                             prefix: str) -> tuple[Path, Path]:
    """The "Restore files…" menu open under the message whose turn changed a file, then
    the question its first entry asks.

    The menu is a window of its own: the shot is of the screen, cropped to the window.
    """
    from desktop_agent.gui.transcript.message_bubbles import UserMessageWidget

    view = window.current_tab().transcript
    message = next(w for k in view.item_keys()
                   if isinstance(w := view.item_widget(k), UserMessageWidget))
    await _wait_for(message.restore_button.isVisible, "Restore files… under the message")
    message.restore_button.click()
    await _wait_for(message.restore_menu.isVisible, "the Restore files menu")
    await _pause(0.3)
    app.processEvents()
    path = out / f"{prefix}-23-restore-files-menu.png"
    window.screen().grabWindow(0).copy(window.frameGeometry()).save(str(path))
    message.restore_menu.hide()
    # "Restore files to before this message" asks first, naming each file.
    from desktop_agent.gui.transcript.message_bubbles import RESTORE_FILES

    next(a for a in message.restore_menu.actions() if a.text() == RESTORE_FILES).trigger()
    tab = window.current_tab()
    await _wait_for(lambda: tab.undo_actions.restore_question is not None
                    and tab.undo_actions.restore_question.isVisible(),
                    "the question before restoring")
    await _pause(0.3)
    app.processEvents()
    asked = out / f"{prefix}-24-restore-question.png"
    tab.undo_actions.restore_question.grab().save(str(asked))
    tab.undo_actions.restore_question.reject()
    return path, asked


PREVIEW_COMMANDS = (
    ("30-preview-small-change",
     "sed -i 's/greet/welcome/' src/app.py && printf 'welcome\\n' > CHANGELOG.md "
     "&& echo renamed"),
    ("31-preview-rm-rf", "rm -rf src && echo removed"),
    ("32-preview-10000-files",
     "python3 -c \"import os\n"
     "for p in range(100):\n"
     "    d = f'node_modules/pkg{p}/lib'\n"
     "    os.makedirs(d)\n"
     "    for f in range(100):\n"
     "        open(f'{d}/m{f}.js', 'w').write('module.exports = %d;\\\\n' % f)\n\" "
     "&& echo added 100 packages"),
)


async def play_command_previews(app: Any, out: Path, prefix: str,
                                size: tuple[int, int]) -> list[Path]:
    """Commands previewed on an overlay: the card with what each would change, Apply/Discard.

    Real bubblewrap and a real overlay (as the app runs them): a small change,
    ``rm -rf src``, and a 10,000-file install shown as folders with totals; then
    a command waiting for approval with *Preview* on its card.
    """
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session import workdir_path
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script

    saved: list[Path] = []
    with ScriptedServer() as server:
        server.models = ["qwen2.5-7b-instruct"]
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog(include_builtin=True, include_mcp=False),
                            approval_timeout=300.0, discover_on_start=False)
        window.resize(*size)
        window.show()
        controller = window.new_conversation()
        window.servers.use_server(controller, server.base_url, "qwen2.5-7b-instruct", None,
                                  32768)
        controller.update_settings(tools=["bash"], confirm_tools=False,
                                   command_preview="preview")
        work = workdir_path(controller.conversation_id, controller.settings)
        (work / "src").mkdir(parents=True, exist_ok=True)
        (work / "src" / "app.py").write_text(APP_BEFORE.replace("parse_row", "greet"))
        (work / "src" / "util.py").write_text("def util():\n    return 1\n")
        tab = window.current_tab()
        for name, command in PREVIEW_COMMANDS:
            server.enqueue(script.tool_calls([("bash", {"command": command})]),
                           script.text("Done."))
            controller.send(f"Step {name[:2]}: run the command.")

            def panel() -> Any:
                return _bash_card_panel(tab)

            await _wait_for(lambda: panel() is not None and panel().apply_button.isVisible(),
                            f"the preview card of {name}", 180)
            await _pause(1.0)  # the diff's colours arrive once its lexer has loaded
            app.processEvents()
            tab.transcript.scroll_to_end()
            await _pause(0.3)
            app.processEvents()
            path = out / f"{prefix}-{name}.png"
            window.grab().save(str(path))
            saved.append(path)
            if name.endswith("10000-files"):
                tree = panel().tree
                tree.topLevelItem(0).setExpanded(True)
                tree.topLevelItem(0).child(0).setExpanded(True)
                await _pause(0.3)
                app.processEvents()
                path = out / f"{prefix}-{name}-opened.png"
                window.grab().save(str(path))
                saved.append(path)
                panel().discard_button.click()
            else:
                panel().apply_button.click()
            await _wait_for(lambda: not controller.busy, f"the end of {name}", 180)
        controller.update_settings(command_preview=None, confirm_tools=True)
        server.enqueue(script.tool_calls([("bash", {"command": "make clean && make"})]),
                       script.text("Built."))
        controller.send("Rebuild the project.")
        await _wait_for(lambda: bool(window.approvals.pending()), "the bash approval", 60)
        def asking() -> bool:
            card = _bash_card(tab)  # the new call's card, once it is shown
            return card is not None and "make clean" in card.arguments_text \
                and card.approval_panel is not None \
                and card.approval_panel.preview_button.isVisible()

        await _wait_for(asking, "Preview on the approval card", 60)
        await _pause(0.5)
        app.processEvents()
        path = out / f"{prefix}-33-approval-with-preview.png"
        window.grab().save(str(path))
        saved.append(path)
        window.close()
        await window.shutdown()
        store.close()
    return saved


def _bash_card(tab: Any) -> Any:
    """The newest ``bash`` card of the tab's transcript (None: not shown yet)."""
    view = tab.transcript
    for key in reversed(view.item_keys()):
        cards = getattr(view.item_widget(key), "_cards", {})
        for card in reversed(list(cards.values())):
            if card.tool_name == "bash":
                return card
    return None


def _bash_card_panel(tab: Any) -> Any:
    card = _bash_card(tab)
    return None if card is None else card.preview_panel


def _draw_chart(path: Path, width: int = 240, height: int = 140) -> None:
    """A small bar chart to attach (drawn, so nothing binary is committed)."""
    from PySide6.QtGui import QColor, QImage, QPainter

    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("#ffffff"))
    painter = QPainter(image)
    bar = width // 8
    for i, share in enumerate((0.3, 0.6, 0.45, 0.8, 0.65)):
        top = int(height * (1 - share)) - 10
        painter.fillRect(bar // 2 + i * (bar + bar // 3), top, bar, height - 10 - top,
                         QColor("#2f6fde"))
    painter.end()
    image.save(str(path), "PNG")


def main(argv: list[str]) -> int:
    """Run the scripted session in each theme and size and print where the shots are.

    Each theme and size runs in its own process (one window per process, as the
    app runs), under one shared virtual display.
    """
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0] if args else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if "--one" in argv:
        theme, size = args[1], args[2]
        width, height = (int(n) for n in size.split("x"))
        return _one(out, theme, (width, height))
    themes = ["dark"] if "--dark" in argv else ["light"] if "--light" in argv else \
        ["light", "dark"]
    with virtual_display():
        for theme in themes:
            for width, height in SIZES:
                subprocess.run([sys.executable, __file__, str(out), theme,
                                f"{width}x{height}", "--one"], check=True, timeout=1200)
    return 0


def _one(out: Path, theme: str, size: tuple[int, int]) -> int:
    """One theme at one size, in this process."""
    # The work folders beside the data folder, not in it: a working folder inside the
    # data folder is refused (only the app's own per-conversation folders may be there).
    with virtual_display(), tempfile.TemporaryDirectory() as data, \
            tempfile.TemporaryDirectory() as home:
        os.environ["DESKTOP_AGENT_DATA_DIR"] = data
        os.environ["DESKTOP_AGENT_WORK_ROOT"] = str(Path(home) / "Desktop Agent")
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        from PySide6.QtWidgets import QApplication

        from desktop_agent.gui.app import create_application, finalize_async_generators_on
        from desktop_agent.gui.theme import set_preferences

        app = create_application(["screenshot"])
        assert isinstance(app, QApplication)
        app.setQuitOnLastWindowClosed(False)
        set_preferences(app, theme)
        from desktop_agent.gui.event_loop import GuiEventLoop

        loop = GuiEventLoop(app)
        asyncio.set_event_loop(loop)
        prefix = f"{theme}-{size[0]}x{size[1]}"
        with loop, finalize_async_generators_on(loop):
            # "approval-diff", "command-preview" or "context-window": just that window
            only = os.environ.get("SCREENSHOT_ONLY")
            if only == "slash":
                from screenshot_slash import play_slash

                saved = loop.run_until_complete(
                    asyncio.wait_for(play_slash(app, out, prefix, size), 180))
            elif only == "context-window":
                from screenshot_context_window import play_context_window

                saved = loop.run_until_complete(
                    asyncio.wait_for(play_context_window(app, out, prefix, size), 120))
            else:
                saved = [] if only else loop.run_until_complete(
                    asyncio.wait_for(play(app, out, prefix, size), 120))
                if only in (None, "", "approval-diff"):
                    saved += loop.run_until_complete(
                        asyncio.wait_for(play_approval_diff(app, out, prefix, size), 60))
                if only in (None, "", "command-preview"):
                    saved += loop.run_until_complete(
                        asyncio.wait_for(play_command_previews(app, out, prefix, size), 900))
                if only in (None, "", "subagents"):
                    saved += loop.run_until_complete(
                        asyncio.wait_for(play_subagents(app, out, prefix, size), 60))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
