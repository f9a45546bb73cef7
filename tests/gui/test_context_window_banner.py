"""The window warns, before sending, when a conversation outgrows its server's window, and fixes it.

Ollama is replayed from its documented shapes (``desktop_agent.testing.server_replays``).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, use_server, wait_idle

from desktop_agent.testing import script
from desktop_agent.testing.server_replays import ReplayedOllama

MODEL = "llama3.2:3b"


def note(n: int, sentences: int = 80) -> str:
    """About 17 tokens a sentence of plain text."""
    return " ".join(f"Note {n}.{i}: the harbour keeps its boats in until the first frost."
                    for i in range(sentences))


def ollama_window(make_window: Any, server: Any, default_context: int = 4096) -> tuple[Any, Any]:
    ollama = ReplayedOllama(server, default_context=default_context)
    ollama.add_model(MODEL, trained=131072)
    server.responder = lambda _body: script.text("Noted.")
    window = make_window()
    controller = use_server(window, server, MODEL)
    controller.update_settings(max_tokens=256)
    return window, controller


def talk(qtbot: Any, controller: Any, notes: list[str]) -> None:
    for text in notes:
        assert controller.send(text)
        wait_idle(qtbot, controller)


def test_the_banner_warns_and_one_click_makes_a_larger_ollama_model(
        qtbot: Any, make_window: Any, server: Any) -> None:
    window, controller = ollama_window(make_window, server)
    tab = window.current_tab()
    banner = tab._built_parts().window_banner
    talk(qtbot, controller, [note(0)])
    assert not banner.isVisible()  # it fits: nothing to say
    talk(qtbot, controller, [note(n) for n in range(1, 4)])
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    text = banner.message.text()
    assert "runs llama3.2:3b with a 4,096-token window" in text
    assert "default" in banner.message.toolTip()
    assert "Older messages are summarised" in text
    assert banner.fix_button.text() == "Make llama3.2:3b-ctx16k"
    # the meter is sized by the applied window, and says where it came from
    status = tab.status_line
    assert "/ 4,096" in status.context_label.text()
    assert "Ollama" in status.context_label.toolTip()
    assert max(server.prompt_tokens) <= 4096

    qtbot.mouseClick(banner.fix_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: controller.settings["model"] == "llama3.2:3b-ctx16k",
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "now uses llama3.2:3b-ctx16k" in banner.message.text(),
                    timeout=WAIT_MS)
    assert banner.badge.property("badge") == "check"  # done: no longer a warning
    # the meter knows the new model's window before anything is sent
    qtbot.waitUntil(lambda: "/ 16,384" in status.context_label.text(), timeout=WAIT_MS)
    assert "num_ctx" in status.context_label.toolTip()
    assert "llama3.2:3b-ctx16k" in window.statusBar().currentMessage()
    talk(qtbot, controller, ["And now?"])
    qtbot.waitUntil(lambda: not banner.isVisible(), timeout=WAIT_MS)
    assert "/ 16,384" in status.context_label.text()
    settled(qtbot, server, MODEL, "llama3.2:3b-ctx16k")


def settled(qtbot: Any, server: Any, *models: str) -> None:
    """Let the model doctor's background tool-call probe of each model end (it asks Ollama)."""
    from desktop_agent.core.tooling.tool_call_probe import running

    qtbot.waitUntil(lambda: not any(running(server.base_url, m) for m in models),
                    timeout=WAIT_MS)


def test_a_reply_whose_prompt_was_cut_is_marked_and_stays_marked(
        qtbot: Any, make_window: Any, server: Any) -> None:
    """OLLAMA_CONTEXT_LENGTH=2048, which no endpoint reports: Ollama cuts without a word."""
    window, controller = ollama_window(make_window, server, default_context=2048)
    talk(qtbot, controller, [note(0, 60), note(1, 60)])
    view = window.current_tab().transcript
    view.flush()
    marked = [k for k in view.item_keys() if "cut the prompt to" in view.item_text(k)]
    assert len(marked) == 1 and marked[0] == view.item_keys()[-1]
    # the meter is sized by the window the cut showed
    status = window.current_tab().status_line
    assert "/ 4,096" not in status.context_label.text()
    assert "learned from a cut prompt" in status.context_label.toolTip()
    # and shows the conversation over it: what was sent, not the part the server kept
    used, length = (int(n.replace(",", "")) for n in
                    status.context_label.text().removeprefix("context ").split(" / "))
    assert used > 1.5 * length
    # opened again from the store, the mark is where it was
    view.load_messages(controller.stored_messages())
    view.flush()
    assert [k for k in view.item_keys() if "cut the prompt to" in view.item_text(k)] == [
        view.item_keys()[-1]]
    settled(qtbot, server, MODEL)


def test_settings_say_where_the_window_came_from(qtbot: Any, make_window: Any,
                                                 server: Any) -> None:
    window, _controller = ollama_window(make_window, server)
    dialog = window.open_settings()
    qtbot.waitUntil(lambda: "tokens per request" in dialog.context_window.text(),
                    timeout=WAIT_MS)
    shown = dialog.context_window.text()
    assert shown.startswith("4,096 tokens per request, from Ollama")
    assert "trained for 131,072" in shown
    dialog.reject()
