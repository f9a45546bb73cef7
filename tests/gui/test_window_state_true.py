"""The window's state is always true: regressions found trying the app as a new user.

Each test drives the real window (pytest-qt, offscreen) and failed before its fix.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from window_driver import WAIT_MS, send, use_server

from desktop_agent.testing import script

#: The first turn loads the model client; on a loaded 2-core machine that alone took 10 s.
TURN_MS = 60_000


def wait_idle(qtbot: Any, controller: Any) -> None:
    """Wait until the conversation's turn has ended (however busy the machine is)."""
    qtbot.waitUntil(lambda: not controller.busy, timeout=TURN_MS)


def _background(widget: Any) -> QColor:
    """The colour the widget shows in its middle, as painted."""
    image = widget.grab().toImage()
    return image.pixelColor(image.width() // 2, image.height() - 4)


def test_choosing_dark_turns_open_and_new_transcripts_dark_at_once(
        qtbot: Any, make_window: Any, server: Any) -> None:
    from desktop_agent.gui.window.preferences import Preferences

    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.text("Hello in light."))
    send(qtbot, window, "Hi")
    wait_idle(qtbot, controller)
    transcript = window.current_tab().transcript
    assert not transcript.theme.dark and _background(transcript.viewport()).lightness() > 180
    window.chrome.apply_preferences(Preferences(theme="dark"))
    try:
        qtbot.waitUntil(lambda: transcript.theme.dark, timeout=WAIT_MS)
        assert _background(transcript.viewport()).lightness() < 80
        window.new_conversation()
        fresh = window.current_tab().transcript
        assert fresh is not transcript
        assert fresh.theme.dark and _background(fresh.viewport()).lightness() < 80
        # and back to light, without a restart either
        window.chrome.apply_preferences(Preferences(theme="light"))
        qtbot.waitUntil(lambda: not transcript.theme.dark and not fresh.theme.dark,
                        timeout=WAIT_MS)
        assert _background(transcript.viewport()).lightness() > 180
    finally:
        window.chrome.apply_preferences(Preferences())


def _answer_requests(qtbot: Any, window: Any, answer: Any, count: int) -> None:
    """Answer ``count`` approval requests, each with ``answer(dock, request)``."""
    for _ in range(count):
        qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
        dock = window.approval_dock
        request = dock.current_request()
        assert answer(dock, request)


def _card_states(window: Any) -> list[tuple[Any, ...]]:
    """Every tool card as a person sees it, and the lines between them, in order."""
    from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
    from desktop_agent.gui.transcript.tool_card import ToolCard

    view = window.current_tab().transcript
    view.flush()
    states: list[tuple[Any, ...]] = []
    for key in view.item_keys():
        widget = view.item_widget(key)
        if not isinstance(widget, AssistantMessageWidget):
            continue
        for part in widget.body_widgets():
            if isinstance(part, ToolCard):
                # (folded or not is the person's choice; what the card holds is the state)
                shown = None if part._output_panel.isHidden() else part._output_label.text()
                states.append(("card", part.tool_name, part.detail_label.text(), shown,
                               part.output_text, part._arguments_label.text(),
                               part.arguments_text, part.is_error))
        states.append(("turn", widget.plain_text()))
    return states


