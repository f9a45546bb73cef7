"""Tabs restored at start-up: only the tab that was current is built and shown.

The others wait in the background, with no widgets yet, until the person shows
them or their conversation needs them (a turn, an error); restoring does not
forget which tab was current, even if the app is then killed before it can save
on closing.
"""

from __future__ import annotations

from typing import Any

from window_driver import WAIT_MS, last_assistant_text, wait_idle

from desktop_agent.gui.window.window_state import OPEN_TABS_KEY
from desktop_agent.testing import script


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
    for conversation_id in ids[:-1]:  # not even the first tab added, current for a moment
        assert not window.tab_for(conversation_id).built
    # Restoring kept the current tab of last time (a crash now would not lose it).
    assert store.get_setting(OPEN_TABS_KEY) == {"ids": ids, "current": ids[-1]}

    first = window.tab_for(ids[0])
    window.tabs.setCurrentWidget(first)
    qtbot.waitUntil(lambda: bool(first.transcript.item_keys()), timeout=WAIT_MS)
    assert first.transcript.item_text(first.transcript.item_keys()[-1]).strip() == "Answer of 0"


def test_a_background_tab_never_shown_streams_a_turn_and_shows_it_when_opened(
        qtbot: Any, make_window: Any, store: Any, server: Any) -> None:
    ids = seed_tabs(store, 2)
    store.set_setting(OPEN_TABS_KEY, {"ids": ids, "current": ids[-1]})
    window = make_window()
    background = window.tab_for(ids[0])
    assert not background.built
    controller = background.controller
    window.servers.use_server(controller, server.base_url, "test-model", None, 8192)
    assert not background.built  # choosing its server did not need its widgets

    server.enqueue(script.text("Streamed while hidden."))
    assert controller.send("Another question")
    wait_idle(qtbot, controller)
    assert background.built and not background.isVisible()

    window.tabs.setCurrentWidget(background)
    assert last_assistant_text(window, controller).strip() == "Streamed while hidden."
    keys = background.transcript.item_keys()
    assert [background.transcript.item_text(k).strip() for k in keys] == [
        "Question of 0", "Answer of 0", "Another question", "Streamed while hidden."]
    assert background.header.isVisible() and background.composer.isVisible()
    assert background.notice.isHidden()  # it has a server: no "choose a server" banner


def test_the_apps_window_paints_before_its_tabs_and_opens_them_right_after(
        qtbot: Any, make_window: Any, store: Any) -> None:
    """The app's window (``tabs_after_paint``) shows its chrome first, then the conversation."""
    from PySide6.QtWidgets import QPlainTextEdit

    ids = seed_tabs(store, 2)
    store.set_setting(OPEN_TABS_KEY, {"ids": ids, "current": ids[-1]})

    window = make_window(tabs_after_paint=True)
    # Before the first paint: no conversation yet, a message box that takes no typing.
    assert window.current_tab() is None
    waiting = window.findChild(QPlainTextEdit, "openingComposer")
    assert waiting is not None and waiting.isVisibleTo(window) and not waiting.isEnabled()
    assert not window.conversations_ready
    with qtbot.waitSignal(window.conversations_shown, timeout=WAIT_MS):
        pass  # the first paint happens, and the tabs open in the turn after it
    shown = window.current_tab()
    assert shown is not None and shown.controller.conversation_id == ids[-1]
    assert shown.transcript.item_text(shown.transcript.item_keys()[-1]).strip() == "Answer of 1"
    assert shown.composer.isEnabled()
    qtbot.waitUntil(lambda: window.findChild(QPlainTextEdit, "openingComposer") is None,
                    timeout=WAIT_MS)  # the page held the conversation's place, and went
    assert not window.tab_for(ids[0]).built  # background tabs still wait to be shown
    assert store.get_setting(OPEN_TABS_KEY) == {"ids": ids, "current": ids[-1]}


def test_a_window_closed_before_its_tabs_opened_keeps_them_for_the_next_start(
        qtbot: Any, make_window: Any, store: Any) -> None:
    ids = seed_tabs(store, 2)
    store.set_setting(OPEN_TABS_KEY, {"ids": ids, "current": ids[0]})
    window = make_window(tabs_after_paint=True)
    window.close()  # before the event loop ran: the tabs were never reopened
    qtbot.wait(50)
    assert window.current_tab() is None
    assert store.get_setting(OPEN_TABS_KEY) == {"ids": ids, "current": ids[0]}
    again = make_window()
    assert again.current_tab().controller.conversation_id == ids[0]
