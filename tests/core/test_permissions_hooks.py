"""Permission rules, the approval callback and hooks, through real turns."""

import asyncio

import pytest

from desktop_agent import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    Client,
    HookDecision,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRule,
    PromptBlockedError,
    ToolResultBlock,
    ToolUseError,
    tool,
)
from desktop_agent.core.tooling.permissions import evaluate_rules
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)
ran = []


@tool("bash", "Run a command", {"command": str})
async def bash(args):
    ran.append(args["command"])
    return f"ran {args['command']}"


@tool("read_file", "Read a file", {"path": str}, read_only=True)
async def read_file(args):
    ran.append(f"read {args['path']}")
    return "contents"


@pytest.fixture(autouse=True)
def _clear():
    ran.clear()


async def turn(server, make_options, calls, **option_overrides):
    server.enqueue(script.tool_calls(calls), script.text("done"))
    options = make_options(tools=[bash, read_file], auto_execute_tools=True, **option_overrides)
    async with Client(options) as client:
        await client.query("go")
        items = [i async for i in client.receive_messages()]
    return items, client


def results(items):
    return [i for i in items if isinstance(i, ToolResultBlock)]


def test_rules_deny_first_then_ask_then_allow():
    rules = [PermissionRule("*", "allow"), PermissionRule("bash", "ask"),
             PermissionRule("bash", "deny", {"command": "rm -rf*"})]
    assert evaluate_rules(rules, "bash", {"command": "rm -rf /"}).decision == "deny"
    assert evaluate_rules(rules, "bash", {"command": "ls"}).decision == "ask"
    assert evaluate_rules(rules, "read_file", {"path": "a"}).decision == "allow"
    assert evaluate_rules([], "x", {}).decision is None
    assert evaluate_rules([], "x", {}, disallowed_tools=["x"]).decision == "deny"
    assert evaluate_rules([PermissionRule("*", "ask")], "x", {},
                          allowed_tools=["x"]).decision == "ask"


def test_rules_round_trip_and_reject_garbage():
    rule = PermissionRule("mcp_*", "deny", {"path": "/etc/*"}, read_only=False)
    assert PermissionRule.from_dict(rule.to_dict()) == rule
    with pytest.raises(ValueError):
        PermissionRule.from_dict({"tool": "x", "decision": "maybe"})
    with pytest.raises(ValueError):
        PermissionRule.from_dict({"decision": "allow"})


async def test_no_rule_no_callback_runs(server, make_options):
    items, _ = await turn(server, make_options, [("bash", {"command": "ls"})])
    assert ran == ["ls"] and results(items)[0].decision == "auto"


async def test_deny_rule_by_argument_pattern(server, make_options):
    rules = [PermissionRule("bash", "deny", {"command": "rm -rf*"})]
    items, _ = await turn(server, make_options, [("bash", {"command": "rm -rf /"}),
                                                 ("bash", {"command": "ls"})],
                          permission_rules=rules)
    assert ran == ["ls"]
    assert results(items)[0].is_error and "permission rule" in results(items)[0].content
    assert "not allowed" in server.requests[1]["messages"][2]["content"]


async def test_disallowed_tools_never_run_even_if_approved(server, make_options):
    async def approve(name, args, ctx):
        return PermissionResultAllow()

    await turn(server, make_options, [("bash", {"command": "ls"})],
               disallowed_tools=["bash"], can_use_tool=approve)
    assert ran == []


async def test_allowed_tools_skip_the_callback(server, make_options):
    asked = []

    async def approver(name, args, ctx):
        asked.append(name)
        return PermissionResultDeny("no")

    await turn(server, make_options, [("read_file", {"path": "a"}), ("bash", {"command": "ls"})],
               allowed_tools=["read_file"], can_use_tool=approver)
    assert ran == ["read a"] and asked == ["bash"]


async def test_read_only_rule(server, make_options):
    async def deny_all(name, args, ctx):
        return PermissionResultDeny("no")

    await turn(server, make_options, [("read_file", {"path": "a"}), ("bash", {"command": "ls"})],
               permission_rules=[PermissionRule("*", "allow", read_only=True)],
               can_use_tool=deny_all)
    assert ran == ["read a"]