def test_a_reopened_conversation_shows_every_call_as_it_was_shown_live(
        qtbot: Any, make_window: Any, server: Any, weather: Any, tmp_path: Any) -> None:
    import asyncio

    from desktop_agent.core.tooling.tools import tool

    started = asyncio.Event()

    @tool("slow_job", "A job that runs until stopped", {})
    async def slow_job(args: dict[str, Any]) -> str:
        started.set()
        await asyncio.sleep(120)
        return "finished"

    work = tmp_path / "work"
    work.mkdir()
    window = make_window(tools=[weather.build(), slow_job], builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["get_weather", "slow_job", "list_dir"],
                               workdir=str(work))

    # allowed, denied (with a reason) and edited, in one reply
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"}),
                                      ("get_weather", {"city": "Rome"}),
                                      ("get_weather", {"city": "Oslo"})]),
                   script.text("Weather done."))
    send(qtbot, window, "Weather in three cities")

    def decide(dock: Any, request: Any) -> bool:
        city = request.tool_input["city"]
        if city == "Rome":
            dock.set_reason("not Rome today")
            return bool(dock.deny())
        if city == "Oslo":
            dock.set_arguments_text('{"city": "Lyon"}')
        return bool(dock.allow_once())

    _answer_requests(qtbot, window, decide, 3)
    wait_idle(qtbot, controller)

    # failed: a built-in tool's error, in words
    server.enqueue(script.tool_calls([("list_dir", {"path": "nope"})]),
                   script.text("That folder is missing."))
    send(qtbot, window, "List nope")
    qtbot.waitUntil(lambda: not controller.busy or bool(window.approvals.pending()),
                    timeout=WAIT_MS)
    if window.approvals.pending():
        window.approval_dock.allow_once()
    wait_idle(qtbot, controller)

    # the loop guard: the third identical call is answered with a correction, the fourth stops
    for _ in range(4):
        server.enqueue(script.tool_calls([("get_weather", {"city": "Bern"})]))
    send(qtbot, window, "Bern, again and again")
    _answer_requests(qtbot, window, lambda dock, _r: dock.allow_once(), 2)
    wait_idle(qtbot, controller)

    # expired: nobody answers in time
    controller.session.broker.timeout = 0.3
    server.enqueue(script.tool_calls([("get_weather", {"city": "Wien"})]),
                   script.text("Nobody answered."))
    send(qtbot, window, "Wien?")
    wait_idle(qtbot, controller)
    controller.session.broker.timeout = 60.0

    # interrupted: Stop while the call runs
    server.enqueue(script.tool_calls([("slow_job", {})]))
    send(qtbot, window, "Run the job")
    _answer_requests(qtbot, window, lambda dock, _r: dock.allow_once(), 1)
    qtbot.waitUntil(started.is_set, timeout=WAIT_MS)
    controller.stop()
    wait_idle(qtbot, controller)

    live = _card_states(window)
    cards = [state for state in live if state[0] == "card"]
    statuses = [(name, status) for _k, name, status, *_rest in cards]
    assert statuses == [
        ("get_weather", "done"), ("get_weather", "denied"), ("get_weather", "done"),
        ("list_dir", "builtin · failed"),
        ("get_weather", "done"), ("get_weather", "done"), ("get_weather", "not executed"),
        ("get_weather", "not executed"), ("get_weather", "expired"), ("slow_job", "stopped")],\
        statuses
    denied, edited, failed = cards[1], cards[2], cards[3]
    assert denied[3] == "Told the model" and "not Rome today" in denied[4]
    assert edited[5] == "Arguments (edited before it ran)" and '"Lyon"' in edited[6]
    assert "BuiltinToolError" not in failed[4] and failed[4].startswith("list_dir failed: ")
    turns = " ".join(state[1] for state in live if state[0] == "turn")
    assert "Stopped by the loop guard: get_weather was called 3 times in a row" in turns
    assert "(identical calls)" in turns

    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=WAIT_MS)
    again = make_window(tools=[weather.build(), slow_job], builtin=True)
    qtbot.waitUntil(lambda: again.current_controller() is not None, timeout=WAIT_MS)
    assert again.current_controller().conversation_id == controller.conversation_id
    again.current_tab().ensure_loaded()
    view = again.current_tab().transcript

    def scrolled_to_the_top() -> bool:  # it opens with only what fills the view built
        view.verticalScrollBar().setValue(0)
        return all(view.item_widget(key) is not None for key in view.item_keys())

    qtbot.waitUntil(scrolled_to_the_top, timeout=WAIT_MS)
    reopened = _card_states(again)
    assert reopened == live


