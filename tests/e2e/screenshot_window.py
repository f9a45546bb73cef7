"""Look at the real window: run a scripted conversation under Xvfb and save screenshots.

Usage::

    python tests/e2e/screenshot_window.py [output_folder] [--dark]

Starts a virtual X display (``Xvfb``; ``apt-get install -y xvfb``) unless
``DISPLAY`` is already set, opens the real main window with the xcb platform
over a throw-away data folder, and plays a scripted conversation against a
local scripted model server: a streamed markdown answer, a tool call waiting
in the Approvals dock, the approved result, and a dropped connection with its
Retry. A PNG is saved at each of those moments (``01-streaming.png`` ...).
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


async def _wait_for(condition: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the window did not reach the expected state: {what}")
        await asyncio.sleep(0.02)


async def play(app: Any, out: Path) -> list[Path]:
    """Drive the window through the scripted conversation, saving screenshots."""
    from desktop_agent.core.tools import tool
    from desktop_agent.gui.main_window import MainWindow
    from desktop_agent.session.tools import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script

    @tool("read_file", "Read a text file in the work folder", {"path": str}, read_only=True)
    async def read_file(args: dict[str, Any]) -> str:
        return "def interrupt(self):\n    ...\n"

    saved: list[Path] = []

    def shot(name: str) -> None:
        app.processEvents()
        path = out / name
        window.grab().save(str(path))
        saved.append(path)

    with ScriptedServer() as server:
        server.models = ["qwen2.5-7b-instruct", "llama-3.1-8b"]
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog([read_file], include_builtin=False),
                            approval_timeout=300.0, discover_on_start=False)
        window.resize(1360, 860)
        window.show()
        controller = window.current_controller()
        window.use_server(controller, server.base_url, "qwen2.5-7b-instruct", None, 32768)
        shot("00-empty.png")

        server.enqueue(script.text(ANSWER, pieces=120, delay=0.03))
        controller.send("How should we refactor the client?")
        tab = window.current_tab()
        await _wait_for(lambda: "Effort" in " ".join(
            tab.transcript.item_text(k) for k in tab.transcript.item_keys()), "streaming")
        shot("01-streaming.png")
        await _wait_for(lambda: not controller.busy, "the first answer")
        shot("02-answer.png")

        server.enqueue(script.tool_calls([("read_file", {"path": "desktop_agent/core/client.py"})],
                                         text_before="Let me look at the file first."),
                       script.text("The interrupt method only sets a flag; the reader task "
                                   "is cancelled by `interrupt()`."))
        controller.send("Check how interrupt works in client.py")
        await _wait_for(lambda: bool(window.approvals.pending()), "the approval request")
        await _pause(0.3)
        shot("03-approval-pending.png")
        window.approval_dock.allow_once()
        await _wait_for(lambda: not controller.busy, "the tool turn")
        shot("04-tool-result.png")

        server.enqueue(script.dropped("Streaming was going fine until"))
        controller.send("And what happens when the server goes away?")
        await _wait_for(lambda: not controller.busy, "the dropped reply")
        await _pause(0.2)
        shot("05-error.png")

        window.open_settings()
        await _pause(0.3)
        for widget in app.topLevelWidgets():
            if widget.objectName() == "conversationSettings" and widget.isVisible():
                widget.grab().save(str(out / "06-settings.png"))
                saved.append(out / "06-settings.png")
                widget.reject()
        picker = window.open_server_picker()
        window.catalog.preselection.base_url = server.base_url
        window.catalog.add_custom(server.base_url)
        await _wait_for(lambda: window.catalog.searched and not window.catalog.searching,
                        "server discovery")
        await _pause(0.3)
        picker.grab().save(str(out / "07-server-picker.png"))
        saved.append(out / "07-server-picker.png")
        picker.reject()

        window.close()
        await window.shutdown()
        store.close()
    return saved


def main(argv: list[str]) -> int:
    """Run the scripted session and print where the screenshots are."""
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0] if args else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if "--dark" in argv:
        os.environ["DESKTOP_AGENT_THEME"] = "dark"
    with virtual_display(), tempfile.TemporaryDirectory() as data:
        os.environ["DESKTOP_AGENT_DATA_DIR"] = data
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        from PySide6.QtWidgets import QApplication

        from desktop_agent.gui.app import create_application, finalize_async_generators_on

        app = create_application(["screenshot"])
        assert isinstance(app, QApplication)
        app.setQuitOnLastWindowClosed(False)
        import qasync

        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop, finalize_async_generators_on(loop):
            saved = loop.run_until_complete(asyncio.wait_for(play(app, out), 120))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
