"""config.json's hook commands in a conversation: sandboxed, blocking, told, or refused in words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from turn_waits import finished

from desktop_agent.session import events as ev
from desktop_agent.session.approvals.approval_broker import ApprovalAnswer, ApprovalChoice
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(90)



def write_hooks(data_dir: Path, hooks: dict[str, Any]) -> None:
    (data_dir / "config.json").write_text(json.dumps({"hooks": hooks}))


def command(text: str) -> list[dict[str, Any]]:
    return [{"hooks": [{"type": "command", "command": text, "timeout": 20}]}]


async def test_a_pre_tool_hook_blocks_in_words_and_stop_and_notification_run(
        make_session: Any, model_server: ScriptedServer, asker: Any, weather: Any,
        data_dir: Path, bubblewrap: None) -> None:
    write_hooks(data_dir, {
        "PreToolUse": [{"matcher": "get_weather", "hooks": [{
            "type": "command",
            "command": "grep -q Atlantis && { echo 'No weather for Atlantis.' >&2; exit 2; }; "
                       "exit 0"}]}],
        "Stop": command("cat > stop.json"),
        "Notification": command("cat > notified.json"),
    })
    model_server.enqueue(
        script.tool_calls([("get_weather", {"city": "Atlantis"})]),
        script.tool_calls([("get_weather", {"city": "Paris"})]),
        script.text("Sunny in Paris."))
    asker.answers.append(ApprovalAnswer(ApprovalChoice.ALLOW_ONCE))
    session = make_session()
    session.send("Weather?")
    await finished(session)
    assert weather.calls == [{"city": "Paris"}]
    results = [e for e in session.events if isinstance(e, ev.ToolResultArrived)]
    assert "No weather for Atlantis." in results[0].content and results[0].is_error
    folder = Path(session.client.options.cwd)
    stop = json.loads((folder / "stop.json").read_text())
    assert stop["hook_event_name"] == "Stop" and stop["last_message"] == "Sunny in Paris."
    assert stop["session_id"] == session.conversation_id
    notified = json.loads((folder / "notified.json").read_text())
    assert notified["tool_name"] == "get_weather"  # only the call a person was asked about
    assert [q.tool_input for q in asker.questions] == [{"city": "Paris"}]


async def test_a_stop_hook_can_send_the_model_back(
        make_session: Any, model_server: ScriptedServer, data_dir: Path,
        bubblewrap: None) -> None:
    write_hooks(data_dir, {"Stop": command(
        "grep -q '\"stop_hook_active\": false' && { echo 'Say which city.' >&2; exit 2; }; "
        "exit 0")})
    model_server.enqueue(script.text("It is sunny."), script.text("It is sunny in Paris."))
    session = make_session(tools=[])
    session.send("Weather?")
    await finished(session)
    assert model_server.requests[1]["messages"][-1] == {"role": "user",
                                                        "content": "Say which city."}
    assert "".join(e.text for e in session.events if isinstance(e, ev.TextDelta)).endswith(
        "It is sunny in Paris.")


async def test_malformed_hooks_are_named_once_and_the_turn_runs(
        make_session: Any, model_server: ScriptedServer, data_dir: Path) -> None:
    write_hooks(data_dir, {"OnExit": command("true")})
    model_server.enqueue(script.text("Fine."))
    session = make_session(tools=[])
    session.send("Hi")
    await finished(session)
    notices = [e.text for e in session.events if isinstance(e, ev.Notice)]
    assert any("hooks in config.json are not used" in n and "unknown event 'OnExit'" in n
               for n in notices)
    assert session.events[-1] == ev.StateChanged("idle", "complete")