def test_the_status_line_shows_the_speed_of_the_reply_as_it_streams(
        qtbot: Any, make_window: Any, server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    status = window.current_tab().status_line
    server.enqueue(script.text("fast " * 20, pieces=20))
    send(qtbot, window, "First")
    wait_idle(qtbot, controller)
    before = status.speed_label.text()
    # a slow reply: about 25 tokens a second, well below the first one's speed
    server.enqueue(script.text(" ".join(f"w{i}" for i in range(120)), pieces=120, delay=0.04))
    send(qtbot, window, "Second")
    qtbot.waitUntil(lambda: "streaming now" in status.speed_label.toolTip()
                    or not controller.busy, timeout=TURN_MS)
    assert controller.busy, f"no live speed while the reply streamed (showed {before!r})"
    live = float(status.speed_label.text().split()[0])
    assert 2 < live < 60, live  # about 25 a second, as the server sends them
    controller.stop()
    wait_idle(qtbot, controller)


def test_switching_tabs_leaves_one_sidebar_row_highlighted(
        qtbot: Any, make_window: Any, server: Any) -> None:
    window = make_window()
    first = use_server(window, server)
    server.enqueue(script.text("One."), script.text("Two."))
    send(qtbot, window, "First conversation")
    wait_idle(qtbot, first)
    second = window.new_conversation()
    window.servers.use_server(second, server.base_url, "test-model", None, 8192)
    send(qtbot, window, "Second conversation")
    wait_idle(qtbot, second)
    sidebar = window.sidebar
    sidebar.refresh()
    # switching with the keyboard holds Ctrl (Ctrl+Tab)
    for controller in (first, second, first):
        qtbot.keyPress(window.tabs, Qt.Key.Key_Control)
        qtbot.keyClick(window.tabs, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda c=controller: window.current_controller() is c, timeout=WAIT_MS)
        lit = sidebar.selected_ids()
        qtbot.keyRelease(window.tabs, Qt.Key.Key_Control)
        assert lit == [controller.conversation_id], lit
        sidebar.refresh()  # as its timer does while turns end and titles change
        assert sidebar.selected_ids() == [controller.conversation_id]


def test_preferences_and_conversation_settings_each_have_a_shortcut_listed_in_the_sheet(
        qtbot: Any, make_window: Any) -> None:
    from desktop_agent.gui.conversation.settings_dialog import ConversationSettingsDialog
    from desktop_agent.gui.window.preferences_dialog import PreferencesDialog

    window = make_window()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: any(d.isVisible() for d in window.findChildren(PreferencesDialog)),
                    timeout=WAIT_MS)
    assert not any(d.isVisible() for d in window.findChildren(ConversationSettingsDialog))
    for dialog in window.findChildren(PreferencesDialog):
        dialog.reject()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Comma,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: any(d.isVisible()
                                for d in window.findChildren(ConversationSettingsDialog)),
                    timeout=WAIT_MS)
    for dialog in window.findChildren(ConversationSettingsDialog):
        dialog.reject()
    rows = dict(window.chrome.shortcut_rows())
    assert rows["Preferences…"] == "Ctrl+,"
    assert rows["Conversation settings…"] == "Ctrl+Shift+,"
    keys = [keys for _name, keys in window.chrome.shortcut_rows()]
    assert len(keys) == len(set(keys)), "two actions share a shortcut"


def _composer_colour(tab: Any) -> QColor:
    """The composer box's own colour as painted (its rounded frame comes from the stylesheet)."""
    image = tab.composer_box.grab().toImage()
    return image.pixelColor(image.width() // 2, 3)


def test_a_tab_restored_in_the_background_looks_like_the_others_when_shown(
        qtbot: Any, make_window: Any, store: Any) -> None:
    """Its chrome is styled when first shown, in the theme chosen meanwhile."""
    from desktop_agent.gui.window.preferences import Preferences

    window = make_window()
    front = window.current_tab()
    background = window.open_record(store.create_conversation(title="Later"),
                                    make_current=False)
    tab = window.tab_for(background.conversation_id)
    assert tab is not None and not tab.isVisible()
    window.chrome.apply_preferences(Preferences(theme="dark"))
    try:
        qtbot.waitUntil(lambda: _composer_colour(front).lightness() < 80, timeout=WAIT_MS)
        window.tabs.setCurrentWidget(tab)
        qtbot.waitUntil(tab.isVisible, timeout=WAIT_MS)
        assert _composer_colour(tab) == _composer_colour(front)
    finally:
        window.chrome.apply_preferences(Preferences())


def test_chrome_hidden_in_an_idle_window_is_styled_when_it_shows(
        qtbot: Any, make_window: Any) -> None:
    """The approval dock, the notice bar and the empty page get the sheet when first shown."""
    window = make_window()
    dock = window.approval_dock
    assert not dock.isVisible() and not dock.styleSheet()  # nothing to approve: not styled yet
    assert window.menuBar().styleSheet()  # visible chrome is styled from the start
    dock.show()
    qtbot.waitUntil(dock.isVisible, timeout=WAIT_MS)
    assert dock.styleSheet() == window.menuBar().styleSheet()
