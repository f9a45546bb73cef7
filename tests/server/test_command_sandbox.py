"""REST commands and the model's bash over real uvicorn run sandboxed, with a built environment.

The server process's environment holds its master key and whatever else the
person exported; neither may reach a command's ``env``, whether a script calls
``/commands`` or the model calls ``bash``.
"""

from __future__ import annotations

import os

import pytest
from server_harness import MASTER_KEY, RunningApi

from desktop_agent.core.tooling.builtin.sandbox import sandbox_backend
from desktop_agent.testing import script

PLANTED = "planted-provider-token-0b7e3c"


@pytest.fixture(autouse=True)
def _planted_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    if sandbox_backend() != "bwrap":
        pytest.fail("bubblewrap is missing; run .ci/install_sandbox.sh")
    monkeypatch.setenv("DESKTOP_AGENT_MASTER_KEY", MASTER_KEY)
    monkeypatch.setenv("PLANTED_PROVIDER_TOKEN", PLANTED)


def _assert_clean(text: str) -> None:
    assert MASTER_KEY not in text and "DESKTOP_AGENT_MASTER_KEY" not in text
    assert PLANTED not in text and "PLANTED_PROVIDER_TOKEN" not in text


def test_rest_commands_see_a_built_environment_and_only_the_workdir(api: RunningApi) -> None:
    cid = api.create()["id"]
    result = api.client.post(f"/conversations/{cid}/commands",
                             json={"command": "env; ls -A / | tr '\\n' ' '; "
                                              f"ls {api.database.parent} 2>&1"}).json()
    _assert_clean(result["stdout"])
    assert f"HOME={api.workdir(cid)}" in result["stdout"]
    assert result["sandboxed"] is True
    # the store's folder holds only the path down to the workdir, not the database
    assert "conversations.sqlite3" not in result["stdout"]
    assert result["stdout"].rstrip().endswith("workdirs")


def test_the_models_bash_gets_no_server_environment(api: RunningApi, model_server) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"])["id"]
    model_server.enqueue(script.tool_calls([("bash", {"command": "env"})]), script.text("done"))
    api.client.put(f"/conversations/{cid}/confirmation", json={"enabled": False})
    api.client.post(f"/conversations/{cid}/run", json={"message": "show the environment"})
    api.wait_idle(cid)
    result = api.events(cid, types="tool_result")[0]["data"]["content"]
    assert "PATH=" in result
    _assert_clean(result)
    for response in api.responses:
        _assert_clean(response.text)
    for path in api.database.parent.glob("conversations.sqlite3*"):
        data = path.read_bytes()
        assert MASTER_KEY.encode() not in data and PLANTED.encode() not in data


def test_an_unsandboxed_command_waits_for_approval_even_without_confirmation(
        api: RunningApi, model_server) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"],
                     sandbox="off")["id"]
    model_server.enqueue(script.tool_calls([("bash", {"command": "echo ran"})]),
                         script.text("done"))
    api.client.put(f"/conversations/{cid}/confirmation", json={"enabled": False})
    api.client.post(f"/conversations/{cid}/run", json={"message": "run it"})
    asked = api.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    assert asked["data"]["unsandboxed"] is True
    listed = api.client.get(f"/conversations/{cid}/approvals").json()["approvals"]
    assert listed[0]["unsandboxed"] is True
    api.client.post(f"/conversations/{cid}/approvals/{asked['data']['tool_use_id']}/approve",
                    json={})
    api.wait_idle(cid)
    assert "ran" in api.events(cid, types="tool_result")[0]["data"]["content"]
    # a bad value is refused with a sentence, and nothing changes
    refused = api.client.patch(f"/conversations/{cid}", json={"settings": {"sandbox": "none"}})
    assert refused.status_code == 422
    assert os.environ["PLANTED_PROVIDER_TOKEN"] == PLANTED
