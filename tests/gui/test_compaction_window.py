"""A long conversation on a small context: the window shows where it was compacted."""

from __future__ import annotations

from typing import Any

from window_driver import send, use_server, wait_idle

from desktop_agent.core.context.summary_request import SUMMARY_INSTRUCTIONS
from desktop_agent.testing import script

LONG_ANSWER = " ".join(f"word{i}" for i in range(180))


def answering(server: Any) -> None:
    """Long answers; summary requests get a recognisable summary."""

    def respond(body: dict[str, Any]) -> script.Script:
        if body["messages"][0].get("content") == SUMMARY_INSTRUCTIONS:
            return script.text("The person asked three questions about words.")
        return script.text(LONG_ANSWER)

    server.responder = respond


def markers(window: Any) -> list[str]:
    view = window.current_tab().transcript
    view.flush()
    return [view.item_text(k) for k in view.item_keys()
            if "earlier message" in view.item_text(k)]


def talk(qtbot: Any, window: Any, controller: Any, turns: int) -> None:
    for n in range(turns):
        send(qtbot, window, f"Question {n}: tell me more words")
        wait_idle(qtbot, controller)


def small_context_window(make_window: Any, server: Any, context: int = 700) -> tuple[Any, Any]:
    """A window on the answering server, its conversation limited to ``context`` tokens."""
    answering(server)
    server.max_prompt_tokens = context
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(context_length=context, max_tokens=100)
    return window, controller


def summary_requests(server: Any) -> int:
    return sum(r["messages"][0].get("content") == SUMMARY_INSTRUCTIONS for r in server.requests)


def open_summary_marker(qtbot: Any, view: Any) -> str:
    """Click the first "summarised" marker open; its key."""
    key = next(k for k in view.item_keys() if "summarised" in view.item_text(k))
    qtbot.mouseClick(view.item_widget(key).header_button, _left())
    return key


def test_a_summary_marker_opens_to_the_summary(qtbot: Any, make_window: Any,
                                               server: Any) -> None:
    window, controller = small_context_window(make_window, server)
    talk(qtbot, window, controller, 5)
    found = markers(window)
    assert found and found[0].endswith("earlier messages summarised")
    view = window.current_tab().transcript
    key = open_summary_marker(qtbot, view)
    assert "three questions about words" in view.item_text(key)
    # the store keeps every message; only the model's view was compacted
    stored = controller.stored_messages()
    assert sum(m["role"] == "assistant" for m in stored) == 5
    assert max(server.prompt_tokens) <= 700


def test_drop_oldest_chosen_in_settings(qtbot: Any, make_window: Any, server: Any) -> None:
    window, controller = small_context_window(make_window, server)
    dialog = window.open_settings()
    box = dialog.context_box
    assert box.chosen_compaction() == "summarise"
    box.compaction.setCurrentIndex(box.compaction.findData("drop_oldest"))
    # the tool schemas' cost per group is shown (the fixture's one custom tool)
    assert set(box.group_tokens()) == {"custom"} and box.group_tokens()["custom"] > 10
    dialog._apply()
    assert controller.settings["compaction"] == "drop_oldest"
    talk(qtbot, window, controller, 5)
    assert markers(window) and "left out of the model's context" in markers(window)[0]
    assert summary_requests(server) == 0


def test_builtin_schema_costs_are_listed(qtbot: Any, make_window: Any, server: Any) -> None:
    from desktop_agent.session.tools.tool_catalog import ToolCatalog

    window = make_window(tools=[])
    window.tools = ToolCatalog(include_mcp=False)
    use_server(window, server)
    dialog = window.open_settings()
    groups = dialog.context_box.group_tokens()
    assert 400 < groups["built-in"] <= 520  # the seven workdir tools and update_plan
    assert dialog.context_box.total_label.text().endswith(f" {groups['built-in']} tokens")


