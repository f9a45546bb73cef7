"""A long conversation opens on its latest page and pages in the rest as the person scrolls up.

The window reads only the last page of the active branch when it opens a
conversation; scrolling to the top asks the store for the page before. The
model still gets the whole history on the next turn.
"""

from __future__ import annotations

from typing import Any

from window_driver import WAIT_MS, send, wait_idle

from desktop_agent.gui.conversation.conversation_controller import HISTORY_PAGE
from desktop_agent.testing import script

PAIRS = 260  # 520 messages: the first page plus two pages from the store


def seed(store: Any) -> str:
    record = store.create_conversation(title="Long conversation")
    for index in range(PAIRS):
        store.add_message(record.id, {"role": "user", "content": f"Question {index}"})
        store.add_message(record.id, {"role": "assistant", "content": f"Answer {index}"})
    return str(record.id)


def test_long_conversation_opens_at_the_end_and_pages_in_earlier_messages(
        qtbot: Any, make_window: Any, store: Any, server: Any) -> None:
    conversation_id = seed(store)
    all_ids = [r.id for r in store.active_path(conversation_id)]
    window = make_window()
    window.open_conversation(conversation_id)
    tab = window.tab_for(conversation_id)
    view = tab.transcript
    qtbot.waitUntil(lambda: bool(view.item_keys()), timeout=WAIT_MS)

    # The latest messages are on screen; only the last page was read.
    keys = view.item_keys()
    assert keys[-1] == all_ids[-1]
    assert view.item_text(keys[-1]).strip() == f"Answer {PAIRS - 1}"
    assert len(keys) <= HISTORY_PAGE < len(all_ids)
    assert keys == all_ids[-len(keys):]

    # Scrolling to the top brings in earlier messages, in order, up to the first.
    bar = view.verticalScrollBar()

    def at_the_top() -> bool:
        bar.setValue(0)
        first = view.item_keys()[0]
        return first == all_ids[0] and view.item_text(first).strip() == "Question 0"

    qtbot.waitUntil(at_the_top, timeout=60_000)
    assert view.item_keys() == all_ids

    # The next turn still sends the whole history.
    window.servers.use_server(tab.controller, server.base_url, "test-model", None, 8192)
    server.enqueue(script.text("Still here."))
    send(qtbot, window, "One more")
    wait_idle(qtbot, tab.controller)
    sent = server.requests[-1]["messages"]
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert users == [f"Question {i}" for i in range(PAIRS)] + ["One more"]
    assert [m["content"] for m in sent if m["role"] == "assistant"] == \
        [f"Answer {i}" for i in range(PAIRS)]
    assert [r.message["content"] for r in store.active_path(conversation_id)][-2:] == \
        ["One more", "Still here."]


def test_a_page_starts_at_a_user_message_so_tool_rounds_stay_whole(
        qtbot: Any, make_window: Any, store: Any) -> None:
    record = store.create_conversation(title="Tools")
    for index in range(HISTORY_PAGE):
        store.add_message(record.id, {"role": "user", "content": f"Weather {index}?"})
        call = {"id": f"c{index}", "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"}}
        store.add_message(record.id, {"role": "assistant", "content": "", "tool_calls": [call]})
        store.add_message(record.id, {"role": "tool", "tool_call_id": f"c{index}",
                                      "content": "sunny"})
        store.add_message(record.id, {"role": "assistant", "content": f"Sunny {index}."})
    window = make_window()
    window.open_conversation(record.id)
    controller = window.tab_for(record.id).controller
    page = controller.stored_messages(HISTORY_PAGE)
    assert page[0]["role"] == "user"
    earlier = controller.earlier_messages(page[0]["id"])
    assert earlier[0]["role"] == "user" and earlier[-1]["role"] == "assistant"
    whole = [m["id"] for m in controller.stored_messages()]
    assert [m["id"] for m in earlier + page] == whole[-len(earlier + page):]


def test_regenerating_in_a_long_conversation_shows_the_last_page_again(
        qtbot: Any, make_window: Any, store: Any, server: Any) -> None:
    conversation_id = seed(store)
    window = make_window()
    window.open_conversation(conversation_id)
    tab = window.tab_for(conversation_id)
    window.servers.use_server(tab.controller, server.base_url, "test-model", None, 8192)
    server.enqueue(script.text("A second answer."))
    assert tab.controller.regenerate()
    wait_idle(qtbot, tab.controller)
    view = tab.transcript
    view.flush()
    keys = view.item_keys()
    assert len(keys) <= HISTORY_PAGE
    assert view.item_text(keys[-1]).strip() == "A second answer."
    assert view.item_text(keys[-2]).strip() == f"Question {PAIRS - 1}"
    assert len(server.requests[-1]["messages"]) == 2 * PAIRS - 1
