"""REST: the window the server applies, before each turn as an event and on request; the fix.

Ollama is replayed from its documented shapes (``desktop_agent.testing.server_replays``).
"""

from __future__ import annotations

from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.server_replays import ReplayedOllama, lmstudio_model, replay_lmstudio

MODEL = "llama3.2:3b"


def note(n: int, sentences: int = 80) -> str:
    """About 17 tokens a sentence of plain text (1,300 for 80)."""
    return " ".join(f"Note {n}.{i}: the harbour keeps its boats in until the first frost."
                    for i in range(sentences))


def _brief(model_server: ScriptedServer) -> None:
    """A model that answers in a word (the scripted default echoes the whole message)."""
    model_server.responder = lambda _body: script.text("Noted.")


def _turn(api: RunningApi, cid: str, message: str, after: int = 0) -> int:
    sent = api.client.post(f"/conversations/{cid}/run", json={"message": message})
    assert sent.status_code == 202, sent.text
    return int(api.wait_idle(cid, after=after)["id"])


def test_the_warning_is_an_event_and_the_fix_is_one_call(
        api: RunningApi, model_server: ScriptedServer) -> None:
    ollama = ReplayedOllama(model_server)
    ollama.add_model(MODEL, trained=131072)
    _brief(model_server)
    cid = api.create(base_url=model_server.base_url, model=MODEL, max_tokens=256)["id"]
    before = api.client.get(f"/conversations/{cid}/context-window").json()
    assert (before["applied"], before["trained"], before["server"]) == (4096, 131072, "Ollama")
    assert "default" in before["source"] and before["last_check"] is None

    after = 0
    for n in range(4):
        after = _turn(api, cid, note(n), after)
    check = api.events(cid, types="context_window")[-1]["data"]
    assert check["short"] and check["needed"] > 4096 and check["applied"] == 4096
    assert f'({check["reply"]:,} of them for the reply)' in check["warning"]
    assert "runs llama3.2:3b with a 4,096-token window" in check["warning"]
    assert check["fix"]["ollama_model"] == "llama3.2:3b-ctx16k"
    assert max(model_server.prompt_tokens) <= 4096  # sized by it: nothing was cut
    assert not api.events(cid, types="prompt_cut")
    info = api.client.get(f"/conversations/{cid}/context-window").json()
    assert info["last_check"] == check

    made = api.client.post(f"/conversations/{cid}/context-window/larger",
                           json={"tokens": check["fix"]["tokens"]})
    assert made.status_code == 200 and made.json() == {"model": "llama3.2:3b-ctx16k"}
    conversation = api.client.get(f"/conversations/{cid}").json()
    assert conversation["settings"]["model"] == "llama3.2:3b-ctx16k"
    _turn(api, cid, "And now?", after)
    last = api.events(cid, types="context_window")[-1]["data"]
    assert (last["applied"], last["source"]) == (16384, "Ollama Modelfile num_ctx")
    assert last["warning"] is None


def test_a_cut_prompt_is_an_event(api: RunningApi, model_server: ScriptedServer) -> None:
    """OLLAMA_CONTEXT_LENGTH=2048, which no endpoint reports: Ollama cuts without an error."""
    ollama = ReplayedOllama(model_server, default_context=2048)
    ollama.add_model(MODEL, trained=131072)
    _brief(model_server)
    cid = api.create(base_url=model_server.base_url, model=MODEL, max_tokens=256)["id"]
    after = _turn(api, cid, note(0, 60))
    # with the tool schemas ~2,500 tokens: under the 4096 assumed, over the 2048 applied
    after = _turn(api, cid, note(1, 60), after)
    [cut] = [e["data"] for e in api.events(cid, types="prompt_cut")]
    assert cut["kept"] <= 2048 and f"cut the prompt to {cut['kept']:,} tokens" in cut["message"]
    _turn(api, cid, "Go on.", after)
    info = api.client.get(f"/conversations/{cid}/context-window").json()
    assert info["applied"] == cut["kept"] and info["source"].startswith("learned from a cut")


def test_other_servers_name_their_setting_and_refuse_the_one_click_fix(
        api: RunningApi, model_server: ScriptedServer) -> None:
    replay_lmstudio(model_server, lmstudio_model(MODEL, max_context=32768, loaded_context=4096))
    _brief(model_server)
    cid = api.create(base_url=model_server.base_url, model=MODEL, max_tokens=256)["id"]
    after = 0
    for n in range(4):
        after = _turn(api, cid, note(n), after)
    check = api.events(cid, types="context_window")[-1]["data"]
    assert "LM Studio's model settings" in check["warning"]
    assert check["fix"]["ollama_model"] is None
    refused = api.client.post(f"/conversations/{cid}/context-window/larger",
                              json={"tokens": 8192})
    assert refused.status_code == 409 and "LM Studio" in refused.json()["error"]

