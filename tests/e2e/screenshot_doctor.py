"""Look at the model doctor in the real window under Xvfb: its banners and *Test this model*.

Usage::

    python tests/e2e/screenshot_doctor.py [output_folder] [--dark | --light]

Plays a scripted llama.cpp (``/props``; ``/apply-template`` rendering the same
prompt with and without tools, as SmolLM2's own template does; llama.cpp's
``timings``) and saves, per theme at 1200×800: the banner of a template without
tools, the banner of a slow fixed prompt with what helps, and Conversation
settings after *Test this model* with the measured result.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from screenshot_window import _pause, _wait_for, virtual_display

WANTED = {"What is the weather in Paris?": ("get_weather", {"city": "Paris"}),
          "What time is it in Tokyo?": ("get_time", {"city": "Tokyo"}),
          "Use the add tool to add 2 and 3.": ("add", {"a": 2, "b": 3})}


def _calls_when_held(body: dict[str, Any]) -> Any:
    from desktop_agent.testing import script

    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    wanted = WANTED.get(prompt)
    if "response_format" not in body:
        return script.text("Bonjour")
    return script.text(json.dumps({"name": wanted[0], "arguments": wanted[1]} if wanted
                                  else {"answer": "Bonjour"}))


def _slow_reply(text: str) -> Any:
    from desktop_agent.testing import script
    from desktop_agent.testing.script import ChunkFactory

    f = ChunkFactory()
    last = f.usage(1240, 30).data
    last["timings"] = {"prompt_n": 1240, "cache_n": 0, "prompt_per_second": 38.0,
                       "predicted_per_second": 18.0}
    return script.from_chunks([f.delta({"role": "assistant", "content": text}).data,
                               f.finish("stop").data, last])


async def play(app: Any, out: Path, prefix: str) -> list[Path]:
    from desktop_agent.core.tooling.builtin import builtin_tools
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script

    saved: list[Path] = []

    def save(widget: Any, name: str) -> None:
        app.processEvents()
        path = out / f"{prefix}-{name}"
        widget.grab().save(str(path))
        saved.append(path)

    # The app's own tool list: built-in file tools (the person's SmolLM2 case).
    tools = builtin_tools(tempfile.mkdtemp())
    with ScriptedServer() as server:
        server.models = ["smollm2"]
        server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 8192}})
        server.routes[("POST", "/apply-template")] = (200, {"prompt": "<|im_start|>user\nx"})
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog(tools, include_builtin=False),
                            approval_timeout=300.0, discover_on_start=False)
        window.resize(1200, 800)
        window.show()
        controller = window.current_controller()
        window.servers.use_server(controller, server.base_url, "smollm2", None, 8192)
        await _pause(0.2)

        server.enqueue(script.text('{"answer": "I cannot check the weather, but Paris is often '
                                   'mild in spring."}'))
        server.responder = _calls_when_held
        controller.send("What is the weather in Paris?")
        tab = window.current_tab()
        await _wait_for(lambda: tab.doctor.isVisible(), "the template banner")
        await _wait_for(lambda: not controller.busy, "the first answer")
        await _pause(0.3)
        save(window, "01-doctor-template-without-tools.png")

        # A second conversation on a server whose template renders tools, with a long
        # fixed prompt: the slow-prompt banner.
        del server.routes[("POST", "/apply-template")]
        from desktop_agent.core.tooling import tool_call_mode

        tool_call_mode.forget()
        second = window.new_conversation()
        window.servers.use_server(second, server.base_url, "smollm2", None, 8192)
        second.update_settings(system_prompt="You are a careful coding assistant. " * 60)
        server.enqueue(_slow_reply('{"answer": "Hello! How can I help with your project?"}'))
        second.send("Hello")
        tab = window.current_tab()
        await _wait_for(lambda: tab.doctor.kind == "slow_prompt", "the slow-prompt banner")
        await _wait_for(lambda: not second.busy, "the slow answer")
        await _pause(0.3)
        save(window, "02-doctor-slow-prompt.png")

        dialog = window.open_settings()
        dialog.test_model_button.click()
        await _wait_for(lambda: dialog.probe_result.text().startswith("Measured: native"),
                        "the probe's result", timeout=60)
        await _wait_for(lambda: "measured" in dialog.tool_call_mode.text(), "the mode")
        await _pause(0.3)
        save(dialog, "03-doctor-test-this-model.png")
        dialog.reject()
        window.close()
        await _pause(0.3)
    return saved


def _one(out: Path, theme: str) -> int:
    with virtual_display(), tempfile.TemporaryDirectory() as data, \
            tempfile.TemporaryDirectory() as home:
        os.environ["DESKTOP_AGENT_DATA_DIR"] = data
        os.environ["DESKTOP_AGENT_WORK_ROOT"] = str(Path(home) / "Desktop Agent")
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        from desktop_agent.gui.app import create_application, finalize_async_generators_on
        from desktop_agent.gui.event_loop import GuiEventLoop
        from desktop_agent.gui.theme import set_preferences

        app = create_application(["screenshot"])
        app.setQuitOnLastWindowClosed(False)
        set_preferences(app, theme)
        loop = GuiEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop, finalize_async_generators_on(loop):
            saved = loop.run_until_complete(asyncio.wait_for(play(app, out, theme), 120))
    for path in saved:
        print(path)
    return 0


def main(argv: list[str]) -> int:
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
                           timeout=300)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
