"""Sending, streaming, stopping, and several tabs at once, in the real window."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, last_assistant_text, send, use_server, wait_idle

from desktop_agent.testing import script

LONG_ANSWER = " ".join(f"word{i}" for i in range(60))


def test_answer_grows_in_the_transcript_while_it_streams(qtbot: Any, make_window: Any,
                                                         server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    hint = window.current_tab().empty_hint
    assert hint.isVisible() and "Start the conversation with test-model" in hint.text()
    assert not window.menu_actions.regenerate_action.isEnabled()
    server.enqueue(script.text(LONG_ANSWER, pieces=40, delay=0.04))
    send(qtbot, window, "Tell me something long")
    assert not hint.isVisible()

    seen: list[str] = []

    def grew_to_the_end() -> bool:
        text = last_assistant_text(window)
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        return "word59" in text and not controller.busy

    qtbot.waitUntil(grew_to_the_end, timeout=WAIT_MS)
    partial = [t for t in seen if "word59" not in t]
    assert len(partial) >= 3, f"the answer did not grow piece by piece: {seen}"
    assert all(len(a) < len(b) for a, b in zip(seen, seen[1:], strict=False))
    assert window.current_tab().composer.toPlainText() == ""
    stored = controller.stored_messages()
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["message"]["content"] == LONG_ANSWER
    assert stored[1]["status"] == "complete"
    assert server.requests[0]["messages"][-1]["content"] == "Tell me something long"
    assert controller.title == "Tell me something long"
    assert "Tell me something long" in window.tabs.tabText(window.tabs.currentIndex())
    status = window.current_tab().status_line
    assert status.model_label.text() == "Model: test-model"
    assert "tok/s" in status.speed_label.text() and "—" not in status.speed_label.text()
    assert "/ 8,192" in status.context_label.text()
    assert window.menu_actions.regenerate_action.isEnabled()


def test_escape_stops_a_long_reply_and_keeps_the_partial_text(qtbot: Any, make_window: Any,
                                                              server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.text(" ".join(f"w{i}" for i in range(400)), pieces=400, delay=0.02))
    send(qtbot, window, "Go on forever")
    qtbot.waitUntil(lambda: "w5" in last_assistant_text(window), timeout=WAIT_MS)
    assert controller.busy
    qtbot.keyClick(window.current_tab().composer, Qt.Key.Key_Escape)
    wait_idle(qtbot, controller)
    reply = controller.stored_messages()[-1]
    assert reply["role"] == "assistant"
    assert reply["status"] == "interrupted"
    assert reply["message"]["content"].startswith("w0 w1")
    assert "w399" not in reply["message"]["content"]
    shown = last_assistant_text(window)
    assert shown.startswith("w0 w1") and "w399" not in shown
    # The window is usable again: the next message gets an answer.
    server.enqueue(script.text("Still here"))
    send(qtbot, window, "Are you there?")
    qtbot.waitUntil(lambda: "Still here" in last_assistant_text(window), timeout=WAIT_MS)


def test_two_tabs_stream_at_the_same_time(qtbot: Any, make_window: Any, server: Any) -> None:
    window = make_window()
    first = use_server(window, server)
    second = window.new_conversation()
    use_server(window, server)

    def reply(body: dict[str, Any]) -> Any:
        letter = "a" if body["messages"][-1]["content"] == "first tab" else "b"
        return script.text(" ".join(f"{letter}{i}" for i in range(60)), pieces=60, delay=0.05)

    server.responder = reply
    window.tabs.setCurrentWidget(window.tab_for(first.conversation_id))
    send(qtbot, window, "first tab")
    window.tabs.setCurrentWidget(window.tab_for(second.conversation_id))
    send(qtbot, window, "second tab")
    # Both replies are on screen and growing at the same moment.
    qtbot.waitUntil(lambda: first.busy and second.busy and
                    "a3" in last_assistant_text(window, first) and
                    "b3" in last_assistant_text(window, second), timeout=WAIT_MS)
    wait_idle(qtbot, first)
    wait_idle(qtbot, second)
    assert "a59" in last_assistant_text(window, first)
    assert "b59" in last_assistant_text(window, second)
    assert "b1" not in last_assistant_text(window, first)


def test_stop_before_the_first_token_cancels_cleanly(qtbot: Any, make_window: Any,
                                                     server: Any) -> None:
    from desktop_agent.testing.script import Pause, Script

    window = make_window()
    controller = use_server(window, server)
    slow = script.text("late answer")
    server.enqueue(Script([Pause(5.0), *slow.steps]))
    send(qtbot, window, "Slow one")
    qtbot.wait(200)
    assert controller.busy
    window.menu_actions.stop_action.trigger()
    wait_idle(qtbot, controller)
    assert [m["role"] for m in controller.stored_messages()] == ["user"]
    assert window.current_tab().send_button.isEnabled()


def test_a_streaming_reply_is_checkpointed_to_disk_while_it_grows(
        qtbot: Any, make_window: Any, server: Any, data_dir: Any) -> None:
    from desktop_agent.store import Store

    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.text(" ".join(f"c{i}" for i in range(80)), pieces=80, delay=0.05))
    send(qtbot, window, "Stream slowly")
    qtbot.waitUntil(lambda: "c12" in last_assistant_text(window), timeout=WAIT_MS)
    reader = Store.open(data_dir / "conversations.sqlite3", recover=False)
    try:
        # Another connection (as after a crash) sees the partial reply on disk.
        qtbot.waitUntil(lambda: "c10" in (reader.active_path(
            controller.conversation_id)[-1].message.get("content") or ""), timeout=WAIT_MS)
        partial = reader.active_path(controller.conversation_id)[-1]
        assert partial.status == "streaming"
        assert "c79" not in partial.message["content"]
        wait_idle(qtbot, controller)
        final = reader.active_path(controller.conversation_id)[-1]
        assert final.status == "complete" and final.message["content"].endswith("c79")
    finally:
        reader.close()


def test_switching_model_mid_conversation_keeps_the_history(qtbot: Any, make_window: Any,
                                                            server: Any) -> None:
    server.models = ["test-model", "bigger-model"]
    window = make_window()
    controller = use_server(window, server)
    send(qtbot, window, "First question")
    wait_idle(qtbot, controller)
    use_server(window, server, model="bigger-model")
    send(qtbot, window, "Second question")
    wait_idle(qtbot, controller)
    assert [r["model"] for r in server.requests] == ["test-model", "bigger-model"]
    assert [m["content"] for m in server.requests[-1]["messages"]] == [
        "First question", "You said: First question", "Second question"]
    assert window.current_tab().status_line.model_label.text() == "Model: bigger-model"
