"""Commands in the workdir (timeout kills the group) and per-conversation secrets.

Secret values must never appear in any response, in the database file, or in
a validation error; commands get them as environment variables.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from server_harness import RunningApi

from desktop_agent.appdata import secrets
from desktop_agent.testing import script

SECRET = "ghp_TopSecretValue_5f3a9c1e77"


def test_command_returns_exit_code_output_and_duration(api: RunningApi):
    cid = api.create()["id"]
    answer = api.client.post(f"/conversations/{cid}/commands",
                             json={"command": "echo out; echo err >&2; pwd; exit 3"})
    assert answer.status_code == 200
    result = answer.json()
    assert result["exit_code"] == 3 and result["timed_out"] is False
    assert result["stdout"].splitlines() == ["out", str(api.workdir(cid))]
    assert result["stderr"] == "err\n"
    assert result["duration"] >= 0 and result["truncated"] is False


def test_command_timeout_kills_the_whole_process_group(api: RunningApi):
    cid = api.create()["id"]
    marker = f"60.{uuid.uuid4().int % 10**12:012d}"  # the sandbox's pids are not ours
    answer = api.client.post(
        f"/conversations/{cid}/commands",
        json={"command": f"setsid sleep {marker} & sleep {marker} & echo started; wait",
              "timeout": 0.5})
    result = answer.json()
    assert result["timed_out"] is True and result["exit_code"] is None
    assert "started" in result["stdout"]
    deadline = time.monotonic() + 10
    while _running(marker):
        assert time.monotonic() < deadline, "a background child survived the timeout"
        time.sleep(0.05)


def _running(marker: str) -> bool:
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            return True
    return False


def test_secrets_are_listed_by_name_injected_into_commands_and_never_returned(
        api: RunningApi, model_server):
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"])["id"]
    stored = api.client.put(f"/conversations/{cid}/secrets/GITHUB_TOKEN", json={"value": SECRET})
    assert stored.status_code == 200
    assert stored.json()["name"] == "GITHUB_TOKEN"
    assert stored.json()["persisted"] == secrets.keyring_status().available
    assert api.client.get(f"/conversations/{cid}/secrets").json() == {"names": ["GITHUB_TOKEN"]}

    length = api.client.post(f"/conversations/{cid}/commands",
                             json={"command": 'printf %s "$GITHUB_TOKEN" | wc -c'}).json()
    assert length["stdout"].strip() == str(len(SECRET))
    echoed = api.client.post(f"/conversations/{cid}/commands",
                             json={"command": 'echo "token=$GITHUB_TOKEN"; echo $GITHUB_TOKEN >&2'})
    assert echoed.json()["stdout"].startswith("token=") and echoed.json()["exit_code"] == 0

    # the model's bash tool gets the secret too, and its result does not show it
    model_server.enqueue(script.tool_calls([("bash", {"command": "echo $GITHUB_TOKEN"})]),
                         script.text("done"))
    api.client.put(f"/conversations/{cid}/confirmation", json={"enabled": False})
    api.client.post(f"/conversations/{cid}/run", json={"message": "print the token"})
    api.wait_idle(cid)
    api.client.get(f"/conversations/{cid}/messages")
    tool_result = api.events(cid, types="tool_result")[0]["data"]["content"]
    assert "exit code: 0" in tool_result

    # 422s never echo what was sent
    for bad in ({"value": SECRET, "extra": SECRET}, {"value": [SECRET]}, {"valu": SECRET}):
        refused = api.client.put(f"/conversations/{cid}/secrets/GITHUB_TOKEN", json=bad)
        assert refused.status_code == 422
    refused = api.client.put(f"/conversations/{cid}/secrets/BAD-NAME", json={"value": SECRET})
    assert refused.status_code == 422
    leaky = api.client.post("/conversations", json={"settings": {"model": "m",
                                                                 "api_key_name": SECRET * 40}})
    assert leaky.status_code == 422
    leaky = api.client.patch(f"/conversations/{cid}",
                             json={"settings": {"system_prompt": f"key sk-{SECRET}"}})
    assert leaky.status_code == 422 and leaky.json()["code"] == "secret_in_settings"

    for response in api.responses:
        assert SECRET not in response.text, response.request.url
    for path in api.database.parent.glob("conversations.sqlite3*"):
        assert SECRET.encode() not in path.read_bytes(), path

    assert api.client.delete(f"/conversations/{cid}/secrets/GITHUB_TOKEN").status_code == 204
    assert api.client.get(f"/conversations/{cid}/secrets").json() == {"names": []}
    assert api.client.delete(f"/conversations/{cid}/secrets/GITHUB_TOKEN").status_code == 404
    gone = api.client.post(f"/conversations/{cid}/commands",
                           json={"command": 'printf %s "$GITHUB_TOKEN" | wc -c'}).json()
    assert gone["stdout"].strip() == "0"


def test_api_key_is_resolved_by_keyring_name_at_request_time(api: RunningApi, model_server):
    model_server.api_key = "planted.model.key.77"
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    api.client.put(f"/conversations/{cid}/secrets/MODEL_KEY",
                   json={"value": "planted.model.key.77"})
    api.client.patch(f"/conversations/{cid}",
                     json={"settings": {"api_key_name": f"conv:{cid}:MODEL_KEY"}})
    api.client.post(f"/conversations/{cid}/run", json={"message": "hi"})
    idle = api.wait_idle(cid)
    assert idle["data"]["outcome"] == "complete"
    assert model_server.request_headers[-1]["authorization"] == "Bearer planted.model.key.77"
    api.client.patch(f"/conversations/{cid}", json={"settings": {"api_key_name": "api:missing"}})
    api.client.post(f"/conversations/{cid}/run", json={"message": "again"})
    failed = api.wait_idle(cid, after=idle["id"])
    assert failed["data"]["outcome"] == "error"
    error = [e for e in api.events(cid) if e["type"] == "error"][-1]["data"]
    assert "api:missing" in error["message"]
    for response in api.responses:
        assert "planted.model.key.77" not in response.text
