"""Tabs restored at start-up: only the tab that was current is built and shown.

The others wait in the background (no transcript yet) until the person shows
them, and restoring does not forget which tab was current, even if the app is
then killed before it can save on closing.
"""

from __future__ import annotations

from typing import Any

from window_driver import WAIT_MS

from desktop_agent.gui.window.window_state import OPEN_TABS_KEY


def seed_tabs(store: Any, count: int = 3) -> list[str]:
    ids = []
    for n in range(count):
        record = store.create_conversation(title=f"Conversation {n}")
        store.add_message(record.id, {"role": "user", "content": f"Question of {n}"})
        store.add_message(record.id, {"role": "assistant", "content": f"Answer of {n}"})
        ids.append(str(record.id))
    return ids


def test_only_the_tab_that_was_current_is_built_and_the_others_come_when_shown(
        qtbot: Any, make_window: Any, store: Any) -> None:
    ids = seed_tabs(store)
    store.set_setting(OPEN_TABS_KEY, {"ids": ids, "current": ids[-1]})

    window = make_window()

    shown = window.current_tab()
    assert shown.controller.conversation_id == ids[-1]
    assert shown.transcript.item_keys()  # its messages are on screen
    assert shown.transcript.item_text(shown.transcript.item_keys()[-1]).strip() == "Answer of 2"
    for conversation_id in ids[:-1]:  # the first tab added was not built on the way
        assert window.tab_for(conversation_id).transcript.rendered_item_count() == 0
    # Restoring kept the current tab of last time (a crash now would not lose it).
    assert store.get_setting(OPEN_TABS_KEY) == {"ids": ids, "current": ids[-1]}

    first = window.tab_for(ids[0])
    window.tabs.setCurrentWidget(first)
    qtbot.waitUntil(lambda: bool(first.transcript.item_keys()), timeout=WAIT_MS)
    assert first.transcript.item_text(first.transcript.item_keys()[-1]).strip() == "Answer of 0"
