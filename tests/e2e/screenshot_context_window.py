"""Screenshots of the context-window doctor: the warning banner, its fix, a cut reply, a refusal.

Run through ``screenshot_window.py`` (its virtual display, themes and sizes)::

    SCREENSHOT_ONLY=context-window python tests/e2e/screenshot_window.py OUT

Ollama is replayed from its documented shapes (``desktop_agent.testing.server_replays``);
the refusal is llama.cpp's 400 as the scripted server plays it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MODEL = "llama3.2:3b"


def _note(n: int, sentences: int = 80) -> str:
    return " ".join(f"Note {n}.{i}: the harbour keeps its boats in until the first frost."
                    for i in range(sentences))


async def play_context_window(app: Any, out: Path, prefix: str,
                              size: tuple[int, int]) -> list[Path]:
    """The banner before sending, after its one-click fix, a cut reply, a refused prompt."""
    from screenshot_window import _pause, _wait_for

    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script
    from desktop_agent.testing.server_replays import ReplayedOllama

    saved: list[Path] = []

    def save(widget: Any, name: str) -> None:
        app.processEvents()
        path = out / f"{prefix}-{name}"
        widget.grab().save(str(path))
        saved.append(path)

    async def talk(controller: Any, texts: list[str]) -> None:
        for text in texts:
            controller.send(text)
            await _wait_for(lambda: not controller.busy, "a reply")

    with ScriptedServer() as server:
        ollama = ReplayedOllama(server)
        ollama.add_model(MODEL, trained=131072)
        server.responder = lambda _body: script.text(
            "Noted. The harbour notes are kept; ask me about any of them.")
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog(include_builtin=False),
                            approval_timeout=300.0, discover_on_start=False)
        window.resize(*size)
        window.show()
        controller = window.current_controller()
        window.servers.use_server(controller, server.base_url, MODEL, None, None)
        controller.update_settings(max_tokens=256)
        await talk(controller, [_note(n) for n in range(4)])
        banner = window.current_tab()._built_parts().window_banner
        await _wait_for(banner.isVisible, "the warning banner")
        await _pause(0.3)
        save(window, "cw-01-banner.png")
        save(banner, "cw-02-banner-alone.png")

        banner.fix_button.click()
        await _wait_for(lambda: "now uses" in banner.message.text(), "the fix")
        await _pause(0.3)
        save(window, "cw-03-after-fix.png")

        # OLLAMA_CONTEXT_LENGTH=2048 behind the app's back: the next prompt is cut
        cut = window.new_conversation()
        ollama.default_context = 2048
        ollama.add_model("qwen2.5:7b", trained=32768)
        window.servers.use_server(cut, server.base_url, "qwen2.5:7b", None, None)
        cut.update_settings(max_tokens=256)
        await talk(cut, [_note(10, 60), _note(11, 60)])
        await _pause(0.3)
        save(window, "cw-04-cut-reply.png")

        with ScriptedServer() as llama:  # llama.cpp -c 2048: /props, then its 400
            llama.models = ["smollm2"]
            llama.routes[("GET", "/props")] = (200, {
                "default_generation_settings": {"n_ctx": 2048}, "total_slots": 1})
            llama.routes[("GET", "/v1/models")] = (200, {"object": "list", "data": [
                {"id": "smollm2", "owned_by": "llamacpp",
                 "meta": {"n_ctx": 2048, "n_ctx_train": 8192}}]})
            llama.max_prompt_tokens = 2048
            refused = window.new_conversation()
            window.servers.use_server(refused, llama.base_url, "smollm2", None, None)
            refused.update_settings(compaction="off", max_tokens=256)
            await talk(refused, [_note(20, 160)])
            await _pause(0.3)
            save(window, "cw-05-refused.png")
            await refused.close()

        window.tabs.setCurrentIndex(0)
        dialog = window.open_settings()
        if dialog is not None:
            await _wait_for(lambda: "tokens per request" in dialog.context_window.text(),
                            "the settings' window line")
            await _pause(0.2)
            save(dialog, "cw-06-settings.png")
            dialog.reject()

        window.close()
        await window.shutdown()
        store.close()
    return saved
