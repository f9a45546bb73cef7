"""Permission modes (claude-agent-sdk's four) through real turns against the scripted server."""

import pytest

from desktop_agent import (
    Client,
    ConfigurationError,
    PermissionResultAllow,
    PermissionRule,
    ToolResultBlock,
    tool,
)
from desktop_agent.core.tooling.permissions import PLAN_MODE_REFUSAL
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)
ran: list[str] = []
asked: list[str] = []


@tool("bash", "Run a command", {"command": str})
async def bash(args):
    ran.append(f"bash {args['command']}")
    return "ok"


@tool("write_file", "Write a file", {"path": str, "content": str}, edits_files=True)
async def write_file(args):
    ran.append(f"write {args['path']}")
    return "written"


@tool("read_file", "Read a file", {"path": str}, read_only=True)
async def read_file(args):
    ran.append(f"read {args['path']}")
    return "contents"


async def approver(name, tool_input, context):
    asked.append(name)
    if name == "exit_plan_mode":
        return PermissionResultAllow({**tool_input, "mode": "acceptEdits"})
    return PermissionResultAllow()


@pytest.fixture(autouse=True)
def _clear():
    ran.clear()
    asked.clear()


def options_for(make_options, mode, **more):
    return make_options(tools=[bash, write_file, read_file], auto_execute_tools=True,
                        can_use_tool=approver, permission_mode=mode, **more)


async def run(client, prompt="go"):
    await client.query(prompt)
    return [i async for i in client.receive_messages()]


def results(items):
    return {i.name: i for i in items if isinstance(i, ToolResultBlock)}


async def test_default_asks_for_edits_and_commands(server, make_options):
    server.enqueue(script.tool_calls([("write_file", {"path": "a", "content": "x"}),
                                      ("bash", {"command": "ls"})]), script.text("done"))
    async with Client(options_for(make_options, "default")) as client:
        await run(client)
    assert sorted(asked) == ["bash", "write_file"]
    assert sorted(ran) == ["bash ls", "write a"]


async def test_accept_edits_runs_edits_unasked_and_still_asks_for_commands(server,
                                                                         make_options):
    server.enqueue(script.tool_calls([("write_file", {"path": "a", "content": "x"}),
                                      ("bash", {"command": "ls"})]), script.text("done"))
    async with Client(options_for(make_options, "acceptEdits")) as client:
        items = await run(client)
    assert asked == ["bash"]
    assert results(items)["write_file"].decision == "rule"


async def test_accept_edits_keeps_an_ask_rule_and_deny_rules(server, make_options):
    server.enqueue(script.tool_calls([("write_file", {"path": "secret.txt", "content": "x"}),
                                      ("write_file", {"path": "b", "content": "x"})]),
                   script.text("done"))
    rules = [PermissionRule("write_file", "deny", {"path": "secret*"})]
    async with Client(options_for(make_options, "acceptEdits",
                                  permission_rules=rules)) as client:
        items = await run(client)
    refused = [i for i in items if isinstance(i, ToolResultBlock) and i.is_error]
    assert len(refused) == 1 and "permission rule" in refused[0].content
    assert ran == ["write b"] and asked == []


async def test_plan_mode_runs_only_read_only_tools_and_tells_the_model(server, make_options):
    server.enqueue(script.tool_calls([("read_file", {"path": "a"}),
                                      ("bash", {"command": "rm x"})]), script.text("plan..."))
    async with Client(options_for(make_options, "plan", system_prompt="Be brief.")) as client:
        items = await run(client)
    assert ran == ["read a"]
    assert results(items)["bash"].content == f"Error: {PLAN_MODE_REFUSAL}"
    system = server.requests[0]["messages"][0]["content"]
    assert system.startswith("Be brief.") and "plan mode" in system
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert "exit_plan_mode" in offered


async def test_approving_the_plan_switches_mode_in_the_same_turn(server, make_options):
    server.enqueue(
        script.tool_calls([("exit_plan_mode", {"plan": "1. write a"})]),
        script.tool_calls([("write_file", {"path": "a", "content": "x"})]),
        script.text("done"))
    async with Client(options_for(make_options, "plan")) as client:
        items = await run(client)
        assert client.options.permission_mode == "acceptEdits"
        assert client.turn_metadata["permission_mode"] == "acceptEdits"
    assert asked == ["exit_plan_mode"]  # the edit after it ran unasked
    assert ran == ["write a"]
    assert "now acceptEdits" in results(items)["exit_plan_mode"].content
    # the plan note and the plan tool are gone from the request after the approval
    later = server.requests[1]
    assert "plan mode" not in (later["messages"][0].get("content") or "")
    assert "exit_plan_mode" not in [t["function"]["name"] for t in later["tools"]]


async def test_a_denied_plan_keeps_plan_mode(server, make_options):
    async def refuse_plans(name, tool_input, context):
        from desktop_agent import PermissionResultDeny

        return PermissionResultDeny("Also cover the tests.")

    server.enqueue(script.tool_calls([("exit_plan_mode", {"plan": "1. write a"})]),
                   script.text("revised"))
    options = make_options(tools=[write_file], auto_execute_tools=True,
                           can_use_tool=refuse_plans, permission_mode="plan")
    async with Client(options) as client:
        items = await run(client)
        assert client.options.permission_mode == "plan"
    assert "Also cover the tests." in results(items)["exit_plan_mode"].content


async def test_a_plan_without_an_approver_is_refused(server, make_options):
    server.enqueue(script.tool_calls([("exit_plan_mode", {"plan": "x"})]), script.text("ok"))
    options = make_options(tools=[], auto_execute_tools=True, permission_mode="plan")
    async with Client(options) as client:
        items = await run(client)
        assert client.options.permission_mode == "plan"
    assert "nobody is there to approve" in results(items)["exit_plan_mode"].content


async def test_bypass_runs_everything_but_deny_rules(server, make_options):
    server.enqueue(script.tool_calls([("bash", {"command": "ls"}),
                                      ("bash", {"command": "rm -rf /"}),
                                      ("write_file", {"path": "a", "content": "x"})]),
                   script.text("done"))
    rules = [PermissionRule("bash", "deny", {"command": "rm -rf*"})]
    async with Client(options_for(make_options, "bypassPermissions",
                                  permission_rules=rules)) as client:
        await run(client)
    assert asked == [] and sorted(ran) == ["bash ls", "write a"]


async def test_bypass_still_asks_before_an_unsandboxed_tool(server, make_options):
    loose = tool("shell", "Run unsandboxed", {"command": str})(lambda args: "ran")
    loose.unsandboxed = True
    server.enqueue(script.tool_calls([("shell", {"command": "ls"})]), script.text("done"))
    options = make_options(tools=[loose], auto_execute_tools=True, can_use_tool=approver,
                           permission_mode="bypassPermissions")
    async with Client(options) as client:
        await run(client)
    assert asked == ["shell"]


async def test_set_permission_mode_and_bad_modes(server, make_options):
    server.enqueue(script.tool_calls([("write_file", {"path": "a", "content": "x"})]),
                   script.text("done"))
    async with Client(options_for(make_options, "default")) as client:
        client.set_permission_mode("acceptEdits")
        await run(client)
        with pytest.raises(ConfigurationError, match="permission_mode must be one of"):
            client.set_permission_mode("yolo")
    assert asked == []
    with pytest.raises(ConfigurationError, match="permission_mode"):
        options_for(make_options, "auto")
