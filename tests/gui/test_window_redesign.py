"""The redesigned window: layout, inline approval on the card, header, habits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from window_driver import WAIT_MS, last_assistant_text, send, use_server, wait_idle

from desktop_agent.testing import script


def _card(window: Any, name: str) -> Any:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    window.current_tab().transcript.flush()
    cards = [c for c in window.current_tab().findChildren(ToolCard) if c.tool_name == name]
    assert cards, f"no card for {name}"
    return cards[-1]


def _panel(qtbot: Any, window: Any, name: str) -> Any:
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: _card(window, name).approval_panel is not None, timeout=WAIT_MS)
    return _card(window, name).approval_panel


def test_transcript_gets_most_of_the_width_while_nothing_waits(
        qtbot: Any, make_window: Any) -> None:
    window = make_window()
    window.resize(1200, 800)
    window.show()
    qtbot.waitExposed(window)
    QApplication.processEvents()
    assert window.approval_dock.isHidden()
    tab = window.current_tab()
    assert tab.transcript.parentWidget().width() >= 0.6 * window.width()
    assert window.sidebar.width() >= 200


def test_sidebar_keeps_its_width_at_a_small_window_and_after_growing(
        qtbot: Any, make_window: Any) -> None:
    window = make_window()
    window.resize(1024, 640)
    window.show()
    qtbot.waitExposed(window)
    QApplication.processEvents()
    assert window.sidebar.width() >= 200
    window.resize(1400, 900)
    QApplication.processEvents()
    assert window.sidebar.width() >= 200


def test_allow_on_the_card_runs_the_tool_and_gives_focus_back(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window()
    window.show()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                   script.text("Sunny."))
    send(qtbot, window, "Weather please")
    panel = _panel(qtbot, window, "get_weather")
    # The request in the visible tab is answered on its card: the dock stays out of the way.
    assert window.approval_dock.isHidden()
    assert "Denied automatically in" in panel.countdown.text()
    assert _card(window, "get_weather").expanded  # the arguments are in view
    assert panel.allow_conversation_button.isVisibleTo(panel)
    qtbot.mouseClick(panel.allow_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert weather.calls == [{"city": "Paris"}]
    assert "Sunny." in last_assistant_text(window)
    card = _card(window, "get_weather")
    assert card.detail_label.text() == "done" and card.approval_panel is None
    assert window.current_tab().composer.hasFocus()
    assert not window.approvals.pending()


def test_deny_on_the_card_says_denied_not_failed(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window()
    window.show()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                   script.text("Fine, I will not."))
    send(qtbot, window, "Weather please")
    panel = _panel(qtbot, window, "get_weather")
    panel.reason.setText("not now")
    qtbot.mouseClick(panel.deny_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert weather.calls == []
    status = _card(window, "get_weather").detail_label.text()
    assert "denied" in status and "failed" not in status
    tool = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "not now" in tool["content"]


def test_card_and_dock_resolve_one_request(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window()
    window.show()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                   script.text("Done."))
    send(qtbot, window, "Weather please")
    _panel(qtbot, window, "get_weather")
    assert window.approval_dock.current_request() is window.approvals.pending()[0]
    window.approval_dock.allow_once()  # the queue's answer closes the card's buttons
    wait_idle(qtbot, controller)
    assert _card(window, "get_weather").approval_panel is None
    assert weather.calls == [{"city": "Paris"}]


def test_expired_request_says_expired_on_the_card(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window(approval_timeout=0.5)
    window.show()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                   script.text("No answer, so no weather."))
    send(qtbot, window, "Weather please")
    wait_idle(qtbot, controller)
    assert "expired" in _card(window, "get_weather").detail_label.text()
    assert weather.calls == []


def test_request_in_a_background_tab_shows_the_dock_and_a_badge(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window()
    window.show()
    first = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})], delay=0.3),
                   script.text("Done."))
    send(qtbot, window, "Weather please")
    window.new_conversation()  # the first conversation is now in the background
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    assert not window.approval_dock.isHidden()
    assert "●" in window.approval_view.tab_badge(first.conversation_id)
    window.approval_dock.allow_once()
    wait_idle(qtbot, first)
    qtbot.waitUntil(window.approval_dock.isHidden, timeout=WAIT_MS)


def test_header_switches_model_folder_sandbox_and_network(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    window = make_window()
    controller = use_server(window, server)
    header = window.current_tab().header
    header.set_servers([_entry(server.base_url, ["test-model", "other-model"])])
    assert header.model_names() == ["test-model", "other-model"]
    next(a for a in header.model_menu.actions() if a.text() == "other-model").trigger()
    assert controller.settings["model"] == "other-model"
    assert header.model_button.full_text() == "other-model"

    header.folder_chosen.emit(str(tmp_path))
    assert controller.settings["workdir"] == str(tmp_path)
    assert str(tmp_path.name) in header.folder_button.full_text()

    header.sandbox_box.setCurrentIndex(header.sandbox_box.findData("off"))
    header.sandbox_box.activated.emit(header.sandbox_box.currentIndex())
    assert controller.settings["sandbox"] == "off"
    # Without a sandbox nothing holds the network back: the switch says so and is locked.
    assert not header.network_button.isEnabled() and header.network_button.isChecked()
    header.sandbox_box.activated.emit(header.sandbox_box.findData("workdir"))
    assert controller.settings["sandbox"] == "workdir"
    assert header.network_button.isEnabled() and not header.network_button.isChecked()
    qtbot.mouseClick(header.network_button, Qt.MouseButton.LeftButton)
    assert controller.settings["network"] is True
    assert header.network_button.text() == "Network on"


def test_new_conversation_works_in_a_named_visible_folder(make_window: Any) -> None:
    window = make_window()
    controller = window.new_conversation()
    folder = Path(controller.settings["workdir"])
    assert folder.parent.name == "Desktop Agent"
    assert folder.name.startswith("Chat ") and controller.conversation_id not in folder.name


def test_sidebar_follows_the_tab_and_one_click_opens(qtbot: Any, make_window: Any) -> None:
    window = make_window()
    first = window.current_controller()
    second = window.new_conversation()
    for c in (first, second):
        c.rename(f"Talk {c.conversation_id[:4]}")
    window.sidebar.refresh()
    assert window.sidebar.current_id() == second.conversation_id
    window.tabs.setCurrentIndex(0)
    assert window.sidebar.current_id() == first.conversation_id
    window.close_current_tab()
    qtbot.waitUntil(lambda: window.tab_for(first.conversation_id) is None, timeout=WAIT_MS)
    window.sidebar.refresh()
    row = window.sidebar.conversation_ids().index(first.conversation_id)
    item = window.sidebar.list.item(row)
    rect = window.sidebar.list.visualItemRect(item)
    window.show()
    qtbot.mouseClick(window.sidebar.list.viewport(), Qt.MouseButton.LeftButton,
                     pos=rect.center())
    qtbot.waitUntil(lambda: window.tab_for(first.conversation_id) is not None, timeout=WAIT_MS)


def test_preferences_switch_theme_and_timeout(qtbot: Any, make_window: Any) -> None:
    from desktop_agent.gui.theme import is_dark
    from desktop_agent.gui.window.preferences import Preferences

    window = make_window()
    dialog = window.chrome.open_preferences()
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    dialog.timeout.setValue(42)
    dialog.accept()
    try:
        assert is_dark()
        assert QApplication.instance().palette().color(  # type: ignore[union-attr]
            QApplication.instance().palette().ColorRole.Window).lightness() < 80
        assert Preferences.load(window.store).approval_timeout == 42
        assert window.approval_timeout == 42
    finally:
        window.chrome.apply_preferences(Preferences())


def test_help_menu_lists_shortcuts(make_window: Any) -> None:
    window = make_window()
    rows = dict(window.chrome.shortcut_rows())
    assert rows["New conversation"] == "Ctrl+T"
    assert rows["Send the message"] == "Enter"
    dialog = window.chrome.show_shortcuts()
    assert dialog.isVisible()
    dialog.reject()


def _entry(base_url: str, models: list[str], vision: bool | None = None) -> Any:
    from desktop_agent.gui.servers.server_catalog import ModelChoice, ServerEntry

    return ServerEntry("Test", base_url, True,
                       tuple(ModelChoice(m, 4096, vision) for m in models))


def test_processing_prompt_shows_time_and_server_progress(
        qtbot: Any, make_window: Any, server: Any) -> None:
    import threading

    from desktop_agent.testing.script import Chunk, ChunkFactory, Gate, from_chunks

    window = make_window()
    controller = use_server(window, server)
    release = threading.Event()
    factory = ChunkFactory()
    progress = {"choices": [], "prompt_progress": {"total": 1000, "cache": 0,
                                                   "processed": 450, "time_ms": 5}}
    server.enqueue(from_chunks([Chunk(progress), Gate(release),
                                factory.delta({"role": "assistant", "content": "Hello"}),
                                factory.finish("stop")]))
    send(qtbot, window, "A long prompt")
    status = window.current_tab().status_line
    qtbot.waitUntil(lambda: "45%" in status.waiting_label.text(), timeout=WAIT_MS)
    assert status.waiting_label.isVisibleTo(status)
    assert status.waiting_label.text().startswith("Processing prompt…")
    release.set()
    wait_idle(qtbot, controller)
    assert not status.waiting_label.isVisibleTo(status)
    assert "context" in status.context_label.text()
    assert "tool definitions" in status.context_label.toolTip()


def test_branch_switcher_changes_the_active_branch(
        qtbot: Any, make_window: Any, server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.text("First answer."), script.text("Second answer."))
    send(qtbot, window, "Hello")
    wait_idle(qtbot, controller)
    controller.regenerate()
    wait_idle(qtbot, controller)
    transcript = window.current_tab().transcript
    answer_key = transcript.item_keys()[-1]
    assert transcript.branch_of(answer_key) == (2, 2)
    widget = transcript.item_widget(answer_key)
    assert widget.branches.isVisibleTo(widget) and widget.branches.label.text() == "2/2"
    assert "Second answer." in last_assistant_text(window)

    qtbot.mouseClick(widget.branches.previous_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "First answer." in last_assistant_text(window), timeout=WAIT_MS)
    path = window.store.active_path(controller.conversation_id)
    assert path[-1].message["content"] == "First answer."
    assert transcript.branch_of(transcript.item_keys()[-1]) == (1, 2)


def _png(path: Path) -> Path:
    from PySide6.QtGui import QColor, QImage

    image = QImage(8, 8, QImage.Format.Format_RGB32)
    image.fill(QColor("#3366cc"))
    assert image.save(str(path), "PNG")
    return path


def test_attached_picture_reaches_the_request_as_an_image_part(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    window = make_window()
    controller = use_server(window, server)
    tab = window.current_tab()
    notes = tmp_path / "notes.txt"
    notes.write_text("line one\nline two\n")
    tab.attach_files([str(_png(tmp_path / "chart.png")), str(notes)])
    assert [a.name for a in tab.attachments] == ["chart.png", "notes.txt"]
    assert tab.composer_box.chips.isVisibleTo(tab.composer_box)
    server.enqueue(script.text("A blue square."))
    send(qtbot, window, "What is this?")
    wait_idle(qtbot, controller)
    content = server.requests[0]["messages"][-1]["content"]
    assert content[0]["type"] == "text"
    assert content[0]["text"].startswith("What is this?") and "line two" in content[0]["text"]
    assert content[1]["type"] == "image_url"
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert tab.attachments == [] and not tab.composer_box.chips.isVisibleTo(tab.composer_box)
    key = tab.transcript.item_keys()[0]
    assert "[image" not in tab.transcript.item_text(key)  # shown as a picture, not named
    bubble = tab.transcript.item_widget(key)
    assert bubble is not None and bubble.pictures is not None
    assert (bubble.pictures.count, bubble.pictures.shown) == (1, 1)
    # the same picture when the conversation is opened again
    reopened = make_window()
    reopened.open_conversation(controller.conversation_id)
    again = reopened.tab_for(controller.conversation_id)
    again.ensure_loaded()
    again.transcript.flush()
    first = again.transcript.item_widget(again.transcript.item_keys()[0])
    assert first is not None and first.pictures is not None and first.pictures.shown == 1
    assert "[image" not in again.transcript.item_text(again.transcript.item_keys()[0])


def test_picture_for_a_model_without_vision_says_so(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(vision=False)
    tab = window.current_tab()
    tab.attach_files([str(_png(tmp_path / "chart.png"))])
    send(qtbot, window, "What is this?")
    wait_idle(qtbot, controller)
    assert server.requests == []
    shown = " ".join(tab.transcript.item_text(k) for k in tab.transcript.item_keys())
    assert "cannot see images" in shown


def test_a_binary_file_is_refused_with_a_sentence(
        qtbot: Any, make_window: Any, tmp_path: Path) -> None:
    window = make_window()
    tab = window.current_tab()
    blob = tmp_path / "data.bin"
    blob.write_bytes(b"\x00\x01\x02" * 100)
    tab.attach_files([str(blob)])
    assert tab.attachments == []
    shown = " ".join(tab.transcript.item_text(k) for k in tab.transcript.item_keys())
    assert "cannot be attached" in shown


def test_dropping_a_file_on_the_composer_attaches_it(
        qtbot: Any, make_window: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    window = make_window()
    tab = window.current_tab()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(_png(tmp_path / "shot.png")))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    tab.composer_box.dropEvent(event)
    assert [a.name for a in tab.attachments] == ["shot.png"]


def test_a_request_in_a_background_tab_does_not_widen_a_small_window(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window()
    window.resize(1024, 640)
    window.show()
    qtbot.waitExposed(window)
    first = use_server(window, server)
    first.update_settings(workdir="/tmp/" + "a-very-long-folder-name/" * 6)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})], delay=0.3))
    send(qtbot, window, "Weather please")
    window.new_conversation()
    qtbot.waitUntil(lambda: not window.approval_dock.isHidden(), timeout=WAIT_MS)
    QApplication.processEvents()
    assert window.width() <= 1024
    window.approval_dock.deny()
    wait_idle(qtbot, first)


def test_a_reopened_conversation_shows_the_servers_last_count(
        qtbot: Any, make_window: Any, store: Any) -> None:
    record = store.create_conversation(title="Counted", settings={"context_length": 4096})
    store.add_message(record.id, {"role": "user", "content": "hi"})
    reply = store.add_message(record.id, {"role": "assistant", "content": "hello"})
    store.update_message_metadata(reply.id, {"usage": {"prompt_tokens": 1200,
                                                       "completion_tokens": 34}})
    window = make_window()
    controller = window.open_conversation(record.id)
    window._estimate_restored_contexts()
    qtbot.waitUntil(lambda: controller.figures.context_used is not None, timeout=WAIT_MS)
    assert controller.figures.context_used == 1234
    assert "1,234" in window.current_tab().status_line.context_label.text()


def test_a_conversation_written_by_another_process_appears_in_the_sidebar(
        qtbot: Any, make_window: Any, store: Any) -> None:
    from desktop_agent.store import Store

    window = make_window()
    other = Store.open()  # another connection, as the REST server or an import has
    try:
        record = other.create_conversation(title="Imported elsewhere")
    finally:
        other.close()
    qtbot.waitUntil(lambda: record.id in window.sidebar.conversation_ids(), timeout=WAIT_MS)


def test_save_dialogs_open_in_the_folder_used_last(
        qtbot: Any, make_window: Any, tmp_path: Path) -> None:
    from desktop_agent.gui.window.transfer_dialogs import ask_for_files

    window = make_window()
    settings = window.window_settings
    chosen: list[list[str]] = []
    target = tmp_path / "exports"
    target.mkdir()
    first = ask_for_files(window, "Export", True, "JSON files (*.json)", "a.json",
                          chosen.append, settings=settings)
    first.filesSelected.emit([str(target / "a.json")])
    first.reject()
    assert chosen == [[str(target / "a.json")]]
    second = ask_for_files(window, "Export", True, "JSON files (*.json)", "b.json",
                           chosen.append, settings=settings)
    assert Path(second.directory().absolutePath()) == target
    second.reject()


def test_a_long_code_line_scrolls_inside_its_block(qtbot: Any, make_window: Any) -> None:
    window = make_window()
    window.resize(1024, 640)
    window.show()
    transcript = window.current_tab().transcript
    transcript.begin_assistant_message()
    transcript.append_text("```python\nx = '" + "long " * 200 + "'\n```\n")
    transcript.end_assistant_message()
    window.current_tab()._update_empty_hint()  # the transcript page is shown
    from desktop_agent.gui.transcript.code_block import CodeBlockWidget

    block = transcript.findChildren(CodeBlockWidget)[-1]
    # The line scrolls sideways inside its block; it does not wrap or widen the column.
    qtbot.waitUntil(lambda: block.code_view.horizontalScrollBar().maximum() > 0,
                    timeout=WAIT_MS)
    assert block.width() <= transcript.viewport().width()
    assert window.width() <= 1024


def test_every_button_has_a_name_and_the_keyboard_answers_a_card(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    from PySide6.QtWidgets import QAbstractButton, QComboBox

    window = make_window()
    window.show()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                   script.text("Sunny."))
    send(qtbot, window, "Weather please")
    _panel(qtbot, window, "get_weather")
    tab = window.current_tab()
    unnamed = [w for w in tab.findChildren(QAbstractButton) + tab.findChildren(QComboBox)
               if w.isVisible() and not (w.accessibleName() or getattr(w, "text", str)())]
    assert unnamed == []
    # Keyboard only: the allow shortcut answers the request on the visible card.
    assert window.approval_dock.isHidden()
    qtbot.keyClick(tab.composer, Qt.Key.Key_Return,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    wait_idle(qtbot, controller)
    assert weather.calls == [{"city": "Paris"}]


def test_a_search_that_finds_exactly_one_model_selects_it(make_window: Any) -> None:
    window = make_window()
    controller = window.current_controller()
    assert not controller.has_server
    window.catalog._servers = [_entry("http://127.0.0.1:9/v1", ["only-model"])]
    window.catalog.searched = True
    window.catalog.servers_changed.emit(window.catalog.servers)
    assert controller.settings["model"] == "only-model"
    assert window.current_tab().header.model_names() == ["only-model"]


def test_picking_a_model_takes_what_the_server_says_about_its_vision(
        make_window: Any) -> None:
    window = make_window()
    controller = window.current_controller()
    window.catalog._servers = [_entry("http://127.0.0.1:9/v1", ["text-only"], vision=False),
                               _entry("http://127.0.0.1:8/v1", ["sees"], vision=True)]
    window.catalog.searched = True
    window.servers.use_server(controller, "http://127.0.0.1:9/v1", "text-only")
    assert controller.settings["vision"] is False  # a picture is refused in words
    window.servers.use_server(controller, "http://127.0.0.1:8/v1", "sees")
    assert controller.settings["vision"] is True


def test_icons_are_redrawn_in_the_new_theme(qtbot: Any, make_window: Any) -> None:
    from desktop_agent.gui.window.preferences import Preferences

    window = make_window()
    send_button = window.current_tab().send_button
    folder_button = window.current_tab().header.folder_button

    def ink(button: Any) -> int:
        image = button.icon().pixmap(24, 24).toImage()
        return max(image.pixelColor(x, y).lightness() for x in range(24) for y in range(24)
                   if image.pixelColor(x, y).alpha() > 200)

    light_ink = ink(folder_button)
    window.chrome.apply_preferences(Preferences(theme="dark"))
    try:
        assert ink(folder_button) > light_ink + 100  # light strokes on the dark theme
        assert ink(send_button) > 200  # white on the accent, in both themes
    finally:
        window.chrome.apply_preferences(Preferences())


def test_messages_written_elsewhere_appear_in_an_open_idle_conversation(
        qtbot: Any, make_window: Any) -> None:
    from desktop_agent.store import Store

    window = make_window()
    controller = window.current_controller()
    other = Store.open()  # as the REST server writes
    try:
        other.add_message(controller.conversation_id, {"role": "user", "content": "from REST"})
    finally:
        other.close()
    transcript = window.current_tab().transcript
    qtbot.waitUntil(lambda: any("from REST" in transcript.item_text(k)
                                for k in transcript.item_keys()), timeout=WAIT_MS)


def test_the_header_names_the_sandbox_that_will_actually_apply(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_agent.core.tooling.builtin import sandbox

    # this machine without bubblewrap on its PATH: the real lookup finds none
    monkeypatch.setenv("PATH", str(tmp_path))
    sandbox._probe.cache_clear()
    try:
        window = make_window()
        controller = use_server(window, server)
        header = window.current_tab().header
        controller.update_settings(sandbox="read_only")
        qtbot.waitUntil(lambda: header.sandbox_box.currentText()
                        == "No sandbox: bubblewrap is not installed", timeout=WAIT_MS)
        assert "apt-get install bubblewrap" in header.sandbox_box.toolTip()
        controller.update_settings(sandbox="off")
        assert header.sandbox_box.currentText() == "No sandbox"
    finally:
        monkeypatch.undo()
        sandbox._probe.cache_clear()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_disabled_accent_button_keeps_a_visible_icon(
        qtbot: Any, make_window: Any, theme: str) -> None:
    """A disabled primary button turns grey (the border colour): its white icon must not vanish."""
    from PySide6.QtGui import QColor, QIcon

    from desktop_agent.gui.icons import current_palette
    from desktop_agent.gui.window.preferences import Preferences

    window = make_window()
    window.chrome.apply_preferences(Preferences(theme=theme))
    try:
        send_button = window.current_tab().send_button
        image = send_button.icon().pixmap(24, 24, QIcon.Mode.Disabled).toImage()
        background = QColor(current_palette().border).lightness()
        ink = [image.pixelColor(x, y).lightness() for x in range(24) for y in range(24)
               if image.pixelColor(x, y).alpha() > 200]
        assert ink, "the disabled icon draws nothing"
        assert max(abs(value - background) for value in ink) > 60
    finally:
        window.chrome.apply_preferences(Preferences())
