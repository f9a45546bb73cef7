"""Look at the app running models itself: the Models window, a download, the banner, a reply.

Usage::

    python tests/e2e/screenshot_models.py [output_folder] [--light|--dark]

Like ``screenshot_window.py`` (whose virtual display it uses), each theme and size
(1200×800, 1024×640) runs in its own process over a throw-away data folder and home:
the Models window listing a library laid out as LM Studio and Ollama lay it out (with
a damaged file and the small model the app installs from PyPI); its Download page
with the best pick for this machine selected; a download in progress from the hub
double (tests/engine/hub_double.py); the first-run banner of a window with no server;
a conversation answered by SmolLM2 on the app's own llama.cpp, the server picker
listing it as "On this computer", and the banner after the engine was killed.
Saves ``models-<theme>-<size>-NN-<moment>.png``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "gui")]

from screenshot_window import SIZES, virtual_display  # noqa: E402

REPO = "bartowski/Mistral-Nemo-Instruct-2407-GGUF"
FILE = "Mistral-Nemo-Instruct-2407-Q4_K_M.gguf"


async def _wait_for(condition: Any, what: str, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the window did not reach the expected state: {what}")
        await asyncio.sleep(0.05)


async def play(app: Any, out: Path, prefix: str, size: tuple[int, int], home: Path) -> list[Path]:
    """Drive the window through the moments to look at, saving screenshots."""
    from engine.hub_double import HubDouble
    from engine.runner_fixtures import smollm2
    from models_driver import lay_out_library

    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.store import Store

    laid = lay_out_library(home, home.parent)
    saved: list[Path] = []

    def save(widget: Any, name: str) -> None:
        app.processEvents()
        path = out / f"{prefix}-{name}"
        widget.grab().save(str(path))
        saved.append(path)

    with HubDouble() as hub:
        os.environ["HF_ENDPOINT"] = hub.endpoint
        store = Store.open()
        window = MainWindow(store, discover_on_start=False)
        window.resize(*size)
        window.show()
        # No search: a server another program runs here must not hide the first run.
        window.catalog.searched = True
        window.servers.refresh_notices()
        await asyncio.sleep(0.3)
        save(window, "01-first-run-banner.png")

        tab = window.current_tab()
        tab.notice.run_local_button.click()
        await _wait_for(lambda: window.local_models.models_window is not None, "Models")
        models = window.local_models.models_window
        models.resize(*size)
        bridge = window.local_models.bridge
        small = home.parent / "small models"  # SmolLM2 from PyPI, as a folder a person adds
        small.mkdir()
        (small / smollm2().name).symlink_to(smollm2())
        bridge.add_folder(laid["folder"])
        await _wait_for(lambda: not bridge.scanning, "the library scan")
        bridge.add_folder(small)
        await _wait_for(lambda: not bridge.scanning, "the library scan")
        await asyncio.sleep(0.3)
        save(models, "02-download-page.png")

        padding = bytes(30 * 1024 * 1024)
        hub.add_file(REPO, FILE, (home.parent / "plain.gguf").read_bytes() + padding)
        hub.faults.pace = 0.05
        page = models.downloads
        page.repo_edit.setText(REPO)
        page.file_edit.setText(FILE)
        page.repo_button.click()
        bar = models.download_bar
        await _wait_for(lambda: bar.progress.value() > 0 and "left" in bar.figures.text(),
                        "download progress")
        await asyncio.sleep(0.5)
        save(models, "03-download-in-progress.png")
        bar.cancel_button.click()
        await _wait_for(bar.retry_button.isVisible, "the download cancelled")
        await asyncio.sleep(0.2)
        save(bar, "04-download-cancelled-bar.png")

        models.tabs.setCurrentWidget(models.library)
        models.library.select(laid["lm_studio"])
        await asyncio.sleep(0.2)
        save(models, "05-models-window.png")
        models.library.select(laid["cut"])
        await asyncio.sleep(0.2)
        save(models, "06-models-window-broken-file.png")

        models.library.select(small / smollm2().name)
        models.library.details.run_button.click()
        await _wait_for(lambda: bool(bridge.servers), "the engine")
        await asyncio.sleep(2.5)  # the memory figure is read every 2 s
        save(models, "07-models-window-running.png")
        models.close()

        controller = window.current_controller()
        # No tools: the 135M model would call them round after round (see the window
        # screenshots for tool cards); here the subject is the engine answering.
        controller.update_settings(temperature=0.0, max_tokens=80, tools=[],
                                   extra_body={"cache_prompt": False})
        controller.send("In two sentences: what can you help me with?")
        await _wait_for(lambda: not controller.busy, "the reply")
        await asyncio.sleep(0.5)
        save(window, "08-conversation-on-this-computer.png")

        picker = window.servers.open_server_picker()
        await asyncio.sleep(0.3)
        save(picker, "09-picker-on-this-computer.png")
        picker.reject()

        running = bridge.servers[0]
        os.kill(running.pid, signal.SIGKILL)
        await _wait_for(lambda: tab.notice.state == "engine_stopped", "the crash banner")
        await asyncio.sleep(0.3)
        save(window, "10-engine-killed-banner.png")

        window.close()
        await window.shutdown()
        store.close()
    return saved


def main(argv: list[str]) -> int:
    """Run each theme and size in its own process and print where the shots are."""
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0] if args else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if "--one" in argv:
        width, height = (int(n) for n in args[2].split("x"))
        return _one(out, args[1], (width, height))
    themes = ["dark"] if "--dark" in argv else ["light"] if "--light" in argv else \
        ["light", "dark"]
    with virtual_display():
        for theme in themes:
            for width, height in SIZES:
                subprocess.run([sys.executable, __file__, str(out), theme,
                                f"{width}x{height}", "--one"], check=True, timeout=1800)
    return 0


def _one(out: Path, theme: str, size: tuple[int, int]) -> int:
    """One theme at one size, in this process."""
    with virtual_display(), tempfile.TemporaryDirectory() as data, \
            tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        home.mkdir()
        os.environ.update({
            "DESKTOP_AGENT_DATA_DIR": data, "HOME": str(home),
            "DESKTOP_AGENT_WORK_ROOT": str(Path(scratch) / "Desktop Agent"),
            "HF_HOME": str(Path(scratch) / "hf"), "HF_HUB_DISABLE_TELEMETRY": "1",
            "QT_QPA_PLATFORM": "xcb"})
        for name in ("OLLAMA_MODELS", "HF_HUB_CACHE", "XDG_CACHE_HOME", "LLAMA_CACHE",
                     "HF_TOKEN", "DESKTOP_AGENT_BASE_URL", "DESKTOP_AGENT_MODEL"):
            os.environ.pop(name, None)
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
        prefix = f"models-{theme}-{size[0]}x{size[1]}"
        with loop, finalize_async_generators_on(loop):
            saved = loop.run_until_complete(play(app, out, prefix, size, home))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
