"""A conversation's ``extra_body`` setting reaches the model server with every request."""

from __future__ import annotations

from typing import Any

from window_driver import send, use_server, wait_idle

from desktop_agent.testing import script


def test_extra_request_fields_are_sent_from_the_next_turn(qtbot: Any, make_window: Any,
                                                          server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.text("First."), script.text("Second."))
    send(qtbot, window, "one")
    wait_idle(qtbot, controller)
    controller.update_settings(extra_body={"cache_prompt": False, "seed": 7})
    send(qtbot, window, "two")
    wait_idle(qtbot, controller)

    first, second = server.requests
    assert "cache_prompt" not in first and "seed" not in first
    assert second["cache_prompt"] is False and second["seed"] == 7
    assert window.store.get_conversation(controller.conversation_id).settings[
        "extra_body"] == {"cache_prompt": False, "seed": 7}
