"""Errors and Retry, branches, the server picker, restore, export and import."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, last_assistant_text, send, use_server, wait_idle

from desktop_agent.testing import script


def test_dropped_connection_shows_words_and_retry_recovers(qtbot: Any, make_window: Any,
                                                           server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.dropped("The answer starts but"))
    send(qtbot, window, "Explain")
    wait_idle(qtbot, controller)
    tab = window.current_tab()
    keys = tab.transcript.item_keys()
    error_text = tab.transcript.item_text(keys[-1])
    assert "connection to the model server dropped" in error_text
    assert "Traceback" not in error_text
    failed = controller.stored_messages()[-1]
    assert failed["status"] == "error"
    assert failed["message"]["content"] == "The answer starts but"

    server.enqueue(script.text("A complete answer."))
    tab.transcript.retry_requested.emit()
    wait_idle(qtbot, controller)
    assert "A complete answer." in last_assistant_text(window)
    path = controller.stored_messages()
    assert [m["role"] for m in path] == ["user", "assistant"]
    assert path[1]["message"]["content"] == "A complete answer."
    # The failed reply stays in the store as a sibling branch.
    siblings = window.store.siblings(path[1]["id"])
    assert {s.status for s in siblings} >= {"error", "complete"}
    # The retried request carried the question once, not twice.
    assert [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"] == \
        ["Explain"]


def test_unreachable_server_says_so_in_words(qtbot: Any, make_window: Any) -> None:
    window = make_window()
    controller = window.current_controller()
    window.servers.use_server(controller, "http://127.0.0.1:9/v1", "m")
    send(qtbot, window, "hello?")
    wait_idle(qtbot, controller)
    tab = window.current_tab()
    text = tab.transcript.item_text(tab.transcript.item_keys()[-1])
    assert "Could not reach http://127.0.0.1:9/v1" in text


def test_regenerate_and_edit_create_branches(qtbot: Any, make_window: Any, server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.text("First answer."), script.text("Second answer."),
                   script.text("Answer to the edit."))
    send(qtbot, window, "Question")
    wait_idle(qtbot, controller)
    first = controller.stored_messages()[1]
    window.menu_actions.regenerate_action.trigger()
    wait_idle(qtbot, controller)
    second = controller.stored_messages()[1]
    assert second["message"]["content"] == "Second answer."
    assert {s.id for s in window.store.siblings(second["id"])} == {first["id"], second["id"]}
    assert "Second answer." in last_assistant_text(window)

    user_id = controller.stored_messages()[0]["id"]
    window.current_tab().transcript.edit_requested.emit(user_id, "Edited question")
    wait_idle(qtbot, controller)
    path = controller.stored_messages()
    assert [m["message"]["content"] for m in path] == ["Edited question", "Answer to the edit."]
    assert len(window.store.siblings(path[0]["id"])) == 2
    assert server.requests[-1]["messages"][-1]["content"] == "Edited question"


def test_picker_lists_the_running_server_and_its_models(qtbot: Any, make_window: Any,
                                                        server: Any) -> None:
    server.models = ["test-model", "other-model"]
    window = make_window()
    tab = window.current_tab()
    picker = window.servers.open_server_picker()
    window.catalog.add_custom(server.base_url)
    qtbot.waitUntil(lambda: window.catalog.searched and not window.catalog.searching,
                    timeout=WAIT_MS)
    entry = window.catalog.find(server.base_url)
    assert entry is not None and entry.up
    assert [m.id for m in entry.models] == ["test-model", "other-model"]
    assert tab.notice.isVisible() and "Choose a server" in tab.notice.message.text()
    assert picker.select_model(server.base_url, "other-model")
    qtbot.mouseClick(picker.use_button, Qt.MouseButton.LeftButton)
    controller = window.current_controller()
    assert controller.settings["model"] == "other-model"
    assert controller.settings["base_url"] == server.base_url
    assert not tab.notice.isVisible()
    assert window.menu_actions.server_action.text() == "Model: other-model"
    assert tab.status_line.model_label.text() == "Model: other-model"
    # The choice sticks for new conversations.
    assert window.new_conversation().settings["model"] == "other-model"


def test_environment_preselects_server_and_model(qtbot: Any, make_window: Any, server: Any,
                                                monkeypatch: Any) -> None:
    server.models = ["first-model", "wanted-model"]
    monkeypatch.setenv("DESKTOP_AGENT_BASE_URL", server.base_url)
    window = make_window(discover=True)
    controller = window.current_controller()
    qtbot.waitUntil(lambda: controller.has_server, timeout=WAIT_MS)
    assert controller.settings["base_url"] == server.base_url
    assert controller.settings["model"] == "first-model"
    monkeypatch.setenv("DESKTOP_AGENT_MODEL", "wanted-model")
    again = make_window()
    assert again.new_conversation().settings["model"] == "wanted-model"


def test_a_server_the_search_found_answers_the_first_message(qtbot: Any, make_window: Any,
                                                             server: Any,
                                                             monkeypatch: Any) -> None:
    """The search lists a local server without the SDK; the first turn loads it and runs."""
    server.models = ["found-model"]
    monkeypatch.setenv("DESKTOP_AGENT_BASE_URL", server.base_url)
    window = make_window(discover=True)
    controller = window.current_controller()
    qtbot.waitUntil(lambda: controller.has_server, timeout=WAIT_MS)
    server.enqueue(script.text("Found and answering."))
    send(qtbot, window, "Are you there?")
    wait_idle(qtbot, controller)
    assert "Found and answering." in last_assistant_text(window)
    assert server.requests[-1]["model"] == "found-model"


def test_nothing_running_offers_retry_and_url(qtbot: Any, make_window: Any, server: Any) -> None:
    window = make_window(discover=True)
    tab = window.current_tab()
    qtbot.waitUntil(lambda: window.catalog.searched and not window.catalog.searching,
                    timeout=WAIT_MS)
    if window.catalog.up_servers():  # a real local server runs on this machine
        return
    assert tab.notice.isVisible()
    assert "No model server is running" in tab.notice.message.text()
    assert tab.notice.run_local_button.isVisible()  # how to get a first one (test_first_run)
    assert tab.notice.retry_button.isVisible() and tab.notice.url_button.isVisible()
    qtbot.mouseClick(tab.notice.url_button, Qt.MouseButton.LeftButton)
    picker = window.servers.picker
    assert picker.isVisible()
    picker.url_edit.setText("nonsense://")
    qtbot.mouseClick(picker.add_button, Qt.MouseButton.LeftButton)
    assert "must start with http" in picker._custom_message.text()
    picker.url_edit.setText(server.base_url)
    qtbot.mouseClick(picker.add_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.catalog.find(server.base_url) is not None, timeout=WAIT_MS)
    assert window.catalog.find(server.base_url).up
    assert picker.select_model(server.base_url, "test-model")
    picker.reject()


def test_tabs_and_conversations_come_back_after_a_restart(qtbot: Any, make_window: Any,
                                                          server: Any) -> None:
    window = make_window()
    first = use_server(window, server)
    send(qtbot, window, "Remember me")
    wait_idle(qtbot, first)
    second = window.new_conversation()
    use_server(window, server)
    send(qtbot, window, "And me")
    wait_idle(qtbot, second)
    window.tabs.tabBar().moveTab(1, 0)  # reorder: the second conversation first
    window.tabs.setCurrentIndex(1)
    window.approval_dock.hide()
    ids = [second.conversation_id, first.conversation_id]
    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=WAIT_MS)

    again = make_window()
    assert [again.tabs.widget(i).controller.conversation_id
            for i in range(again.tabs.count())] == ids
    assert again.current_controller().conversation_id == first.conversation_id
    assert "You said: Remember me" in last_assistant_text(again)
    assert again.tabs.tabText(0).startswith("And me")
    assert again.approval_dock.isHidden() and not again.sidebar.isHidden()
    # Context use of restored conversations is estimated after the first paint.
    status = again.current_tab().status_line
    qtbot.waitUntil(lambda: "context —" not in status.context_label.text(), timeout=WAIT_MS)
    assert again.sidebar.conversation_ids()[:2] == [second.conversation_id,
                                                    first.conversation_id]
    again.sidebar.search.setText("Remember")
    qtbot.waitUntil(lambda: again.sidebar.conversation_ids() == [first.conversation_id],
                    timeout=WAIT_MS)


def test_export_then_import_from_the_window(qtbot: Any, make_window: Any, server: Any,
                                            tmp_path: Path) -> None:
    window = make_window()
    controller = use_server(window, server)
    send(qtbot, window, "Keep this")
    wait_idle(qtbot, controller)
    target = tmp_path / "export.json"
    result = window.transfer.export_conversations(str(target), [controller.conversation_id])
    assert result.ok and "Exported 1 conversation" in window.statusBar().currentMessage()
    document = json.loads(target.read_text())
    assert len(document["conversations"]) == 1

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    before = window.store.count_conversations()
    failed = window.transfer.import_files([str(bad)])
    assert not failed.ok and "bad.json" in failed.message and "not valid JSON" in failed.message
    assert window.notice.isVisible()
    assert window.store.count_conversations() == before

    imported = window.transfer.import_files([str(target)])
    assert imported.ok and len(imported.imported) == 1
    new = window.current_controller()
    assert new.conversation_id != controller.conversation_id
    assert [m["message"]["content"] for m in new.stored_messages()] == \
        [m["message"]["content"] for m in controller.stored_messages()]

    markdown = tmp_path / "chat.md"
    assert window.transfer.export_markdown(str(markdown), controller.conversation_id).ok
    assert "Keep this" in markdown.read_text()


def test_unexpected_errors_show_a_notice_and_the_app_keeps_running(
        qtbot: Any, make_window: Any, qasync_loop: Any) -> None:
    from desktop_agent.gui.error_sink import ErrorSink

    window = make_window()
    sink = ErrorSink()
    sink.install(qasync_loop)
    sink.reported.connect(window.show_error_notice)
    try:
        async def broken() -> None:
            raise RuntimeError("boom from a task")

        task = asyncio.ensure_future(broken())
        del task
        qtbot.waitUntil(lambda: window.notice.isVisible(), timeout=WAIT_MS)
        assert "RuntimeError" in window.notice.label.text()
        assert "Traceback" not in window.notice.label.text()
        window.notice.hide()

        import threading

        def broken_thread() -> None:
            raise ValueError("boom from a thread")

        worker = threading.Thread(target=broken_thread, name="worker")
        worker.start()
        worker.join()
        qtbot.waitUntil(lambda: window.notice.isVisible(), timeout=WAIT_MS)
        assert "ValueError in thread worker" in window.notice.label.text()
        assert sink.count == 2
        # The window still works.
        assert window.new_conversation() is not None
    finally:
        sink.uninstall()
        qasync_loop.set_exception_handler(None)


def test_file_menu_export_and_import_go_through_file_dialogs(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from PySide6.QtWidgets import QApplication, QFileDialog

    window = make_window()
    controller = use_server(window, server)
    send(qtbot, window, "Menu export")
    wait_idle(qtbot, controller)

    def visible_dialog() -> QFileDialog:
        dialogs = [w for w in QApplication.topLevelWidgets()
                   if isinstance(w, QFileDialog) and w.isVisible()]
        assert len(dialogs) == 1
        return dialogs[0]

    target = tmp_path / "from-menu.json"
    window.menu_actions.export_all_action.trigger()
    dialog = visible_dialog()
    assert dialog.acceptMode() == QFileDialog.AcceptMode.AcceptSave
    dialog.filesSelected.emit([str(target)])
    dialog.reject()
    assert target.exists()
    assert "Exported" in window.statusBar().currentMessage()

    # Several conversations selected in the sidebar export together.
    second = window.new_conversation()
    window.sidebar.refresh()
    window.sidebar.list.selectAll()
    assert set(window.sidebar.selected_ids()) == {controller.conversation_id,
                                                  second.conversation_id}
    window.transfer.ask_export_selected(window.sidebar.selected_ids())
    several = tmp_path / "several.json"
    dialog = visible_dialog()
    dialog.filesSelected.emit([str(several)])
    dialog.reject()
    assert len(json.loads(several.read_text())["conversations"]) == 2
    window.close_current_tab()
    qtbot.waitUntil(lambda: not window._closing_tasks, timeout=WAIT_MS)

    window.menu_actions.import_action.trigger()
    dialog = visible_dialog()
    dialog.filesSelected.emit([str(target)])
    dialog.reject()
    assert window.tabs.count() == 2
    assert window.current_controller().stored_messages()[0]["message"]["content"] == \
        "Menu export"


def test_deleting_a_conversation_from_the_sidebar(qtbot: Any, make_window: Any,
                                                  server: Any) -> None:
    from PySide6.QtWidgets import QMessageBox

    window = make_window()
    controller = use_server(window, server)
    send(qtbot, window, "Delete me later")
    wait_idle(qtbot, controller)
    conversation_id = controller.conversation_id
    from desktop_agent.appdata import secrets
    from desktop_agent.session.settings import conversation_secrets

    conversation_secrets.set_conversation_secret(conversation_id, "GITHUB_TOKEN", "ghp-x-123")
    other = window.store.create_conversation(title="Keeps its secret")
    conversation_secrets.set_conversation_secret(other.id, "GITHUB_TOKEN", "ghp-y-456")
    window.sidebar.refresh()
    window.sidebar.list.setCurrentRow(window.sidebar.conversation_ids().index(conversation_id))
    box = window.sidebar.ask_delete_current()
    assert "Delete me later" in box.text()
    # Cancel keeps it.
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert window.store.get_conversation(conversation_id) is not None
    box = window.sidebar.ask_delete_current()
    delete = next(b for b in box.buttons() if b.text() == "Delete")
    delete.click()
    qtbot.waitUntil(lambda: window.store.get_conversation(conversation_id) is None,
                    timeout=WAIT_MS)
    assert window.tab_for(conversation_id) is None
    qtbot.waitUntil(lambda: conversation_id not in window.sidebar.conversation_ids(),
                    timeout=WAIT_MS)
    # Its keyring secrets go with it (as over REST); other conversations keep theirs.
    qtbot.waitUntil(lambda: not secrets.list_secret_names(f"conv:{conversation_id}:"),
                    timeout=WAIT_MS)
    assert conversation_secrets.conversation_secret_names(other.id) == ["GITHUB_TOKEN"]
