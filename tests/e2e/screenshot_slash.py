"""Screenshots of ``/`` in the composer: the menu with the built-ins, a prompt's argument form.

Run through ``screenshot_window.py`` (its virtual display, themes and sizes)::

    SCREENSHOT_ONLY=slash python tests/e2e/screenshot_window.py OUT

The prompts are the real ``@modelcontextprotocol/server-everything``'s (installed
in ``.mcp-servers`` by ``.ci/install_mcp_servers.sh``); its ``completion/complete``
suggests the form's values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

EVERYTHING = Path(__file__).parents[2] / ".mcp-servers" / "node_modules" / ".bin" \
    / "mcp-server-everything"


def _project(root: Path) -> None:
    commands = root / ".agents" / "commands"
    commands.mkdir(parents=True, exist_ok=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file for bugs and say which lines to change\n"
        "argument-hint: <file>\n---\nReview $ARGUMENTS for bugs.\n")
    (commands / "compare.md").write_text(
        "---\ndescription: Compare two versions of a file\nargument-hint: old new\n---\n"
        "Compare $1 with $2 and list what changed.\n")
    skill = root / ".agents" / "skills" / "release-notes"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text("---\nname: release-notes\ndescription: Write release "
                                    "notes from the git history.\n---\nRead git log.\n")


async def play_slash(app: Any, out: Path, prefix: str, size: tuple[int, int]) -> list[Path]:
    """The ``/`` menu open with the built-ins, the help, and a prompt's form with suggestions."""
    from screenshot_window import _pause, _wait_for

    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer

    saved: list[Path] = []
    data = Path(os.environ["DESKTOP_AGENT_DATA_DIR"])
    (data / "config.json").write_text(json.dumps(
        {"mcpServers": {"ev": {"command": str(EVERYTHING)}}}), encoding="utf-8")
    work = Path(os.environ["DESKTOP_AGENT_WORK_ROOT"]).parent / "project"
    _project(work)

    def screen(window: Any, name: str) -> None:
        """The screen cropped to the window: popups are windows of their own."""
        app.processEvents()
        path = out / f"{prefix}-{name}"
        window.screen().grabWindow(0).copy(window.frameGeometry()).save(str(path))
        saved.append(path)

    with ScriptedServer() as server:
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog(include_builtin=False),
                            approval_timeout=300.0, discover_on_start=False)
        window.resize(*size)
        window.show()
        controller = window.current_controller()
        window.servers.use_server(controller, server.base_url, "qwen2.5-7b-instruct", None,
                                  32768)
        controller.update_settings(workdir=str(work))
        tab = window.current_tab()
        menu = tab.slash_menu
        tab.composer.setFocus()
        tab.composer.insertPlainText("/")
        await _wait_for(lambda: menu.is_open() and "ev:simple-prompt" in menu.offered(),
                        "the / menu with the server's prompts", timeout=120)
        await _pause(0.4)
        screen(window, "slash-01-menu.png")

        menu.popup.hide()
        tab.composer.clear()
        tab.composer.insertPlainText("/help")
        tab.send()
        commands = tab.slash_commands
        await _wait_for(lambda: commands.help is not None and commands.help.isVisible(),
                        "the /help window")
        await _pause(0.4)
        screen(window, "slash-02-help.png")
        assert commands.help is not None
        commands.help.close()

        tab.composer.clear()
        tab.composer.insertPlainText("/ev:complet")
        await _wait_for(lambda: menu.is_open() and menu.offered()[:1] ==
                        ["ev:completable-prompt"], "the prompt in the menu")
        menu.completer.activated.emit("")  # Enter on the first row
        await _wait_for(lambda: commands.form is not None and commands.form.isVisible(),
                        "the argument form")
        form = commands.form
        assert form is not None
        form.inputs["department"].setFocus()
        form.inputs["department"].setText("E")
        form.inputs["department"].textEdited.emit("E")
        await _wait_for(lambda: form.suggestions("department") == ["Engineering"],
                        "the server's suggestions")
        await _pause(0.4)
        screen(window, "slash-03-prompt-form.png")
        form.completers["department"].popup().hide()
        form.inputs["department"].setText("Engineering")
        form.inputs["name"].setText("Alice")
        await _pause(0.2)
        screen(window, "slash-04-prompt-form-filled.png")
        form.ok_button.click()
        await _wait_for(lambda: "Alice" in tab.composer.toPlainText(), "the prompt's text")
        await _pause(0.3)
        screen(window, "slash-05-prompt-in-composer.png")
        window.close()
        await window.shutdown()
        store.close()
    return saved
