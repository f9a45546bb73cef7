"""Look at what MCP servers and skills bring to the window, against the real server-everything.

Usage::

    python tests/e2e/screenshot_mcp.py [output_folder] [--light|--dark]

Like ``screenshot_window.py`` (whose virtual display it uses), each theme runs in
its own process over a throw-away data folder, at 1200×800: ``@`` in the composer
offering server-everything's resources beside the folder's files, a resource
template's parameter form with the server's suggestions, the attached resources
on their chips, Server → MCP servers… with a server's log (simulated logging on,
level debug) and a server that failed, and the skills list in Conversation
settings. Saves ``mcp-<theme>-NN-<moment>.png``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE)]

from screenshot_window import virtual_display  # noqa: E402

EVERYTHING = REPO / ".mcp-servers" / "node_modules" / ".bin" / "mcp-server-everything"
SIZE = (1200, 800)


async def _wait_for(condition: Any, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the window did not reach the expected state: {what}")
        await asyncio.sleep(0.05)


def _skill(folder: Path, name: str, description: str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nSteps for {name}.\n",
        encoding="utf-8")


def _project(root: Path, data: Path) -> Path:
    project = root / "csv-tool"
    for name in ("src/parser.py", "src/reader.py", "docs/everything-about-rows.md",
                 "README.md"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(f"# {name}\n", encoding="utf-8")
    skills = project / ".agents" / "skills"
    _skill(skills, "release-notes", "Write release notes from the git history since the "
           "last tag. Use when asked for a changelog or release notes.")
    _skill(skills, "pdf-forms", "Fill PDF forms with the values given. Use when a PDF form "
           "is mentioned.")
    _skill(data / "skills", "code-review", "Review a diff for bugs, naming and missing tests, "
           "in the team's checklist order.")
    (skills / "broken").mkdir()
    (skills / "broken" / "SKILL.md").write_text("Just a body, no front matter.\n", "utf-8")
    return project


async def play(app: Any, out: Path, prefix: str, data: Path, scratch: Path) -> list[Path]:
    """Drive the window through the moments to look at, saving screenshots."""
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer

    (data / "config.json").write_text(json.dumps({"mcpServers": {
        "everything": {"command": str(EVERYTHING)},
        "github": {"url": "http://127.0.0.1:9/mcp"}}}), encoding="utf-8")
    project = _project(scratch, data)
    saved: list[Path] = []

    def save(widget: Any, name: str) -> None:
        app.processEvents()
        path = out / f"{prefix}-{name}"
        widget.grab().save(str(path))
        saved.append(path)

    def screen(name: str) -> None:
        """The screen cropped to the window (popups are windows of their own)."""
        app.processEvents()
        path = out / f"{prefix}-{name}"
        window.screen().grabWindow(0).copy(window.frameGeometry()).save(str(path))
        saved.append(path)

    with ScriptedServer() as server:
        server.models = ["qwen2.5-7b-instruct"]
        window = MainWindow(Store.open(), tools=ToolCatalog(include_builtin=False),
                            discover_on_start=False)
        window.resize(*SIZE)
        window.show()
        controller = window.current_controller()
        window.servers.use_server(controller, server.base_url, "qwen2.5-7b-instruct", None,
                                  32768)
        controller.update_settings(workdir=str(project), skills_off=["pdf-forms"])
        tab = window.current_tab()
        mentions = tab.file_mentions

        tab.composer.setFocus()
        tab.composer.insertPlainText("Compare the parser with @ev")
        await _wait_for(lambda: any(r.startswith("everything:") for r in mentions.offered()),
                        "the resources in the @ list")
        await asyncio.sleep(0.4)
        screen("01-at-resources.png")

        mentions.popup.hide()
        tab.composer.clear()
        template = mentions.resources.items["everything:Dynamic Text Resource…"]
        tab.resource_attaching.ask(template)
        form = tab.resource_attaching.form
        await _wait_for(form.isVisible, "the template's form")
        field = form.fields["resourceId"]
        field.setFocus()
        field.insert("1")
        form._suggest("resourceId", "1")  # as typing does (textEdited)
        await _wait_for(lambda: field.completer().popup().isVisible(), "the suggestions")
        await asyncio.sleep(0.3)
        screen("02-template-form.png")
        field.completer().popup().hide()
        form.buttons.accepted.emit()
        tab.resource_attaching.attach("everything",
                                      "demo://resource/static/document/architecture.md")
        await _wait_for(lambda: len(tab.attachments) == 2, "the attached resources")
        tab.composer.setPlainText("Does the parser follow the architecture?")
        await asyncio.sleep(0.3)
        save(window, "03-resources-attached.png")

        panel = window.open_mcp_servers()
        await _wait_for(lambda: panel.servers.count() == 2 and not panel.busy(),
                        "the servers' states")
        pool = await window.tools.mcp_pool()
        await pool.call_tool("everything", "toggle-simulated-logging", {})
        panel.level.setCurrentIndex(panel.level.findData("debug"))
        panel.level.activated.emit(panel.level.currentIndex())
        await _wait_for(lambda: len(panel.log_view.toPlainText().splitlines()) >= 3,
                        "three log messages", timeout=60)
        save(panel, "04-mcp-servers-log.png")
        panel.servers.setCurrentRow(1)
        await asyncio.sleep(0.3)
        save(panel, "05-mcp-server-failed.png")
        panel.close()

        dialog = window.open_settings()
        assert dialog is not None
        await _wait_for(lambda: len(dialog.skills_box.switches) == 3, "the skills")
        dialog.resize(dialog.width(), 760)
        dialog.scroll_to(dialog.skills_box)
        await asyncio.sleep(0.3)
        save(dialog, "06-skills.png")
        dialog.close()
        await window.tools.aclose()
    return saved


def main(argv: list[str]) -> int:
    """Run each theme in its own process and print where the shots are."""
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0] if args else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if "--one" in argv:
        return _one(out, args[1])
    themes = ["dark"] if "--dark" in argv else ["light"] if "--light" in argv else \
        ["light", "dark"]
    with virtual_display():
        for theme in themes:
            subprocess.run([sys.executable, __file__, str(out), theme, "--one"], check=True,
                           timeout=600)
    return 0


def _one(out: Path, theme: str) -> int:
    """One theme, in this process."""
    with virtual_display(), tempfile.TemporaryDirectory() as data, \
            tempfile.TemporaryDirectory() as scratch:
        os.environ.update({"DESKTOP_AGENT_DATA_DIR": data, "QT_QPA_PLATFORM": "xcb",
                           "DESKTOP_AGENT_WORK_ROOT": str(Path(scratch) / "Desktop Agent")})
        from PySide6.QtWidgets import QApplication

        from desktop_agent.gui.app import create_application, finalize_async_generators_on
        from desktop_agent.gui.event_loop import GuiEventLoop
        from desktop_agent.gui.theme import set_preferences

        app = create_application(["screenshot"])
        assert isinstance(app, QApplication)
        app.setQuitOnLastWindowClosed(False)
        set_preferences(app, theme)
        loop = GuiEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop, finalize_async_generators_on(loop):
            saved = loop.run_until_complete(
                play(app, out, f"mcp-{theme}", Path(data), Path(scratch)))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