def _left() -> Any:
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_the_summary_is_reused_across_turns(qtbot: Any, make_window: Any, server: Any) -> None:
    """Each turn reloads the history from the store; compaction still comes in steps."""
    window, controller = small_context_window(make_window, server, context=2048)
    talk(qtbot, window, controller, 10)
    # One marker per summary written; the older ones are a scroll up (the transcript
    # keeps only so many items above the screen, how many depends on the window's size).
    view = window.current_tab().transcript

    def a_marker_for_each_summary() -> bool:
        view.verticalScrollBar().setValue(0)
        return len(markers(window)) == summary_requests(server)

    qtbot.waitUntil(a_marker_for_each_summary, timeout=10_000)
    assert 1 <= summary_requests(server) <= 4


def test_the_marker_comes_back_when_the_conversation_is_opened_again(
        qtbot: Any, make_window: Any, server: Any) -> None:
    window, controller = small_context_window(make_window, server)
    talk(qtbot, window, controller, 5)
    live = markers(window)
    assert live
    summaries = summary_requests(server)
    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=10_000)

    again = make_window()
    # Restored from the store, in the same places (the older one a scroll up: the view
    # opens with only what fills it built).
    view = again.current_tab().transcript

    def scrolled_to_the_top() -> bool:
        view.verticalScrollBar().setValue(0)
        return markers(again) == live

    qtbot.waitUntil(scrolled_to_the_top, timeout=10_000)
    key = open_summary_marker(qtbot, view)
    assert "three questions about words" in view.item_text(key)
    # the next turn goes on from the stored summary instead of writing it again
    send(qtbot, again, "Question 5: tell me more words")
    wait_idle(qtbot, again.current_controller())
    assert summary_requests(server) == summaries


def test_constrained_tool_calls_are_switched_on_in_settings(qtbot: Any, make_window: Any,
                                                            server: Any) -> None:
    # The fixture's weather tool; the model's constrained answer shows as plain words.
    server.enqueue(script.text('{"answer": "It is sunny."}', pieces=4))
    window = make_window()
    controller = use_server(window, server)
    dialog = window.open_settings()
    assert dialog.constrained.currentData() is None  # automatic by default
    # the scripted server is no llama.cpp, LM Studio, Ollama or vLLM: native, and why
    qtbot.waitUntil(lambda: "Native tool calls" in dialog.tool_call_mode.text())
    assert "did not say it can constrain" in dialog.tool_call_mode.text()
    dialog.constrained.setCurrentIndex(dialog.constrained.findData(True))
    assert not dialog.tool_decision.isChecked()  # the model is not asked first by default
    dialog._apply()
    assert controller.settings["constrained_tool_calls"] is True
    assert "tool_decision" not in controller.settings
    send(qtbot, window, "Weather?")
    wait_idle(qtbot, controller)
    request = server.requests[-1]
    assert "response_format" in request and "tools" not in request
    view = window.current_tab().transcript
    view.flush()
    shown = [view.item_text(k) for k in view.item_keys()]
    assert any("It is sunny." in text for text in shown)
    assert not any('"answer"' in text for text in shown)


def test_asking_the_model_first_is_a_setting_of_its_own(qtbot: Any, make_window: Any,
                                                        server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    dialog = window.open_settings()
    dialog.tool_decision.setChecked(True)
    dialog._apply()
    assert controller.settings["tool_decision"] is True
    again = window.open_settings()
    assert again.tool_decision.isChecked()  # the dialog shows what is saved
    again.tool_decision.setChecked(False)
    again._apply()
    assert "tool_decision" not in controller.settings


def test_settings_say_constrained_calls_are_in_use_on_llamacpp(qtbot: Any, make_window: Any,
                                                               server: Any) -> None:
    # A server answering llama.cpp's /props: the model is not known to call natively.
    server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 4096}})
    server.enqueue(script.text('{"answer": "It is sunny."}', pieces=4))
    window = make_window()
    controller = use_server(window, server)
    dialog = window.open_settings()
    qtbot.waitUntil(lambda: "Constrained tool calls" in dialog.tool_call_mode.text())
    assert "llama.cpp" in dialog.tool_call_mode.text()
    dialog.reject()
    send(qtbot, window, "Weather?")
    wait_idle(qtbot, controller)
    # what the settings said is what is sent (the tool-call probe that follows the first
    # turn with a new model sends requests of its own, not streamed)
    turn = [r for r in server.requests if r.get("stream")]
    assert len(turn) == 1 and "response_format" in turn[0]
