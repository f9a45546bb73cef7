"""The model doctor in the window: its banner above the conversation, *Test this model* in settings.

The scripted server plays llama.cpp (``/props``; ``/apply-template`` rendering the
same prompt with and without tools, as SmolLM2's own template does on the real
server; ``timings`` in the last chunk, tools/server/README.md).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.core.servers import prompt_speed
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.testing import script
from desktop_agent.testing.script import ChunkFactory

SAME_PROMPT = {"prompt": "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n"}
WANTED = {"What is the weather in Paris?": ("get_weather", {"city": "Paris"}),
          "What time is it in Tokyo?": ("get_time", {"city": "Tokyo"}),
          "Use the add tool to add 2 and 3.": ("add", {"a": 2, "b": 3})}


def llama_like(server: Any, drops_tools: bool) -> None:
    server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 4096}})
    if drops_tools:
        server.routes[("POST", "/apply-template")] = (200, SAME_PROMPT)


def calls_when_held(body: dict[str, Any]) -> script.Script:
    """SmolLM2 under its own template: prose natively, right calls under the grammar."""
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    wanted = WANTED.get(prompt)
    if "response_format" not in body:
        return script.text("Bonjour")
    return script.text(json.dumps({"name": wanted[0], "arguments": wanted[1]} if wanted
                                  else {"answer": "Bonjour"}))


def slow_reply(text: str) -> script.Script:
    f = ChunkFactory()
    last = f.usage(1100, 2).data
    last["timings"] = {"prompt_n": 1100, "cache_n": 0, "prompt_per_second": 40.0,
                       "predicted_per_second": 18.0}
    return script.from_chunks([f.delta({"role": "assistant", "content": text}).data,
                               f.finish("stop").data, last])


def probe_done(qtbot: Any, server: Any) -> None:
    """Wait for the background probe a first turn with a new model starts (before teardown)."""
    from desktop_agent.core.tooling.tool_call_probe import running

    qtbot.waitUntil(lambda: not running(server.base_url, "test-model"), timeout=WAIT_MS)


@pytest.fixture(autouse=True)
def _fresh():
    tool_call_mode.forget()
    prompt_speed.forget()
    yield
    tool_call_mode.forget()
    prompt_speed.forget()


def test_a_template_without_tools_shows_a_banner(qtbot: Any, make_window: Any,
                                                 server: Any) -> None:
    llama_like(server, drops_tools=True)
    server.enqueue(script.text('{"answer": "Sunny."}'))
    server.responder = calls_when_held  # the background probe after the turn
    window = make_window()
    controller = use_server(window, server)
    send(qtbot, window, "Weather in Paris?")
    wait_idle(qtbot, controller)
    banner = window.current_tab().doctor
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    assert banner.title.text() == "This model's template has no tools"
    assert "chat template has no place for tools" in banner.message.text()
    assert not banner.offers.isVisible()
    from desktop_agent.gui.conversation.settings_dialog import ConversationSettingsDialog

    banner.settings_button.click()  # the way to the tool-call mode
    dialogs = window.findChildren(ConversationSettingsDialog)
    assert len(dialogs) == 1 and dialogs[0].isVisible()
    dialogs[0].reject()
    probe_done(qtbot, server)


def test_a_slow_fixed_prompt_shows_what_helps(qtbot: Any, make_window: Any, server: Any) -> None:
    llama_like(server, drops_tools=False)
    server.enqueue(slow_reply('{"answer": "Hi."}'))
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(system_prompt="Be brief and exact. " * 200)
    send(qtbot, window, "Hi")
    wait_idle(qtbot, controller)
    banner = window.current_tab().doctor
    qtbot.waitUntil(lambda: banner.kind == "slow_prompt", timeout=WAIT_MS)
    assert banner.title.text() == "Slow first words"
    assert "(40 prompt tokens/s) before the first word" in banner.message.text()
    assert "llama.cpp's prompt cache is kept warm" in banner.offers.text()
    probe_done(qtbot, server)


def test_test_this_model_shows_the_measured_result(qtbot: Any, make_window: Any,
                                                   server: Any) -> None:
    llama_like(server, drops_tools=True)
    server.responder = calls_when_held
    window = make_window()
    use_server(window, server)
    dialog = window.open_settings()
    assert dialog.probe_result.text().startswith("Measured: not yet")
    dialog.test_model_button.click()
    qtbot.waitUntil(lambda: dialog.probe_result.text().startswith("Measured: native"),
                    timeout=WAIT_MS)
    assert dialog.probe_result.text() == ("Measured: native calls: 1 of 4; constrained: 4 of 4."
                                          " The chat template drops tools.")
    qtbot.waitUntil(lambda: "measured on this model" in dialog.tool_call_mode.text(),
                    timeout=WAIT_MS)
    assert dialog.test_model_button.isEnabled()
    dialog.reject()
    again = window.open_settings()  # kept: shown when settings open again
    qtbot.waitUntil(lambda: again.probe_result.text().startswith("Measured: native"),
                    timeout=WAIT_MS)
    again.reject()
