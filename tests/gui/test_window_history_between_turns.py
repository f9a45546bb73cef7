"""The window: between turns a tab's conversation holds no copy of its history.

A tab kept open for hundreds of turns held its whole branch (every reply and
tool result) and the client's copy of it, so the window grew with every turn.
Now the conversation lets them go when a turn ends, as ``serve`` does; the
transcript keeps showing the turn, and the next turn reads the branch from the
store again and still sends the model the whole conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from window_driver import WAIT_MS, last_assistant_text, send, use_server, wait_idle

from desktop_agent.testing import script


def _holds_no_history(controller: Any) -> bool:
    session = controller.session
    return session._branch._loaded is None and (
        session.client is None or session.client.history == [])


def test_a_tab_holds_no_history_between_turns_and_the_next_turn_sends_it_whole(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["bash"], workdir=str(work), confirm_tools=False)
    resets: list[Any] = []
    controller.transcript_reset.connect(resets.append)
    server.enqueue(
        script.tool_calls([("bash", {"command": "seq 1 3 | sed 's/^/row /'"})], ids=["c1"]),
        script.text("Three rows."), script.text("Still three rows."))
    send(qtbot, window, "count")
    wait_idle(qtbot, controller)
    qtbot.waitUntil(lambda: "Three rows." in last_assistant_text(window), timeout=WAIT_MS)
    qtbot.wait(50)  # what the window does after the turn ended has run
    assert _holds_no_history(controller)
    assert controller.can_regenerate  # read from the store, not from a held branch

    send(qtbot, window, "and now?")
    wait_idle(qtbot, controller)
    qtbot.waitUntil(lambda: "Still three rows." in last_assistant_text(window), timeout=WAIT_MS)
    sent = server.requests[-1]["messages"]
    assert [m["role"] for m in sent if m["role"] != "system"] == [
        "user", "assistant", "tool", "assistant", "user"]
    assert "row 3" in next(m["content"] for m in sent if m["role"] == "tool")
    # The transcript was not rebuilt when the next turn read the branch again.
    assert resets == []
    texts = [window.current_tab().transcript.item_text(key)
             for key in window.current_tab().transcript.item_keys()]
    assert any("Three rows." in t for t in texts) and any("Still three rows." in t for t in texts)
    qtbot.wait(50)
    assert _holds_no_history(controller)


def test_another_process_writing_between_turns_still_shows(
        qtbot: Any, make_window: Any, server: Any, store: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.text("First answer."), script.text("Second answer."))
    send(qtbot, window, "first")
    wait_idle(qtbot, controller)
    assert _holds_no_history(controller)
    leaf = store.active_path(controller.conversation_id)[-1].id
    store.add_message(controller.conversation_id,
                      {"role": "user", "content": "written elsewhere"}, parent_id=leaf)
    store.add_message(controller.conversation_id,
                      {"role": "assistant", "content": "Answered elsewhere."},
                      parent_id=store.active_path(controller.conversation_id)[-1].id)
    send(qtbot, window, "second")
    wait_idle(qtbot, controller)
    qtbot.waitUntil(lambda: "Second answer." in last_assistant_text(window), timeout=WAIT_MS)
    contents = [m["content"] for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert contents == ["first", "First answer.", "written elsewhere", "Answered elsewhere.",
                        "second"]
    texts = [window.current_tab().transcript.item_text(key)
             for key in window.current_tab().transcript.item_keys()]
    assert any("Answered elsewhere." in t for t in texts)