async def test_callback_allow_with_edited_input(server, make_options):
    seen = {}

    async def approve(name, args, ctx):
        seen.update(name=name, args=args, ctx=ctx)
        return PermissionResultAllow(updated_input={"command": "ls -la"})

    items, client = await turn(server, make_options, [("bash", {"command": "ls"})],
                               can_use_tool=approve)
    assert ran == ["ls -la"]
    assert seen["ctx"].tool_use_id == results(items)[0].tool_use_id
    assert results(items)[0].decision == "approved"
    assert client.turn_metadata["tool_decisions"] == {seen["ctx"].tool_use_id: "approved"}


async def test_callback_deny_message_reaches_the_model(server, make_options):
    async def deny(name, args, ctx):
        return PermissionResultDeny(message="Use a read-only command instead.")

    items, _ = await turn(server, make_options, [("bash", {"command": "rm x"})],
                          can_use_tool=deny)
    assert ran == []
    assert server.requests[1]["messages"][-1]["content"].endswith(
        "Use a read-only command instead.")
    assert isinstance(items[1], ToolUseError)


@pytest.mark.parametrize("behaviour", ["raises", "times_out", "returns_junk"])
async def test_broken_approvers_mean_deny(server, make_options, behaviour):
    async def approver(name, args, ctx):
        if behaviour == "raises":
            raise RuntimeError("bug")
        if behaviour == "times_out":
            await asyncio.sleep(30)
        return "yes please"

    items, _ = await turn(server, make_options, [("bash", {"command": "ls"})],
                          can_use_tool=approver, approval_timeout=0.2)
    assert ran == []
    assert results(items)[0].is_error and results(items)[0].decision == "denied"


async def test_ask_rule_without_approver_denies(server, make_options):
    items, _ = await turn(server, make_options, [("bash", {"command": "ls"})],
                          permission_rules=[PermissionRule("bash", "ask")])
    assert ran == [] and "needs approval" in results(items)[0].content


# -- hooks ----------------------------------------------------------------------------

async def test_blocked_prompt_raises_before_any_request(server, make_options):
    def gate(event):
        if "password" in event.prompt:
            return HookDecision(continue_=False, reason="no secrets please")
        return None

    async with Client(make_options(hooks={HOOK_USER_PROMPT_SUBMIT: [gate]})) as client:
        with pytest.raises(PromptBlockedError, match="no secrets"):
            await client.query("my password is hunter2")
        assert client.history == []
    assert server.requests == []


async def test_first_non_none_decision_wins_and_empty_modified_prompt_counts(
        server, make_options):
    calls = []

    def first(event):
        calls.append("first")

    async def second(event):
        calls.append("second")
        return HookDecision(modified_prompt="rewritten")

    def third(event):
        calls.append("third")
        return HookDecision(modified_prompt="never")

    async with Client(make_options(hooks={HOOK_USER_PROMPT_SUBMIT: [first, second, third]})) as c:
        await c.query("original")
        [i async for i in c.receive_messages()]
    assert calls == ["first", "second"]
    assert server.requests[0]["messages"][-1]["content"] == "rewritten"

    def empty(event):
        return HookDecision(modified_prompt="")

    async with Client(make_options(hooks={HOOK_USER_PROMPT_SUBMIT: [empty]})) as client:
        with pytest.raises(PromptBlockedError, match="empty"):
            await client.query("original")
    assert len(server.requests) == 1  # the original was not sent


async def test_pre_tool_hook_blocks_or_rewrites(server, make_options):
    def guard(event):
        if "sudo" in event.tool_input.get("command", ""):
            return HookDecision(continue_=False, reason="sudo is not allowed")
        if event.tool_name == "bash":
            return HookDecision(modified_input={"command": event.tool_input["command"] + " -q"})
        return None

    items, _ = await turn(server, make_options, [("bash", {"command": "sudo ls"}),
                                                 ("bash", {"command": "ls"})],
                          hooks={HOOK_PRE_TOOL_USE: [guard]})
    assert ran == ["ls -q"]
    assert "sudo is not allowed" in results(items)[0].content


async def test_post_tool_hook_sees_the_result(server, make_options):
    seen = []

    def audit(event):
        seen.append((event.tool_name, event.tool_result, event.is_error))

    await turn(server, make_options, [("bash", {"command": "ls"})],
               hooks={HOOK_POST_TOOL_USE: [audit]})
    assert seen == [("bash", "ran ls", False)]
