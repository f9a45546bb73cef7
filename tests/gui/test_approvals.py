"""Tool approval through the dock: edit, deny with a reason, time out, close."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from tier_policy import require_module
from window_driver import WAIT_MS, last_assistant_text, send, use_server, wait_idle

from desktop_agent.gui.approvals.approval_queue import RequestState
from desktop_agent.testing import script


def _tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def _tool_card(window: Any, name: str) -> Any:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    window.current_tab().transcript.flush()
    cards = [c for c in window.current_tab().findChildren(ToolCard) if c.tool_name == name]
    assert cards, f"no card for {name}"
    return cards[-1]


def _wait_for_request(qtbot: Any, window: Any) -> Any:
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    return window.approval_dock.current_request()


def test_approving_with_edited_arguments_runs_the_tool_with_them(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                   script.text("It is sunny in Lyon."))
    send(qtbot, window, "Weather please")
    request = _wait_for_request(qtbot, window)
    dock = window.approval_dock

    assert request.tool_name == "get_weather"
    assert "Weather please" in dock._conversation.text()
    assert json.loads(dock._arguments.toPlainText()) == {"city": "Paris"}
    assert "●" in window.approval_view.tab_badge(controller.conversation_id)
    qtbot.waitUntil(lambda: "waiting for approval" in _tool_card(window, "get_weather")
                    .detail_label.text(), timeout=WAIT_MS)
    # In the background, a notification goes out too.
    assert window.notifier.sent == (0 if window.isActiveWindow() else 1)

    # A broken edit is refused with a clear message, and nothing runs.
    dock.set_arguments_text('{"city": "Lyon"')
    qtbot.mouseClick(dock.allow_button, Qt.MouseButton.LeftButton)
    assert "not valid JSON" in dock.json_error()
    assert request.pending and weather.calls == []

    dock.set_arguments_text('{\n  "city": "Lyon"\n}')
    assert dock.json_error() == ""
    qtbot.mouseClick(dock.allow_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)

    assert weather.calls == [{"city": "Lyon"}]
    card = _tool_card(window, "get_weather")
    assert card.detail_label.text() == "done"
    # What the record shows is what ran: the card, the store and the next request.
    assert json.loads(card.arguments_view.code()) == {"city": "Lyon"}
    assert "Lyon" in _tool_messages(server.requests[1])[0]["content"]
    sent_call = next(m for m in server.requests[1]["messages"] if m.get("tool_calls"))
    assert json.loads(sent_call["tool_calls"][0]["function"]["arguments"]) == {"city": "Lyon"}
    stored_call = next(m for m in controller.stored_messages() if m["message"].get("tool_calls"))
    assert json.loads(stored_call["message"]["tool_calls"][0]["function"]["arguments"]) \
        == {"city": "Lyon"}
    assert json.loads(stored_call["metadata"]["model_arguments"][request.tool_use_id]) \
        == {"city": "Paris"}
    assert "It is sunny in Lyon." in last_assistant_text(window)
    assert "●" not in window.approval_view.tab_badge(controller.conversation_id)
    tool_record = next(m for m in controller.stored_messages() if m["role"] == "tool")
    assert tool_record["metadata"]["approval"]["decision"] == "allow_once"
    assert tool_record["metadata"]["approval"]["edited_input"] == {"city": "Lyon"}


def test_denying_with_a_reason_tells_the_model(qtbot: Any, make_window: Any, server: Any,
                                               weather: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                   script.text("Understood, I will not check."))
    send(qtbot, window, "Weather in Oslo?")
    _wait_for_request(qtbot, window)
    dock = window.approval_dock
    dock.set_reason("no network calls today")
    qtbot.mouseClick(dock.deny_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)

    assert weather.calls == []
    assert "no network calls today" in _tool_card(window, "get_weather").output_text
    sent = _tool_messages(server.requests[1])[0]["content"]
    assert "no network calls today" in sent
    assert "Understood" in last_assistant_text(window)
    tool_record = next(m for m in controller.stored_messages() if m["role"] == "tool")
    assert tool_record["metadata"]["approval"] == {"decision": "deny",
                                                  "reason": "no network calls today"}


def test_keyboard_shortcut_allows_once(qtbot: Any, make_window: Any, server: Any,
                                       weather: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Rome"})]), script.text("Done."))
    send(qtbot, window, "Rome?")
    _wait_for_request(qtbot, window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    qtbot.keyClick(window.approval_dock, Qt.Key.Key_Return,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    wait_idle(qtbot, controller)
    assert weather.calls == [{"city": "Rome"}]


def test_an_unanswered_request_expires_and_is_denied_visibly(qtbot: Any, make_window: Any,
                                                             server: Any, weather: Any) -> None:
    window = make_window(approval_timeout=0.5)
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Bern"})]),
                   script.text("Nobody answered, so I did not check."))
    send(qtbot, window, "Bern?")
    request = _wait_for_request(qtbot, window)
    wait_idle(qtbot, controller)

    assert request.state is RequestState.EXPIRED
    assert weather.calls == []
    assert "Expired" in window.approval_dock._state.text()
    assert not window.approval_dock.allow_button.isEnabled()
    assert "No approval came" in _tool_messages(server.requests[1])[0]["content"]
    card = _tool_card(window, "get_weather")
    assert card.is_error and "No approval came" in card.output_text
    tool_record = next(m for m in controller.stored_messages() if m["role"] == "tool")
    assert tool_record["metadata"]["approval"] == {"decision": "expired"}
    qtbot.mouseClick(window.approval_dock.dismiss_button, Qt.MouseButton.LeftButton)
    assert window.approvals.requests() == []


def test_allow_for_this_conversation_stops_asking(qtbot: Any, make_window: Any, server: Any,
                                                  weather: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Kyiv"})]), script.text("One."),
                   script.tool_calls([("get_weather", {"city": "Riga"})]), script.text("Two."))
    send(qtbot, window, "first")
    _wait_for_request(qtbot, window)
    qtbot.mouseClick(window.approval_dock.allow_conversation_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    send(qtbot, window, "second")
    wait_idle(qtbot, controller)
    assert weather.calls == [{"city": "Kyiv"}, {"city": "Riga"}]
    assert controller.session_allowed_tools() == ["get_weather"]
    stored = window.store.get_conversation(controller.conversation_id).settings
    assert stored["permission_rules"] == [{"tool": "get_weather", "decision": "allow"}]
    # The second call was settled by the rule, without a request in the dock.
    first_result, second_result = [m for m in controller.stored_messages()
                                   if m["role"] == "tool"]
    assert first_result["metadata"]["approval"]["decision"] == "allow_conversation"
    assert second_result["metadata"]["approval"] == {"decision": "rule", "by": "rule"}
    controller.revoke_conversation_approval("get_weather")
    assert controller.session_allowed_tools() == []


def test_always_allow_writes_a_rule_that_settings_can_revoke(
        qtbot: Any, make_window: Any, server: Any, weather: Any, data_dir: Any) -> None:
    from desktop_agent.session.tools.config import AppConfig

    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Lima"})]), script.text("Ok."))
    send(qtbot, window, "Lima?")
    _wait_for_request(qtbot, window)
    qtbot.mouseClick(window.approval_dock.allow_always_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    rules = AppConfig().global_rules()
    assert [(r.tool, r.decision) for r in rules] == [("get_weather", "allow")]
    assert json.loads((data_dir / "config.json").read_text())["permissions"]

    dialog = window.open_settings()
    items = [dialog.approvals.item(i).text() for i in range(dialog.approvals.count())]
    assert any("get_weather" in t and "always" in t for t in items)
    dialog.approvals.setCurrentRow(0)
    qtbot.mouseClick(dialog.revoke_button, Qt.MouseButton.LeftButton)
    assert AppConfig().global_rules() == []
    dialog.reject()


def test_closing_the_tab_denies_its_pending_request(qtbot: Any, make_window: Any, server: Any,
                                                    weather: Any) -> None:
    window = make_window()
    use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Quito"})]), script.text("Ok."))
    send(qtbot, window, "Quito?")
    request = _wait_for_request(qtbot, window)
    window.close_current_tab()
    qtbot.waitUntil(lambda: not window._closing_tasks, timeout=WAIT_MS)
    assert request.state is RequestState.CANCELLED
    assert window.approvals.requests() == []
    assert weather.calls == []


def test_stop_while_waiting_for_approval_denies_and_ends_the_turn(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Porto"})]))
    send(qtbot, window, "Porto?")
    request = _wait_for_request(qtbot, window)
    qtbot.keyClick(window.current_tab().composer, Qt.Key.Key_Escape)
    wait_idle(qtbot, controller)
    assert request.state is RequestState.CANCELLED
    assert window.approvals.requests() == []
    assert weather.calls == []
    assert len(server.requests) == 1  # nothing more was asked of the model
    roles = [m["role"] for m in controller.stored_messages()]
    assert roles == ["user", "assistant", "tool"]


def test_a_tool_conversation_continues_correctly_after_a_restart(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Graz"})],
                                     text_before="Checking."),
                   script.text("Graz is sunny."))
    send(qtbot, window, "Graz?")
    _wait_for_request(qtbot, window)
    window.approval_dock.allow_once()
    wait_idle(qtbot, controller)
    sent_during_turn = server.requests[1]["messages"]
    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=WAIT_MS)

    again = make_window()
    restored = again.current_controller()
    assert restored.conversation_id == controller.conversation_id
    send(qtbot, again, "And tomorrow?")
    wait_idle(qtbot, restored)
    history = server.requests[-1]["messages"]
    # The restored history is exactly what the model saw, plus its answer and the new message.
    assert history[:len(sent_during_turn)] == sent_during_turn
    assert history[len(sent_during_turn)] == {"role": "assistant", "content": "Graz is sunny."}
    assert history[-1] == {"role": "user", "content": "And tomorrow?"}
    assert _tool_card(again, "get_weather").output_text.startswith("Sunny and 21")


def test_requests_from_two_tabs_queue_in_the_dock(qtbot: Any, make_window: Any, server: Any,
                                                  weather: Any) -> None:
    window = make_window()
    first = use_server(window, server)
    second = window.new_conversation()
    use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Tromsø"})]),
                   script.tool_calls([("get_weather", {"city": "Malmö"})]),
                   script.text("Done one."), script.text("Done two."))
    window.tabs.setCurrentWidget(window.tab_for(first.conversation_id))
    send(qtbot, window, "north")
    qtbot.waitUntil(lambda: len(window.approvals.pending()) == 1, timeout=WAIT_MS)
    window.tabs.setCurrentWidget(window.tab_for(second.conversation_id))
    send(qtbot, window, "south")
    qtbot.waitUntil(lambda: len(window.approvals.pending()) == 2, timeout=WAIT_MS)
    dock = window.approval_dock
    assert dock._list.count() == 2
    assert "●" in window.approval_view.tab_badge(first.conversation_id)
    assert "●" in window.approval_view.tab_badge(second.conversation_id)
    shown = dock.current_request()
    assert shown.conversation_id == first.conversation_id  # the oldest stays shown
    # Clicking a request shows its conversation.
    assert window.current_controller() is second
    first_item = dock._list.item(0)
    qtbot.mouseClick(dock._list.viewport(), Qt.MouseButton.LeftButton,
                     pos=dock._list.visualItemRect(first_item).center())
    assert window.current_controller() is first
    dock.deny()
    qtbot.waitUntil(lambda: not first.busy, timeout=WAIT_MS)
    assert dock.current_request().conversation_id == second.conversation_id
    assert "●" not in window.approval_view.tab_badge(first.conversation_id)
    dock.allow_once()
    wait_idle(qtbot, second)
    assert weather.calls == [{"city": "Malmö"}]


def test_a_malformed_config_file_asks_and_is_never_overwritten(
        qtbot: Any, make_window: Any, server: Any, weather: Any, data_dir: Any) -> None:
    config = data_dir / "config.json"
    config.write_text('{"permissions": [{"tool": "get_weather", "decision": "allow"}')
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Faro"})]), script.text("Ok."))
    send(qtbot, window, "Faro?")
    _wait_for_request(qtbot, window)  # the broken allow rule does not apply: it asks
    window.approval_dock.allow_always()
    wait_idle(qtbot, controller)
    assert weather.calls == [{"city": "Faro"}]
    assert window.notice.isVisible()
    assert "could not be remembered" in window.notice.label.text()
    assert config.read_text() == '{"permissions": [{"tool": "get_weather", "decision": "allow"}'
    dialog = window.open_settings()
    assert dialog.problem.isVisible() and "every call asks" in dialog.problem.text()
    dialog.reject()


def test_mcp_server_tools_go_through_the_dock(qtbot: Any, make_window: Any, server: Any,
                                              data_dir: Any) -> None:
    import sys

    require_module("mcp_server_time")
    (data_dir / "config.json").write_text(json.dumps({"mcpServers": {"time": {
        "command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        "trusted": True}}}))  # trusted: its readOnlyHint is believed and shown
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("time__get_current_time", {"timezone": "Europe/Paris"})]),
                   script.text("It is later in Paris."))
    send(qtbot, window, "What time is it in Paris?")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=30_000)
    request = window.approval_dock.current_request()
    assert (request.tool_name, request.source) == ("time__get_current_time", "time")
    assert "(time · read-only)" in window.approval_dock._title.text()
    window.approval_dock.allow_once()
    wait_idle(qtbot, controller)
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert "time__get_current_time" in offered
    result = json.loads(_tool_messages(server.requests[1])[0]["content"])
    assert result["timezone"] == "Europe/Paris"
    assert "time__get_current_time" in window.tools.tool_names()


def test_an_unsandboxed_command_is_asked_with_a_warning_and_never_remembered(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Any) -> None:
    from desktop_agent.core.tooling.builtin import UNSANDBOXED_WARNING, SandboxPolicy, builtin_tools
    from desktop_agent.session.tools.config import AppConfig

    bash = builtin_tools(tmp_path, sandbox=SandboxPolicy(level="off"), include=("bash",))[0]
    window = make_window(tools=[bash])
    controller = use_server(window, server)
    controller.update_settings(auto_execute=True)  # auto mode does not cover it
    server.enqueue(script.tool_calls([("bash", {"command": "echo ran-it"})]),
                   script.text("Done."))
    send(qtbot, window, "run something")
    request = _wait_for_request(qtbot, window)
    dock = window.approval_dock
    assert request.unsandboxed
    # The dock (the queue, hidden while the request's own tab is visible) and the card
    # both say so, and neither offers a remembered approval.
    assert dock._unsandboxed.isVisibleTo(dock) and dock._unsandboxed.text() == \
        UNSANDBOXED_WARNING
    assert not dock.allow_always_button.isVisibleTo(dock)
    assert not dock.allow_conversation_button.isVisibleTo(dock)
    assert dock.allow_always() is False and request.pending  # not offered, not taken
    qtbot.waitUntil(lambda: _tool_card(window, "bash").approval_panel is not None,
                    timeout=WAIT_MS)
    panel = _tool_card(window, "bash").approval_panel
    assert panel.warning.isVisibleTo(panel) and "anything your account can" in panel.warning.text()
    assert not panel.allow_always_button.isVisibleTo(panel)
    assert not panel.allow_conversation_button.isVisibleTo(panel)
    assert window.current_tab().answer_on_card(request.tool_use_id,
                                               "allow_always") is False
    assert request.pending
    qtbot.mouseClick(dock.allow_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert "ran-it" in _tool_messages(server.requests[1])[0]["content"]
    assert AppConfig().global_rules() == []


def test_mcp_servers_start_only_for_conversations_that_use_them(
        qtbot: Any, make_window: Any, server: Any, data_dir: Any) -> None:
    import sys
    from pathlib import Path

    require_module("mcp_server_time")
    other = Path(__file__).parents[1] / "tools" / "mcp_test_server.py"
    (data_dir / "config.json").write_text(json.dumps({"mcpServers": {
        "time": {"command": sys.executable,
                 "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "other": {"command": sys.executable, "args": [str(other)]}}}))
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(tools=["time__get_current_time"])
    server.enqueue(script.tool_calls([("time__get_current_time", {"timezone": "UTC"})]),
                   script.text("Noted."))
    send(qtbot, window, "What time is it?")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=30_000)
    request = window.approval_dock.current_request()
    assert not request.read_only  # an untrusted server's readOnlyHint is only a hint
    window.approval_dock.allow_once()
    wait_idle(qtbot, controller)
    states = {s.name: s.state for s in window.tools._pool.status()}
    assert states == {"time": "running", "other": "idle"}
